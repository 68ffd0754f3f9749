#!/usr/bin/env python3
"""A small qemu-guest-agent client for tests/vm/vm.sh.

  qga.py SOCKET ping [SECONDS]         exit 0 once the guest agent answers
  qga.py SOCKET exec [-i] [-t SECONDS] -- CMD...
      run CMD as root in the guest: its stdout, stderr and exit status
      (-i: this process's stdin is CMD's; -t: give up after SECONDS, exit 124)

The socket is QEMU's virtio-serial port org.qemu.guest_agent.0. Only one
client at a time may hold it; every call opens it, resynchronises with
guest-sync-delimited and closes it.
"""
import base64
import json
import os
import random
import socket
import sys
import time

ENV = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
       "HOME=/root", "LANG=C.UTF-8", "SYSTEMD_PAGER=", "SYSTEMD_COLORS=0"]


class Agent:
    def __init__(self, path, timeout):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(timeout)
        self.s.connect(path)
        self.buf = b""

    def _line(self):
        while b"\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise ConnectionError("guest agent closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def sync(self):
        sid = random.randint(1, 2**31)
        self.s.sendall(json.dumps({"execute": "guest-sync-delimited",
                                   "arguments": {"id": sid}}).encode() + b"\n")
        while True:
            line = self._line()
            # the answer to guest-sync-delimited follows a 0xff byte
            line = line[line.rfind(b"\xff") + 1:].strip()
            if not line:
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if msg.get("return") == sid:
                return

    def call(self, cmd, args=None):
        req = {"execute": cmd}
        if args is not None:
            req["arguments"] = args
        self.s.sendall(json.dumps(req).encode() + b"\n")
        while True:
            line = self._line().strip()
            if not line:
                continue
            msg = json.loads(line)
            if "error" in msg:
                raise RuntimeError("%s: %s" % (cmd, msg["error"].get("desc", msg["error"])))
            if "return" in msg:
                return msg["return"]


def ping(path, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            a = Agent(path, 3)
            a.sync()
            a.call("guest-ping")
            return 0
        except (OSError, ConnectionError, ValueError, RuntimeError):
            time.sleep(1)
    return 1


def run(path, argv, stdin, limit):
    a = Agent(path, 30)
    a.sync()
    args = {"path": argv[0], "arg": argv[1:], "env": ENV, "capture-output": True}
    if stdin:
        args["input-data"] = base64.b64encode(sys.stdin.buffer.read()).decode()
    pid = a.call("guest-exec", args)["pid"]
    deadline = time.time() + limit if limit else None
    delay = 0.05
    while True:
        st = a.call("guest-exec-status", {"pid": pid})
        if st.get("exited"):
            break
        if deadline and time.time() > deadline:
            sys.stderr.write("vm exec: %s still running after %d s\n" % (argv[0], limit))
            return 124
        time.sleep(delay)
        delay = min(delay * 2, 0.5)
    sys.stdout.buffer.write(base64.b64decode(st.get("out-data", "")))
    sys.stdout.flush()
    sys.stderr.buffer.write(base64.b64decode(st.get("err-data", "")))
    if st.get("out-truncated") or st.get("err-truncated"):
        sys.stderr.write("vm exec: output truncated by the guest agent\n")
    if "signal" in st:
        return 128 + st["signal"]
    return st.get("exitcode", 1)


def main():
    if len(sys.argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    path, verb, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
    if verb == "ping":
        return ping(path, float(rest[0]) if rest else 60)
    if verb == "exec":
        stdin, limit = False, 0
        while rest and rest[0] != "--":
            if rest[0] == "-i":
                stdin = True
                rest = rest[1:]
            elif rest[0] == "-t" and len(rest) > 1:
                limit = float(rest[1])
                rest = rest[2:]
            else:
                sys.stderr.write("qga.py exec: unknown option %s\n" % rest[0])
                return 2
        if not rest or len(rest) < 2:
            sys.stderr.write("qga.py exec: no command\n")
            return 2
        try:
            return run(path, rest[1:], stdin, limit)
        except (OSError, ConnectionError, RuntimeError) as e:
            sys.stderr.write("vm exec: %s\n" % e)
            return 255
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
