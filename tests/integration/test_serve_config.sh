#!/usr/bin/env bash
# `mcgit serve-config`: a pool's current rendered config to a machine at its
# first boot, on 127.0.0.1 with curl: the bearer token (missing, wrong,
# rotated), unknown pools, each format (Ignition, cloud-init user-data, the
# spec whose bytes hash to the config's name), the headers that trace it to
# the rendered and the signed source commit, an unsigned commit that changes
# nothing served, and a stalled client cut by the listener's deadline.
# (A fresh VM booting from it is the VM test bed's part, not this test's.)
. "$(dirname "$0")/lib.sh"
need curl
need python3
need ssh-keygen

R=$T/cfg
"$MCGIT" import-mco --from "$FIXTURES/mco-export/cluster.yaml" "$R" >/dev/null
# beside the export: a directory, a link, a file owned by core, a masked unit
cat >"$R/machineconfigs/61-worker-dirs.yaml" <<'MC'
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata: {name: 61-worker-dirs, labels: {machineconfiguration.openshift.io/role: worker}}
spec:
  config:
    ignition: {version: 3.4.0}
    storage:
      directories:
      - {path: /var/lib/example, mode: 0750}
      links:
      - {path: /etc/example-link, target: /var/lib/example}
      files:
      - path: /etc/example/owned.conf
        contents: {source: "data:,x"}
        user: {name: core}
        group: {name: core}
    systemd:
      units:
      - {name: bluetooth.service, mask: true}
MC
mkkey op ed25519
signer_line "op@example.com" op >"$T/trust"
sign_setup "$R" "$T/trust"
scommit "$R" op "Imported"
"$MCGIT" render --repo "$R" --trust "$T/trust" >"$T/names"
WORKER=$(awk '$1=="worker"{print $2}' "$T/names")
printf 'first-token\n' >"$T/token"

"$MCGIT" serve-config --repo "$R" --trust "$T/trust" --token-file "$T/token" --listen 127.0.0.1:0 >"$T/serve.out" 2>"$T/serve.log" &
SPID=$!
PIDS+=("$SPID")
for _ in $(seq 50); do grep -q "^listening on port" "$T/serve.out" 2>/dev/null && break; sleep 0.1; done
PORT=$(awk '/^listening on port/{print $4}' "$T/serve.out")
[ -n "$PORT" ] && ok "serve-config listens on 127.0.0.1:$PORT" || { bad "serve-config did not start"; cat "$T/serve.log"; finish; exit 1; }
URL=http://127.0.0.1:$PORT/config

# get NAME TOKEN ACCEPT PATH: body in $T/NAME.body, headers in $T/NAME.hdr, status printed
get() {
  local auth=() acc=()
  [ -n "$2" ] && auth=(-H "Authorization: $2")
  [ -n "$3" ] && acc=(-H "Accept: $3")
  curl -s --max-time 10 "${auth[@]}" "${acc[@]}" -D "$T/$1.hdr" -o "$T/$1.body" -w '%{http_code}' "$URL/$4"
}
hdr() { tr -d '\r' <"$T/$1.hdr" | awk -v h="$2" 'tolower($1)==tolower(h)":" {print $2}'; }

[ "$(get none "" "" worker)" = 401 ] && ok "no token: 401" || bad "no token: not 401"
[ "$(get wrong "Bearer second-token" "" worker)" = 401 ] && ok "a wrong token: 401" || bad "wrong token: not 401"
[ "$(get basic "Basic first-token" "" worker)" = 401 ] && ok "the token not as a bearer token: 401" || bad "Basic: not 401"
[ "$(get prefix "Bearer first-toke" "" worker)" = 401 ] && ok "a prefix of the token: 401" || bad "prefix: not 401"
if grep -q "first-token" "$T"/none.body "$T"/wrong.body "$T"/basic.body "$T/serve.log"; then bad "the token appears in an answer or the log"; else ok "the token never appears in answers or the log"; fi
[ "$(get nopool "Bearer first-token" "" infra)" = 404 ] && ok "an unknown pool: 404" || bad "unknown pool: not 404"
[ "$(get trav "Bearer first-token" "" "..%2F..%2Fetc%2Fpasswd")" = 404 ] && ok "a path that is not a pool name: 404" || bad "traversal: not 404"
[ "$(get html "Bearer first-token" "text/html" worker)" = 406 ] && ok "an Accept it cannot serve: 406" || bad "text/html: not 406"
code=$(curl -s --max-time 10 -X POST -H "Authorization: Bearer first-token" -o /dev/null -w '%{http_code}' "$URL/worker")
[ "$code" = 400 ] && ok "POST: refused ($code)" || bad "POST: $code"

# The spec: its bytes hash to the config's name
[ "$(get spec "Bearer first-token" "application/vnd.mcgit.rendered+json" worker)" = 200 ] && ok "the spec of worker: 200" || bad "spec: not 200"
sum=$(sha256sum "$T/spec.body" | cut -d' ' -f1)
[ "$(hdr spec X-Mcgit-Config)" = "$WORKER" ] && ok "X-Mcgit-Config names the pool's current config ($WORKER)" || bad "X-Mcgit-Config $(hdr spec X-Mcgit-Config), want $WORKER"
[ "$(hdr spec X-Mcgit-Spec-Sha256)" = "$sum" ] && [ "rendered-worker-${sum:0:32}" = "$WORKER" ] &&
  ok "the served bytes hash to the config's name and to X-Mcgit-Spec-Sha256" || bad "hash $sum vs $(hdr spec X-Mcgit-Spec-Sha256) vs $WORKER"
[ "$(hdr spec X-Mcgit-Rendered-Commit)" = "$(git -C "$R" rev-parse rendered)" ] && ok "X-Mcgit-Rendered-Commit is the rendered branch's tip" || bad "rendered commit header"
[ "$(hdr spec X-Mcgit-Source-Commit)" = "$(git -C "$R" rev-parse main)" ] && git -C "$R" verify-commit "$(hdr spec X-Mcgit-Source-Commit)" 2>/dev/null &&
  ok "X-Mcgit-Source-Commit is the signed source commit (git verify-commit)" || bad "source commit header"

# Ignition: the spec's config
[ "$(get ign "Bearer first-token" "application/vnd.coreos.ignition+json" worker)" = 200 ] && ok "Ignition: 200" || bad "Ignition: not 200"
[ "$(tr -d '\r' <"$T/ign.hdr" | awk 'tolower($1)=="content-type:"{print $2}')" = application/vnd.coreos.ignition+json ] && ok "Ignition's Content-Type" || bad "Ignition content type"
get default "Bearer first-token" "" worker >/dev/null
if cmp -s "$T/ign.body" "$T/default.body"; then ok "no Accept: Ignition, as MCO's server"; else bad "no Accept gives another body"; fi
python3 - "$T/ign.body" "$T/spec.body" >"$T/ign.check" <<'PY'
import json, sys
ign = json.load(open(sys.argv[1])); spec = json.load(open(sys.argv[2]))
print("same" if ign == spec["config"] and ign["ignition"]["version"].startswith("3.") else "differs")
PY
expect_grep "^same$" "$T/ign.check" "the Ignition config is the rendered spec's config"

# cloud-init: the same files and units, then the agent
[ "$(get cc "Bearer first-token" "text/cloud-config" worker)" = 200 ] && ok "cloud-init: 200" || bad "cloud-init: not 200"
python3 - "$T/cc.body" "$T/spec.body" >"$T/cc.check" <<'PY'
import base64, json, sys, urllib.parse, yaml
text = open(sys.argv[1]).read()
spec = json.load(open(sys.argv[2]))["config"]
assert text.startswith("#cloud-config\n"), "no #cloud-config line"
cc = yaml.safe_load(text)
wf = {f["path"]: (base64.b64decode(f["content"]), f["permissions"]) for f in cc["write_files"]}
bad = 0
for f in spec["storage"]["files"]:
    src = f["contents"]["source"]
    head, data = src.split(",", 1)
    want = base64.b64decode(data) if head.endswith(";base64") else urllib.parse.unquote_to_bytes(data)
    if wf.get(f["path"]) != (want, "0%o" % f.get("mode", 0o644)):
        print("file differs:", f["path"]); bad += 1
for u in spec["systemd"]["units"]:
    if "contents" in u and wf.get("/etc/systemd/system/" + u["name"], (None,))[0] != u["contents"].encode():
        print("unit differs:", u["name"]); bad += 1
    for d in u.get("dropins", []):
        if wf.get("/etc/systemd/system/%s.d/%s" % (u["name"], d["name"]), (None,))[0] != d["contents"].encode():
            print("dropin differs:", d["name"]); bad += 1
    if u.get("enabled") and ["systemctl", "enable", "--", u["name"]] not in cc["runcmd"]:
        print("not enabled:", u["name"]); bad += 1
keys = wf.get("/home/core/.ssh/authorized_keys.d/ignition", (b"",))[0].decode().split("\n")
if keys[:-1] != spec["passwd"]["users"][0]["sshAuthorizedKeys"]:
    print("keys differ"); bad += 1
for c in (["install", "-d", "-m", "0750", "--", "/var/lib/example"],
          ["ln", "-sfn", "--", "/var/lib/example", "/etc/example-link"],
          ["chown", "-h", "--", "core:core", "/etc/example/owned.conf"],
          ["systemctl", "mask", "--", "bluetooth.service"], ["systemctl", "daemon-reload"]):
    if c not in cc["runcmd"]:
        print("missing runcmd:", c); bad += 1
if cc["runcmd"][-1] != ["systemctl", "enable", "--now", "mcgit-agent.service"]:
    print("agent not started last"); bad += 1
print("bad", bad)
PY
expect_grep "^bad 0$" "$T/cc.check" "cloud-init writes every file (mode), unit, drop-in and core's keys; makes the directory, the link, the owner; enables and masks units; starts the agent"
expect_grep "^# mcgit: $WORKER \(rendered commit [0-9a-f]{40}, source [0-9a-f]{40}\)$" "$T/cc.body" "the user-data names the config and its commits"

# An unsigned commit changes nothing served; a signed one does
write_mc "$R" 60-worker-extra worker /etc/extra.conf v1
scommit "$R" - "unsigned"
[ "$(get spec2 "Bearer first-token" "application/vnd.mcgit.rendered+json" worker)" = 200 ] && cmp -s "$T/spec.body" "$T/spec2.body" &&
  [ "$(hdr spec2 X-Mcgit-Config)" = "$WORKER" ] && ok "after an unsigned commit: the last good config is served" || bad "unsigned commit changed what is served"
[ -n "$(hdr spec2 X-Mcgit-Render-Problem)" ] && ok "... and X-Mcgit-Render-Problem says why"; echo "# $(grep -i "^X-Mcgit-Render-Problem" "$T/spec2.hdr")" || bad "no render problem header"
git -C "$R" reset -q --hard HEAD~1
write_mc "$R" 60-worker-extra worker /etc/extra.conf v2
scommit "$R" op "signed extra"
[ "$(get spec3 "Bearer first-token" "application/vnd.mcgit.rendered+json" worker)" = 200 ] && [ "$(hdr spec3 X-Mcgit-Config)" != "$WORKER" ] &&
  [ "$(hdr spec3 X-Mcgit-Source-Commit)" = "$(git -C "$R" rev-parse main)" ] &&
  [ "rendered-worker-$(sha256sum "$T/spec3.body" | cut -c1-32)" = "$(hdr spec3 X-Mcgit-Config)" ] &&
  ok "a signed commit: its render is served at the next request, traced to it" || bad "signed commit not served"

# First boot on a simulated Debian node: the user-data served for worker,
# carried out under the node's root as cloud-init would (write_files,
# runcmd), then the node's first agent pass: Done on the served config with
# no reboot, no drain and no file rewritten.
CL=$T/cl
"$MCGIT" node add --cluster "local:$CL" n1 --labels node-role.kubernetes.io/worker= >/dev/null
NR=$CL/roots/n1
mkdir -p "$NR/etc" "$NR/home/core"
printf 'root:x:0:0::/root:/bin/sh\ncore:x:1000:1000::/home/core:/bin/sh\n' >"$NR/etc/passwd"
printf 'root:x:0:\ncore:x:1000:\n' >"$NR/etc/group"
[ "$(get boot "Bearer first-token" "text/cloud-config" worker)" = 200 ] && ok "the new machine's user-data: 200" || bad "user-data: not 200"
BOOTCFG=$(hdr boot X-Mcgit-Config)
python3 - "$T/boot.body" "$NR" >"$T/cloudinit.log" <<'PY'
import base64, os, sys, yaml
cc = yaml.safe_load(open(sys.argv[1])); root = sys.argv[2]
ids = {l.split(":")[0]: int(l.split(":")[2]) for l in open(root + "/etc/passwd")}
def at(p): return root + p
for f in cc["write_files"]:
    os.makedirs(os.path.dirname(at(f["path"])), exist_ok=True)
    with open(at(f["path"]), "wb") as o:
        o.write(base64.b64decode(f["content"]))
    os.chmod(at(f["path"]), int(f["permissions"], 8))
    if "owner" in f:
        u, g = f["owner"].split(":"); os.chown(at(f["path"]), ids[u], ids[g])
for c in cc["runcmd"]:
    if c[:2] == ["install", "-d"] and c[4] == "--":
        os.makedirs(at(c[5]), exist_ok=True); os.chmod(at(c[5]), int(c[3], 8))
    elif c[:2] == ["install", "-d"] and c[4] == "-o":  # -m MODE -o U -g G -- DIR...
        for d in c[9:]:
            os.makedirs(at(d), exist_ok=True); os.chmod(at(d), int(c[3], 8)); os.chown(at(d), ids[c[5]], ids[c[7]])
    elif c[0] == "ln":
        os.makedirs(os.path.dirname(at(c[4])), exist_ok=True); os.symlink(c[3], at(c[4]))
    elif c[0] == "chown":
        u, g = c[3].split(":"); os.lchown(at(c[4]), ids[u], ids[g])
    elif c[:2] == ["install", "-d"] or c[:1] == ["install"]:
        pass
    elif c[:2] == ["systemctl", "mask"]:  # as systemctl does it
        os.symlink("/dev/null", at("/etc/systemd/system/" + c[3]))
    elif c[:2] == ["systemctl", "enable"] and c[2] == "--":  # [Install] WantedBy/RequiredBy links
        unit = "/etc/systemd/system/" + c[3]
        for line in open(at(unit)):
            k, _, v = line.strip().partition("=")
            if k in ("WantedBy", "RequiredBy"):
                for t in v.split():
                    d = at("/etc/systemd/system/%s.%s" % (t, "wants" if k == "WantedBy" else "requires"))
                    os.makedirs(d, exist_ok=True); os.symlink(unit, d + "/" + c[3])
    print("ran", " ".join(c))
PY
ino() { stat -c %i "$NR/$1"; }
before="$(ino etc/chrony.conf) $(ino etc/systemd/system/kubelet.service) $(ino etc/example/owned.conf)"
"$MCGIT" controller --repo "$R" --trust "$T/trust" --cluster "local:$CL" --once -q >/dev/null 2>&1 || true
"$MCGIT" agent --node n1 --cluster "local:$CL" --once >"$T/agent.out" 2>&1 || true; cp "$T/agent.out" /tmp/agent.out
"$MCGIT" status nodes --cluster "local:$CL" >"$T/nodes"
expect_grep "^n1 +$BOOTCFG +$BOOTCFG +Done" "$T/nodes" "first boot: the agent's first pass reports Done on the served config"
if grep -qE '"reason": *"(Reboot|Drain)' "$CL/events.jsonl" 2>/dev/null; then bad "first boot: a reboot or drain"; grep -E 'Reboot|Drain' "$CL/events.jsonl" | head -3; else ok "first boot: no reboot, no drain"; fi
after="$(ino etc/chrony.conf) $(ino etc/systemd/system/kubelet.service) $(ino etc/example/owned.conf)"
[ "$before" = "$after" ] && ok "first boot: the files cloud-init wrote are left as they are" || echo "# first boot: the agent rewrote files cloud-init had written (inodes $before -> $after)"

# The token file is read on every request
printf 'second-token\n' >"$T/token"
[ "$(get old "Bearer first-token" "" worker)" = 401 ] && [ "$(get new "Bearer second-token" "" worker)" = 200 ] &&
  ok "a rotated token takes effect at once" || bad "token rotation"

# A client that stalls mid-request is cut by the listener's deadline
python3 - "$PORT" >"$T/stall" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /config/worker HTTP/1.1\r\nHost: x\r\n")
t = time.time(); s.settimeout(30)
try:
    while s.recv(4096):
        pass
except Exception:
    pass
print("%.1f" % (time.time() - t))
PY
secs=$(cat "$T/stall")
python3 -c "import sys; sys.exit(0 if float('$secs') <= 8 else 1)" && ok "a stalled request is cut within the deadline ($secs s)" || bad "stalled request held $secs s"

kill -TERM "$SPID"
rc=0; wait "$SPID" || rc=$?
[ "$rc" = 0 ] && ok "SIGTERM stops it (exit 0)" || bad "exit $rc after SIGTERM"
if grep -q "Sanitizer\|runtime error" "$T/serve.log"; then bad "a sanitizer report in serve-config's log"; grep -m3 "Sanitizer\|runtime error" "$T/serve.log"; else ok "no sanitizer report in serve-config's log"; fi
expect_rc 2 "--token-file is required" -- "$MCGIT" serve-config --repo "$R" --trust "$T/trust"
: >"$T/empty-token"
expect_rc 1 "an empty token file is refused at start" -- "$MCGIT" serve-config --repo "$R" --trust "$T/trust" --token-file "$T/empty-token" --listen 127.0.0.1:0
finish
