#!/usr/bin/env bash
# `cmake --install` into a DESTDIR: the binary, one man page per command
# (mcgit(1) and mcgit-CMD(1)) clean under `mandoc -T lint` and saying what
# `mcgit help CMD` says, and bash and zsh completions offering exactly the
# options the commands accept (their getopt tables in src/cli/), nothing
# else. The systemd units are checked by test_systemd_units.sh.
. "$(dirname "$0")/lib.sh"
need cmake mandoc man python3 bash
BUILD=$(dirname "$MCGIT")
[ -f "$BUILD/CMakeCache.txt" ] || skip "$BUILD is not a CMake build directory"
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$BUILD/CMakeCache.txt")
R=$T/root P=$T/root$prefix

expect_rc 0 "cmake --install into a DESTDIR" -- env DESTDIR="$R" cmake --install "$BUILD"
[ -x "$P/bin/mcgit" ] && "$P/bin/mcgit" version >"$T/v" 2>&1 && ok "installed binary runs" ||
  bad "installed binary $P/bin/mcgit does not run"

# ------------------------------------------------------------------ man pages
cmds=$("$MCGIT" help | awk '/^commands:/{f=1;next} f&&/^  [a-z]/{print $1}')
[ -n "$cmds" ] || bad "mcgit help lists no commands"
M=$P/share/man/man1
want=$( (echo mcgit.1; for c in $cmds; do echo "mcgit-$c.1"; done) | sort)
have=$(cd "$M" && ls | sort)
[ "$want" = "$have" ] && ok "one man page per command, and mcgit.1" ||
  { bad "man pages differ from the command list"; diff <(echo "$want") <(echo "$have") | head; }

# lint at every level. mandoc checks each .Xr against the host's manual
# (/usr/share/man and its mandoc.db, whatever options say): what it says of
# those is about the host, not these pages, and is left out; each .Xr is
# checked below against the pages built here instead.
mandoc -T lint -W all "$M"/*.1 >"$T/lint" 2>&1 || true
grep -v -e 'STYLE: referenced manual not found' -e 'outdated mandoc.db' "$T/lint" >"$T/lint.real" || true
[ ! -s "$T/lint.real" ] && ok "mandoc -T lint -W all: clean" ||
  { bad "mandoc -T lint reports problems"; head -20 "$T/lint.real"; }
missing=$(grep -ho '^\.Xr [^ ]* [0-9]' "$M"/*.1 | awk '{print $2 "." $3}' | sort -u |
          while read -r p; do [ -f "$M/$p" ] || echo "$p"; done)
[ -z "$missing" ] && ok "every .Xr names an installed page" || bad "missing pages: $missing"
LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$M"/*.1 \
  >/dev/null 2>"$T/groff" || true
[ ! -s "$T/groff" ] && ok "man --warnings (groff, as lintian runs it): clean" ||
  { bad "groff warnings"; head "$T/groff"; }

# every word of `mcgit help CMD`, in order, is in the rendered page
cat >"$T/words.py" <<'EOF'
import re, subprocess, sys
help_text, page = open(sys.argv[1]).read(), open(sys.argv[2]).read()
# "usage:" and a command's "options:" line are the SYNOPSIS and OPTIONS headings
norm = lambda s: [w for w in re.split(r"\s+", re.sub(r"(?m)^options:$", "", s.replace("usage:", ""))) if w]
page_words = norm(page)
i = 0
for w in norm(help_text):
    while i < len(page_words) and page_words[i] != w:
        i += 1
    if i == len(page_words):
        print("not in the page, or out of order: %r" % w); sys.exit(1)
    i += 1
EOF
same_words() {  # HELPFILE PAGE
  mandoc -T ascii -O width=250 "$2" | sed 's/.\x08//g' >"$T/page.txt"
  python3 "$T/words.py" "$1" "$T/page.txt"
}
fails=
for c in $cmds; do
  "$MCGIT" help "$c" >"$T/help.$c"
  same_words "$T/help.$c" "$M/mcgit-$c.1" >"$T/words.$c" || fails="$fails $c($(cat "$T/words.$c"))"
done
# mcgit(1) lists the commands as their pages: `mcgit-init(1) create ...`
"$MCGIT" help | sed -E '/^commands:$/d; s/^  ([a-z-]+) +/mcgit-\1(1) /' >"$T/help.main"
same_words "$T/help.main" "$M/mcgit.1" >"$T/words.main" || fails="$fails mcgit($(cat "$T/words.main"))"
[ -z "$fails" ] && ok "each page holds its help text word for word" || bad "pages differ from help:$fails"
# the check sees a changed word
sed 's/^Verify REV/Check REV/' "$M/mcgit-plan.1" >"$T/plan.1"
if same_words "$T/help.plan" "$T/plan.1" >/dev/null; then bad "a changed page passes the word check"
else ok "the word check fails on a page that says something else"; fi

# ------------------------------------------------------------------ completion
B=$P/share/bash-completion/completions/mcgit Z=$P/share/zsh/vendor-completions/_mcgit
[ -f "$B" ] && [ -f "$Z" ] && ok "bash and zsh completions installed" || bad "completions missing"
bash -n "$B" && ok "bash completion parses" || bad "bash completion: syntax error"
mkdir -p "$T/empty"
# comp WORD...: what bash offers for the last word
comp() {
  (cd "$T/empty" && bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _mcgit
    printf "%s\n" "${COMPREPLY[@]}" | sort' _ "$B" "$@")
}
[ "$(comp mcgit '')" = "$(echo "$cmds" | sort)" ] && ok "bash: mcgit <TAB> offers every command" ||
  bad "bash: command list differs"

# The options each command accepts, from its getopt tables: file -> command
# (rollback, approve, heartbeat parse theirs in common.c; pool parses its
# own with sync's, in cmd_sync.c).
cat >"$T/getopt.py" <<'EOF'
import re, sys, glob, os
src = sys.argv[1]
shared = {"mcg_cli_signer_args(": "common.c", "mcg_cli_wait_args_parse(": "cmd_sync.c"}
for path in sorted(glob.glob(src + "/src/cli/cmd_*.c")):
    cmd = os.path.basename(path)[4:-2]
    text = open(path).read()
    for call, home in shared.items():
        if call in text and os.path.basename(path) != home:
            shared_text = open(src + "/src/cli/" + home).read()
            # the shared wait table only (cmd_sync.c also holds sync's own, with --now)
            m = re.search(r'const mcg_opt mcg_cli_wait_opts\[\] = \{.*?\};', shared_text, re.S)
            text += m.group(0) if call == "mcg_cli_wait_args_parse(" and m else shared_text
    for name, arg, val in re.findall(r'\{"([a-z][a-z0-9-]*)",\s*(no_argument|required_argument|optional_argument),\s*0,\s*\'(.)\'\}', text):
        print(cmd, name, 1 if arg == "required_argument" else 0, val)
    # option tables (mcg_opt): MCG_OPT_[SHORT_|SUB_]FLAG|VALUE([subs,] key, "name", ...)
    for short, kind, key, name in re.findall(r'MCG_OPT_(SHORT_|SUB_)?(FLAG|VALUE)\(\s*(?:[A-Z_0-9]+,\s*)?(\'.\'|[A-Za-z_0-9]+),\s*"([a-z][a-z0-9-]*)"', text):
        short = short == "SHORT_"
        print(cmd, name, 1 if kind == "VALUE" else 0, key[1] if short else "-")
EOF
python3 "$T/getopt.py" "$SRC" | sort -u >"$T/getopt"
[ -s "$T/getopt" ] || bad "no getopt tables found in src/cli"

fails=
for c in $cmds; do
  subs=$(comp mcgit "$c" '')
  [ "$c" = status ] || [ "$c" = help ] && subs=   # positional words, not subcommands
  echo "$subs" | grep -q . || subs=-
  : >"$T/offered"
  for s in $subs; do
    words=(mcgit "$c"); [ "$s" = - ] || words+=("$s")
    for o in $(comp "${words[@]}" -); do
      [ "$o" = --help ] && continue
      echo "$o" >>"$T/offered"
      # takes a value? then bash offers files or fixed values after it, not options
      after=$(comp "${words[@]}" "$o" -)
      args=()
      if [ -n "$after" ]; then args=("$o"); else args=("$o" 1); fi
      # the binary accepts it (getopt reads it, then --help stops the command)
      rc=0; (cd "$T/empty" && timeout 20 "$MCGIT" "${words[@]:1}" "${args[@]}" --help) \
        </dev/null >/dev/null 2>"$T/err" || rc=$?
      [ "$rc" = 0 ] || fails="$fails [$c $s: $o rc=$rc $(head -1 "$T/err")]"
      # a long option's argument matches its getopt table
      if [[ $o == --* ]]; then
        g=$(awk -v c="$c" -v n="${o#--}" '$1 == c && $2 == n {print $3}' "$T/getopt")
        if [ "$g" = 1 ] && [ ${#args[@]} = 1 ]; then fails="$fails [$c $s: $o takes a value, completion does not know]"; fi
        if [ "$g" = 0 ] && [ ${#args[@]} = 2 ]; then fails="$fails [$c $s: $o takes no value, completion expects one]"; fi
      fi
    done
  done
  # every option the command's getopt tables accept is offered (or its short form)
  while read -r _ name _ val; do
    [ "$name" = help ] && continue
    grep -qxF -- "--$name" "$T/offered" || grep -qxF -- "-$val" "$T/offered" ||
      fails="$fails [$c: --$name accepted but not completed (missing from its help text?)]"
  done < <(awk -v c="$c" '$1 == c' "$T/getopt")
done
[ -z "$fails" ] && ok "bash: every command offers exactly its accepted options" ||
  bad "completion and getopt tables differ:$fails"
[ "$(comp mcgit render -o '')" = "$(printf 'json\nnames')" ] && ok "bash: -o offers its values" ||
  bad "bash: render -o values: $(comp mcgit render -o '' | tr '\n' ' ')"
[ "$(comp mcgit status '')" = "$(printf 'nodes\npools')" ] && ok "bash: status offers pools|nodes" ||
  bad "bash: status words"
[ "$(comp mcgit help ver)" = "verify
version" ] && ok "bash: help completes command names" || bad "bash: help CMD"

# zsh: the same answers through the same function, with compadd, _files and
# _describe stubbed to print what they would offer
if command -v zsh >/dev/null; then
  zsh -n "$Z" && ok "zsh completion parses" || bad "zsh completion: syntax error"
  zcomp() {
    zsh -f -c 'compadd() { while [[ $1 != -- ]]; do shift; done; shift; print -l -- "$@"; }
      _files() { print -- "<files>"; }
      _describe() { local a n=${@[-1]}; for a in ${(P)n}; do print -- ${a%%:*}; done; }
      words=("${@:2}"); CURRENT=$#words; source $1' _ "$Z" "$@" | sort
  }
  fails=
  [ "$(zcomp mcgit '')" = "$(comp mcgit '')" ] || fails="$fails [commands]"
  for c in $cmds; do
    [ "$(zcomp mcgit "$c" -)" = "$(comp mcgit "$c" -)" ] || fails="$fails [$c -]"
    subs=$(comp mcgit "$c" '')
    if [ -n "$subs" ]; then
      [ "$(zcomp mcgit "$c" '')" = "$subs" ] || fails="$fails [$c subs]"
      for s in $subs; do
        [ "$c" = help ] && break
        [ "$(zcomp mcgit "$c" "$s" -)" = "$(comp mcgit "$c" "$s" -)" ] || fails="$fails [$c $s -]"
      done
    fi
  done
  [ "$(zcomp mcgit plan -o '')" = "$(comp mcgit plan -o '')" ] || fails="$fails [plan -o]"
  [ "$(zcomp mcgit render --repo '')" = "<files>" ] || fails="$fails [render --repo files]"
  [ -z "$fails" ] && ok "zsh offers what bash offers" || bad "zsh and bash differ:$fails"
else
  skip_part "zsh not installed (tests/setup.sh installs it)"
fi

finish
