#!/usr/bin/env bash
# Names are checked, not a convention: tests/naming.py refuses an exported
# symbol of src/<module>/ that does not start with mcg_ and one of the
# module's words (the vocabulary is in naming.py, reviewed like code). The
# real build must pass; a build tree with one planted object each must be
# refused, naming the file and the symbol.
. "$(dirname "$0")/lib.sh"
need python3 nm cc
check="$SRC/tests/naming.py"
B=$(dirname "$MCGIT")
[ -d "$B/CMakeFiles/mcgio.dir/src" ] || skip "no CMake build tree next to $MCGIT"

expect_rc 0 "the build's exported names follow the rule" -- python3 "$check" "$B"
expect_grep "^naming: [0-9]+ exported names" "$T/out" "and it counted them"

# plant MODULE SOURCE: a tree with one object of src/MODULE/planted.c
plant() {
  rm -rf "$T/b"
  mkdir -p "$T/b/CMakeFiles/mcgio.dir/src/$1"
  printf '%s\n' "$2" >"$T/planted.c"
  cc -c -o "$T/b/CMakeFiles/mcgio.dir/src/$1/planted.c.o" "$T/planted.c"
}
plant agent 'int helper_count(void) { return 1; }'
expect_rc 1 "a name without mcg_ refused" -- python3 "$check" "$T/b"
expect_grep "^src/agent/planted.c: helper_count: an exported name starts with mcg_$" "$T/out" "named"
plant agent 'int mcg_render_thing(void) { return 1; }'
expect_rc 1 "another module's word refused" -- python3 "$check" "$T/b"
expect_grep "^src/agent/planted.c: mcg_render_thing: 'render' is not one of agent's words" "$T/out" "named"
plant agent 'int mcg_agent_thing(void) { return 1; } static int mcg_whatever(void) { return 0; } int use(void);'
expect_rc 0 "the module's own word, and static names, pass" -- python3 "$check" "$T/b"
finish
