#!/usr/bin/env bash
# The module graph is checked, not a convention: tests/layering.py holds the
# allow-list of which module of src/ may include which headers (and which may
# include libgit2, libcurl or libmicrohttpd). The real tree must pass; copies with one
# planted violation each must be refused, naming the file and line.
. "$(dirname "$0")/lib.sh"
need python3
check="$SRC/tests/layering.py"

expect_rc 0 "src/ follows the module graph" -- python3 "$check" "$SRC/src"

# plant VIOLATION as line 1 of FILE in a copy of src/ and expect a refusal naming it
plant() {
  local file=$1 line=$2 want=$3
  rm -rf "$T/src"
  cp -r "$SRC/src" "$T/src"
  { echo "$line"; cat "$SRC/src/$file"; } > "$T/src/$file"
  expect_rc 1 "refused: $file: $line" -- python3 "$check" "$T/src"
  expect_grep "^src/$file:1: $want" "$T/out" "the refusal names src/$file:1"
}
plant util/util.c '#include <git2.h>' 'util may not include <git2.h>'
plant model/yaml.c '#include <git2/oid.h>' 'model may not include <git2/oid.h>'
plant render/render.c '#include <curl/curl.h>' 'render may not include <curl/curl.h>'
plant trust/sshsig.c '#include "gitops/gitops.h"' 'trust may not include "gitops/gitops.h"'
plant rollout/rollout.c '#include "render/render.h"' 'rollout may not include "render/render.h"'
plant cluster/local.c '#include "agent/agent.h"' 'cluster may not include "agent/agent.h"'
plant agent/agent.c '#include "cluster/cluster_int.h"' 'agent may not include "cluster/cluster_int.h"'
plant controller/loop.c '#include <git2.h>' 'controller may not include <git2.h>'
plant cli/cmd_node.c '#include "cluster/kube_int.h"' 'cli may not include "cluster/kube_int.h"'
plant gitops/repo.c '#include "controller/controller.h"' 'gitops may not include "controller/controller.h"'
plant fsio/fsio.c '#include "nosuch/nosuch.h"' '"nosuch/nosuch.h" is no module'
plant cli/cmd_agent.c '#include <microhttpd.h>' 'cli may not include <microhttpd.h>'
plant metrics/registry.c '#include "cluster/cluster.h"' 'metrics may not include "cluster/cluster.h"'
plant metrics/server.c '#include <git2.h>' 'metrics may not include <git2.h>'
# a module split by concern: its listed headers are public, no other one is
plant cli/cmd_node.c '#include "cluster/local.h"' '"cluster/local.h" is not a public header of cluster'
plant cli/cmd_log.c '#include "gitops/scratch.h"' '"gitops/scratch.h" is not a public header of gitops'
# one way for each thing: the clock, the environment, stderr, errno's reason
plant cluster/local.c 'static const char *planted(void) { return getenv("HOME"); }' \
  'getenv: read the environment with mcg_env_get'
plant controller/loop.c 'static void planted(struct timespec *t) { clock_gettime(CLOCK_MONOTONIC, t); }' \
  'clock_gettime: read the clock with osenv'
plant osenv/tz.c 'static void planted(void) { setenv("TZ", ":UTC", 1); }' \
  'setenv: never change the environment'
plant cli/cmd_node.c 'static void planted(void) { fputs("x", stderr); }' \
  "stderr: write to stderr with osenv's logger"
plant agent/apply.c 'static const char *p(int e) { return e ? strerror(e) : e > 1 ? strerror(1) : strerror(2); }' \
  '[0-9]+ strerror\(\) sites, at most 15'
rm -rf "$T/src"; cp -r "$SRC/src" "$T/src"
{ echo '/* getenv("X"), clock_gettime(, stderr, strerror( in a comment */'
  echo 'static const char *planted = "setenv(\"TZ\") in a string";'; cat "$SRC/src/agent/apply.c"; } >"$T/src/agent/apply.c"
expect_rc 0 "the calls named in a comment or a string are not calls" -- python3 "$check" "$T/src"
rm -rf "$T/src"; cp -r "$SRC/src" "$T/src"
{ echo '#include "gitops/verify.h"'; cat "$SRC/src/bundle/bundle.h"; } >"$T/src/bundle/bundle.h"
expect_rc 0 "a concern header of gitops is public to the modules above it" -- python3 "$check" "$T/src"

# every concern header listed is in the umbrella
rm -rf "$T/src"; cp -r "$SRC/src" "$T/src"
grep -v '^#include "gitops/remote.h"' "$SRC/src/gitops/gitops.h" >"$T/src/gitops/gitops.h"
expect_rc 1 "refused: an umbrella that leaves out a concern header" -- python3 "$check" "$T/src"
expect_grep '^src/gitops/gitops.h:1: the umbrella does not include "gitops/remote.h"' "$T/out" \
  "the refusal names the umbrella and the header"
finish
