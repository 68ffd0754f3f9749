# helpspec.awk — the options of one command, read from its help text
# (`mcgit help CMD` on stdin, -v cmd=CMD), as tab-separated lines:
#
#   sub  CMD SUB                  a subcommand (`mcgit bundle create ...`)
#   opt  CMD SUB NAME ARG VALUES  an option; SUB "*" when the help's option
#                                 list names it for every subcommand, "-"
#                                 when the command has none; ARG 1 when it
#                                 takes a value, VALUES the fixed values
#                                 (`-o names|json`), space-separated
#   kw   CMD SUB WORDS            fixed positional words (`[pools|nodes]`)
#   cmdarg CMD                    a positional CMD: complete command names
#
# Read from the synopsis (the `usage:` lines up to the first blank line,
# continuation lines joined) and from the option list (lines indented by at
# most four spaces starting with `-`, e.g. `  -q, --quiet   no progress`,
# `  -o, --output text|json   ...`; the commands make it from their option
# tables, see mcg_opt in src/cli/cli.h).
# The help text is the single source of the man pages, the completions and
# docs/commands.md; tests/integration/test_install.sh checks the result
# against the getopt tables in src/cli/.

function emit(line) { if (!(line in seen)) { seen[line] = 1; print line } }

# isvalues(tok): a fixed-value list such as `names|json` (lower case words).
function isvalues(tok) { return tok ~ /^[a-z][a-z0-9-]*(\|[a-z][a-z0-9-]*)*$/ }

# addopt(sub, name, arg, values): record an option of sub, merging values.
function addopt(s, name, arg, vals,    k) {
    k = s SUBSEP name
    if (!(k in optarg)) { optorder[++nopt] = k; optarg[k] = arg; optvals[k] = "" }
    if (arg) optarg[k] = 1
    gsub(/\|/, " ", vals)
    if (vals != "" && (" " optvals[k] " ") !~ (" " vals " "))
        optvals[k] = optvals[k] (optvals[k] == "" ? "" : " ") vals
    inusage[name] = inusage[name] || (s != "*")
}

# synopsis(line): one joined synopsis line, after "mcgit CMD".
function synopsis(line,    n, t, i, s, tok, bare, nxt, closed) {
    n = split(line, t, /[ \t]+/)
    i = 1
    s = "-"
    if (n >= 1 && t[1] ~ /^[a-z][a-z0-9-]*$/) { s = t[1]; emit("sub\t" cmd "\t" s); i = 2 }
    subs[s] = 1
    for (; i <= n; i++) {
        tok = t[i]
        bare = tok
        gsub(/^[\[(]+/, "", bare)
        closed = (bare ~ /[\])]$/)
        gsub(/[\])]+$/, "", bare)
        if (bare ~ /^--?[A-Za-z0-9][A-Za-z0-9-]*$/) {
            nxt = (i < n) ? t[i + 1] : ""
            if (!closed && nxt != "" && nxt !~ /^[\[(-]/ && nxt != "|" && nxt != "...") {
                gsub(/[\])]+$/, "", nxt)
                addopt(s, bare, 1, isvalues(nxt) ? nxt : "")
                i++
            } else {
                addopt(s, bare, 0, "")
            }
        } else if (bare == "CMD") {
            emit("cmdarg\t" cmd)
        } else if (bare ~ /\|/ && isvalues(bare)) {
            kw[s] = kw[s] (kw[s] == "" ? "" : "|") bare
        }
    }
}

BEGIN { state = "usage"; cur = "" }

state == "usage" {
    if ($0 ~ /^[ \t]*$/) {
        if (cur != "") synopsis(cur)
        cur = ""
        state = "body"
        next
    }
    line = $0
    if (sub(/^usage: +mcgit +/, "", line) || sub(/^ +mcgit +/, "", line)) {
        if (cur != "") synopsis(cur)
        # the command's own name
        sub(/^[^ ]+ */, "", line)
        cur = line
    } else {
        sub(/^ +/, "", line)
        cur = cur " " line
    }
    next
}

# the option list: `  -o names   text`, `  -q, --quiet   text`
state == "body" && /^ +-/ && match($0, /[^ ]/) <= 5 {
    term = $0
    sub(/^ +/, "", term)
    sub(/  .*$/, "", term)
    n = split(term, parts, /, */)
    # `-o, --output text|json`: the value named once, after the last form
    val = ""
    for (j = 1; j <= n; j++)
        if (split(parts[j], w, / +/) >= 2) val = w[2]
    for (j = 1; j <= n; j++) {
        split(parts[j], w, / +/)
        if (w[1] !~ /^--?[A-Za-z0-9][A-Za-z0-9-]*$/) continue
        if (val != "") addopt("*", w[1], 1, isvalues(val) ? val : "")
        else addopt("*", w[1], 0, "")
    }
}

END {
    if (state == "usage" && cur != "") synopsis(cur)
    for (i = 1; i <= nopt; i++) {
        split(optorder[i], kp, SUBSEP)
        s = kp[1]; name = kp[2]
        # an option the synopsis places already belongs where it stands;
        # only the list's own additions go to every subcommand.
        if (s == "*" && inusage[name]) {
            for (u in subs) {
                k = u SUBSEP name
                if ((k in optarg) && optvals[optorder[i]] != "") {
                    nv = split(optvals[optorder[i]], vv, " ")
                    for (v = 1; v <= nv; v++)
                        if ((" " optvals[k] " ") !~ (" " vv[v] " ")) optvals[k] = optvals[k] (optvals[k] == "" ? "" : " ") vv[v]
                }
            }
            continue
        }
    }
    for (i = 1; i <= nopt; i++) {
        split(optorder[i], kp, SUBSEP)
        s = kp[1]; name = kp[2]
        if (s == "*" && inusage[name]) continue
        emit("opt\t" cmd "\t" s "\t" name "\t" optarg[optorder[i]] "\t" optvals[optorder[i]])
    }
    for (u in kw) {
        words = kw[u]; gsub(/\|/, " ", words)
        emit("kw\t" cmd "\t" u "\t" words)
    }
}
