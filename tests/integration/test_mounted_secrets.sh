#!/usr/bin/env bash
# Files the operator names, laid out as the kubelet mounts a ConfigMap or a
# Secret volume: every key is a symbolic link, KEY -> ..data/KEY, and ..data a
# link to the timestamped directory holding the files (swapped atomically on
# an update). Found on the real-cluster test bed (tests/kube/cluster.sh): the
# controller pod refused its trust root ("/etc/mcgit/trust/allowed_signers:
# is a symbolic link") and skipped credentials that were links, so mcgit
# could not run from deploy/ at all. Now:
#   the trust root and revocation list (controller, verify), the git
#   credentials ($MCGIT_GIT_CREDENTIALS: username, password) and the webhook
#   token file are read through such links;
#   an update swapping ..data is read on the next pass;
#   a link to something that is not a regular file is still refused.
. "$(dirname "$0")/lib.sh"
need git ssh-keygen python3 timeout
# volume DIR KEY=FILE...: DIR as the kubelet writes a volume, the keys copied from the FILEs
volume() {
  local d=$1 ts kv
  shift
  ts="..$(date +%Y_%m_%d_%H_%M_%S).$RANDOM"
  mkdir -p "$d/$ts"
  for kv in "$@"; do cp "${kv#*=}" "$d/$ts/${kv%%=*}"; ln -sfn "..data/${kv%%=*}" "$d/${kv%%=*}"; done
  ln -sfn "$ts" "$d/..data.tmp" && mv -T "$d/..data.tmp" "$d/..data"
}
mkkey alice ed25519
mkkey bob ed25519
signer_line alice@example.com alice >"$T/trust"
"$MCGIT" init "$T/src" >/dev/null
sign_setup "$T/src" "$T/trust"
write_mc "$T/src" 10-w worker /etc/f v1
scommit "$T/src" alice "v1"
: >"$T/empty"
volume "$T/cm" allowed_signers="$T/trust" revoked="$T/empty"
[ -L "$T/cm/allowed_signers" ] && [ -L "$T/cm/..data" ] && ok "a ConfigMap-style volume: keys are links into ..data" ||
  bad "volume layout"

expect_rc 0 "verify --trust through the volume's links" -- "$MCGIT" verify --repo "$T/src" --trust "$T/cm/allowed_signers" --revoked "$T/cm/revoked"
CL=local:$T/cl
"$MCGIT" node add --cluster "$CL" w0 --labels node-role.kubernetes.io/worker= >/dev/null
expect_rc 0 "controller --trust and --revoked through the volume's links" -- \
  timeout 120 "$MCGIT" controller --once --repo "$T/src" --trust "$T/cm/allowed_signers" \
  --revoked "$T/cm/revoked" --cluster "$CL"
if grep -q "symbolic link" "$T/err"; then bad "the controller refused a link: $(head -1 "$T/err")"; else ok "no link refused"; fi
"$MCGIT" status --cluster "$CL" pools >"$T/pools" 2>&1 || true
expect_grep 'rendered-(master|worker)-' "$T/pools" "the pass rendered the pools"

# the volume updated (..data swapped): alice revoked, bob trusted; the next
# pass reads the new files: alice's next commit refused
signer_line bob@example.com bob >"$T/trust2"
cat "$T/trust" >>"$T/trust2"
cp "$T/keys/alice.pub" "$T/revoked2"
old=$(readlink "$T/cm/..data")
volume "$T/cm" allowed_signers="$T/trust2" revoked="$T/revoked2"
[ "$(readlink "$T/cm/..data")" != "$old" ] && ok "..data swapped to the update" || bad "..data not swapped"
write_mc "$T/src" 10-w worker /etc/f v2
scommit "$T/src" alice "v2 by a revoked key"
expect_rc 1 "the next pass reads the updated revocation list: alice's commit refused" -- \
  timeout 120 "$MCGIT" controller --once --repo "$T/src" --trust "$T/cm/allowed_signers" \
  --revoked "$T/cm/revoked" --cluster "$CL"
expect_grep 'revoked' "$T/err" "the refusal names the revocation"

# still refused: a link to a directory, a link to a FIFO
mkdir -p "$T/bad"
ln -s "$T/cm" "$T/bad/allowed_signers"
expect_rc 1 "a trust root linking to a directory is refused" -- "$MCGIT" verify --repo "$T/src" --trust "$T/bad/allowed_signers"
expect_grep 'not a regular file' "$T/err" "named: not a regular file"
mkfifo "$T/fifo"
ln -s "$T/fifo" "$T/bad/fifo"
expect_rc 1 "a trust root linking to a FIFO is refused (not opened, nothing waits)" -- timeout 10 "$MCGIT" verify --repo "$T/src" --trust "$T/bad/fifo"
expect_grep 'not a regular file' "$T/err" "named: not a regular file"

# git credentials from a Secret-style volume (http with basic auth)
git clone -q --bare "$T/src" "$T/srv/config.git"
python3 "$SRC/tests/integration/githttp.py" "$T/srv" "$T/port" mcgit s3cret &
PIDS+=($!)
for _ in $(seq 50); do [ -s "$T/port" ] && break; sleep 0.1; done
url="http://127.0.0.1:$(cat "$T/port")/config.git"
git init -q --bare "$T/mirror"
git -C "$T/mirror" remote add origin "$url"
printf 'mcgit\n' >"$T/u"
printf 's3cret\n' >"$T/p"
chmod 400 "$T/u" "$T/p" # the Secret's defaultMode in deploy/controller.yaml: secrets are private
volume "$T/secret" username="$T/u" password="$T/p"
expect_rc 0 "fetch with username and password through a Secret volume's links" -- \
  env MCGIT_GIT_CREDENTIALS="$T/secret" timeout 60 "$MCGIT" fetch --repo "$T/mirror" --trust "$T/trust2"

# the webhook token file from a Secret volume
printf 'tok-123\n' >"$T/tok"
volume "$T/wh" token="$T/tok"
port=$(freeport)
"$MCGIT" controller --repo "$T/src" --trust "$T/cm/allowed_signers" --cluster "$CL" --interval 3600 \
  --metrics-bind-address "127.0.0.1:$port" --webhook-token-file "$T/wh/token" >"$T/ctl.log" 2>&1 &
PIDS+=($!)
if wait_port "$port"; then ok "controller with --webhook-token-file through a link: listening"; else
  bad "controller with a linked webhook token did not listen: $(head -2 "$T/ctl.log")"; fi
if grep -q "symbolic link" "$T/ctl.log"; then bad "webhook token refused: $(grep 'symbolic link' "$T/ctl.log" | head -1)"; else ok "webhook token read through its link"; fi
finish
