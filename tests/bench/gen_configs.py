#!/usr/bin/env python3
"""Generate a config directory for the render benchmark.

    gen_configs.py OUT --mcs N --pools P --files F [--paths K] [--seed S]

Writes OUT/mcgit.yaml, OUT/pools/*.yaml (master, worker and P-2 custom pools
that inherit worker) and N MachineConfigs in OUT/machineconfigs/, spread over
the pools' roles in turn, each with F files (and every tenth a unit with a
drop-in, every seventh an SSH key). Each pool draws its file paths from K
distinct paths, so later MCs override earlier ones field by field -- the merge
path a real repo exercises -- and every rendered config stays under 1.5 MiB.

MachineConfigs are written as JSON documents (valid YAML), one per file, so
the benchmark's floor (jansson parse + sorted dump) reads the very same bytes.
Output depends only on the arguments.
"""
import argparse
import base64
import gzip
import json
import os
import random
import sys
import urllib.parse

API = "machineconfiguration.openshift.io/v1"
ROLE = "machineconfiguration.openshift.io/role"


def pool_doc(name, custom):
    sel = {"matchLabels": {ROLE: name}}
    if custom:
        # As MCO docs show: a custom pool selects worker's MCs and its own.
        sel = {"matchExpressions": [{"key": ROLE, "operator": "In", "values": ["worker", name]}]}
    return {
        "apiVersion": API,
        "kind": "MachineConfigPool",
        "metadata": {"name": name},
        "spec": {
            "machineConfigSelector": sel,
            "nodeSelector": {"matchLabels": {"node-role.kubernetes.io/" + name: ""}},
            "maxUnavailable": 1,
        },
    }


def file_entry(rng, path):
    body = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789 =\n") for _ in range(rng.randint(40, 160)))
    kind = rng.randrange(4)
    e = {"path": path}
    if kind == 0:
        e["contents"] = {"source": "data:," + urllib.parse.quote(body, safe="")}
    elif kind == 1:
        e["contents"] = {"source": "data:;base64," + base64.b64encode(body.encode()).decode()}
    elif kind == 2:
        gz = gzip.compress(body.encode(), 9, mtime=0)
        e["contents"] = {"source": "data:;base64," + base64.b64encode(gz).decode(), "compression": "gzip"}
    # kind 3: no contents: a field-by-field override of mode/owner only
    if rng.randrange(2):
        e["mode"] = rng.choice([0o644, 0o600, 0o640, 0o755])
    if rng.randrange(3) == 0:
        e["overwrite"] = True
    if rng.randrange(5) == 0:
        e["user"] = {"name": "root"}
    return e


def mc_doc(rng, idx, role, files, paths):
    name = "%05d-%s-bench" % (idx, role)
    cfg = {"ignition": {"version": "3.4.0"}}
    chosen = rng.sample(range(paths), min(files, paths))
    cfg["storage"] = {"files": [file_entry(rng, "/etc/bench/%s/f%04d.conf" % (role, p)) for p in chosen]}
    if idx % 10 == 0:
        cfg["systemd"] = {"units": [{
            "name": "bench-%d.service" % (idx % 50),
            "enabled": True,
            "contents": "[Unit]\nDescription=bench %d\n[Service]\nExecStart=/bin/true\n" % idx,
            "dropins": [{"name": "10-bench.conf", "contents": "[Service]\nNice=%d\n" % (idx % 20)}],
        }]}
    if idx % 7 == 0:
        cfg["passwd"] = {"users": [{"name": "core", "sshAuthorizedKeys": [
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI%040d bench-%d" % (idx % 100, idx % 100)]}]}
    return name, {
        "apiVersion": API,
        "kind": "MachineConfig",
        "metadata": {"name": name, "labels": {ROLE: role}},
        "spec": {"config": cfg},
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--mcs", type=int, default=1000)
    ap.add_argument("--pools", type=int, default=3)
    ap.add_argument("--files", type=int, default=10)
    ap.add_argument("--paths", type=int, default=1000, help="distinct file paths per pool")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.pools < 2:
        sys.exit("gen_configs.py: --pools must be at least 2 (master and worker)")
    rng = random.Random(a.seed)
    roles = ["master", "worker"] + ["custom%d" % i for i in range(1, a.pools - 1)]
    os.makedirs(os.path.join(a.out, "pools"), exist_ok=True)
    os.makedirs(os.path.join(a.out, "machineconfigs"), exist_ok=True)
    with open(os.path.join(a.out, "mcgit.yaml"), "w") as f:
        f.write("sourceBranch: main\nrenderedBranch: rendered\nsignatures: required\n")
    for r in roles:
        with open(os.path.join(a.out, "pools", r + ".yaml"), "w") as f:
            json.dump(pool_doc(r, r not in ("master", "worker")), f, indent=2)
            f.write("\n")
    for i in range(a.mcs):
        role = roles[i % len(roles)]
        name, doc = mc_doc(rng, i, role, a.files, a.paths)
        with open(os.path.join(a.out, "machineconfigs", name + ".yaml"), "w") as f:
            json.dump(doc, f, indent=2, sort_keys=False)
            f.write("\n")


if __name__ == "__main__":
    main()
