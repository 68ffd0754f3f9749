#!/usr/bin/env bash
# test_no_change.sh — every command that changes nothing says so in one line
# and exits 0, writing nothing: render of a source already rendered, fetch
# with nothing new, bundle import of a bundle already imported, node label /
# bind / unbind that leave the node as it is, hook install over the same
# hooks. (rollback to the current configs: test_render_repo.sh; approve
# twice: test_approvals.sh; pool pause/resume: test_pool_sync.sh.)
. "$(dirname "$0")/lib.sh"

R=$T/cfg
fixture_signed_repo "$R"
fixture_v1 "$R"
# one_line FILE DESC: FILE holds exactly one line
one_line() { [ "$(wc -l <"$1")" = 1 ] && ok "$2" || { bad "$2: $(wc -l <"$1") lines"; sed 's/^/    /' "$1"; }; }

# ------------------------------------------------------------ render
expect_rc 0 "render --repo" -- "$MCGIT" render --repo "$R" --trust "$T/trust"
RB=$(git -C "$R" rev-parse rendered)
expect_rc 0 "render --repo again" -- "$MCGIT" render --repo "$R" --trust "$T/trust"
expect_grep "^source [0-9a-f]{12} is already rendered as [0-9a-f]{12}; nothing to do$" "$T/err" "render says it has nothing to do"
one_line "$T/err" "(one line)"
[ ! -s "$T/out" ] && [ "$(git -C "$R" rev-parse rendered)" = "$RB" ] && ok "(nothing printed, nothing written)" || bad "render wrote or printed"

# ------------------------------------------------------------ fetch
git clone -q --bare "$R" "$T/mirror.git"
git -C "$T/mirror.git" remote set-url origin "$R" 2>/dev/null || git -C "$T/mirror.git" remote add origin "$R"
expect_rc 0 "fetch with nothing new" -- "$MCGIT" fetch --repo "$T/mirror.git" --trust "$T/trust"
expect_grep "^main already up to date at $(git -C "$R" rev-parse main); nothing fetched$" "$T/out" "fetch says it is up to date"
one_line "$T/out" "(one line)"
write_mc "$R" 10-worker worker /etc/demo.conf v2
scommit "$R" op "v2"
expect_rc 0 "fetch of a new commit" -- "$MCGIT" fetch --repo "$T/mirror.git" --trust "$T/trust"
[ "$(cat "$T/out")" = "$(git -C "$R" rev-parse main)" ] && ok "(prints the new tip)" || bad "fetch printed $(cat "$T/out")"

# ------------------------------------------------------------ bundle import
git clone -q --bare "$R" "$T/site.git"
git -C "$T/site.git" remote remove origin
expect_rc 0 "bundle create" -- "$MCGIT" bundle create --repo "$R" "$T/all.bundle"
expect_rc 0 "bundle import of what the site holds already" -- "$MCGIT" bundle import --repo "$T/site.git" "$T/all.bundle" --trust "$T/trust"
expect_grep "already up to date; nothing imported$" "$T/err" "bundle import says nothing was imported"

# ------------------------------------------------------------ node
CL=local:$T/cl
"$MCGIT" node add --cluster "$CL" w0 --labels node-role.kubernetes.io/worker=,zone=a >/dev/null
before=$(cat "$T/cl/nodes/w0.json")
expect_rc 0 "node label to the labels it has" -- "$MCGIT" node label --cluster "$CL" w0 zone=a
expect_grep "^node w0 already has these labels; nothing changed$" "$T/out" "label says nothing changed"
one_line "$T/out" "(one line)"
expect_rc 0 "node label removing a label it does not have" -- "$MCGIT" node label --cluster "$CL" w0 nope-
expect_grep "nothing changed$" "$T/out" "(says so too)"
[ "$(cat "$T/cl/nodes/w0.json")" = "$before" ] && ok "(node object untouched)" || bad "node rewritten"
expect_rc 0 "node label that changes a label" -- "$MCGIT" node label --cluster "$CL" w0 zone=b
[ ! -s "$T/out" ] && ok "(a real change prints no 'nothing changed')" || bad "label printed $(cat "$T/out")"
expect_rc 2 "a bad label edit is still refused (usage)" -- "$MCGIT" node label --cluster "$CL" w0 'bad key=1'
ID=0123456789abcdef0123456789abcdef
expect_rc 0 "node unbind of an unbound node" -- "$MCGIT" node unbind --cluster "$CL" w0
expect_grep "^node w0 is not bound to a machine-id; nothing changed$" "$T/out" "unbind says nothing changed"
expect_rc 0 "node bind" -- "$MCGIT" node bind --cluster "$CL" w0 --machine-id $ID
expect_grep "^node w0 bound to machine-id $ID$" "$T/out" "(bound)"
expect_rc 0 "node bind again to the same machine-id" -- "$MCGIT" node bind --cluster "$CL" w0 --machine-id $ID
expect_grep "^node w0 is already bound to machine-id $ID; nothing changed$" "$T/out" "bind says nothing changed"

# ------------------------------------------------------------ hook install
git init -q --bare "$T/server.git"
expect_rc 0 "hook install" -- "$MCGIT" hook install --repo "$T/server.git" --trust "$T/trust"
expect_grep "^installed .*/hooks/pre-receive$" "$T/err" "(lists what it installed)"
m=$(stat -c %Y.%i "$T/server.git/hooks/pre-receive")
expect_rc 0 "hook install again, same settings" -- "$MCGIT" hook install --repo "$T/server.git" --trust "$T/trust"
expect_grep "already installed with these settings; nothing changed$" "$T/out" "hook install says nothing changed"
one_line "$T/out" "(one line)"
[ ! -s "$T/err" ] && [ "$(stat -c %Y.%i "$T/server.git/hooks/pre-receive")" = "$m" ] && ok "(no hook rewritten)" || bad "hooks rewritten: $(cat "$T/err")"
cp "$T/trust" "$T/trust2"
expect_rc 0 "hook install with another trust file" -- "$MCGIT" hook install --repo "$T/server.git" --trust "$T/trust2"
if grep -q "nothing changed" "$T/out"; then bad "a settings change reported as none"; else ok "(a settings change is a change)"; fi
[ "$(git -C "$T/server.git" config mcgit.trust)" = "$T/trust2" ] && ok "(recorded)" || bad "mcgit.trust not updated"
echo "# edited" >>"$T/server.git/hooks/pre-receive"
expect_rc 0 "hook install over an edited hook" -- "$MCGIT" hook install --repo "$T/server.git" --trust "$T/trust2"
expect_grep "^installed .*/hooks/pre-receive$" "$T/err" "(the edited hook is put back)"
finish
