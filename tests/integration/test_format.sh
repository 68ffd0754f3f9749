#!/usr/bin/env bash
# Formatting is checked, not a convention: every C file of src/ and
# tests/unit is what clang-format makes of it under .clang-format (the rule
# is in docs/development.md; `clang-format -i FILE` applies it). Debian 12's
# clang-format 14 is the reference: other versions format some constructs
# differently, so with only another version at hand the test is skipped. A
# copy with one file misformatted must be refused, naming the file and line.
. "$(dirname "$0")/lib.sh"
CF=""
for c in clang-format-14 clang-format; do
  if command -v "$c" >/dev/null && "$c" --version | grep -q 'version 14\.'; then CF=$c; break; fi
done
[ -n "$CF" ] || skip "clang-format 14 not found (tests/setup.sh installs it)"

# check DIR: every *.c and *.h under DIR/src and DIR/tests/unit, against
# DIR/.clang-format; one line per misformatted file (its first difference)
check() {
  local dir=$1 f n=0 bad_files=0
  while IFS= read -r f; do
    n=$((n + 1))
    if ! "$CF" --style=file --dry-run -Werror "$f" >"$T/cf.err" 2>&1; then
      bad_files=$((bad_files + 1))
      grep -m1 -E '^[^ ]+:[0-9]+:[0-9]+: error' "$T/cf.err" | sed "s|^$dir/||"
    fi
  done < <(find "$dir/src" "$dir/tests/unit" -name '*.[ch]' | sort)
  echo "format: $n files, $bad_files misformatted"
  [ "$bad_files" = 0 ]
}

expect_rc 0 "src/ and tests/unit are formatted as .clang-format says" -- check "$SRC"
expect_grep "^format: [0-9]+ files, 0 misformatted" "$T/out" "and it counted them"

# a copy with one statement broken over two lines is refused, by file and line
mkdir -p "$T/copy/tests"
cp "$SRC/.clang-format" "$T/copy/"
cp -r "$SRC/src" "$T/copy/src"
cp -r "$SRC/tests/unit" "$T/copy/tests/unit"
printf 'int mcg_util_planted(int a)\n{\n    return a +\n        1;\n}\n' >"$T/copy/src/util/planted.c"
expect_rc 1 "a misformatted file is refused" -- check "$T/copy"
expect_grep "^src/util/planted.c:3:[0-9]+: error" "$T/out" "named by file and line"
expect_grep "^format: [0-9]+ files, 1 misformatted" "$T/out" "only that one"
finish
