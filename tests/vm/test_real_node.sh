#!/usr/bin/env bash
# mcgit's agent on a real node: a Debian 12 guest under QEMU (tests/vm/vm.sh)
# whose packaged mcgit-agent.service manages node NAME of a local cluster
# directory shared in from this host. Run as root:
#
#   tests/vm/test_real_node.sh            scenarios 1, 2 and 5 (CI)
#   tests/vm/test_real_node.sh --all      every scenario
#   tests/vm/test_real_node.sh 4 2b ...   the scenarios named
#
#   1  files, a unit with a drop-in (started by the agent's systemctl
#      actions, `systemctl is-active`), core's SSH key accepted by the guest's
#      real sshd, and refused once the key leaves the config
#   2  a real reboot: the boot id changes, the agent finishes its journal in
#      the new boot, the node is Done
#   2b maxUnavailable across two guests: a controller on this host, a signed
#      repository, a change needing a reboot: one guest at a time
#   3  kernel arguments through the guest's GRUB: in /proc/cmdline after the
#      agent's reboot, gone after the next
#   4  drift on a real file system: Degraded naming the path, then Done
#   5  a power cut (QEMU killed) at each named point of an update
#      (MCGIT_TEST_PAUSE_AT; eight points, all thirteen with --all): e2fsck
#      clean, every managed file whole, and the node converges to the target
#   6  a power cut during post-receive's render in a config repository
#      served from the guest: git fsck --strict, refs, the next push renders
#   7  identity: node bound to another machine-id: the agent refuses; bound
#      back: it manages the node again
#   9  a site: HQ's signed repository to the site in a bundle, the site's
#      controller (--site) rolls it out to the guest, whose agent attests it
#      with its pinned node key; the site's status back to HQ in a bundle,
#      `mcgit status --sites` there: updated and attested
#
# The image is built (or reused) in MCGIT_VM_IMAGE (default
# /var/cache/mcgit-vm/image) with `vm.sh image`. MCGIT, SRC as for the
# integration tests (MCGIT manages the cluster directory from this host).
. "$(dirname "$0")/../integration/lib.sh"
VM=$SRC/tests/vm/vm.sh
IMG=${MCGIT_VM_IMAGE:-/var/cache/mcgit-vm/image}
scen=(1 2 5)
all=
case ${1:-} in
  --all) scen=(1 2 3 4 5 6 7 9 2b 8 8b); all=1 ;;
  "") ;;
  *) scen=("$@") ;;
esac
[ "$(id -u)" = 0 ] || skip "the VM test bed needs root (debootstrap, chroot)"
need qemu-system-x86_64 qemu-img debootstrap mkfs.ext4 e2fsck python3 ssh-keygen dpkg-buildpackage
export MCGIT_VM_RUN=$T/run
guests=()
CTRL= # scenario 2b's controller
cleanup() {
  local g
  [ -z "$CTRL" ] || kill "$CTRL" 2>/dev/null || true
  for g in "${guests[@]}"; do "$VM" cut "$g" >/dev/null 2>&1 || true; done
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

t0=$(date +%s)
"$VM" image "$IMG" >"$T/image.log" 2>&1 || { tail -30 "$T/image.log"; bad "vm.sh image"; finish; }
echo "# image: $(($(date +%s) - t0)) s ($(grep -o 'built in .*\|is current.*' "$T/image.log" | head -1))"

CL=$T/cl
mkdir -p "$CL"
"$MCGIT" node list --cluster "local:$CL" >/dev/null 2>&1 || true
cat >"$T/cfg.py" <<'PYEOF'
import hashlib, json, os, sys
cl, cmd = sys.argv[1], sys.argv[2]
A = "machineconfiguration.mcgit.io/"
def node(n):
    return json.load(open("%s/nodes/%s.json" % (cl, n)))
if cmd in ("publish", "publish_spec"):
    spec = json.loads(sys.argv[3])
    if cmd == "publish":
        spec = {"config": spec}
    b = (json.dumps(spec, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode()
    name = "rendered-worker-" + hashlib.sha256(b).hexdigest()[:32]
    open("%s/configs/%s.json" % (cl, name), "wb").write(b)
    print(name)
elif cmd == "desire":
    p = "%s/nodes/%s.json" % (cl, sys.argv[3])
    n = node(sys.argv[3])
    n["metadata"].setdefault("annotations", {})[A + "desiredConfig"] = sys.argv[4]
    open(p + ".tmp", "w").write(json.dumps(n, indent=2))
    os.rename(p + ".tmp", p)
elif cmd == "policy":
    o = {"apiVersion": "mcgit.io/v1", "kind": "MachineConfiguration", "metadata": {"name": "cluster"},
         "spec": {"nodeDisruptionPolicy": json.loads(sys.argv[3])}}
    p = "%s/machineconfiguration.json" % cl
    open(p + ".tmp", "w").write(json.dumps(o))
    os.rename(p + ".tmp", p)
elif cmd == "unavailable":
    rows = []
    for n in sys.argv[3:]:
        a = node(n)["metadata"].get("annotations", {})
        st, d, c = a.get(A + "state", ""), a.get(A + "desiredConfig", ""), a.get(A + "currentConfig", "")
        rows.append((st != "Done" or d != c, "%s:%s:%s:%s" % (n, st, d[-6:], c[-6:])))
    print(sum(1 for u, _ in rows if u), " ".join(r for _, r in rows))
else:  # field NODE F
    print(node(sys.argv[3])["metadata"].get("annotations", {}).get(A + sys.argv[4], ""))
PYEOF
publish() { python3 "$T/cfg.py" "$CL" publish "$1"; }            # an Ignition config
publish_spec() { python3 "$T/cfg.py" "$CL" publish_spec "$1"; }  # a whole rendered spec
# desire NODE CONFIG: set NODE's desiredConfig. The guest's agent patches the
# node at the same time, under a lock this host does not share (virtiofs):
# a write lost to its read-modify-write is made again.
desire() {
  local i
  for i in 1 2 3 4 5; do
    python3 "$T/cfg.py" "$CL" desire "$1" "$2"
    sleep 2
    [ "$(field "$1" desiredConfig)" = "$2" ] && return 0
  done
}
policy() { python3 "$T/cfg.py" "$CL" policy "$1"; }
field() { python3 "$T/cfg.py" "$CL" field "$1" "$2" 2>/dev/null || true; }
gx() { local g=$1; shift; "$VM" exec "$g" -- "$@"; }
# wait_done NODE CONFIG [SECONDS]: the node reports Done at CONFIG
wait_done() {
  local n=$1 c=$2 end=$(($(date +%s) + ${3:-300}))
  while [ "$(date +%s)" -lt "$end" ]; do
    [ "$(field "$n" currentConfig)" = "$c" ] && [ "$(field "$n" state)" = Done ] && return 0
    sleep 2
  done
  echo "# $n: state $(field "$n" state), current $(field "$n" currentConfig), reason $(field "$n" reason)"
  return 1
}
# wait_state NODE STATE [SECONDS]
wait_state() {
  local n=$1 s=$2 end=$(($(date +%s) + ${3:-120}))
  while [ "$(date +%s)" -lt "$end" ]; do
    [ "$(field "$n" state)" = "$s" ] && return 0
    sleep 2
  done
  echo "# $n: state $(field "$n" state), reason $(field "$n" reason)"
  return 1
}
boot() { # boot NAME: start it (joined to the cluster), timed
  local s=$(date +%s)
  guests+=("$1")
  "$VM" start "$IMG" "$1" --cluster-dir "$CL" >"$T/$1.id" 2>"$T/$1.start.err" ||
    { cat "$T/$1.start.err"; bad "$1: vm.sh start"; finish; }
  echo "# $1: booted in $(($(date +%s) - s)) s: $(tr '\n' ' ' <"$T/$1.id")"
}
bootid() { gx "$1" cat /proc/sys/kernel/random/boot_id; }
json_files() { # json_files WORD PATH...: storage.files, each PATH holding WORD-<basename>
  local w=$1 p sep=
  shift
  printf '['
  for p in "$@"; do
    printf '%s{"path":"%s","mode":420,"contents":{"source":"data:,%s-%s"}}' "$sep" "$p" "$w" "$(basename "$p")"
    sep=,
  done
  printf ']'
}
timed() { echo "# scenario $1: $(($(date +%s) - $2)) s"; }

boot vm1
G=vm1
# the agent runs under systemd and the node is bound to the guest's machine-id
mid=$(sed -n 's/^machine-id: //p' "$T/$G.id")
[ "$(gx $G systemctl is-active mcgit-agent.service)" = active ] &&
  ok "packaged mcgit-agent.service is active in the guest" || bad "mcgit-agent.service not active"
[ "$(field $G machineID)" = "$mid" ] && ok "node $G bound to the guest's machine-id" ||
  bad "node $G bound to '$(field $G machineID)', guest has $mid"
base=$(publish '{"ignition":{"version":"3.4.0"}}')
desire $G "$base"
wait_done $G "$base" && ok "an empty config: Done" || bad "empty config not Done"
cur=$base

# ---------------------------------------------------------------- scenario 1
s1() {
  local s=$(date +%s)
  ssh-keygen -q -t ed25519 -N '' -C core-test -f "$T/corekey"
  "$VM" exec $G -i -- sh -c 'umask 077; cat >/root/corekey' <"$T/corekey"
  local pub unit cfg1 cfg2
  pub=$(cat "$T/corekey.pub")
  policy '{"files":[{"path":"/etc/mcgit-test","actions":[{"type":"None"}]}],
           "units":[{"name":"mcgit-hello.service","actions":[{"type":"DaemonReload"},
                     {"type":"Restart","restart":{"serviceName":"mcgit-hello.service"}}]}]}'
  unit='[Unit]\nDescription=mcgit test unit\n[Service]\nExecStart=/bin/sh -c \"echo $HELLO >/run/mcgit-hello; exec sleep infinity\"\n[Install]\nWantedBy=multi-user.target\n'
  cfg1=$(publish "{\"ignition\":{\"version\":\"3.4.0\"},
    \"passwd\":{\"users\":[{\"name\":\"core\",\"sshAuthorizedKeys\":[\"$pub\"]}]},
    \"storage\":{\"files\":[{\"path\":\"/etc/mcgit-test/hello\",\"mode\":416,\"user\":{\"name\":\"core\"},\"group\":{\"name\":\"core\"},
      \"contents\":{\"source\":\"data:,hello%20real%20node\"}}]},
    \"systemd\":{\"units\":[{\"name\":\"mcgit-hello.service\",\"enabled\":true,\"contents\":\"$unit\",
      \"dropins\":[{\"name\":\"10-env.conf\",\"contents\":\"[Service]\\nEnvironment=HELLO=from-dropin\\n\"}]}]}}")
  desire $G "$cfg1"
  wait_done $G "$cfg1" && ok "1: files, unit, drop-in and key rolled out: Done" || bad "1: not Done"
  [ "$(gx $G systemctl is-active mcgit-hello.service)" = active ] &&
    ok "1: systemctl is-active mcgit-hello.service: active" || bad "1: mcgit-hello.service not active"
  [ "$(gx $G systemctl is-enabled mcgit-hello.service)" = enabled ] &&
    ok "1: systemctl is-enabled: enabled (the agent's [Install] links)" || bad "1: unit not enabled"
  [ "$(gx $G cat /run/mcgit-hello)" = from-dropin ] && ok "1: the drop-in's Environment= took effect" ||
    bad "1: drop-in not applied ($(gx $G cat /run/mcgit-hello))"
  [ "$(gx $G stat -c '%a %U:%G' /etc/mcgit-test/hello)" = "640 core:core" ] &&
    [ "$(gx $G cat /etc/mcgit-test/hello)" = "hello real node" ] &&
    ok "1: file content, mode 0640, owner core:core" ||
    bad "1: file is $(gx $G stat -c '%a %U:%G %s' /etc/mcgit-test/hello)"
  local sshc=(ssh -i /root/corekey -o BatchMode=yes -o StrictHostKeyChecking=no
              -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR core@localhost true)
  gx $G "${sshc[@]}" >"$T/ssh.out" 2>&1 && ok "1: ssh -i key core@localhost true: accepted by the guest's sshd" ||
    { bad "1: ssh refused"; sed 's/^/    /' "$T/ssh.out"; }
  cfg2=$(publish "{\"ignition\":{\"version\":\"3.4.0\"},
    \"storage\":{\"files\":[{\"path\":\"/etc/mcgit-test/hello\",\"mode\":416,\"user\":{\"name\":\"core\"},\"group\":{\"name\":\"core\"},
      \"contents\":{\"source\":\"data:,hello%20real%20node\"}}]},
    \"systemd\":{\"units\":[{\"name\":\"mcgit-hello.service\",\"enabled\":true,\"contents\":\"$unit\",
      \"dropins\":[{\"name\":\"10-env.conf\",\"contents\":\"[Service]\\nEnvironment=HELLO=from-dropin\\n\"}]}]}}")
  desire $G "$cfg2"
  wait_done $G "$cfg2" && ok "1: the key removed: Done" || bad "1: key removal not Done"
  local rc=0
  gx $G "${sshc[@]}" >"$T/ssh.out" 2>&1 || rc=$?
  [ "$rc" = 255 ] && grep -q 'Permission denied' "$T/ssh.out" && ok "1: the same ssh is refused (Permission denied)" ||
    { bad "1: ssh after removal: exit $rc"; sed 's/^/    /' "$T/ssh.out"; }
  cur=$cfg2
  timed 1 "$s"
}

# ---------------------------------------------------------------- scenario 8
# Safe rollouts on a real host: the pool's health check (a unit that must be
# active) is carried in the rendered spec; a config whose unit fails to start
# is reverted by the agent, its reboot included, and the guest comes back on
# the old config with the unit running.
s8() {
  local s=$(date +%s) b0 b1 good bad svc health
  policy '{}' # no rule: a unit's change reboots
  svc() { printf '[Unit]\\nDescription=mcgit health test\\n[Service]\\nExecStart=%s\\n[Install]\\nWantedBy=multi-user.target\\n' "$1"; }
  health='"mcgitHealth":{"checks":[{"name":"svc","unit":"mcgit-svc.service"}],"onFailure":"Revert","timeout":90}'
  good=$(publish_spec "{\"config\":{\"ignition\":{\"version\":\"3.4.0\"},\"systemd\":{\"units\":[{\"name\":\"mcgit-svc.service\",\"enabled\":true,\"contents\":\"$(svc '/bin/sleep infinity')\"}]}},$health}")
  desire $G "$good"
  wait_done $G "$good" 400 && ok "8: a unit under a health check: Done once it is active" || bad "8: good config not Done"
  [ "$(gx $G systemctl is-active mcgit-svc.service)" = active ] && ok "8: mcgit-svc.service active" || bad "8: not active"
  b0=$(bootid $G)
  bad=$(publish_spec "{\"config\":{\"ignition\":{\"version\":\"3.4.0\"},\"systemd\":{\"units\":[{\"name\":\"mcgit-svc.service\",\"enabled\":true,\"contents\":\"$(svc '/bin/false')\"}]}},$health}")
  desire $G "$bad"
  wait_state $G Degraded 900 && ok "8: the unit fails after the reboot: the node goes Degraded" || bad "8: not Degraded"
  case "$(field $G reason)" in
    "health check svc failed "*"after update to $bad: unit mcgit-svc.service failed; reverted to $good")
      ok "8: the reason names the check, the config and the one it went back to" ;;
    *) bad "8: reason: $(field $G reason)" ;;
  esac
  wait_for_current() { local end=$(($(date +%s) + 400)); while [ "$(date +%s)" -lt "$end" ]; do
      [ "$(field $G currentConfig)" = "$good" ] && return 0; sleep 2; done; return 1; }
  wait_for_current && ok "8: reverted: currentConfig is the good config again" || bad "8: current $(field $G currentConfig)"
  b1=$(bootid $G)
  [ -n "$b1" ] && [ "$b1" != "$b0" ] && ok "8: the guest rebooted ($b0 -> $b1)" || bad "8: boot id $b1"
  local end=$(($(date +%s) + 120))
  until [ "$(gx $G systemctl is-active mcgit-svc.service)" = active ] || [ "$(date +%s)" -gt "$end" ]; do sleep 3; done
  [ "$(gx $G systemctl is-active mcgit-svc.service)" = active ] &&
    gx $G grep -q 'sleep infinity' /etc/systemd/system/mcgit-svc.service &&
    ok "8: the guest is back on the old config, the unit running" || bad "8: unit $(gx $G systemctl is-active mcgit-svc.service)"
  gx $G journalctl -u mcgit-agent.service -o cat >"$T/journal8" 2>&1 || true
  expect_grep "health check svc failed .*: reverting" "$T/journal8" "8: the agent's journal says it reverted"
  desire $G "$good"
  wait_done $G "$good" 300 && ok "8: given the good config again: Done" || bad "8: not Done again"
  cur=$good
  timed 8 "$s"
}

# Scenario 8b: the same through a controller on this host, from a signed
# repo whose pool has spec.rollout: the failed check halts the pool.
s8b() {
  local s=$(date +%s) R=$T/repo8 end cfg
  policy '{}'
  mkkey op8 ed25519
  signer_line op@example.com op8 >"$T/trust8"
  "$MCGIT" init "$R" >/dev/null 2>&1
  sign_setup "$R" "$T/trust8"
  cat >>"$R/pools/worker.yaml" <<'EOF'
  rollout:
    healthChecks:
    - name: svc
      unit: mcgit-svc.service
    healthTimeout: 90s
EOF
  unit_mc() { # EXEC
    cat >"$R/machineconfigs/50-svc.yaml" <<EOF
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata: {name: 50-svc, labels: {machineconfiguration.openshift.io/role: worker}}
spec:
  config:
    ignition: {version: 3.4.0}
    systemd:
      units:
      - name: mcgit-svc.service
        enabled: true
        contents: "[Service]\\nExecStart=$1\\n[Install]\\nWantedBy=multi-user.target\\n"
EOF
  }
  unit_mc "/bin/sleep infinity"
  scommit "$R" op8 "svc: sleeps"
  ctl8() { "$MCGIT" controller --repo "$R" --trust "$T/trust8" --cluster "local:$CL" --once >/dev/null 2>&1 || true; }
  ctl8
  cfg=$(field $G desiredConfig)
  wait_done $G "$cfg" 600 && ok "8b: the controller's config with its health check: Done" || bad "8b: not Done"
  unit_mc "/bin/false"
  scommit "$R" op8 "svc: fails"
  ctl8
  wait_state $G Degraded 900 && ok "8b: the failing unit: Degraded, reverted" || bad "8b: not Degraded"
  end=$(($(date +%s) + 400))
  until [ "$(field $G currentConfig)" = "$cfg" ] || [ "$(date +%s)" -gt "$end" ]; do sleep 3; done
  ctl8
  local halted
  halted=$(python3 -c 'import json,sys; c=[x for x in json.load(open(sys.argv[1]))["status"]["conditions"] if x["type"]=="RolloutHalted"]; print(c[0]["status"], c[0]["message"]) if c else print("none")' "$CL/pools/worker.json")
  case "$halted" in "True node $G: health check svc failed on source commit "*) ok "8b: the pool shows RolloutHalted, naming the guest and the check" ;;
    *) bad "8b: RolloutHalted: $halted" ;; esac
  [ "$(gx $G systemctl is-active mcgit-svc.service)" = active ] && ok "8b: the guest runs the old unit" ||
    bad "8b: unit $(gx $G systemctl is-active mcgit-svc.service)"
  timed 8b "$s"
}

# ---------------------------------------------------------------- scenario 2
s2() {
  local s=$(date +%s) b0 b1 cfg
  policy '{}'
  b0=$(bootid $G)
  cfg=$(publish "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":$(json_files reboot /etc/mcgit-reboot/f)}}")
  desire $G "$cfg"
  wait_done $G "$cfg" 400 && ok "2: a change that needs a reboot: Done" || bad "2: not Done after the reboot"
  b1=$(bootid $G)
  [ -n "$b1" ] && [ "$b1" != "$b0" ] && ok "2: the boot id changed ($b0 -> $b1)" || bad "2: boot id still $b1"
  gx $G journalctl -b -u mcgit-agent.service -o cat >"$T/journal2" 2>&1 || true
  expect_grep "resuming update to $cfg|reboot done" "$T/journal2" "2: after the boot the agent finished the update from its journal"
  [ "$(gx $G cat /etc/mcgit-reboot/f)" = reboot-f ] && ok "2: the file is there after the boot" || bad "2: file missing"
  gx $G grep -q "Node will reboot\|Reboot" /dev/null 2>/dev/null || true
  cur=$cfg
  timed 2 "$s"
}

# ---------------------------------------------------------------- scenario 3
s3() {
  local s=$(date +%s) cfg
  policy '{}'
  cfg=$(publish_spec '{"config":{"ignition":{"version":"3.4.0"}},"kernelArguments":["mcgit.test=1"]}')
  desire $G "$cfg"
  wait_done $G "$cfg" 400 && ok "3: kernelArguments [mcgit.test=1]: Done" || bad "3: not Done"
  gx $G cat /proc/cmdline >"$T/cmdline"
  expect_grep '(^| )mcgit\.test=1( |$)' "$T/cmdline" "3: mcgit.test=1 in the guest's /proc/cmdline (through GRUB)"
  cfg=$(publish '{"ignition":{"version":"3.4.0"}}')
  desire $G "$cfg"
  wait_done $G "$cfg" 400 && ok "3: the argument removed: Done" || bad "3: removal not Done"
  gx $G cat /proc/cmdline >"$T/cmdline"
  if grep -q 'mcgit\.test=1' "$T/cmdline"; then bad "3: mcgit.test=1 still in /proc/cmdline"
  else ok "3: mcgit.test=1 gone from /proc/cmdline after the next boot"; fi
  cur=$cfg
  timed 3 "$s"
}

# ---------------------------------------------------------------- scenario 4
s4() {
  local s=$(date +%s) cfg
  policy '{"files":[{"path":"/etc/mcgit-drift","actions":[{"type":"None"}]}]}'
  cfg=$(publish "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":$(json_files drift /etc/mcgit-drift/f)}}")
  desire $G "$cfg"
  wait_done $G "$cfg" && ok "4: Done" || bad "4: not Done"
  gx $G sh -c 'echo edited >/etc/mcgit-drift/f'
  wait_state $G Degraded && [[ $(field $G reason) == *"/etc/mcgit-drift/f"* ]] &&
    ok "4: a file edited in the guest: Degraded, the path named" || bad "4: drift: $(field $G reason)"
  gx $G sh -c 'printf drift-f >/etc/mcgit-drift/f'
  wait_done $G "$cfg" && ok "4: put back: Done again" || bad "4: not Done after repair"
  cur=$cfg
  timed 4 "$s"
}

# ---------------------------------------------------------------- scenario 5
# cut_at POINT WORD: roll out files holding WORD with the agent paused at
# POINT, cut the power there, fsck, boot, check
# eight points in CI (scenario 5 alone), all thirteen with --all
POINTS="journal-written temps-written temps-synced renamed-one renamed-more files-synced
        written current-written"
MORE_POINTS="backups-taken before-actions before-commit committed"
PCFILES="/etc/mcgit-pc/a /etc/mcgit-pc/b /etc/mcgit-pc/c /etc/mcgit-pc/d"
cut_at() {
  local p=$1 w=$2 old=$cur cfg i s=$(date +%s)
  cfg=$(publish "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":$(json_files "$w" $PCFILES)}}")
  gx $G sh -c "systemctl set-environment MCGIT_TEST_PAUSE_AT=$p && systemctl restart mcgit-agent.service"
  desire $G "$cfg"
  for i in $(seq 120); do grep -q "mcgit: paused at $p" "$MCGIT_VM_RUN/$G.console" && break; sleep 1; done
  if grep -q "mcgit: paused at $p" "$MCGIT_VM_RUN/$G.console"; then ok "5 $p: the agent paused there (console)"
  else bad "5 $p: no pause on the console"; fi
  "$VM" cut $G
  local cats=() f c torn= prev=${cur_word:-}
  for f in $PCFILES; do cats+=(--cat "$f"); done
  "$VM" fsck $G "${cats[@]}" >"$T/fsck" 2>&1 && ok "5 $p: power cut; e2fsck -fn clean" ||
    { bad "5 $p: e2fsck"; sed 's/^/    /' "$T/fsck" | tail -5; }
  # on the disk as the cut left it: every file whole, the old bytes or the new
  for f in $PCFILES; do
    c=$(awk -v f="== $f" '$0 == f {on = 1; next} /^== / {on = 0} on' "$T/fsck" | tr -d '\n')
    [ "$c" = "$w-$(basename "$f")" ] || [ "$c" = "$prev-$(basename "$f")" ] || torn="$torn $f='$c'"
  done
  [ -z "$torn" ] && ok "5 $p: on the cut disk every managed file is whole, old or new" ||
    bad "5 $p: torn or empty on the cut disk:$torn"
  torn=
  "$VM" start "$IMG" $G >/dev/null 2>"$T/start.err" || { bad "5 $p: no boot"; cat "$T/start.err"; return; }
  if wait_done $G "$cfg" 200; then ok "5 $p: after the boot the node converged to the target"
  else bad "5 $p: did not converge ($(field $G currentConfig))"; fi
  for f in $PCFILES; do
    c=$(gx $G cat "$f" 2>/dev/null) || c=missing
    [ "$c" = "$w-$(basename "$f")" ] || torn="$torn $f=$c"
  done
  [ -z "$torn" ] && ok "5 $p: every managed file whole and new" || bad "5 $p: files:$torn"
  cur=$cfg cur_word=$w
  echo "# 5 $p: $(($(date +%s) - s)) s"
}
s5() {
  local s=$(date +%s) p k=0 cfg
  policy '{"files":[{"path":"/etc/mcgit-pc","actions":[{"type":"Restart","restart":{"serviceName":"systemd-journald.service"}}]}]}'
  cfg=$(publish "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":$(json_files v0 $PCFILES)}}")
  desire $G "$cfg"
  wait_done $G "$cfg" && cur=$cfg cur_word=v0
  for p in $POINTS ${all:+$MORE_POINTS}; do k=$((k + 1)); cut_at "$p" "v$k"; done
  if [ -n "$all" ]; then # the reboot's own point: no policy, a Reboot
    policy '{}'
    cut_at before-reboot "v$((k + 1))"
  fi
  timed 5 "$s"
}

# ---------------------------------------------------------------- scenario 6
# A config repository served from the guest: a bare repo with mcgit's hooks
# (git's own writes fsync'd: core.fsync=all), pushed to over file:// from a
# client in the guest with SSH-signed commits. The power is cut while
# post-receive renders (a wrapper says on the console when the render
# starts; the cut follows after a delay, a different one each round). After
# the boot: git fsck --strict is clean, every ref names an object that
# exists, and the next push renders.
S6_SETUP='set -eu
export HOME=/root
d=/root/s6; rm -rf "$d"; mkdir -p "$d"; cd "$d"
ssh-keygen -q -t ed25519 -N "" -C alice -f alice
echo "alice@example.com $(cut -d" " -f1,2 alice.pub)" >trust
git config --global user.name Alice; git config --global user.email alice@example.com
git config --global init.defaultBranch main
git config --global gpg.format ssh; git config --global user.signingkey "$d/alice"
git config --global gpg.ssh.allowedSignersFile "$d/trust"
git init -q --bare server.git
git -C server.git config core.fsync all
mcgit hook install --repo server.git --trust "$d/trust" >/dev/null
cat >/usr/local/bin/mcgit-wrap <<"W"
#!/bin/sh
[ "$1 $2" = "hook post-receive" ] && echo "mcgit-test: render starts" >/dev/ttyS0
exec /usr/bin/mcgit "$@"
W
chmod 755 /usr/local/bin/mcgit-wrap
git -C server.git config mcgit.binary /usr/local/bin/mcgit-wrap
mcgit init client >/dev/null 2>&1
git -C client remote add origin "file://$d/server.git"
git -C client add -A; git -C client commit -q -S -m initial
git -C client push origin main >push.log 2>&1
grep -q "mcgit: rendered" push.log
sync'
# S6_COMMIT N: a signed commit of a MachineConfig writing round N's file
S6_COMMIT='set -eu
export HOME=/root
cd /root/s6/client
printf "%s\n" "apiVersion: machineconfiguration.openshift.io/v1" "kind: MachineConfig" \
  "metadata:" "  name: 99-s6" "  labels:" "    machineconfiguration.openshift.io/role: worker" \
  "spec:" "  config:" "    ignition:" "      version: 3.4.0" "    storage:" "      files:" \
  "      - path: /etc/s6" "        contents:" "          source: data:,round-$1" >machineconfigs/99-s6.yaml
git add -A; git commit -q -S -m "round $1"
sync'
s6_check() { # s6_check LABEL: the server repository after the boot
  local l=$1
  gx $G git -C /root/s6/server.git fsck --strict >"$T/fsck6" 2>&1 && ok "6 $l: git fsck --strict clean" ||
    { bad "6 $l: git fsck --strict"; sed 's/^/    /' "$T/fsck6" | head -5; }
  gx $G sh -c 'cd /root/s6/server.git && git for-each-ref --format="%(objectname) %(refname)" |
      while read -r o r; do git cat-file -e "$o" || echo "missing: $r $o"; done' >"$T/refs6" 2>&1 || true
  [ ! -s "$T/refs6" ] && ok "6 $l: every ref names an object that exists" ||
    { bad "6 $l: refs"; sed 's/^/    /' "$T/refs6" | head -5; }
}
# s6_locks LABEL: lock files the cut left. git's receive-pack renames
# refs/heads/main.lock over main without syncing the directory, so a cut
# right after it can leave the lock (and main unmoved): git's own limit, and
# git says what to do (remove it); the test does so. Any other lock left
# (mcgit's, libgit2's) stays, and the next push shows what it breaks.
s6_locks() {
  local l
  l=$(gx $G sh -c 'cd /root/s6/server.git && find . -name "*.lock"' 2>/dev/null) || l=
  [ -z "$l" ] && return 0
  echo "# 6 $1: lock files left by the cut: $(echo $l)"
  gx $G rm -f /root/s6/server.git/refs/heads/main.lock /root/s6/server.git/packed-refs.lock
}
s6() {
  local s=$(date +%s) k d before i
  gx $G sh -c "$S6_SETUP" >"$T/s6setup" 2>&1 && ok "6: a bare repo with mcgit's hooks in the guest; a signed push renders" ||
    { bad "6: setup"; sed 's/^/    /' "$T/s6setup" | tail -5; return; }
  k=0
  for d in 0 0.5 1 2; do
    k=$((k + 1))
    gx $G sh -c "$S6_COMMIT" sh "$k" >/dev/null 2>&1 || { bad "6 round $k: commit"; continue; }
    before=$(grep -c 'mcgit-test: render starts' "$MCGIT_VM_RUN/$G.console" || true)
    gx $G systemd-run -q --unit="s6push$k" --collect -p WorkingDirectory=/root/s6/client \
      -E HOME=/root sh -c 'git push origin main >/root/s6/push.log 2>&1'
    for i in $(seq 300); do
      [ "$(grep -c 'mcgit-test: render starts' "$MCGIT_VM_RUN/$G.console" || true)" -gt "$before" ] && break
      sleep 0.1
    done
    [ "$i" -lt 300 ] || bad "6 round $k: the render did not start"
    sleep "$d"
    "$VM" cut $G
    "$VM" fsck $G >"$T/fsck" 2>&1 && ok "6 cut $d s into the render: e2fsck clean" || bad "6 cut $d s: e2fsck"
    "$VM" start "$IMG" $G >/dev/null 2>"$T/start.err" || { bad "6: no boot"; cat "$T/start.err"; return; }
    s6_check "cut $d s into the render"
    s6_locks "cut $d s"
  done
  # the next push renders
  gx $G sh -c "$S6_COMMIT" sh next >/dev/null 2>&1 || true
  if gx $G sh -c 'cd /root/s6/client && HOME=/root git push origin main' >"$T/push6" 2>&1 &&
     grep -q '^remote: mcgit: rendered ' "$T/push6" &&
     [ "$(gx $G git -C /root/s6/server.git log -1 --format='%(trailers:key=Source-Commit,valueonly)' rendered | head -1)" = \
       "$(gx $G git -C /root/s6/server.git rev-parse main)" ]; then
    ok "6: after the cuts the next push renders (rendered's Source-Commit is main)"
  else bad "6: the next push"; sed 's/^/    /' "$T/push6" | tail -8; fi
  s6_check "after the next push"
  timed 6 "$s"
}

# --------------------------------------------------------------- scenario 2b
# maxUnavailable across two guests: a controller on this host renders a
# signed config repository (pool worker, maxUnavailable 1) into the cluster
# directory both guests share; a change that needs a reboot rolls out one
# guest at a time, sampled all along.
# unavailable NODE...: how many of the nodes are updating (not Done, or
# desired != current), from one read of each node's file; then each node's
# state, desired and current config (for the record)
unavailable() { python3 "$T/cfg.py" "$CL" unavailable "$@"; }
converged2() { # converged2 OLD NODE...: every node Done at one config, not OLD
  local old=$1 n t=
  shift
  for n in "$@"; do
    [ "$(field "$n" state)" = Done ] || return 1
    [ "$(field "$n" desiredConfig)" = "$(field "$n" currentConfig)" ] || return 1
    [ "$(field "$n" currentConfig)" != "$old" ] || return 1
    [ -z "$t" ] || [ "$t" = "$(field "$n" currentConfig)" ] || return 1
    t=$(field "$n" currentConfig)
  done
}
s2b() {
  local s=$(date +%s) R=$T/repo end b1 b2 cfg1 i max=0 busy=0 u
  : >"$T/samples"
  [ -e "$T/keys/op" ] || mkkey op ed25519
  signer_line op@example.com op >"$T/trust"
  "$MCGIT" init "$R" >/dev/null 2>&1
  sign_setup "$R" "$T/trust"
  write_mc "$R" 10-pool worker /etc/mcgit-pool/f v1
  scommit "$R" op "pool v1"
  boot vm2
  "$MCGIT" controller --repo "$R" --trust "$T/trust" --cluster "local:$CL" --interval 1 \
    2>"$T/controller.log" &
  CTRL=$!
  end=$(($(date +%s) + 900))
  until converged2 "" vm1 vm2; do
    [ "$(date +%s)" -lt "$end" ] || break
    sleep 3
  done
  converged2 "" vm1 vm2 && ok "2b: a controller on this host rolls v1 out to both guests: Done" ||
    bad "2b: v1 did not converge ($(field vm1 state) $(field vm2 state))"
  cfg1=$(field vm1 currentConfig)
  b1=$(bootid vm1) b2=$(bootid vm2)
  write_mc "$R" 10-pool worker /etc/mcgit-pool/f v2
  scommit "$R" op "pool v2: a reboot"
  end=$(($(date +%s) + 900))
  while [ "$(date +%s)" -lt "$end" ]; do
    unavailable vm1 vm2 >>"$T/samples" 2>/dev/null || true
    u=$(tail -1 "$T/samples" | cut -d' ' -f1)
    [ "$u" -gt "$max" ] && max=$u
    [ "$u" -gt 0 ] && busy=$((busy + 1))
    converged2 "$cfg1" vm1 vm2 && break
    sleep 1
  done
  kill "$CTRL" 2>/dev/null || true
  wait "$CTRL" 2>/dev/null || true
  converged2 "$cfg1" vm1 vm2 && ok "2b: v2 rolled out to both guests: Done" || bad "2b: v2 did not converge"
  [ "$busy" -gt 0 ] && [ "$max" = 1 ] &&
    ok "2b: maxUnavailable 1 held: at most one guest updating at a time ($busy samples with one)" ||
    { bad "2b: at most $max guests updating at once ($busy busy samples)"; grep -v '^0 ' "$T/samples" | sed 's/^/    /'; }
  [ "$(bootid vm1)" != "$b1" ] && [ "$(bootid vm2)" != "$b2" ] && ok "2b: both guests rebooted" ||
    bad "2b: a guest did not reboot"
  [ "$(gx vm1 cat /etc/mcgit-pool/f)$(gx vm2 cat /etc/mcgit-pool/f)" = v2v2 ] &&
    ok "2b: the file is v2 on both" || bad "2b: files"
  timed 2b "$s"
}

# ---------------------------------------------------------------- scenario 9
# A site on the VM test bed (docs/sites.md): HQ's signed repository carried
# to the site in a bundle; the site's controller (--site, on this host) rolls
# it out to the guest, whose real agent attests what it applied with its own
# node key (pinned with `mcgit node bind --node-key`); the site's signed
# status comes back to HQ in a bundle, and `mcgit status --sites` at HQ
# shows the guest updated and attested on the source commit HQ pushed.
s9() {
  local s=$(date +%s) W=$T/site-w HQ=$T/hq.git SITE=$T/site.git end src9 cfg9 pub
  [ -e "$T/keys/op" ] || mkkey op ed25519
  signer_line op@example.com op >"$T/trust"
  ssh-keygen -q -t ed25519 -N '' -C site-vm -f "$T/site.key"
  fixture_server "$HQ" "$T/trust"
  "$MCGIT" init "$W" >/dev/null 2>&1
  sign_setup "$W" "$T/trust"
  git -C "$W" remote add origin "$HQ"
  mkdir -p "$W/sites"
  printf 'apiVersion: mcgit.io/v1\nkind: Site\nmetadata:\n  name: vmsite\nspec:\n  statusKey: %s\n  pools: [worker]\n' \
    "$(cat "$T/site.key.pub")" >"$W/sites/vmsite.yaml"
  cat >"$W/machineconfigs/cluster.yaml" <<'MCFG'
apiVersion: machineconfiguration.mcgit.io/v1
kind: MachineConfiguration
metadata: {name: cluster}
spec:
  nodeDisruptionPolicy:
    files:
    - path: /etc/mcgit-site
      actions: [{type: None}]
MCFG
  write_mc "$W" 10-site worker /etc/mcgit-site/f "site-v1"
  scommit "$W" op "site v1"
  git -C "$W" push -q origin main 2>"$T/push9.err" && ok "9: HQ accepts the signed push (its hooks render it)" ||
    { bad "9: push to HQ"; cat "$T/push9.err"; }
  src9=$(git -C "$W" rev-parse HEAD)
  # to the site: a bundle, imported as a site does
  git init -q --bare "$SITE"
  "$MCGIT" bundle create --repo "$HQ" "$T/to-site.bundle" >/dev/null 2>&1
  "$MCGIT" bundle import --repo "$SITE" "$T/to-site.bundle" --trust "$T/trust" -q >/dev/null 2>&1 &&
    ok "9: the site imports HQ's bundle" || bad "9: bundle import at the site"
  # the operator pins the guest agent's own node key
  pub=$(gx $G sh -c '. /etc/default/mcgit; mcgit agent --node "$MCGIT_NODE" --cluster "$MCGIT_CLUSTER" --root / --print-node-key')
  case $pub in ssh-ed25519\ *) ok "9: the guest's agent prints its node key" ;; *) bad "9: node key: '$pub'" ;; esac
  "$MCGIT" node bind --cluster "local:$CL" $G --machine-id "$mid" --node-key "$pub" >/dev/null 2>"$T/bind9.err" &&
    ok "9: the node key pinned" || { bad "9: node bind --node-key"; cat "$T/bind9.err"; }
  "$MCGIT" controller --repo "$SITE" --trust "$T/trust" --cluster "local:$CL" --interval 1 \
    --site vmsite --site-key "$T/site.key" 2>"$T/controller9.log" &
  CTRL=$!
  end=$(($(date +%s) + 600))
  until [ "$(gx $G cat /etc/mcgit-site/f 2>/dev/null)" = site-v1 ] && [ "$(field $G state)" = Done ] &&
    [ "$(field $G desiredConfig)" = "$(field $G currentConfig)" ] &&
    "$MCGIT" status --sites --repo "$SITE" -o json >/dev/null 2>&1 &&
    git -C "$SITE" show refs/mcgit/status/vmsite:status.json 2>/dev/null |
      jq -e '[.pools[] | select(.name == "worker")][0].attestedMachineCount == 1' >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$end" ] || break
    sleep 3
  done
  kill "$CTRL" 2>/dev/null || true
  wait "$CTRL" 2>/dev/null || true
  CTRL=
  cfg9=$(field $G currentConfig)
  [ "$(gx $G cat /etc/mcgit-site/f 2>/dev/null)" = site-v1 ] && [ "$(field $G state)" = Done ] &&
    ok "9: the site's controller rolled HQ's config out to the guest: the file on its disk, Done" ||
    { bad "9: not rolled out ($(field $G state) $(field $G reason))"; tail -5 "$T/controller9.log"; }
  expect_grep "site status recorded: [0-9a-f]{40}" "$T/controller9.log" "9: the site's controller recorded its status"
  # back to HQ
  "$MCGIT" site export --repo "$SITE" --site vmsite "$T/vmsite.status" >/dev/null 2>&1 &&
    git -C "$HQ" bundle verify "$T/vmsite.status" >/dev/null 2>&1 && ok "9: the status bundle (git bundle verify)" ||
    bad "9: site export"
  "$MCGIT" site import --repo "$HQ" "$T/vmsite.status" --trust "$T/trust" >"$T/import9.out" 2>&1 &&
    ok "9: HQ imports the site's status" || { bad "9: site import"; cat "$T/import9.out"; }
  "$MCGIT" status --sites --repo "$HQ" -o json >"$T/sites9.json" 2>&1 || true
  jq -e --arg c "$cfg9" --arg s "$src9" '[.items[] | select(.site == "vmsite" and .pool == "worker")][0] |
    .config == $c and .source == $s and .machineCount == 1 and .updatedMachineCount == 1 and
    .attestedMachineCount == 1' "$T/sites9.json" >/dev/null &&
    ok "9: mcgit status --sites at HQ: the guest updated and attested on HQ's source commit" ||
    bad "9: status --sites: $(jq -c '.items' "$T/sites9.json" 2>/dev/null || cat "$T/sites9.json")"
  cur=$cfg9
  timed 9 "$s"
}

# ---------------------------------------------------------------- scenario 7
s7() {
  local s=$(date +%s) other=fedcba9876543210fedcba9876543210 cfg
  "$MCGIT" node unbind --cluster "local:$CL" $G >/dev/null
  "$MCGIT" node bind --cluster "local:$CL" $G --machine-id $other >/dev/null
  gx $G systemctl restart mcgit-agent.service
  sleep 5
  gx $G journalctl -u mcgit-agent.service -o cat --since -30s >"$T/journal7" 2>&1 || true
  expect_grep "refusing to manage this host: node $G has bound machine-id $other" "$T/journal7" \
    "7: bound to another machine-id: the agent refuses the guest"
  cfg=$(publish "{\"ignition\":{\"version\":\"3.4.0\"},\"storage\":{\"files\":$(json_files id /etc/mcgit-id/f)}}")
  policy '{"files":[{"path":"/etc/mcgit-id","actions":[{"type":"None"}]}]}'
  desire $G "$cfg"
  sleep 15
  gx $G test -e /etc/mcgit-id/f && bad "7: the refused agent wrote a file" || ok "7: nothing written while refused"
  "$MCGIT" node unbind --cluster "local:$CL" $G >/dev/null
  "$MCGIT" node bind --cluster "local:$CL" $G --machine-id "$mid" >/dev/null
  wait_done $G "$cfg" 120 && ok "7: bound back: the agent (restarted by systemd) manages the node again" ||
    bad "7: not Done after rebinding"
  # the binding changes under a running agent: it stops at its next pass
  "$MCGIT" node unbind --cluster "local:$CL" $G >/dev/null
  "$MCGIT" node bind --cluster "local:$CL" $G --machine-id $other >/dev/null
  sleep 12
  gx $G journalctl -u mcgit-agent.service -o cat --since -15s >"$T/journal7" 2>&1 || true
  expect_grep "refusing to manage this host" "$T/journal7" "7: binding changed under the running agent: it stops"
  "$MCGIT" node unbind --cluster "local:$CL" $G >/dev/null
  "$MCGIT" node bind --cluster "local:$CL" $G --machine-id "$mid" >/dev/null
  cur=$cfg
  timed 7 "$s"
}

for n in "${scen[@]}"; do
  case $n in
    1|2|2b|3|4|5|6|7|8|8b|9) "s$n" ;;
    *) bad "no scenario $n" ;;
  esac
done
echo "# total: $(($(date +%s) - t0)) s"
finish
