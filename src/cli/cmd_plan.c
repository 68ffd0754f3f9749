/*
 * cmd_plan.c — `mcgit plan`: what a source commit would do, per pool,
 * before it is rendered and rolled out. Verifies like `mcgit render --repo`
 * and writes nothing.
 */
#include "cli/cli.h"
#include "cluster/cluster.h"
#include "gitops/gitops.h"
#include "rollout/rollout.h"
#include "trust/trust.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int run(int argc, char **argv);

const mcg_cmd mcg_cmd_plan = {
    "plan",
    "show what a change does, per pool, before it rolls out",
    "usage: mcgit plan --repo R [--rev REV] --trust F [--revoked K] [--cluster C]\n"
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
    run,
};

/*
 * Fill each pool's node counts from the cluster's nodes: its members (by the
 * plan's pools' nodeSelectors, mcg_rollout_pool_of), those not yet at the
 * new config, maxUnavailable and waves (rollout's arithmetic).
 */
static int count_nodes(mcg_plan *p, const char *cluster, mcg_err *err)
{
    mcg_cluster *cl = NULL;
    mcg_node *nodes = NULL;
    size_t n = 0;
    int rc = mcg_cluster_open(&cl, cluster, err);
    if (rc == 0)
        rc = mcg_cluster_list_nodes(cl, &nodes, &n, err);
    for (size_t i = 0; rc == 0 && i < p->n; i++) {
        mcg_plan_pool *pp = &p->pools[i];
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
    mcg_nodes_free(nodes, n);
    mcg_cluster_free(cl);
    return rc;
}

/* The plan as text on stdout: its title, then mcg_plan_lines. */
static void print_plan(const mcg_plan *p)
{
    mcg_strv lines = {0};
    char *title = mcg_plan_title(p);
    printf("%s\n", title);
    free(title);
    mcg_plan_lines(p, &lines);
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
static int show_plan(const mcg_plan *p, const char *format, mcg_err *err)
{
    int rc = 0;
    if (!p->model->settings.warnings_as_errors)
        for (size_t i = 0; i < p->model->warnings.count; i++)
            mcg_cli_error("plan", "warning: %s", p->model->warnings.msgs[i]);
    if (!strcmp(format, "json")) {
        json_t *doc = mcg_plan_json(p);
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
    static const struct option opts[] = {
        {"help", no_argument, 0, 'h'},          {"output", required_argument, 0, 'o'},
        {"repo", required_argument, 0, 'r'},    {"rev", required_argument, 0, 'R'},
        {"trust", required_argument, 0, 't'},   {"revoked", required_argument, 0, 'K'},
        {"cluster", required_argument, 0, 'c'}, {0, 0, 0, 0}};
    const char *format = "text", *repo = NULL, *rev = NULL, *trust = NULL, *revoked = NULL,
               *cluster = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        switch (c) {
        case 'h':
            return mcg_cli_help(&mcg_cmd_plan);
        case 'o':
            format = optarg;
            break;
        case 'r':
            repo = optarg;
            break;
        case 'R':
            rev = optarg;
            break;
        case 't':
            trust = optarg;
            break;
        case 'K':
            revoked = optarg;
            break;
        case 'c':
            cluster = optarg;
            break;
        default:
            return mcg_cli_usage_error(&mcg_cmd_plan, NULL);
        }
    }
    if (strcmp(format, "text") && strcmp(format, "json"))
        return mcg_cli_usage_error(&mcg_cmd_plan, "unknown output format '%s'", format);
    if (!repo || !trust || optind != argc)
        return mcg_cli_usage_error(&mcg_cmd_plan, "expected --repo R and --trust F");
    cluster = mcg_cli_cluster(cluster);

    mcg_err err = {0};
    mcg_signers *root = NULL;
    mcg_repo *r = NULL;
    mcg_verify_report rep = {0};
    mcg_diags diags = {0};
    mcg_plan *p = NULL;
    char sha[MCG_SHA_HEX + 1];
    char *src = NULL;
    int rc = mcg_cli_load_trust(&root, trust, revoked, &err);
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
        rc = mcg_gitops_plan(&p, r, sha, &diags, &err);
    if (!rc && cluster)
        rc = count_nodes(p, cluster, &err);
    if (rc) {
        mcg_cli_diags("plan", &diags);
        mcg_cli_error("plan", "%s", err.msg);
        goto out;
    }
    rc = show_plan(p, format, &err);
out:
    free(src);
    mcg_plan_free(p);
    mcg_diags_free(&diags);
    mcg_verify_report_free(&rep);
    mcg_repo_free(r);
    mcg_signers_free(root);
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}
