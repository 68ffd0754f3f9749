#!/usr/bin/env bash
# Writes mcgit's bash and zsh completions, generated from the help texts of
# the built binary (so a new command or option is picked up by the next
# build):
#   deploy/install/gen-completion.sh build/mcgit OUTDIR
# OUTDIR/mcgit (bash, for share/bash-completion/completions), OUTDIR/_mcgit
# (zsh, for a directory on $fpath) and OUTDIR/spec.tsv (what both were made
# from: see helpspec.awk). Exit 1 when the binary prints no commands.
set -euo pipefail
M=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
export LC_ALL=C
mkdir -p "$out"

# The command list, `  NAME   SUMMARY` after `commands:` in `mcgit help`.
"$M" help | awk '/^commands:/{f=1;next} f&&/^  [a-z]/{n=$1; sub(/^  [^ ]+ +/,""); print n "\t" $0} f&&/^$/{f=0}' \
  > "$out/commands.tsv"
[ -s "$out/commands.tsv" ] || { echo "gen-completion: $M help lists no commands" >&2; exit 1; }
while IFS=$'\t' read -r c _; do
  "$M" help "$c" | awk -v cmd="$c" -f "$here/helpspec.awk"
done < "$out/commands.tsv" > "$out/spec.tsv.tmp"
mv "$out/spec.tsv.tmp" "$out/spec.tsv"

cmds=$(cut -f1 "$out/commands.tsv" | tr '\n' ' ')
cmds=${cmds% }

# opts_of CMD SUB KIND: the options of CMD SUB ("-" without subcommand), with
# the command-wide ones ("*"); KIND all, or arg (those taking a value).
opts_of() {
  awk -F'\t' -v c="$1" -v s="$2" -v kind="$3" '
    $1 == "opt" && $2 == c && ($3 == s || $3 == "*") && (kind == "all" || $5 == 1) { o = o (o == "" ? "" : " ") $4 }
    END { print o }' "$out/spec.tsv"
}
subs_of() { awk -F'\t' -v c="$1" '$1 == "sub" && $2 == c { o = o (o == "" ? "" : " ") $3 } END { print o }' "$out/spec.tsv"; }
kws_of() { awk -F'\t' -v c="$1" -v s="$2" '$1 == "kw" && $2 == c && $3 == s { print $4 }' "$out/spec.tsv"; }
cmdarg_of() { awk -F'\t' -v c="$1" '$1 == "cmdarg" && $2 == c { print 1 }' "$out/spec.tsv"; }
# vals CMD SUB: lines `OPT<TAB>VALUES` for options with fixed values.
vals_of() {
  awk -F'\t' -v c="$1" -v s="$2" '$1 == "opt" && $2 == c && ($3 == s || $3 == "*") && $6 != "" { print $4 "\t" $6 }' "$out/spec.tsv"
}

# spec_cases, subs_cases, vals_cases: the case arms setting opts, argopts,
# kws, cmdarg; subs; and vals (an option's fixed values), for both shells
# (the syntax is shared).
spec_cases() {
  local c s subs list
  while IFS=$'\t' read -r c _; do
    subs=$(subs_of "$c")
    list=${subs:-"-"}
    for s in $list; do
      local key="$c/"; [ "$s" = "-" ] || key="$c/$s"
      printf "        %s) opts='%s'; argopts='%s'; kws='%s'; cmdarg='%s' ;;\n" \
        "$key" "$(opts_of "$c" "$s" all)" "$(opts_of "$c" "$s" arg)" "$(kws_of "$c" "$s")" "$(cmdarg_of "$c")"
    done
  done < "$out/commands.tsv"
}
subs_cases() {
  local c subs
  while IFS=$'\t' read -r c _; do
    subs=$(subs_of "$c")
    [ -z "$subs" ] || printf "        %s) subs='%s' ;;\n" "$c" "$subs"
  done < "$out/commands.tsv"
}
vals_cases() {
  local c s subs list o v
  while IFS=$'\t' read -r c _; do
    subs=$(subs_of "$c")
    list=${subs:-"-"}
    for s in $list; do
      local key="$c/"; [ "$s" = "-" ] || key="$c/$s"
      while IFS=$'\t' read -r o v; do
        printf "        %s/%s) vals='%s' ;;\n" "$key" "$o" "$v"
      done < <(vals_of "$c" "$s")
    done
  done < "$out/commands.tsv"
}

# the shared body: find CMD and SUB in words[first..cword-1], then set
# the variables; bash and zsh differ only in indexing and in the reply.
{
cat <<EOF
# bash completion for mcgit(1). Generated from \`mcgit help\` by
# deploy/install/gen-completion.sh when mcgit is built: do not edit.
_mcgit() {
    local cur=\${COMP_WORDS[COMP_CWORD]} prev=\${COMP_WORDS[COMP_CWORD-1]}
    local commands='$cmds'
    local cmd sub= subs= opts= argopts= kws= cmdarg= vals= i w
    COMPREPLY=()
    if (( COMP_CWORD == 1 )); then
        COMPREPLY=(\$(compgen -W "\$commands" -- "\$cur"))
        return
    fi
    cmd=\${COMP_WORDS[1]}
    case \$cmd in
$(subs_cases)
    esac
    if [[ -n \$subs ]]; then
        for (( i = 2; i < COMP_CWORD; i++ )); do
            w=\${COMP_WORDS[i]}
            case " \$subs " in *" \$w "*) sub=\$w; break ;; esac
        done
        if [[ -z \$sub ]]; then
            if [[ \$cur == -* ]]; then COMPREPLY=(\$(compgen -W "--help" -- "\$cur"))
            else COMPREPLY=(\$(compgen -W "\$subs" -- "\$cur")); fi
            return
        fi
    fi
    case "\$cmd/\$sub" in
$(spec_cases)
        *) return ;;
    esac
    case "\$cmd/\$sub/\$prev" in
$(vals_cases)
    esac
    if [[ -n \$vals ]]; then
        COMPREPLY=(\$(compgen -W "\$vals" -- "\$cur"))
        return
    fi
    case " \$argopts " in
        *" \$prev "*) COMPREPLY=(\$(compgen -f -- "\$cur")); compopt -o filenames 2>/dev/null; return ;;
    esac
    if [[ \$cur == -* ]]; then
        COMPREPLY=(\$(compgen -W "\$opts --help" -- "\$cur"))
    elif [[ -n \$cmdarg ]]; then
        COMPREPLY=(\$(compgen -W "\$commands" -- "\$cur"))
    elif [[ -n \$kws ]]; then
        COMPREPLY=(\$(compgen -W "\$kws" -- "\$cur"))
    else
        COMPREPLY=(\$(compgen -f -- "\$cur")); compopt -o filenames 2>/dev/null
    fi
    return 0
}
complete -F _mcgit mcgit
EOF
} > "$out/mcgit.tmp"
mv "$out/mcgit.tmp" "$out/mcgit"

# zsh: the same decisions, with descriptions for the commands.
{
cat <<EOF
#compdef mcgit
# zsh completion for mcgit(1). Generated from \`mcgit help\` by
# deploy/install/gen-completion.sh when mcgit is built: do not edit.
_mcgit() {
    local -a commands
    commands=(
EOF
while IFS=$'\t' read -r c summary; do
  summary=${summary//\'/\'\\\'\'}
  summary=${summary//:/\\:}
  printf "        '%s:%s'\n" "$c" "$summary"
done < "$out/commands.tsv"
cat <<EOF
    )
    if (( CURRENT == 2 )); then
        _describe -t commands 'mcgit command' commands
        return
    fi
    local cur=\$words[CURRENT] prev=\$words[CURRENT-1]
    local cmd=\$words[2] sub= subs= opts= argopts= kws= cmdarg= vals= i w
    case \$cmd in
$(subs_cases)
    esac
    if [[ -n \$subs ]]; then
        for (( i = 3; i < CURRENT; i++ )); do
            w=\$words[i]
            case " \$subs " in *" \$w "*) sub=\$w; break ;; esac
        done
        if [[ -z \$sub ]]; then
            if [[ \$cur == -* ]]; then compadd -- --help
            else compadd -- \${=subs}; fi
            return
        fi
    fi
    case "\$cmd/\$sub" in
$(spec_cases)
        *) return 1 ;;
    esac
    case "\$cmd/\$sub/\$prev" in
$(vals_cases)
    esac
    if [[ -n \$vals ]]; then
        compadd -- \${=vals}
        return
    fi
    case " \$argopts " in
        *" \$prev "*) _files; return ;;
    esac
    if [[ \$cur == -* ]]; then
        compadd -- \${=opts} --help
    elif [[ -n \$cmdarg ]]; then
        compadd -- \${commands%%:*}
    elif [[ -n \$kws ]]; then
        compadd -- \${=kws}
    else
        _files
    fi
}
_mcgit "\$@"
EOF
} > "$out/_mcgit.tmp"
mv "$out/_mcgit.tmp" "$out/_mcgit"
