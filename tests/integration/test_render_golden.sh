#!/usr/bin/env bash
# Golden renders of repo-template and tests/fixtures/large, the exit-status
# contract of `mcgit render` / `mcgit validate` (0 ok, 1 refused, 2 usage),
# validate's silence on valid input and its list of every problem otherwise.
#
# To refresh the golden files after an intended change of the rendered form:
#   mcgit render repo-template -o json > tests/fixtures/golden/repo-template.json
#   (and likewise .names, large.json / large.names from tests/fixtures/large and
#   mco.json / mco.names from tests/fixtures/mco; for the per-MachineConfig
#   corpus below, run this script with MCGIT_UPDATE_GOLDEN=1 and review the diff)
. "$(dirname "$0")/lib.sh"
: "${FIXTURES:=$SRC/tests/fixtures}"
G="$FIXTURES/golden"

# ---------------------------------------------------------------- golden files
for case in "repo-template:$SRC/repo-template" "large:$FIXTURES/large" "mco:$FIXTURES/mco"; do
  name=${case%%:*} dir=${case#*:}
  expect_rc 0 "render $name -o json" -- "$MCGIT" render "$dir" -o json
  if cmp -s "$T/out" "$G/$name.json"; then ok "$name.json matches the golden file"
  else bad "$name.json differs from the golden file"; diff -u "$G/$name.json" "$T/out" | head -40 | sed 's/^/    /'; fi
  # stderr holds warnings only (Ignition's unknown keys; MCs no pool selects)
  grep -qv "^mcgit render: warning: " "$T/err" && bad "render $name wrote more than warnings to stderr" ||
    ok "render $name: nothing but warnings on stderr"
  expect_rc 0 "render $name" -- "$MCGIT" render "$dir"
  if cmp -s "$T/out" "$G/$name.names"; then ok "$name.names matches the golden file"
  else bad "$name.names differs from the golden file"; diff -u "$G/$name.names" "$T/out" | sed 's/^/    /'; fi
  expect_rc 0 "-o names is the default" -- "$MCGIT" render "$dir" -o names
  cmp -s "$T/out" "$G/$name.names" && ok "-o names output" || bad "-o names output differs"
  expect_rc 0 "validate $name" -- "$MCGIT" validate "$dir"
  [ "$name" = mco ] && continue # its warning is checked below
  if [ ! -s "$T/out" ] && [ ! -s "$T/err" ]; then ok "validate $name prints nothing"
  else bad "validate $name printed something"; cat "$T/out" "$T/err" | head -5 | sed 's/^/    /'; fi
done

# The MCO corpus: the one key Ignition only warns about is a warning with its
# file and line, the exit status stays 0; `warnings: error` makes it fatal.
expect_rc 0 "validate mco" -- "$MCGIT" validate "$FIXTURES/mco"
if [ "$(cat "$T/err")" = "mcgit validate: warning: machineconfigs/20-worker-chrony.yaml:17: unknown field 'storage.files[0].filesystem' (Ignition ignores it)" ] && [ ! -s "$T/out" ]
then ok "validate mco: one warning, with file and line"; else bad "validate mco output"; sed 's/^/    /' "$T/err"; fi
W="$T/mco-strict"
cp -r "$FIXTURES/mco" "$W"
echo "warnings: error" >> "$W/mcgit.yaml"
expect_rc 1 "validate: warnings: error refuses the warning" -- "$MCGIT" validate "$W"
expect_grep "^mcgit validate: machineconfigs/20-worker-chrony.yaml:17: unknown field 'storage.files\[0\].filesystem' \(Ignition ignores it\) \(mcgit.yaml: warnings: error\)$" "$T/err" "the warning is an error"
[ "$(grep -c . "$T/err")" = 1 ] && ok "... reported once (not also as a warning)" || bad "warnings: error printed $(grep -c . "$T/err") lines"
expect_rc 1 "render: warnings: error refuses too" -- "$MCGIT" render "$W"

# The corpus, one MachineConfig at a time: each real-world-shaped MC of
# tests/fixtures/mco rendered alone (with the empty 00-master / 00-worker
# bases and the three pools) must give exactly the golden render.
mkdir -p "$G/mco-each"
for mc in "$FIXTURES"/mco/machineconfigs/*.yaml; do
  base=$(basename "$mc" .yaml)
  case $base in 00-*) continue ;; esac
  O="$T/each-$base"
  mkdir -p "$O/machineconfigs"
  cp -r "$FIXTURES/mco/pools" "$O/"
  cp "$FIXTURES"/mco/machineconfigs/00-*.yaml "$mc" "$O/machineconfigs/"
  "$MCGIT" render "$O" -o json >"$T/out" 2>"$T/err" || { bad "corpus $base: render failed"; sed 's/^/    /' "$T/err"; continue; }
  if [ -n "${MCGIT_UPDATE_GOLDEN:-}" ]; then cp "$T/out" "$G/mco-each/$base.json"; fi
  if cmp -s "$T/out" "$G/mco-each/$base.json"; then ok "corpus $base renders as its golden file"
  else bad "corpus $base differs from its golden file"; diff -u "$G/mco-each/$base.json" "$T/out" | head -30 | sed 's/^/    /'; fi
done

# Independent check of the names: the hash is SHA-256 of the canonical spec
# (sorted keys, 2-space indent, UTF-8, trailing newline), first 32 hex digits,
# pool name not included. Needs python3; skipped without it.
if command -v python3 >/dev/null 2>&1; then
  if python3 - "$G/large.json" "$G/repo-template.json" "$G/mco.json" <<'PY'
import hashlib, json, sys
for path in sys.argv[1:]:
    doc = json.load(open(path, encoding="utf-8"))
    for pool, r in doc["pools"].items():
        spec = (json.dumps(r["spec"], sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode()
        want = "rendered-%s-%s" % (pool, hashlib.sha256(spec).hexdigest()[:32])
        if r["name"] != want:
            sys.exit("%s: %s: name %s, want %s" % (path, pool, r["name"], want))
PY
  then ok "rendered names are sha256 of the canonical spec"; else bad "rendered names do not match the spec"; fi
else
  skip_part "python3 not installed: independent hash check"
fi

# Equal content, equal hash: repo-template's master and worker are both empty.
h1=$(awk '$1=="master"{print substr($2, length("rendered-master-")+1)}' "$G/repo-template.names")
h2=$(awk '$1=="worker"{print substr($2, length("rendered-worker-")+1)}' "$G/repo-template.names")
[ -n "$h1" ] && [ "$h1" = "$h2" ] && ok "pools with equal content share the hash" || bad "master and worker hashes differ"

# Default DIR is the current directory.
(cd "$FIXTURES/large" && "$MCGIT" render -o json) >"$T/cwd.json" 2>"$T/err" && cmp -s "$T/cwd.json" "$G/large.json" \
  && ok "render without DIR renders the current directory" || bad "render without DIR"

# ---------------------------------------------------------------- exit statuses
expect_rc 2 "render: unknown option is a usage error" -- "$MCGIT" render --frobnicate "$SRC/repo-template"
expect_rc 2 "render: unknown output format is a usage error" -- "$MCGIT" render "$SRC/repo-template" -o yaml
expect_grep "unknown output format 'yaml'" "$T/err" "render: says which format is unknown"
[ ! -s "$T/out" ] && ok "render usage error: nothing on stdout" || bad "render usage error wrote to stdout"
expect_rc 2 "render: two directories is a usage error" -- "$MCGIT" render "$SRC/repo-template" "$FIXTURES/large"
expect_rc 2 "render: -o without an argument" -- "$MCGIT" render -o
expect_rc 2 "validate: unknown option is a usage error" -- "$MCGIT" validate --frobnicate
expect_rc 2 "validate: two directories is a usage error" -- "$MCGIT" validate "$SRC/repo-template" "$FIXTURES/large"
expect_rc 0 "render --help" -- "$MCGIT" render --help
expect_grep "usage: mcgit render" "$T/out" "render --help prints usage on stdout"
expect_rc 0 "validate --help" -- "$MCGIT" validate --help
expect_grep "usage: mcgit validate" "$T/out" "validate --help prints usage on stdout"
expect_rc 1 "render: missing directory" -- "$MCGIT" render "$T/does-not-exist"
expect_grep "does-not-exist" "$T/err" "render: names the missing directory"
expect_rc 1 "validate: missing directory" -- "$MCGIT" validate "$T/does-not-exist"
mkdir "$T/empty"
expect_rc 1 "validate: a directory without pools" -- "$MCGIT" validate "$T/empty"
expect_grep "no pools found" "$T/err" "validate: says there are no pools"

# ---------------------------------------------------------------- every problem
B="$T/broken"
cp -r "$SRC/repo-template" "$B"
cat > "$B/machineconfigs/50-bad-path.yaml" <<'YAML'
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 50-bad-path
  labels:
    machineconfiguration.openshift.io/role: worker
spec:
  config:
    ignition:
      version: 3.4.0
    storage:
      files:
      - path: /etc/../shadow
YAML
cat > "$B/machineconfigs/60-bad-user.yaml" <<'YAML'
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 60-bad-user
  labels:
    machineconfiguration.openshift.io/role: worker
spec:
  kernelType: lowlatency
  config:
    ignition:
      version: 3.4.0
    passwd:
      users:
      - name: core
        shell: /bin/sh
YAML
cat > "$B/pools/infra.yaml" <<'YAML'
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata:
  name: infra
spec:
  machineConfigSelector:
    matchExpressions:
    - key: machineconfiguration.openshift.io/role
      operator: Equals
      values: [infra]
YAML
expect_rc 1 "validate: a repo with several broken files" -- "$MCGIT" validate "$B"
[ ! -s "$T/out" ] && ok "validate: problems go to stderr only" || bad "validate wrote to stdout"
n=$(grep -c '^mcgit validate: ' "$T/err" || true)
[ "$n" -ge 4 ] && ok "validate lists every problem ($n)" || { bad "validate listed $n problems, want at least 4"; sed 's/^/    /' "$T/err"; }
expect_grep "^mcgit validate: machineconfigs/50-bad-path.yaml:13: .*absolute clean path" "$T/err" "bad path named with file and line"
expect_grep "^mcgit validate: machineconfigs/60-bad-user.yaml:8: kernelType 'lowlatency' is invalid" "$T/err" "kernelType named with file and line"
expect_grep "^mcgit validate: machineconfigs/60-bad-user.yaml:15: field 'passwd.users\[0\].shell' is not supported" "$T/err" "core's shell named with file and line"
expect_grep "^mcgit validate: pools/infra.yaml:9: operator 'Equals'" "$T/err" "bad operator named with file and line"
expect_rc 1 "render: refuses the same repo" -- "$MCGIT" render "$B" -o json
[ ! -s "$T/out" ] && ok "render: nothing rendered when input is invalid" || bad "render printed output for invalid input"
expect_grep "^mcgit render: machineconfigs/50-bad-path.yaml:13: " "$T/err" "render reports file:line too"

# A pool that selects nothing: valid files, but validate renders too.
S="$T/selects-nothing"
cp -r "$SRC/repo-template" "$S"
rm "$S/machineconfigs/00-master.yaml"
expect_rc 1 "validate: a pool selecting no MachineConfig" -- "$MCGIT" validate "$S"
expect_grep "^mcgit validate: pools/master.yaml:1: pool 'master' selects no MachineConfig" "$T/err" "names the pool"

# ---------------------------------------------------------------- symlinks
L="$T/symlinked"
cp -r "$SRC/repo-template" "$L"
cp "$FIXTURES/large/machineconfigs/30-worker-ssh.yaml" "$T/outside.yaml"
ln -s "$T/outside.yaml" "$L/machineconfigs/30-worker-ssh.yaml"
expect_rc 1 "validate: a symlinked file in machineconfigs/ is refused" -- "$MCGIT" validate "$L"
expect_grep "machineconfigs/30-worker-ssh.yaml: symbolic links are not allowed" "$T/err" "says the file is a symlink"
expect_rc 1 "render: a symlinked file is refused" -- "$MCGIT" render "$L"
L2="$T/symlinked-dir"
cp -r "$SRC/repo-template" "$L2"
mv "$L2/machineconfigs" "$T/mcs-elsewhere"
ln -s "$T/mcs-elsewhere" "$L2/machineconfigs"
expect_rc 1 "validate: a symlinked machineconfigs/ directory is refused" -- "$MCGIT" validate "$L2"
expect_grep "machineconfigs/: not a directory" "$T/err" "says machineconfigs/ is not a directory"

finish
