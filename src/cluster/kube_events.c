/*
 * kube_events.c — Kubernetes Events about nodes and pools, as MCO's
 * controller and daemon record them.
 *
 * One core/v1 Event per call, POSTed to namespace "default": the API
 * server accepts an event about a cluster-scoped object (a Node, a
 * MachineConfigPool) only there, as the kubelet's node events are
 * (deploy/rbac.yaml lets both service accounts create events there and
 * nowhere else). Its involvedObject names the object with the uid that
 * `kubectl describe` matches: a pool's real uid (from the pools the backend
 * last listed, else a GET), a node's name (as the kubelet's node events
 * and MCO's daemon's do). Events are
 * best effort: one try, no retry, no aggregation (each is new, named
 * OBJECT.<16 hex digits>, as client-go names them).
 */
#include "cluster/kube_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Where events about cluster-scoped objects must live. */
#define EVENT_NS "default"

json_t *mcg_kube_event_object(const mcg_event *ev, const char *uid, const char *ns,
                              const char *name, const char *host, int64_t now)
{
    char ts[32];
    mcg_time_iso(ts, now);
    json_t *obj = json_pack("{s:s,s:s,s:s}", "kind", ev->pool ? "MachineConfigPool" : "Node",
                            "name", ev->name, "apiVersion", ev->pool ? MCG_KUBE_GV : "v1");
    if (uid)
        json_object_set_new(obj, "uid", json_string(uid));
    json_t *src = json_pack("{s:s}", "component", ev->component);
    if (host && *host)
        json_object_set_new(src, "host", json_string(host));
    return json_pack("{s:s,s:s,s:{s:s,s:s},s:o,s:s,s:s,s:s,s:o,s:s,s:s,s:i,s:s,s:s}", "apiVersion",
                     "v1", "kind", "Event", "metadata", "name", name, "namespace", ns,
                     "involvedObject", obj, "reason", ev->reason, "message", ev->message, "type",
                     ev->warning ? "Warning" : "Normal", "source", src, "firstTimestamp", ts,
                     "lastTimestamp", ts, "count", 1, "reportingComponent", ev->component,
                     "reportingInstance", host && *host ? host : ev->component);
}

/* The uid of the event's object, or NULL (caller frees). A node's events
 * carry the node's name as their uid, as the kubelet's and MCO's daemon's
 * do: that is what `kubectl describe node` matches, in every kubectl
 * version (Debian's 1.20 matches only that). A pool's is its real uid. */
static char *object_uid(mcg_kube *k, const mcg_event *ev)
{
    if (!ev->pool)
        return mcg_strdup(ev->name);
    const char *have = mcg_kube_str_at(json_object_get(k->pools, ev->name), "metadata", "uid");
    if (have)
        return mcg_strdup(have);
    char *esc = mcg_kube_escape(ev->name);
    char *path = mcg_sprintf("%s/%s", MCG_KUBE_MCP_PATH, esc);
    json_t *o = NULL;
    long st = 0;
    mcg_err e = {0};
    char *uid = NULL;
    if (mcg_kube_simple(k->kc, "GET", path, &st, &o, &e) == 0) {
        const char *u = mcg_kube_str_at(o, "metadata", "uid");
        uid = u ? mcg_strdup(u) : NULL;
    }
    json_decref(o);
    free(path);
    free(esc);
    return uid;
}

int mcg_kube_op_event(mcg_cluster *c, const mcg_event *ev, mcg_err *err)
{
    mcg_kube *k = mcg_kube_of(c);
    char host[256] = "";
    if (gethostname(host, sizeof(host) - 1) != 0)
        host[0] = '\0';
    char *uid = object_uid(k, ev);
    uint64_t id = ((uint64_t)mcg_kube_wall_ms() << 16) ^ mcg_kube_random(k->kc);
    char *name = mcg_sprintf("%s.%016llx", ev->name, (unsigned long long)id);
    json_t *body = mcg_kube_event_object(ev, uid, EVENT_NS, name, host, (int64_t)time(NULL));
    char *path = mcg_sprintf("/api/v1/namespaces/%s/events", EVENT_NS);
    mcg_kube_req rq = {"POST", path, NULL, body, NULL, 0, MCG_KUBE_NO_RETRY};
    long st = 0;
    int rc = mcg_kube_call(k->kc, &rq, &st, NULL, err);
    json_decref(body);
    free(path);
    free(name);
    free(uid);
    return rc;
}
