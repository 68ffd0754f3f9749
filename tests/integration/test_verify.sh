#!/usr/bin/env bash
# test_verify.sh — `mcgit verify` gives, commit by commit, the verdict that
# `git verify-commit` gives, for real histories signed by git with ed25519,
# ecdsa (nistp256) and rsa (3072) keys.
#
# The oracle is git itself: a commit's expected verdict is that of
#   git -c gpg.ssh.allowedSignersFile=A verify-commit C
# for each parent P of C, where A is the trust root plus
# .mcgit/allowed_signers as it stands in P when P's own verdict is good (the
# trust policy of docs/concepts.md, "Which keys may sign a commit": a commit must be allowed by every line
# of history it extends). The histories are dated forwards: mcgit's rule that
# committer times do not go back is tested in test_trust_attacks.sh. Every case is also pinned to the verdict it must have,
# so a bug shared by the oracle and mcgit still fails.
. "$(dirname "$0")/lib.sh"

declare -A ORACLE MV

# oracle REPO TRUST REV: fill ORACLE[sha] for every commit reachable from REV:
# good when git verify-commit accepts it under the signers of EVERY parent
# (the root plus the parent's .mcgit/allowed_signers when the parent is
# good; the root alone for a parentless commit or a bad parent).
oracle() {
  local repo=$1 trust=$2 c p allowed verdict i parents
  for c in $(git -C "$repo" rev-list --topo-order --reverse "$3"); do
    [ -n "${ORACLE[$c]:-}" ] && continue
    verdict=good i=0
    parents=$(git -C "$repo" log -1 --format=%P "$c")
    for p in ${parents:-""}; do
      i=$((i+1))
      allowed=$trust
      if [ -n "$p" ] && [ "${ORACLE[$p]}" = good ] &&
         git -C "$repo" cat-file -e "$p:.mcgit/allowed_signers" 2>/dev/null; then
        allowed=$T/allowed.$c.$i
        { cat "$trust"; git -C "$repo" show "$p:.mcgit/allowed_signers"; } >"$allowed"
      fi
      git -C "$repo" -c gpg.ssh.allowedSignersFile="$allowed" verify-commit "$c" >/dev/null 2>&1 || verdict=bad
    done
    ORACLE[$c]=$verdict
  done
}

# mverify REPO TRUST REV: run mcgit verify, fill MV[sha], set MRC (exit status).
mverify() {
  MRC=0
  "$MCGIT" verify --repo "$1" --trust "$2" --rev "$3" >"$T/mv.out" 2>"$T/mv.err" || MRC=$?
  local verdict sha rest
  while read -r verdict sha rest; do MV[$sha]=$verdict; done <"$T/mv.out"
}

# same_as_git LABEL REPO TRUST REV: every commit's verdict and the exit status agree.
same_as_git() {
  local label=$1 repo=$2 trust=$3 rev=$4 c n=0 diff="" anybad=0 want_rc
  oracle "$repo" "$trust" "$rev"
  MV=()
  mverify "$repo" "$trust" "$rev"
  for c in $(git -C "$repo" rev-list --topo-order --reverse "$rev"); do
    n=$((n+1))
    [ "${ORACLE[$c]}" = bad ] && anybad=1
    [ "${MV[$c]:-missing}" = "${ORACLE[$c]}" ] || diff="$diff ${c:0:12}(git ${ORACLE[$c]}, mcgit ${MV[$c]:-missing})"
  done
  want_rc=$anybad
  if [ -z "$diff" ] && [ "$MRC" = "$want_rc" ] && [ "$(wc -l <"$T/mv.out")" = "$n" ]; then
    ok "$label: $n verdicts and exit $MRC match git verify-commit"
  else
    bad "$label: verdicts differ from git:$diff (exit $MRC, want $want_rc; $(wc -l <"$T/mv.out") lines for $n commits)"
    sed 's/^/    /' "$T/mv.out" "$T/mv.err" | head -20
  fi
}

# pin LABEL SHA WANT [TEXT]: both git and mcgit say WANT for SHA, and mcgit's
# line for it contains TEXT (a fixed string: fingerprints hold '+' and '/').
pin() {
  local label=$1 c=$2 want=$3 re=${4:-}
  if [ "${ORACLE[$c]}" != "$want" ] || [ "${MV[$c]:-missing}" != "$want" ]; then
    bad "$label: want $want, git ${ORACLE[$c]}, mcgit ${MV[$c]:-missing}"
  elif [ -n "$re" ] && ! grep "^$want $c " "$T/mv.out" | grep -qF -- "$re"; then
    bad "$label: no '$re' in: $(grep " $c " "$T/mv.out")"
  else
    ok "$label: $want"
  fi
}

# splice_sig REPO PARENT KEYNAME NAMESPACE MSG: a commit on PARENT's tree whose
# gpgsig header holds `ssh-keygen -Y sign -n NAMESPACE` over the commit
# payload, written with git hash-object; prints its id.
splice_sig() {
  local repo=$1 unsigned
  unsigned=$(git -C "$repo" commit-tree "$2^{tree}" -p "$2" -m "$5")
  git -C "$repo" cat-file commit "$unsigned" >"$T/payload"
  ssh-keygen -q -Y sign -n "$4" -f "$T/keys/$3" <"$T/payload" >"$T/payload.sig"
  { sed -n '1,/^committer /p' "$T/payload"
    sed '1s/^/gpgsig /; 2,$s/^/ /' "$T/payload.sig"
    sed '1,/^committer /d' "$T/payload"
  } | git -C "$repo" hash-object -t commit -w --stdin
}

N=0
# change REPO KEYNAME MSG: a new file in notes/, committed (signed by KEYNAME or "-").
change() { N=$((N+1)); mkdir -p "$1/notes"; echo "$3" >"$1/notes/$N"; scommit "$1" "$2" "$3"; }

for kt in ed25519 ecdsa rsa; do
  A=alice-$kt B=bob-$kt C=carol-$kt
  mkkey "$A" "$kt"; mkkey "$B" "$kt"; mkkey "$C" "$kt"
  TR=$T/trust-$kt
  { echo "# trust root for $kt"
    signer_line alice@example.com "$A" 'namespaces="git"'
    signer_line carol@example.com "$C" 'valid-before="20250101Z"'
  } >"$TR"
  R=$T/repo-$kt
  "$MCGIT" init "$R" >/dev/null 2>&1
  sign_setup "$R" "$TR"
  ORACLE=()
  g() { git -C "$R" "$@"; }
  tip() { g rev-parse HEAD; }

  # Dated before carol's window closes (2025-01-01), so her commit inside it
  # is not older than its parent: committer times may not go back (beyond
  # MCG_CLOCK_SKEW), a rule of mcgit's that git does not have.
  export GIT_COMMITTER_DATE="2024-01-01T00:00:00Z"
  # main: trusted, signer added by a trusted commit, used, removed, refused.
  change "$R" "$A" "initial config";                        c0=$(tip)
  change "$R" "$A" "trusted change";                        c1=$(tip)
  signer_line bob@example.com "$B" >>"$R/.mcgit/allowed_signers"
  scommit "$R" "$A" "add bob as a signer";                  c2=$(tip)
  change "$R" "$B" "bob's first change";                    c3=$(tip)
  grep -v '^bob@' "$R/.mcgit/allowed_signers" >"$T/as" && cp "$T/as" "$R/.mcgit/allowed_signers"
  scommit "$R" "$A" "remove bob";                           c4=$(tip)
  change "$R" "$B" "bob after removal";                     c5=$(tip)

  # Branches off c1, one case each.
  g checkout -q -b untrusted "$c1"; change "$R" "$B" "bob before being added"; u1=$(tip)
  g checkout -q -b unsigned "$c1";  change "$R" - "unsigned tip";            n1=$(tip)
  g checkout -q -b middle "$c1"
  change "$R" "$A" "middle one"; m1=$(tip)
  change "$R" - "middle two (unsigned)"; m2=$(tip)
  change "$R" "$A" "middle three"; m3=$(tip)
  g checkout -q -b altered "$c1"; change "$R" "$A" "change to alter"; a0=$(tip)
  a1=$(g cat-file commit "$a0" | sed 's/^change to alter$/change ALTERED/' | g hash-object -t commit -w --stdin)
  g update-ref refs/heads/altered "$a1"
  s_git=$(splice_sig "$R" "$c1" "$A" git "spliced, namespace git")
  g update-ref refs/heads/ns-git "$s_git"
  s_file=$(splice_sig "$R" "$c1" "$A" file "spliced, namespace file")
  g update-ref refs/heads/ns-file "$s_file"
  g checkout -q -b expired "$c1"
  GIT_COMMITTER_DATE="2024-06-01T00:00:00Z" change "$R" "$C" "carol inside her window"; e1=$(tip)
  GIT_COMMITTER_DATE="2026-01-01T00:00:00Z" change "$R" "$C" "carol after valid-before"; e2=$(tip)
  g checkout -q -b selfadd "$c1"
  signer_line bob@example.com "$B" >>"$R/.mcgit/allowed_signers"
  scommit "$R" "$B" "bob adds himself"; sa=$(tip)
  g checkout -q -b side-good "$c1"; change "$R" "$A" "side, signed"; sg=$(tip)
  g checkout -q -b merge-good "$c1"; change "$R" "$A" "mainline before good merge"
  g -c user.signingkey="$T/keys/$A" merge -q -S --no-ff -m "merge signed side" side-good; mg=$(tip)
  g checkout -q -b side-bad "$c1"; change "$R" - "side, unsigned"; sb=$(tip)
  g checkout -q -b merge-bad "$c1"; change "$R" "$A" "mainline before bad merge"
  g -c user.signingkey="$T/keys/$A" merge -q -S --no-ff -m "merge unsigned side" side-bad; mb=$(tip)
  g checkout -q main

  for br in main untrusted unsigned middle altered ns-git ns-file expired selfadd merge-good merge-bad; do
    same_as_git "$kt $br" "$R" "$TR" "$br"
    case $br in
      main)
        pin "$kt trusted" "$c1" good "alice@example.com $(keyfp "$A")"
        pin "$kt signer added by a trusted commit" "$c3" good "bob@example.com $(keyfp "$B")"
        pin "$kt removing commit" "$c4" good
        pin "$kt signer removed" "$c5" bad "not in allowed signers" ;;
      untrusted) pin "$kt untrusted key" "$u1" bad "$(keyfp "$B") is not in allowed signers" ;;
      unsigned) pin "$kt unsigned" "$n1" bad "not signed" ;;
      middle)
        pin "$kt unsigned commit inside a signed range" "$m2" bad "not signed"
        pin "$kt signed tip after it" "$m3" good ;;
      altered) pin "$kt message altered after signing" "$a1" bad "does not verify" ;;
      ns-git) pin "$kt spliced signature, namespace git (control)" "$s_git" good ;;
      ns-file) pin "$kt signature for namespace file" "$s_file" bad "namespace" ;;
      expired)
        pin "$kt valid-before after the commit date" "$e1" good
        pin "$kt key past valid-before" "$e2" bad "not valid at" ;;
      selfadd) pin "$kt commit adding its own signer" "$sa" bad "not in allowed signers" ;;
      merge-good)
        pin "$kt signed side of a merge" "$sg" good
        pin "$kt signed merge" "$mg" good ;;
      merge-bad)
        pin "$kt unsigned commit brought in by a merge" "$sb" bad "not signed"
        expect_rc 1 "$kt merge of an unsigned side fails verify" -- \
          "$MCGIT" verify --repo "$R" --trust "$TR" --rev merge-bad ;;
    esac
  done
  unset -f g tip
done
export GIT_COMMITTER_DATE="2026-01-01T00:00:00Z"

# Validity windows at the edges, and namespaces= without git (ed25519).
# valid-before is inclusive; the committer's zone must not shift the instant.
mkkey dave ed25519
TW=$T/trust-windows
{ signer_line carol@example.com carol-ed25519 'valid-before="20250101Z"'
  signer_line dave@example.com dave 'namespaces="file,other"'
  signer_line erin@example.com alice-ed25519 'valid-after="20270101Z",namespaces="git"'
} >"$TW"
RW=$T/repo-windows
"$MCGIT" init "$RW" >/dev/null 2>&1
sign_setup "$RW" "$TW"
ORACLE=()
GIT_COMMITTER_DATE="2024-12-31T23:30:00+02:00" change "$RW" carol-ed25519 "before, east of UTC"; w1=$(git -C "$RW" rev-parse HEAD)
GIT_COMMITTER_DATE="2025-01-01T00:00:00Z" change "$RW" carol-ed25519 "exactly valid-before"; w2=$(git -C "$RW" rev-parse HEAD)
GIT_COMMITTER_DATE="2024-12-31T23:30:00-02:00" change "$RW" carol-ed25519 "after, west of UTC"; w3=$(git -C "$RW" rev-parse HEAD)
GIT_COMMITTER_DATE="2025-01-01T00:00:01Z" change "$RW" carol-ed25519 "one second late"; w4=$(git -C "$RW" rev-parse HEAD)
change "$RW" dave "dave may not sign git"; w5=$(git -C "$RW" rev-parse HEAD)
change "$RW" alice-ed25519 "erin's key before valid-after"; w6=$(git -C "$RW" rev-parse HEAD)
same_as_git "validity windows" "$RW" "$TW" main
pin "valid-before, 23:30+02:00 the day before" "$w1" good
pin "valid-before is inclusive" "$w2" good
pin "23:30-02:00 is past valid-before in UTC" "$w3" bad "not valid at 2025-01-01T01:30:00Z"
pin "one second past valid-before" "$w4" bad "not valid at"
pin "key limited to namespaces file,other" "$w5" bad "not allowed for namespace git"
pin "key before valid-after" "$w6" bad "not valid at"

# The rest uses the last round's repo and trust root (rsa).
"$MCGIT" verify --repo "$R" --trust "$TR" >"$T/def.out" 2>&1 || true
if [ "$(grep -c '^\(good\|bad\) ' "$T/def.out")" = "$(git -C "$R" rev-list --count main)" ]; then
  ok "no --rev: one line per commit of main"
else bad "no --rev: $(wc -l <"$T/def.out") lines"; fi

# --since: only commits not reachable from it.
"$MCGIT" verify --repo "$R" --trust "$TR" --rev middle --since "$m2" >"$T/since.out" 2>&1 && rc=0 || rc=$?
if [ "$rc" = 0 ] && [ "$(cat "$T/since.out")" = "$(grep "^good $m3 " "$T/since.out")" ] &&
   [ "$(wc -l <"$T/since.out")" = 1 ]; then
  ok "--since past the unsigned commit: only the tip, good, exit 0"
else bad "--since past the unsigned commit (exit $rc)"; sed 's/^/    /' "$T/since.out"; fi
"$MCGIT" verify --repo "$R" --trust "$TR" --since "$c1" >"$T/since2.out" 2>&1 && rc=0 || rc=$?
if [ "$rc" = 1 ] && [ "$(cut -d' ' -f1,2 "$T/since2.out" | tr '\n' ' ')" = "good $c2 good $c3 good $c4 bad $c5 " ]; then
  ok "--since c1 on main: c2..c5 in order, exit 1"
else bad "--since c1 on main (exit $rc)"; sed 's/^/    /' "$T/since2.out"; fi
"$MCGIT" verify --repo "$R" --trust "$TR" --rev "$c4" --since "$c2" >"$T/since3.out" 2>&1 && rc=0 || rc=$?
if [ "$rc" = 0 ] && [ "$(cut -d' ' -f1,2 "$T/since3.out" | tr '\n' ' ')" = "good $c3 good $c4 " ]; then
  ok "--since keeps signers added below it (bob, added in c2, signs c3)"
else bad "--since below an added signer (exit $rc)"; sed 's/^/    /' "$T/since3.out"; fi
expect_rc 1 "--since an unknown revision" -- "$MCGIT" verify --repo "$R" --trust "$TR" --since no-such-rev
expect_grep "unknown revision" "$T/err" "unknown --since is named"
expect_rc 1 "--rev an unknown revision" -- "$MCGIT" verify --repo "$R" --trust "$TR" --rev no-such-rev

# -o json: one array, parents first, fields by status.
"$MCGIT" verify --repo "$R" --trust "$TR" --rev merge-bad -o json >"$T/v.json" 2>/dev/null && rc=0 || rc=$?
"$MCGIT" verify --repo "$R" --trust "$TR" --rev merge-bad >"$T/v.txt" 2>/dev/null || true
if [ "$rc" = 1 ] && jq -e '
     type == "array" and length > 0 and all(.[];
       (.commit | test("^[0-9a-f]{40}$")) and
       (if .status == "good" then (keys == ["commit","fingerprint","principal","status"]) and
                                  (.fingerprint | startswith("SHA256:"))
        elif .status == "bad" then (keys - ["fingerprint"] == ["commit","reason","status"])
        else false end))' "$T/v.json" >/dev/null &&
   [ "$(jq -r '.[] | "\(.status) \(.commit)"' "$T/v.json")" = "$(cut -d' ' -f1,2 "$T/v.txt")" ]; then
  ok "-o json: array of {commit,status,principal,fingerprint|reason}, same order as text, exit 1"
else bad "-o json shape (exit $rc)"; head -30 "$T/v.json" | sed 's/^/    /'; fi
jq -e --arg sb "$sb" '[.[] | select(.commit == $sb)][0] | .status == "bad" and (.reason | test("not signed"))' \
  "$T/v.json" >/dev/null && ok "-o json: the unsigned side commit is bad with its reason" ||
  bad "-o json: unsigned side commit"

# Usage and the trust root.
expect_rc 2 "verify without --trust is a usage error" -- "$MCGIT" verify --repo "$R"
expect_rc 2 "verify -o yaml is a usage error" -- "$MCGIT" verify --repo "$R" --trust "$TR" -o yaml
expect_rc 1 "verify with a missing trust file" -- "$MCGIT" verify --repo "$R" --trust "$T/nope"
echo "bad line" >"$T/badtrust"
expect_rc 1 "verify with a malformed trust file" -- "$MCGIT" verify --repo "$R" --trust "$T/badtrust"
expect_grep "badtrust:1:" "$T/err" "malformed trust file: file:line named"
# The repo's own allowed_signers is never a trust root: with an empty trust
# file nothing is good, not even commits signed by keys listed in the repo.
: >"$T/empty"
"$MCGIT" verify --repo "$R" --trust "$T/empty" --rev "$c3" >"$T/e.out" 2>&1 && rc=0 || rc=$?
if [ "$rc" = 1 ] && ! grep -q '^good' "$T/e.out"; then ok "empty trust root: every commit bad"
else bad "empty trust root (exit $rc)"; sed 's/^/    /' "$T/e.out"; fi

finish
