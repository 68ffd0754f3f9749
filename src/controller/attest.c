/*
 * attest.c — which nodes of a pool are attested: their agent signed, with
 * the key the operator pinned on the node, that the node runs the config
 * the controller expects, and the digest it signed is that config's. A
 * node whose annotations were written by hand, by whoever can patch a Node,
 * has no such signature and is never counted.
 */
#include "controller/controller_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* "sha256:<hex>" of the published spec of config, cached in digests ("name digest"). */
static const char *config_digest(mcg_cluster *c, const char *config, mcg_strv *digests)
{
    size_t nl = strlen(config);
    for (size_t i = 0; i < digests->n; i++)
        if (!strncmp(digests->v[i], config, nl) && digests->v[i][nl] == ' ')
            return digests->v[i] + nl + 1;
    char *spec = NULL;
    size_t len = 0;
    char hex[2 * MCG_SHA256_LEN + 1] = "";
    if (mcg_cluster_get_config(c, config, &spec, &len, NULL) == 0) {
        unsigned char d[MCG_SHA256_LEN];
        mcg_sha256(spec, len, d);
        mcg_hex(d, sizeof(d), hex);
    }
    free(spec);
    char *e = mcg_sprintf("%s sha256:%s", config, hex);
    mcg_strv_push(digests, e);
    free(e);
    return digests->v[digests->n - 1] + nl + 1;
}

/*
 * Whether node n is attested: Done on its desired config, and its
 * attestation verifies against its pinned key (MCG_ANN_NODE_KEY) and names
 * that node, its machine and boot ids where the cluster knows them, that
 * config and the SHA-256 of the config as published (digests caches them).
 */
static bool node_attested(mcg_cluster *c, const mcg_node *n, mcg_strv *digests)
{
    mcg_attestation at;
    if (!n->attestation || !n->node_key || !*n->node_key || !n->current || !n->desired ||
        !n->state || strcmp(n->state, "Done") || strcmp(n->current, n->desired) ||
        mcg_trust_attestation_verify(&at, n->attestation, n->node_key, NULL) != 0)
        return false;
    const char *mid = n->machine_id ? n->machine_id : n->bound_machine_id;
    if (strcmp(at.node, n->name) || strcmp(at.config, n->current) ||
        (mid && *mid && strcasecmp(mid, at.machine_id)) ||
        (n->boot_id && *n->boot_id && strcasecmp(n->boot_id, at.boot_id)))
        return false;
    const char *want = config_digest(c, n->current, digests);
    return strlen(want) > 7 && !strcmp(want, at.digest);
}

size_t mcg_ctl_attested_count(mcg_cluster *c, const mcg_node *nodes, size_t n,
                              const mcg_rollout_plan *plan, const char *pool, mcg_strv *digests)
{
    size_t count = 0;
    for (size_t i = 0; i < n && i < plan->nmembers; i++)
        if (plan->members[i].pool && !strcmp(plan->members[i].pool, pool) &&
            node_attested(c, &nodes[i], digests))
            count++;
    return count;
}
