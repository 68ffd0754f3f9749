/*
 * attest.c — a node's attestation: its signed statement of what it applied
 * (node, machine id, boot id, rendered config, the SHA-256 of that config's
 * spec), in namespace mcgit-attestation, made with the node's own key and
 * verified against the key the operator pinned. The statement signed is a
 * fixed text rebuilt from the fields, so the JSON around it can neither add
 * nor reorder anything that counts.
 */
#include "trust/trust_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ANNOTATION_MAX (16 * 1024)

static char *statement(const mcg_attestation *a)
{
    return mcg_sprintf("mcgit-attestation v1\nnode %s\nmachine-id %s\nboot-id %s\nconfig %s\n"
                       "digest %s\n",
                       a->node, a->machine_id, a->boot_id, a->config, a->digest);
}

char *mcg_trust_attestation_sign(const mcg_sshkey *key, const mcg_attestation *a)
{
    char *text = statement(a);
    char *sig = mcg_sshsig_sign_ns(key, MCG_ATTEST_NS, text, strlen(text));
    json_t *o = json_pack("{s:i,s:s,s:s,s:s,s:s,s:s,s:s}", "v", 1, "node", a->node, "machineID",
                          a->machine_id, "bootID", a->boot_id, "config", a->config, "digest",
                          a->digest, "signature", sig);
    char *out = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    free(sig);
    free(text);
    return out;
}

/* Field key of o into out (outlen), a string without control characters. */
static bool field(const json_t *o, const char *key, char *out, size_t outlen)
{
    const char *v = json_string_value(json_object_get(o, key));
    if (!v || strlen(v) >= outlen)
        return false;
    for (const char *p = v; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return false;
    snprintf(out, outlen, "%s", v);
    return true;
}

int mcg_trust_attestation_verify(mcg_attestation *out, const char *annotation, const char *pinned,
                                 mcg_err *err)
{
    json_t *o = NULL;
    mcg_signers *set = NULL;
    char *line = NULL, *text = NULL;
    int rc = MCG_EINVAL;
    memset(out, 0, sizeof(*out));
    if (!annotation || strlen(annotation) > ANNOTATION_MAX ||
        mcg_json_parse(&o, "attestation", annotation, strlen(annotation), NULL) != 0 ||
        json_integer_value(json_object_get(o, "v")) != 1 ||
        !field(o, "node", out->node, sizeof(out->node)) ||
        !field(o, "machineID", out->machine_id, sizeof(out->machine_id)) ||
        !field(o, "bootID", out->boot_id, sizeof(out->boot_id)) ||
        !field(o, "config", out->config, sizeof(out->config)) ||
        !field(o, "digest", out->digest, sizeof(out->digest)) ||
        !json_is_string(json_object_get(o, "signature"))) {
        rc = mcg_err_set(err, MCG_EINVAL, "not an attestation (version 1, every field a string)");
        goto out;
    }
    line = mcg_sprintf("node namespaces=\"" MCG_ATTEST_NS "\" %s\n", pinned ? pinned : "");
    mcg_err e = {0};
    if (!pinned || !*pinned || mcg_signers_parse(&set, "nodeKey", line, strlen(line), &e) != 0) {
        rc = mcg_err_set(err, MCG_ETRUST, "no node key pinned (mcgit node bind --node-key)");
        goto out;
    }
    text = statement(out);
    const char *sig = json_string_value(json_object_get(o, "signature"));
    mcg_sig_result res = {0};
    if (mcg_sshsig_verify_ns(&res, set, sig, strlen(sig), text, strlen(text), 0, MCG_ATTEST_NS,
                             &e) != 0) {
        rc = mcg_err_set(err, MCG_ETRUST, "the attestation does not verify with the pinned key: %s",
                         e.msg);
        goto out;
    }
    rc = 0;
out:
    if (rc)
        memset(out, 0, sizeof(*out));
    mcg_signers_free(set);
    json_decref(o);
    free(line);
    free(text);
    return rc;
}
