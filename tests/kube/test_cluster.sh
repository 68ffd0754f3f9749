#!/usr/bin/env bash
# mcgit on a real Kubernetes cluster (tests/kube/cluster.sh): the image built
# from this tree without a registry, deploy/ applied as docs/kubernetes.md
# says, the controller and the agents as pods under real kubelets in Debian
# 12 guests. Run as root:
#
#   tests/kube/test_cluster.sh            scenario 1 (CI)
#   tests/kube/test_cluster.sh --all      every scenario
#   tests/kube/test_cluster.sh 1 6 ...    the scenarios named
#
#   1  a signed push rolled out by the controller pod to every node by the
#      agent pods: the file on the real host, cordon and drain (the pods on
#      the node evicted), the real reboot, the kubelet back, the node
#      uncordoned; one node at a time (sampled throughout); `kubectl get mcp`
#      Updated
#   6  the agent pod writes the host through its hostPath mount (/rootfs):
#      the file is on the host's root, the pod's own root holds nothing of it
#
# MCGIT, SRC as for the integration tests (MCGIT's directory goes on PATH:
# the push repository's hooks run it). MCGIT_CLUSTER_KEEP=1 leaves the
# cluster up (and prints how to reach it).
. "$(dirname "$0")/../integration/lib.sh"
C=$SRC/tests/kube/cluster.sh
scen=(1)
case ${1:-} in
  --all) scen=(1 6) ;;
  "") ;;
  *) scen=("$@") ;;
esac
[ "$(id -u)" = 0 ] || skip "the cluster test bed needs root (QEMU, debootstrap, chroot)"
need qemu-system-x86_64 qemu-img debootstrap umoci containerd kubectl etcd socat go git ssh-keygen
D=$T/cluster
cleanup() {
  stop_all
  if [ "${MCGIT_CLUSTER_KEEP:-}" = 1 ]; then
    echo "# kept: KUBECONFIG=$D/admin.kubeconfig; tests/kube/cluster.sh down $D"
  else
    "$C" down "$D" >/dev/null 2>&1 || true
    rm -rf "$T"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
timed() { echo "# scenario $1: $(($(date +%s) - $2)) s"; }

t0=$(date +%s)
if ! "$C" up "$D" n1 n2 >"$T/up.out" 2>"$T/up.err"; then
  bad "cluster.sh up n1 n2"; tail -20 "$T/up.err" | sed 's/^/    /'; finish; exit 1
fi
ok "cluster.sh up: two nodes Ready in $(($(date +%s) - t0)) s"
eval "$(grep '^export KUBECONFIG=' "$T/up.out")"
PUSH=$(sed -n 's/^push: //p' "$T/up.out")
grep -q '^image: docker.io/library/mcgit:' "$T/up.out" && ok "up names the image it loaded" || bad "no image: line"
ex() { local n=$1; shift; "$C" exec "$n" -- "$@"; }
ann() { kubectl get node "$1" -o jsonpath="{.metadata.annotations.machineconfiguration\.mcgit\.io/$2}" 2>/dev/null; }
bootid() { ex "$1" cat /proc/sys/kernel/random/boot_id 2>/dev/null; }
# done_at NODE CFG: Done at CFG (CFG empty: at any config), schedulable, Ready
done_at() {
  [ "$(ann "$1" state)" = Done ] || return 1
  [ -n "$(ann "$1" currentConfig)" ] && [ "$(ann "$1" currentConfig)" = "$(ann "$1" desiredConfig)" ] || return 1
  [ -z "$2" ] || [ "$(ann "$1" currentConfig)" = "$2" ] || return 1
  [ "$(kubectl get node "$1" -o jsonpath='{.spec.unschedulable}')" != true ] || return 1
  [ "$(kubectl get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}
target() { kubectl get mcp worker -o jsonpath='{.spec.configuration.name}' 2>/dev/null; }
# busy: how many nodes are cordoned or not Done at their desired config
busy() {
  local n c=0
  for n in n1 n2; do
    if [ "$(kubectl get node "$n" -o jsonpath='{.spec.unschedulable}' 2>/dev/null)" = true ] ||
       [ "$(ann "$n" state)" != Done ] || [ "$(ann "$n" currentConfig)" != "$(ann "$n" desiredConfig)" ]; then
      c=$((c + 1))
    fi
  done
  echo "$c"
}
pod_logs() { # the mcgit pods' logs, read on the nodes (the apiserver cannot reach a kubelet here)
  local n
  for n in n1 n2; do ex "$n" sh -c 'tail -n 30 /var/log/pods/mcgit_*/*/*.log' 2>/dev/null | sed "s/^/    $n: /"; done
}

# ------------------------------------------------------------ deploy
R=$T/repo
fixture_signed_repo "$R"
scommit "$R" op "initial"
t1=$(date +%s)
if "$C" deploy "$D" --trust "$T/trust" >"$T/deploy.log" 2>&1; then ok "cluster.sh deploy: deploy/ applied as docs/kubernetes.md says"
else bad "cluster.sh deploy"; tail -10 "$T/deploy.log" | sed 's/^/    /'; fi
git -C "$R" push -q "$PUSH" main 2>"$T/push.err" && ok "signed push to the bed's repository (its hooks verify)" ||
  { bad "push"; sed 's/^/    /' "$T/push.err"; }
end=$(($(date +%s) + 900))
until done_at n1 "$(target)" && done_at n2 "$(target)" && [ -n "$(target)" ]; do
  [ "$(date +%s)" -lt "$end" ] || break
  sleep 5
done
if done_at n1 "$(target)" && done_at n2 "$(target)"; then
  ok "the controller pod and the agent pods bring both nodes to the pool's first config in $(($(date +%s) - t1)) s"
else
  bad "first config not reached: n1 $(ann n1 state) n2 $(ann n2 state) target $(target)"
  kubectl -n mcgit get pods -o wide | sed 's/^/    /'; pod_logs
fi

# ------------------------------------------------------------ scenario 1
s1() {
  local s=$(date +%s) old b1 b2 end b max=0 samples=0 t
  old=$(target)
  b1=$(bootid n1) b2=$(bootid n2)
  mkdir -p "$R/machineconfigs"
  write_mc "$R" 10-bed worker /etc/mcgit-bed/f v2
  scommit "$R" op "bed: /etc/mcgit-bed/f v2 (a reboot)"
  git -C "$R" push -q "$PUSH" main 2>"$T/push.err" || { bad "1: push"; sed 's/^/    /' "$T/push.err"; }
  : >"$T/samples"
  end=$(($(date +%s) + 1500))
  while [ "$(date +%s)" -lt "$end" ]; do
    t=$(target)
    b=$(busy)
    samples=$((samples + 1))
    echo "$(date +%s) busy=$b n1=$(ann n1 state) n2=$(ann n2 state) target=$t" >>"$T/samples"
    [ "$b" -gt "$max" ] && max=$b
    [ -n "$t" ] && [ "$t" != "$old" ] && done_at n1 "$t" && done_at n2 "$t" && break
    sleep 3
  done
  t=$(target)
  if [ "$t" != "$old" ] && done_at n1 "$t" && done_at n2 "$t"; then
    ok "1: the push rolled out to both nodes: Done at $t, uncordoned, Ready ($(($(date +%s) - s)) s)"
  else
    bad "1: rollout did not finish: n1 $(ann n1 state) n2 $(ann n2 state), target $t"
    tail -5 "$T/samples" | sed 's/^/    /'; kubectl -n mcgit get pods -o wide | sed 's/^/    /'; pod_logs
  fi
  [ "$max" = 1 ] && ok "1: one node at a time (maxUnavailable 1; $samples samples, at most $max busy)" ||
    { bad "1: $max nodes busy at once"; grep -v 'busy=0' "$T/samples" | head | sed 's/^/    /'; }
  [ "$(ex n1 cat /etc/mcgit-bed/f 2>/dev/null)$(ex n2 cat /etc/mcgit-bed/f 2>/dev/null)" = v2v2 ] &&
    ok "1: /etc/mcgit-bed/f is v2 on both real hosts" || bad "1: the file is not on the hosts"
  [ -n "$b1" ] && [ "$(bootid n1)" != "$b1" ] && [ -n "$b2" ] && [ "$(bootid n2)" != "$b2" ] &&
    ok "1: both hosts really rebooted (boot ids changed)" || bad "1: a host did not reboot"
  kubectl get events -n default --field-selector involvedObject.kind=Node -o jsonpath='{range .items[*]}{.involvedObject.name} {.reason}{"\n"}{end}' >"$T/events" 2>/dev/null || true
  for r in Cordon Drain Reboot Uncordon; do
    [ "$(grep -c " $r\$" "$T/events")" -ge 2 ] && ok "1: both nodes recorded $r" || bad "1: $r events: $(grep -c " $r\$" "$T/events")"
  done
  kubectl get mcp worker >"$T/mcp" 2>&1 || true
  awk 'NR == 2 {exit !($3 == "True" && $4 == "False" && $5 == "False")}' "$T/mcp" &&
    ok "1: kubectl get mcp worker: Updated True, Updating False, Degraded False" || { bad "1: kubectl get mcp"; sed 's/^/    /' "$T/mcp"; }
  timed 1 "$s"
}

# ------------------------------------------------------------ scenario 6
s6() {
  local s=$(date +%s) pod
  pod=$(kubectl -n mcgit get pods -l app.kubernetes.io/name=mcgit-agent --field-selector spec.nodeName=n1 -o jsonpath='{.items[0].metadata.name}')
  [ -n "$pod" ] || { bad "6: no agent pod on n1"; return; }
  # the pod's own root (its overlay) seen from the host: /proc/PID/root of its mcgit
  ex n1 sh -c 'for p in $(pgrep -f "^/usr/bin/mcgit agent"); do r=$(readlink /proc/$p/root); [ "$r" = / ] && continue; echo "$p"; done' >"$T/agentpid" 2>/dev/null || true
  local p
  p=$(head -1 "$T/agentpid")
  if [ -n "$p" ] && ex n1 test -f /etc/mcgit-bed/f && ! ex n1 test -e "/proc/$p/root/etc/mcgit-bed/f"; then
    ok "6: the agent pod wrote the host's /etc/mcgit-bed/f through /rootfs; its own root holds no such file"
  else
    bad "6: pid '$p': host file or pod root check failed"
  fi
  ex n1 test -d /var/lib/mcgit && ok "6: its journal and backups are on the host (/var/lib/mcgit)" || bad "6: no /var/lib/mcgit on the host"
  timed 6 "$s"
}

for sc in "${scen[@]}"; do "s$sc"; done
echo "# total: $(($(date +%s) - t0)) s"
finish
