#!/usr/bin/env bash
# Regenerates docs/commands.md from the built binary's help texts:
#   tests/gen-commands.sh build/mcgit
set -euo pipefail
M=${1:-build/mcgit}
cd "$(dirname "$0")/.."
{
  echo "# Commands"; echo
  echo "Every command prints this text with \`mcgit help CMD\` or \`mcgit CMD --help\`; a test checks the two stay identical. Exit status everywhere: 0 success, 1 refused or failed (one-line reason on stderr), 2 usage error (the reason and the hint \`see 'mcgit help CMD'\` on stderr, e.g. \`mcgit plan: unrecognized option '--trsut' (did you mean '--trust'?)\`; a long option may be shortened while it stays unambiguous). Wherever \`--cluster C\` goes, C may come from the environment variable \`MCGIT_CLUSTER\` instead."; echo
  for c in $("$M" help | awk '/^commands:/{f=1;next} f&&/^  [a-z]/{print $1}'); do
    echo "## mcgit $c"; echo; echo '```'; "$M" help "$c"; echo '```'; echo
  done
} > docs/commands.md
