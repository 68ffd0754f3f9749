#!/usr/bin/env bash
# deploy/'s manifests, read statically (no cluster): least privilege and Pod
# Security.
#   RBAC (deploy/rbac.yaml): no wildcard group, resource or verb; no Secret
#     (nor ConfigMap) readable through the API by either account, anywhere;
#     no escalate, bind or impersonate; nodes patched, never replaced or
#     created; the agent writes no MachineConfig nor pool, the controller
#     evicts no pod; every binding names only mcgit's two accounts.
#   Images: every container of deploy/'s Deployments and DaemonSets has
#     imagePullPolicy IfNotPresent, so an image loaded without a registry is
#     used (with :latest the default policy is Always, and the pull fails).
#   The controller's replicas prefer different nodes (one drain evicts one).
#   Pod Security: agent.yaml's privileged pods run in a namespace that
#     namespace.yaml labels pod-security.kubernetes.io/enforce=privileged, and
#     docs/kubernetes.md tells the user so.
# The checker is shown to refuse copies with each defect first.
# (What the roles allow on a real API server: test_kube_deploy.sh.)
. "$(dirname "$0")/lib.sh"
need python3
python3 -c 'import yaml' 2>/dev/null || skip "python3-yaml not installed"
cat >"$T/check.py" <<'PY'
import sys, yaml
rbac, ns, agent = sys.argv[1:4]
bad = []
docs = [d for d in yaml.safe_load_all(open(rbac)) if d]
sas = {("mcgit", "mcgit-controller"), ("mcgit", "mcgit-agent")}
roles = {}
for d in docs:
    k, name = d.get("kind"), d["metadata"]["name"]
    if k in ("ClusterRole", "Role"):
        roles[(k, name)] = d.get("rules", [])
        for i, r in enumerate(d.get("rules", [])):
            where = "%s %s rule %d" % (k, name, i + 1)
            for f in ("apiGroups", "resources", "verbs"):
                if "*" in r.get(f, []):
                    bad.append("%s: wildcard in %s" % (where, f))
            res = set(r.get("resources", []))
            verbs = set(r.get("verbs", []))
            for s in ("secrets", "configmaps"):
                if s in res:
                    bad.append("%s: grants %s (%s)" % (where, s, ",".join(sorted(verbs))))
            for v in ("escalate", "bind", "impersonate"):
                if v in verbs:
                    bad.append("%s: grants %s" % (where, v))
            if "nodes" in res and verbs & {"update", "create", "delete", "deletecollection"}:
                bad.append("%s: nodes may be %s (mcgit only patches them)" %
                           (where, ",".join(sorted(verbs & {"update", "create", "delete", "deletecollection"}))))
            if "nodes/status" in res or "pods" in res and verbs - {"get", "list", "watch"}:
                bad.append("%s: writes pods or node status" % where)
            if name == "mcgit-agent" and res & {"machineconfigs", "machineconfigpools", "machineconfigpools/status",
                                                "machineconfigurations"} and verbs - {"get", "list", "watch"}:
                bad.append("%s: the agent may write %s" % (where, ",".join(sorted(res))))
            if name.startswith("mcgit-controller") and "pods/eviction" in res:
                bad.append("%s: the controller may evict pods" % where)
    if k in ("ClusterRoleBinding", "RoleBinding"):
        for s in d.get("subjects", []):
            if (s.get("kind"), s.get("namespace"), s.get("name")) not in {("ServiceAccount",) + x for x in sas}:
                bad.append("%s %s: binds %s %s" % (k, name, s.get("kind"), s.get("name")))
        ref = d["roleRef"]
        if ref["name"] in ("cluster-admin", "admin", "edit", "view"):
            bad.append("%s %s: binds the built-in role %s" % (k, name, ref["name"]))
nsdoc = yaml.safe_load(open(ns))
labels = (nsdoc.get("metadata") or {}).get("labels") or {}
a = yaml.safe_load(open(agent))
priv = any((c.get("securityContext") or {}).get("privileged") for c in a["spec"]["template"]["spec"]["containers"])
if priv and labels.get("pod-security.kubernetes.io/enforce") != "privileged":
    bad.append("%s: namespace %s runs the privileged agent but is not labelled "
               "pod-security.kubernetes.io/enforce=privileged" % (ns, nsdoc["metadata"]["name"]))
if a["metadata"].get("namespace") != nsdoc["metadata"]["name"]:
    bad.append("%s: the agent is not in namespace %s" % (agent, nsdoc["metadata"]["name"]))
import glob, os
for f in sorted(glob.glob(os.path.join(os.path.dirname(rbac), "*.yaml"))):
    for d in yaml.safe_load_all(open(f)):
        if not d or d.get("kind") not in ("Deployment", "DaemonSet"):
            continue
        for c in d["spec"]["template"]["spec"]["containers"]:
            if c.get("imagePullPolicy") != "IfNotPresent":
                bad.append("%s: container %s pulls %s with policy %s, not IfNotPresent (no registry: "
                           "the loaded image must do)" % (f, c["name"], c["image"], c.get("imagePullPolicy", "the default")))
for f in sorted(glob.glob(os.path.join(os.path.dirname(rbac), "controller.yaml"))):
    d = yaml.safe_load(open(f))
    aff = (d["spec"]["template"]["spec"].get("affinity") or {}).get("podAntiAffinity") or {}
    terms = aff.get("preferredDuringSchedulingIgnoredDuringExecution") or []
    if d["spec"].get("replicas", 1) > 1 and not any(
            t["podAffinityTerm"].get("topologyKey") == "kubernetes.io/hostname" for t in terms):
        bad.append("%s: %d replicas but no anti-affinity spreading them over nodes" % (f, d["spec"]["replicas"]))
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY
D=$SRC/deploy
chk() { python3 "$T/check.py" "$@"; }
# the checker refuses each defect first
sed '0,/resources: \[pods\]/s//resources: [pods, secrets]/' "$D/rbac.yaml" >"$T/secrets.yaml"
expect_rc 1 "refuses a role that reads Secrets cluster-wide" -- chk "$T/secrets.yaml" "$D/namespace.yaml" "$D/agent.yaml"
expect_grep 'ClusterRole mcgit-agent rule [0-9]+: grants secrets' "$T/out" "names the role, the rule and secrets"
sed '0,/verbs: \[get, list, watch, patch\]/s//verbs: ["*"]/' "$D/rbac.yaml" >"$T/wild.yaml"
expect_rc 1 "refuses a wildcard verb" -- chk "$T/wild.yaml" "$D/namespace.yaml" "$D/agent.yaml"
expect_grep 'wildcard in verbs' "$T/out" "names the wildcard"
sed '0,/verbs: \[get, list, watch, patch\]/s//verbs: [get, list, watch, patch, update]/' "$D/rbac.yaml" >"$T/upd.yaml"
expect_rc 1 "refuses replacing nodes" -- chk "$T/upd.yaml" "$D/namespace.yaml" "$D/agent.yaml"
sed '/pod-security.kubernetes.io\/enforce/d' "$D/namespace.yaml" >"$T/ns.yaml"
expect_rc 1 "refuses a privileged agent in a namespace not labelled privileged" -- chk "$D/rbac.yaml" "$T/ns.yaml" "$D/agent.yaml"
expect_grep 'not labelled pod-security.kubernetes.io/enforce=privileged' "$T/out" "names the missing label"
mkdir -p "$T/pull"; cp "$D"/*.yaml "$T/pull/"
sed -i '/imagePullPolicy/d' "$T/pull/agent.yaml"
expect_rc 1 "refuses a DaemonSet pulling :latest every time" -- chk "$T/pull/rbac.yaml" "$T/pull/namespace.yaml" "$T/pull/agent.yaml"
expect_grep 'container agent pulls mcgit:latest with policy the default' "$T/out" "names the container and the image"
cp "$D"/*.yaml "$T/pull/"
python3 - "$T/pull/controller.yaml" <<'PY'
import sys, yaml
d = yaml.safe_load(open(sys.argv[1])); del d["spec"]["template"]["spec"]["affinity"]
yaml.safe_dump(d, open(sys.argv[1], "w"))
PY
expect_rc 1 "refuses two controller replicas free to share a node" -- chk "$T/pull/rbac.yaml" "$T/pull/namespace.yaml" "$T/pull/agent.yaml"
expect_grep 'no anti-affinity' "$T/out" "names the missing anti-affinity"
# deploy/ as it is
expect_rc 0 "deploy/rbac.yaml: least privilege; namespace.yaml: Pod Security privileged" -- chk "$D/rbac.yaml" "$D/namespace.yaml" "$D/agent.yaml"
sed 's/^/    /' "$T/out"
grep -q 'pod-security.kubernetes.io/enforce=privileged' "$SRC/docs/kubernetes.md" &&
  ok "docs/kubernetes.md names the Pod Security label" || bad "docs/kubernetes.md does not name pod-security.kubernetes.io/enforce=privileged"
finish
