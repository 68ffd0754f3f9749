#!/usr/bin/env bash
# The agent survives kill -9 at any moment: a 1,500-file config is applied
# (and then updated: files changed, added, removed, a pre-existing file taken
# over) while the agent is killed at random points, several times in a row;
# a restarted `mcgit agent --once` must end with the node Done and the root
# exactly equal, file by file (type, mode, sha256), to an uninterrupted run,
# with no temporary files left anywhere in the root; and going back to the
# first config afterwards removes exactly the directories the update made.
. "$(dirname "$0")/lib.sh"
need python3

CL=$T/cl
ITER=${AGENT_CRASH_ITER:-20}
"$MCGIT" node add --cluster "local:$CL" n1 >/dev/null 2>&1 || {
  mkdir -p "$CL/nodes" "$CL/configs" "$CL/roots/n1"
  cat >"$CL/nodes/n1.json" <<'EOF'
{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","annotations":{},"labels":{},
 "creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"unschedulable":false},
 "status":{"conditions":[{"type":"Ready","status":"True"}]}}
EOF
}
ROOT=$CL/roots/n1

# gen.py publish VARIANT: write rendered config VARIANT (v1 or v2) into the
# cluster store and print its name. gen.py desire NAME: set desiredConfig.
cat >"$T/gen.py" <<'EOF'
import hashlib, json, sys, urllib.parse
cl = sys.argv[1]
def cfg(v):
    files = []
    n = 1500
    for i in range(n):
        if v == "v2" and i % 15 == 0:
            continue                      # 100 files leave the config
        body = ("%s line of file %d\n" % ("new" if (v == "v2" and i % 2) else "old", i)) * (1 + i % 7)
        files.append({"path": "/etc/mcg/d%02d/f%04d.conf" % (i % 30, i),
                      "mode": [0o644, 0o600, 0o640][i % 3],
                      "contents": {"source": "data:," + urllib.parse.quote(body)}})
    if v == "v2":
        for i in range(100):               # 100 new files in new directories
            files.append({"path": "/etc/mcg/new%d/g%04d" % (i % 5, i),
                          "contents": {"source": "data:,added%20" + str(i)}})
        files.append({"path": "/etc/pre.conf", "contents": {"source": "data:,managed"}})
    units = [{"name": "u%d.service" % i, "enabled": True,
              "contents": "[Service]\nExecStart=/bin/true %s\n[Install]\nWantedBy=multi-user.target\n" % v}
             for i in range(5 if v == "v1" else 7)]
    units.append({"name": "m.service", "mask": True})
    keys = ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI %s" % v]
    return {"ignition": {"version": "3.4.0"},
            "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": keys}]},
            "storage": {"files": files, "directories": [{"path": "/etc/mcg", "mode": 0o750}]},
            "systemd": {"units": units}}
if sys.argv[2] == "publish":
    b = (json.dumps({"config": cfg(sys.argv[3])}, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode()
    name = "rendered-worker-" + hashlib.sha256(b).hexdigest()[:32]
    open("%s/configs/%s.json" % (cl, name), "wb").write(b)
    print(name)
else:
    p = "%s/nodes/n1.json" % cl
    n = json.load(open(p))
    n["metadata"].setdefault("annotations", {})["machineconfiguration.mcgit.io/desiredConfig"] = sys.argv[3]
    open(p + ".tmp", "w").write(json.dumps(n, indent=2))
    import os; os.rename(p + ".tmp", p)
EOF
V1=$(python3 "$T/gen.py" "$CL" publish v1)
V2=$(python3 "$T/gen.py" "$CL" publish v2)
desire() { python3 "$T/gen.py" "$CL" desire "$1"; }

# A pristine node: passwd, group, one file that predates mcgit.
fresh_root() {
  rm -rf "$ROOT"; mkdir -p "$ROOT/etc"
  printf 'root:x:0:0::/root:/bin/sh\ncore:x:1000:1000::/home/core:/bin/sh\n' >"$ROOT/etc/passwd"
  printf 'root:x:0:\ncore:x:1000:\n' >"$ROOT/etc/group"
  printf 'from the image\n' >"$ROOT/etc/pre.conf"; chmod 0604 "$ROOT/etc/pre.conf"
}
# Every path under the root but the agent's state: type, mode, owner, sha256.
manifest() {
  (cd "$ROOT" && find . -path ./var/lib/mcgit -prune -o -printf '%y %m %U:%G %p -> %l\n' | sort) >"$1"
  (cd "$ROOT" && find . -path ./var/lib/mcgit -prune -o -type f -print0 | sort -z | xargs -0 sha256sum) >>"$1"
}
AGENT=("$MCGIT" agent --node n1 --cluster "local:$CL" --once -q)
agent() { "${AGENT[@]}" "$@"; }
node_field() { python3 -c "import json,sys;print(json.load(open('$CL/nodes/n1.json'))['metadata']['annotations'].get('machineconfiguration.mcgit.io/$1',''))"; }

# ----------------------------------------------------------- reference run
fresh_root; desire "$V1"
expect_rc 0 "clean apply of v1 (1,500 files)" -- agent
manifest "$T/want.v1"
desire "$V2"
start=$(date +%s%N)
expect_rc 0 "clean update v1 -> v2" -- agent
ms=$(( ($(date +%s%N) - start) / 1000000 ))
manifest "$T/want.v2"
echo "# uninterrupted update took ${ms} ms"
expect_grep 'managed' "$ROOT/etc/pre.conf" "pre-existing file taken over"
desire "$V1"
expect_rc 0 "update back to v1" -- agent
manifest "$T/back.v1"
# directories included: the ones v2 made (/etc/mcg/new*) are gone again
if cmp -s "$T/want.v1" "$T/back.v1"; then ok "v2 -> v1 restores the v1 tree exactly (backup restored, v2's directories removed)"; else bad "v2 -> v1 tree differs"; diff "$T/want.v1" "$T/back.v1" | head -5 || true; fi
[ "$(wc -l <"$T/want.v2")" -gt 3000 ] && ok "manifest covers the tree" || bad "manifest too small"

# ------------------------------------------------------------ crash runs
# Kill points spread over the update (and sometimes the first apply), with a
# second kill during the restart every third iteration.
span=$(( ms * 3 / 2 + 20 ))
# killat PID: kill -9 it; count it when it was still running.
killat() { kill -9 "$1" 2>/dev/null || true; local st=0; wait "$1" 2>/dev/null || st=$?; [ "$st" = 137 ] && crashes=$((crashes+1)); return 0; }
RANDOM=42
crashes=0
for i in $(seq 1 "$ITER"); do
  fresh_root
  desire "$V1"
  if [ $((i % 4)) = 0 ]; then            # crash during the first apply too
    "${AGENT[@]}" >/dev/null 2>&1 & pid=$!
    sleep "0.$(printf '%03d' $((RANDOM % span % 1000)))"; killat $pid
  fi
  agent >/dev/null 2>&1 || { bad "iteration $i: v1 did not apply"; continue; }
  desire "$V2"
  "${AGENT[@]}" >/dev/null 2>&1 & pid=$!
  sleep "0.$(printf '%03d' $((RANDOM % span % 1000)))"
  killat $pid
  if [ $((i % 3)) = 0 ]; then            # and again while it recovers
    "${AGENT[@]}" >/dev/null 2>&1 & pid=$!
    sleep "0.0$(printf '%02d' $((RANDOM % 60)))"; killat $pid
  fi
  out=$(agent 2>&1) || { bad "iteration $i: restart did not finish: $out"; continue; }
  manifest "$T/got"
  temps=$(find "$ROOT" -name '.mcgit-*.tmp' -o -name '.*.tmp' -o -name '.tmp-*' | wc -l)
  if cmp -s "$T/want.v2" "$T/got" && [ "$temps" = 0 ] && [ "$(node_field state)" = Done ] &&
     [ "$(node_field currentConfig)" = "$V2" ] && [ ! -e "$ROOT/var/lib/mcgit/journal.json" ]; then
    ok "iteration $i: exact v2 tree, Done, no temp files"
  else
    bad "iteration $i: state=$(node_field state) temps=$temps"; diff "$T/want.v2" "$T/got" | head -5 || true
  fi
  if [ $((i % 2)) = 0 ]; then            # the record of directories v2 made survived the kills
    desire "$V1"
    agent >/dev/null 2>&1 || { bad "iteration $i: back to v1 failed"; continue; }
    manifest "$T/got"
    if cmp -s "$T/want.v1" "$T/got"; then ok "iteration $i: back to v1 exactly (v2's directories removed)"
    else bad "iteration $i: back to v1 differs"; diff "$T/want.v1" "$T/got" | head -5 || true; fi
  fi
done
echo "# $crashes kills landed while an agent was running"
[ "$crashes" -ge $((ITER / 2)) ] && ok "most kills hit a running agent ($crashes)" || bad "only $crashes kills hit a running agent"
finish
