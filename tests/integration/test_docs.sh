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
# and its "Every command" block, run after it in the same shell: nothing in
# it may block a paste (the controller and agent make one pass)
python3 - "$SRC/README.md" >>"$T/next-steps.sh" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
part = text.split("Every command, in the order of a config", 1)[1]
print(re.search(r"```sh\n(.*?)```", part, re.S).group(1))
PY
grep -q '^mcgit controller .*--once' "$T/next-steps.sh" && grep -q '^mcgit agent .*--once' "$T/next-steps.sh" &&
  ok "README's every-command block: controller and agent with --once" || bad "README's every-command block runs a daemon in the foreground"
mkdir -p "$T/ns/home" "$T/ns/clone/build" "$T/ns/bin"
ln -s "$MCGIT" "$T/ns/clone/build/mcgit"
cat >"$T/ns/bin/apt-get" <<'SHIM'
#!/bin/sh
for p in "$@"; do case $p in -*|install) ;; *) dpkg -s "$p" >/dev/null 2>&1 || { echo "not installed: $p" >&2; exit 1; } ;; esac; done
SHIM
chmod +x "$T/ns/bin/apt-get"
(cd "$T/ns/clone" && HOME="$T/ns/home" PATH="$T/ns/bin:$(dirname "$(command -v git)"):/usr/bin:/bin" \
  timeout 120 bash -euo pipefail "$T/next-steps.sh") >"$T/ns/out" 2>&1 && ok "the next-steps and every-command blocks run as written" ||
  { bad "the next-steps or every-command block fails"; tail -5 "$T/ns/out"; }
expect_grep 'Good "git" signature for me@example.com' "$T/ns/out" "git log --show-signature: a good signature"
expect_grep '^worker rendered-worker-[0-9a-f]{32}' "$T/ns/out" "mcgit render renders the signed commit"
expect_grep '^worker-0 Done rendered-worker-[0-9a-f]{32}$' "$T/ns/out" "the agent's pass applied worker-0's config"
expect_grep '^worker +rendered-worker-[0-9a-f]{32} +True +False +False +1 +1 +1 +0 ' "$T/ns/out" "mcgit status (\$MCGIT_CLUSTER): the worker pool is updated"
expect_grep '^refs/heads/main \(none\) -> [0-9a-f]{40} \([0-9]+ commits verified\)' "$T/ns/out" "the mirror imported the bundle"
[ -z "$(ls -A "$T/ns/clone" | grep -v '^build$')" ] && ok "the blocks write nothing into the project's clone" ||
  bad "the blocks wrote into the clone: $(ls -A "$T/ns/clone" | tr '\n' ' ')"
[ -d "$T/ns/home/mcgit-try/cfg" ] && [ -d "$T/ns/home/mcgit-try/life" ] && ok "they work in ~/mcgit-try" || bad "no ~/mcgit-try/cfg or life"

# docs/operations.md sections 1 to 3 and docs/bundles.md sections 1 to 3,
# run as written in a new HOME with the docs' absolute paths (/etc/mcgit,
# /srv, /var/lib/mcgit) under $FS. The only thing given beforehand is a git
# identity, which the docs assume.
# docblock FILE MARKER [N]: the N-th (default 1) ```sh block after MARKER
docblock() {
  python3 - "$@" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
n = int(sys.argv[3]) if len(sys.argv) > 3 else 1
print(re.findall(r"```sh\n(.*?)```", text.split(sys.argv[2], 1)[1], re.S)[n - 1], end="")
PY
}
FS=$T/fs OPS=$T/ops
mkdir -p "$FS" "$OPS/home" "$OPS/run"
sandbox() { sed -e "s#/etc/mcgit#$FS/etc/mcgit#g" -e "s#/srv/#$FS/srv/#g" -e "s#/var/lib/mcgit#$FS/var/lib/mcgit#g"; }
D=$SRC/docs/operations.md
{
  echo 'git config --global user.name "Alice Example"; git config --global user.email alice@example.com'
  docblock "$D" "## 1. Keys and the trust root"
  docblock "$D" "The first line for the key just made"
  docblock "$D" "## 2. A config repo and its server"
  echo "cd '$OPS/run'"
  docblock "$D" "## 3. Controller and agents (local cluster)"
  # (the test's) until worker-0 is Done and counted, then stop what section 3 started
  echo 'for i in $(seq 150); do mcgit status 2>/dev/null | grep -qE "^worker +rendered-worker-[0-9a-f]+ +True +False +False +1 +1 +1 +0 " && break; sleep 0.2; done'
  echo 'mcgit status; kill $(jobs -p) 2>/dev/null; wait || true'
} | sandbox >"$T/ops.sh"
(cd "$OPS/run" && printf '\n\n' | HOME="$OPS/home" timeout 120 setsid bash -euo pipefail "$T/ops.sh") >"$T/ops.out" 2>&1 &&
  ok "operations.md sections 1, 2 and 3 run as written" || { bad "operations.md sections 1-3 fail as written"; tail -5 "$T/ops.out" | sed 's/^/    /'; }
expect_grep '^worker +rendered-worker-[0-9a-f]{32} +True +False +False +1 +1 +1 +0 ' "$T/ops.out" \
  "their controller (on a bare clone of the server) and agent rolled the config out to worker-0"
expect_grep 'remote: mcgit: rendered source commit' "$T/ops.out" "the push went through the hooks, --revoked included"
# section 4 signs with the key section 1 made
keys=$(grep -o '~/\.ssh/[a-z_0-9]*' <(sed -n '/^## 4\. Rollback/,/^## 5\./p' "$D") | sort -u)
[ "$keys" = "~/.ssh/mcgit_signing" ] && ok "operations.md section 4 signs with section 1's key" || bad "section 4's keys: $keys"
# the controller's --repo that does not exist: the hint makes a clone, not an empty repo that never fetches
expect_rc 1 "a controller --repo that does not exist" -- "$MCGIT" controller --repo "$FS/var/lib/mcgit/nope" \
  --trust "$FS/etc/mcgit/allowed_signers" --cluster "local:$FS/var/lib/mcgit/cluster" --once
expect_grep 'no such repository \(`git clone --bare URL .*nope` makes a clone of the config repo to read' "$T/err" "its error says how to clone one"
expect_rc 1 "hook install --revoked with a missing file" -- "$MCGIT" hook install --repo "$FS/srv/git/cfg.git" \
  --trust "$FS/etc/mcgit/allowed_signers" --revoked "$FS/etc/mcgit/nope"
expect_grep 'revocation list \(--revoked: a KRL or public keys\) .*nope: No such file or directory \(an empty file revokes nothing' "$T/err" \
  "its error says what the file is and that an empty one revokes nothing"

B=$SRC/docs/bundles.md
{
  echo "git clone -q /srv/git/cfg.git /srv/config"
  docblock "$B" "## 1. Once: seed the air-gapped repo" 1
  docblock "$B" "## 1. Once: seed the air-gapped repo" 2
  echo 'echo change >/srv/config/NOTES && git -C /srv/config add NOTES && git -C /srv/config commit -q -m "a change"'
  docblock "$B" "## 2. Every change after that"
  docblock "$B" "## 3. Check before you import"
  echo 'mcgit bundle import --repo /srv/mirror config-0042.bundle --trust /etc/mcgit/allowed_signers'
} | sandbox >"$T/bundles.sh"
mkdir -p "$T/stick"
(cd "$T/stick" && HOME="$OPS/home" timeout 120 bash -euo pipefail "$T/bundles.sh") >"$T/bundles.out" 2>&1 &&
  ok "bundles.md sections 1, 2 and 3 run as written (the tag section 2 starts from is made in section 1)" ||
  { bad "bundles.md sections 1-3 fail as written"; tail -5 "$T/bundles.out" | sed 's/^/    /'; }
m=$(git -C "$FS/srv/mirror" rev-parse main 2>/dev/null || true)
[ -n "$m" ] && [ "$m" = "$(git -C "$FS/srv/config" rev-parse main)" ] &&
  ok "the air-gapped mirror has the change" || bad "the mirror's main is not the connected site's"

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
