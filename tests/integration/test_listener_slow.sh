#!/usr/bin/env bash
# test_listener_slow.sh — slow clients lock out nobody. 200 clients from
# 127.0.0.1 hold connections to the controller's listener, and 100 to the
# agent's, each sending one header line a second and never finishing its
# request, for MCGIT_SLOW_SECONDS (default 15; the clients stop by
# themselves). Meanwhile scrapes of both listeners and authorised webhook
# calls, from another address (127.0.0.2) and from the slow clients' own
# (127.0.0.1: everyone behind one proxy or NAT shares it; B5), must each be
# answered within 1 s. Afterwards: no slow client held a
# connection much past the request deadline (5 s), the cuts are counted in
# mcgit_listener_deadline_cuts_total, and 127.0.0.1 is served again.
. "$(dirname "$0")/lib.sh"
need curl python3
SECS=${MCGIT_SLOW_SECONDS:-15}

rc=0
curl -s -o /dev/null --interface 127.0.0.2 "http://127.0.0.1:1/" 2>/dev/null || rc=$?
[ "$rc" = 45 ] && skip "cannot use 127.0.0.2 as a source address here"

R=$T/cfg
fixture_signed_repo "$R"
fixture_v1 "$R"
CL=local:$T/cl
"$MCGIT" node add --cluster "$CL" w0 --labels node-role.kubernetes.io/worker= >/dev/null
printf 's3cret-token\n' >"$T/token"
CP=$(freeport) AP=$(freeport)
"$MCGIT" controller --repo "$R" --trust "$T/trust" --cluster "$CL" --interval 300 \
  --metrics-bind-address "127.0.0.1:$CP" --webhook-token-file "$T/token" >"$T/ctl.log" 2>&1 &
PIDS+=($!)
"$MCGIT" agent --node w0 --cluster "$CL" --interval 300 --metrics-bind-address "127.0.0.1:$AP" \
  >"$T/agent.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$CP/metrics" && curl -sf -o /dev/null "http://127.0.0.1:$AP/metrics" && break; sleep 0.1; done

cat >"$T/slow.py" <<'PY'
# slow.py PORT CLIENTS SECONDS: CLIENTS threads, each connecting to
# 127.0.0.1:PORT, sending a request line and then one header line a second,
# never the end of the headers; reconnecting half a second after being cut
# or refused. Stops after SECONDS.
# Prints: connections made, the longest one lasted (cut by the server or
# open until the end), and how many were still open at the end.
import socket, sys, threading, time
port, clients, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
end = time.monotonic() + secs
lock = threading.Lock()
st = {"connects": 0, "longest": 0.0, "open_at_end": 0}
def client():
    while time.monotonic() < end:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
        except OSError:
            time.sleep(0.2)
            continue
        t0 = time.monotonic()
        cut = False
        try:
            s.sendall(b"POST /hooks/git HTTP/1.1\r\nHost: mcgit\r\nContent-Length: 10\r\n")
            s.settimeout(1.0)
            while time.monotonic() < end:
                try:
                    if s.recv(4096) == b"":
                        cut = True
                        break
                except socket.timeout:
                    pass
                s.sendall(b"X-Slow: 1\r\n")
        except OSError:
            cut = True
        held = time.monotonic() - t0
        with lock:
            st["connects"] += 1
            st["longest"] = max(st["longest"], held)
            if not cut:
                st["open_at_end"] += 1
        s.close()
        time.sleep(0.5)
ts = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
for t in ts:
    t.start()
for t in ts:
    t.join(secs + 10)
print(st["connects"], "%.1f" % st["longest"], st["open_at_end"])
PY
python3 "$T/slow.py" "$CP" 200 "$SECS" >"$T/slow.ctl" 2>&1 &
SLOW1=$!
PIDS+=($!)
python3 "$T/slow.py" "$AP" 100 "$SECS" >"$T/slow.agent" 2>&1 &
SLOW2=$!
PIDS+=($!)
sleep 1

# authorised calls from another address, answered within 1 s each, throughout
calls=0 late=0 worst=0
ask() { # ask WHAT FROM CURL-ARGS...: one call from address FROM; counts it, and whether it was late or failed
  local what=$1 from=$2 out code t ms
  shift 2
  out=$(curl -s -o /dev/null -m 2 --interface "$from" -w '%{http_code} %{time_total}' "$@" || true)
  code=${out%% *} t=${out#* }
  ms=$(awk -v t="${t:-9}" 'BEGIN {printf "%d", t * 1000}')
  calls=$((calls + 1))
  [ "$ms" -gt "$worst" ] && worst=$ms
  if ! { [ "$code" = 200 ] || [ "$code" = 202 ]; } || [ "$ms" -gt 1000 ]; then
    late=$((late + 1))
    echo "# $what: status $code in $ms ms" >>"$T/late"
  fi
}
while kill -0 "$SLOW1" 2>/dev/null || kill -0 "$SLOW2" 2>/dev/null; do
  for from in 127.0.0.2 127.0.0.1; do
    ask "controller scrape from $from" "$from" "http://127.0.0.1:$CP/metrics"
    ask "agent scrape from $from" "$from" "http://127.0.0.1:$AP/metrics"
    ask "webhook from $from" "$from" -X POST -H 'Authorization: Bearer s3cret-token' "http://127.0.0.1:$CP/hooks/git"
  done
  sleep 0.2
done
[ -s "$T/late" ] && head -5 "$T/late"
echo "# $calls authorised calls during the slow clients, slowest ${worst} ms"
[ "$calls" -ge 60 ] && [ "$late" = 0 ] && ok "every scrape and webhook call, from the slow clients' address too, answered within 1 s under slow clients ($calls calls, slowest ${worst} ms)" \
  || bad "$late of $calls scrapes and webhook calls failed or took over 1 s (slowest ${worst} ms)"

for f in ctl agent; do
  read -r n longest open <"$T/slow.$f" || true
  echo "# $f: $n slow connections, the longest lasted ${longest} s, ${open} open at the end"
  [ "${n:-0}" -gt 0 ] && awk -v l="${longest:-99}" 'BEGIN {exit !(l < 7.5)}' \
    && ok "$f: no slow client held a connection past the deadline (longest ${longest} s)" \
    || bad "$f: a slow client held a connection ${longest} s (deadline 5 s)"
done
curl -sf "http://127.0.0.1:$CP/metrics" >"$T/ctl.prom" && ok "127.0.0.1 is served again" || bad "127.0.0.1 still locked out"
cuts=$(awk '/^mcgit_listener_deadline_cuts_total / {print $2}' "$T/ctl.prom")
[ "${cuts:-0}" -gt 0 ] 2>/dev/null && ok "cuts counted: mcgit_listener_deadline_cuts_total $cuts" \
  || bad "mcgit_listener_deadline_cuts_total is '${cuts}'"
stop_clean controller "${PIDS[0]}" "$T/ctl.log"
stop_clean agent "${PIDS[1]}" "$T/agent.log"
finish
