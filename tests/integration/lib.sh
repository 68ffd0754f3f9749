# Shared helpers for integration tests. Source it first:  . "$(dirname "$0")/lib.sh"
set -euo pipefail
: "${MCGIT:?MCGIT must point at the mcgit binary}"
: "${SRC:?SRC must point at the source tree}"
T=$(mktemp -d "${TMPDIR:-/tmp}/mcgit-it.XXXXXX")
export HOME="$T/home" GIT_CONFIG_NOSYSTEM=1 LC_ALL=C TZ=UTC
mkdir -p "$HOME"
# `mcgit` on PATH, where installed hooks look for it (test_hooks takes it away)
mkdir -p "$T/bin" && ln -s "$(readlink -f "$MCGIT")" "$T/bin/mcgit" && export PATH="$T/bin:$PATH"
git config --global user.name "Test Operator"
git config --global user.email "op@example.com"
git config --global init.defaultBranch main
export GIT_AUTHOR_DATE="2026-01-01T00:00:00Z" GIT_COMMITTER_DATE="2026-01-01T00:00:00Z"
PASS=0
FAIL=0
# tests/run-all.sh's libgit2-old phase: the libgit2 mcgit loads must be that one
if [ -n "${MCGIT_EXPECT_LIBGIT2:-}" ]; then
  _lg=$(ldd "$MCGIT" | awk '$1 ~ /^libgit2\.so/ { print $3 }')
  if [ "$(readlink -f "$_lg")" != "$MCGIT_EXPECT_LIBGIT2" ]; then
    echo "not ok - mcgit loads libgit2 $_lg, not $MCGIT_EXPECT_LIBGIT2"
    exit 1
  fi
  echo "# libgit2: $MCGIT_EXPECT_LIBGIT2"
fi
# Background processes a test starts: PIDS+=($!); stop_all (also on exit)
# kills them and waits. A test that sets its own EXIT trap calls stop_all in it.
PIDS=()
stop_all() {
  local p
  for p in ${PIDS[@]+"${PIDS[@]}"}; do kill "$p" 2>/dev/null || true; done
  for p in ${PIDS[@]+"${PIDS[@]}"}; do wait "$p" 2>/dev/null || true; done
}
trap 'stop_all; rm -rf "$T"' EXIT
ok()   { PASS=$((PASS+1)); echo "ok - $*"; }
bad()  { FAIL=$((FAIL+1)); echo "not ok - $*"; }
# expect_rc RC DESC -- CMD...: run CMD, compare its exit status with RC
expect_rc() {
  local want=$1 desc=$2; shift 3
  local got=0
  "$@" >"$T/out" 2>"$T/err" || got=$?
  if [ "$got" = "$want" ]; then ok "$desc"; else bad "$desc (exit $got, want $want)"; sed 's/^/    /' "$T/err" | head -5; fi
}
# expect_grep PATTERN FILE DESC
expect_grep() { if grep -qE -- "$1" "$2"; then ok "$3"; else bad "$3 (no '$1' in $2)"; sed 's/^/    /' "$2" | head -5; fi; }
finish() { echo "$PASS passed, $FAIL failed"; [ "$FAIL" = 0 ]; }
# skip REASON: this test cannot run here. ctest reports SKIP (exit 77); with
# MCGIT_REQUIRE_ALL=1 (CI) it fails instead, so a missing tool never passes.
skip() {
  echo "skipped: $*"
  # tests/run-all.sh prints the reason on the test's ctest line
  [ -n "${MCGIT_SKIP_DIR:-}" ] && echo "$*" >"$MCGIT_SKIP_DIR/$(basename "$0" .sh)" 2>/dev/null
  if [ "${MCGIT_REQUIRE_ALL:-}" = 1 ]; then echo "MCGIT_REQUIRE_ALL=1: a required test cannot run"; exit 1; fi
  exit 77
}
# skip_part REASON: one part of a test cannot run here: noted, or a failure
# with MCGIT_REQUIRE_ALL=1.
skip_part() {
  if [ "${MCGIT_REQUIRE_ALL:-}" = 1 ]; then bad "required part cannot run: $*"; else echo "# skip: $*"; fi
}
# stop_clean NAME PID LOG: stop a daemon as an operator does (SIGTERM) and
# wait for it: it must exit 0, and its LOG must hold no sanitizer report —
# in the ASan build LeakSanitizer reports at exit what was never freed (with
# lsan.supp's suppressions, via LSAN_OPTIONS below), and exits 23.
stop_clean() {
  local rc=0
  kill -TERM "$2" 2>/dev/null || true
  wait "$2" || rc=$?
  [ "$rc" = 0 ] && ok "$1: stopped by SIGTERM, exit 0" || bad "$1: exit $rc after SIGTERM"
  if grep -qE "Sanitizer|runtime error" "$3"; then
    bad "$1: sanitizer report in its log"
    sed 's/^/    /' "$3" | head -30
  fi
}
# freeport: a TCP port free on 127.0.0.1 now (for a server a test starts).
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
# wait_port PORT: until something listens on 127.0.0.1:PORT (10 s at most).
wait_port() {
  local i
  for i in $(seq 100); do timeout 1 bash -c "</dev/tcp/127.0.0.1/$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}
# need TOOL...: skip unless every TOOL is on PATH.
need() { local t; for t in "$@"; do command -v "$t" >/dev/null || skip "$t not found"; done; }

# ---------------------------------------------------------------- signed git
# Helpers for tests that make SSH-signed histories with the real git and
# ssh-keygen. Keys live in $T/keys.
#
# libgit2 1.5 leaks inside pcre2 (see lsan.supp); keep ASan builds' leak check on for ours.
export LSAN_OPTIONS="suppressions=$SRC/tests/integration/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
#
# mkkey NAME TYPE: an unencrypted key pair $T/keys/NAME{,.pub}; TYPE is
# ed25519, ecdsa (nistp256) or rsa (3072 bits).
mkkey() {
  mkdir -p "$T/keys"
  case $2 in
    ed25519) ssh-keygen -q -t ed25519 -N '' -C "$1" -f "$T/keys/$1" ;;
    ecdsa)   ssh-keygen -q -t ecdsa -b 256 -N '' -C "$1" -f "$T/keys/$1" ;;
    rsa)     ssh-keygen -q -t rsa -b 3072 -N '' -C "$1" -f "$T/keys/$1" ;;
    *) echo "mkkey: unknown key type $2" >&2; return 2 ;;
  esac
}
# signer_line PRINCIPAL KEYNAME [OPTIONS]: one allowed_signers line for the key.
signer_line() { echo "$1${3:+ $3} $(cut -d' ' -f1,2 "$T/keys/$2.pub")"; }
# keyfp KEYNAME: the key's fingerprint as ssh-keygen -l prints it (SHA256:...).
keyfp() { ssh-keygen -lf "$T/keys/$1.pub" | cut -d' ' -f2; }
# sign_setup REPO ALLOWED_SIGNERS: make REPO sign with SSH keys, and let
# `git verify-commit` check against ALLOWED_SIGNERS.
sign_setup() {
  git -C "$1" config gpg.format ssh
  git -C "$1" config gpg.ssh.allowedSignersFile "$2"
}
# scommit REPO KEYNAME MSG: commit everything in REPO's working tree, signed
# with KEYNAME ("-" for an unsigned commit); prints nothing.
scommit() {
  git -C "$1" add -A
  if [ "$2" = - ]; then
    git -C "$1" commit -q --allow-empty --no-gpg-sign -m "$3"
  else
    git -C "$1" -c user.signingkey="$T/keys/$2" commit -q --allow-empty -S -m "$3"
  fi
}

# write_mc REPO NAME ROLE PATH CONTENT: REPO/machineconfigs/NAME.yaml, a
# MachineConfig for pool ROLE writing the file PATH with CONTENT (a data: URL
# body, percent-encoded where needed).
write_mc() {
  cat >"$1/machineconfigs/$2.yaml" <<MC
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: $2
  labels:
    machineconfiguration.openshift.io/role: $3
spec:
  config:
    ignition:
      version: 3.4.0
    storage:
      files:
      - path: $4
        contents:
          source: data:,$5
MC
}

# ---------------------------------------------------------------- local node n1
# node_cfg_helpers CL: publish JSON (an Ignition config published as a rendered
# config of CL, canonical bytes named by their hash; prints its name), desire
# NAME (node n1's desiredConfig), field F (one of n1's annotations).
node_cfg_helpers() {
  NODE_CL=$1
  cat >"$T/cfg.py" <<'PYEOF'
import hashlib, json, os, sys
cl, cmd = sys.argv[1], sys.argv[2]
p = "%s/nodes/n1.json" % cl
if cmd == "publish":
    b = (json.dumps({"config": json.loads(sys.argv[3])}, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode()
    name = "rendered-worker-" + hashlib.sha256(b).hexdigest()[:32]
    open("%s/configs/%s.json" % (cl, name), "wb").write(b)
    print(name)
elif cmd == "desire":
    n = json.load(open(p))
    n["metadata"].setdefault("annotations", {})["machineconfiguration.mcgit.io/desiredConfig"] = sys.argv[3]
    open(p + ".tmp", "w").write(json.dumps(n, indent=2))
    os.rename(p + ".tmp", p)
else:
    print(json.load(open(p))["metadata"].get("annotations", {}).get("machineconfiguration.mcgit.io/" + sys.argv[3], ""))
PYEOF
}
publish() { python3 "$T/cfg.py" "$NODE_CL" publish "$1"; }
desire() { python3 "$T/cfg.py" "$NODE_CL" desire "$1"; }
field() { python3 "$T/cfg.py" "$NODE_CL" field "$1"; }

# ---------------------------------------------------------------- fixtures
# fixture_signed_repo DIR [KEY]: the key KEY (default op; $T/keys/KEY,
# ed25519, made unless there), the trust file $T/trust holding only
# KEY@example.com's line, and a config repo DIR from `mcgit init` whose
# commits scommit signs and git verify-commit checks against $T/trust.
# Nothing is committed yet.
fixture_signed_repo() {
  local key=${2:-op}
  [ -e "$T/keys/$key" ] || mkkey "$key" ed25519
  signer_line "$key@example.com" "$key" >"$T/trust"
  "$MCGIT" init "$1" >/dev/null 2>&1 || { echo "fixture_signed_repo: mcgit init $1 failed" >&2; return 1; }
  sign_setup "$1" "$T/trust"
}
# fixture_server DIR [TRUST]: a bare repository DIR with mcgit's hooks
# installed against the trust file TRUST (default $T/trust): the server
# operators push to.
fixture_server() {
  git init -q --bare "$1"
  "$MCGIT" hook install --repo "$1" --trust "${2:-$T/trust}" >/dev/null 2>&1 ||
    { echo "fixture_server: mcgit hook install --repo $1 failed" >&2; return 1; }
}
# fixture_v1 DIR: commit, signed by op, the MachineConfig 10-worker writing
# /etc/demo.conf = v1 (message "v1").
fixture_v1() {
  write_mc "$1" 10-worker worker /etc/demo.conf v1
  scommit "$1" op "v1"
}
# fixture_workers CLUSTER NODE...: add each NODE to CLUSTER (local:DIR) as a
# worker (label node-role.kubernetes.io/worker).
fixture_workers() {
  local cl=$1 n
  shift
  for n in "$@"; do "$MCGIT" node add --cluster "$cl" "$n" --labels node-role.kubernetes.io/worker= >/dev/null; done
}
# snap REPO: its refs and every file under its objects/ with its sha256, and
# any quarantine directory left there: equal snaps, nothing written.
snap() {
  local gd
  gd=$(git -C "$1" rev-parse --absolute-git-dir)
  git -C "$1" for-each-ref --format='%(objectname) %(refname)'
  (cd "$gd/objects" && find . -type f | sort | xargs -r sha256sum)
  (cd "$gd/objects" && find . -maxdepth 1 -name '*incoming-*' | sort)
}
