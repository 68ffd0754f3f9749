/*
 * kube_objects.c — mcgit's own objects in the API server:
 *
 *   rendered configs MachineConfig objects (machineconfiguration.mcgit.io/v1,
 *                    cluster-scoped) named rendered-<pool>-<hash>, the rendered
 *                    spec as their spec ({"config": <Ignition>}), labelled
 *                    .../rendered=true and annotated with .../spec-sha256
 *   pools            MachineConfigPool objects; status through the status
 *                    subresource
 *   policy           the MachineConfiguration named "cluster"
 *
 * Objects are brought to the wanted content by JSON merge patches computed
 * against what the server holds (mcg_kube_merge_diff) and carrying the
 * resourceVersion they were computed from, so a concurrent change makes
 * them fail (409) and they are recomputed.
 */
#include "cluster/kube_int.h"

#include <stdlib.h>
#include <string.h>

static bool json_obj_empty(const json_t *v)
{
    return json_is_object(v) && json_object_size(v) == 0;
}

json_t *mcg_kube_merge_diff(const json_t *from, const json_t *to)
{
    if (!json_is_object(from) || !json_is_object(to))
        return json_equal((json_t *)from, (json_t *)to) ? NULL : json_deep_copy(to);
    json_t *patch = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)from, k, v) {
        if (!json_object_get(to, k) && !json_is_null(v))
            json_object_set_new(patch, k, json_null());
    }
    json_object_foreach((json_t *)to, k, v) {
        json_t *old = json_object_get(from, k);
        if (json_is_null(v)) {
            if (old && !json_is_null(old))
                json_object_set_new(patch, k, json_null());
            continue;
        }
        if (!old || json_is_null(old)) {
            json_t *c = mcg_kube_strip_nulls(v);
            json_object_set_new(patch, k, c);
            continue;
        }
        json_t *d = mcg_kube_merge_diff(old, v);
        if (d && json_obj_empty(d) && json_is_object(v) && json_is_object(old)) {
            json_decref(d);
            d = NULL;
        }
        if (d)
            json_object_set_new(patch, k, d);
    }
    if (!json_object_size(patch)) {
        json_decref(patch);
        return NULL;
    }
    return patch;
}

json_t *mcg_kube_strip_nulls(const json_t *v)
{
    if (json_is_object(v)) {
        json_t *o = json_object();
        const char *k;
        json_t *e;
        json_object_foreach((json_t *)v, k, e) {
            if (!json_is_null(e))
                json_object_set_new(o, k, mcg_kube_strip_nulls(e));
        }
        return o;
    }
    if (json_is_array(v)) {
        json_t *a = json_array();
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e)
            json_array_append_new(a, mcg_kube_strip_nulls(e));
        return a;
    }
    return json_deep_copy(v);
}

int mcg_kube_rv_cmp(const char *a, const char *b)
{
    uint64_t x, y;
    if (a && b && mcg_parse_u64(a, &x) && mcg_parse_u64(b, &y))
        return x < y ? -1 : x > y ? 1 : 0;
    return a && b && !strcmp(a, b) ? 0 : 1;
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

/*
 * The ownerReference of rendered config name to its pool (rendered-POOL-HASH),
 * as MCO sets it, when that pool's object (and so its uid) exists: from the
 * cache, else one GET; NULL until the controller has made the pool.
 */
static json_t *owner_ref(mcg_kube *k, const char *name)
{
    char *pool = mcg_cluster_config_pool(name);
    if (!pool)
        return NULL;
    if (!json_object_get(k->pools, pool)) { /* not seen by this process yet: ask once */
        char *path = mcg_sprintf(MCG_KUBE_MCP_PATH "/%s", pool);
        json_t *o = NULL;
        long st = 0;
        if (mcg_kube_simple(k->kc, "GET", path, &st, &o, NULL) == 0 && json_is_object(o))
            json_object_set(k->pools, pool, o);
        json_decref(o);
        free(path);
    }
    const char *uid = mcg_kube_str_at(json_object_get(k->pools, pool), "metadata", "uid");
    json_t *ref = uid ? json_pack("{s:s,s:s,s:s,s:s,s:b}", "apiVersion", MCG_KUBE_GV, "kind",
                                  "MachineConfigPool", "name", pool, "uid", uid, "controller", 1)
                      : NULL;
    free(pool);
    return ref;
}

/* The metadata merge patch that gives o what obj's metadata adds (owner,
 * version annotation), or NULL when o has it: a version already there is
 * kept (it names the controller that made the config). */
static json_t *meta_patch(const json_t *o, const json_t *obj)
{
    const json_t *om = json_object_get(o, "metadata"), *want = json_object_get(obj, "metadata");
    json_t *md = json_object();
    json_t *refs = json_object_get(want, "ownerReferences");
    if (refs && !json_equal(json_object_get(om, "ownerReferences"), refs))
        json_object_set(md, "ownerReferences", refs);
    if (!mcg_kube_str_at(om, "annotations", MCG_ANN_GENERATED_BY))
        json_object_set_new(md, "annotations",
                            json_pack("{s:s}", MCG_ANN_GENERATED_BY, MCGIT_VERSION));
    if (!json_object_size(md)) {
        json_decref(md);
        return NULL;
    }
    return json_pack("{s:o}", "metadata", md);
}

/* The MachineConfig object of a rendered config (spec consumed). */
static json_t *mc_object(mcg_kube *k, const char *name, json_t *specobj, const char *hex)
{
    json_t *obj = json_pack("{s:s,s:s,s:{s:s,s:{s:s},s:{s:s,s:s}},s:o}", "apiVersion", MCG_KUBE_GV,
                            "kind", "MachineConfig", "metadata", "name", name, "labels",
                            MCG_KUBE_LABEL_RENDERED, "true", "annotations", MCG_KUBE_ANN_SPEC_HASH,
                            hex, MCG_ANN_GENERATED_BY, MCGIT_VERSION, "spec", specobj);
    json_t *ref = owner_ref(k, name);
    if (ref)
        json_object_set_new(json_object_get(obj, "metadata"), "ownerReferences",
                            json_pack("[o]", ref));
    return obj;
}

/*
 * It exists (o, at path): put the real bytes back when they were altered
 * in the cluster, else add what its metadata lacks (owner, version).
 */
static int mc_repair(mcg_kube *k, const char *path, json_t *obj, json_t **o, const char *name,
                     const char *spec, size_t len, const char *hex, mcg_err *err)
{
    long st = 0;
    int rc = 0;
    if (!mc_holds(*o, name, spec, len) ||
        !mcg_kube_str_eq(
            mcg_kube_str_at(json_object_get(*o, "metadata"), "annotations", MCG_KUBE_ANN_SPEC_HASH),
            hex)) {
        json_object_set_new(json_object_get(obj, "metadata"), "resourceVersion",
                            json_string(mcg_kube_obj_rv(*o) ? mcg_kube_obj_rv(*o) : ""));
        json_decref(*o);
        *o = NULL;
        mcg_kube_req put = {"PUT", path, NULL, obj, NULL, 0, 0};
        rc = mcg_kube_call(k->kc, &put, &st, o, err);
        json_object_del(json_object_get(obj, "metadata"), "resourceVersion");
        return rc;
    }
    json_t *mp = meta_patch(*o, obj);
    if (mp) {
        json_decref(*o);
        *o = NULL;
        mcg_kube_req rq = {"PATCH", path, MCG_KUBE_MERGE_PATCH, mp, NULL, 0, 0};
        rc = mcg_kube_call(k->kc, &rq, &st, o, err);
        json_decref(mp);
    }
    return rc;
}

int mcg_kube_op_put_config(mcg_cluster *c, const char *name, const char *spec, size_t len,
                           mcg_err *err)
{
    mcg_kube *k = mcg_kube_of(c);
    if (mcg_strv_contains(&k->owned, name))
        return 0;
    json_error_t je;
    json_t *specobj = json_loadb(spec, len, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(specobj)) {
        json_decref(specobj);
        return mcg_err_set(err, MCG_EINVAL, "rendered config %s: spec is not a JSON object", name);
    }
    char hex[2 * MCG_SHA256_LEN + 1];
    sha_hex(spec, len, hex);
    json_t *obj = mc_object(k, name, specobj, hex);
    mcg_kube_req rq = {"POST", MCG_KUBE_MC_PATH, NULL, obj, NULL, 0, 0};
    json_t *o = NULL;
    long st = 0;
    int rc = mcg_kube_call(k->kc, &rq, &st, &o, err);
    for (int attempt = 0; rc == MCG_ECONFLICT && attempt < MCG_KUBE_CAS_TRIES; attempt++) {
        /* it exists: the name is a content hash, but check the stored bytes */
        char *path = mcg_sprintf(MCG_KUBE_MC_PATH "/%s", name);
        rc = mcg_kube_simple(k->kc, "GET", path, &st, &o, err);
        if (!rc)
            rc = mc_repair(k, path, obj, &o, name, spec, len, hex, err);
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
    bool whole = json_object_get(json_object_get(obj, "metadata"), "ownerReferences") != NULL;
    json_decref(o);
    json_decref(obj);
    if (!rc && !mcg_strv_contains(&k->published, name))
        mcg_strv_push(&k->published, name);
    if (!rc && whole) /* without its owner yet: checked again on the next put */
        mcg_strv_push(&k->owned, name);
    return rc;
}

int mcg_kube_op_get_config(mcg_cluster *c, const char *name, char **spec, size_t *len, mcg_err *err)
{
    mcg_kube *k = mcg_kube_of(c);
    char *path = mcg_sprintf(MCG_KUBE_MC_PATH "/%s", name);
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
            mcg_kube_str_at(json_object_get(o, "metadata"), "annotations", MCG_KUBE_ANN_SPEC_HASH);
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
    const char *n = mcg_kube_str_at(item, "metadata", "name");
    if (n && mcg_cluster_config_name_ok(n))
        mcg_strv_push(arg, n);
    return 0;
}

static void acc_names_reset(void *arg)
{
    mcg_strv_free(arg);
}

int mcg_kube_op_list_configs(mcg_cluster *c, mcg_strv *names, mcg_err *err)
{
    mcg_kube *k = mcg_kube_of(c);
    mcg_strv got = {0};
    char *sel = mcg_kube_escape(MCG_KUBE_LABEL_RENDERED "=true");
    char *path = mcg_sprintf(MCG_KUBE_MC_PATH "?labelSelector=%s", sel);
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
static int delete_object(mcg_kube *k, const char *collection, const char *name, mcg_err *err)
{
    char *path = mcg_sprintf("%s/%s", collection, name);
    long st;
    int rc = mcg_kube_simple(k->kc, "DELETE", path, &st, NULL, err);
    free(path);
    return rc == MCG_ENOTFOUND ? 0 : rc;
}

int mcg_kube_op_delete_config(mcg_cluster *c, const char *name, mcg_err *err)
{
    mcg_kube *k = mcg_kube_of(c);
    strv_remove(&k->published, name);
    strv_remove(&k->owned, name);
    return delete_object(k, MCG_KUBE_MC_PATH, name, err);
}

/* managedFields are bookkeeping of server-side apply: noise for mcgit's readers. */
static void strip_managed(json_t *o)
{
    json_object_del(json_object_get(o, "metadata"), "managedFields");
}

static int acc_pool(json_t *item, void *arg, mcg_err *err)
{
    (void)err;
    if (mcg_kube_str_at(item, "metadata", "name"))
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
    return strcmp(mcg_kube_str_at(x, "metadata", "name"), mcg_kube_str_at(y, "metadata", "name"));
}

int mcg_kube_op_list_pools(mcg_cluster *c, json_t **items, mcg_err *err)
{
    mcg_kube *k = mcg_kube_of(c);
    json_t *got = json_array();
    int rc =
        mcg_kube_list(k->kc, MCG_KUBE_MCP_PATH, NULL, acc_pool, acc_pool_reset, got, NULL, err);
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
        json_object_set(k->pools, mcg_kube_str_at(v[i], "metadata", "name"), v[i]);
    }
    free(v);
    json_decref(got);
    *items = out;
    return 0;
}

/* Create object name of kind in collection coll with labels and spec; *cur: what was made. */
static int create_obj(mcg_kube *k, const char *coll, const char *kind, const char *name,
                      const json_t *labels, const json_t *want_spec, long *st, json_t **cur,
                      mcg_err *err)
{
    json_t *md = json_pack("{s:s}", "name", name);
    if (json_object_size(labels))
        json_object_set(md, "labels", (json_t *)labels);
    json_t *obj = json_pack("{s:s,s:s,s:o,s:O}", "apiVersion", MCG_KUBE_GV, "kind", kind,
                            "metadata", md, "spec", want_spec);
    mcg_kube_req rq = {"POST", coll, NULL, obj, NULL, 0, 0};
    int rc = mcg_kube_call(k->kc, &rq, st, cur, err);
    json_decref(obj);
    return rc;
}

/*
 * The merge patch from cur's spec to want_spec (the whole of it when cur has
 * none), without the key theirs (NULL: none), which someone else owns;
 * NULL: no change.
 */
static json_t *spec_diff(const json_t *cur, const json_t *want_spec, const char *theirs)
{
    json_t *d = mcg_kube_merge_diff(json_object_get(cur, "spec"), want_spec);
    if (d && !json_is_object(json_object_get(cur, "spec"))) {
        json_decref(d);
        d = json_deep_copy(want_spec);
    }
    if (d && theirs) {
        json_object_del(d, theirs);
        if (!json_object_size(d)) {
            json_decref(d);
            d = NULL;
        }
    }
    return d;
}

/*
 * The status to write over cur: want_status, with observedGeneration (when
 * it has one) set to cur's metadata.generation, the spec this pass wrote or
 * saw. A new reference.
 */
static json_t *status_for(const json_t *cur, const json_t *want_status)
{
    json_t *ws = json_deep_copy(want_status);
    json_t *gen = json_object_get(json_object_get(cur, "metadata"), "generation");
    if (json_object_get(ws, "observedGeneration") && json_is_integer(gen))
        json_object_set(ws, "observedGeneration", gen);
    return ws;
}

/* A merge patch of field (spec or status) at path with d (consumed), at cur's resourceVersion. */
static int patch_field(mcg_kube *k, const char *path, const char *field, const json_t *cur,
                       json_t *d, long *st, json_t **o, mcg_err *err)
{
    json_t *body =
        json_pack("{s:{s:s?},s:o}", "metadata", "resourceVersion", mcg_kube_obj_rv(cur), field, d);
    mcg_kube_req rq = {"PATCH", path, MCG_KUBE_MERGE_PATCH, body, NULL, 0, 0};
    int rc = mcg_kube_call(k->kc, &rq, st, o, err);
    json_decref(body);
    return rc;
}

/*
 * Bring one object to the wanted spec (and status, through the status
 * subresource), creating it when missing; the spec key theirs (NULL: none)
 * is left as the object holds it. path is the collection;
 * cache (may be NULL) holds the last seen objects by name. Merge patches
 * carry the resourceVersion they were computed from, so a concurrent change
 * makes them fail (409) and they are recomputed.
 */
static int converge(mcg_kube *k, const char *coll, const char *kind, const char *name,
                    json_t *cache, const json_t *labels, const json_t *want_spec,
                    const char *theirs, const json_t *want_status, mcg_err *err)
{
    char *path = mcg_sprintf("%s/%s", coll, name);
    char *spath = mcg_sprintf("%s/%s/status", coll, name);
    json_t *cur = cache ? json_incref(json_object_get(cache, name)) : NULL;
    bool fresh = false;
    int rc = 0;
    long st = 0;
    for (int attempt = 0; attempt < MCG_KUBE_CAS_TRIES; attempt++) {
        if (!cur || (attempt > 0 && !fresh)) {
            json_decref(cur);
            cur = NULL;
            rc = mcg_kube_simple(k->kc, "GET", path, &st, &cur, err);
            fresh = true;
            if (rc && rc != MCG_ENOTFOUND)
                break;
        }
        if (!cur) {
            rc = create_obj(k, coll, kind, name, labels, want_spec, &st, &cur, err);
            if (rc == MCG_ECONFLICT) {
                fresh = false;
                continue;
            }
            if (rc)
                break;
            fresh = true;
        }
        json_t *d = spec_diff(cur, want_spec, theirs);
        if (d) {
            json_t *o = NULL;
            rc = patch_field(k, path, "spec", cur, d, &st, &o, err);
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
            json_t *ws = status_for(cur, want_status);
            d = json_is_object(have) ? mcg_kube_merge_diff(have, ws) : json_incref(ws);
            json_decref(ws);
            if (d) {
                json_t *o = NULL;
                rc = patch_field(k, spath, "status", cur, d, &st, &o, err);
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
        mcg_err_prefix(err, "%s %s: still changing after %d tries", kind, name, MCG_KUBE_CAS_TRIES);
    json_decref(cur);
    free(path);
    free(spath);
    return rc;
}

int mcg_kube_op_put_pool(mcg_cluster *c, const char *name, const json_t *obj, mcg_err *err)
{
    mcg_kube *k = mcg_kube_of(c);
    json_t *spec = json_object_get(obj, "spec");
    json_t *status = json_object_get(obj, "status");
    json_t *ws = json_is_object(spec) ? mcg_kube_strip_nulls(spec) : json_object();
    json_t *wst = json_is_object(status) ? mcg_kube_strip_nulls(status) : NULL;
    json_t *labels = json_object_get(json_object_get(obj, "metadata"), "labels");
    /* spec.paused is the operator's (cluster.h): never written from here */
    int rc = converge(k, MCG_KUBE_MCP_PATH, "MachineConfigPool", name, k->pools,
                      json_is_object(labels) ? labels : NULL, ws, "paused", wst, err);
    json_decref(ws);
    json_decref(wst);
    return rc;
}

int mcg_kube_op_delete_pool(mcg_cluster *c, const char *name, mcg_err *err)
{
    mcg_kube *k = mcg_kube_of(c);
    json_object_del(k->pools, name);
    return delete_object(k, MCG_KUBE_MCP_PATH, name, err);
}

int mcg_kube_op_put_policy(mcg_cluster *c, const json_t *spec, mcg_err *err)
{
    mcg_kube *k = mcg_kube_of(c);
    json_t *ws = json_is_object(spec) ? mcg_kube_strip_nulls(spec) : json_object();
    int rc = converge(k, MCG_KUBE_CRD_PATH "/machineconfigurations", "MachineConfiguration",
                      "cluster", NULL, NULL, ws, NULL, NULL, err);
    json_decref(ws);
    return rc;
}

int mcg_kube_op_get_policy(mcg_cluster *c, json_t **spec, mcg_err *err)
{
    mcg_kube *k = mcg_kube_of(c);
    *spec = NULL;
    json_t *o = NULL;
    long st;
    int rc = mcg_kube_simple(k->kc, "GET", MCG_KUBE_MCFG_PATH, &st, &o, err);
    if (rc)
        return rc;
    json_t *s = json_object_get(o, "spec");
    *spec = json_is_object(s) ? json_incref(s) : json_object();
    json_decref(o);
    return 0;
}
