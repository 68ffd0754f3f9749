#!/usr/bin/env bash
# docs/commands.md holds every command's help text verbatim (mcgit help CMD).
. "$(dirname "$0")/lib.sh"
cmds=$("$MCGIT" help | awk '/^commands:/{f=1;next} f&&/^  [a-z]/{print $1}')
[ -n "$cmds" ] && ok "help lists commands" || bad "help lists no commands"
# every command defined in src/cli/ (const mcg_cmd mcg_cmd_X = {"name", ...) is in that list
defined=$(grep -h -A1 '^const mcg_cmd mcg_cmd_[a-z_]* = {' "$SRC"/src/cli/cmd_*.c | sed -n 's/^ *"\([a-z-]*\)",$/\1/p' | sort)
[ "$(echo "$defined" | wc -w)" -ge 20 ] && ok "(found $(echo "$defined" | wc -w) commands in src/cli)" || bad "commands in src/cli: $defined"
missing=$(comm -23 <(echo "$defined") <(echo "$cmds" | tr ' ' '\n' | sort))
[ -z "$missing" ] && ok "mcgit help lists every command (plan, approve, heartbeat, pool, sync ...)" || bad "mcgit help misses: $missing"
for c in $cmds; do
  "$MCGIT" help "$c" > "$T/help.txt"
  "$MCGIT" "$c" --help > "$T/help2.txt"
  if cmp -s "$T/help.txt" "$T/help2.txt"; then ok "$c: help CMD = CMD --help"; else bad "$c: help CMD differs from CMD --help"; fi
  if python3 - "$SRC/docs/commands.md" "$T/help.txt" <<'PY'
import sys
doc = open(sys.argv[1]).read(); txt = open(sys.argv[2]).read()
sys.exit(0 if "```\n" + txt + "```" in doc else 1)
PY
  then ok "$c: docs/commands.md matches"; else bad "$c: docs/commands.md is out of date (regenerate it)"; fi
done
expect_rc 2 "unknown command is a usage error" -- "$MCGIT" no-such-command
expect_rc 0 "version" -- "$MCGIT" version
finish
