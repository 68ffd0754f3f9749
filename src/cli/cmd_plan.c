/*
 * cmd_plan.c — `mcgit plan`: what a source commit would do, per pool,
 * before it is rendered and rolled out. Verifies like `mcgit render --repo`
 * and writes nothing.
 */
#include "cli/cli.h"
#include "gitops/verify.h"
#include "cluster/cluster.h"
#include "fsio/fsio.h"
#include "gitops/plan.h"
#include "gitops/rendered.h"
#include "rollout/rollout.h"
#include "trust/trust.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int run(int argc, char **argv);

static const mcg_opt plan_opts[] = {
    MCG_OPT_HELP,
    MCG_OPT_VALUE('r', "repo", "R", "the config repo"),
    MCG_OPT_VALUE('R', "rev", "REV", "the commit to plan (default: the source branch)"),
    MCG_OPT_TRUST,
    MCG_OPT_REVOKED,
    MCG_OPT_VALUE('c', "cluster", "C", "count the nodes of cluster C (default:\n$MCGIT_CLUSTER)"),
    MCG_OPT_SHORT_VALUE('o', "output", "text|json", "text (default) or json, as above"),
    MCG_OPT_END,
};

const mcg_cmd mcg_cmd_plan = {
    .name = "plan",
    .summary = "show what a change does, per pool, before it rolls out",
    .usage = "usage: mcgit plan --repo R [--rev REV] --trust F [--revoked K] [--cluster C]\n"
             "                  [-o text|json]\n"
             "\n"
             "Verify REV (default: the source branch) as `mcgit render --repo` does (every\n"
             "commit since the last verified one, against the trust root F and the\n"
             "revocation list K), render it, and compare each pool with the rendered\n"
             "branch's tip: nothing is written. For each pool it prints the rendered name,\n"
             "old -> new (none when the pool was never rendered); every file, directory,\n"
             "link and unit added, changed or removed, core's SSH keys, kernel arguments\n"
             "and OS fields changed; the disruption action each change needs under the\n"
             "node disruption policy of REV (the agent's own rules); and how many nodes\n"
             "take it in how many waves at the pool's maxUnavailable. Node counts need\n"
             "--cluster C (or $MCGIT_CLUSTER); without one they are unknown.\n"
             "Warnings (such as a MachineConfig no pool selects) go to stderr.\n"
             "A file, directory or link owner given by name that a node lacks is a\n"
             "warning too (the agent would refuse the config there): with a local:DIR\n"
             "cluster, each node's DIR/roots/NAME/etc/passwd and etc/group are read;\n"
             "where no node's root can be read (no cluster, kube), a changing pool's\n"
             "owner names other than root and core are named as not checked.\n"
             "\n"
             "  -o text   (default) per pool:\n"
             "              pool P: OLD -> NEW            or  pool P: NAME (unchanged)\n"
             "                <op> <kind> <key> (<what>): <actions>\n"
             "                actions: <all of the pool's actions>\n"
             "                nodes: N of M, W waves at maxUnavailable U\n"
             "  -o json   one document: {\"version\": 1, \"source\", \"renderedTip\" (null when\n"
             "            none), \"warnings\": [...], \"pools\": [{\"pool\", \"old\" (null when\n"
             "            none), \"new\", \"changed\", \"changes\": [{\"kind\", \"op\", \"key\",\n"
             "            \"what\": [...], \"actions\": [{\"type\", \"service\"}]}], \"actions\",\n"
             "            \"unreconcilable\", \"paused\", \"machineCount\", \"nodes\",\n"
             "            \"maxUnavailable\", \"waves\" (the last four null without a\n"
             "            cluster)}]}\n"
             "\n"
             "kind: file, directory, link, unit, sshAuthorizedKeys, passwordHash,\n"
             "kernelArguments, os, unreconcilable; op: added, changed, removed; action\n"
             "types: None, Reboot, Drain, DaemonReload, Reload, Restart (MCO's names).\n"
             "The pre-receive hook prints the same plan as `remote: mcgit: plan: ...`\n"
             "lines for an accepted push, and `mcgit bundle verify|import` print it too.\n"
             "Exit status: 0 the commit verifies and renders, 1 refused (with the reasons).\n",
    .run = run,
    .opts = plan_opts,
};

/*
 * Fill each pool's node counts from the cluster's nodes: its members (by the
 * plan's pools' nodeSelectors, mcg_rollout_pool_of), those not yet at the
 * new config, maxUnavailable and waves (rollout's arithmetic).
 */
static void count_nodes(mcg_commit_plan *p, const mcg_node *nodes, size_t n)
{
    for (size_t i = 0; i < p->n; i++) {
        mcg_commit_plan_pool *pp = &p->pools[i];
        pp->nodes_known = true;
        for (size_t j = 0; j < n; j++) {
            const mcg_pool *of =
                mcg_rollout_pool_of(&nodes[j].labels, p->model->pools, p->model->npools, NULL);
            if (!of || strcmp(of->name, pp->name))
                continue;
            pp->machines++;
            if (!pp->error && (!nodes[j].desired || strcmp(nodes[j].desired, pp->new_name) ||
                               !nodes[j].current || strcmp(nodes[j].current, pp->new_name)))
                pp->nodes++;
        }
        pp->max_unavailable = mcg_rollout_max_unavailable(pp->pool, pp->machines);
        pp->waves = mcg_rollout_waves(pp->pool, pp->machines, pp->nodes);
    }
}

/* Whether a passwd or group file's text has an entry for name. */
static bool has_entry(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
        if (!strncmp(l, name, n) && l[n] == ':')
            return true;
    return false;
}

/* ROOT/etc/FILE of a node, or NULL when the cluster keeps no root for it
 * (kube) or the file cannot be read. */
static char *node_etc(mcg_cluster *cl, const char *node, const char *file)
{
    char *root = cl ? mcg_cluster_node_root(cl, node) : NULL;
    if (!root)
        return NULL;
    /* etc's, then usr/lib's (the OS image's, read through nss-altfiles), as the agent reads them */
    mcg_buf b = MCG_BUF_INIT;
    static const char *const dirs[] = {"etc", "usr/lib"};
    for (size_t i = 0; i < 2; i++) {
        char *path = mcg_sprintf("%s/%s/%s", root, dirs[i], file), *data = NULL;
        size_t len;
        if (mcg_read_file(path, 16u << 20, &data, &len, NULL) == 0) {
            mcg_buf_put(&b, data, len);
            mcg_buf_putc(&b, '\n');
        }
        free(data);
        free(path);
    }
    free(root);
    if (!b.ptr)
        return NULL;
    mcg_buf_putc(&b, '\0');
    size_t n;
    return mcg_buf_detach(&b, &n);
}

/* Each owner name (user, then group) of a config's storage, once, with the
 * first path it owns: pushed to names as "u:NAME" / "g:NAME", paths alike. */
static void owner_names(const mcg_ignition *ign, mcg_strv *names, mcg_strv *paths)
{
    for (size_t k = 0; k < ign->nstorage; k++) {
        const mcg_storage *st = &ign->storage[k];
        const mcg_owner *o[2] = {&st->user, &st->group};
        for (int u = 0; u < 2; u++) {
            if (!o[u]->name)
                continue;
            char *key = mcg_sprintf("%c:%s", u ? 'g' : 'u', o[u]->name);
            if (!mcg_strv_contains(names, key)) {
                mcg_strv_push(names, key);
                mcg_strv_push(paths, st->path);
            }
            free(key);
        }
    }
}

/*
 * Warn (to warns) about each owner name of pool pp's new config that a node
 * lacks: read from each member's root etc/passwd and etc/group where the
 * cluster keeps the node's root (local:DIR). Where no node can be checked,
 * a changing pool's names other than root and core are named as unchecked.
 */
static void check_owners(const mcg_commit_plan *p, const mcg_commit_plan_pool *pp, mcg_cluster *cl,
                         const mcg_node *nodes, size_t n, mcg_diags *warns)
{
    const mcg_rendered_pool *rp = mcg_render_pool(p->render, pp->name);
    mcg_strv names = {0}, paths = {0};
    size_t checked = 0;
    if (!rp || pp->error)
        return;
    owner_names(&rp->merged, &names, &paths);
    for (size_t j = 0; j < n && names.n; j++) {
        const mcg_pool *of =
            mcg_rollout_pool_of(&nodes[j].labels, p->model->pools, p->model->npools, NULL);
        if (!of || strcmp(of->name, pp->name))
            continue;
        char *etc[2] = {node_etc(cl, nodes[j].name, "passwd"),
                        node_etc(cl, nodes[j].name, "group")};
        for (size_t k = 0; k < names.n && etc[0] && etc[1]; k++) {
            bool group = names.v[k][0] == 'g';
            if (!has_entry(etc[group], names.v[k] + 2))
                mcg_diags_add(warns,
                              "pool %s: node %s has no %s '%s' in /etc/%s (it owns %s): the "
                              "agent would refuse this config there (Degraded)",
                              pp->name, nodes[j].name, group ? "group" : "user", names.v[k] + 2,
                              group ? "group" : "passwd", paths.v[k]);
        }
        checked += etc[0] && etc[1];
        free(etc[0]);
        free(etc[1]);
    }
    bool changes = !pp->old_name || strcmp(pp->old_name, pp->new_name);
    for (size_t k = 0; !checked && changes && k < names.n; k++) {
        const char *name = names.v[k] + 2;
        if (strcmp(name, "root") && strcmp(name, "core"))
            mcg_diags_add(warns,
                          "pool %s: %s '%s' (it owns %s) is not checked, no node root to read: "
                          "a node without it refuses this config (Degraded)",
                          pp->name, names.v[k][0] == 'g' ? "group" : "user", name, paths.v[k]);
    }
    mcg_strv_free(&names);
    mcg_strv_free(&paths);
}

/* Node counts and owner checks from the cluster (NULL: owners only, unchecked). */
static int check_cluster(mcg_commit_plan *p, const char *cluster, mcg_diags *warns, mcg_err *err)
{
    mcg_cluster *cl = NULL;
    mcg_node *nodes = NULL;
    size_t n = 0;
    int rc = 0;
    if (cluster && (rc = mcg_cluster_open(&cl, cluster, err)) == 0 &&
        (rc = mcg_cluster_list_nodes(cl, &nodes, &n, err)) == 0)
        count_nodes(p, nodes, n);
    for (size_t i = 0; rc == 0 && i < p->n; i++)
        check_owners(p, &p->pools[i], cl, nodes, n, warns);
    mcg_nodes_free(nodes, n);
    mcg_cluster_free(cl);
    return rc;
}

/* The plan as text on stdout: its title, then mcg_commit_plan_lines. */
static void print_plan(const mcg_commit_plan *p)
{
    mcg_strv lines = {0};
    char *title = mcg_commit_plan_title(p);
    printf("%s\n", title);
    free(title);
    mcg_commit_plan_lines(p, &lines);
    for (size_t i = 0; i < lines.n; i++)
        printf("%s\n", lines.v[i]);
    mcg_strv_free(&lines);
}

/* Each commit rep refused, on stderr; the refusal. */
static int refuse_bad(const mcg_verify_report *rep, mcg_err *err)
{
    for (size_t i = 0; i < rep->n; i++)
        if (!rep->v[i].good)
            mcg_cli_error("plan", "bad %s %s", rep->v[i].sha, rep->v[i].reason);
    return mcg_err_set(err, MCG_ETRUST, "%zu commit%s refused; nothing planned", rep->nbad,
                       rep->nbad == 1 ? "" : "s");
}

/* The model's warnings on stderr, then the plan on stdout as text or JSON. */
static int show_plan(mcg_commit_plan *p, const mcg_diags *owners, const char *format, mcg_err *err)
{
    int rc = 0;
    if (!p->model->settings.warnings_as_errors)
        for (size_t i = 0; i < p->model->warnings.count; i++)
            mcg_cli_error("plan", "warning: %s", p->model->warnings.msgs[i]);
    for (size_t i = 0; i < owners->count; i++) { /* about the nodes, not the repo: never errors */
        mcg_cli_error("plan", "warning: %s", owners->msgs[i]);
        mcg_diags_add(&p->model->warnings, "%s", owners->msgs[i]);
    }
    if (!strcmp(format, "json")) {
        json_t *doc = mcg_commit_plan_json(p);
        mcg_buf b = MCG_BUF_INIT;
        if ((rc = mcg_json_canonical(doc, &b, err)) == 0)
            fwrite(b.ptr, 1, b.len, stdout);
        else
            mcg_cli_error("plan", "%s", err->msg);
        mcg_buf_free(&b);
        json_decref(doc);
    } else {
        print_plan(p);
    }
    return rc;
}

/* Parse, verify (as render --repo), plan, count nodes if a cluster is known, print. */
static int run(int argc, char **argv)
{
    const char *format = "text", *repo = NULL, *rev = NULL, *trust = NULL, *revoked = NULL,
               *cluster = NULL;
    const mcg_optbind binds[] = {{'o', &format, NULL}, {'r', &repo, NULL},    {'R', &rev, NULL},
                                 {'t', &trust, NULL},  {'K', &revoked, NULL}, {'c', &cluster, NULL},
                                 MCG_BIND_END};
    int ex = mcg_cli_parse(&mcg_cmd_plan, argc, argv, binds);
    if (ex >= 0)
        return ex;
    if (strcmp(format, "text") && strcmp(format, "json"))
        return mcg_cli_usage_error(&mcg_cmd_plan, "unknown output format '%s'", format);
    if (!repo || !trust || optind != argc)
        return mcg_cli_usage_error(&mcg_cmd_plan, "expected --repo R and --trust F");
    cluster = mcg_cli_cluster(cluster);

    mcg_err err = {0};
    mcg_signers *root = NULL;
    mcg_repo *r = NULL;
    mcg_verify_report rep = {0};
    mcg_diags diags = {0}, owners = {0};
    mcg_commit_plan *p = NULL;
    char sha[MCG_SHA_HEX + 1];
    char *src = NULL;
    int rc = mcg_gitops_load_trust(&root, trust, revoked, &err);
    if (!rc)
        rc = mcg_repo_open(&r, repo, &err);
    if (!rc) {
        src = mcg_sprintf("refs/heads/%s", mcg_repo_source_branch(r));
        rc = mcg_repo_resolve(r, rev ? rev : src, sha, &err);
    }
    if (!rc)
        rc = mcg_gitops_verify(&rep, r, sha, NULL, root, &err);
    if (!rc && rep.nbad)
        rc = refuse_bad(&rep, &err);
    if (!rc)
        rc = mcg_gitops_commit_plan(&p, r, sha, &diags, &err);
    if (!rc)
        rc = check_cluster(p, cluster, &owners, &err);
    if (rc) {
        mcg_cli_diags("plan", &diags);
        mcg_cli_error("plan", "%s", err.msg);
        goto out;
    }
    rc = show_plan(p, &owners, format, &err);
out:
    free(src);
    mcg_commit_plan_free(p);
    mcg_diags_free(&diags);
    mcg_diags_free(&owners);
    mcg_verify_report_free(&rep);
    mcg_repo_free(r);
    mcg_signers_free(root);
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}
