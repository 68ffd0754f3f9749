/*
 * attest.c — the node's key and its attestation (docs/sites.md, "Node
 * attestation").
 *
 * The key is an ed25519 key pair made at the agent's first start, kept in
 * the state directory as node.key (0600, written atomically like every
 * state file). The operator pins its public half on the Node with `mcgit
 * node bind --node-key`; only that command writes the pin. Whenever the
 * node is Done, the agent makes sure the node carries a statement, signed
 * with that key, of what it runs: node, machine id, boot id, rendered
 * config and the SHA-256 of that config's spec as the agent applied it. A
 * node whose annotations were written by hand has no such signature, and
 * so is never counted as attested.
 */
#include "agent/agent_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NODE_KEY "node.key"
#define BOOT_ID "/proc/sys/kernel/random/boot_id"

/* The node key: <state>/node.key, made at the first call (0600). */
static int node_key(mcg_sshkey *key, mcg_agent *a, mcg_err *err)
{
    char *data = NULL;
    size_t len = 0;
    int rc = mcg_agent_state_read(a, NODE_KEY, &data, &len, err);
    /* the first start: a new key, made under the state directory's lock
     * (--print-node-key reads without it: a running agent holds it) */
    if (rc == MCG_ENOTFOUND && a->lockfd < 0 && (rc = mcg_agent_take_lock(a, err)) == 0)
        rc = mcg_agent_state_read(a, NODE_KEY, &data, &len, err);
    if (rc == MCG_ENOTFOUND) {
        mcg_sshkey_generate(key);
        rc = mcg_agent_state_write(a, NODE_KEY, key->sk, sizeof(key->sk), err);
        if (rc)
            mcg_sshkey_wipe(key);
        else
            mcg_agent_log(a, 1, "node key created: %s", NODE_KEY);
        return rc;
    }
    if (!rc && mcg_sshkey_from_secret(key, data, len) != 0)
        rc = mcg_err_set(err, MCG_EINVAL,
                         "state %s: not a node key (64 bytes, ed25519); move it away to make a "
                         "new one, then bind the node again",
                         NODE_KEY);
    if (data)
        mcg_wipe(data, len);
    free(data);
    return rc;
}

int mcg_agent_node_key_line(char **line, mcg_agent *a, mcg_err *err)
{
    mcg_sshkey key;
    *line = NULL;
    int rc = node_key(&key, a, err);
    if (!rc) {
        char *comment = mcg_sprintf("mcgit-node-%s", a->o.node ? a->o.node : "unnamed");
        *line = mcg_sshkey_public_line(&key, comment);
        free(comment);
        mcg_sshkey_wipe(&key);
    }
    return rc;
}

/* What this node runs now, as the statement to sign; false when it cannot be said. */
static bool what_runs(mcg_agent *a, const char *config, mcg_attestation *st)
{
    char *spec = NULL, *boot = NULL;
    size_t len = 0, blen = 0;
    unsigned char d[MCG_SHA256_LEN];
    char hex[2 * MCG_SHA256_LEN + 1];
    memset(st, 0, sizeof(*st));
    if (!a->o.node || mcg_agent_config_read(a, config, &spec, &len, NULL) != 0)
        return false;
    mcg_sha256(spec, len, d);
    mcg_hex(d, sizeof(d), hex);
    free(spec);
    snprintf(st->node, sizeof(st->node), "%s", a->o.node);
    snprintf(st->config, sizeof(st->config), "%s", config);
    snprintf(st->digest, sizeof(st->digest), "sha256:%s", hex);
    char mid[MCG_MACHINE_ID_SIZE];
    if (mcg_agent_machine_id(a->o.root ? a->o.root : "/", mid, NULL) == 0)
        snprintf(st->machine_id, sizeof(st->machine_id), "%s", mid);
    if (mcg_read_file(BOOT_ID, 256, &boot, &blen, NULL) == 0) {
        boot[strcspn(boot, "\n")] = '\0';
        snprintf(st->boot_id, sizeof(st->boot_id), "%s", boot);
    }
    free(boot);
    return true;
}

void mcg_agent_attest(mcg_agent *a, mcg_cluster *c, const mcg_node *n, const char *config)
{
    mcg_attestation want, have;
    mcg_sshkey key;
    mcg_err e = {0};
    if (!c || !n || !what_runs(a, config, &want))
        return;
    /* the node says so already, under the key it holds: nothing to sign */
    char *mine = NULL;
    if (n->attestation && mcg_agent_node_key_line(&mine, a, NULL) == 0 &&
        mcg_trust_attestation_verify(&have, n->attestation, mine, NULL) == 0 &&
        !memcmp(&have, &want, sizeof(have))) {
        free(mine);
        return;
    }
    free(mine);
    if (node_key(&key, a, &e) != 0) {
        mcg_agent_log(a, 1, "no attestation: %s", e.msg);
        return;
    }
    char *value = mcg_trust_attestation_sign(&key, &want);
    mcg_sshkey_wipe(&key);
    mcg_node_patch p = MCG_NODE_PATCH_INIT;
    p.attestation = value;
    if (mcg_agent_patch(a, c, &p) == 0)
        mcg_agent_log(a, 2, "attested %s (%s)", config, want.digest);
    free(value);
}
