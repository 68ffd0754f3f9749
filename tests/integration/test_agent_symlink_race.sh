#!/usr/bin/env bash
# Symlinks planted in the node root WHILE the agent applies. A planter
# process swaps, as fast as it can, every directory the configs use (and the
# agent's own state directory, and the unit directory) for a symlink out of
# the root, turns files into symlinks to files outside, and puts things
# back; meanwhile the agent applies two configs in turn (--force, so every
# pass rewrites every file). Whatever the interleaving, nothing outside the
# root may be created, changed or removed, the agent may only succeed or
# refuse (exit 0 or 1, never a crash or a sanitizer report), and once the
# planter stops, one more apply puts the node right.
#
# MCGIT_RACE_SECONDS (default 10) sets how long the race runs.
. "$(dirname "$0")/lib.sh"
need python3

SECS=${MCGIT_RACE_SECONDS:-10}
CL=$T/cl
"$MCGIT" node add --cluster "local:$CL" n1 >/dev/null
ROOT=$CL/roots/n1
mkdir -p "$ROOT/etc" "$T/outside/sub"
printf 'root:x:0:0::/root:/bin/sh\n' >"$ROOT/etc/passwd"
printf 'root:x:0:\n' >"$ROOT/etc/group"
for i in 0 1 2 3; do echo "outside $i" >"$T/outside/f$i"; echo "deep $i" >"$T/outside/sub/g$i"; done
chmod 0644 "$T/outside"/f* "$T/outside/sub"/g*
# A snapshot of everything outside the root the planted links lead to.
snap() { (cd "$T/outside" && find . -printf '%p %y %m %s %T@\n' | sort && find . -type f -exec sha256sum {} + | sort); }
snap >"$T/outside.before"

node_cfg_helpers "$CL"

# Two configs over the same paths: files in three trees, a directory, a unit.
mkcfg() {
  local v=$1 files="" sep=""
  for d in etc/app etc/deep/a/b opt/tool/bin; do
    for i in 0 1 2 3 4 5; do
      files="$files$sep{\"path\":\"/$d/f$i\",\"mode\":420,\"contents\":{\"source\":\"data:,$v-$i\"}}"; sep=,
    done
  done
  publish '{"ignition":{"version":"3.4.0"},"storage":{"files":['"$files"'],"directories":[{"path":"/srv/data","mode":448}]},
    "systemd":{"units":[{"name":"app.service","enabled":true,"contents":"[Service]\nExecStart=/bin/true '"$v"'\n[Install]\nWantedBy=multi-user.target\n"}]}}'
}
CA=$(mkcfg one)
CB=$(mkcfg two)
desire "$CA"
"$MCGIT" agent --node n1 --cluster "local:$CL" --once -q >/dev/null 2>&1 || true
[ "$(field currentConfig)" = "$CA" ] && ok "the first config applies before the race" || bad "first apply: $(field state) $(field reason)"

# The planter: until $T/stop exists, pick a directory or file the agent
# uses and swap it for a symlink leading out of the root, then put it back.
cat >"$T/plant.py" <<'EOF'
import os, random, sys, time
root, outside, stop = sys.argv[1], sys.argv[2], sys.argv[3]
dirs = ["etc/app", "etc/deep", "etc/deep/a", "etc/deep/a/b", "opt", "opt/tool", "opt/tool/bin",
        "srv/data", "srv", "etc/systemd/system", "etc/systemd/system/multi-user.target.wants",
        "var/lib/mcgit", "var/lib", "etc"]
files = ["etc/app/f0", "etc/app/f3", "etc/deep/a/b/f5", "opt/tool/bin/f1",
         "etc/systemd/system/app.service", "etc/systemd/system/multi-user.target.wants/app.service"]
targets = [outside, outside + "/sub", os.path.relpath(outside, root), "../../../../../../../../" + outside.lstrip("/")]
rnd = random.Random(1)
n = 0
while not os.path.exists(stop):
    if rnd.random() < 0.6:
        rel = rnd.choice(dirs)
        p = os.path.join(root, rel)
        aside = p + ".aside"
        try:
            os.rename(p, aside)
        except OSError:
            continue
        try:
            os.symlink(rnd.choice(targets), p)
            n += 1
            time.sleep(rnd.random() * 0.002)
            os.unlink(p)
        except OSError:
            pass
        try:
            os.rename(aside, p)
        except OSError:
            pass
    else:
        rel = rnd.choice(files)
        p = os.path.join(root, rel)
        try:
            os.unlink(p)
        except OSError:
            pass
        try:
            os.symlink(outside + "/f%d" % rnd.randrange(4), p)
            n += 1
            time.sleep(rnd.random() * 0.002)
            os.unlink(p)
        except OSError:
            pass
    # a pause now and then, so some applies run between plantings
    time.sleep(rnd.random() * 0.02)
print(n)
EOF
python3 "$T/plant.py" "$ROOT" "$T/outside" "$T/stop" >"$T/planted" &
planter=$!

runs=0 refused=0 done_=0 odd=0
end=$((SECONDS + SECS))
cfg=$CB
while [ $SECONDS -lt $end ]; do
  desire "$cfg"
  st=0
  "$MCGIT" agent --node n1 --cluster "local:$CL" --once -q --force >"$T/a.out" 2>"$T/a.err" || st=$?
  runs=$((runs + 1))
  case $st in
    0) done_=$((done_ + 1)) ;;
    1) refused=$((refused + 1)); sed -E 's/^n1 [A-Za-z]+ [^ ]+ //; s/rendered-worker-[0-9a-f]+/CFG/g' "$T/a.out" | head -1 >>"$T/reasons" ;;
    *) odd=$((odd + 1)); echo "    agent exit $st:"; sed 's/^/      /' "$T/a.err" | head -5 ;;
  esac
  if grep -qE 'Sanitizer|runtime error|Segmentation' "$T/a.err"; then odd=$((odd + 1)); sed 's/^/      /' "$T/a.err" | head -20; fi
  [ "$cfg" = "$CB" ] && cfg=$CA || cfg=$CB
done
touch "$T/stop"
wait "$planter" || true
echo "# $runs applies in ${SECS}s: $done_ done, $refused refused; $(cat "$T/planted") symlinks planted"
sort "$T/reasons" 2>/dev/null | uniq -c | sort -rn | head -8 | sed 's/^/#   /'
[ "$odd" = 0 ] && ok "the agent only ever succeeded or refused ($runs runs)" || bad "$odd runs crashed or reported a sanitizer error"
[ "$(cat "$T/planted")" -gt 50 ] && ok "the planter really raced ($(cat "$T/planted") symlinks)" || bad "the planter planted too few symlinks"
[ "$refused" -gt 0 ] && ok "some applies met a planted symlink and refused ($refused)" || bad "no apply ever met a symlink: the race did not happen"
[ "$done_" -gt 0 ] && ok "some applies ran between plantings and succeeded ($done_)" || bad "no apply ever succeeded during the race"

snap >"$T/outside.after"
if cmp -s "$T/outside.before" "$T/outside.after"; then
  ok "nothing outside the root was created, changed or removed"
else
  bad "outside the root changed:"; diff "$T/outside.before" "$T/outside.after" | head -20 | sed 's/^/    /'
fi

# Put the root right by hand: the planter may have left a symlink or an
# .aside directory behind at the moment it stopped.
find "$ROOT" -type l ! -path "*/multi-user.target.wants/*" -delete
find "$ROOT" -depth -name '*.aside' -exec sh -c 'for a; do p=${a%.aside}; rm -rf "$p"; mv "$a" "$p"; done' _ {} +
find "$ROOT/etc/systemd" -type l -delete 2>/dev/null || true
desire "$CB"
st=0
"$MCGIT" agent --node n1 --cluster "local:$CL" --once -q --force >"$T/a.out" 2>"$T/a.err" || st=$?
[ "$st" = 0 ] && [ "$(field currentConfig)" = "$CB" ] && ok "after the race one apply makes the node Done" || { bad "final apply exit $st: $(cat "$T/a.out" "$T/a.err")"; }
[ "$(cat "$ROOT/etc/deep/a/b/f5")" = "two-5" ] && ok "the files are the config's" || bad "f5: $(cat "$ROOT/etc/deep/a/b/f5" 2>&1)"
finish
