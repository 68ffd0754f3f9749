#!/usr/bin/env bash
# test_policy_paths.sh — .mcgit/policy.yaml paths are read as git reads a
# pathspec. Alice alone tries to change pools/master.yaml under a rule that
# names it as ./pools/master.yaml, pools//master.yaml, pools/./master.yaml
# or pools/../pools/master.yaml: each guards the file (the push is refused).
# Pathspec magic (:(glob)...) and a path leaving the tree are refused at
# validate and at push; a pattern that matches no file is a warning.
. "$(dirname "$0")/lib.sh"

mkkey alice ed25519
mkkey bob ed25519
TR=$T/trust
{ signer_line alice@example.com alice; signer_line bob@example.com bob; } >"$TR"
n=0
# server_with_policy PATTERN: a fresh server and clone whose first commit sets
# a two-signer rule for PATTERN; prints nothing, sets W
server_with_policy() {
  n=$((n + 1))
  S=$T/srv$n.git W=$T/w$n
  fixture_server "$S" "$TR"
  "$MCGIT" init "$W" >/dev/null
  sign_setup "$W" "$TR"
  git -C "$W" remote add origin "$S"
  mkdir -p "$W/.mcgit"
  printf 'approvals:\n- paths: ["%s"]\n  required: 2\n' "$1" >"$W/.mcgit/policy.yaml"
}
for pat in ./pools/master.yaml pools//master.yaml pools/./master.yaml pools/../pools/master.yaml; do
  server_with_policy "$pat"
  expect_rc 0 "validate accepts '$pat'" -- "$MCGIT" validate "$W"
  scommit "$W" alice "policy $pat"
  expect_rc 0 "the policy '$pat' is pushed" -- git -C "$W" push -q origin main
  echo "# alice alone" >>"$W/pools/master.yaml"; scommit "$W" alice "master change"
  expect_rc 1 "'$pat' guards pools/master.yaml: alice alone is refused" -- git -C "$W" push origin main
  expect_grep "approvals rule 1 \(pools/master.yaml\) needs 2 distinct trusted signers" "$T/err" "the rule is named ('$pat')"
done
for pat in ':(glob)pools/master.yaml' ':!pools/worker.yaml' '../pools/master.yaml' 'pools/../../x'; do
  server_with_policy "$pat"
  expect_rc 1 "validate refuses '$pat'" -- "$MCGIT" validate "$W"
  expect_grep "\.mcgit/policy.yaml:2: approvals\[0\]\.paths\[0\] '.*' (uses pathspec magic|leaves the repository)" "$T/err" \
    "validate names the file, line and why ('$pat')"
  scommit "$W" alice "policy $pat"
  expect_rc 1 "push refuses the policy '$pat'" -- git -C "$W" push origin main
  expect_grep "refusing refs/heads/main: \.mcgit/policy.yaml:2: " "$T/err" "the pusher sees why ('$pat')"
done
server_with_policy "pools/mastr.yaml"
expect_rc 0 "validate accepts a pattern matching nothing" -- "$MCGIT" validate "$W"
expect_grep "warning: \.mcgit/policy.yaml: approvals\[0\]\.paths: 'pools/mastr.yaml' matches no file" "$T/err" "with a warning"
scommit "$W" alice "typo"
expect_rc 0 "push accepts it" -- git -C "$W" push origin main
expect_grep "warning: \.mcgit/policy.yaml: approvals\[0\]\.paths: 'pools/mastr.yaml' matches no file" "$T/err" "and the pusher sees the warning"

finish
