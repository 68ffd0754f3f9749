#!/usr/bin/env python3
# bomb.py KIND FILE — write a small git bundle (v2) whose pack asks for far
# more memory than its size, for test_bundle_bomb.sh:
#   one    a 1 MiB blob of zeros, and a delta on it declaring a 512 MiB
#          result (512 copy instructions of 1 MiB each)
#   many   the same base and 40 deltas of 15 MiB each (each under the
#          per-object limit, 600 MiB together)
#   whole  a blob whose entry header declares 32 MiB (its data is one byte:
#          the pack is damaged, but only inflating it would show that)
# Each pack also holds a tree (the base blob as "zero") and a commit on it,
# which the bundle's one ref, refs/heads/main, names.
import hashlib
import struct
import sys
import zlib

MIB = 1024 * 1024


def entry_header(kind, size):
    b = bytearray()
    c = (kind << 4) | (size & 15)
    size >>= 4
    while size:
        b.append(c | 0x80)
        c = size & 0x7F
        size >>= 7
    b.append(c)
    return bytes(b)


def ofs_encoding(dist):
    b = bytearray([dist & 0x7F])
    dist >>= 7
    while dist:
        dist -= 1
        b.insert(0, 0x80 | (dist & 0x7F))
        dist >>= 7
    return bytes(b)


def varint(v):
    b = bytearray()
    while True:
        c = v & 0x7F
        v >>= 7
        if v:
            b.append(c | 0x80)
        else:
            b.append(c)
            return bytes(b)


def copy_all(base_len, count):
    """A delta of count copies of the whole base (base_len: 1 MiB)."""
    d = bytearray(varint(base_len) + varint(base_len * count))
    # copy: offset 0 (no offset bytes), size 0x100000 in the third size byte
    for _ in range(count):
        d += bytes([0x80 | 0x40, 0x10])
    return bytes(d)


def obj_id(kind, data):
    return hashlib.sha1(b"%s %d\0" % (kind, len(data)) + data).digest()


def main():
    kind, out = sys.argv[1], sys.argv[2]
    base = bytes(MIB)
    entries = []  # (header type, size, payload, ofs base index or None)
    entries.append((3, len(base), base, None))
    tree = b"100644 zero\0" + obj_id(b"blob", base)
    commit = (
        b"tree %s\nauthor a <a@example.com> 1767225600 +0000\n"
        b"committer a <a@example.com> 1767225600 +0000\n\nbomb\n" % obj_id(b"tree", tree).hex().encode()
    )
    if kind == "one":
        d = copy_all(MIB, 512)
        entries.append((6, len(d), d, 0))
    elif kind == "many":
        for _ in range(40):
            d = copy_all(MIB, 15)
            entries.append((6, len(d), d, 0))
    elif kind == "whole":
        entries.append((3, 32 * MIB, b"x", None))
    else:
        sys.exit("unknown kind " + kind)
    entries.append((2, len(tree), tree, None))
    entries.append((1, len(commit), commit, None))
    pack = bytearray(b"PACK" + struct.pack(">II", 2, len(entries)))
    offsets = []
    for t, size, payload, base_i in entries:
        offsets.append(len(pack))
        pack += entry_header(t, size)
        if t == 6:
            pack += ofs_encoding(offsets[-1] - offsets[base_i])
        pack += zlib.compress(payload, 9)
    pack += hashlib.sha1(pack).digest()
    head = b"# v2 git bundle\n%s refs/heads/main\n\n" % obj_id(b"commit", commit).hex().encode()
    with open(out, "wb") as f:
        f.write(head + pack)


if __name__ == "__main__":
    main()
