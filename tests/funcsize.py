#!/usr/bin/env python3
"""Check that no function in src/ is too long or has too many branches.

    tests/funcsize.py [--list] [SRCDIR]     (default: the src/ next to tests/)

The rule (docs/development.md, "Function size"):
  * a function's length is the number of lines from the first line of its
    definition (the return type, also when the signature spans several
    lines) to its closing brace, both included, blank and comment lines
    counted: at most MAX_LINES;
  * its branches are the tokens `if`, `for`, `while`, `case`, `&&`, `||`
    and `?` (the conditional operator) in its body, after comments, string
    and character literals and preprocessor lines are removed: at most
    MAX_BRANCHES. `else`, `default`, `do`, `goto` and `switch` itself are
    not counted (a `switch` counts through its `case`s).

Prints one line per function over a limit, "src/x/y.c:12: f: 130 lines
(limit 100)", and exits 1 when there is any; 0 and a summary line otherwise.
A function in PENDING (below) is not refused while it is over a limit, and
is refused once it is within both: then it must leave the list. With
--list it prints every function, largest first (lines, branches), and
exits 0. Run by ctest as tests/integration/test_funcsize.sh.
"""
import os
import re
import signal
import sys

MAX_LINES = 100
MAX_BRANCHES = 25

# Functions still over a limit, waiting to be split: (file under src/, name).
# The list only shrinks; a new function over a limit is refused.
PENDING = set()

BRANCH = re.compile(r"\b(?:if|for|while|case)\b|&&|\|\||\?")
NAME = re.compile(r"([A-Za-z_]\w*)\s*\($")


def strip(text):
    """Comments, string and character literals and preprocessor lines
    replaced by spaces; newlines kept, so line numbers stay true."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":
            # a preprocessor line, with its continuations
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        line_start = False
        if c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1 : j - 1]) + c)
            i = j
        else:
            if c == "\n":
                line_start = True
            out.append(c)
            i += 1
    return "".join(out)


def functions(text):
    """(name, first line, last line, body) of each function defined in text."""
    s = strip(text)
    line_of = [0] * (len(s) + 1)
    ln = 1
    for k, ch in enumerate(s):
        line_of[k] = ln
        if ch == "\n":
            ln += 1
    line_of[len(s)] = ln
    found = []
    depth = 0
    decl_start = 0  # where the current top-level declaration begins
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if depth == 0 and c in ";}":
            decl_start = i + 1
        elif depth == 0 and c == "=":
            # an initialiser: skip to the end of the declaration
            d = 0
            while i < n and not (d == 0 and s[i] == ";"):
                d += s[i] in "({["
                d -= s[i] in ")}]"
                i += 1
            decl_start = i + 1
        elif c == "{":
            if depth == 0:
                head = s[decl_start:i]
                body_start = i
                depth = 1
                i += 1
                while i < n and depth:
                    depth += s[i] == "{"
                    depth -= s[i] == "}"
                    i += 1
                name = function_name(head)
                if name:
                    first = decl_start + (len(head) - len(head.lstrip()))
                    found.append((name, line_of[first], line_of[i - 1], s[body_start:i]))
                decl_start = i
                continue
            depth += 1
        elif c == "}":
            depth -= 1
        i += 1
    return found


def function_name(head):
    """The name when head (the text before a top-level '{') is a function
    definition's signature, else None (struct, union, enum, extern "C")."""
    h = " ".join(head.split())
    if not h.endswith(")"):
        return None
    # the parameter list: the last balanced (...) group
    d = 0
    for k in range(len(h) - 1, -1, -1):
        d += h[k] == ")"
        d -= h[k] == "("
        if d == 0:
            break
    m = NAME.search(h[: k + 1])
    if not m or m.group(1) in ("__attribute__", "if", "while", "for", "switch"):
        return None
    return m.group(1)


def main(argv):
    listing = "--list" in argv
    args = [a for a in argv if a != "--list"]
    src = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    src = os.path.normpath(src)
    rows, problems = [], []
    for root, dirs, files in os.walk(src):
        dirs.sort()
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(root, f)
            rel = "src/" + os.path.relpath(path, src)
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            for name, first, last, body in functions(text):
                lines = last - first + 1
                branches = len(BRANCH.findall(body))
                rows.append((lines, branches, rel, first, name))
                if (rel[len("src/") :], name) in PENDING:
                    if lines <= MAX_LINES and branches <= MAX_BRANCHES:
                        problems.append(
                            f"{rel}:{first}: {name}: within the limits now, "
                            "remove it from PENDING in tests/funcsize.py"
                        )
                    continue
                if lines > MAX_LINES:
                    problems.append(f"{rel}:{first}: {name}: {lines} lines (limit {MAX_LINES})")
                if branches > MAX_BRANCHES:
                    problems.append(
                        f"{rel}:{first}: {name}: {branches} branches (limit {MAX_BRANCHES})"
                    )
    if listing:
        for lines, branches, rel, first, name in sorted(rows, reverse=True):
            print(f"{lines:5d} {branches:4d}  {rel}:{first}: {name}")
        return 0
    for p in problems:
        print(p)
    if problems:
        return 1
    pending = f" but the {len(PENDING)} pending" if PENDING else ""
    print(
        f"funcsize: {len(rows)} functions, none over {MAX_LINES} lines or {MAX_BRANCHES} "
        f"branches{pending}"
    )
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # --list | head
    sys.exit(main(sys.argv[1:]))
