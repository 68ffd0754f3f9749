#!/usr/bin/env bash
# test_attestation.sh — node attestation (docs/sites.md) on the local
# backend: each agent's node key, the operator's pin (`mcgit node bind
# --node-key`), the agent's signed statement on Done, and the controller's
# count of attested machines. Attacks: a node whose annotations are written
# by hand, another node's statement replayed, a statement signed by an
# unpinned key, a tampered field, a pin replaced without unbinding, a
# damaged key file.
. "$(dirname "$0")/lib.sh"
need jq

CL=local:$T/cl
R=$T/repo
fixture_signed_repo "$R"
fixture_v1 "$R"
fixture_workers "$CL" w0 w1
ctl() { "$MCGIT" controller --repo "$R" --trust "$T/trust" --cluster "$CL" --once -q >/dev/null 2>&1; }
agents() { for n in w0 w1; do "$MCGIT" agent --node "$n" --cluster "$CL" --once -q >/dev/null 2>&1 || true; done; }
round() { ctl; agents; ctl; agents; ctl; }
attested() { "$MCGIT" status --cluster "$CL" -o json | jq -r '.items[] | select(.metadata.name == "worker") | .status.attestedMachineCount'; }
ann() { jq -r --arg k "machineconfiguration.mcgit.io/$2" '.metadata.annotations[$k] // ""' "$T/cl/nodes/$1.json"; }
round
[ "$(attested)" = 0 ] && ok "no key pinned: no machine attested" || bad "attested $(attested) before any pin"

expect_rc 0 "mcgit agent --print-node-key" -- "$MCGIT" agent --node w0 --cluster "$CL" --print-node-key
K0=$(cat "$T/out")
expect_grep "^ssh-ed25519 [A-Za-z0-9+/=]+ mcgit-node-w0$" "$T/out" "(an ssh-ed25519 line naming the node)"
[ "$(stat -c %a "$T/cl/roots/w0/var/lib/mcgit/node.key")" = 600 ] && ok "node.key is 0600" || bad "node.key mode"
"$MCGIT" agent --node w0 --cluster "$CL" --print-node-key >"$T/k0again"
[ "$(cat "$T/k0again")" = "$K0" ] && ok "the key is kept: the same line again" || bad "the key changed"
# beside the running agent (it holds the state directory's lock): the key is
# read without the lock; with no key yet, the running agent is named
"$MCGIT" agent --node w0 --cluster "$CL" --interval 1 -q >/dev/null 2>&1 &
RUNNING=$!
for _ in $(seq 100); do [ "$(cat "$T/cl/roots/w0/var/lib/mcgit/lock" 2>/dev/null)" = "$RUNNING" ] && break; sleep 0.1; done
[ "$(cat "$T/cl/roots/w0/var/lib/mcgit/lock")" = "$RUNNING" ] || bad "the running agent did not take its lock"
expect_rc 0 "--print-node-key beside the running agent" -- "$MCGIT" agent --node w0 --cluster "$CL" --print-node-key
[ "$(cat "$T/out")" = "$K0" ] && ok "(the same key the running agent holds)" || bad "another key beside the running agent: $(cat "$T/out")"
kill -STOP "$RUNNING" # it holds the lock, and makes no key of its own meanwhile
mv "$T/cl/roots/w0/var/lib/mcgit/node.key" "$T/node.key.w0"
expect_rc 1 "no key yet beside the running agent: refused" -- "$MCGIT" agent --node w0 --cluster "$CL" --print-node-key
expect_grep "another agent \(pid $RUNNING\) is running" "$T/err" "(it names the running agent)"
[ ! -e "$T/cl/roots/w0/var/lib/mcgit/node.key" ] && ok "(and makes no key)" || bad "a key was made beside the running agent"
mv "$T/node.key.w0" "$T/cl/roots/w0/var/lib/mcgit/node.key"
kill -CONT "$RUNNING"; kill "$RUNNING"; wait "$RUNNING" 2>/dev/null || true
"$MCGIT" agent --node w1 --cluster "$CL" --print-node-key >"$T/w1.pub"
[ "$(cat "$T/w1.pub")" != "$K0" ] && ok "each node has its own key" || bad "w0 and w1 share a key"

expect_rc 0 "node bind --node-key LINE" -- "$MCGIT" node bind --cluster "$CL" w0 --node-key "$K0"
expect_rc 0 "node bind --node-key FILE" -- "$MCGIT" node bind --cluster "$CL" w1 --node-key "$T/w1.pub"
[ "$(ann w0 nodeKey)" = "$K0" ] && ok "the pin is the node's nodeKey annotation" || bad "pin: $(ann w0 nodeKey)"
agents; ctl
[ "$(attested)" = 2 ] && ok "both machines attested once pinned" || bad "attested: $(attested)"
ann w0 attestation | jq -e --arg c "$(ann w0 currentConfig)" '.node == "w0" and .config == $c and (.digest | startswith("sha256:")) and (.signature | startswith("-----BEGIN SSH SIGNATURE-----"))' >/dev/null &&
  ok "w0's attestation names it, its config and its digest, signed" || bad "attestation: $(ann w0 attestation)"
spec=$(ls "$T/cl/configs/$(ann w0 currentConfig).json")
[ "$(ann w0 attestation | jq -r .digest)" = "sha256:$(sha256sum "$spec" | cut -d' ' -f1)" ] &&
  ok "the digest is sha256sum of the published config" || bad "digest"
expect_rc 1 "another key pinned over w0's is refused" -- "$MCGIT" node bind --cluster "$CL" w0 --node-key "$T/w1.pub"
expect_grep "has another node key pinned" "$T/err" "(it says unbind first)"
expect_rc 1 "a --node-key that is not a key is refused" -- "$MCGIT" node bind --cluster "$CL" w0 --node-key "ssh-ed25519 AAAAnotakey"

# ---------------------------------------------------------------- forgeries
edit_node() { # edit_node NODE JQ-FILTER: the node object edited by hand (who can patch a Node can)
  jq "${@:2}" "$T/cl/nodes/$1.json" >"$T/node.json" && mv "$T/node.json" "$T/cl/nodes/$1.json"
}
cp "$T/cl/nodes/w1.json" "$T/w1.saved"
set_att() { edit_node w1 --arg a "$1" '.metadata.annotations["machineconfiguration.mcgit.io/attestation"] = $a'; }
set_att "$(ann w0 attestation)"; ctl
[ "$(attested)" = 1 ] && ok "w0's statement replayed on w1 does not count" || bad "replay counted: $(attested)"
set_att "$(ann w1 attestation | jq -c '.bootID = "0000"')"; ctl
[ "$(attested)" = 1 ] && ok "a tampered field (boot id) does not count" || bad "tampered counted"
set_att '{"v":1,"node":"w1","machineID":"","bootID":"x","config":"c","digest":"sha256:00","signature":"nope"}'; ctl
[ "$(attested)" = 1 ] && ok "annotations written by hand do not count" || bad "hand-written counted"
ssh-keygen -q -t ed25519 -N '' -f "$T/other"
python3 - "$T/other" "$(ann w0 currentConfig)" "$(jq -r '.metadata.annotations["machineconfiguration.mcgit.io/attestation"]' "$T/w1.saved")" >"$T/forged" <<'PY'
import json, subprocess, sys
key, cfg, good = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
st = ("mcgit-attestation v1\nnode %s\nmachine-id %s\nboot-id %s\nconfig %s\ndigest %s\n" %
      (good["node"], good["machineID"], good["bootID"], good["config"], good["digest"]))
sig = subprocess.run(["ssh-keygen", "-q", "-Y", "sign", "-n", "mcgit-attestation", "-f", key],
                     input=st.encode(), capture_output=True, check=True).stdout.decode().rstrip("\n")
good["signature"] = sig
print(json.dumps(good))
PY
set_att "$(cat "$T/forged")"; ctl
[ "$(attested)" = 1 ] && ok "the same statement signed by a key nobody pinned does not count" || bad "unpinned key counted"
edit_node w1 --arg k "$(cat "$T/other.pub")" '.metadata.annotations["machineconfiguration.mcgit.io/nodeKey"] = $k'; ctl
[ "$(attested)" = 2 ] && ok "control: with that key pinned (as only the operator may) it counts" || bad "control failed: $(attested)"
cp "$T/w1.saved" "$T/cl/nodes/w1.json"; ctl
[ "$(attested)" = 2 ] && ok "restored: both attested again" || bad "restored: $(attested)"

# ---------------------------------------------------------------- a new config, a damaged key
write_mc "$R" 10-worker worker /etc/demo.conf v2
scommit "$R" op "v2"
round; agents; ctl
[ "$(attested)" = 2 ] && [ "$(ann w0 attestation | jq -r .config)" = "$(ann w0 currentConfig)" ] &&
  ok "after a rollout each node attests its new config" || bad "after v2: $(attested)"
head -c 10 /dev/zero >"$T/cl/roots/w1/var/lib/mcgit/node.key"
expect_rc 1 "a damaged node key is refused, naming the file" -- "$MCGIT" agent --node w1 --cluster "$CL" --print-node-key
expect_grep "node.key: not a node key" "$T/err" "(it says how to make a new one)"
expect_rc 0 "node unbind removes the pin" -- "$MCGIT" node unbind --cluster "$CL" w1
[ -z "$(ann w1 nodeKey)" ] && ok "(no nodeKey annotation)" || bad "pin left"
ctl
[ "$(attested)" = 1 ] && ok "an unpinned node is not attested" || bad "unpinned: $(attested)"
finish
