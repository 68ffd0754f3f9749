/*
 * kube_backend.c — the `kube` cluster backend: mcgit's cluster state as
 * Kubernetes objects, through the API server. This file holds the handle,
 * the private ops table the cluster wrappers call, and opening and freeing;
 * each concern lives in its own kube_*.c (see kube_int.h):
 *
 *   nodes            Node objects; mcgit's fields are the annotations
 *                    machineconfiguration.mcgit.io/{desiredConfig,currentConfig,
 *                    state,reason}, ready is the Ready condition, cordon is
 *                    spec.unschedulable                       (kube_nodes.c)
 *   rendered configs MachineConfig objects                    (kube_objects.c)
 *   pools, policy    MachineConfigPool, MachineConfiguration  (kube_objects.c)
 *   leader election  the coordination.k8s.io/v1 Lease "mcgit-controller"
 *                                                             (kube_lease.c)
 *   drain            the Eviction API                         (kube_drain.c)
 *   pause, sync      annotations an operator sets             (kube_requests.c)
 *   change waits     a watch on Nodes                         (kube_watch.c)
 *   events           core/v1 Events in the namespace          (kube_events.c)
 *
 * Settings from the environment: MCGIT_NAMESPACE (the Lease's namespace),
 * MCGIT_KUBE_LEASE_DURATION and MCGIT_KUBE_DRAIN_TIMEOUT (seconds).
 */
#include "cluster/kube_int.h"
#include "fsio/fsio.h"
#include "osenv/osenv.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t mcg_kube_wall_ms(void)
{
    struct timespec ts;
    mcg_wall_now(&ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Every op first sees whether the caller asked to stop (mcg_cluster.stop). */
mcg_kube *mcg_kube_of(mcg_cluster *c)
{
    mcg_kube *k = (mcg_kube *)c;
    mcg_kube_client_set_stop(k->kc, c->stop);
    return k;
}

const char *mcg_kube_str_at(const json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(o, a);
    if (b)
        v = json_object_get(v, b);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

const char *mcg_kube_obj_rv(const json_t *o)
{
    return mcg_kube_str_at(o, "metadata", "resourceVersion");
}

bool mcg_kube_str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

static char *mcg_kube_op_node_root(mcg_cluster *c, const char *name)
{
    (void)c;
    (void)name;
    return NULL; /* the agent's --root says where the host is */
}

static void mcg_kube_op_free(mcg_cluster *c)
{
    mcg_kube *k = (mcg_kube *)c;
    if (k->kc) {
        mcg_kube_client_set_stop(k->kc, NULL);
        mcg_kube_lease_release(k);
    }
    mcg_kube_drop_watch(k);
    mcg_kube_cache_clear(k);
    free(k->nodes);
    free(k->nodes_rv);
    free(k->scope);
    mcg_strv_free(&k->published);
    mcg_strv_free(&k->owned);
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
    .list_nodes = mcg_kube_op_list_nodes,
    .get_node = mcg_kube_op_get_node,
    .patch_node = mcg_kube_op_patch_node,
    .add_node = mcg_kube_op_add_node,
    .remove_node = mcg_kube_op_remove_node,
    .label_node = mcg_kube_op_label_node,
    .put_config = mcg_kube_op_put_config,
    .get_config = mcg_kube_op_get_config,
    .list_configs = mcg_kube_op_list_configs,
    .delete_config = mcg_kube_op_delete_config,
    .put_pool = mcg_kube_op_put_pool,
    .list_pools = mcg_kube_op_list_pools,
    .delete_pool = mcg_kube_op_delete_pool,
    .put_policy = mcg_kube_op_put_policy,
    .get_policy = mcg_kube_op_get_policy,
    .drain = mcg_kube_op_drain,
    .node_root = mcg_kube_op_node_root,
    .free = mcg_kube_op_free,
    .lead = mcg_kube_op_lead,
    .fence = mcg_kube_op_fence,
    .patch_nodes = mcg_kube_op_patch_nodes,
    .wait_change = mcg_kube_op_wait_change,
    .event = mcg_kube_op_event,
    .pause_pool = mcg_kube_op_pause_pool,
    .annotate_pool = mcg_kube_op_annotate_pool,
    .get_sync = mcg_kube_op_get_sync,
    .request_sync = mcg_kube_op_request_sync,
    .answer_sync = mcg_kube_op_answer_sync,
};

bool mcg_cluster_kube_stats(mcg_cluster *c, uint64_t *requests, uint64_t *bytes)
{
    if (!c || c->ops != &kube_ops)
        return false;
    mcg_kube_client_stats(((mcg_kube *)c)->kc, requests, bytes);
    return true;
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
        const char *sa = mcg_env_get("MCGIT_KUBE_SA_DIR");
        rc = mcg_kube_config_in_cluster(&cfg, sa && *sa ? sa : MCG_KUBE_SA_DIR,
                                        mcg_env_get("KUBERNETES_SERVICE_HOST"),
                                        mcg_env_get("KUBERNETES_SERVICE_PORT"), err);
    }
    if (rc)
        return rc;
    const char *ens = mcg_env_get("MCGIT_NAMESPACE");
    char *ns = mcg_strdup(ens && *ens ? ens : (!kubeconfig && cfg.ns) ? cfg.ns : "mcgit");
    if (!mcg_name_is_dns_label(ns)) {
        rc = mcg_err_set(err, MCG_EINVAL, "namespace '%s' is not a DNS label", ns);
        free(ns);
        mcg_kube_config_free(&cfg);
        return rc;
    }
    mcg_kube *k = mcg_calloc(1, sizeof(*k));
    k->ns = ns;
    if ((rc = mcg_kube_client_new(&k->kc, &cfg, err)) != 0) {
        free(ns);
        free(k);
        return mcg_err_prefix(err, "cluster %s", spec);
    }
    k->base.ops = &kube_ops;
    k->base.spec = mcg_strdup(spec);
    k->pools = json_object();
    uint64_t lease = 0, drain = 0;
    if ((rc = mcg_env_u64("MCGIT_KUBE_LEASE_DURATION", 15, 1, 3600, &lease, err)) != 0 ||
        (rc = mcg_env_u64("MCGIT_KUBE_DRAIN_TIMEOUT", 600, 1, 86400, &drain, err)) != 0) {
        mcg_cluster_free(&k->base);
        return mcg_err_prefix(err, "cluster %s", spec);
    }
    k->lease_duration_s = (long)lease;
    k->drain_timeout_ms = (long)drain * 1000;
    *out = &k->base;
    return 0;
}
