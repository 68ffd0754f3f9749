#!/usr/bin/env python3
"""A fault-injecting TLS proxy between mcgit and a real kube-apiserver.

    faultproxy.py --port P --upstream https://127.0.0.1:A --ca CA \
        --cert server.crt --key server.key [--error-rate R] [--conflict-rate R]
        [--slow-rate R --slow-ms MS] [--watch-drop-secs S] [--seed N]
        [--garbage-rate R] [--garbage KIND,...] [--stats FILE]

Terminates TLS with the test server's certificate (clients keep trusting the
test CA) and forwards each request, headers and body, to the upstream server.
Clients must authenticate with a bearer token (a client certificate does not
cross a terminating proxy). Faults, chosen at random per request:
  --error-rate    answer 500/503/429 (with Retry-After: 1 for 429) instead
  --conflict-rate answer 409 Conflict to writes (PUT/PATCH) instead
  --slow-rate     delay the request by --slow-ms first
  --watch-drop-secs  cut every watch stream after S seconds
  --garbage-rate  answer a GET, or a watch, with a malformed or huge response
                  instead (the request is never forwarded, so nothing that
                  changes state is lost); --garbage picks the kinds (default
                  all), used in turn: huge (80 MiB body), huge-length (Content-Length of a
                  terabyte, then 1 MiB and a close), truncated (half of the
                  real answer, then a close), html, array, deep (200,000
                  nested arrays), badutf8, nul (a NUL inside a string),
                  wrongkind (a Status with code 200), header (a 1 MiB header
                  line); for watches watch-huge (20 MiB without a newline),
                  watch-junk (a line that is not JSON), watch-notevent (JSON
                  that is no event)
--stats FILE receives a JSON line per request: method, path, status, bytes in
and out, fault — the benchmark counts requests and bytes from it.
SIGUSR1 toggles all faults off/on (so a test can let the system converge).
"""
import argparse, http.client, json, queue, random, signal, ssl, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade",
       "te", "trailer", "content-length", "host"}


GARBAGE = ["huge", "huge-length", "truncated", "html", "array", "deep", "badutf8", "nul",
           "wrongkind", "header"]
WATCH_GARBAGE = ["watch-huge", "watch-junk", "watch-notevent"]


class State:
    enabled = True
    garbage_n = 0
    lock = threading.Lock()
    stats = None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--ca", required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--error-rate", type=float, default=0.0)
    ap.add_argument("--conflict-rate", type=float, default=0.0)
    ap.add_argument("--slow-rate", type=float, default=0.0)
    ap.add_argument("--slow-ms", type=int, default=1500)
    ap.add_argument("--watch-drop-secs", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--garbage-rate", type=float, default=0.0)
    ap.add_argument("--garbage", default=",".join(GARBAGE + WATCH_GARBAGE))
    ap.add_argument("--stats")
    a = ap.parse_args()
    kinds = [k for k in a.garbage.split(",") if k in GARBAGE]
    wkinds = [k for k in a.garbage.split(",") if k in WATCH_GARBAGE]
    rng = random.Random(a.seed)
    up = urlparse(a.upstream)
    up_ctx = ssl.create_default_context(cafile=a.ca)
    if a.stats:
        State.stats = open(a.stats, "a", buffering=1)

    def toggle(*_):
        State.enabled = not State.enabled
    signal.signal(signal.SIGUSR1, toggle)

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def record(self, status, bytes_in, bytes_out, fault):
            if State.stats:
                with State.lock:
                    State.stats.write(json.dumps({
                        "t": time.time(), "method": self.command, "path": self.path,
                        "status": status, "in": bytes_in, "out": bytes_out,
                        "fault": fault}) + "\n")

        def reply(self, code, body, extra=None):
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
            return len(data)

        def raw(self, body, ctype="application/json", length=None, headers=()):
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body) if length is None else length))
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)
            return len(body)

        def garbage(self, kind):
            """Answer with a malformed or huge response of this kind; bytes sent."""
            self.close_connection = True
            try:
                if kind == "huge" or kind == "huge-length":
                    total = 80 << 20 if kind == "huge" else 1 << 20
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(80 << 20 if kind == "huge" else 1 << 40))
                    self.end_headers()
                    chunk = b'{"items":["' + b"x" * ((1 << 20) - 11)
                    sent = 0
                    while sent < total:
                        self.wfile.write(chunk)
                        sent += len(chunk)
                        chunk = b"x" * (1 << 20)
                    return sent
                if kind == "truncated":
                    body = json.dumps({"kind": "NodeList", "apiVersion": "v1",
                                       "metadata": {"resourceVersion": "1"},
                                       "items": [{"metadata": {"name": "n%d" % i}} for i in range(200)]}).encode()
                    return self.raw(body[:len(body) // 2], length=len(body))
                if kind == "html":
                    return self.raw(b"<html><body><h1>502 Bad Gateway</h1></body></html>\n", "text/html")
                if kind == "array":
                    return self.raw(b"[1,2,3]")
                if kind == "deep":
                    return self.raw(b"[" * 200000 + b"]" * 200000)
                if kind == "badutf8":
                    return self.raw(b'{"kind":"Node","apiVersion":"v1","metadata":{"name":"\xff\xfe\xc0"}}')
                if kind == "nul":
                    return self.raw(b'{"kind":"Node","apiVersion":"v1","metadata":{"name":"a\x00b"}}')
                if kind == "wrongkind":
                    return self.raw(json.dumps({"kind": "Status", "apiVersion": "v1",
                                                "status": "Success", "code": 200}).encode())
                if kind == "header":
                    return self.raw(b"{}", headers=(("X-Padding", "p" * (1 << 20)),))
                # watches: a 200 chunked stream carrying the bad line
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                if kind == "watch-huge":
                    parts = [b'{"type":"MODIFIED","object":{"x":"'] + [b"y" * (1 << 20)] * 20
                elif kind == "watch-junk":
                    parts = [b"this is not json\n"]
                else:
                    parts = [b'{"foo":1}\n']
                sent = 0
                for part in parts:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                    sent += len(part)
                self.wfile.write(b"0\r\n\r\n")
                return sent
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                return 0

        def handle_any(self):
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if n else None
            watch = "watch=1" in self.path or "watch=true" in self.path
            fault = None
            with State.lock:
                r1, r2, r3 = rng.random(), rng.random(), rng.random()
                code = rng.choice([500, 503, 429])
                r4 = rng.random()
                pool = wkinds if watch else kinds
                kind = None
                if pool and self.command == "GET" and r4 < a.garbage_rate:
                    kind = pool[State.garbage_n % len(pool)]  # every kind in turn
                    State.garbage_n += 1
            if State.enabled and kind:
                out = self.garbage(kind)
                self.record(200, n, out, kind)
                return
            if State.enabled:
                if r3 < a.slow_rate:
                    fault = "slow"
                    time.sleep(a.slow_ms / 1000.0)
                if r1 < a.error_rate:
                    extra = {"Retry-After": "1"} if code == 429 else None
                    out = self.reply(code, {"kind": "Status", "apiVersion": "v1",
                                            "status": "Failure", "code": code,
                                            "message": "injected fault %d" % code,
                                            "reason": "InternalError"}, extra)
                    self.record(code, n, out, "error")
                    return
                if self.command in ("PUT", "PATCH") and r2 < a.conflict_rate:
                    out = self.reply(409, {"kind": "Status", "apiVersion": "v1",
                                           "status": "Failure", "code": 409,
                                           "reason": "Conflict",
                                           "message": "injected conflict: the object has "
                                                      "been modified"})
                    self.record(409, n, out, "conflict")
                    return
            # One upstream connection per client connection (this thread),
            # reused like the client's own; watches get their own.
            if watch:
                conn = http.client.HTTPSConnection(up.hostname, up.port, context=up_ctx)
            else:
                conn = getattr(self, "upstream", None)
                if conn is None:
                    conn = self.upstream = http.client.HTTPSConnection(
                        up.hostname, up.port, context=up_ctx, timeout=60)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
            try:
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                except (http.client.HTTPException, OSError):
                    if watch:
                        raise
                    conn.close()  # a stale kept-alive connection: once more, fresh
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
            except Exception as e:  # upstream down: a 502 the client must survive
                out = self.reply(502, {"kind": "Status", "status": "Failure", "code": 502,
                                       "message": "proxy: upstream: %s" % e})
                self.record(502, n, out, "upstream")
                return
            self.send_response(resp.status)
            for k, v in resp.getheaders():
                if k.lower() not in HOP:
                    self.send_header(k, v)
            out = 0
            if watch:
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                deadline = time.time() + a.watch_drop_secs if (
                    a.watch_drop_secs and State.enabled) else None
                # A thread reads upstream, so the cut comes on time even
                # when no event arrives.
                chunks = queue.Queue()

                def pump():
                    try:
                        while True:
                            c = resp.read1(65536)
                            chunks.put(c)
                            if not c:
                                return
                    except Exception:
                        chunks.put(b"")
                threading.Thread(target=pump, daemon=True).start()
                try:
                    while True:
                        if deadline and time.time() > deadline:
                            fault = "watch-drop"
                            break
                        try:
                            chunk = chunks.get(timeout=0.05)
                        except queue.Empty:
                            continue
                        if not chunk:
                            break
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.flush()
                        out += len(chunk)
                    if fault != "watch-drop":
                        self.wfile.write(b"0\r\n\r\n")
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True
                conn.close()
            else:
                data = resp.read()
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                out = len(data)
            self.record(resp.status, n, out, fault)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any

    srv = ThreadingHTTPServer(("127.0.0.1", a.port), H)
    srv.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    print("faultproxy: listening on 127.0.0.1:%d" % a.port, file=sys.stderr, flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
