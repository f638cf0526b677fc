#!/usr/bin/python3
"""Writes a tar of N tiny samples to standard output, for measuring how
chute grows with the number of samples (scripts/bench-scale.sh): sample i
is member sNNNNNNNNN.bin holding 16 bytes, distinct for each i except
that every 1000th sample repeats sample 0 (so that check's duplicate
rule has groups to report).  Pipe it through zstd and into chute pack.

usage: gen-samples.py N

Deterministic: the same N gives the same bytes (mtime 0, uid 0).
"""
import struct
import sys
import tarfile


def content(i):
    j = 0 if i % 1000 == 999 else i
    return struct.pack("<QQ", j, j * 0x9E3779B97F4A7C15 & (2**64 - 1))


def main():
    if len(sys.argv) != 2 or not sys.argv[1].isdigit():
        sys.exit("usage: gen-samples.py N")
    n = int(sys.argv[1])
    out = sys.stdout.buffer
    pad = b"\0" * (512 - 16)
    head, tail, rest = template()
    for i in range(n):
        name = b"s%09d.bin" % i
        # the checksum field counts as spaces: the template's sum with
        # no name, plus the name's bytes
        out.write(name + head + b"%06o\0 " % (rest + sum(name)) + tail)
        out.write(content(i) + pad)
    out.write(b"\0" * 1024)


def template():
    """A ustar header for a 16-byte member of a 14-byte name, cut around
    the name (offset 0) and the checksum (offset 148, 8 bytes): the bytes
    after the name up to the checksum, those after it, and the sum of the
    header without the name (the checksum as 8 spaces)."""
    info = tarfile.TarInfo("x" * NAME_LEN)
    info.size = 16
    info.mtime = 0
    info.mode = 0o644
    buf = info.tobuf(tarfile.USTAR_FORMAT)
    head, tail = buf[NAME_LEN:148], buf[156:]
    return head, tail, sum(head) + sum(tail) + 8 * ord(" ")


NAME_LEN = 14  # "s%09d.bin"


if __name__ == "__main__":
    main()
