/*
 * kube_drain.c — draining a node through the Eviction API (policy/v1, or
 * v1beta1 on older servers): every pod on the node but DaemonSet and mirror
 * pods is evicted, PodDisruptionBudgets are respected (a 429 is waited out,
 * with backoff), until the node is empty or MCGIT_KUBE_DRAIN_TIMEOUT passes.
 * A round's evictions go out concurrently (mcg_kube_call_many: bounded in
 * flight, one connection pool); the API server checks each against the
 * budgets, so a budget allowing one disruption still sees one at a time
 * (the others get their 429 and are tried again next round).
 */
#include "cluster/kube_int.h"
#include "fsio/fsio.h"
#include "osenv/osenv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* policy/v1 where the server offers it, else policy/v1beta1 (Kubernetes < 1.21). */
static int eviction_version(mcg_kube *k, mcg_err *err)
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
    json_array_foreach(json_object_get(o, "versions"), i, v) {
        const char *ver = mcg_kube_str_at(v, "version", NULL);
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
    json_array_foreach(json_object_get(md, "ownerReferences"), i, ref) {
        const char *kind = mcg_kube_str_at(ref, "kind", NULL);
        if (kind && !strcmp(kind, "DaemonSet") && json_is_true(json_object_get(ref, "controller")))
            return true;
    }
    return false;
}

static int acc_pod(json_t *item, void *arg, mcg_err *err)
{
    pod_list *l = arg;
    const char *ns = mcg_kube_str_at(item, "metadata", "namespace"),
               *name = mcg_kube_str_at(item, "metadata", "name");
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

int mcg_kube_op_drain(mcg_cluster *c, const char *name, mcg_err *err)
{
    mcg_kube *k = mcg_kube_of(c);
    int rc = eviction_version(k, err);
    if (rc)
        return rc;
    char *sel = mcg_sprintf("spec.nodeName=%s", name);
    char *esc = mcg_kube_escape(sel);
    char *path = mcg_sprintf("/api/v1/pods?fieldSelector=%s", esc);
    free(esc);
    free(sel);
    int64_t deadline = mcg_mono_ms() + k->drain_timeout_ms;
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
        /* every pod not yet terminating is evicted at once (bounded in flight) */
        mcg_kube_req *rqs = mcg_calloc(pods.n, sizeof(*rqs));
        json_t **bodies = mcg_calloc(pods.n, sizeof(*bodies));
        char **paths = mcg_calloc(pods.n, sizeof(*paths));
        size_t *at = mcg_calloc(pods.n, sizeof(*at));
        size_t m = 0;
        for (size_t i = 0; i < pods.n; i++) {
            pod_ref *p = &pods.v[i];
            if (p->terminating) {
                if (!blocked[0])
                    snprintf(blocked, sizeof(blocked), "pod %s/%s is still terminating", p->ns,
                             p->name);
                continue;
            }
            paths[m] = mcg_sprintf("/api/v1/namespaces/%s/pods/%s/eviction", p->ns, p->name);
            bodies[m] = json_pack("{s:s,s:s,s:{s:s,s:s}}", "apiVersion", k->eviction_gv, "kind",
                                  "Eviction", "metadata", "name", p->name, "namespace", p->ns);
            rqs[m] =
                (mcg_kube_req){"POST", paths[m], NULL, bodies[m], NULL, 0, MCG_KUBE_NO_RETRY_429};
            at[m++] = i;
        }
        mcg_kube_result *res = mcg_calloc(m ? m : 1, sizeof(*res));
        mcg_kube_call_many(k->kc, rqs, m, NULL, NULL, res);
        for (size_t j = 0; j < m && !rc; j++) {
            pod_ref *p = &pods.v[at[j]];
            long st = res[j].status;
            if (res[j].rc == 0 || st == 404)
                continue; /* evicted, or gone already */
            if (st == 429) {
                /* a PodDisruptionBudget says not now: the message says which pod */
                if (!blocked[0] || strstr(blocked, "terminating")) {
                    const char *msg = strstr(res[j].err.msg, "429 Too Many Requests: ");
                    mcg_bfmt(blocked, sizeof(blocked), "pod %s/%s: %s", p->ns, p->name,
                             msg ? msg + 23 : res[j].err.msg);
                }
                continue;
            }
            rc = mcg_err_set(err, res[j].rc, "evicting pod %s/%s: %s", p->ns, p->name,
                             res[j].err.msg);
        }
        mcg_kube_results_clear(res, m);
        free(res);
        for (size_t j = 0; j < m; j++) {
            json_decref(bodies[j]);
            free(paths[j]);
        }
        free(rqs);
        free(bodies);
        free(paths);
        free(at);
        pods_free(&pods);
        if (rc)
            break;
        int64_t left = deadline - mcg_mono_ms();
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
