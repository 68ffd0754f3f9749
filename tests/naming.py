#!/usr/bin/env python3
"""naming.py BUILD_DIR: the house's naming rule, checked on what the build exports.

Every symbol an object of src/<module>/ exports starts with "mcg_", and its
next word (mcg_<word>_...) is one of that module's words below: a module's
names say which module they belong to, and a new kind of name is a decision
made here, in review, not by accident. A word belongs to one module; the few
words two modules share today are listed in SHARED, each with the reason,
and no other may be shared.

An exported symbol is also used by another object of the build (another
file of src/, a test, a benchmark, a fuzz target): one that nothing else
calls is static, or dead (main aside).

Prints one line per problem ("src/agent/x.c: mcg_foo: ..."); exit 1 if any.
"""
import os
import subprocess
import sys

WORDS = {
    "util": "base64 bfmt bsearch buf calloc dataurl diags did edit err gunzip hex human "
            "json malloc memeq parse path realloc sha256 sprintf strcmp strdup strndup strv time "
            "keyed vbfmt wipe",
    "model": "check disruption extension get ignition json kargs labels linemap model name osspec "
             "parse pctx policy pool selector signpolicy yaml",
    "render": "diff ignition render",
    "rollout": "rollout",
    "trust": "commit revoked sigmemo signers sigval ssh sshkey sshsig trust wire",
    "pack": "oidmap oidv pack packscan scan",
    "fsio": "fsync mkdirs read remove write",
    "osenv": "env log mono tz wall",
    "gitops": "approvals chain commit deadline git gitops kh knownhosts policy rendered repo rollback "
              "source ssh transport verify vrange",
    "bundle": "bundle",
    "cluster": "cluster kube node nodes pool time",
    "agent": "acfg agent backup boot booted drift ent health host osconf osplan osstep plan sh "
             "sorted sroot",
    "controller": "controller ctl pass redact safe",
    "metrics": "conn metrics",
    "demo": "demo",
    "site": "site",
}

# Words two modules share today, and why they may.
SHARED = {
    "json": "util's JSON helpers and model's JSON readers of a spec",
    "parse": "util's number parsers and model's parse entry points",
    "ignition": "model reads an Ignition config, render writes one",
    "policy": "model's disruption policy, gitops' signing policy file",
    "ssh": "trust's SSH signatures, gitops' SSH transport",
    "time": "util's clock and formatting, cluster's object timestamps",
    "pool": "model's pool, cluster's pool objects",
    "commit": "trust splits a commit's signature, gitops plans a commit (mcg_commit_plan)",
}


def exported(obj):
    out = subprocess.run(["nm", "-g", "--defined-only", obj], capture_output=True, text=True)
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBRVW":
            yield parts[2]


def referenced(build):
    """Every symbol some object of the build tree leaves undefined, with the objects."""
    refs = {}
    for top, _dirs, files in os.walk(build):
        for f in files:
            if not f.endswith(".o"):
                continue
            path = os.path.join(top, f)
            out = subprocess.run(["nm", "-u", path], capture_output=True, text=True)
            for line in out.stdout.splitlines():
                parts = line.split()
                if parts and parts[0] == "U":
                    refs.setdefault(parts[-1], set()).add(path)
    return refs


def objects(build):
    for top, _dirs, files in os.walk(build):
        for f in files:
            path = os.path.join(top, f)
            if f.endswith(".c.o") and "/src/" in path and ("mcgio.dir" in path or "mcgcore.dir" in path or
                                                           "mcgit.dir" in path):
                rel = path.split("/src/", 1)[1]
                yield path, rel


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    owner = {}
    for mod, words in WORDS.items():
        for w in words.split():
            owner.setdefault(w, []).append(mod)
    problems = []
    for w, mods in sorted(owner.items()):
        if len(mods) > 1 and w not in SHARED:
            problems.append("tests/naming.py: word '%s' belongs to %s: a word is one module's" %
                            (w, " and ".join(mods)))
    seen = 0
    refs = referenced(build)
    for path, rel in sorted(objects(build), key=lambda x: x[1]):
        mod = rel.split("/", 1)[0]
        words = set(WORDS.get(mod, "").split())
        for sym in exported(path):
            if sym != "main" and not refs.get(sym, set()) - {path}:
                problems.append("src/%s: %s: exported but no other file uses it: make it static, "
                                "or remove it" % (rel[:-2], sym))
            if "mcgit.dir" in path:
                continue  # cli and main.c: named by their command table, not by a module word
            seen += 1
            if not sym.startswith("mcg_"):
                problems.append("src/%s: %s: an exported name starts with mcg_" % (rel[:-2], sym))
                continue
            word = sym[4:].split("_", 1)[0]
            if word not in words:
                problems.append("src/%s: %s: '%s' is not one of %s's words (tests/naming.py)" %
                                (rel[:-2], sym, word, mod))
    if seen == 0:
        problems.append("%s: no objects of src/ found (build first)" % build)
    for p in problems:
        print(p)
    if not problems:
        print("naming: %d exported names, each mcg_ and its module's word" % seen)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
