#!/usr/bin/env bash
# test_fsync.sh — repository writes reach the disk: with libgit2's gitdir
# fsync on, the objects and refs mcgit writes are fsynced. strace counts
# fsync/fdatasync calls on files under each git directory while
# `mcgit render --repo` writes a rendered commit (loose objects, the
# rendered ref), while `mcgit bundle import` moves refs in another
# repository, and while a controller's mirror fetches (a pack, refs).
. "$(dirname "$0")/lib.sh"
need strace

R=$T/cfg
fixture_signed_repo "$R"
fixture_v1 "$R"

# synced GITDIR DIR: fsync and fdatasync calls on files (and directories)
# under GITDIR/DIR, in $T/strace
synced() { grep -cE "^[0-9]+ +f(data)?sync\([0-9]+<$1/$2/" "$T/strace" || true; }
# check WHAT GITDIR: objects and refs were both fsynced
check() {
  local o r
  o=$(synced "$2" objects) r=$(synced "$2" refs)
  [ "$o" -gt 0 ] && [ "$r" -gt 0 ] && ok "$1: fsyncs on objects ($o) and refs ($r)" \
    || bad "$1: not fsynced (objects $o, refs $r)"
}
# (LeakSanitizer cannot run under ptrace: off for the traced runs of the ASan build)
trace() {
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
    strace -f -y -qq -e trace=fsync,fdatasync -o "$T/strace" "$@" >"$T/out" 2>"$T/err"
}

trace "$MCGIT" render --repo "$R" --trust "$T/trust" || { bad "render failed"; sed 's/^/    /' "$T/err" | head -3; }
git -C "$R" rev-parse -q --verify refs/heads/rendered >/dev/null && ok "render wrote the rendered branch" || bad "no rendered branch"
check render "$(cd "$R/.git" && pwd)"

git init -q --bare "$T/dst.git"
git -C "$R" bundle create -q "$T/all.bundle" main 2>/dev/null
trace "$MCGIT" bundle import --repo "$T/dst.git" "$T/all.bundle" --trust "$T/trust" \
  || { bad "import failed"; sed 's/^/    /' "$T/err" | head -3; }
check "bundle import" "$(cd "$T/dst.git" && pwd)"

git init -q --bare "$T/origin.git"
git -C "$R" push -q "$T/origin.git" main
mkdir -p "$T/cl"
"$MCGIT" node add --cluster "local:$T/cl" w0 >/dev/null
trace "$MCGIT" controller --repo "file://$T/origin.git" --mirror "$T/mirror" --trust "$T/trust" \
  --cluster "local:$T/cl" --once || { bad "controller --once failed"; sed 's/^/    /' "$T/err" | head -3; }
check "mirror fetch and render" "$(cd "$T/mirror" && pwd)"
finish
