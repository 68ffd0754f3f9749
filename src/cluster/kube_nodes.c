/*
 * kube_nodes.c — Node objects and the node cache.
 *
 * Writes that must not lose an update are compare-and-swap on the object's
 * resourceVersion: a merge patch carrying metadata.resourceVersion is
 * refused with 409 when the object moved, and is then re-read and retried
 * (at most MCG_KUBE_CAS_TRIES times). A rollout wave's writes
 * (patch_nodes) go out concurrently, each write fenced on its own.
 *
 * Reads of nodes are served from a cache kept current by a watch once a
 * caller waits for changes (kube_watch.c): a controller pass at steady state
 * then costs no node list at all. The cache is sorted by name, only moves
 * forward in resourceVersion and takes the objects our own writes return.
 */
#include "cluster/kube_int.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static void node_copy(mcg_node *d, const mcg_node *s)
{
    memset(d, 0, sizeof(*d));
    d->name = mcg_strdup(s->name);
    for (size_t i = 0; i < s->labels.n; i++)
        mcg_labels_add(&d->labels, s->labels.items[i].key, s->labels.items[i].value);
    mcg_labels_finish(&d->labels); /* already sorted: one check */
    d->created = s->created;
    d->ready = s->ready;
    d->unschedulable = s->unschedulable;
    d->desired = s->desired ? mcg_strdup(s->desired) : NULL;
    d->current = s->current ? mcg_strdup(s->current) : NULL;
    d->state = s->state ? mcg_strdup(s->state) : NULL;
    d->reason = s->reason ? mcg_strdup(s->reason) : NULL;
    d->failed_check = s->failed_check ? mcg_strdup(s->failed_check) : NULL;
    d->failed_config = s->failed_config ? mcg_strdup(s->failed_config) : NULL;
    d->machine_id = s->machine_id ? mcg_strdup(s->machine_id) : NULL;
    d->boot_id = s->boot_id ? mcg_strdup(s->boot_id) : NULL;
    d->system_uuid = s->system_uuid ? mcg_strdup(s->system_uuid) : NULL;
    d->bound_machine_id = s->bound_machine_id ? mcg_strdup(s->bound_machine_id) : NULL;
    d->node_key = s->node_key ? mcg_strdup(s->node_key) : NULL;
    d->attestation = s->attestation ? mcg_strdup(s->attestation) : NULL;
}

/* Whether two views of a node differ in anything mcgit reads. */
bool mcg_kube_node_differs(const mcg_node *a, const mcg_node *b)
{
    if (a->ready != b->ready || a->unschedulable != b->unschedulable ||
        !mcg_kube_str_eq(a->desired, b->desired) || !mcg_kube_str_eq(a->current, b->current) ||
        !mcg_kube_str_eq(a->state, b->state) || !mcg_kube_str_eq(a->reason, b->reason) ||
        !mcg_kube_str_eq(a->failed_check, b->failed_check) ||
        !mcg_kube_str_eq(a->failed_config, b->failed_config) ||
        !mcg_kube_str_eq(a->machine_id, b->machine_id) ||
        !mcg_kube_str_eq(a->boot_id, b->boot_id) ||
        !mcg_kube_str_eq(a->system_uuid, b->system_uuid) ||
        !mcg_kube_str_eq(a->bound_machine_id, b->bound_machine_id) ||
        !mcg_kube_str_eq(a->node_key, b->node_key) ||
        !mcg_kube_str_eq(a->attestation, b->attestation) || a->labels.n != b->labels.n)
        return true;
    for (size_t i = 0; i < a->labels.n; i++)
        if (!mcg_kube_str_eq(mcg_labels_get(&b->labels, a->labels.items[i].key),
                             a->labels.items[i].value))
            return true;
    return false;
}

static size_t mcg_kube_cache_pos(const mcg_kube *k, const char *name, bool *found)
{
    return mcg_bsearch_str(k->nodes, k->nnodes, sizeof(*k->nodes),
                           offsetof(mcg_kube_node_ent, n.name), name, found);
}

void mcg_kube_cache_clear(mcg_kube *k)
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
static bool mcg_kube_cache_put(mcg_kube *k, mcg_node *n, const char *rv)
{
    bool found;
    size_t i = mcg_kube_cache_pos(k, n->name, &found);
    if (found) {
        mcg_kube_node_ent *e = &k->nodes[i];
        if (rv && e->rv && mcg_kube_rv_cmp(rv, e->rv) < 0) {
            mcg_node_clear(n);
            return false; /* older than what we have */
        }
        bool diff = mcg_kube_node_differs(&e->n, n);
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

bool mcg_kube_cache_del(mcg_kube *k, const char *name)
{
    bool found;
    size_t i = mcg_kube_cache_pos(k, name, &found);
    if (!found)
        return false;
    mcg_node_clear(&k->nodes[i].n);
    free(k->nodes[i].rv);
    memmove(&k->nodes[i], &k->nodes[i + 1], (k->nnodes - i - 1) * sizeof(*k->nodes));
    k->nnodes--;
    return true;
}

/* Cache a Node object as the API returned it; returns whether it changed. */
bool mcg_kube_cache_obj(mcg_kube *k, const json_t *o)
{
    mcg_node n;
    if (mcg_node_from_json(&n, o, NULL) != 0)
        return false;
    return mcg_kube_cache_put(k, &n, mcg_kube_obj_rv(o));
}

typedef struct list_acc {
    mcg_kube_node_ent *v;
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
    const char *rv = mcg_kube_obj_rv(item);
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
    return strcmp(((const mcg_kube_node_ent *)x)->n.name, ((const mcg_kube_node_ent *)y)->n.name);
}

int mcg_kube_list_node_ents(mcg_kube *k, const char *path, mcg_kube_node_ent **v, size_t *n,
                            size_t *cap, char **rv, mcg_err *err)
{
    list_acc a = {NULL, 0, 0};
    *v = NULL;
    *n = *cap = 0;
    int rc = mcg_kube_list(k->kc, path, NULL, acc_node, acc_reset, &a, rv, err);
    if (rc) {
        acc_reset(&a);
        free(a.v);
        return rc;
    }
    if (a.n)
        qsort(a.v, a.n, sizeof(*a.v), ent_cmp);
    *v = a.v;
    *n = a.n;
    *cap = a.cap;
    return 0;
}

static void mcg_kube_node_ents_free(mcg_kube_node_ent *v, size_t n)
{
    list_acc a = {v, n, n};
    acc_reset(&a);
    free(v);
}

int mcg_kube_op_list_nodes(mcg_cluster *c, mcg_node **out, size_t *n, mcg_err *err)
{
    mcg_kube *k = mcg_kube_of(c);
    int rc;
    if (k->scope || !mcg_kube_pump(k)) {
        if (k->scope) {
            /* a one-node watch stays as it is; list into a scratch cache */
            mcg_kube_node_ent *ents = NULL;
            size_t ne = 0, cap = 0;
            rc = mcg_kube_list_node_ents(k, MCG_KUBE_NODES_PATH, &ents, &ne, &cap, NULL, err);
            if (rc)
                return rc;
            mcg_node *v = mcg_calloc(ne ? ne : 1, sizeof(*v));
            for (size_t i = 0; i < ne; i++)
                node_copy(&v[i], &ents[i].n);
            mcg_kube_node_ents_free(ents, ne);
            *out = v;
            *n = ne;
            return 0;
        }
        if ((rc = mcg_kube_sync_nodes(k, err)) != 0)
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

static bool in_scope(const mcg_kube *k, const char *name)
{
    return !k->scope || !strcmp(k->scope, name);
}

/* GET a node into the cache; *rv receives its resourceVersion (caller frees). */
static int fetch_node(mcg_kube *k, const char *name, mcg_node *out, char **rv, mcg_err *err)
{
    char *path = mcg_sprintf(MCG_KUBE_NODES_PATH "/%s", name);
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
            *rv = mcg_kube_obj_rv(o) ? mcg_strdup(mcg_kube_obj_rv(o)) : NULL;
        mcg_node tmp;
        node_copy(&tmp, out);
        mcg_kube_cache_put(k, &tmp, mcg_kube_obj_rv(o));
    }
    json_decref(o);
    return rc;
}

int mcg_kube_op_get_node(mcg_cluster *c, const char *name, mcg_node *out, mcg_err *err)
{
    mcg_kube *k = mcg_kube_of(c);
    if (in_scope(k, name) && mcg_kube_pump(k)) {
        bool found;
        size_t i = mcg_kube_cache_pos(k, name, &found);
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
static int patch_obj_node(mcg_kube *k, const char *name, const char *sub, const char *ctype,
                          const json_t *body, long *st, mcg_err *err)
{
    char *path = mcg_sprintf(MCG_KUBE_NODES_PATH "/%s%s", name, sub);
    mcg_kube_req rq = {"PATCH", path, ctype, body, NULL, 0, 0};
    json_t *o = NULL;
    int rc = mcg_kube_call(k->kc, &rq, st, &o, err);
    free(path);
    if (!rc && o)
        mcg_kube_cache_obj(k, o);
    json_decref(o);
    return rc;
}

/* The annotations a patch sets (an empty object when it sets none). */
static json_t *patch_annotations(const mcg_node_patch *p)
{
    json_t *ann = json_object();
    ann_set(ann, MCG_ANN_DESIRED, p->desired);
    ann_set(ann, MCG_ANN_CURRENT, p->current);
    ann_set(ann, MCG_ANN_STATE, p->state);
    ann_set(ann, MCG_ANN_REASON, p->reason);
    ann_set(ann, MCG_ANN_MACHINE_ID, p->bound_machine_id);
    ann_set(ann, MCG_ANN_NODE_KEY, p->node_key);
    ann_set(ann, MCG_ANN_ATTESTATION, p->attestation);
    char *failure = mcg_node_failure_value(p->failed_check, p->failed_config);
    ann_set(ann, MCG_ANN_HEALTH_FAILURE, failure);
    free(failure);
    return ann;
}

int mcg_kube_op_patch_node(mcg_cluster *c, const char *name, const mcg_node_patch *p, mcg_err *err)
{
    mcg_kube *k = mcg_kube_of(c);
    json_t *ann = patch_annotations(p);
    bool main_patch = json_object_size(ann) || p->unschedulable >= 0 || p->if_desired;
    int rc = 0;
    bool moved = false; /* the last try lost a race */
    for (int attempt = 0; main_patch && attempt < MCG_KUBE_CAS_TRIES; attempt++) {
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
            if (attempt == 0 && in_scope(k, name) && mcg_kube_pump(k))
                i = mcg_kube_cache_pos(k, name, &found);
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
        rc = patch_obj_node(k, name, "", MCG_KUBE_MERGE_PATCH, body, &st, &e);
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
                    MCG_KUBE_CAS_TRIES);
    if (rc)
        return rc;
    if (p->ready >= 0) {
        char ts[32];
        mcg_time_iso(ts, mcg_kube_wall_ms() / 1000);
        json_t *body =
            json_pack("{s:{s:[{s:s,s:s,s:s,s:s,s:s,s:s}]}}", "status", "conditions", "type",
                      "Ready", "status", p->ready ? "True" : "False", "reason", "MachineConfigSet",
                      "message", "set by mcgit", "lastHeartbeatTime", ts, "lastTransitionTime", ts);
        long st = 0;
        rc = patch_obj_node(k, name, "/status", MCG_KUBE_STRATEGIC_PATCH, body, &st, err);
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

int mcg_kube_op_add_node(mcg_cluster *c, const char *name, const mcg_labels *labels, int64_t now,
                         mcg_err *err)
{
    mcg_kube *k = mcg_kube_of(c);
    (void)now; /* the API server sets creationTimestamp */
    json_t *body = json_pack("{s:s,s:s,s:{s:s,s:o}}", "apiVersion", "v1", "kind", "Node",
                             "metadata", "name", name, "labels", labels_json(labels));
    mcg_kube_req rq = {"POST", MCG_KUBE_NODES_PATH, NULL, body, NULL, 0, 0};
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
        mcg_kube_cache_obj(k, o);
    json_decref(o);
    /* a node added by hand (no kubelet) starts Ready, as on a local cluster */
    mcg_node_patch p = MCG_NODE_PATCH_INIT;
    p.ready = 1;
    return mcg_kube_op_patch_node(c, name, &p, err);
}

int mcg_kube_op_remove_node(mcg_cluster *c, const char *name, mcg_err *err)
{
    mcg_kube *k = mcg_kube_of(c);
    char *path = mcg_sprintf(MCG_KUBE_NODES_PATH "/%s", name);
    long st;
    int rc = mcg_kube_simple(k->kc, "DELETE", path, &st, NULL, err);
    free(path);
    if (rc == MCG_ENOTFOUND)
        return mcg_err_set(err, rc, "node '%s' not found", name);
    if (!rc)
        mcg_kube_cache_del(k, name);
    return rc;
}

int mcg_kube_op_label_node(mcg_cluster *c, const char *name, const char *edits, mcg_err *err)
{
    mcg_kube *k = mcg_kube_of(c);
    int rc = 0;
    for (int attempt = 0; attempt < MCG_KUBE_CAS_TRIES; attempt++) {
        char *path = mcg_sprintf(MCG_KUBE_NODES_PATH "/%s", name);
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
                mcg_labels_add(&cur, lk, json_string_value(lv));
        mcg_labels_finish(&cur);
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
        json_t *body = json_pack("{s:{s:s?,s:o}}", "metadata", "resourceVersion",
                                 mcg_kube_obj_rv(o), "labels", diff);
        json_decref(o);
        rc = patch_obj_node(k, name, "", MCG_KUBE_MERGE_PATCH, body, &st, err);
        json_decref(body);
        if (rc != MCG_ECONFLICT)
            return rc;
    }
    return rc;
}

/* The fence, asked before each write of a batch; after a refusal every
 * later write is refused with the same reason, without asking again. */
typedef struct patch_gate {
    mcg_kube *k;
    int rc;
    mcg_err why;
    const size_t *at; /* request -> node index */
    bool *refused;    /* per node: its write was not sent */
} patch_gate;

static int gate_fence(size_t i, void *arg, mcg_err *err)
{
    patch_gate *g = arg;
    if (!g->rc)
        g->rc = mcg_kube_op_fence(&g->k->base, &g->why);
    if (g->rc) {
        g->refused[g->at ? g->at[i] : i] = true;
        mcg_err_set(err, g->rc, "%s", g->why.msg);
    }
    return g->rc;
}

/*
 * The body of node patch p when it can go out as one merge patch without
 * a read first: what patch_node's first try would send (the CAS on
 * if_desired against the resourceVersion the watch delivered). NULL when
 * the node needs patch_node's own path: no synced cache entry for it, a
 * cached desiredConfig that already differs (patch_node checks the
 * server), a Ready change (a second, status patch), or nothing to patch.
 */
static json_t *batch_body(mcg_kube *k, bool cache_ok, const char *name, const mcg_node_patch *p)
{
    if (p->ready >= 0)
        return NULL;
    json_t *ann = patch_annotations(p);
    if (!json_object_size(ann) && p->unschedulable < 0 && !p->if_desired) {
        json_decref(ann);
        return NULL;
    }
    json_t *md = json_object();
    if (json_object_size(ann))
        json_object_set(md, "annotations", ann);
    json_decref(ann);
    if (p->if_desired) {
        bool found = false;
        size_t i = cache_ok && in_scope(k, name) ? mcg_kube_cache_pos(k, name, &found) : 0;
        const mcg_kube_node_ent *e = found ? &k->nodes[i] : NULL;
        if (!e || !e->rv || strcmp(e->n.desired ? e->n.desired : "", p->if_desired) != 0) {
            json_decref(md);
            return NULL;
        }
        json_object_set_new(md, "resourceVersion", json_string(e->rv));
    }
    json_t *body = json_pack("{s:o}", "metadata", md);
    if (p->unschedulable >= 0)
        json_object_set_new(body, "spec", json_pack("{s:b}", "unschedulable", p->unschedulable));
    return body;
}

/*
 * The outcome of a batch of n node patches (rcs, errs: each one's; refused:
 * the fence refused it, g: why). Writes the fence refused fail the batch,
 * saying how many; else the first failure other than a lost race or a
 * missing node names its node, and the names of the others follow.
 */
static int batch_outcome(const char *const *names, size_t n, const int *rcs, const mcg_err *errs,
                         const bool *refused, const patch_gate *g, mcg_err *err)
{
    int rc = 0;
    size_t first = 0, others = 0, nrefused = 0;
    mcg_buf more = MCG_BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        nrefused += refused[i];
        if (refused[i] || !rcs[i] || rcs[i] == MCG_ECONFLICT || rcs[i] == MCG_ENOTFOUND)
            continue;
        if (!rc) {
            rc = rcs[i];
            first = i;
        } else if (others++ < 5) {
            mcg_buf_printf(&more, "%s%s", others > 1 ? ", " : "", names[i]);
        }
    }
    if (nrefused)
        rc = mcg_err_set(err, g->rc, "%s (%zu of %zu node writes not sent)", g->why.msg, nrefused,
                         n);
    else if (rc && others)
        mcg_err_set(err, rc, "node '%s': %s; %zu more failed: %s%s", names[first], errs[first].msg,
                    others, more.ptr, others > 5 ? ", ..." : "");
    else if (rc)
        mcg_err_set(err, rc, "node '%s': %s", names[first], errs[first].msg);
    mcg_buf_free(&more);
    return rc;
}

/*
 * Several node patches at once (a rollout wave): each goes out as the
 * merge patch patch_node would send first, concurrently through
 * mcg_kube_call_many (bounded in flight, one connection pool), each write
 * fenced on its own just before it is sent. What cannot go out that way,
 * or lost its compare-and-swap race (409), then takes patch_node's path
 * one at a time, fenced too: re-read, compare, patch again. Every node
 * gets its own result in rcs; a failed write leaves its node as it was.
 * The return value is 0 unless a node failed other than by a lost race
 * (MCG_ECONFLICT) or being gone (MCG_ENOTFOUND): then the first such
 * failure, with its node's name and the names of the others that failed.
 */
int mcg_kube_op_patch_nodes(mcg_cluster *c, const char *const *names, const mcg_node_patch *patches,
                            size_t n, int *rcs, mcg_err *err)
{
    mcg_kube *k = mcg_kube_of(c);
    bool cache_ok = !k->scope && mcg_kube_pump(k);
    mcg_kube_req *rqs = mcg_calloc(n ? n : 1, sizeof(*rqs));
    json_t **bodies = mcg_calloc(n ? n : 1, sizeof(*bodies));
    char **paths = mcg_calloc(n ? n : 1, sizeof(*paths));
    size_t *at = mcg_calloc(n ? n : 1, sizeof(*at));
    mcg_err *errs = mcg_calloc(n ? n : 1, sizeof(*errs));
    size_t m = 0;
    bool *done = mcg_calloc(n ? n : 1, sizeof(*done));
    for (size_t i = 0; i < n; i++) {
        rcs[i] = 0;
        if (!(bodies[i] = batch_body(k, cache_ok, names[i], &patches[i])))
            continue;
        paths[i] = mcg_sprintf(MCG_KUBE_NODES_PATH "/%s", names[i]);
        rqs[m] = (mcg_kube_req){"PATCH", paths[i], MCG_KUBE_MERGE_PATCH, bodies[i], NULL, 0, 0};
        at[m++] = i;
    }
    bool *refused = mcg_calloc(n ? n : 1, sizeof(*refused));
    patch_gate g = {k, 0, {0}, at, refused};
    mcg_kube_result *res = mcg_calloc(m ? m : 1, sizeof(*res));
    mcg_kube_call_many(k->kc, rqs, m, gate_fence, &g, res);
    for (size_t j = 0; j < m; j++) {
        size_t i = at[j];
        done[i] = true;
        if (res[j].rc == 0) {
            if (res[j].obj)
                mcg_kube_cache_obj(k, res[j].obj);
            rcs[i] = 0;
        } else if (res[j].rc == MCG_ECONFLICT && res[j].status == 409 && patches[i].if_desired) {
            done[i] = false; /* it moved since the watch saw it: patch_node re-reads, decides */
        } else if (res[j].rc == MCG_ENOTFOUND) {
            rcs[i] = mcg_err_set(&errs[i], MCG_ENOTFOUND, "node '%s' not found", names[i]);
        } else {
            rcs[i] = res[j].rc;
            errs[i] = res[j].err;
        }
    }
    mcg_kube_results_clear(res, m);
    free(res);
    /* the rest, one at a time through patch_node's own path */
    g.at = NULL;
    for (size_t i = 0; i < n; i++) {
        if (done[i])
            continue;
        if ((rcs[i] = gate_fence(i, &g, &errs[i])) == 0)
            rcs[i] = mcg_kube_op_patch_node(c, names[i], &patches[i], &errs[i]);
    }
    int rc = batch_outcome(names, n, rcs, errs, refused, &g, err);
    free(refused);
    free(done);
    for (size_t i = 0; i < n; i++) {
        json_decref(bodies[i]);
        free(paths[i]);
    }
    free(rqs);
    free(bodies);
    free(paths);
    free(at);
    free(errs);
    return rc;
}
