/*
 * kube.c — the `kube` cluster backend: mcgit's cluster state as Kubernetes
 * objects, through the API server.
 *
 *   nodes            Node objects; mcgit's fields are the annotations
 *                    machineconfiguration.mcgit.io/{desiredConfig,currentConfig,
 *                    state,reason}, ready is the Ready condition, cordon is
 *                    spec.unschedulable
 *   rendered configs MachineConfig objects (machineconfiguration.mcgit.io/v1,
 *                    cluster-scoped) named rendered-<pool>-<hash>, the rendered
 *                    spec as their spec ({"config": <Ignition>}), labelled
 *                    .../rendered=true and annotated with .../spec-sha256
 *   pools            MachineConfigPool objects; status through the status
 *                    subresource
 *   policy           the MachineConfiguration named "cluster"
 *   leader election  the coordination.k8s.io/v1 Lease "mcgit-controller"
 *   drain            the Eviction API (policy/v1, or v1beta1 on older servers)
 *
 * Writes that must not lose an update are compare-and-swap on the object's
 * resourceVersion: a merge patch carrying metadata.resourceVersion is
 * refused with 409 when the object moved, and is then re-read and retried.
 *
 * Reads of nodes are served from a cache kept current by a watch once a
 * caller waits for changes (wait_change): a controller pass at steady state
 * then costs no node list at all. The cache only moves forward in
 * resourceVersion, takes the objects our own writes return, and is rebuilt
 * from a fresh list when the watch reports 410 Gone or breaks.
 */
#include "cluster/kube_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NODES_PATH "/api/v1/nodes"
#define MC_PATH MCG_KUBE_CRD_PATH "/machineconfigs"
#define MCP_PATH MCG_KUBE_CRD_PATH "/machineconfigpools"
#define MCFG_PATH MCG_KUBE_CRD_PATH "/machineconfigurations/cluster"
#define LEASE_NAME "mcgit-controller"
#define MERGE_PATCH "application/merge-patch+json"
#define STRATEGIC_PATCH "application/strategic-merge-patch+json"
#define CAS_TRIES 8

typedef struct node_ent {
    mcg_node n;
    char *rv;
} node_ent;

typedef struct kube {
    mcg_cluster base;
    mcg_kube_client *kc;
    char *ns; /* namespace of the Lease */
    long lease_duration_s;
    long drain_timeout_ms;

    /* node cache, sorted by name */
    node_ent *nodes;
    size_t nnodes, capnodes;
    char *nodes_rv;        /* resourceVersion the cache is complete at (when synced) */
    char *scope;           /* NULL: every node is cached/watched; else that node only */
    bool synced;           /* the cache holds every node in scope, as of nodes_rv */
    mcg_kube_watch *w;     /* watch from nodes_rv, NULL when none */
    int64_t watch_started; /* when w was started (monotonic ms) */
    bool changed;          /* a change that matters arrived since the last wait */

    mcg_strv published; /* rendered configs known to exist */
    json_t *pools;      /* last seen MachineConfigPool objects by name */

    char *identity; /* lease holder identity while we may hold it */
    char *obs_rv;   /* last observed Lease resourceVersion */
    int64_t obs_ms; /* when (monotonic) it was observed to change */
    bool leader;
    int64_t lead_ok_ms; /* when (monotonic) the last successful take/renew was sent */

    char *eviction_gv; /* "policy/v1" or "policy/v1beta1", once discovered */
} kube;

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Every op first sees whether the caller asked to stop (mcg_cluster.stop). */
static kube *K(mcg_cluster *c)
{
    kube *k = (kube *)c;
    mcg_kube_client_set_stop(k->kc, c->stop);
    return k;
}

/*
 * Once a caller takes part in leader election (has called lead), it may
 * write only while its Lease is surely still its own: renewed, by our own
 * clock, less than a lease duration ago (minus a margin for requests in
 * flight). Another replica waits a whole duration after it last saw the
 * Lease change before taking it, so the two never write at the same time.
 */
static int k_lead(mcg_cluster *c, const char *identity, bool *leader, mcg_err *err);

static int fence(kube *k, mcg_err *err)
{
    if (!k->identity)
        return 0; /* not a leader-elected controller (agents, status, tools) */
    if (k->leader && mono_ms() - k->lead_ok_ms >= k->lease_duration_s * 1000 / 3) {
        /* a long pass: renew the lease on the way instead of running out of it
         * (if it cannot be renewed, the check below refuses the write) */
        bool still = false;
        mcg_err e = {0};
        char *id = mcg_strdup(k->identity);
        (void)k_lead(&k->base, id, &still, &e);
        free(id);
    }
    long valid = k->lease_duration_s * 1000;
    valid -= valid / 3 < 2000 ? valid / 3 : 2000;
    if (k->leader && mono_ms() - k->lead_ok_ms < valid)
        return 0;
    return mcg_err_set(err, MCG_ECONFLICT,
                       "not the leader: Lease %s/mcgit-controller is not held by '%s' (or was "
                       "not renewed in the last %lds); refusing to write",
                       k->ns, k->identity, valid / 1000);
}

static const char *str_at(const json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(o, a);
    if (b)
        v = json_object_get(v, b);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static const char *obj_rv(const json_t *o)
{
    return str_at(o, "metadata", "resourceVersion");
}

/* ------------------------------------------------------------- nodes */

static void node_copy(mcg_node *d, const mcg_node *s)
{
    memset(d, 0, sizeof(*d));
    d->name = mcg_strdup(s->name);
    for (size_t i = 0; i < s->labels.n; i++)
        mcg_labels_set(&d->labels, s->labels.items[i].key, s->labels.items[i].value);
    d->created = s->created;
    d->ready = s->ready;
    d->unschedulable = s->unschedulable;
    d->desired = s->desired ? mcg_strdup(s->desired) : NULL;
    d->current = s->current ? mcg_strdup(s->current) : NULL;
    d->state = s->state ? mcg_strdup(s->state) : NULL;
    d->reason = s->reason ? mcg_strdup(s->reason) : NULL;
}

static bool str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Whether two views of a node differ in anything mcgit reads. */
static bool node_differs(const mcg_node *a, const mcg_node *b)
{
    if (a->ready != b->ready || a->unschedulable != b->unschedulable ||
        !str_eq(a->desired, b->desired) || !str_eq(a->current, b->current) ||
        !str_eq(a->state, b->state) || !str_eq(a->reason, b->reason) || a->labels.n != b->labels.n)
        return true;
    for (size_t i = 0; i < a->labels.n; i++)
        if (!str_eq(mcg_labels_get(&b->labels, a->labels.items[i].key), a->labels.items[i].value))
            return true;
    return false;
}

static size_t cache_pos(const kube *k, const char *name, bool *found)
{
    size_t lo = 0, hi = k->nnodes;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(k->nodes[mid].n.name, name);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

static void cache_clear(kube *k)
{
    for (size_t i = 0; i < k->nnodes; i++) {
        mcg_node_clear(&k->nodes[i].n);
        free(k->nodes[i].rv);
    }
    k->nnodes = 0;
}

/*
 * Put a node (taken over) into the cache unless the cache already holds a
 * newer version. Returns whether what mcgit reads changed.
 */
static bool cache_put(kube *k, mcg_node *n, const char *rv)
{
    bool found;
    size_t i = cache_pos(k, n->name, &found);
    if (found) {
        node_ent *e = &k->nodes[i];
        if (rv && e->rv && mcg_kube_rv_cmp(rv, e->rv) < 0) {
            mcg_node_clear(n);
            return false; /* older than what we have */
        }
        bool diff = node_differs(&e->n, n);
        mcg_node_clear(&e->n);
        free(e->rv);
        e->n = *n;
        e->rv = rv ? mcg_strdup(rv) : NULL;
        memset(n, 0, sizeof(*n));
        return diff;
    }
    if (k->nnodes == k->capnodes) {
        k->capnodes = k->capnodes ? k->capnodes * 2 : 64;
        k->nodes = mcg_realloc(k->nodes, k->capnodes * sizeof(*k->nodes));
    }
    memmove(&k->nodes[i + 1], &k->nodes[i], (k->nnodes - i) * sizeof(*k->nodes));
    k->nodes[i].n = *n;
    k->nodes[i].rv = rv ? mcg_strdup(rv) : NULL;
    memset(n, 0, sizeof(*n));
    k->nnodes++;
    return true;
}

static bool cache_del(kube *k, const char *name)
{
    bool found;
    size_t i = cache_pos(k, name, &found);
    if (!found)
        return false;
    mcg_node_clear(&k->nodes[i].n);
    free(k->nodes[i].rv);
    memmove(&k->nodes[i], &k->nodes[i + 1], (k->nnodes - i - 1) * sizeof(*k->nodes));
    k->nnodes--;
    return true;
}

/* Cache a Node object as the API returned it; returns whether it changed. */
static bool cache_obj(kube *k, const json_t *o)
{
    mcg_node n;
    if (mcg_node_from_json(&n, o, NULL) != 0)
        return false;
    return cache_put(k, &n, obj_rv(o));
}

static void drop_watch(kube *k)
{
    mcg_kube_watch_free(k->w);
    k->w = NULL;
}

static void unsync(kube *k)
{
    drop_watch(k);
    k->synced = false;
}

static void on_node_event(const char *type, json_t *obj, void *arg)
{
    kube *k = arg;
    const char *rv = obj_rv(obj);
    if (!strcmp(type, "BOOKMARK")) {
        /* nothing changed; the watch may resume from here */
    } else if (!strcmp(type, "DELETED")) {
        const char *name = str_at(obj, "metadata", "name");
        if (name && cache_del(k, name))
            k->changed = true;
    } else if (cache_obj(k, obj)) {
        k->changed = true;
    }
    if (rv) {
        free(k->nodes_rv);
        k->nodes_rv = mcg_strdup(rv);
    }
}

/* The watch/list path of the node scope: every node, or one by name. */
static char *scope_path(const kube *k)
{
    if (!k->scope)
        return mcg_strdup(NODES_PATH);
    char *sel = mcg_sprintf("metadata.name=%s", k->scope);
    char *esc = mcg_kube_escape(sel);
    char *p = mcg_sprintf(NODES_PATH "?fieldSelector=%s", esc);
    free(esc);
    free(sel);
    return p;
}

/*
 * Let the watch deliver whatever has arrived, without waiting. Returns
 * whether the cache is still complete and current (else the caller reads
 * from the API).
 */
static bool pump(kube *k)
{
    if (!k->synced || !k->w)
        return false;
    mcg_err e = {0};
    int r = mcg_kube_watch_poll(k->w, 0, &e);
    if (r == 0)
        return true;
    if (r == 1) {
        /* the stream ended: resume from the last event seen, the cache stays as good */
        drop_watch(k);
        char *path = scope_path(k);
        int r2 = mcg_kube_watch_start(&k->w, k->kc, path, k->nodes_rv, on_node_event, k, &e);
        free(path);
        if (r2 == 0) {
            k->watch_started = mono_ms();
            return true;
        }
    }
    unsync(k);
    return false;
}

typedef struct list_acc {
    kube *k;
    node_ent *v;
    size_t n, cap;
} list_acc;

static int acc_node(json_t *item, void *arg, mcg_err *err)
{
    list_acc *a = arg;
    mcg_node n;
    int rc = mcg_node_from_json(&n, item, err);
    if (rc)
        return rc;
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 64;
        a->v = mcg_realloc(a->v, a->cap * sizeof(*a->v));
    }
    a->v[a->n].n = n;
    const char *rv = obj_rv(item);
    a->v[a->n].rv = rv ? mcg_strdup(rv) : NULL;
    a->n++;
    return 0;
}

static void acc_reset(void *arg)
{
    list_acc *a = arg;
    for (size_t i = 0; i < a->n; i++) {
        mcg_node_clear(&a->v[i].n);
        free(a->v[i].rv);
    }
    a->n = 0;
}

static int ent_cmp(const void *x, const void *y)
{
    return strcmp(((const node_ent *)x)->n.name, ((const node_ent *)y)->n.name);
}

/*
 * List the nodes of the current scope and make the cache exactly that
 * (synced at the list's resourceVersion, no watch yet). Sets k->changed
 * when the list differs from what the cache held.
 */
static int sync_nodes(kube *k, mcg_err *err)
{
    unsync(k);
    list_acc a = {k, NULL, 0, 0};
    char *rv = NULL;
    char *path = scope_path(k);
    int rc = mcg_kube_list(k->kc, path, NULL, acc_node, acc_reset, &a, &rv, err);
    free(path);
    if (rc) {
        acc_reset(&a);
        free(a.v);
        return rc;
    }
    if (a.n)
        qsort(a.v, a.n, sizeof(*a.v), ent_cmp);
    bool changed = a.n != k->nnodes;
    for (size_t i = 0; i < a.n && !changed; i++)
        changed = strcmp(a.v[i].n.name, k->nodes[i].n.name) != 0 ||
                  node_differs(&a.v[i].n, &k->nodes[i].n);
    cache_clear(k);
    free(k->nodes);
    k->nodes = a.v;
    k->nnodes = a.n;
    k->capnodes = a.cap;
    free(k->nodes_rv);
    k->nodes_rv = rv;
    k->synced = true;
    if (changed)
        k->changed = true;
    return 0;
}

static int k_list_nodes(mcg_cluster *c, mcg_node **out, size_t *n, mcg_err *err)
{
    kube *k = K(c);
    *out = NULL;
    *n = 0;
    int rc;
    if (k->scope || !pump(k)) {
        if (k->scope) {
            /* a one-node watch stays as it is; list into a scratch cache */
            list_acc a = {k, NULL, 0, 0};
            rc = mcg_kube_list(k->kc, NODES_PATH, NULL, acc_node, acc_reset, &a, NULL, err);
            if (!rc && a.n)
                qsort(a.v, a.n, sizeof(*a.v), ent_cmp);
            mcg_node *v = mcg_calloc(a.n ? a.n : 1, sizeof(*v));
            for (size_t i = 0; !rc && i < a.n; i++)
                node_copy(&v[i], &a.v[i].n);
            if (!rc) {
                *out = v;
                *n = a.n;
            } else
                free(v);
            acc_reset(&a);
            free(a.v);
            return rc;
        }
        if ((rc = sync_nodes(k, err)) != 0)
            return rc;
    }
    k->changed = false; /* the caller now sees every node as it is: not news for wait_change */
    mcg_node *v = mcg_calloc(k->nnodes ? k->nnodes : 1, sizeof(*v));
    for (size_t i = 0; i < k->nnodes; i++)
        node_copy(&v[i], &k->nodes[i].n);
    *out = v;
    *n = k->nnodes;
    return 0;
}

static bool in_scope(const kube *k, const char *name)
{
    return !k->scope || !strcmp(k->scope, name);
}

/* GET a node into the cache; *rv receives its resourceVersion (caller frees). */
static int fetch_node(kube *k, const char *name, mcg_node *out, char **rv, mcg_err *err)
{
    char *path = mcg_sprintf(NODES_PATH "/%s", name);
    json_t *o = NULL;
    long st;
    int rc = mcg_kube_simple(k->kc, "GET", path, &st, &o, err);
    free(path);
    if (rc == MCG_ENOTFOUND)
        rc = mcg_err_set(err, MCG_ENOTFOUND, "node '%s' not found", name);
    if (!rc && !o)
        rc = mcg_err_set(err, MCG_EINVAL, "GET node '%s': empty response", name);
    if (!rc)
        rc = mcg_node_from_json(out, o, err);
    if (!rc) {
        if (rv)
            *rv = obj_rv(o) ? mcg_strdup(obj_rv(o)) : NULL;
        mcg_node tmp;
        node_copy(&tmp, out);
        cache_put(k, &tmp, obj_rv(o));
    }
    json_decref(o);
    return rc;
}

static int k_get_node(mcg_cluster *c, const char *name, mcg_node *out, mcg_err *err)
{
    kube *k = K(c);
    memset(out, 0, sizeof(*out));
    if (!mcg_name_is_dns_subdomain(name))
        return mcg_err_set(err, MCG_EINVAL, "invalid node name '%s'", name);
    if (in_scope(k, name) && pump(k)) {
        bool found;
        size_t i = cache_pos(k, name, &found);
        if (!found)
            return mcg_err_set(err, MCG_ENOTFOUND, "node '%s' not found", name);
        node_copy(out, &k->nodes[i].n);
        if (k->scope)
            k->changed = false; /* the one node waited on has been seen as it is */
        return 0;
    }
    return fetch_node(k, name, out, NULL, err);
}

static void ann_set(json_t *ann, const char *key, const char *val)
{
    if (val)
        json_object_set_new(ann, key, *val ? json_string(val) : json_null());
}

/* PATCH a node (or its status) and cache the answer. */
static int patch_obj_node(kube *k, const char *name, const char *sub, const char *ctype,
                          const json_t *body, long *st, mcg_err *err)
{
    char *path = mcg_sprintf(NODES_PATH "/%s%s", name, sub);
    mcg_kube_req rq = {"PATCH", path, ctype, body, NULL, 0, 0};
    json_t *o = NULL;
    int rc = mcg_kube_call(k->kc, &rq, st, &o, err);
    free(path);
    if (!rc && o)
        cache_obj(k, o);
    json_decref(o);
    return rc;
}

static int k_patch_node(mcg_cluster *c, const char *name, const mcg_node_patch *p, mcg_err *err)
{
    kube *k = K(c);
    int frc = fence(k, err);
    if (frc)
        return frc;
    if (!mcg_name_is_dns_subdomain(name))
        return mcg_err_set(err, MCG_EINVAL, "invalid node name '%s'", name);
    json_t *ann = json_object();
    ann_set(ann, MCG_ANN_DESIRED, p->desired);
    ann_set(ann, MCG_ANN_CURRENT, p->current);
    ann_set(ann, MCG_ANN_STATE, p->state);
    ann_set(ann, MCG_ANN_REASON, p->reason);
    bool main_patch = json_object_size(ann) || p->unschedulable >= 0 || p->if_desired;
    int rc = 0;
    bool moved = false; /* the last try lost a race */
    for (int attempt = 0; main_patch && attempt < CAS_TRIES; attempt++) {
        moved = false;
        json_t *md = json_object();
        if (json_object_size(ann))
            json_object_set(md, "annotations", ann);
        if (p->if_desired) {
            /* CAS: the desiredConfig we compare with must be the one we overwrite */
            mcg_node n;
            char *rv = NULL;
            bool found = false;
            size_t i = 0;
            if (attempt == 0 && in_scope(k, name) && pump(k))
                i = cache_pos(k, name, &found);
            if (found && k->nodes[i].rv) {
                node_copy(&n, &k->nodes[i].n);
                rv = mcg_strdup(k->nodes[i].rv);
            } else if ((rc = fetch_node(k, name, &n, &rv, err)) != 0) {
                json_decref(md);
                break;
            }
            const char *cur = n.desired ? n.desired : "";
            bool match = !strcmp(cur, p->if_desired);
            mcg_node_clear(&n);
            if (!match) {
                free(rv);
                json_decref(md);
                if (found)
                    continue; /* the cache may be behind: check against the server */
                rc = mcg_err_set(err, MCG_ECONFLICT, "node '%s': desiredConfig changed", name);
                break;
            }
            if (!rv) {
                json_decref(md);
                rc = mcg_err_set(err, MCG_EINVAL, "node '%s' has no resourceVersion", name);
                break;
            }
            json_object_set_new(md, "resourceVersion", json_string(rv));
            free(rv);
        }
        json_t *body = json_pack("{s:o}", "metadata", md);
        if (p->unschedulable >= 0)
            json_object_set_new(body, "spec",
                                json_pack("{s:b}", "unschedulable", p->unschedulable));
        long st = 0;
        mcg_err e = {0};
        rc = patch_obj_node(k, name, "", MERGE_PATCH, body, &st, &e);
        json_decref(body);
        if (rc == MCG_ECONFLICT && p->if_desired) {
            moved = true;
            continue; /* it moved: re-read and check again */
        }
        if (rc == MCG_ENOTFOUND)
            rc = mcg_err_set(err, MCG_ENOTFOUND, "node '%s' not found", name);
        else if (rc)
            mcg_err_set(err, rc, "%s", e.msg);
        break;
    }
    json_decref(ann);
    if (moved)
        mcg_err_set(err, MCG_ECONFLICT, "node '%s': still changing after %d tries", name,
                    CAS_TRIES);
    if (rc)
        return rc;
    if (p->ready >= 0) {
        char ts[32];
        mcg_time_format(wall_ms() / 1000, ts);
        json_t *body =
            json_pack("{s:{s:[{s:s,s:s,s:s,s:s,s:s,s:s}]}}", "status", "conditions", "type",
                      "Ready", "status", p->ready ? "True" : "False", "reason", "MachineConfigSet",
                      "message", "set by mcgit", "lastHeartbeatTime", ts, "lastTransitionTime", ts);
        long st = 0;
        rc = patch_obj_node(k, name, "/status", STRATEGIC_PATCH, body, &st, err);
        json_decref(body);
    }
    return rc;
}

static json_t *labels_json(const mcg_labels *l)
{
    json_t *o = json_object();
    for (size_t i = 0; l && i < l->n; i++)
        json_object_set_new(o, l->items[i].key, json_string(l->items[i].value));
    return o;
}

static int k_add_node(mcg_cluster *c, const char *name, const mcg_labels *labels, int64_t now,
                      mcg_err *err)
{
    kube *k = K(c);
    int frc = fence(k, err);
    if (frc)
        return frc;
    (void)now; /* the API server sets creationTimestamp */
    if (!mcg_name_is_dns_subdomain(name))
        return mcg_err_set(err, MCG_EINVAL, "invalid node name '%s' (DNS-1123 subdomain)", name);
    json_t *body = json_pack("{s:s,s:s,s:{s:s,s:o}}", "apiVersion", "v1", "kind", "Node",
                             "metadata", "name", name, "labels", labels_json(labels));
    mcg_kube_req rq = {"POST", NODES_PATH, NULL, body, NULL, 0, 0};
    json_t *o = NULL;
    long st = 0;
    mcg_err e = {0};
    int rc = mcg_kube_call(k->kc, &rq, &st, &o, &e);
    json_decref(body);
    if (rc == MCG_ECONFLICT)
        return mcg_err_set(err, rc, "node '%s' already exists", name);
    if (rc)
        return mcg_err_set(err, rc, "%s", e.msg);
    if (o)
        cache_obj(k, o);
    json_decref(o);
    /* a node added by hand (no kubelet) starts Ready, as on a local cluster */
    mcg_node_patch p = MCG_NODE_PATCH_INIT;
    p.ready = 1;
    return k_patch_node(c, name, &p, err);
}

static int k_remove_node(mcg_cluster *c, const char *name, mcg_err *err)
{
    kube *k = K(c);
    int frc = fence(k, err);
    if (frc)
        return frc;
    if (!mcg_name_is_dns_subdomain(name))
        return mcg_err_set(err, MCG_EINVAL, "invalid node name '%s'", name);
    char *path = mcg_sprintf(NODES_PATH "/%s", name);
    long st;
    int rc = mcg_kube_simple(k->kc, "DELETE", path, &st, NULL, err);
    free(path);
    if (rc == MCG_ENOTFOUND)
        return mcg_err_set(err, rc, "node '%s' not found", name);
    if (!rc)
        cache_del(k, name);
    return rc;
}

static int k_label_node(mcg_cluster *c, const char *name, const char *edits, mcg_err *err)
{
    kube *k = K(c);
    int frc = fence(k, err);
    if (frc)
        return frc;
    if (!mcg_name_is_dns_subdomain(name))
        return mcg_err_set(err, MCG_EINVAL, "invalid node name '%s'", name);
    int rc = 0;
    for (int attempt = 0; attempt < CAS_TRIES; attempt++) {
        char *path = mcg_sprintf(NODES_PATH "/%s", name);
        json_t *o = NULL;
        long st;
        rc = mcg_kube_simple(k->kc, "GET", path, &st, &o, err);
        free(path);
        if (rc == MCG_ENOTFOUND)
            return mcg_err_set(err, rc, "node '%s' not found", name);
        if (rc)
            return rc;
        json_t *have = json_object_get(json_object_get(o, "metadata"), "labels");
        mcg_labels cur = {0};
        const char *lk;
        json_t *lv;
        json_object_foreach(have, lk, lv)
            if (json_is_string(lv))
                mcg_labels_set(&cur, lk, json_string_value(lv));
        if ((rc = mcg_labels_parse_arg(&cur, edits, err)) != 0) {
            mcg_labels_free(&cur);
            json_decref(o);
            return rc;
        }
        json_t *want = labels_json(&cur);
        mcg_labels_free(&cur);
        json_t *diff = mcg_kube_merge_diff(json_is_object(have) ? have : NULL, want);
        if (!json_is_object(have) && diff) {
            json_decref(diff);
            diff = json_incref(want);
        }
        json_decref(want);
        if (!diff) {
            json_decref(o);
            return 0;
        }
        json_t *body =
            json_pack("{s:{s:s?,s:o}}", "metadata", "resourceVersion", obj_rv(o), "labels", diff);
        json_decref(o);
        rc = patch_obj_node(k, name, "", MERGE_PATCH, body, &st, err);
        json_decref(body);
        if (rc != MCG_ECONFLICT)
            return rc;
    }
    return rc;
}

/* ----------------------------------------------------------- configs */

static bool config_name_ok(const char *name)
{
    return !strncmp(name, "rendered-", 9) && mcg_name_is_dns_subdomain(name);
}

static void sha_hex(const char *data, size_t len, char out[2 * MCG_SHA256_LEN + 1])
{
    unsigned char d[MCG_SHA256_LEN];
    mcg_sha256(data, len, d);
    mcg_hex(d, sizeof(d), out);
}

/* The canonical bytes of a MachineConfig's spec. */
static int spec_bytes(const json_t *mc, const char *name, mcg_buf *out, mcg_err *err)
{
    json_t *spec = json_object_get(mc, "spec");
    if (!json_is_object(spec))
        return mcg_err_set(err, MCG_EINVAL, "MachineConfig %s has no spec", name);
    return mcg_json_canonical(spec, out, err);
}

/* Whether a MachineConfig object holds exactly these spec bytes. */
static bool mc_holds(const json_t *mc, const char *name, const char *spec, size_t len)
{
    mcg_buf b = MCG_BUF_INIT;
    bool same = spec_bytes(mc, name, &b, NULL) == 0 && b.len == len && !memcmp(b.ptr, spec, len);
    mcg_buf_free(&b);
    return same;
}

static int k_put_config(mcg_cluster *c, const char *name, const char *spec, size_t len,
                        mcg_err *err)
{
    kube *k = K(c);
    int frc = fence(k, err);
    if (frc)
        return frc;
    if (!config_name_ok(name))
        return mcg_err_set(err, MCG_EINVAL, "invalid rendered config name '%s'", name);
    if (mcg_strv_contains(&k->published, name))
        return 0;
    json_error_t je;
    json_t *specobj = json_loadb(spec, len, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(specobj)) {
        json_decref(specobj);
        return mcg_err_set(err, MCG_EINVAL, "rendered config %s: spec is not a JSON object", name);
    }
    char hex[2 * MCG_SHA256_LEN + 1];
    sha_hex(spec, len, hex);
    json_t *obj =
        json_pack("{s:s,s:s,s:{s:s,s:{s:s},s:{s:s}},s:o}", "apiVersion", MCG_KUBE_GV, "kind",
                  "MachineConfig", "metadata", "name", name, "labels", MCG_KUBE_LABEL_RENDERED,
                  "true", "annotations", MCG_KUBE_ANN_SPEC_HASH, hex, "spec", specobj);
    mcg_kube_req rq = {"POST", MC_PATH, NULL, obj, NULL, 0, 0};
    json_t *o = NULL;
    long st = 0;
    int rc = mcg_kube_call(k->kc, &rq, &st, &o, err);
    for (int attempt = 0; rc == MCG_ECONFLICT && attempt < CAS_TRIES; attempt++) {
        /* it exists: the name is a content hash, but check the stored bytes */
        char *path = mcg_sprintf(MC_PATH "/%s", name);
        rc = mcg_kube_simple(k->kc, "GET", path, &st, &o, err);
        if (!rc &&
            (!mc_holds(o, name, spec, len) ||
             !str_eq(str_at(json_object_get(o, "metadata"), "annotations", MCG_KUBE_ANN_SPEC_HASH),
                     hex))) {
            /* altered in the cluster: put the real bytes back */
            json_object_set_new(json_object_get(obj, "metadata"), "resourceVersion",
                                json_string(obj_rv(o) ? obj_rv(o) : ""));
            json_decref(o);
            o = NULL;
            mcg_kube_req put = {"PUT", path, NULL, obj, NULL, 0, 0};
            rc = mcg_kube_call(k->kc, &put, &st, &o, err);
            json_object_del(json_object_get(obj, "metadata"), "resourceVersion");
        }
        free(path);
        if (rc == MCG_ENOTFOUND) { /* deleted meanwhile: create again */
            rc = mcg_kube_call(k->kc, &rq, &st, &o, err);
        }
    }
    if (!rc && o && !mc_holds(o, name, spec, len))
        rc = mcg_err_set(err, MCG_EINVAL,
                         "MachineConfig %s: the API server stored a different spec than was sent "
                         "(does the CRD keep unknown fields under spec.config?)",
                         name);
    json_decref(o);
    json_decref(obj);
    if (!rc)
        mcg_strv_push(&k->published, name);
    return rc;
}

static int k_get_config(mcg_cluster *c, const char *name, char **spec, size_t *len, mcg_err *err)
{
    kube *k = K(c);
    *spec = NULL;
    *len = 0;
    if (!config_name_ok(name))
        return mcg_err_set(err, MCG_EINVAL, "invalid rendered config name '%s'", name);
    char *path = mcg_sprintf(MC_PATH "/%s", name);
    json_t *o = NULL;
    long st;
    int rc = mcg_kube_simple(k->kc, "GET", path, &st, &o, err);
    free(path);
    if (rc == MCG_ENOTFOUND)
        return mcg_err_set(err, rc, "rendered config '%s' is not published", name);
    if (rc)
        return rc;
    mcg_buf b = MCG_BUF_INIT;
    if ((rc = spec_bytes(o, name, &b, err)) == 0) {
        const char *want =
            str_at(json_object_get(o, "metadata"), "annotations", MCG_KUBE_ANN_SPEC_HASH);
        char hex[2 * MCG_SHA256_LEN + 1];
        sha_hex(b.ptr, b.len, hex);
        if (want && strcmp(want, hex) != 0)
            rc = mcg_err_set(err, MCG_ETRUST,
                             "MachineConfig %s: spec does not match its %s annotation "
                             "(changed in the cluster)",
                             name, MCG_KUBE_ANN_SPEC_HASH);
    }
    json_decref(o);
    if (rc) {
        mcg_buf_free(&b);
        return rc;
    }
    *spec = mcg_buf_detach(&b, len);
    return 0;
}

static int acc_name(json_t *item, void *arg, mcg_err *err)
{
    (void)err;
    const char *n = str_at(item, "metadata", "name");
    if (n && config_name_ok(n))
        mcg_strv_push(arg, n);
    return 0;
}

static void acc_names_reset(void *arg)
{
    mcg_strv_free(arg);
}

static int k_list_configs(mcg_cluster *c, mcg_strv *names, mcg_err *err)
{
    kube *k = K(c);
    mcg_strv got = {0};
    char *sel = mcg_kube_escape(MCG_KUBE_LABEL_RENDERED "=true");
    char *path = mcg_sprintf(MC_PATH "?labelSelector=%s", sel);
    /* names only: metadata, not the (large) specs */
    int rc = mcg_kube_list(k->kc, path,
                           "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,"
                           "application/json",
                           acc_name, acc_names_reset, &got, NULL, err);
    free(path);
    free(sel);
    if (rc) {
        mcg_strv_free(&got);
        return rc;
    }
    mcg_strv_sort(&got);
    mcg_strv_free(&k->published);
    for (size_t i = 0; i < got.n; i++) {
        mcg_strv_push(&k->published, got.v[i]);
        mcg_strv_push(names, got.v[i]);
    }
    mcg_strv_free(&got);
    return 0;
}

static void strv_remove(mcg_strv *v, const char *s)
{
    for (size_t i = 0; i < v->n; i++)
        if (!strcmp(v->v[i], s)) {
            free(v->v[i]);
            memmove(&v->v[i], &v->v[i + 1], (v->n - i - 1) * sizeof(*v->v));
            v->n--;
            return;
        }
}

/* DELETE collection/name; an object already gone is not an error. */
static int delete_object(kube *k, const char *collection, const char *name, mcg_err *err)
{
    char *path = mcg_sprintf("%s/%s", collection, name);
    long st;
    int rc = mcg_kube_simple(k->kc, "DELETE", path, &st, NULL, err);
    free(path);
    return rc == MCG_ENOTFOUND ? 0 : rc;
}

static int k_delete_config(mcg_cluster *c, const char *name, mcg_err *err)
{
    kube *k = K(c);
    int frc = fence(k, err);
    if (frc)
        return frc;
    if (!config_name_ok(name))
        return mcg_err_set(err, MCG_EINVAL, "invalid rendered config name '%s'", name);
    strv_remove(&k->published, name);
    return delete_object(k, MC_PATH, name, err);
}

/* ------------------------------------------------------------- pools */

/* managedFields are bookkeeping of server-side apply: noise for mcgit's readers. */
static void strip_managed(json_t *o)
{
    json_object_del(json_object_get(o, "metadata"), "managedFields");
}

static int acc_pool(json_t *item, void *arg, mcg_err *err)
{
    (void)err;
    if (str_at(item, "metadata", "name"))
        json_array_append(arg, item);
    return 0;
}

static void acc_pool_reset(void *arg)
{
    json_array_clear(arg);
}

static int pool_cmp(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    return strcmp(str_at(x, "metadata", "name"), str_at(y, "metadata", "name"));
}

static int k_list_pools(mcg_cluster *c, json_t **items, mcg_err *err)
{
    kube *k = K(c);
    *items = NULL;
    json_t *got = json_array();
    int rc = mcg_kube_list(k->kc, MCP_PATH, NULL, acc_pool, acc_pool_reset, got, NULL, err);
    if (rc) {
        json_decref(got);
        return rc;
    }
    size_t n = json_array_size(got);
    json_t **v = mcg_calloc(n ? n : 1, sizeof(*v));
    for (size_t i = 0; i < n; i++) {
        v[i] = json_array_get(got, i);
        strip_managed(v[i]);
    }
    qsort(v, n, sizeof(*v), pool_cmp);
    json_t *out = json_array();
    json_object_clear(k->pools);
    for (size_t i = 0; i < n; i++) {
        json_array_append(out, v[i]);
        json_object_set(k->pools, str_at(v[i], "metadata", "name"), v[i]);
    }
    free(v);
    json_decref(got);
    *items = out;
    return 0;
}

/*
 * Bring one object to the wanted spec (and status, through the status
 * subresource), creating it when missing. path is the collection;
 * cache (may be NULL) holds the last seen objects by name. Merge patches
 * carry the resourceVersion they were computed from, so a concurrent change
 * makes them fail (409) and they are recomputed.
 */
static int converge(kube *k, const char *coll, const char *kind, const char *name, json_t *cache,
                    const json_t *labels, const json_t *want_spec, const json_t *want_status,
                    mcg_err *err)
{
    char *path = mcg_sprintf("%s/%s", coll, name);
    char *spath = mcg_sprintf("%s/%s/status", coll, name);
    json_t *cur = cache ? json_incref(json_object_get(cache, name)) : NULL;
    bool fresh = false;
    int rc = 0;
    long st = 0;
    for (int attempt = 0; attempt < CAS_TRIES; attempt++) {
        if (!cur || (attempt > 0 && !fresh)) {
            json_decref(cur);
            cur = NULL;
            rc = mcg_kube_simple(k->kc, "GET", path, &st, &cur, err);
            fresh = true;
            if (rc && rc != MCG_ENOTFOUND)
                break;
        }
        if (!cur) {
            json_t *md = json_pack("{s:s}", "name", name);
            if (json_object_size(labels))
                json_object_set(md, "labels", (json_t *)labels);
            json_t *obj = json_pack("{s:s,s:s,s:o,s:O}", "apiVersion", MCG_KUBE_GV, "kind", kind,
                                    "metadata", md, "spec", want_spec);
            mcg_kube_req rq = {"POST", coll, NULL, obj, NULL, 0, 0};
            rc = mcg_kube_call(k->kc, &rq, &st, &cur, err);
            json_decref(obj);
            if (rc == MCG_ECONFLICT) {
                fresh = false;
                continue;
            }
            if (rc)
                break;
            fresh = true;
        }
        json_t *d = mcg_kube_merge_diff(json_object_get(cur, "spec"), want_spec);
        if (d && !json_is_object(json_object_get(cur, "spec"))) {
            json_decref(d);
            d = json_deep_copy(want_spec);
        }
        if (d) {
            json_t *body =
                json_pack("{s:{s:s?},s:o}", "metadata", "resourceVersion", obj_rv(cur), "spec", d);
            mcg_kube_req rq = {"PATCH", path, MERGE_PATCH, body, NULL, 0, 0};
            json_t *o = NULL;
            rc = mcg_kube_call(k->kc, &rq, &st, &o, err);
            json_decref(body);
            if (rc == MCG_ECONFLICT || rc == MCG_ENOTFOUND) {
                json_decref(cur);
                cur = NULL;
                fresh = false;
                continue;
            }
            if (rc)
                break;
            json_decref(cur);
            cur = o;
        }
        if (want_status) {
            json_t *have = json_object_get(cur, "status");
            d = json_is_object(have) ? mcg_kube_merge_diff(have, want_status)
                                     : json_deep_copy(want_status);
            if (d) {
                json_t *body = json_pack("{s:{s:s?},s:o}", "metadata", "resourceVersion",
                                         obj_rv(cur), "status", d);
                mcg_kube_req rq = {"PATCH", spath, MERGE_PATCH, body, NULL, 0, 0};
                json_t *o = NULL;
                rc = mcg_kube_call(k->kc, &rq, &st, &o, err);
                json_decref(body);
                if (rc == MCG_ECONFLICT) {
                    json_decref(cur);
                    cur = NULL;
                    fresh = false;
                    continue;
                }
                if (rc == MCG_ENOTFOUND)
                    rc = mcg_err_set(err, rc,
                                     "%s %s: no status subresource (is the %s CRD from deploy/crds "
                                     "installed?)",
                                     kind, name, kind);
                if (rc)
                    break;
                json_decref(cur);
                cur = o;
            }
        }
        rc = 0;
        break;
    }
    if (!rc && cache && cur) {
        strip_managed(cur);
        json_object_set(cache, name, cur);
    }
    if (rc == MCG_ECONFLICT)
        mcg_err_prefix(err, "%s %s: still changing after %d tries", kind, name, CAS_TRIES);
    json_decref(cur);
    free(path);
    free(spath);
    return rc;
}

static int k_put_pool(mcg_cluster *c, const char *name, const json_t *obj, mcg_err *err)
{
    kube *k = K(c);
    int frc = fence(k, err);
    if (frc)
        return frc;
    if (!mcg_name_is_dns_label(name))
        return mcg_err_set(err, MCG_EINVAL, "invalid pool name '%s'", name);
    json_t *spec = json_object_get(obj, "spec");
    json_t *status = json_object_get(obj, "status");
    json_t *ws = json_is_object(spec) ? mcg_kube_strip_nulls(spec) : json_object();
    json_t *wst = json_is_object(status) ? mcg_kube_strip_nulls(status) : NULL;
    json_t *labels = json_object_get(json_object_get(obj, "metadata"), "labels");
    int rc = converge(k, MCP_PATH, "MachineConfigPool", name, k->pools,
                      json_is_object(labels) ? labels : NULL, ws, wst, err);
    json_decref(ws);
    json_decref(wst);
    return rc;
}

static int k_delete_pool(mcg_cluster *c, const char *name, mcg_err *err)
{
    kube *k = K(c);
    int frc = fence(k, err);
    if (frc)
        return frc;
    if (!mcg_name_is_dns_label(name))
        return mcg_err_set(err, MCG_EINVAL, "invalid pool name '%s'", name);
    json_object_del(k->pools, name);
    return delete_object(k, MCP_PATH, name, err);
}

/* ------------------------------------------------------------ policy */

static int k_put_policy(mcg_cluster *c, const json_t *spec, mcg_err *err)
{
    kube *k = K(c);
    int frc = fence(k, err);
    if (frc)
        return frc;
    json_t *ws = json_is_object(spec) ? mcg_kube_strip_nulls(spec) : json_object();
    int rc = converge(k, MCG_KUBE_CRD_PATH "/machineconfigurations", "MachineConfiguration",
                      "cluster", NULL, NULL, ws, NULL, err);
    json_decref(ws);
    return rc;
}

static int k_get_policy(mcg_cluster *c, json_t **spec, mcg_err *err)
{
    kube *k = K(c);
    *spec = NULL;
    json_t *o = NULL;
    long st;
    int rc = mcg_kube_simple(k->kc, "GET", MCFG_PATH, &st, &o, err);
    if (rc)
        return rc;
    json_t *s = json_object_get(o, "spec");
    *spec = json_is_object(s) ? json_incref(s) : json_object();
    json_decref(o);
    return 0;
}

/* ------------------------------------------------------------- drain */

/* policy/v1 where the server offers it, else policy/v1beta1 (Kubernetes < 1.21). */
static int eviction_version(kube *k, mcg_err *err)
{
    if (k->eviction_gv)
        return 0;
    json_t *o = NULL;
    long st;
    int rc = mcg_kube_simple(k->kc, "GET", "/apis/policy", &st, &o, err);
    if (rc)
        return mcg_err_prefix(err, "discovering the Eviction API");
    bool v1 = false, v1beta1 = false;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(o, "versions"), i, v)
    {
        const char *ver = str_at(v, "version", NULL);
        v1 |= ver && !strcmp(ver, "v1");
        v1beta1 |= ver && !strcmp(ver, "v1beta1");
    }
    json_decref(o);
    if (!v1 && !v1beta1)
        return mcg_err_set(err, MCG_EIO,
                           "the API server offers no policy/v1 or policy/v1beta1 "
                           "(Eviction API)");
    k->eviction_gv = mcg_strdup(v1 ? "policy/v1" : "policy/v1beta1");
    return 0;
}

typedef struct pod_ref {
    char *ns, *name;
    bool terminating;
} pod_ref;

typedef struct pod_list {
    pod_ref *v;
    size_t n, cap;
} pod_list;

static void pods_free(pod_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].ns);
        free(l->v[i].name);
    }
    free(l->v);
    memset(l, 0, sizeof(*l));
}

static void pods_reset(void *arg)
{
    pod_list *l = arg;
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].ns);
        free(l->v[i].name);
    }
    l->n = 0;
}

/* DaemonSet pods are not drained (their controller would put them back), nor mirror pods. */
static bool pod_skipped(const json_t *pod)
{
    json_t *md = json_object_get(pod, "metadata");
    if (json_object_get(json_object_get(md, "annotations"), "kubernetes.io/config.mirror"))
        return true;
    size_t i;
    json_t *ref;
    json_array_foreach(json_object_get(md, "ownerReferences"), i, ref)
    {
        const char *kind = str_at(ref, "kind", NULL);
        if (kind && !strcmp(kind, "DaemonSet") && json_is_true(json_object_get(ref, "controller")))
            return true;
    }
    return false;
}

static int acc_pod(json_t *item, void *arg, mcg_err *err)
{
    pod_list *l = arg;
    const char *ns = str_at(item, "metadata", "namespace"),
               *name = str_at(item, "metadata", "name");
    if (!ns || !name || pod_skipped(item))
        return 0;
    /* names go into a URL: only what Kubernetes itself allows */
    if (!mcg_name_is_dns_label(ns) || !mcg_name_is_dns_subdomain(name))
        return mcg_err_set(err, MCG_EINVAL, "pod list: invalid pod name in the response");
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->v = mcg_realloc(l->v, l->cap * sizeof(*l->v));
    }
    l->v[l->n].ns = mcg_strdup(ns);
    l->v[l->n].name = mcg_strdup(name);
    l->v[l->n].terminating =
        json_object_get(json_object_get(item, "metadata"), "deletionTimestamp") != NULL;
    l->n++;
    return 0;
}

static int k_drain(mcg_cluster *c, const char *name, mcg_err *err)
{
    kube *k = K(c);
    if (!mcg_name_is_dns_subdomain(name))
        return mcg_err_set(err, MCG_EINVAL, "invalid node name '%s'", name);
    int rc = eviction_version(k, err);
    if (rc)
        return rc;
    char *sel = mcg_sprintf("spec.nodeName=%s", name);
    char *esc = mcg_kube_escape(sel);
    char *path = mcg_sprintf("/api/v1/pods?fieldSelector=%s", esc);
    free(esc);
    free(sel);
    int64_t deadline = mono_ms() + k->drain_timeout_ms;
    long pause = 500;
    char blocked[700] = "";
    for (;;) {
        pod_list pods = {0};
        if ((rc = mcg_kube_list(k->kc, path, NULL, acc_pod, pods_reset, &pods, NULL, err)) != 0) {
            pods_free(&pods);
            break;
        }
        if (!pods.n) {
            pods_free(&pods);
            break; /* drained */
        }
        blocked[0] = '\0';
        for (size_t i = 0; i < pods.n && !rc; i++) {
            pod_ref *p = &pods.v[i];
            if (p->terminating) {
                if (!blocked[0])
                    snprintf(blocked, sizeof(blocked), "pod %s/%s is still terminating", p->ns,
                             p->name);
                continue;
            }
            char *ep = mcg_sprintf("/api/v1/namespaces/%s/pods/%s/eviction", p->ns, p->name);
            json_t *body = json_pack("{s:s,s:s,s:{s:s,s:s}}", "apiVersion", k->eviction_gv, "kind",
                                     "Eviction", "metadata", "name", p->name, "namespace", p->ns);
            mcg_kube_req rq = {"POST", ep, NULL, body, NULL, 0, MCG_KUBE_NO_RETRY_429};
            long st = 0;
            mcg_err e = {0};
            int r = mcg_kube_call(k->kc, &rq, &st, NULL, &e);
            json_decref(body);
            free(ep);
            if (r == 0 || st == 404)
                continue; /* evicted, or gone already */
            if (st == 429) {
                /* a PodDisruptionBudget says not now: the message says which pod */
                if (!blocked[0] || strstr(blocked, "terminating")) {
                    const char *m = strstr(e.msg, "429 Too Many Requests: ");
                    snprintf(blocked, sizeof(blocked), "pod %s/%s: %s", p->ns, p->name,
                             m ? m + 23 : e.msg);
                }
                continue;
            }
            rc = mcg_err_set(err, r, "evicting pod %s/%s: %s", p->ns, p->name, e.msg);
        }
        pods_free(&pods);
        if (rc)
            break;
        int64_t left = deadline - mono_ms();
        if (left <= 0 || mcg_kube_client_stopped(k->kc)) {
            rc = mcg_err_set(err, MCG_EIO, "node %s not drained after %lds: %s", name,
                             k->drain_timeout_ms / 1000,
                             blocked[0] ? blocked : "pods are still running");
            break;
        }
        if (!blocked[0]) {
            /* every eviction was accepted: look again shortly for the pods to be gone */
            mcg_kube_sleep_ms(k->kc, left < 200 ? left : 200);
            continue;
        }
        mcg_kube_sleep_ms(k->kc, pause < left ? pause : left);
        if (pause < 5000)
            pause *= 2;
    }
    free(path);
    return rc;
}

/* ------------------------------------------------------------- lease */

static char *lease_path(const kube *k)
{
    return mcg_sprintf("/apis/coordination.k8s.io/v1/namespaces/%s/leases/" LEASE_NAME, k->ns);
}

static void lease_read(const json_t *o, mcg_kube_lease *l)
{
    json_t *spec = json_object_get(o, "spec");
    memset(l, 0, sizeof(*l));
    l->holder = str_at(spec, "holderIdentity", NULL);
    json_t *d = json_object_get(spec, "leaseDurationSeconds");
    l->duration_s = json_is_integer(d) ? (long)json_integer_value(d) : 0;
    const char *rt = str_at(spec, "renewTime", NULL);
    int64_t ms;
    if (rt && mcg_kube_time_parse_ms(rt, &ms))
        l->renew_ms = ms;
}

static int k_lead(mcg_cluster *c, const char *identity, bool *leader, mcg_err *err)
{
    kube *k = K(c);
    *leader = false;
    if (!identity || !*identity || strlen(identity) > 253)
        return mcg_err_set(err, MCG_EINVAL, "leader election: bad identity");
    if (!k->identity || strcmp(k->identity, identity) != 0) {
        free(k->identity);
        k->identity = mcg_strdup(identity);
        k->leader = false;
    }
    /* renewed less than a third of the duration ago: still ours, no request needed */
    if (k->leader && mono_ms() - k->lead_ok_ms < k->lease_duration_s * 1000 / 3) {
        *leader = true;
        return 0;
    }
    char *path = lease_path(k);
    json_t *o = NULL;
    long st = 0;
    char now[40];
    mcg_kube_time_micro(wall_ms(), now);
    int64_t started = mono_ms(); /* the lease we win is good from no earlier than this */
    int rc = mcg_kube_simple(k->kc, "GET", path, &st, &o, err);
    if (rc == MCG_ENOTFOUND) {
        char *coll = mcg_sprintf("/apis/coordination.k8s.io/v1/namespaces/%s/leases", k->ns);
        json_t *body = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s,s:I,s:s,s:s,s:i}}", "apiVersion",
                                 "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name",
                                 LEASE_NAME, "namespace", k->ns, "spec", "holderIdentity", identity,
                                 "leaseDurationSeconds", (json_int_t)k->lease_duration_s,
                                 "acquireTime", now, "renewTime", now, "leaseTransitions", 0);
        mcg_kube_req rq = {"POST", coll, NULL, body, NULL, 0, 0};
        rc = mcg_kube_call(k->kc, &rq, &st, NULL, err);
        json_decref(body);
        free(coll);
        if (rc == MCG_ECONFLICT)
            rc = 0; /* someone else created it first: follow */
        else if (!rc) {
            *leader = true;
            k->lead_ok_ms = started;
        }
        goto out;
    }
    if (rc)
        goto out;
    const char *rv = obj_rv(o);
    if (!k->obs_rv || !rv || strcmp(k->obs_rv, rv) != 0) {
        free(k->obs_rv);
        k->obs_rv = rv ? mcg_strdup(rv) : NULL;
        k->obs_ms = mono_ms();
    }
    mcg_kube_lease l;
    lease_read(o, &l);
    mcg_lease_action act = mcg_kube_lease_decide(&l, identity, k->obs_ms, mono_ms());
    if (act == MCG_LEASE_FOLLOW)
        goto out;
    json_t *spec = json_object_get(o, "spec");
    if (!json_is_object(spec)) {
        spec = json_object();
        json_object_set_new(o, "spec", spec);
    }
    if (act == MCG_LEASE_TAKE) {
        json_t *tr = json_object_get(spec, "leaseTransitions");
        json_object_set_new(spec, "holderIdentity", json_string(identity));
        json_object_set_new(spec, "acquireTime", json_string(now));
        json_object_set_new(spec, "leaseTransitions",
                            json_integer(json_is_integer(tr) ? json_integer_value(tr) + 1 : 1));
    }
    json_object_set_new(spec, "leaseDurationSeconds", json_integer(k->lease_duration_s));
    json_object_set_new(spec, "renewTime", json_string(now));
    /* PUT carries the resourceVersion we read: a replica that moved first wins, we get 409 */
    mcg_kube_req rq = {"PUT", path, NULL, o, NULL, 0, 0};
    json_t *res = NULL;
    rc = mcg_kube_call(k->kc, &rq, &st, &res, err);
    if (rc == MCG_ECONFLICT) {
        rc = 0; /* lost the race */
    } else if (!rc) {
        *leader = true;
        k->lead_ok_ms = started;
        const char *nrv = obj_rv(res);
        free(k->obs_rv);
        k->obs_rv = nrv ? mcg_strdup(nrv) : NULL;
        k->obs_ms = mono_ms();
    }
    json_decref(res);
out:
    if (rc)
        mcg_err_prefix(err, "leader election (Lease %s/%s)", k->ns, LEASE_NAME);
    k->leader = *leader;
    json_decref(o);
    free(path);
    return rc;
}

/* On a clean shutdown the leader gives the Lease up, so a standby takes over at once. */
static void lease_release(kube *k)
{
    if (!k->leader || !k->identity)
        return;
    char *path = lease_path(k);
    json_t *o = NULL;
    long st;
    if (mcg_kube_simple(k->kc, "GET", path, &st, &o, NULL) == 0) {
        json_t *spec = json_object_get(o, "spec");
        const char *h = str_at(spec, "holderIdentity", NULL);
        if (h && !strcmp(h, k->identity)) {
            char now[40];
            mcg_kube_time_micro(wall_ms(), now);
            json_object_set_new(spec, "holderIdentity", json_string(""));
            json_object_set_new(spec, "leaseDurationSeconds", json_integer(1));
            json_object_set_new(spec, "renewTime", json_string(now));
            mcg_kube_req rq = {"PUT", path, NULL, o, NULL, 0, MCG_KUBE_NO_RETRY};
            mcg_kube_call(k->kc, &rq, &st, NULL, NULL);
        }
    }
    json_decref(o);
    free(path);
    k->leader = false;
}

/* ------------------------------------------------------------- watch */

static int k_wait_change(mcg_cluster *c, const char *node, long timeout_ms, mcg_err *err)
{
    kube *k = K(c);
    if (node && !mcg_name_is_dns_subdomain(node))
        return mcg_err_set(err, MCG_EINVAL, "invalid node name '%s'", node);
    if (!str_eq(node, k->scope)) {
        unsync(k);
        free(k->scope);
        k->scope = node ? mcg_strdup(node) : NULL;
    }
    int64_t deadline = mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    int rc = 0;
    for (;;) {
        if (mcg_kube_client_stopped(k->kc))
            return 0;
        mcg_err e = {0};
        int r = 0;
        if (!k->synced)
            r = sync_nodes(k, &e);
        if (!r && !k->w) {
            /* a stream that keeps ending at once is not restarted in a tight loop */
            int64_t since = mono_ms() - k->watch_started;
            if (since < 1000)
                mcg_kube_sleep_ms(k->kc, 1000 - since);
            char *path = scope_path(k);
            r = mcg_kube_watch_start(&k->w, k->kc, path, k->nodes_rv, on_node_event, k, &e);
            free(path);
            k->watch_started = mono_ms();
        }
        if (!r && !k->changed) {
            int64_t left = deadline - mono_ms();
            r = mcg_kube_watch_poll(k->w, left > 0 ? left : 0, &e);
            if (r == 1) {
                drop_watch(k); /* server timeout: resume from nodes_rv */
                r = 0;
            } else if (r == MCG_ENOTFOUND) {
                unsync(k); /* 410 Gone: re-list (a difference counts as a change) */
                r = 0;
            }
        }
        if (k->changed) {
            k->changed = false;
            return 1;
        }
        int64_t left = deadline - mono_ms();
        if (r) {
            /* cannot watch now: say so, but only after waiting, so callers never spin */
            unsync(k);
            rc = mcg_err_set(err, r, "%s", e.msg);
            mcg_kube_sleep_ms(k->kc, left > 1000 ? 1000 : left > 0 ? left : 0);
            if (mono_ms() >= deadline)
                return rc;
            continue;
        }
        if (left <= 0)
            return 0;
    }
}

/* ------------------------------------------------------------- other */

static char *k_node_root(mcg_cluster *c, const char *name)
{
    (void)c;
    (void)name;
    return NULL; /* the agent's --root says where the host is */
}

static void k_free(mcg_cluster *c)
{
    kube *k = (kube *)c;
    if (k->kc) {
        mcg_kube_client_set_stop(k->kc, NULL);
        lease_release(k);
    }
    drop_watch(k);
    cache_clear(k);
    free(k->nodes);
    free(k->nodes_rv);
    free(k->scope);
    mcg_strv_free(&k->published);
    json_decref(k->pools);
    free(k->identity);
    free(k->obs_rv);
    free(k->eviction_gv);
    free(k->ns);
    mcg_kube_client_free(k->kc);
    free(k->base.spec);
    free(k);
}

static const mcg_cluster_ops kube_ops = {
    .list_nodes = k_list_nodes,
    .get_node = k_get_node,
    .patch_node = k_patch_node,
    .add_node = k_add_node,
    .remove_node = k_remove_node,
    .label_node = k_label_node,
    .put_config = k_put_config,
    .get_config = k_get_config,
    .list_configs = k_list_configs,
    .delete_config = k_delete_config,
    .put_pool = k_put_pool,
    .list_pools = k_list_pools,
    .delete_pool = k_delete_pool,
    .put_policy = k_put_policy,
    .get_policy = k_get_policy,
    .drain = k_drain,
    .node_root = k_node_root,
    .free = k_free,
    .lead = k_lead,
    .wait_change = k_wait_change,
};

bool mcg_cluster_kube_stats(mcg_cluster *c, uint64_t *requests, uint64_t *bytes)
{
    if (!c || c->ops != &kube_ops)
        return false;
    mcg_kube_client_stats(((kube *)c)->kc, requests, bytes);
    return true;
}

static long env_seconds(const char *name, long def, long max)
{
    const char *v = getenv(name);
    uint64_t x;
    if (!v || !mcg_parse_u64(v, &x) || x == 0 || x > (uint64_t)max)
        return def;
    return (long)x;
}

int mcg_cluster_kube_open(mcg_cluster **out, const char *spec, const char *kubeconfig, mcg_err *err)
{
    *out = NULL;
    mcg_kube_config cfg;
    int rc;
    if (kubeconfig) {
        if (!*kubeconfig)
            return mcg_err_set(err, MCG_EINVAL, "cluster '%s': expected kube:KUBECONFIG", spec);
        rc = mcg_kube_config_from_file(&cfg, kubeconfig, err);
    } else {
        const char *sa = getenv("MCGIT_KUBE_SA_DIR");
        rc = mcg_kube_config_in_cluster(&cfg, sa && *sa ? sa : MCG_KUBE_SA_DIR,
                                        getenv("KUBERNETES_SERVICE_HOST"),
                                        getenv("KUBERNETES_SERVICE_PORT"), err);
    }
    if (rc)
        return rc;
    const char *ens = getenv("MCGIT_NAMESPACE");
    char *ns = mcg_strdup(ens && *ens ? ens : (!kubeconfig && cfg.ns) ? cfg.ns : "mcgit");
    if (!mcg_name_is_dns_label(ns)) {
        rc = mcg_err_set(err, MCG_EINVAL, "namespace '%s' is not a DNS label", ns);
        free(ns);
        mcg_kube_config_free(&cfg);
        return rc;
    }
    kube *k = mcg_calloc(1, sizeof(*k));
    k->ns = ns;
    if ((rc = mcg_kube_client_new(&k->kc, &cfg, err)) != 0) {
        free(ns);
        free(k);
        return mcg_err_prefix(err, "cluster %s", spec);
    }
    k->base.ops = &kube_ops;
    k->base.spec = mcg_strdup(spec);
    k->pools = json_object();
    k->lease_duration_s = env_seconds("MCGIT_KUBE_LEASE_DURATION", 15, 3600);
    k->drain_timeout_ms = env_seconds("MCGIT_KUBE_DRAIN_TIMEOUT", 600, 86400) * 1000;
    *out = &k->base;
    return 0;
}
