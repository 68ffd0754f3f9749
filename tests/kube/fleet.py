#!/usr/bin/env python3
"""Simulated agents for many Node objects on the test apiserver.

    fleet.py create N PREFIX LABEL=VALUE[,..]   create N Ready nodes PREFIX-00001..
    fleet.py run [--selector SEL] [--max-updating-log FILE]
        agents that "finish instantly": whenever a node's desiredConfig differs
        from its currentConfig, set currentConfig = desiredConfig, state Done
        (guarded by resourceVersion, so nothing is lost). Runs until killed.
Talks to $KUBE_SERVER with the admin client certificate in $KUBE_DIR/pki.
"""
import http.client, json, os, ssl, sys, threading
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlparse, quote

ANN = "machineconfiguration.mcgit.io/"
server = urlparse(os.environ["KUBE_SERVER"])
pki = os.path.join(os.environ["KUBE_DIR"], "pki")
ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
ctx.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))
local = threading.local()


def conn():
    if not getattr(local, "c", None):
        local.c = http.client.HTTPSConnection(server.hostname, server.port, context=ctx)
    return local.c


def req(method, path, body=None, ctype="application/json"):
    for attempt in range(5):
        c = conn()
        try:
            c.request(method, path, body=json.dumps(body) if body is not None else None,
                      headers={"Content-Type": ctype})
            r = c.getresponse()
            return r.status, json.loads(r.read() or b"{}")
        except (http.client.HTTPException, OSError):
            local.c = None
    raise SystemExit("fleet: %s %s failed" % (method, path))


def create(n, prefix, labels):
    lab = dict(kv.split("=", 1) for kv in labels.split(",") if kv)

    def one(i):
        name = "%s-%05d" % (prefix, i)
        st, _ = req("POST", "/api/v1/nodes", {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": dict(lab, **{"kubernetes.io/hostname": name})}})
        if st not in (201, 409):
            raise SystemExit("fleet: create %s: HTTP %d" % (name, st))
        req("PATCH", "/api/v1/nodes/%s/status" % name, {"status": {"conditions": [{
            "type": "Ready", "status": "True", "reason": "KubeletReady", "message": "fleet",
            "lastHeartbeatTime": "2026-01-01T00:00:00Z",
            "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}, "application/merge-patch+json")
    with ThreadPoolExecutor(int(os.environ.get("FLEET_THREADS", "24"))) as ex:
        list(ex.map(one, range(1, n + 1)))


def finish(node):
    a = node["metadata"].get("annotations") or {}
    want = a.get(ANN + "desiredConfig")
    if not want or (a.get(ANN + "currentConfig") == want and a.get(ANN + "state") == "Done"):
        return
    patch = {"metadata": {"resourceVersion": node["metadata"]["resourceVersion"],
                          "annotations": {ANN + "currentConfig": want, ANN + "state": "Done",
                                          ANN + "reason": ""}}}
    st, _ = req("PATCH", "/api/v1/nodes/" + node["metadata"]["name"], patch,
                "application/merge-patch+json")
    if st == 409:  # changed meanwhile: the watch brings the new version
        return


def run(selector):
    q = "?labelSelector=" + quote(selector) if selector else "?"
    ex = ThreadPoolExecutor(int(os.environ.get("FLEET_THREADS", "24")))
    while True:
        st, lst = req("GET", "/api/v1/nodes" + q)
        rv = lst["metadata"]["resourceVersion"]
        for n in lst.get("items", []):
            ex.submit(finish, n)
        c = http.client.HTTPSConnection(server.hostname, server.port, context=ctx)
        c.request("GET", "/api/v1/nodes%s&watch=1&resourceVersion=%s&allowWatchBookmarks=true"
                  % (q, rv))
        r = c.getresponse()
        if r.status != 200:
            continue
        for line in r:
            ev = json.loads(line)
            if ev["type"] in ("ADDED", "MODIFIED"):
                ex.submit(finish, ev["object"])
            elif ev["type"] == "ERROR":
                break


if __name__ == "__main__":
    if sys.argv[1] == "create":
        create(int(sys.argv[2]), sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else "")
    elif sys.argv[1] == "run":
        sel = ""
        if len(sys.argv) > 3 and sys.argv[2] == "--selector":
            sel = sys.argv[3]
        run(sel)
    else:
        raise SystemExit(__doc__)
