#!/usr/bin/env python3
"""Check which module of src/ includes which headers.

    tests/layering.py [SRCDIR]        (default: the src/ next to tests/)

Every file under SRCDIR/<module>/ may include, with "dir/file.h":
  * headers of its own module (public and <module>_int.h);
  * the public headers of the modules listed for it in MAY_USE below:
    <module>/<module>.h, and for a module split by concern (PUBLIC below)
    the concern headers its umbrella <module>.h includes; never another
    module's <module>_int.h (unless listed in INT_EXCEPTIONS), nor any
    other header of it;
and with <...> only the libraries it is allowed: libgit2 (git2.h, git2/...)
in LIBGIT2 modules, libcurl (curl/...) in LIBCURL modules, libmicrohttpd
(microhttpd.h) in LIBMHD modules. The pure core
(util, model, render, rollout, trust) gets neither.

Each header PUBLIC lists must exist, and the umbrella must include it.

One way for each cross-cutting thing (ONE_WAY below): clock_gettime only in
osenv/clock.c, getenv only in osenv/env.c, nothing sets the environment,
stderr only through osenv's logger; at most STRERROR_MAX strerror() sites
(mcg_err_set_os adds an errno's reason to a message).
Prints one line per violation, "src/x/y.c:12: x may not include <git2.h>",
and exits 1 when there is any; 0 and a summary line otherwise. Run by ctest
as tests/integration/test_layering.sh.
"""
import os
import re
import sys

# The module graph, bottom up: each module and the modules it may use.
# docs/architecture.md ("The module graph") explains it level by level;
# modules on one level may not use each other (render and rollout; pack,
# metrics and cluster; bundle and agent), and a change here changes that table.
CORE = ["util", "model", "render", "rollout", "trust"]
MAY_USE = {
    "util": [],
    "model": ["util"],
    "render": ["util", "model"],
    "rollout": ["util", "model"],
    "trust": ["util", "model", "render", "rollout"],
    "fsio": CORE,
    # the process's environment: clock, environment variables, logger, time zones
    "osenv": ["util"],
    "pack": ["util", "fsio", "trust"],
    "gitops": CORE + ["fsio", "osenv", "pack"],
    "bundle": CORE + ["fsio", "osenv", "pack", "gitops"],
    "cluster": CORE + ["fsio", "osenv"],
    "metrics": ["util", "fsio", "osenv"],
    "agent": CORE + ["fsio", "osenv", "cluster", "metrics"],
    # a site's status as signed records, and the fleet view at HQ
    "site": CORE + ["fsio", "osenv", "pack", "gitops", "bundle", "cluster"],
    "controller": CORE
    + ["fsio", "osenv", "pack", "gitops", "bundle", "cluster", "metrics", "site"],
    # `mcgit demo`'s story: it drives gitops and a local cluster, as an operator would
    "demo": CORE + ["fsio", "osenv", "gitops", "cluster"],
    "cli": CORE
    + ["fsio", "osenv", "pack", "gitops", "bundle", "cluster", "agent", "controller", "metrics",
       "demo", "site"],
    "main": ["cli"],  # src/main.c: the command table
}
# Modules split by concern, as libgit2 splits git2/*.h: besides the umbrella
# <module>/<module>.h (which includes them all), these headers are public
# too. Every other module has <module>/<module>.h alone.
PUBLIC = {
    "gitops": ["repo.h", "source.h", "verify.h", "receive.h", "rendered.h", "plan.h", "sign.h",
               "remote.h"],
}
LIBGIT2 = {"pack", "gitops", "bundle", "site"}
LIBCURL = {"cluster", "metrics"}
LIBMHD = {"metrics"}  # libmicrohttpd: the metrics and webhook listener

# Exceptions, each a (file, header) pair with the reason it is allowed.
EXCEPTIONS = {
    # `mcgit version` prints libgit2's version.
    ("cli/cmd_help.c", "git2.h"),
}
# Another module's internals: none may be read (empty; an entry needs a reason).
INT_EXCEPTIONS = set()

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def module_of(rel):
    parts = rel.split("/")
    if len(parts) == 1:
        return os.path.splitext(parts[0])[0]  # src/main.c
    return parts[0]


def check_file(src, rel, problems):
    mod = module_of(rel)
    if mod not in MAY_USE:
        problems.append(f"src/{rel}:1: module '{mod}' is not in the allow-list (tests/layering.py)")
        return
    with open(os.path.join(src, rel), encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            kind, hdr = m.groups()
            where = f"src/{rel}:{lineno}"
            if (rel, hdr) in EXCEPTIONS:
                continue
            if kind == "<":
                if (hdr == "git2.h" or hdr.startswith("git2/")) and mod not in LIBGIT2:
                    problems.append(f"{where}: {mod} may not include <{hdr}> (libgit2)")
                if hdr.startswith("curl/") and mod not in LIBCURL:
                    problems.append(f"{where}: {mod} may not include <{hdr}> (libcurl)")
                if hdr == "microhttpd.h" and mod not in LIBMHD:
                    problems.append(f"{where}: {mod} may not include <{hdr}> (libmicrohttpd)")
                continue
            if "/" not in hdr:
                problems.append(f'{where}: include "{hdr}" as "module/{hdr}"')
                continue
            dep = hdr.split("/")[0]
            if dep == mod:
                continue
            if dep not in MAY_USE:
                problems.append(f'{where}: "{hdr}" is no module\'s header')
            elif dep not in MAY_USE[mod]:
                problems.append(f'{where}: {mod} may not include "{hdr}" ({dep} is not below {mod})')
            elif hdr.endswith("_int.h") and (mod, hdr) not in INT_EXCEPTIONS:
                problems.append(f'{where}: {mod} may not include "{hdr}" ({dep}\'s internals)')
            elif not hdr.endswith("_int.h") and not is_public(hdr):
                problems.append(f'{where}: "{hdr}" is not a public header of {dep} (PUBLIC in '
                                "tests/layering.py)")


def is_public(hdr):
    dep, name = hdr.split("/", 1)
    return name == dep + ".h" or name in PUBLIC.get(dep, [])


def check_public(src, problems):
    """Each concern header listed exists and its umbrella includes it."""
    for mod, names in sorted(PUBLIC.items()):
        umbrella = os.path.join(src, mod, mod + ".h")
        with open(umbrella, encoding="utf-8") as f:
            included = {m.group(2) for m in map(INCLUDE.match, f) if m}
        for n in names:
            if not os.path.exists(os.path.join(src, mod, n)):
                problems.append(f"src/{mod}/{n}:1: listed in PUBLIC (tests/layering.py) but absent")
            elif f"{mod}/{n}" not in included:
                problems.append(f'src/{mod}/{mod}.h:1: the umbrella does not include "{mod}/{n}"')


# One way for each cross-cutting thing (docs/development.md, "One way for each
# thing"): the call, and the only files of src/ that may make it. Comments and
# string literals are not code and are not looked at.
ONE_WAY = [
    ("clock_gettime", re.compile(r"\bclock_gettime\s*\("), {"osenv/clock.c"},
     "read the clock with osenv (mcg_mono_*, mcg_wall_now)"),
    ("getenv", re.compile(r"\b(secure_)?getenv\s*\("), {"osenv/env.c"},
     "read the environment with mcg_env_get"),
    ("setenv", re.compile(r"\b(setenv|unsetenv|putenv|clearenv)\s*\("), set(),
     "never change the environment (threads read it)"),
    ("stderr", re.compile(r"\bstderr\b"), {"util/util.c"},  # util: "out of memory", no logger below it
     "write to stderr with osenv's logger (mcg_log_line)"),
]
# strerror: the reason for an errno goes into a message through mcg_err_set_os;
# what is left (a reason picked per errno, libgit2's own error) stays under this.
STRERROR = re.compile(r"(?<![\w.])strerror\s*\(")
STRERROR_MAX = 15


def code_only(text):
    """text with comments and string/char literals blanked (line breaks kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n else ""))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def check_one_way(src, rels, problems):
    sites = []
    for rel in rels:
        with open(os.path.join(src, rel), encoding="utf-8", errors="replace") as f:
            code = code_only(f.read())
        for lineno, line in enumerate(code.split("\n"), 1):
            for name, pat, allowed, how in ONE_WAY:
                if pat.search(line) and rel not in allowed:
                    problems.append(f"src/{rel}:{lineno}: {name}: {how}")
            sites += [f"src/{rel}:{lineno}"] * len(STRERROR.findall(line))
    if len(sites) > STRERROR_MAX:  # each site named, to find the one to move
        for site in sorted(set(sites)):
            problems.append(f"{site}: {len(sites)} strerror() sites, at most {STRERROR_MAX}: "
                            "give an errno to a message with mcg_err_set_os")
    return len(sites)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "src")
    problems, files, rels = [], 0, []
    check_public(src, problems)
    for root, _, names in os.walk(src):
        for n in sorted(names):
            if n.endswith((".c", ".h")):
                rel = os.path.relpath(os.path.join(root, n), src)
                check_file(src, rel, problems)
                rels.append(rel)
                files += 1
    nstrerror = check_one_way(src, sorted(rels), problems)
    for p in sorted(problems):
        print(p)
    if problems:
        print(f"layering: {len(problems)} violation(s) in {files} files", file=sys.stderr)
        return 1
    print(f"layering: {files} files follow the module graph, one way each "
          f"(clock, environment, stderr; {nstrerror} strerror() sites)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
