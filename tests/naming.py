#!/usr/bin/env python3
"""naming.py BUILD_DIR: the house's naming rule, checked on what the build exports.

Every symbol an object of src/<module>/ exports starts with "mcg_" and its
module's one prefix word (PREFIX: the folder's name, mcg_agent_...), so a
name says which module it belongs to. Names made before the rule keep a word
of LEGACY below until they move to the prefix; that list only shrinks (a
listed word no name uses is a problem) and no word joins it. A word belongs
to one module; the few legacy words two modules share are listed in SHARED,
each with the reason, and no other may be shared.

An exported symbol is also used by another object of the build (another
file of src/, a test, a benchmark, a fuzz target): one that nothing else
calls is static, or dead (main aside).

Prints one line per problem ("src/agent/x.c: mcg_foo: ..."); exit 1 if any.
"""
import os
import subprocess
import sys

# Each module's one prefix word: mcg_<prefix>_... (its folder's name).
PREFIX = {m: m for m in ["util", "model", "render", "rollout", "trust", "pack", "fsio", "osenv",
                         "gitops", "bundle", "cluster", "agent", "controller", "metrics", "demo",
                         "site"]}

# The words names had before the rule was one prefix per module, and still
# have: each is to become its module's prefix (mcg_buf_free -> mcg_util_buf_free).
# A word leaves this list when its last name moves, and the check fails on a
# listed word that no name uses, so the list only shrinks; no word is added.
LEGACY = {
    "util": "base64 bfmt bsearch buf calloc dataurl diags did edit err gunzip hex human "
            "json malloc memeq parse path realloc sha256 sprintf strcmp strdup strndup strv time "
            "keyed vbfmt wipe",
    "model": "check disruption extension get ignition json kargs labels linemap name osspec "
             "parse pctx policy pool selector signpolicy yaml",
    "render": "diff ignition",
    "rollout": "",
    "trust": "commit revoked sigmemo signers sigval ssh sshkey sshsig wire",
    "pack": "oidmap oidv packscan scan",
    "fsio": "fsync mkdirs read remove write",
    "osenv": "env log mono tz wall",
    "gitops": "approvals chain commit deadline git kh knownhosts policy rendered repo rollback "
              "source ssh transport verify vrange",
    "bundle": "",
    "cluster": "kube node nodes pool time",
    "agent": "acfg backup boot booted drift ent host osconf osplan osstep plan sh sroot",
    "controller": "ctl pass safe",
    "metrics": "conn",
    "demo": "",
    "site": "",
}
WORDS = {m: (PREFIX[m] + " " + LEGACY[m]).strip() for m in PREFIX}

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
        # names the compiler made (gcc's ASan ODR indicators __odr_asan.NAME)
        if len(parts) == 3 and parts[1] in "TDBRVW" and not parts[2].startswith("__"):
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
    seen = prefixed = 0
    used = {}
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
            used.setdefault(mod, set()).add(word)
            if word == PREFIX.get(mod):
                prefixed += 1
            elif word not in words:
                problems.append("src/%s: %s: '%s' is not %s's prefix (mcg_%s_...) nor one of its "
                                "legacy words (tests/naming.py)" %
                                (rel[:-2], sym, word, mod, PREFIX.get(mod, mod)))
    if seen == 0:
        problems.append("%s: no objects of src/ found (build first)" % build)
    if all(m in used for m in PREFIX):  # a whole build: every legacy word still in use
        for mod in PREFIX:
            for w in LEGACY[mod].split():
                if w not in used[mod]:
                    problems.append("tests/naming.py: %s's legacy word '%s' is used by no "
                                    "exported name: remove it from LEGACY" % (mod, w))
    for p in problems:
        print(p)
    if not problems:
        print("naming: %d exported names, each mcg_ and its module's word: %d under the "
              "module's prefix, %d under a legacy word" % (seen, prefixed, seen - prefixed))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
