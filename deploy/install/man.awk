# man.awk — one mdoc(7) manual page from a help text, so the man pages say
# what `mcgit help` says and nothing else:
#   mcgit help CMD | awk -v cmd=CMD -v summary=S -v date=D -v version=V -f man.awk
#   mcgit help     | awk -v cmd= -v commands="a b" ... -f man.awk   (mcgit(1))
#
# The `usage:` lines (up to the first blank line) become the SYNOPSIS as a
# literal display, the rest the DESCRIPTION: lines at column 0 are prose
# (filled, one sentence a line as mdoc wants), indented lines and paragraphs
# that start as a definition list (`create   write ...`) are literal
# displays, kept as written. A command's `options:` list (made from its
# option table, src/cli/cli.h) becomes an OPTIONS section, kept as written.
# For mcgit(1) the `commands:` list becomes a COMMANDS section naming each
# command's page. Nothing is reworded.

# esc(s): s as mdoc text: backslashes escaped, no trailing blanks, and a
# line starting with a control character or blank is protected.
function esc(s) {
    gsub(/\\/, "\\e", s)
    sub(/[ \t]+$/, "", s)
    if (s ~ /^[.']/) s = "\\&" s
    return s
}

# prose(s): s as text lines, broken after each sentence's end (abbreviations
# such as "e.g." marked as none) and before 80 columns.
function prose(s,    p, q) {
    s = esc(s)
    gsub(/e\.g\. /, "e.g.\\\\\\& ", s)
    gsub(/i\.e\. /, "i.e.\\\\\\& ", s)
    sub(/e\.g\.$/, "e.g.\\\\\\&", s)
    sub(/i\.e\.$/, "i.e.\\\\\\&", s)
    while ((p = match(s, /[^ ][.?!][)"'`]* +[^ ]/)) > 0) {
        q = p + RLENGTH - 1
        out(substr(s, 1, q - 1))
        s = substr(s, q)
        if (s ~ /^[.']/) s = "\\&" s
    }
    if (s != "") out(s)
}

# out(s): s, wrapped at blanks to lines of at most 80 bytes.
function out(s,    i, cut) {
    sub(/ +$/, "", s)
    while (length(s) > 80) {
        cut = 0
        for (i = 80; i > 1; i--) if (substr(s, i, 1) == " ") { cut = i; break }
        if (!cut) break
        print substr(s, 1, cut - 1)
        s = substr(s, cut + 1)
        if (s ~ /^[.']/) s = "\\&" s
    }
    print s
}

function litopen() { if (mode != "lit") { print ".Bd -literal"; mode = "lit" } }
function litclose() { if (mode == "lit") { print ".Ed"; mode = "none" } }

BEGIN {
    state = "usage"; mode = "none"; pp = 0; deflist = 0
    name = (cmd == "") ? "mcgit" : "mcgit-" cmd
    title = toupper(name)
    print ".\\\" Generated from `mcgit help" (cmd == "" ? "" : " " cmd) "` by deploy/install/gen-man.sh: do not edit."
    print ".Dd " date
    print ".Dt " title " 1"
    print ".Os"
    print ".Sh NAME"
    print ".Nm " name
    print ".Nd " esc(summary)
    print ".Sh SYNOPSIS"
    print ".Bd -literal"
}

state == "usage" {
    if ($0 ~ /^[ \t]*$/) {
        print ".Ed"
        print ".Sh DESCRIPTION"
        state = "body"
        first = 1
        next
    }
    line = $0
    if (!sub(/^usage: /, "", line)) sub(/^       /, "", line)
    print esc(line)
    next
}

# mcgit(1): the command list
cmd == "" && /^commands:$/ {
    litclose()
    print ".Sh COMMANDS"
    print ".Bl -tag -width Ds"
    incommands = 1
    next
}
incommands && /^  [a-z]/ {
    c = $1
    text = $0
    sub(/^  [^ ]+ +/, "", text)
    print ".It Xr mcgit-" c " 1"
    print esc(text)
    next
}
incommands && /^[ \t]*$/ {
    print ".El"
    incommands = 0
    first = 1
    next
}

# a command's option list, made from its option table
cmd != "" && /^options:$/ {
    litclose()
    print ".Sh OPTIONS"
    deflist = 0
    pp = 0
    first = 1
    next
}

/^[ \t]*$/ {
    litclose()
    deflist = 0
    pp = 1
    next
}

# a paragraph opening with `term   text` (no indentation) is a definition
# list: kept literal to its end
pp || first {
    if ($0 ~ /^[a-z][a-z-]*   *[^ ]/ && $0 ~ /^[^ ]+  /) deflist = 1
}

{
    if (deflist || $0 ~ /^[ \t]/) {
        litopen()
        print esc($0)
    } else {
        if (mode == "lit") { litclose(); pp = 1 }
        if (pp && !first) print ".Pp"
        prose($0)
    }
    pp = 0
    first = 0
}

END {
    if (state == "usage") { print ".Ed"; print ".Sh DESCRIPTION" }
    litclose()
    if (incommands) print ".El"
    print ".Sh SEE ALSO"
    if (cmd == "") {
        n = split(commands, cs, " ")
        # sorted, as mdoc wants SEE ALSO
        for (i = 2; i <= n; i++)
            for (j = i; j > 1 && cs[j - 1] > cs[j]; j--) { t = cs[j]; cs[j] = cs[j - 1]; cs[j - 1] = t }
        for (i = 1; i <= n; i++) print ".Xr mcgit-" cs[i] " 1" (i < n ? " ," : "")
    } else {
        print ".Xr mcgit 1"
    }
}
