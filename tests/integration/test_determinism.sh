#!/usr/bin/env bash
# Same config tree, same bytes: the tree is copied into two directories with
# its files created in different (shuffled) orders and with different
# modification times, plus an MC whose paths and text sort differently under
# a UTF-8 locale than bytewise; `mcgit render -o json` must print identical
# bytes under every locale and time zone tried and from any working
# directory, and `-o names` likewise.
. "$(dirname "$0")/lib.sh"
: "${FIXTURES:=$SRC/tests/fixtures}"

# The large fixture plus locale-sensitive content.
SEED="$T/seed"
cp -r "$FIXTURES/large" "$SEED"
cat > "$SEED/machineconfigs/70-worker-locale.yaml" <<'YAML'
# Paths that strcoll() in a UTF-8 locale orders differently from strcmp():
# upper and lower case, punctuation, non-ASCII.
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 70-worker-locale
  labels:
    machineconfiguration.openshift.io/role: worker
    Zeta: "1"
    alpha: "2"
spec:
  config:
    ignition:
      version: 3.4.0
    storage:
      files:
      - path: /etc/locale/b
      - path: /etc/locale/B
      - path: /etc/locale/_under
      - path: /etc/locale/a-dash
      - path: /etc/locale/a.dot
      - path: /etc/locale/é
        contents:
          source: "data:,caf%C3%A9%20%E2%82%AC%20%E6%97%A5%E6%9C%AC%0A"
      - path: /etc/locale/Émile
    systemd:
      units:
      - name: b.service
        contents: "[Unit]\nDescription=naïve café ☕ 日本\n"
      - name: B.service
      - name: a.service
        dropins:
        - name: b.conf
          contents: "[Service]\nEnvironment=Ä\n"
        - name: B.conf
        - name: a.conf
YAML

# copy_tree SRC DST ORDER MTIME: recreate SRC's files under DST, one by one in
# ORDER (sorted | reverse | shuffled), every file with modification time MTIME.
copy_tree() {
  local src=$1 dst=$2 order=$3 mtime=$4 list f
  mkdir -p "$dst"
  list=$(cd "$src" && find . -type f | sed 's|^\./||' | LC_ALL=C sort)
  case $order in
    reverse) list=$(printf '%s\n' "$list" | LC_ALL=C sort -r) ;;
    shuffled) list=$(printf '%s\n' "$list" | awk 'BEGIN{srand(42)} {print rand() "\t" $0}' | LC_ALL=C sort | cut -f2-) ;;
  esac
  while IFS= read -r f; do
    mkdir -p "$dst/$(dirname "$f")"
    cat "$src/$f" > "$dst/$f"
    touch -d "$mtime" "$dst/$f"
  done <<<"$list"
}
copy_tree "$SEED" "$T/a/config" sorted "2001-02-03 04:05:06"
copy_tree "$SEED" "$T/deeper/path/b" shuffled "2030-12-31 23:59:59"
copy_tree "$SEED" "$T/c" reverse "1999-01-01 00:00:00"
touch -d "2011-11-11 11:11:11" "$T/deeper/path/b/machineconfigs" "$T/deeper/path/b/pools"

# Creation order really differs (directory order is what a loader sees).
la=$(ls -U "$T/a/config/machineconfigs" | tr '\n' ' ')
lb=$(ls -U "$T/deeper/path/b/machineconfigs" | tr '\n' ' ')
# Whether the file system lists them in creation order is its business: a
# note, not a check (the loaders are tested against shuffled input either way).
[ "$la" != "$lb" ] && echo "# the two copies list their files in different orders" ||
  echo "# the file system lists both copies in the same order (creation order still differed)"

locales="C POSIX"
avail=$(locale -a 2>/dev/null || true)
for l in en_US.UTF-8 en_US.utf8 C.UTF-8 C.utf8 de_DE.UTF-8 tr_TR.UTF-8; do
  if printf '%s\n' "$avail" | grep -qix -- "$l"; then locales="$locales $l"; fi
done
echo "# locales tried: $locales"

ref="$T/ref.json"
"$MCGIT" render "$T/a/config" -o json >"$ref" 2>"$T/err" && ok "reference render" || { bad "reference render failed"; cat "$T/err"; }
grep -q '/etc/locale/' "$ref" && ok "the locale-sensitive MC is in the render" || bad "locale MC missing"
refn="$T/ref.names"
"$MCGIT" render "$T/a/config" >"$refn"

runs=0 diffs=0
for loc in $locales; do
  for tz in UTC Asia/Kolkata America/St_Johns; do
    for where in a b c; do
      case $where in
        a) out=$(cd / && LC_ALL=$loc LANG=$loc TZ=$tz "$MCGIT" render "$T/a/config" -o json | sha256sum) ;;
        b) out=$(cd "$T/deeper/path/b" && LC_ALL=$loc LANG=$loc TZ=$tz "$MCGIT" render -o json | sha256sum) ;;
        c) out=$(cd "$T/deeper" && LC_ALL=$loc LANG=$loc TZ=$tz "$MCGIT" render ../c -o json | sha256sum) ;;
      esac
      runs=$((runs+1))
      if [ "$out" != "$(sha256sum <"$ref")" ]; then
        diffs=$((diffs+1)); bad "render differs: LC_ALL=$loc TZ=$tz tree $where"
      fi
    done
  done
  outn=$(cd "$T/deeper/path/b" && LC_ALL=$loc TZ=Asia/Kolkata "$MCGIT" render)
  [ "$outn" = "$(cat "$refn")" ] && ok "-o names identical under LC_ALL=$loc" || bad "-o names differs under LC_ALL=$loc"
done
[ "$diffs" = 0 ] && ok "$runs renders (locales x time zones x trees x working directories) byte-identical"

# The order in the output is bytewise, whatever the locale (infra and worker
# both hold these paths: count each once).
path_order() {
  grep -o '"/etc/locale/[^"]*"' "$ref" | tr -d '"' | awk '!seen[$0]++' | tr '\n' ' '
}
want='/etc/locale/B /etc/locale/_under /etc/locale/a-dash /etc/locale/a.dot /etc/locale/b /etc/locale/Émile /etc/locale/é '
got=$(path_order)
[ "$got" = "$want" ] && ok "paths sorted bytewise" || bad "paths order: $got"

# The copies' renders also equal the golden file of the fixture without the
# extra MC (master's is untouched by it).
"$MCGIT" render "$FIXTURES/large" >"$T/large.names"
grep '^master ' "$T/large.names" >"$T/m1"; grep '^master ' "$refn" >"$T/m2"
cmp -s "$T/m1" "$T/m2" && ok "master's name unaffected by a worker MC" || bad "master's name changed"
cmp -s "$T/large.names" "$FIXTURES/golden/large.names" && ok "fixture render equals its golden names" || bad "fixture names differ from golden"

finish
