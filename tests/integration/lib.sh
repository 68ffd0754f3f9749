# Shared helpers for integration tests. Source it first:  . "$(dirname "$0")/lib.sh"
set -euo pipefail
: "${MCGIT:?MCGIT must point at the mcgit binary}"
: "${SRC:?SRC must point at the source tree}"
T=$(mktemp -d "${TMPDIR:-/tmp}/mcgit-it.XXXXXX")
trap 'rm -rf "$T"' EXIT
export HOME="$T/home" GIT_CONFIG_NOSYSTEM=1 LC_ALL=C TZ=UTC
mkdir -p "$HOME"
git config --global user.name "Test Operator"
git config --global user.email "op@example.com"
git config --global init.defaultBranch main
export GIT_AUTHOR_DATE="2026-01-01T00:00:00Z" GIT_COMMITTER_DATE="2026-01-01T00:00:00Z"
PASS=0
FAIL=0
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
