#!/usr/bin/env bash
# test_trust_attacks.sh — an attacker with push access but no trusted key, and
# signers whose key was removed or has expired, against every entry point:
# the real hooks (git push), bundle import, `mcgit fetch`, the controller and
# a fresh `mcgit verify`. Each attack must change nothing anywhere.
. "$(dirname "$0")/lib.sh"

mkkey alice ed25519
mkkey bob ed25519
mkkey mallory ed25519
TR=$T/trust
signer_line alice@example.com alice >"$TR"

# srefs REPO: every ref and its value (a refusal must leave this unchanged)
srefs() { git -C "$1" for-each-ref --format='%(refname) %(objectname)'; }
# state REPO: refs plus mcgit's private verified mark
state() { srefs "$1"; cat "$1/mcgit/verified" 2>/dev/null || true; }

# server NAME HEAD: a bare server with the hooks; HEAD as given (the attack
# on docs that made servers with `git init --bare` left HEAD at master)
server() {
  git init -q --bare "$T/$1.git"
  "$MCGIT" hook install --repo "$T/$1.git" --trust "$TR" >/dev/null 2>&1
  git -C "$T/$1.git" symbolic-ref HEAD "refs/heads/$2"
}
# pushed DESC WANT -- git push args: exit status WANT (0 or 1) and, for a
# refusal, server refs and mark unchanged and a "remote: mcgit: refusing" line
pushed() {
  local desc=$1 want=$2 repo=$3 before rc=0; shift 4
  before=$(state "$repo")
  git "$@" >"$T/push.out" 2>&1 || rc=$?
  [ "$rc" != 0 ] && rc=1
  if [ "$rc" != "$want" ]; then bad "$desc (push exit $rc, want $want)"; sed 's/^/    /' "$T/push.out" | head -8; return; fi
  if [ "$want" = 1 ]; then
    if ! grep -q "^remote: mcgit: refusing" "$T/push.out"; then bad "$desc: no refusal line"; sed 's/^/    /' "$T/push.out" | head -8
    elif [ "$(state "$repo")" != "$before" ]; then bad "$desc: the server changed"
    else ok "$desc"; fi
  else ok "$desc"; fi
}

# ------------------------------------------------ 1. an unsigned render in one push
server srv master
C=$T/client
"$MCGIT" init "$C" >/dev/null 2>&1
sign_setup "$C" "$TR"
git -C "$C" remote add origin "file://$T/srv.git"
scommit "$C" alice "initial config"
expect_rc 0 "alice's signed first push to main" -- git -C "$C" push -q origin main
R0=$(git -C "$T/srv.git" rev-parse rendered)
# the attacker: an unsigned commit that moves the source branch to master and adds a key
git -C "$C" checkout -q -b evil
printf 'sourceBranch: master\n' >"$C/mcgit.yaml"
cat >"$C/machineconfigs/99-evil.yaml" <<'EOF'
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 99-evil
  labels:
    machineconfiguration.openshift.io/role: worker
spec:
  config:
    ignition:
      version: 3.4.0
    passwd:
      users:
      - name: core
        sshAuthorizedKeys: ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEvilEvilEvilEvilEvilEvilEvilEvilEvilEvilEvil attacker"]
EOF
scommit "$C" - "evil"
E=$(git -C "$C" rev-parse HEAD)
pushed "E to master and refs/mcgit/verified in one push is refused (HEAD at master)" 1 "$T/srv.git" -- \
  -C "$C" push origin "$E:refs/heads/master" "$E:refs/mcgit/verified"
expect_grep "refusing refs/mcgit/verified: refs/mcgit/ is written by mcgit only" "$T/push.out" "the pusher is told refs/mcgit/ is mcgit's"
[ "$(git -C "$T/srv.git" rev-parse rendered)" = "$R0" ] && ok "nothing was rendered" || bad "rendered moved"
# master alone is a feature branch now: accepted, and read by nothing
pushed "E to master alone is accepted as a branch nothing reads" 0 "$T/srv.git" -- -C "$C" push origin "$E:refs/heads/master"
[ "$(git -C "$T/srv.git" rev-parse rendered)" = "$R0" ] && ok "pushing master rendered nothing" || bad "master was rendered"
expect_rc 0 "render --repo on the server renders main only" -- "$MCGIT" render --repo "$T/srv.git" --trust "$TR"
[ "$(git -C "$T/srv.git" rev-parse rendered)" = "$R0" ] && ok "still the same rendered commit" || bad "rendered moved"
if git -C "$T/srv.git" grep -q Evil rendered -- 2>/dev/null; then bad "the attacker's key reached the rendered branch"; else ok "the attacker's key is nowhere in the rendered branch"; fi
expect_rc 1 "HEAD pointing at master does not make master the source: verify --rev main is clean, master is not" -- \
  "$MCGIT" verify --repo "$T/srv.git" --trust "$TR" --rev master
pushed "E to main is refused (unsigned)" 1 "$T/srv.git" -- -C "$C" push origin "$E:refs/heads/main"

# internal refs: create, move, delete; the rendered branch likewise
pushed "creating refs/mcgit/anything is refused" 1 "$T/srv.git" -- -C "$C" push origin "$E:refs/mcgit/fetched/main"
pushed "pushing the rendered branch is refused" 1 "$T/srv.git" -- -C "$C" push -f origin "$E:refs/heads/rendered"
pushed "deleting the rendered branch is refused" 1 "$T/srv.git" -- -C "$C" push origin ":refs/heads/rendered"
pushed "deleting the source branch is refused" 1 "$T/srv.git" -- -C "$C" push origin ":refs/heads/main"
git -C "$T/srv.git" update-ref refs/mcgit/legacy "$R0"   # as an older mcgit left refs/mcgit/verified
pushed "deleting a ref under refs/mcgit/ is refused" 1 "$T/srv.git" -- -C "$C" push origin ":refs/mcgit/legacy"
git -C "$T/srv.git" update-ref -d refs/mcgit/legacy
# tags: an unsigned commit behind a tag, then a moved tag
pushed "a tag on an unsigned commit is refused" 1 "$T/srv.git" -- -C "$C" push origin "$E:refs/tags/v-evil"
M0=$(git -C "$T/srv.git" rev-parse main)
pushed "a tag on signed history is accepted" 0 "$T/srv.git" -- -C "$C" push origin "$M0:refs/tags/v1"
git -C "$C" checkout -q main
echo x >"$C/NOTES"; scommit "$C" alice "second"
pushed "the signed second commit is accepted" 0 "$T/srv.git" -- -C "$C" push origin main
pushed "moving a tag is refused" 1 "$T/srv.git" -- -C "$C" push -f origin "main:refs/tags/v1"

# variant: a fresh server whose HEAD is main; E to refs/mcgit/verified first, then main
server srv2 main
pushed "fresh server: E to refs/mcgit/verified is refused" 1 "$T/srv2.git" -- -C "$C" push "file://$T/srv2.git" "$E:refs/mcgit/verified"
pushed "fresh server: E to main is refused" 1 "$T/srv2.git" -- -C "$C" push "file://$T/srv2.git" "$E:refs/heads/main"
[ -z "$(srefs "$T/srv2.git")" ] && ok "fresh server: no ref at all" || bad "fresh server has refs: $(srefs "$T/srv2.git")"
# hook install points HEAD at the source branch
fixture_server "$T/srv3.git" "$TR"
[ "$(git -C "$T/srv3.git" symbolic-ref HEAD)" = refs/heads/main ] && ok "hook install points HEAD at main" || bad "HEAD: $(git -C "$T/srv3.git" symbolic-ref HEAD)"
"$MCGIT" hook install --repo "$T/srv3.git" --trust "$TR" --source-branch production >/dev/null 2>&1
[ "$(git -C "$T/srv3.git" symbolic-ref HEAD)" = refs/heads/production ] && [ "$(git -C "$T/srv3.git" config mcgit.sourceBranch)" = production ] \
  && ok "hook install --source-branch records it and points HEAD at it" || bad "source branch not recorded"
# a committed mcgit.yaml cannot choose the branch: a signed one naming another is refused
git -C "$C" checkout -q main
printf 'sourceBranch: master\n' >"$C/mcgit.yaml"; scommit "$C" alice "signed, but names master"
pushed "a signed mcgit.yaml naming another source branch is refused" 1 "$T/srv.git" -- -C "$C" push origin main
expect_grep "sourceBranch 'master' is not this repository's source branch 'main'" "$T/push.out" "the reason names both branches"
git -C "$C" reset -q --hard HEAD~1

# ------------------------------------------------ 2. a removed signer keeps signing
# history: C1 (alice adds bob), C2 (alice removes bob); bob merges (C1, C2)
server srv4 main
W=$T/w4
"$MCGIT" init "$W" >/dev/null 2>&1
sign_setup "$W" "$TR"
git -C "$W" remote add origin "file://$T/srv4.git"
scommit "$W" alice "base"
mkdir -p "$W/.mcgit"
signer_line bob@example.com bob >"$W/.mcgit/allowed_signers"
scommit "$W" alice "C1: add bob"
C1=$(git -C "$W" rev-parse HEAD)
echo "bob works" >"$W/NOTES"; scommit "$W" bob "bob, while trusted"
git -C "$W" reset -q --hard "$C1"
: >"$W/.mcgit/allowed_signers"
scommit "$W" alice "C2: remove bob"
C2=$(git -C "$W" rev-parse HEAD)
expect_rc 0 "alice pushes C1 and C2" -- git -C "$W" push -q origin main
# bob's merges: (C1, C2), (C2, C1), an octopus, and one whose parent is from another branch
bobmerge() { # bobmerge MSG PARENT...: a merge commit signed by bob with C2's tree plus a change
  local msg=$1 tree; shift
  tree=$(git -C "$W" rev-parse "$C2^{tree}")
  local args=()
  for p in "$@"; do args+=(-p "$p"); done
  git -C "$W" -c user.signingkey="$T/keys/bob" commit-tree -S "${args[@]}" -m "$msg" "$tree"
}
git -C "$W" checkout -q -b side "$C1"
echo side >"$W/SIDE"; scommit "$W" alice "side branch on C1"
SIDE=$(git -C "$W" rev-parse HEAD)
git -C "$W" checkout -q main
M12=$(bobmerge "bob merges C1,C2" "$C1" "$C2")
M21=$(bobmerge "bob merges C2,C1" "$C2" "$C1")
MOCT=$(bobmerge "bob's octopus" "$C1" "$SIDE" "$C2")
MSIDE=$(bobmerge "bob merges side first" "$SIDE" "$C2")
for m in M12 M21 MOCT MSIDE; do
  pushed "bob's merge $m on top of his removal is refused at push" 1 "$T/srv4.git" -- -C "$W" push origin "${!m}:refs/heads/main"
done
expect_grep "key SHA256:.* is not in allowed signers" "$T/push.out" "the reason says bob's key is not allowed"
# the same merge by bundle: made where no hook runs, carried to a mirror that has C2
git init -q --bare "$T/lab.git"
git -C "$W" push -q "$T/lab.git" "$M12:refs/heads/main"
git -C "$T/lab.git" bundle create "$T/m12.bundle" main 2>/dev/null
git clone -q --bare "$T/srv4.git" "$T/mirror4"
"$MCGIT" render --repo "$T/mirror4" --trust "$TR" >/dev/null 2>&1
before=$(state "$T/mirror4")
expect_rc 1 "bob's merge by bundle import is refused" -- "$MCGIT" bundle import --repo "$T/mirror4" "$T/m12.bundle" --trust "$TR"
[ "$(state "$T/mirror4")" = "$before" ] && ok "bundle import refusal changed nothing" || bad "mirror changed"
# the same merge by fetch
git -C "$T/mirror4" remote set-url origin "file://$T/lab.git"
expect_rc 1 "bob's merge by mcgit fetch is refused" -- "$MCGIT" fetch --repo "$T/mirror4" --trust "$TR"
expect_grep "refused: .*not in allowed signers" "$T/err" "fetch names the refused commit"
[ "$(git -C "$T/mirror4" rev-parse main)" = "$C2" ] && ok "the mirror's main did not move" || bad "mirror main moved"
# a fresh verification of the lab's whole history refuses it too
expect_rc 1 "a fresh mcgit verify of the merged history refuses bob's merge" -- "$MCGIT" verify --repo "$T/lab.git" --trust "$TR"
grep -q "${M12:0:12}" "$T/out" "$T/err" && ok "verify names the merge" || bad "verify output lacks the merge"
# ... and his signing after a re-add by alice is fine: re-adding is alice's signed decision
signer_line bob@example.com bob >"$W/.mcgit/allowed_signers"; scommit "$W" alice "C3: alice re-adds bob"
echo ok >"$W/NOTES"; scommit "$W" bob "bob after re-add"
expect_rc 0 "after alice re-adds bob, his commit is accepted" -- git -C "$W" push -q origin main

# ------------------------------------------------ 3. expiry cannot be bypassed by backdating
mkkey carol ed25519
TRX=$T/trust-expiring
{ signer_line alice@example.com alice; signer_line carol@example.com carol 'valid-before="20260601Z"'; } >"$TRX"
git init -q --bare "$T/srv5.git"
"$MCGIT" hook install --repo "$T/srv5.git" --trust "$TRX" >/dev/null 2>&1
X=$T/w5
"$MCGIT" init "$X" >/dev/null 2>&1
sign_setup "$X" "$TRX"
git -C "$X" remote add origin "file://$T/srv5.git"
scommit "$X" alice "base (2026-01-01)"
GIT_COMMITTER_DATE=2026-05-01T00:00:00Z scommit "$X" carol "carol, while valid (2026-05-01)"
# a first push (no verified history yet) is judged by commit times, but its
# newest commit must be valid now: carol's key is not, so history whose tip
# she signed is refused; one fresh commit by a key valid now on top (as a
# migration adds with `mcgit heartbeat`) lets the same history in
pushed "a first push whose newest commit is by a key expired now is refused" 1 "$T/srv5.git" -- -C "$X" push origin main
expect_grep "on arrival: key SHA256:.* is not valid at" "$T/push.out" "the reason: the newest commit's key is not valid now"
echo fresh >"$X/NOTES"; GIT_COMMITTER_DATE=2026-05-01T12:00:00Z scommit "$X" alice "alice on top"
expect_rc 0 "the old history under a commit by a key valid now is accepted" -- git -C "$X" push -q origin main
echo late >"$X/NOTES"
GIT_COMMITTER_DATE=2026-05-02T00:00:00Z scommit "$X" carol "carol, expired, backdated to 2026-05-02"
pushed "a backdated commit by an expired key is refused at push" 1 "$T/srv5.git" -- -C "$X" push origin main
expect_grep "on arrival: key SHA256:.* is not valid at" "$T/push.out" "the reason says the key is not valid now"
# by bundle into a mirror that holds verified history, and by fetch
git init -q --bare "$T/lab5.git"; git -C "$X" push -q "$T/lab5.git" main
git -C "$T/lab5.git" bundle create "$T/late.bundle" main 2>/dev/null
git clone -q --bare "$T/srv5.git" "$T/mirror5"
"$MCGIT" render --repo "$T/mirror5" --trust "$TRX" >/dev/null 2>&1
before=$(state "$T/mirror5")
expect_rc 1 "the backdated commit by bundle import is refused" -- "$MCGIT" bundle import --repo "$T/mirror5" "$T/late.bundle" --trust "$TRX"
[ "$(state "$T/mirror5")" = "$before" ] && ok "and nothing changed" || bad "mirror changed"
git -C "$T/mirror5" remote set-url origin "file://$T/lab5.git"
expect_rc 1 "the backdated commit by fetch is refused" -- "$MCGIT" fetch --repo "$T/mirror5" --trust "$TRX"
# a fresh mirror judges history by its own times, but the newest commit must
# be valid now: the backdated tip by carol's expired key is refused there too
git init -q --bare "$T/fresh5.git"
expect_rc 1 "a fresh bundle import whose newest commit is by an expired key is refused" -- \
  "$MCGIT" bundle import --repo "$T/fresh5.git" "$T/late.bundle" --trust "$TRX"
[ -z "$(git -C "$T/fresh5.git" for-each-ref)" ] && ok "(no ref moved)" || bad "fresh5 refs moved"
git init -q --bare "$T/lab6.git"; git -C "$X" push -q "$T/lab6.git" HEAD~1:refs/heads/main
git -C "$T/lab6.git" bundle create "$T/old.bundle" main 2>/dev/null
expect_rc 0 "a fresh bundle import of the history under alice's commit is accepted" -- \
  "$MCGIT" bundle import --repo "$T/fresh5.git" "$T/old.bundle" --trust "$TRX"
# backdating below the parent's time is refused everywhere, fresh verification included
git -C "$X" reset -q --hard HEAD~1
echo a >"$X/NOTES"; GIT_COMMITTER_DATE=2026-05-20T00:00:00Z scommit "$X" alice "alice, 2026-05-20"
echo b >"$X/NOTES"; GIT_COMMITTER_DATE=2026-05-10T00:00:00Z scommit "$X" carol "carol backdated before her parent"
expect_rc 1 "a commit more than the skew older than its parent fails a fresh verify" -- "$MCGIT" verify --repo "$X" --trust "$TRX"
expect_grep "is more than 3600 s before its parent's" "$T/out" "the reason names the skew"
# a commit from the future is refused on arrival
git -C "$X" reset -q --hard HEAD~2
echo f >"$X/NOTES"; GIT_COMMITTER_DATE=2099-01-01T00:00:00Z scommit "$X" alice "from the future"
pushed "a commit dated in the future is refused on arrival" 1 "$T/srv5.git" -- -C "$X" push origin main

# ------------------------------------------------ 4. nesting stops at the limit
git -C "$C" checkout -q main
python3 -c "import sys; sys.stdout.write('a: ' + '['*120000 + ']'*120000 + '\n')" >"$C/mcgit.yaml"
scommit "$C" alice "deep mcgit.yaml"
pushed "a 120,000-deep mcgit.yaml is refused" 1 "$T/srv.git" -- -C "$C" push origin main
expect_grep "mcgit.yaml:1: nesting deeper than 64 levels" "$T/push.out" "the reason names the file and the limit"
git -C "$C" reset -q --hard HEAD~1

# ------------------------------------------------ 5. a refused fetch changes nothing; the next pass recovers
UP=$T/up.git
git init -q --bare "$UP"
git -C "$C" push -q "$UP" main
git clone -q --bare "$UP" "$T/ctl-mirror"
CL=local:$T/cl
"$MCGIT" node add --cluster "$CL" w0 --labels node-role.kubernetes.io/worker= >/dev/null
CTL=("$MCGIT" controller --repo "$T/ctl-mirror" --trust "$TR" --cluster "$CL" --once)
expect_rc 0 "controller: first pass" -- "${CTL[@]}"
GOOD=$(git -C "$T/ctl-mirror" rev-parse main)
echo bad >"$C/NOTES"; scommit "$C" - "unsigned upstream"
BAD=$(git -C "$C" rev-parse HEAD)
git -C "$C" push -q "$UP" main
expect_rc 1 "controller: a pass fetching an unsigned commit fails" -- "${CTL[@]}"
[ "$(git -C "$T/ctl-mirror" rev-parse main)" = "$GOOD" ] && ok "the mirror's main did not move" || bad "mirror moved to $(git -C "$T/ctl-mirror" rev-parse main)"
"$MCGIT" status --cluster "$CL" -o json | jq -r '.items[] | select(.metadata.name=="worker") | .status.conditions[] | select(.type=="RenderDegraded") | .message' >"$T/cond"
expect_grep "commit ${BAD:0:12} refused: commit is not signed" "$T/cond" "the pool condition names the refused commit"
# the remote is cleaned up: back to GOOD plus a signed commit
git -C "$C" reset -q --hard "$GOOD"
echo fixed >"$C/NOTES"; scommit "$C" alice "signed fix"
git -C "$C" push -q -f "$UP" main
expect_rc 0 "controller: the next pass recovers by itself" -- "${CTL[@]}"
[ "$(git -C "$T/ctl-mirror" rev-parse main)" = "$(git -C "$C" rev-parse HEAD)" ] && ok "the mirror is at the signed fix" || bad "mirror not at the fix"

finish
