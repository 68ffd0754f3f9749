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

# plant MODULE SOURCE [USER]: a tree with one object of src/MODULE/planted.c
# (and, given USER, a test object calling what it exports)
plant() {
  rm -rf "$T/b"
  mkdir -p "$T/b/CMakeFiles/mcgio.dir/src/$1" "$T/b/tests/CMakeFiles/user.dir"
  printf '%s\n' "$2" >"$T/planted.c"
  cc -c -o "$T/b/CMakeFiles/mcgio.dir/src/$1/planted.c.o" "$T/planted.c"
  if [ -n "${3:-}" ]; then
    printf '%s\n' "$3" >"$T/user.c"
    cc -c -o "$T/b/tests/CMakeFiles/user.dir/user.c.o" "$T/user.c"
  fi
}
plant agent 'int helper_count(void) { return 1; }' 'int helper_count(void); int t(void) { return helper_count(); }'
expect_rc 1 "a name without mcg_ refused" -- python3 "$check" "$T/b"
expect_grep "^src/agent/planted.c: helper_count: an exported name starts with mcg_$" "$T/out" "named"
plant agent 'int mcg_render_thing(void) { return 1; }' 'int mcg_render_thing(void); int t(void) { return mcg_render_thing(); }'
expect_rc 1 "another module's word refused" -- python3 "$check" "$T/b"
expect_grep "^src/agent/planted.c: mcg_render_thing: 'render' is not agent's prefix \\(mcg_agent_...\\)" "$T/out" "named, with the module's prefix"
plant agent 'int mcg_agent_thing(void) { return 1; } static int mcg_whatever(void) { return 0; } int use(void);' \
  'int mcg_agent_thing(void); int t(void) { return mcg_agent_thing(); }'
expect_rc 0 "the module's own word, and static names, pass" -- python3 "$check" "$T/b"
plant agent 'int mcg_agent_thing(void) { return 1; } int mcg_agent_lonely(void) { return mcg_agent_thing(); }' \
  'int mcg_agent_thing(void); int t(void) { return mcg_agent_thing(); }'
expect_rc 1 "an exported name no other file uses refused (static or dead)" -- python3 "$check" "$T/b"
expect_grep "^src/agent/planted.c: mcg_agent_lonely: exported but no other file uses it" "$T/out" "named"
grep -q "mcg_agent_thing" "$T/out" && bad "the one a test calls was refused too" || ok "and the one a test calls is not"
# a legacy word no name uses any more must leave LEGACY: the whole build's
# objects without osenv/clock.c (the only mcg_mono_* and mcg_wall_* names)
rm -rf "$T/w"
mkdir -p "$T/w"
(cd "$B" && find . -name '*.o' -exec cp --parents -t "$T/w" {} +)
rm -f "$T/w/CMakeFiles/mcgio.dir/src/osenv/clock.c.o"
expect_rc 1 "a legacy word nothing uses any more is refused" -- python3 "$check" "$T/w"
expect_grep "^tests/naming.py: osenv's legacy word 'wall' is used by no exported name" "$T/out" "named"
finish
