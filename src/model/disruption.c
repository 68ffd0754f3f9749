/*
 * disruption.c — which disruption actions a change needs under the node
 * disruption policy (MachineConfiguration "cluster", MCO's
 * nodeDisruptionPolicy).
 *
 * One rule set, used both by the agent when it applies a config and by
 * `mcgit plan` when it previews one, so the preview cannot disagree with
 * what a node does. A changed file takes the actions of the policy's rule
 * for its path (exact, else the longest directory prefix), a changed unit
 * those of its rule by name, a change to core's SSH keys those of the
 * sshkey rule; a file or unit without a rule needs a Reboot, SSH keys
 * without a rule need nothing. Any Reboot makes the whole result one
 * Reboot (MCO). Pure: no I/O.
 *
 * Files also have MCO's built-in rules (its defaultClusterPolicies): the
 * container runtime's registries and signature policy reload crio, the
 * user CA bundle restarts the CA trust service and crio, the kubelet's and
 * the internal registry's pull secrets need nothing. A rule of the
 * policy for the same path replaces the built-in one; otherwise the longest
 * match of either wins (a policy rule on a tie).
 */
#include "model/model.h"

#include <stdlib.h>
#include <string.h>

void mcg_disruption_free(mcg_disruption *a)
{
    mcg_strv_free(&a->reload);
    mcg_strv_free(&a->restart);
    memset(a, 0, sizeof(*a));
}

/* Add a rule's n actions to out (None adds nothing; services kept unique). */
static void add_actions(mcg_disruption *out, const mcg_action *acts, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (acts[i].type) {
        case MCG_ACT_NONE:
            break;
        case MCG_ACT_REBOOT:
            out->reboot = true;
            break;
        case MCG_ACT_DRAIN:
            out->drain = true;
            break;
        case MCG_ACT_DAEMON_RELOAD:
            out->daemon_reload = true;
            break;
        case MCG_ACT_RELOAD:
            if (acts[i].service && !mcg_strv_contains(&out->reload, acts[i].service))
                mcg_strv_push(&out->reload, acts[i].service);
            break;
        case MCG_ACT_RESTART:
            if (acts[i].service && !mcg_strv_contains(&out->restart, acts[i].service))
                mcg_strv_push(&out->restart, acts[i].service);
            break;
        case MCG_ACT_SPECIAL: /* MCO skips the drain when mirrors are only added */
            out->drain = true;
            if (!mcg_strv_contains(&out->reload, "crio.service"))
                mcg_strv_push(&out->reload, "crio.service");
            break;
        }
    }
}

/* How much of path a rule's key covers: its length when it is the path or a
 * directory above it, else 0. */
static size_t key_match(const char *k, const char *path)
{
    size_t kl = strlen(k), pl = strlen(path);
    while (kl > 1 && k[kl - 1] == '/')
        kl--;
    bool match = (kl == pl && !memcmp(k, path, pl)) ||
                 (kl < pl && !memcmp(k, path, kl) && (path[kl] == '/' || kl == 1));
    return match ? kl : 0;
}

/* The policy rule for a file path: exact, else the longest directory prefix. */
static const mcg_policy_rule *file_rule(const mcg_disruption_policy *p, const char *path,
                                        size_t *len)
{
    const mcg_policy_rule *best = NULL;
    *len = 0;
    for (size_t i = 0; p && i < p->nfiles; i++) {
        size_t kl = key_match(p->files[i].key, path);
        if (kl && kl > *len) {
            best = &p->files[i];
            *len = kl;
        }
    }
    return best;
}

/* MCO's built-in file rules (apihelpers.go, defaultClusterPolicies). */
static const mcg_action act_none[] = {{MCG_ACT_NONE, NULL}};
static const mcg_action act_reload_crio[] = {{MCG_ACT_RELOAD, (char *)"crio.service"}};
static const mcg_action act_special[] = {{MCG_ACT_SPECIAL, NULL}};
static const mcg_action act_ca[] = {{MCG_ACT_RESTART, (char *)"coreos-update-ca-trust.service"},
                                    {MCG_ACT_RESTART, (char *)"crio.service"}};
static const mcg_action act_restart_kubelet[] = {{MCG_ACT_RESTART, (char *)"kubelet.service"}};
static const mcg_action act_kubelet_dropin[] = {{MCG_ACT_DAEMON_RELOAD, NULL},
                                                {MCG_ACT_RESTART, (char *)"kubelet.service"}};
static const mcg_action act_restart_iri[] = {{MCG_ACT_RESTART, (char *)"iri-registry.service"}};
static const mcg_action act_restart_ca[] = {
    {MCG_ACT_RESTART, (char *)"coreos-update-ca-trust.service"}};
static const mcg_action act_unit_iri[] = {{MCG_ACT_DAEMON_RELOAD, NULL},
                                          {MCG_ACT_RESTART, (char *)"iri-registry.service"}};
static const struct {
    const char *path;
    const mcg_action *acts;
    size_t n;
} builtin[] = {
    {"/etc/mco/internal-registry-pull-secret.json", act_none, 1},
    {"/var/lib/kubelet/config.json", act_none, 1},
    {"/etc/machine-config-daemon/no-reboot/containers-gpg.pub", act_reload_crio, 1},
    {"/etc/containers/policy.json", act_reload_crio, 1},
    {"/etc/containers/registries.conf", act_special, 1},
    {"/etc/containers/registries.d", act_reload_crio, 1},
    {"/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt", act_ca, 2},
    {"/etc/crio/policies", act_reload_crio, 1},
    {"/etc/nmstate/openshift", act_none, 1},
    {"/etc/kubernetes/credential-providers", act_restart_kubelet, 1},
    {"/etc/systemd/system/kubelet.service.d/40-kubelet-crio-image-credential-provider.conf",
     act_kubelet_dropin, 2},
    {"/etc/iri-registry", act_restart_iri, 1},
    {"/usr/local/bin/load-registry-image.sh", act_restart_iri, 1},
    {"/etc/pki/ca-trust/source/anchors/iri-root-ca.crt", act_restart_ca, 1},
};

/* MCO's built-in unit rules: the internal release image registry's service. */
static const struct {
    const char *unit;
    const mcg_action *acts;
    size_t n;
} builtin_units[] = {
    {"iri-registry.service", act_unit_iri, 2},
};

/* Whether the policy has a rule for exactly this key. */
static bool policy_has(const mcg_disruption_policy *p, const char *key)
{
    for (size_t i = 0; p && i < p->nfiles; i++)
        if (key_match(p->files[i].key, key) == strlen(key))
            return true;
    return false;
}

/* The actions for a changed file: the policy's rule or a built-in one,
 * whichever matches longer; false when neither matches. */
static bool file_actions(mcg_disruption *out, const mcg_disruption_policy *p, const char *path)
{
    size_t ulen = 0, blen = 0, bi = 0;
    const mcg_policy_rule *r = file_rule(p, path, &ulen);
    for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++) {
        size_t kl = key_match(builtin[i].path, path);
        if (kl > blen && !policy_has(p, builtin[i].path)) {
            blen = kl;
            bi = i;
        }
    }
    if (r && ulen >= blen)
        add_actions(out, r->actions, r->nactions);
    else if (blen)
        add_actions(out, builtin[bi].acts, builtin[bi].n);
    return r || blen;
}

/* The policy rule for a unit, by exact name; NULL when none (or no policy). */
static const mcg_policy_rule *unit_rule(const mcg_disruption_policy *p, const char *unit)
{
    for (size_t i = 0; p && i < p->nunits; i++)
        if (!strcmp(p->units[i].key, unit))
            return &p->units[i];
    return NULL;
}

void mcg_disruption_add(mcg_disruption *out, const mcg_disruption_policy *policy,
                        mcg_disrupt_kind kind, const char *key)
{
    const mcg_policy_rule *r = NULL;
    switch (kind) {
    case MCG_DISRUPT_FILE:
        if (!file_actions(out, policy, key))
            out->reboot = true;
        return;
    case MCG_DISRUPT_UNIT:
        r = unit_rule(policy, key);
        break;
    case MCG_DISRUPT_SSHKEY:
        if (policy && policy->has_sshkey)
            add_actions(out, policy->sshkey, policy->nsshkey);
        return; /* default for SSH keys: None */
    case MCG_DISRUPT_REBOOT:
        out->reboot = true;
        return;
    }
    if (r) {
        add_actions(out, r->actions, r->nactions);
        return;
    }
    for (size_t i = 0; i < sizeof(builtin_units) / sizeof(builtin_units[0]); i++)
        if (!strcmp(builtin_units[i].unit, key)) {
            add_actions(out, builtin_units[i].acts, builtin_units[i].n);
            return;
        }
    out->reboot = true;
}

void mcg_disruption_merge(mcg_disruption *dst, const mcg_disruption *src)
{
    dst->reboot |= src->reboot;
    dst->drain |= src->drain;
    dst->daemon_reload |= src->daemon_reload;
    for (size_t i = 0; i < src->reload.n; i++)
        if (!mcg_strv_contains(&dst->reload, src->reload.v[i]))
            mcg_strv_push(&dst->reload, src->reload.v[i]);
    for (size_t i = 0; i < src->restart.n; i++)
        if (!mcg_strv_contains(&dst->restart, src->restart.v[i]))
            mcg_strv_push(&dst->restart, src->restart.v[i]);
}

void mcg_disruption_finish(mcg_disruption *a)
{
    if (a->reboot) {
        mcg_disruption_free(a);
        a->reboot = true;
    }
}

char *mcg_disruption_str(const mcg_disruption *a)
{
    mcg_buf b = MCG_BUF_INIT;
    if (a->reboot)
        mcg_buf_puts(&b, "Reboot");
    if (a->drain)
        mcg_buf_printf(&b, "%sDrain", b.len ? ", " : "");
    if (a->daemon_reload)
        mcg_buf_printf(&b, "%sDaemonReload", b.len ? ", " : "");
    for (size_t i = 0; i < a->reload.n; i++)
        mcg_buf_printf(&b, "%sReload %s", b.len ? ", " : "", a->reload.v[i]);
    for (size_t i = 0; i < a->restart.n; i++)
        mcg_buf_printf(&b, "%sRestart %s", b.len ? ", " : "", a->restart.v[i]);
    if (!b.len)
        mcg_buf_puts(&b, "None");
    return mcg_buf_detach(&b, NULL);
}

json_t *mcg_disruption_json(const mcg_disruption *a)
{
    json_t *arr = json_array();
    if (a->reboot)
        json_array_append_new(arr, json_pack("{s:s}", "type", "Reboot"));
    if (a->drain)
        json_array_append_new(arr, json_pack("{s:s}", "type", "Drain"));
    if (a->daemon_reload)
        json_array_append_new(arr, json_pack("{s:s}", "type", "DaemonReload"));
    for (size_t i = 0; i < a->reload.n; i++)
        json_array_append_new(arr,
                              json_pack("{s:s,s:s}", "type", "Reload", "service", a->reload.v[i]));
    for (size_t i = 0; i < a->restart.n; i++)
        json_array_append_new(
            arr, json_pack("{s:s,s:s}", "type", "Restart", "service", a->restart.v[i]));
    if (!json_array_size(arr))
        json_array_append_new(arr, json_pack("{s:s}", "type", "None"));
    return arr;
}
