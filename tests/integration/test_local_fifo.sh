#!/usr/bin/env bash
# test_local_fifo.sh — files of the local backend's state directory, and the
# trust root, replaced by FIFOs (N9): nothing hangs. A FIFO at events.jsonl
# made the controller block for ever in open(2), SIGTERM included; the
# controller must pass, name the file in its log, and stop on SIGTERM. The
# same FIFO trick on the trust root and the revocation file is refused in
# one line naming the file.
. "$(dirname "$0")/lib.sh"

CL=local:$T/cl
R=$T/repo
fixture_signed_repo "$R"
fixture_v1 "$R"
fixture_workers "$CL" w0
mkdir -p "$T/cl"
rm -f "$T/cl/events.jsonl"
mkfifo "$T/cl/events.jsonl"
start=$SECONDS
expect_rc 0 "a controller pass with a FIFO at events.jsonl ends" -- \
  timeout 60 "$MCGIT" controller --repo "$R" --trust "$T/trust" --cluster "$CL" --once
[ $((SECONDS - start)) -lt 30 ] && ok "(in $((SECONDS - start)) s)" || bad "it took $((SECONDS - start)) s"
expect_grep "events.jsonl: not a regular file" "$T/err" "the log names the file"
"$MCGIT" controller --repo "$R" --trust "$T/trust" --cluster "$CL" --interval 1 >"$T/ctl.out" 2>"$T/ctl.err" &
PID=$!
sleep 3
stop_clean "the controller, running with the FIFO" "$PID" "$T/ctl.err"
# the agent too emits events
expect_rc 0 "an agent pass with the FIFO ends" -- timeout 60 "$MCGIT" agent --node w0 --cluster "$CL" --once
# the trust root and the revocation file as FIFOs
mkfifo "$T/trust.fifo" "$T/revoked.fifo"
expect_rc 1 "a FIFO as the trust root is refused at once" -- \
  timeout 20 "$MCGIT" verify --repo "$R" --trust "$T/trust.fifo"
expect_grep "trust.fifo: not a regular file" "$T/err" "(naming it)"
expect_rc 1 "a FIFO as the revocation file is refused at once" -- \
  timeout 20 "$MCGIT" verify --repo "$R" --trust "$T/trust" --revoked "$T/revoked.fifo"
expect_grep "revoked.fifo: not a regular file" "$T/err" "(naming it)"
finish
