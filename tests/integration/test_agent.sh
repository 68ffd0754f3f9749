#!/usr/bin/env bash
# `mcgit agent` from the command line against a local:DIR cluster: --once
# exit status and its one output line, drift (content, mode, owner,
# missing) that clears itself once put back, --force, directories mcgit
# made removed when no longer needed, a config whose bytes do not match its
# name refused, a symlink escape refused with nothing written outside the
# root, one agent per root, and the loop stopping cleanly on SIGTERM.
. "$(dirname "$0")/lib.sh"
need python3

CL=$T/cl
"$MCGIT" node add --cluster "local:$CL" n1 >/dev/null
ROOT=$CL/roots/n1
mkdir -p "$ROOT/etc" "$T/outside"
printf 'root:x:0:0::/root:/bin/sh\ncore:x:1000:1000::/home/core:/bin/sh\n' >"$ROOT/etc/passwd"
printf 'root:x:0:\nwheel:x:10:core\ncore:x:1000:\n' >"$ROOT/etc/group"

node_cfg_helpers "$CL"
agent() { "$MCGIT" agent --node n1 --cluster "local:$CL" --once -q "$@"; }

# ------------------------------------------------------------ before any config
# a node the cluster does not have is named as such (not "No such file or directory")
expect_rc 1 "an agent for a node the cluster does not have" -- "$MCGIT" agent --node nope --cluster "local:$CL" --once
expect_grep "^mcgit agent: cluster local:$CL has no node 'nope' \(add it: mcgit node add --cluster local:$CL nope\)$" "$T/err" \
  "says the node is unknown, and how to add it"
grep -q "No such file" "$T/err" && bad "unknown node: 'No such file' in the error" || ok "and no 'No such file or directory'"
# the loop's first line, with no desiredConfig yet, does not say Done
"$MCGIT" agent --node n1 --cluster "local:$CL" --interval 1 -v >"$T/first.log" 2>&1 &
fpid=$!
# (at its first start the agent makes its node key, and says so first)
for _ in $(seq 50); do grep -qv 'node key created' "$T/first.log" && break; sleep 0.1; done
kill "$fpid" 2>/dev/null; wait "$fpid" 2>/dev/null || true
head -1 "$T/first.log" | grep -qx 'mcgit agent: node=n1: node key created: node.key' &&
  ok "the first start makes the node key, and says so" || bad "no node key at the first start: $(head -1 "$T/first.log")"
first=$(grep -v 'node key created' "$T/first.log" | head -1)
[ "$first" = "mcgit agent: node=n1: no config on this node yet: waiting for its desiredConfig" ] &&
  ok "the loop's first line, before any config: waiting, not Done" || bad "first line: '$first'"
IGN='"ignition":{"version":"3.4.0"}'

# ------------------------------------------------------------ apply
C1=$(publish '{'"$IGN"',"storage":{"files":[
  {"path":"/etc/app/app.conf","mode":416,"user":{"name":"core"},"group":{"name":"wheel"},"contents":{"source":"data:,setting%3D1%0A"}},
  {"path":"/opt/tool/bin/run","mode":493,"contents":{"source":"data:;base64,IyEvYmluL3NoCg=="}}],
  "directories":[{"path":"/srv/data","mode":448}]},
  "systemd":{"units":[{"name":"app.service","enabled":true,"contents":"[Service]\nExecStart=/opt/tool/bin/run\n[Install]\nWantedBy=multi-user.target\n"}]}}')
desire "$C1"
expect_rc 0 "--once applies the desired config: exit 0" -- agent
expect_grep "^n1 Done $C1\$" "$T/out" "--once prints NODE STATE CONFIG"
[ "$(field state)" = Done ] && [ "$(field currentConfig)" = "$C1" ] && ok "node reports Done at $C1" || bad "node: $(field state) $(field currentConfig)"
[ "$(cat "$ROOT/etc/app/app.conf")" = "setting=1" ] && ok "file written" || bad "file contents"
[ "$(stat -c '%a %u:%g' "$ROOT/etc/app/app.conf")" = "640 1000:10" ] && ok "mode and owner set" || bad "mode/owner $(stat -c '%a %u:%g' "$ROOT/etc/app/app.conf")"
[ "$(readlink "$ROOT/etc/systemd/system/multi-user.target.wants/app.service")" = /etc/systemd/system/app.service ] && ok "unit enabled" || bad "enablement link"

# ------------------------------------------------------------ drift
echo "setting=2" >"$ROOT/etc/app/app.conf"
chmod 0700 "$ROOT/opt/tool/bin/run"
expect_rc 1 "drift: --once exits 1" -- agent
expect_grep "^n1 Degraded $C1 drift: " "$T/out" "--once prints the Degraded line"
expect_grep "/etc/app/app.conf: content differs" "$T/out" "reason names the changed content"
expect_grep "/opt/tool/bin/run: mode file 0700, want file 0755" "$T/out" "reason names the changed mode"
[ "$(field state)" = Degraded ] && ok "node reports Degraded" || bad "node state $(field state)"
[ "$(cat "$ROOT/etc/app/app.conf")" = "setting=2" ] && ok "drifted file not overwritten" || bad "drifted file overwritten"
if [ "$(id -u)" = 0 ]; then
  chown 0:0 "$ROOT/etc/app/app.conf"
  expect_rc 1 "owner drift: exit 1" -- agent
  expect_grep "/etc/app/app.conf: owner 0:0, want 1000:10 and content differs" "$T/out" "reason names the owner"
  chown 1000:10 "$ROOT/etc/app/app.conf"
fi
printf 'setting=1\n' >"$ROOT/etc/app/app.conf"; chmod 0755 "$ROOT/opt/tool/bin/run"
rm "$ROOT/etc/systemd/system/multi-user.target.wants/app.service"
expect_rc 1 "a removed enablement link is drift" -- agent
expect_grep "multi-user.target.wants/app.service: missing" "$T/out" "reason names the missing link"
ln -s /etc/systemd/system/app.service "$ROOT/etc/systemd/system/multi-user.target.wants/app.service"
expect_rc 0 "put back by hand: Done again by itself" -- agent
[ "$(field state)" = Done ] && [ -z "$(field reason)" ] && ok "node Done, reason cleared" || bad "node $(field state) '$(field reason)'"
echo junk >"$ROOT/etc/app/app.conf"; chmod 0600 "$ROOT/opt/tool/bin/run"
expect_rc 1 "drift again" -- agent
expect_rc 0 "--force re-applies the config" -- agent --force
[ "$(cat "$ROOT/etc/app/app.conf")" = "setting=1" ] && [ "$(stat -c %a "$ROOT/opt/tool/bin/run")" = 755 ] && ok "--force restored content and mode" || bad "--force"
expect_rc 0 "and stays Done" -- agent

# ------------------------------------------------------------ directories
touch "$ROOT/srv/keep-me"
C2=$(publish '{'"$IGN"',"storage":{"files":[{"path":"/etc/app/app.conf","contents":{"source":"data:,v2"}}]}}')
desire "$C2"
expect_rc 0 "update: files, a directory and a unit leave" -- agent
[ ! -e "$ROOT/opt" ] && ok "directories mcgit made for /opt/tool/bin/run removed" || bad "/opt left: $(find "$ROOT/opt")"
[ ! -e "$ROOT/etc/systemd/system/multi-user.target.wants" ] && [ ! -e "$ROOT/etc/systemd/system/app.service" ] && ok "unit and its .wants directory removed" || bad "unit leftovers"
[ ! -e "$ROOT/srv/data" ] && [ -e "$ROOT/srv/keep-me" ] && ok "empty config directory removed, one holding other files left" || bad "srv: $(ls -A "$ROOT/srv" 2>&1)"
[ -d "$ROOT/etc" ] && [ -d "$ROOT/etc/app" ] && ok "directories still needed stay" || bad "etc/app"

# ------------------------------------------------------------ refusals
# the same name, other bytes: altered on its way to the node
C3=$(publish '{'"$IGN"',"storage":{"files":[{"path":"/etc/evil","contents":{"source":"data:,x"}}]}}')
python3 - "$CL/configs/$C3.json" <<'EOF'
import sys; p = sys.argv[1]; b = open(p).read().replace("data:,x", "data:,y"); open(p, "w").write(b)
EOF
desire "$C3"
expect_rc 1 "a config not matching its hash is refused" -- agent
expect_grep "rendered config $C3 does not match its hash" "$T/out" "reason says so"
[ ! -e "$ROOT/etc/evil" ] && ok "nothing written" || bad "/etc/evil written"
[ "$(field currentConfig)" = "$C2" ] && ok "previous config still current" || bad "current $(field currentConfig)"

ln -s "$T/outside" "$ROOT/var/escape"
C4=$(publish '{'"$IGN"',"storage":{"files":[{"path":"/etc/fine","contents":{"source":"data:,x"}},{"path":"/var/escape/x","contents":{"source":"data:,x"}}]}}')
desire "$C4"
expect_rc 1 "a symlink on the way is refused" -- agent
expect_grep "/var/escape: is a symbolic link" "$T/out" "reason names the symlink"
[ -z "$(ls -A "$T/outside")" ] && [ ! -e "$ROOT/etc/fine" ] && ok "nothing written, inside or outside" || bad "written"
rm "$ROOT/var/escape"

# ------------------------------------------------------------ one agent per root, the loop
desire "$C2"
"$MCGIT" agent --node n1 --cluster "local:$CL" --interval 1 -q & loop=$!
for _ in $(seq 1 50); do [ "$(field state)" = Done ] && break; sleep 0.1; done
sleep 0.3
expect_rc 1 "a second agent on the same root is refused" -- agent
expect_grep "another agent \\(pid $loop\\) is running on this root" "$T/err" "and says why, naming the running agent's pid"
expect_grep "kill $loop\\)" "$T/err" "and what to do"
kill -TERM "$loop"; st=0; wait "$loop" || st=$?
[ "$st" = 0 ] && ok "the loop stops cleanly on SIGTERM" || bad "loop exit $st"
expect_rc 0 "after it, --once runs" -- agent
# a node name the cluster would refuse is refused before any root is chosen or written
expect_rc 1 "agent: invalid node name refused" -- "$MCGIT" agent --node Bad_Name --cluster "local:$T/fresh" --once
expect_grep "invalid node name 'Bad_Name'" "$T/err" "with the reason"
[ ! -e "$T/fresh" ] && ok "and nothing was created" || bad "$T/fresh was created"
finish
