#!/usr/bin/env python3
"""Hostile delta graphs in small git packs, for test_pack_graph.sh and the fuzz seeds.

    cyclepack.py SHAPE pack OUT          the bare pack
    cyclepack.py SHAPE bundle OUT        a v2 bundle of it (ref refs/heads/main)
    cyclepack.py SHAPE[,SHAPE...] serve PORTFILE LOG [CERT KEY]
                                         a smart-HTTP git server on 127.0.0.1 (a free
                                         port, written to PORTFILE once every pack is
                                         made): /SHAPE.git has one branch, main, served
                                         with SHAPE's pack whatever is asked; LOG gets a
                                         line per request and "sent SHAPE" once a pack
                                         is written; with CERT and KEY (PEM), over TLS
    cyclepack.py SHAPE upload-pack       git-upload-pack's side of the protocol on stdin
                                         and stdout (for an ssh server's command=)
    cyclepack.py SHAPE push GITDIR       push the pack to refs/heads/main of GITDIR through
                                         `git receive-pack` (its hooks run); prints its report
    cyclepack.py SHAPE ids               the pack's commit id, then its first blob's id

Shapes (each pack also holds a tree naming blob "a" and a commit on it, so a
bundle or a fetch has a ref to update):
  self-ofs     an OFS_DELTA whose base is itself (distance 0)
  self-ref     a blob, then a REF_DELTA on it whose result is that same blob:
               the delta's result is its own base (154 bytes)
  ref-cycle    two REF_DELTAs, each on the other's result: a cycle
  mixed-cycle  a REF_DELTA on the result of an OFS_DELTA that is based on it
  missing-ref  a REF_DELTA on an object neither the pack nor any repository has
  deep         a chain of 3,000 OFS_DELTAs, each on the one before
  honest       a blob and an OFS_DELTA on it (accepted: the control)
  many         a blob of 15 MiB (random bytes) and 96 deltas on it, each the blob
               and a line more: honest, 15 MiB that arrive in a moment and take
               seconds to resolve after the last byte (checking, then indexing)
"""
import hashlib
import os
import struct
import sys
import zlib

COMMIT, TREE, BLOB, OFS, REF = 1, 2, 3, 6, 7


# pack entry headers, OFS_DELTA distances and delta varints: bomb.py's
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bomb import entry_header, ofs_encoding, varint  # noqa: E402


def insert_delta(base_len, result):
    """A delta that ignores its base and inserts result (at most 127 bytes a chunk)."""
    d = bytearray(varint(base_len) + varint(len(result)))
    for i in range(0, len(result), 127):
        chunk = result[i:i + 127]
        d += bytes([len(chunk)]) + chunk
    return bytes(d)


def copy_delta(base_len, extra=b""):
    """A delta copying the whole base (under 64 KiB) and appending extra."""
    d = bytearray(varint(base_len) + varint(base_len + len(extra)))
    if base_len:
        d += bytes([0x80 | 0x10 | 0x20, base_len & 0xFF, base_len >> 8])
    if extra:
        d += bytes([len(extra)]) + extra
    return bytes(d)


def oid(kind, data):
    names = {COMMIT: b"commit", TREE: b"tree", BLOB: b"blob"}
    return hashlib.sha1(b"%s %d\0" % (names[kind], len(data)) + data).digest()


def entries_for(shape):
    """[(type, payload, base)]: base is an entry index (OFS), an id (REF) or None."""
    a = b"a\n"
    e = []
    if shape == "self-ofs":
        e.append((BLOB, a, None))
        e.append((OFS, copy_delta(len(a)), "self"))
    elif shape == "self-ref":
        e.append((BLOB, a, None))
        e.append((REF, copy_delta(len(a)), oid(BLOB, a)))
    elif shape == "ref-cycle":
        b = b"b\n"
        e.append((REF, insert_delta(len(b), a), oid(BLOB, b)))  # result a, on b
        e.append((REF, insert_delta(len(a), b), oid(BLOB, a)))  # result b, on a
    elif shape == "mixed-cycle":
        b = b"b\n"
        e.append((REF, insert_delta(len(b), a), oid(BLOB, b)))  # result a, on b
        e.append((OFS, insert_delta(len(a), b), 0))  # result b, on entry 0
    elif shape == "missing-ref":
        e.append((REF, insert_delta(5, a), hashlib.sha1(b"nowhere").digest()))
    elif shape == "deep":
        e.append((BLOB, b"x", None))
        n = 1
        for i in range(3000):
            e.append((OFS, copy_delta(n, b"y"), len(e) - 1))
            n += 1
        e.append((BLOB, a, None))
    elif shape == "many":
        e.append((BLOB, a, None))
        import random
        n = 15 * 1024 * 1024
        e.append((BLOB, random.Random(1).randbytes(n), None))
        for i in range(96):
            copy = bytes([0x80 | 0x70, n & 0xFF, (n >> 8) & 0xFF, n >> 16])
            line = b"%d\n" % i
            e.append((OFS, varint(n) + varint(n + len(line)) + copy + bytes([len(line)]) + line, 1))
    elif shape == "honest":
        e.append((BLOB, a, None))
        e.append((OFS, copy_delta(len(a), b"more\n"), 0))
    else:
        sys.exit("unknown shape " + shape)
    return e, oid(BLOB, a)


def build(shape):
    """The pack's bytes and its commit's id."""
    e, blob = entries_for(shape)
    tree = b"100644 a\0" + blob
    commit = (b"tree %s\nauthor a <a@example.com> 1767225600 +0000\n"
              b"committer a <a@example.com> 1767225600 +0000\n\n%s\n"
              % (oid(TREE, tree).hex().encode(), shape.encode()))
    e.append((TREE, tree, None))
    e.append((COMMIT, commit, None))
    pack = bytearray(b"PACK" + struct.pack(">II", 2, len(e)))
    offs = []
    for t, payload, base in e:
        offs.append(len(pack))
        pack += entry_header(t, len(payload))
        if t == OFS:
            pack += ofs_encoding(0 if base == "self" else offs[-1] - offs[base])
        elif t == REF:
            pack += base
        pack += zlib.compress(payload, 9)
    pack += hashlib.sha1(pack).digest()
    return bytes(pack), oid(COMMIT, commit), blob


def pkt(s):
    return b"%04x" % (len(s) + 4) + s


def serve(shapes, portfile, log, tls=None):
    import os
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    packs = {sh: build(sh) for sh in shapes}

    def note(line):
        with open(log, "a") as f:
            f.write(line + "\n")

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def reply(self, ctype, body):
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()

        def shape(self):
            name = self.path.lstrip("/").split("/")[0]
            return name[:-4] if name.endswith(".git") else name

        def do_GET(self):
            note("GET %s" % self.path)
            if self.shape() not in packs:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            commit = packs[self.shape()][1]
            adv = pkt(b"# service=git-upload-pack\n") + b"0000"
            adv += pkt(commit.hex().encode() + b" refs/heads/main\0ofs-delta\n") + b"0000"
            self.reply("application/x-git-upload-pack-advertisement", adv)

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(n)
            note("POST %s" % self.path)
            self.reply("application/x-git-upload-pack-result", pkt(b"NAK\n") + packs[self.shape()][0])
            note("sent %s" % self.shape())

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    if tls:
        import ssl
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(tls[0], tls[1])
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(portfile + ".tmp", portfile)
    srv.serve_forever()


def read_pkt(f):
    """The next pkt-line's payload, b"" for a flush, None at the end of the stream."""
    n = f.read(4)
    if len(n) < 4:
        return None
    n = int(n, 16)
    return f.read(n - 4) if n > 4 else b""


def upload_pack(pack, commit):
    out, inp = sys.stdout.buffer, sys.stdin.buffer
    out.write(pkt(commit.hex().encode() + b" refs/heads/main\0ofs-delta\n") + b"0000")
    out.flush()
    while True:
        line = read_pkt(inp)
        if line is None:
            return
        if line.startswith(b"done"):
            break
    out.write(pkt(b"NAK\n") + pack)
    out.flush()


def push(pack, commit, gitdir):
    import subprocess
    p = subprocess.Popen(["git", "receive-pack", gitdir], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
    while True:
        line = read_pkt(p.stdout)
        if not line:
            break
    cmd = b"0" * 40 + b" " + commit.hex().encode() + b" refs/heads/main\0report-status\n"
    p.stdin.write(pkt(cmd) + b"0000" + pack)
    p.stdin.close()
    sys.stdout.buffer.write(p.stdout.read())
    return p.wait()


def main():
    shape, mode = sys.argv[1], sys.argv[2]
    if mode == "serve":
        serve(shape.split(","), sys.argv[3], sys.argv[4], sys.argv[5:7] if len(sys.argv) > 6 else None)
        return
    pack, commit, blob = build(shape)
    if mode == "pack":
        open(sys.argv[3], "wb").write(pack)
    elif mode == "bundle":
        head = b"# v2 git bundle\n%s refs/heads/main\n\n" % commit.hex().encode()
        open(sys.argv[3], "wb").write(head + pack)
    elif mode == "upload-pack":
        upload_pack(pack, commit)
    elif mode == "push":
        sys.exit(push(pack, commit, sys.argv[3]))
    elif mode == "ids":
        print(commit.hex())
        print(blob.hex())
    else:
        sys.exit("unknown mode " + mode)


main()
