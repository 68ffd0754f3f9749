#!/usr/bin/env bash
# test_fresh_receiver.sh — the newest commit must be valid now. Carol's line
# says valid-before="20250101Z"; an attacker holding her old key writes a
# whole new history dated 2024 and hands it to receivers that hold no
# verified history yet: a fresh server (git push through the hooks), a fresh
# mirror (mcgit fetch) and a fresh site (bundle import). Each refuses it: the
# newest commit is checked against the receiver's clock. A migration of old
# history adds one fresh signed commit (mcgit heartbeat) and is accepted.
. "$(dirname "$0")/lib.sh"

mkkey alice ed25519
mkkey carol ed25519
TR=$T/trust
{ signer_line alice@example.com alice; signer_line carol@example.com carol 'valid-before="20250101Z"'; } >"$TR"

# the attacker's history, dated 2024, all signed by carol's old key
A=$T/attacker
"$MCGIT" init "$A" >/dev/null
sign_setup "$A" "$TR"
export GIT_AUTHOR_DATE=2024-06-01T00:00:00Z GIT_COMMITTER_DATE=2024-06-01T00:00:00Z
write_mc "$A" 10-worker worker /etc/motd evil
scommit "$A" carol "backdated history"
expect_rc 0 "each commit verifies by its own date (carol was valid in 2024)" -- "$MCGIT" verify --repo "$A" --trust "$TR"

# a fresh server
fixture_server "$T/srv.git" "$TR"
expect_rc 1 "push to a fresh server: refused" -- git -C "$A" push "$T/srv.git" main
expect_grep "refusing refs/heads/main: commit [0-9a-f]{12}: on arrival: key SHA256:[^ ]+ is not valid at" "$T/err" \
  "the pusher is told the newest commit's key is not valid now"
[ -z "$(git -C "$T/srv.git" for-each-ref)" ] && ok "the server has no branch" || bad "server refs moved"

# a fresh mirror, by mcgit fetch
git init -q --bare "$T/up.git"
git -C "$A" push -q "$T/up.git" main
git init -q --bare "$T/mirror"
git -C "$T/mirror" remote add origin "$T/up.git"
expect_rc 1 "mcgit fetch into a fresh mirror: refused" -- "$MCGIT" fetch --repo "$T/mirror" --trust "$TR"
expect_grep "not valid at" "$T/err" "fetch: the reason"
git -C "$T/mirror" rev-parse -q --verify refs/heads/main >/dev/null && bad "mirror main moved" || ok "fetch: nothing moved"

# a fresh site, by bundle import
"$MCGIT" bundle create --repo "$A" "$T/a.bundle" 2>/dev/null
git init -q --bare "$T/site"
expect_rc 1 "bundle import into a fresh site: refused" -- "$MCGIT" bundle import --repo "$T/site" "$T/a.bundle" --trust "$TR" -q
expect_grep "not valid at" "$T/err" "bundle: the reason"
[ -z "$(git -C "$T/site" for-each-ref)" ] && ok "bundle: no ref moved" || bad "site refs moved"

# a migration: the old history with one fresh signed commit on top
unset GIT_AUTHOR_DATE GIT_COMMITTER_DATE
expect_rc 0 "mcgit heartbeat by alice on top of the old history" -- "$MCGIT" heartbeat --repo "$A" --key "$T/keys/alice"
expect_rc 0 "push of the migrated history to the fresh server: accepted" -- git -C "$A" push "$T/srv.git" main
git -C "$A" push -q "$T/up.git" main
expect_rc 0 "mcgit fetch of the migrated history: accepted" -- "$MCGIT" fetch --repo "$T/mirror" --trust "$TR"
"$MCGIT" bundle create --repo "$A" "$T/b.bundle" 2>/dev/null
expect_rc 0 "bundle import of the migrated history: accepted" -- "$MCGIT" bundle import --repo "$T/site" "$T/b.bundle" --trust "$TR" -q

finish
