#!/usr/bin/env python3
"""Generate a config directory for the render benchmark.

    gen_configs.py OUT --mcs N --pools P --files F [--paths K] [--seed S]
    gen_configs.py OUT --agent typical|largest [--seed S]

Writes OUT/mcgit.yaml, OUT/pools/*.yaml (master, worker and P-2 custom pools
that inherit worker) and N MachineConfigs in OUT/machineconfigs/, spread over
the pools' roles in turn, each with F files (and every tenth a unit with a
drop-in, every seventh an SSH key). Each pool draws its file paths from K
distinct paths, so later MCs override earlier ones field by field -- the merge
path a real repo exercises -- and every rendered config stays under 1.5 MiB.

MachineConfigs are written as JSON documents (valid YAML), one per file, so
the benchmark's floor (jansson parse + sorted dump) reads the very same bytes.
With --agent, writes instead the worker configs of the agent benchmark
(bench_agent.sh), as a cluster has them: a few MachineConfigs of files of a
realistic mix of sizes and encodings, and units with drop-ins. "typical" is
30 files and 5 units; "largest" about 1.1 MiB of decoded files, whose
rendered spec is just under the 1.5 MiB the renderer accepts.

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


def text_body(rng, size):
    """size bytes of config-like text: PEM-like lines of base64 characters."""
    alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    out, n = [], 0
    while n < size:
        line = "".join(rng.choice(alpha) for _ in range(63)) + "\n"
        out.append(line)
        n += len(line)
    return "".join(out)[:size]


def agent_file(rng, path, size, kind):
    """One file of size decoded bytes: kind 0 percent-encoded text, 1
    base64 of binary data, 2 gzip'd text (base64), 3 base64 text."""
    if kind == 0:
        body = text_body(rng, size).encode()
        src = "data:," + urllib.parse.quote(body, safe="")
        return {"path": path, "mode": 0o644, "overwrite": True, "contents": {"source": src}}
    if kind == 1:
        body = bytes(rng.getrandbits(8) for _ in range(size))
    else:
        body = text_body(rng, size).encode()
    contents = {"source": "data:;base64," + base64.b64encode(body).decode()}
    if kind == 2:
        gz = gzip.compress(body, 9, mtime=0)
        contents = {"source": "data:;base64," + base64.b64encode(gz).decode(), "compression": "gzip"}
    return {"path": path, "mode": rng.choice([0o644, 0o600, 0o755]), "overwrite": True,
            "contents": contents}


def agent_sizes(rng, which):
    """The decoded sizes of the files: a few large, most small."""
    if which == "typical":  # chrony.conf, registries, kubelet config, a CA bundle...
        return [rng.choice([120, 300, 600, 900, 1500, 2500, 4000]) for _ in range(27)] + [8192, 16384, 32768]
    sizes, total, target = [], 0, 1200 * 1024
    while total < target:
        s = int(2 ** rng.uniform(7, 16))  # 128 B to 64 KiB, log-uniform
        s = min(s, target - total) if target - total > 64 else target - total
        sizes.append(s)
        total += s
    return sizes


def agent_main(out, which, seed):
    rng = random.Random(seed)
    os.makedirs(os.path.join(out, "pools"), exist_ok=True)
    os.makedirs(os.path.join(out, "machineconfigs"), exist_ok=True)
    with open(os.path.join(out, "mcgit.yaml"), "w") as f:
        f.write("sourceBranch: main\nrenderedBranch: rendered\nsignatures: required\n")
    for r in ("master", "worker"):
        with open(os.path.join(out, "pools", r + ".yaml"), "w") as f:
            json.dump(pool_doc(r, False), f, indent=2)
            f.write("\n")
    master = {"apiVersion": API, "kind": "MachineConfig",
              "metadata": {"name": "00-master", "labels": {ROLE: "master"}},
              "spec": {"config": {"ignition": {"version": "3.4.0"}}}}
    with open(os.path.join(out, "machineconfigs", "00-master.yaml"), "w") as f:
        json.dump(master, f, indent=2)
        f.write("\n")
    sizes = agent_sizes(rng, which)
    # text percent-encoded grows about 3x: keep it to the small files
    files = [agent_file(rng, "/etc/bench/d%02d/f%04d.conf" % (i % 8, i), s,
                        (0 if s <= 1024 else rng.choice([1, 2, 3])) if i % 3 else rng.choice([1, 3]))
             for i, s in enumerate(sizes)]
    units = [{"name": "bench-%d.service" % u, "enabled": True,
              "contents": "[Unit]\nDescription=bench %d\n[Service]\nExecStart=/bin/true\n"
                          "[Install]\nWantedBy=multi-user.target\n" % u,
              "dropins": [{"name": "10-bench.conf", "contents": "[Service]\nNice=%d\n" % u}]}
             for u in range(5)]
    per = (len(files) + 2) // 3  # three MachineConfigs, as a cluster has a few
    for k in range(3):
        cfg = {"ignition": {"version": "3.4.0"},
               "storage": {"files": files[k * per:(k + 1) * per]}}
        if k == 0:
            cfg["systemd"] = {"units": units}
        name = "%02d-worker-bench" % (10 * (k + 1))
        doc = {"apiVersion": API, "kind": "MachineConfig",
               "metadata": {"name": name, "labels": {ROLE: "worker"}}, "spec": {"config": cfg}}
        with open(os.path.join(out, "machineconfigs", name + ".yaml"), "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--mcs", type=int, default=1000)
    ap.add_argument("--pools", type=int, default=3)
    ap.add_argument("--files", type=int, default=10)
    ap.add_argument("--paths", type=int, default=1000, help="distinct file paths per pool")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--agent", choices=["typical", "largest"], help="the agent benchmark's configs")
    a = ap.parse_args()
    if a.agent:
        agent_main(a.out, a.agent, a.seed)
        return
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
