#!/usr/bin/env bash
# test_host_values.sh — values the host tools would misread are refused at
# `mcgit validate` and at push, before any node sees them: kernel arguments
# GRUB's script parser interprets (`quiet;reboot` would run reboot at every
# boot from grub.cfg; `x='` breaks grub.cfg), an image reference that is an
# option (`bootc switch --help` exits 0), and an osImageURL without a digest
# (a warning; an error with `warnings: error`).
. "$(dirname "$0")/lib.sh"

mkkey alice ed25519
signer_line alice@example.com alice >"$T/trust"
S=$T/srv.git
fixture_server "$S"
W=$T/w
"$MCGIT" init "$W" >/dev/null
sign_setup "$W" "$T/trust"
git -C "$W" remote add origin "$S"
scommit "$W" alice base
git -C "$W" push -q origin main 2>/dev/null
BASE=$(git -C "$W" rev-parse HEAD)

# mc EXTRA-SPEC-LINES: machineconfigs/50-host.yaml with those spec lines
mc() {
  cat >"$W/machineconfigs/50-host.yaml" <<EOF
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 50-host
  labels:
    machineconfiguration.openshift.io/role: worker
spec:
$1
EOF
}
try() { # DESC SPEC-LINES EXPECTED-MESSAGE
  mc "$2"
  expect_rc 1 "validate refuses $1" -- "$MCGIT" validate "$W"
  expect_grep "machineconfigs/50-host.yaml:8: .*$3" "$T/err" "validate names the file, line and value ($1)"
  scommit "$W" alice "$1"
  expect_rc 1 "push refuses $1" -- git -C "$W" push origin main
  expect_grep "refusing refs/heads/main: machineconfigs/50-host.yaml:8: .*$3" "$T/err" "the pusher sees why ($1)"
  git -C "$W" reset -q --hard "$BASE"
}
try "a kernel argument with ';'" '  kernelArguments: ["quiet;reboot"]' "kernel argument 'quiet;reboot' holds ';'"
try "a kernel argument with a single quote" "  kernelArguments: [\"x='\"]" "kernel argument 'x='' holds '''"
try "a kernel argument with '\$'" '  kernelArguments: ["init=$x"]' "holds '\\$'"
try "a kernel argument starting with '#'" '  kernelArguments: ["#quiet"]' "kernel argument '#quiet' holds '#'"
try "an osImageURL that is an option" '  osImageURL: "--help"' "'--help' starts with '-'"
[ "$(git -C "$S" rev-parse main)" = "$BASE" ] && ok "nothing reached the server" || bad "server main moved"

# osImageURL without a digest: a warning, or an error with warnings: error
mc '  osImageURL: quay.io/example/os:latest'
expect_rc 0 "validate accepts an osImageURL without a digest" -- "$MCGIT" validate "$W"
cat "$T/out" "$T/err" >"$T/both"
expect_grep "50-host.yaml:8: .*names no digest" "$T/both" "with a warning naming the file and line"
scommit "$W" alice "no digest"
expect_rc 0 "push accepts it" -- git -C "$W" push origin main
expect_grep "warning: .*names no digest" "$T/err" "and the pusher sees the warning"
echo "warnings: error" >>"$W/mcgit.yaml"
expect_rc 1 "with warnings: error, validate refuses it" -- "$MCGIT" validate "$W"
mc '  osImageURL: quay.io/example/os@sha256:2c1f0b4f9f3e8a6d7b5c4a3928171605f4e3d2c1b0a9f8e7d6c5b4a392817160'
expect_rc 0 "a pinned osImageURL passes with warnings: error" -- "$MCGIT" validate "$W"

finish
