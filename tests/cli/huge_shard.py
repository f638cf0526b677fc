"""huge_shard.py OUT RAW_SIZE [hash]: a valid one-sample shard (key big,
field bin) whose zstd block declares RAW_SIZE zero bytes, written from
man/chute-shard.5.  Its frame is RAW_SIZE / 128 KiB RLE blocks of 4 bytes
each (a real zstd frame, 8 GiB in 256 KiB); past 16 GiB it is one RLE
block only, since a reader must refuse the size before decoding.  With
"hash" the sample hash is computed (reads RAW_SIZE zeros: small sizes
only); otherwise it is 0."""

import struct
import sys
import xxhash

h64 = xxhash.xxh3_64_intdigest
out, raw = sys.argv[1], int(sys.argv[2])
RLE = 128 << 10


def frame(n):
    # magic; descriptor: 8-byte content size, no single segment; window
    # 128 KiB; content size
    f = bytearray(struct.pack("<IBBQ", 0xFD2FB528, 0xC0, 7 << 3, n))
    nblocks = max(1, -(-n // RLE)) if n <= 16 << 30 else 1
    for b in range(nblocks):
        size = min(RLE, n - b * RLE)
        last = b == nblocks - 1
        f += struct.pack("<I", last | 1 << 1 | size << 3)[:3] + b"\0"
    return bytes(f)


def sample_hash(n):
    if sys.argv[3:4] != ["hash"]:
        return 0
    h = xxhash.xxh3_64()
    h.update(b"bin\0" + struct.pack("<Q", n))
    zeros = bytes(1 << 20)
    for at in range(0, n, len(zeros)):
        h.update(zeros[:min(len(zeros), n - at)])
    return h.intdigest()


block = frame(raw)
index = struct.pack("<QQIIQQ24x", 1, 1, 1, 1, 4, 3)
index += struct.pack("<QQQQII", 64, len(block), raw, h64(block), 1, 0)
index += struct.pack("<QQIIHHI", sample_hash(raw), 0, 0, 0, 3, 1, 0)
index += struct.pack("<QII", raw, 0, 0)
index += struct.pack("<I", 0) + b"bin\0" + b"big"
header = b"\x89CHS\r\n\x1a\n" + struct.pack("<HHIQQ24x", 1, 1, 0, 0, 0)
header += struct.pack("<Q", h64(header))
footer = struct.pack("<QQQQQII", 64 + len(block), len(index), len(index),
                     h64(index), 1, 1, 0)
footer += struct.pack("<Q", h64(footer)) + b"CHSFOOT1"
with open(out, "wb") as f:
    f.write(header + block + index + footer)
