/*
 * kube_requests.c — an operator's requests to the controller on the kube
 * backend (see cluster.h, "operator requests"):
 *
 *   pause  spec.paused: true on the pool's MachineConfigPool object, as
 *          `kubectl patch mcp worker --type merge -p
 *          '{"spec":{"paused":true}}'` sets it; the controller never writes
 *          spec.paused (put_pool leaves it out of its patches). Resume sets
 *          it false and removes the annotation
 *          machineconfiguration.mcgit.io/paused, an earlier way to pause
 *          that is still honoured
 *   sync   annotations of the MachineConfiguration "cluster":
 *          .../sync-requested (a counter), .../sync-handled (the newest
 *          request a pass answered), .../sync-failed, .../sync-handled-at,
 *          .../sync-result
 *
 * Every change is a JSON merge patch carrying the
 * resourceVersion it was computed from: a concurrent change fails it (409)
 * and it is recomputed, so two `mcgit sync` at once both count.
 */
#include "cluster/kube_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ANN_SYNC_REQUESTED MCG_ANN_PREFIX "sync-requested"
#define ANN_SYNC_REQUESTED_AT MCG_ANN_PREFIX "sync-requested-at"
#define ANN_SYNC_HANDLED MCG_ANN_PREFIX "sync-handled"
#define ANN_SYNC_HANDLED_AT MCG_ANN_PREFIX "sync-handled-at"
#define ANN_SYNC_FAILED MCG_ANN_PREFIX "sync-failed"
#define ANN_SYNC_RESULT MCG_ANN_PREFIX "sync-result"

/* PATCH path's annotations with ann (values or JSON null), if still at rv. */
static int patch_annotations(mcg_kube *k, const char *path, const char *rv, json_t *ann,
                             mcg_err *err)
{
    json_t *body =
        json_pack("{s:{s:s?,s:O}}", "metadata", "resourceVersion", rv, "annotations", ann);
    mcg_kube_req rq = {"PATCH", path, MCG_KUBE_MERGE_PATCH, body, NULL, 0, 0};
    long st = 0;
    int rc = mcg_kube_call(k->kc, &rq, &st, NULL, err);
    json_decref(body);
    return rc;
}

/*
 * The merge patch that makes o's operator pause say pause: spec.paused, and
 * on resume also the older annotation (NULL: o already says so).
 */
static json_t *pause_patch(const json_t *o, bool pause)
{
    bool lift = !pause && mcg_pool_object_halt_pending(o);
    if (mcg_pool_object_operator_paused(o) == pause && !lift)
        return NULL;
    json_t *md = json_pack("{s:s?}", "resourceVersion", mcg_kube_obj_rv(o));
    json_t *ann = json_object();
    if (!pause && json_object_get(json_object_get(json_object_get(o, "metadata"), "annotations"),
                                  MCG_ANN_PAUSED))
        json_object_set_new(ann, MCG_ANN_PAUSED, json_null());
    if (lift) { /* a rollout halt lifted (cluster.h) */
        char ts[32];
        json_object_set_new(ann, MCG_ANN_RESUMED,
                            json_string(mcg_time_iso(ts, (int64_t)time(NULL))));
    }
    if (json_object_size(ann))
        json_object_set_new(md, "annotations", ann);
    else
        json_decref(ann);
    return json_pack("{s:o,s:{s:b}}", "metadata", md, "spec", "paused", pause);
}

int mcg_kube_op_pause_pool(mcg_cluster *c, const char *pool, bool pause, bool *changed,
                           bool *git_paused, mcg_err *err)
{
    mcg_kube *k = mcg_kube_of(c);
    char *path = mcg_sprintf(MCG_KUBE_MCP_PATH "/%s", pool);
    int rc = MCG_ECONFLICT;
    for (int attempt = 0; attempt < MCG_KUBE_CAS_TRIES && rc == MCG_ECONFLICT; attempt++) {
        json_t *o = NULL;
        long st = 0;
        rc = mcg_kube_simple(k->kc, "GET", path, &st, &o, err);
        if (rc == MCG_ENOTFOUND)
            rc = mcg_err_set(err, MCG_ENOTFOUND,
                             "cluster %s has no pool '%s' (the controller makes the pools of the "
                             "config repo at its first pass)",
                             c->spec, pool);
        if (rc)
            break;
        *git_paused = mcg_pool_object_git_paused(o);
        json_t *body = pause_patch(o, pause);
        if (body) {
            mcg_kube_req rq = {"PATCH", path, MCG_KUBE_MERGE_PATCH, body, NULL, 0, 0};
            rc = mcg_kube_call(k->kc, &rq, &st, NULL, err);
            json_decref(body);
            if (!rc)
                *changed = true;
        }
        json_decref(o);
    }
    if (rc == MCG_ECONFLICT)
        mcg_err_prefix(err, "MachineConfigPool %s: still changing after %d tries", pool,
                       MCG_KUBE_CAS_TRIES);
    free(path);
    return rc;
}

int mcg_kube_op_annotate_pool(mcg_cluster *c, const char *pool, const char *key, const char *value,
                              mcg_err *err)
{
    mcg_kube *k = mcg_kube_of(c);
    char *path = mcg_sprintf(MCG_KUBE_MCP_PATH "/%s", pool);
    json_t *body = json_pack("{s:{s:{s:s}}}", "metadata", "annotations", key, value);
    mcg_kube_req rq = {"PATCH", path, MCG_KUBE_MERGE_PATCH, body, NULL, 0, 0};
    long st = 0;
    int rc = mcg_kube_call(k->kc, &rq, &st, NULL, err);
    if (rc == MCG_ENOTFOUND)
        rc = mcg_err_set(err, MCG_ENOTFOUND, "cluster %s has no pool '%s'", c->spec, pool);
    json_decref(body);
    free(path);
    return rc;
}

static uint64_t ann_u64(const json_t *ann, const char *key)
{
    uint64_t v = 0;
    json_t *s = json_object_get(ann, key);
    return json_is_string(s) && mcg_parse_u64(json_string_value(s), &v) ? v : 0;
}

/* The sync fields of the MachineConfiguration o's annotations. */
static void sync_of(const json_t *o, mcg_sync_state *st)
{
    json_t *ann = json_object_get(json_object_get(o, "metadata"), "annotations");
    memset(st, 0, sizeof(*st));
    st->requested = ann_u64(ann, ANN_SYNC_REQUESTED);
    st->handled = ann_u64(ann, ANN_SYNC_HANDLED);
    const char *f = json_string_value(json_object_get(ann, ANN_SYNC_FAILED));
    st->failed = f && !strcmp(f, "true");
    const char *at = json_string_value(json_object_get(ann, ANN_SYNC_HANDLED_AT));
    const char *res = json_string_value(json_object_get(ann, ANN_SYNC_RESULT));
    mcg_bfmt(st->handled_at, sizeof(st->handled_at), "%s", at ? at : "");
    /* the API's text is untrusted: one printable line */
    mcg_kube_clean_line(st->result, sizeof(st->result), res ? res : "", res ? strlen(res) : 0);
}

int mcg_kube_op_get_sync(mcg_cluster *c, mcg_sync_state *out, mcg_err *err)
{
    mcg_kube *k = mcg_kube_of(c);
    json_t *o = NULL;
    long st = 0;
    int rc = mcg_kube_simple(k->kc, "GET", MCG_KUBE_MCFG_PATH, &st, &o, err);
    if (rc == MCG_ENOTFOUND)
        return 0; /* no MachineConfiguration yet: no request either */
    if (!rc)
        sync_of(o, out);
    json_decref(o);
    return rc;
}

/*
 * Read-modify-write of the sync annotations: gen non-NULL asks for a pass
 * (the counter + 1, into *gen; a missing MachineConfiguration is created
 * with an empty spec, which the controller fills), else records the answer.
 */
static int modify_sync(mcg_kube *k, uint64_t *gen, uint64_t ans_gen, bool failed,
                       const char *result, mcg_err *err)
{
    char ts[32];
    mcg_time_iso(ts, mcg_kube_wall_ms() / 1000);
    int rc = MCG_ECONFLICT;
    for (int attempt = 0; attempt < MCG_KUBE_CAS_TRIES && rc == MCG_ECONFLICT; attempt++) {
        json_t *o = NULL;
        long st = 0;
        mcg_sync_state s;
        rc = mcg_kube_simple(k->kc, "GET", MCG_KUBE_MCFG_PATH, &st, &o, err);
        if (rc == MCG_ENOTFOUND && !gen)
            return 0; /* nothing was asked */
        json_t *ann = json_object();
        char num[32];
        if (rc == MCG_ENOTFOUND) {
            *gen = 1;
            json_object_set_new(ann, ANN_SYNC_REQUESTED, json_string("1"));
            json_object_set_new(ann, ANN_SYNC_REQUESTED_AT, json_string(ts));
            json_t *obj = json_pack("{s:s,s:s,s:{s:s,s:O},s:{}}", "apiVersion", MCG_KUBE_GV, "kind",
                                    "MachineConfiguration", "metadata", "name", "cluster",
                                    "annotations", ann, "spec");
            mcg_kube_req rq = {
                "POST", MCG_KUBE_CRD_PATH "/machineconfigurations", NULL, obj, NULL, 0, 0};
            rc = mcg_kube_call(k->kc, &rq, &st, NULL, err);
            json_decref(obj);
        } else if (!rc) {
            sync_of(o, &s);
            if (gen) {
                *gen = s.requested + 1;
                snprintf(num, sizeof(num), "%llu", (unsigned long long)*gen);
                json_object_set_new(ann, ANN_SYNC_REQUESTED, json_string(num));
                json_object_set_new(ann, ANN_SYNC_REQUESTED_AT, json_string(ts));
            } else if (ans_gen > s.handled) {
                json_t *r = json_string(result);
                snprintf(num, sizeof(num), "%llu", (unsigned long long)ans_gen);
                json_object_set_new(ann, ANN_SYNC_HANDLED, json_string(num));
                json_object_set_new(ann, ANN_SYNC_HANDLED_AT, json_string(ts));
                json_object_set_new(ann, ANN_SYNC_FAILED, json_string(failed ? "true" : "false"));
                json_object_set_new(ann, ANN_SYNC_RESULT, r ? r : json_string("(not UTF-8)"));
            }
            if (json_object_size(ann))
                rc = patch_annotations(k, MCG_KUBE_MCFG_PATH, mcg_kube_obj_rv(o), ann, err);
        }
        json_decref(ann);
        json_decref(o);
    }
    if (rc == MCG_ECONFLICT)
        mcg_err_prefix(err, "MachineConfiguration cluster: still changing after %d tries",
                       MCG_KUBE_CAS_TRIES);
    return rc;
}

int mcg_kube_op_request_sync(mcg_cluster *c, uint64_t *gen, mcg_err *err)
{
    return modify_sync(mcg_kube_of(c), gen, 0, false, NULL, err);
}

int mcg_kube_op_answer_sync(mcg_cluster *c, uint64_t gen, bool failed, const char *result,
                            mcg_err *err)
{
    return modify_sync(mcg_kube_of(c), NULL, gen, failed, result, err);
}
