#!/usr/bin/env bash
# Function size is checked, not a convention: tests/funcsize.py refuses a
# function in src/ over 100 lines or with more than 25 branches (the rule is
# in docs/development.md). The real tree must pass; copies with one planted
# function each must be refused, naming the file, line and function, and
# functions at the limits must pass.
. "$(dirname "$0")/lib.sh"
need python3
check="$SRC/tests/funcsize.py"

expect_rc 0 "src/ has no function over the limits" -- python3 "$check" "$SRC/src"

# plant FILE holding TEXT in a copy of src/, expect RC and, for a refusal, WANT
plant() {
  local desc=$1 file=$2 text=$3 rc=$4 want=${5:-}
  rm -rf "$T/src"
  cp -r "$SRC/src" "$T/src"
  printf '%s\n' "$text" > "$T/src/$file"
  expect_rc "$rc" "$desc" -- python3 "$check" "$T/src"
  [ -z "$want" ] || expect_grep "$want" "$T/out" "$desc: named"
}
# the N-4 statements of an N-line function (signature, '{', return, '}')
body() { local i; for ((i = 0; i < $1 - 4; i++)); do echo "    x += $i;"; done; }
# a function with N branches
branches() { local i; for ((i = 0; i < $1; i++)); do echo "    if (x == $i) x++;"; done; }

plant "101 lines refused" util/planted.c \
  "static int f(int x)
{
$(body 101)
    return x;
}" 1 '^src/util/planted.c:1: f: 101 lines \(limit 100\)$'
plant "100 lines pass" util/planted.c \
  "static int f(int x)
{
$(body 100)
    return x;
}" 0
plant "a signature over several lines counts from its first line" util/planted.c \
  "/* a comment above is not counted */
static int
g(int x,
  int y)
{
$(body 99)
    return x + y;
}" 1 '^src/util/planted.c:2: g: 101 lines'
plant "26 branches refused" agent/planted.c \
  "int h(int x)
{
$(branches 26)
    return x;
}" 1 '^src/agent/planted.c:1: h: 26 branches \(limit 25\)$'
plant "25 branches pass" agent/planted.c \
  "int h(int x)
{
$(branches 25)
    return x;
}" 0
plant "&&, ||, ?: and case count; strings and comments do not" cli/planted.c \
  "int k(int x)
{
    /* if if if if if if if if if if if if if if if if if if if if if if if if if if */
    const char *s = \"while while while && || ? for for for for for for for for for\";
    switch (x) {
    case 1: case 2: case 3: case 4: case 5: case 6: case 7: case 8: case 9: case 10:
        x = x && s ? 1 : 2;
        break;
    }
    for (; x || s[0]; x--)
        while (x > 100 && s)
            x -= x > 5 ? 2 : 1;
    if (x) x++;
    if (x) x++;
    if (x) x++;
    if (x) x++;
    if (x) x++;
    if (x) x++;
    if (x) x++;
    if (x) x++;
    if (x) x++;
    return x;
}" 1 '^src/cli/planted.c:1: k: 26 branches'
finish
