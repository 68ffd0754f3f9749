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
#   2  a pod under a PodDisruptionBudget (its status computed by the real
#      disruption controller) holds its node's drain: cordoned, the pod
#      running, the other node untouched; after the drain timeout (90 s
#      here) the node and the pool say why; the budget relaxed, the rollout
#      completes
#   3  the controller pod holding the Lease deleted mid-rollout, and the
#      agent pod of the node being updated: the rollout completes, each node
#      rebooted into the new config once, none left cordoned
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
  --all) scen=(1 2 3 6) ;;
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
  local s=$(date +%s) p
  # the agent's process on n1, seen from the host: /proc/PID/root is the
  # pod's own root file system, /proc/PID/root/rootfs the host's, mounted
  p=$(ex n1 pgrep -f -o '^/usr/bin/mcgit agent' 2>/dev/null | head -1)
  [ -n "$p" ] || { bad "6: no agent process on n1"; return; }
  ex n1 test -f "/proc/$p/root/usr/bin/mcgit" && ex n1 test -f "/proc/$p/root/rootfs/etc/mcgit-bed/f" &&
    ok "6: the agent (pid $p) runs in its image and sees the host's file at /rootfs/etc/mcgit-bed/f" ||
    bad "6: the agent's root or its /rootfs mount is not as expected"
  ex n1 test -e "/proc/$p/root/etc/mcgit-bed/f" && bad "6: the agent wrote into its own root" ||
    ok "6: the pod's own root holds no /etc/mcgit-bed/f: the host's root is what it wrote"
  ex n1 test -f /etc/mcgit-bed/f && ok "6: the file is on the host's root" || bad "6: not on the host"
  ex n1 test -d /var/lib/mcgit && ok "6: its journal and backups are on the host (/var/lib/mcgit)" || bad "6: no /var/lib/mcgit on the host"
  timed 6 "$s"
}

# ------------------------------------------------------------ scenario 2
# A pod under a PodDisruptionBudget that the real disruption controller
# computes (disruptionsAllowed 0) holds its node's drain: the node stays
# cordoned with the pod running, the other node waits (maxUnavailable 1);
# after the drain timeout the node and the pool say why (the pod, the
# budget); once the budget allows, the rollout completes.
s2() {
  local s=$(date +%s) old t end held=0 other_busy=0 m
  kubectl create namespace apps >/dev/null 2>&1 || true
  kubectl apply -f - >/dev/null <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: db, namespace: apps}
spec:
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      nodeSelector: {kubernetes.io/hostname: n1}
      terminationGracePeriodSeconds: 5
      containers: [{name: db, image: mcgit.test/pause:1, imagePullPolicy: IfNotPresent}]
---
apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata: {name: db, namespace: apps}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: db}}
YAML
  end=$(($(date +%s) + 300))
  until [ "$(kubectl -n apps get pdb db -o jsonpath='{.status.currentHealthy}/{.status.disruptionsAllowed}' 2>/dev/null)" = 1/0 ]; do
    [ "$(date +%s)" -lt "$end" ] || break
    sleep 3
  done
  [ "$(kubectl -n apps get pdb db -o jsonpath='{.status.currentHealthy}/{.status.disruptionsAllowed}')" = 1/0 ] &&
    ok "2: the disruption controller computes the budget: 1 healthy, 0 disruptions allowed" ||
    bad "2: budget status: $(kubectl -n apps get pdb db -o jsonpath='{.status}')"
  # a short drain timeout for the test (the default is 600 s)
  kubectl -n mcgit set env daemonset/mcgit-agent MCGIT_KUBE_DRAIN_TIMEOUT=90 >/dev/null
  kubectl -n mcgit rollout status daemonset/mcgit-agent --timeout=900s >/dev/null 2>&1 ||
    bad "2: the agent DaemonSet did not roll out its new setting"
  old=$(target)
  write_mc "$R" 10-bed worker /etc/mcgit-bed/f v3
  scommit "$R" op "bed: /etc/mcgit-bed/f v3 (a reboot)"
  git -C "$R" push -q "$PUSH" main 2>"$T/push.err" || bad "2: push"
  end=$(($(date +%s) + 1500))
  while [ "$(date +%s)" -lt "$end" ]; do
    if [ "$(ann n1 state)" = Degraded ]; then break; fi
    if [ "$(kubectl get node n1 -o jsonpath='{.spec.unschedulable}')" = true ]; then
      held=$((held + 1))
      [ "$(kubectl get node n2 -o jsonpath='{.spec.unschedulable}')" = true ] && other_busy=$((other_busy + 1))
    fi
    sleep 3
  done
  [ "$(ann n1 state)" = Degraded ] && ok "2: n1's drain held by the budget until the drain timeout: Degraded" ||
    bad "2: n1 is $(ann n1 state), not Degraded"
  ann n1 reason >"$T/reason"; echo >>"$T/reason"
  expect_grep "pod apps/db-.*disruption budget" "$T/reason" "2: the node's reason names the pod and the budget"
  [ "$(kubectl -n apps get pods -l app=db -o jsonpath='{.items[0].spec.nodeName} {.items[0].status.phase}')" = "n1 Running" ] &&
    ok "2: the pod still runs on n1" || bad "2: the db pod moved or stopped"
  [ "$held" -gt 0 ] && [ "$other_busy" = 0 ] && ok "2: while n1 was held ($held samples) n2 was never cordoned" ||
    bad "2: n2 cordoned during n1's hold ($other_busy of $held samples)"
  kubectl get mcp worker -o jsonpath='{range .status.conditions[?(@.type=="Degraded")]}{.status} {.message}{end}' >"$T/pool"; echo >>"$T/pool"
  expect_grep "^True .*n1.*apps/db" "$T/pool" "2: the pool is Degraded and says why (the node, the pod)"
  # the budget relaxed: the rollout completes
  kubectl -n apps patch pdb db --type merge -p '{"spec":{"minAvailable":0}}' >/dev/null
  end=$(($(date +%s) + 1500))
  until t=$(target) && [ "$t" != "$old" ] && done_at n1 "$t" && done_at n2 "$t"; do
    [ "$(date +%s)" -lt "$end" ] || break
    sleep 5
  done
  t=$(target)
  [ "$t" != "$old" ] && done_at n1 "$t" && done_at n2 "$t" &&
    ok "2: once the budget allows, the rollout completes on both nodes" ||
    { bad "2: not converged after the budget allowed: n1 $(ann n1 state) ($(ann n1 reason)) n2 $(ann n2 state)"; pod_logs; }
  timed 2 "$s"
}

# ------------------------------------------------------------ scenario 3
# The controller pod holding the Lease deleted mid-rollout, and the agent pod
# of the node being updated deleted mid-update: the rollout completes, each
# node rebooted into the new config once, none left cordoned, one at a time.
s3() {
  local s=$(date +%s) old t end leader n= max=0 b killed_agent=0 killed_ctl=0
  old=$(target)
  write_mc "$R" 10-bed worker /etc/mcgit-bed/f v4
  scommit "$R" op "bed: /etc/mcgit-bed/f v4 (a reboot)"
  git -C "$R" push -q "$PUSH" main 2>"$T/push.err" || bad "3: push"
  : >"$T/samples3"
  end=$(($(date +%s) + 1800))
  while [ "$(date +%s)" -lt "$end" ]; do
    b=$(busy)
    [ "$b" -gt "$max" ] && max=$b
    echo "$(date +%s) busy=$b n1=$(ann n1 state) n2=$(ann n2 state)" >>"$T/samples3"
    if [ "$killed_ctl" = 0 ] && [ "$b" -gt 0 ]; then
      leader=$(kubectl -n mcgit get lease mcgit-controller -o jsonpath='{.spec.holderIdentity}' 2>/dev/null)
      if [ -n "$leader" ] && kubectl -n mcgit delete pod "$leader" --wait=false >/dev/null 2>&1; then
        killed_ctl=1
        echo "# 3: deleted the leader $leader mid-rollout"
      fi
    fi
    if [ "$killed_agent" = 0 ] && [ "$killed_ctl" = 1 ]; then
      for n in n1 n2; do
        [ "$(ann "$n" state)" = Working ] || continue
        kubectl -n mcgit delete pod -l app.kubernetes.io/name=mcgit-agent --field-selector "spec.nodeName=$n" \
          --wait=false >/dev/null 2>&1 && { killed_agent=1; echo "# 3: deleted the agent pod of $n mid-update"; break; }
      done
    fi
    t=$(target)
    [ -n "$t" ] && [ "$t" != "$old" ] && done_at n1 "$t" && done_at n2 "$t" && break
    sleep 3
  done
  t=$(target)
  [ "$killed_ctl" = 1 ] && [ "$killed_agent" = 1 ] && ok "3: the leader's pod and a working node's agent pod deleted mid-rollout" ||
    bad "3: could not delete them mid-rollout (controller $killed_ctl, agent $killed_agent)"
  [ "$t" != "$old" ] && done_at n1 "$t" && done_at n2 "$t" &&
    ok "3: the rollout completes: both Done at $t, uncordoned, Ready ($(($(date +%s) - s)) s)" ||
    { bad "3: not converged: n1 $(ann n1 state) n2 $(ann n2 state)"; pod_logs; }
  [ "$max" -le 1 ] && ok "3: never more than one node busy" || bad "3: $max nodes busy at once"
  kubectl get events -n default --field-selector reason=Reboot -o jsonpath='{range .items[*]}{.involvedObject.name} {.message}{"\n"}{end}' >"$T/reboots" 2>/dev/null || true
  for n in n1 n2; do
    [ "$(grep -c "^$n .*$t" "$T/reboots")" = 1 ] && ok "3: $n rebooted into $t once" ||
      bad "3: $n rebooted into $t $(grep -c "^$n .*$t" "$T/reboots") times"
  done
  timed 3 "$s"
}

for sc in "${scen[@]}"; do "s$sc"; done
echo "# total: $(($(date +%s) - t0)) s"
finish
