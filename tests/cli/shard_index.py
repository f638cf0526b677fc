"""shard_index.py - test helper: a shard's footer and its decoded index,
whatever the index codec (0 raw, 1 one zstd frame, 2 paged), read as
man/chute-shard.5 says.  No checksum is checked: tests that damage
shards on purpose read them with it."""

import struct
import subprocess


def unzstd(frame, size):
    try:
        import zstandard
        return zstandard.ZstdDecompressor().decompress(
            frame, max_output_size=size)
    except ImportError:
        return subprocess.run(["zstd", "-dc"], input=frame,
                              stdout=subprocess.PIPE, check=True).stdout


def footer(data):
    """(index_offset, stored_size, raw_size, index_hash, samples, blocks,
    index_codec)."""
    return struct.unpack_from("<QQQQQII", data, len(data) - 64)


def pages(data):
    """(page, file offset, stored size) of each frame of a paged index."""
    ioff, isize, _raw, _h, _n, _b, codec = footer(data)
    if codec != 2:
        return []
    npages, = struct.unpack_from("<I", data, ioff + 4)
    at, out = ioff + 8 + 16 * npages, []
    for p in range(npages):
        n, = struct.unpack_from("<I", data, ioff + 8 + 16 * p)
        out.append((p, at, n))
        at += n
    return out


def decoded_index(data):
    ioff, isize, iraw, _h, _n, _b, codec = footer(data)
    stored = bytes(data[ioff:ioff + isize])
    if codec == 1:
        return unzstd(stored, iraw)
    if codec == 2:
        psize, = struct.unpack_from("<I", stored)
        return b"".join(unzstd(bytes(data[at:at + n]), psize)
                        for _p, at, n in pages(data))
    return stored
