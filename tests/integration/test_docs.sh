#!/usr/bin/env bash
# docs/commands.md holds every command's help text verbatim (mcgit help CMD).
. "$(dirname "$0")/lib.sh"
cmds=$("$MCGIT" help | awk '/^commands:/{f=1;next} f&&/^  [a-z]/{print $1}')
[ -n "$cmds" ] && ok "help lists commands" || bad "help lists no commands"
# every command defined in src/cli/ (const mcg_cmd mcg_cmd_X = {"name", ...) is in that list
defined=$(grep -h -A1 '^const mcg_cmd mcg_cmd_[a-z_]* = {' "$SRC"/src/cli/cmd_*.c | sed -n 's/^ *\.name = "\([a-z-]*\)",$/\1/p' | sort)
[ "$(echo "$defined" | wc -w)" -ge 20 ] && ok "(found $(echo "$defined" | wc -w) commands in src/cli)" || bad "commands in src/cli: $defined"
missing=$(comm -23 <(echo "$defined") <(echo "$cmds" | tr ' ' '\n' | sort))
[ -z "$missing" ] && ok "mcgit help lists every command (plan, approve, heartbeat, pool, sync ...)" || bad "mcgit help misses: $missing"
for c in $cmds; do
  "$MCGIT" help "$c" > "$T/help.txt"
  "$MCGIT" "$c" --help > "$T/help2.txt"
  if cmp -s "$T/help.txt" "$T/help2.txt"; then ok "$c: help CMD = CMD --help"; else bad "$c: help CMD differs from CMD --help"; fi
  if python3 - "$SRC/docs/commands.md" "$T/help.txt" <<'PY'
import sys
doc = open(sys.argv[1]).read(); txt = open(sys.argv[2]).read()
sys.exit(0 if "```\n" + txt + "```" in doc else 1)
PY
  then ok "$c: docs/commands.md matches"; else bad "$c: docs/commands.md is out of date (regenerate it)"; fi
done

# The README's "Next steps after the demo" block, run as written in a new
# HOME, from a directory laid out like the clone after the first command
# (build/mcgit). apt-get is a stand-in that checks the packages it names are
# installed (tests/setup.sh installs them; the test does not install).
python3 - "$SRC/README.md" >"$T/next-steps.sh" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
part = text.split("### Next steps after the demo", 1)[1]
block = re.search(r"```sh\n(.*?)```", part, re.S).group(1)
print(block)
PY
[ -s "$T/next-steps.sh" ] && ok "README has a next-steps block" || bad "README has no next-steps block"
mkdir -p "$T/ns/home" "$T/ns/clone/build" "$T/ns/bin"
ln -s "$MCGIT" "$T/ns/clone/build/mcgit"
cat >"$T/ns/bin/apt-get" <<'SHIM'
#!/bin/sh
for p in "$@"; do case $p in -*|install) ;; *) dpkg -s "$p" >/dev/null 2>&1 || { echo "not installed: $p" >&2; exit 1; } ;; esac; done
SHIM
chmod +x "$T/ns/bin/apt-get"
(cd "$T/ns/clone" && HOME="$T/ns/home" PATH="$T/ns/bin:$(dirname "$(command -v git)"):/usr/bin:/bin" \
  bash -euo pipefail "$T/next-steps.sh") >"$T/ns/out" 2>&1 && ok "the next-steps block runs as written" ||
  { bad "the next-steps block fails"; tail -5 "$T/ns/out"; }
expect_grep 'Good "git" signature for me@example.com' "$T/ns/out" "git log --show-signature: a good signature"
expect_grep '^worker rendered-worker-[0-9a-f]{32}' "$T/ns/out" "mcgit render renders the signed commit"

# What a newcomer tripped over in the docs
if tr '\n' ' ' <"$SRC/docs/operations.md" | grep -qE "not part of +this +release"; then bad "operations.md says the kube backend is not part of this release"
else ok "operations.md points to the kube backend's guide"; fi
awk '/kubectl apply -f deploy\/crds\//{a=NR} /kubectl wait --for condition=established/{if (a && NR - a <= 2) f=1} END{exit !f}' "$SRC/docs/kubernetes.md" &&
  ok "kubernetes.md waits for the CRDs to be established right after applying them" ||
  bad "kubernetes.md: kubectl get mcp right after the CRDs' apply fails; no wait for condition=established"
grep -q 'still building' "$SRC/tests/kube/build-apiserver.sh" && ok "the apiserver build prints progress" ||
  bad "the apiserver build is silent for minutes"

# docs/architecture.md names every source file of src/ (commands: cmd_<name>.c)
missing=$(cd "$SRC" && for f in src/*/*.c src/*/*.h; do
  b=${f##*/}; case $b in cmd_*.c) continue ;; esac
  grep -qF -e "\`$b\`" -e "\`${f#src/}\`" docs/architecture.md || echo "$f"; done)
[ -z "$missing" ] && ok "architecture.md names every file of src/" ||
  bad "architecture.md does not name: $(echo $missing)"

expect_rc 2 "unknown command is a usage error" -- "$MCGIT" no-such-command
expect_rc 0 "version" -- "$MCGIT" version
finish
