/*
 * cmd_site.c — `mcgit site record|export|import`: a site's status as signed
 * history, carried back to HQ across the air gap in a git bundle.
 */
#include "cli/cli.h"
#include "bundle/bundle.h"
#include "site/site.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int run(int argc, char **argv);

enum { SUB_RECORD = 1, SUB_EXPORT = 2, SUB_IMPORT = 4 };

static const mcg_opt site_opts[] = {
    MCG_OPT_HELP,
    MCG_OPT_VALUE('r', "repo", "R", "the config repo (the site's, or HQ's)"),
    MCG_OPT_SUB_VALUE(SUB_RECORD | SUB_EXPORT, 's', "site", "NAME",
                      "record, export: the site (sites/NAME.yaml)"),
    MCG_OPT_SUB_VALUE(SUB_RECORD, 'c', "cluster", "C",
                      "record: the site's cluster (default:\n$MCGIT_CLUSTER)"),
    MCG_OPT_SUB_VALUE(SUB_RECORD, 'k', "site-key", "FILE",
                      "record: the site's private key (FILE.pub its\nstatusKey)"),
    MCG_OPT_SUB_FLAG(SUB_RECORD, 'f', "force", "record: a record even when nothing changed"),
    MCG_OPT_SUB_VALUE(SUB_EXPORT, 'S', "since", "REV",
                      "export: only records newer than REV (a record HQ\nholds: a thin bundle)"),
    MCG_OPT_SUB_VALUE(SUB_IMPORT, 't', "trust", "F", "import: the trust root"),
    MCG_OPT_SUB_VALUE(SUB_IMPORT, 'K', "revoked", "K",
                      "import: revoked keys (a revoked status key refuses\nits records)"),
    MCG_OPT_END,
};

const mcg_cmd mcg_cmd_site = {
    .name = "site",
    .summary = "a site's status as signed history, back to HQ in a bundle",
    .usage = "usage: mcgit site record --repo R --cluster C --site NAME --site-key FILE [--force]\n"
             "       mcgit site export --repo R --site NAME FILE [--since REV]\n"
             "       mcgit site import --repo R FILE --trust F [--revoked K]\n"
             "\n"
             "A site is declared in the config repo, sites/NAME.yaml (kind Site,\n"
             "spec.statusKey: the OpenSSH public key it reports with), and so signed and\n"
             "reviewed like any change. See docs/sites.md.\n"
             "\n"
             "record   at the site: commit the cluster's status (each pool's config and\n"
             "         the source commit that rendered it, machine counts, each node's\n"
             "         state, the time) on refs/mcgit/status/NAME in R, its parent the\n"
             "         previous record, signed by FILE (`ssh-keygen -Y sign -n\n"
             "         mcgit-site`). Nothing is written when nothing but the time changed\n"
             "         (unless --force). The site must be declared at R's verified source\n"
             "         commit with FILE.pub as its statusKey. Prints the record, or\n"
             "         `unchanged`.\n"
             "export   write refs/mcgit/status/NAME as a git bundle FILE (`git bundle\n"
             "         verify` reads it); --since REV leaves out what HQ already holds.\n"
             "import   at HQ: take the status records a bundle carries, quarantined like\n"
             "         `bundle import`, fast-forward only, each new record checked first:\n"
             "         signed by the site's statusKey as declared at the source commit it\n"
             "         reports, under F's revocations; its source commit in R's verified\n"
             "         history and not older than the previous record's; every config it\n"
             "         names one R rendered for that pool; its time not going back. Any\n"
             "         refusal changes nothing and says why (exit 1); an older record\n"
             "         than the one held is refused as stale.\n"
             "\n"
             "`mcgit status --sites --repo R` shows what every site last reported.\n",
    .run = run,
    .opts = site_opts,
};

static int do_record(int argc, char **argv)
{
    const char *repo = NULL, *cluster = NULL, *site = NULL, *key = NULL;
    bool force = false;
    const mcg_optbind binds[] = {{'r', &repo, NULL}, {'c', &cluster, NULL}, {'s', &site, NULL},
                                 {'k', &key, NULL},  {'f', NULL, &force},   MCG_BIND_END};
    int c, ex;
    optind = 1;
    while ((c = mcg_cli_parse_next(&mcg_cmd_site, SUB_RECORD, argc, argv, binds, &ex)) > 0)
        ;
    if (c < 0)
        return ex;
    cluster = mcg_cli_cluster(cluster);
    if (!repo || !cluster || !site || !key || optind != argc)
        return mcg_cli_usage_error(&mcg_cmd_site,
                                   "record needs --repo, --cluster (or $MCGIT_CLUSTER), --site "
                                   "and --site-key");
    mcg_err err = {0};
    mcg_repo *r = NULL;
    mcg_cluster *cl = NULL;
    mcg_site_record_result res;
    int rc = mcg_repo_open(&r, repo, &err);
    if (!rc)
        rc = mcg_cluster_open(&cl, cluster, &err);
    if (!rc)
        rc = mcg_site_record(&res, r, cl, site, key, (int64_t)time(NULL), force, &err);
    if (rc)
        mcg_cli_error("site", "%s", err.msg);
    else if (res.unchanged)
        printf("unchanged: site %s's status is its last record's\n", site);
    else
        printf("%s\n", res.commit);
    mcg_cluster_free(cl);
    mcg_repo_free(r);
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}

static int do_export(int argc, char **argv)
{
    const char *repo = NULL, *site = NULL, *since = NULL;
    const mcg_optbind binds[] = {
        {'r', &repo, NULL}, {'s', &site, NULL}, {'S', &since, NULL}, MCG_BIND_END};
    int c, ex;
    optind = 1;
    while ((c = mcg_cli_parse_next(&mcg_cmd_site, SUB_EXPORT, argc, argv, binds, &ex)) > 0)
        ;
    if (c < 0)
        return ex;
    if (!repo || !site || optind + 1 != argc)
        return mcg_cli_usage_error(&mcg_cmd_site, "export needs --repo R, --site NAME and FILE");
    if (!mcg_site_name_ok(site))
        return mcg_cli_usage_error(&mcg_cmd_site, "'%s' is not a site name", site);
    char ref[128];
    snprintf(ref, sizeof(ref), MCG_SITE_REF_PREFIX "%s", site);
    const char *refs[] = {ref};
    mcg_bundle_create_opts o = {.since = since, .refs = refs, .nrefs = 1};
    mcg_bundle_info info = {0};
    mcg_err err = {0};
    mcg_repo *r = NULL;
    int rc = mcg_repo_open(&r, repo, &err);
    if (!rc)
        rc = mcg_bundle_create(&info, r, argv[optind], &o, &err);
    if (rc)
        mcg_cli_error("site", "%s", err.msg);
    else
        mcg_cli_info("site: %s: %zu objects, %llu bytes", ref, info.nobjects,
                     (unsigned long long)info.bytes);
    mcg_repo_free(r);
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}

static int do_import(int argc, char **argv)
{
    const char *repo = NULL, *trust = NULL, *revoked = NULL;
    const mcg_optbind binds[] = {
        {'r', &repo, NULL}, {'t', &trust, NULL}, {'K', &revoked, NULL}, MCG_BIND_END};
    int c, ex;
    optind = 1;
    while ((c = mcg_cli_parse_next(&mcg_cmd_site, SUB_IMPORT, argc, argv, binds, &ex)) > 0)
        ;
    if (c < 0)
        return ex;
    if (!repo || !trust || optind + 1 != argc)
        return mcg_cli_usage_error(&mcg_cmd_site, "import needs --repo R, --trust F and FILE");
    mcg_err err = {0};
    mcg_repo *r = NULL;
    mcg_signers *root = NULL;
    mcg_bundle_report rep = {0};
    int rc = mcg_gitops_load_trust(&root, trust, revoked, &err);
    if (!rc)
        rc = mcg_repo_open(&r, repo, &err);
    if (!rc)
        rc = mcg_site_import(&rep, r, argv[optind], root, (int64_t)time(NULL), &err);
    for (size_t i = 0; i < rep.nrefs; i++) {
        const mcg_bundle_ref *br = &rep.refs[i];
        bool moved = br->action == MCG_BUNDLE_CREATE || br->action == MCG_BUNDLE_FORWARD;
        if (!strncmp(br->name, MCG_SITE_REF_PREFIX, strlen(MCG_SITE_REF_PREFIX)))
            printf("%s %s -> %s (%s)\n", br->name, br->old_sha[0] ? br->old_sha : "(none)",
                   br->new_sha,
                   rc                              ? "refused"
                   : moved                         ? "imported"
                   : br->action == MCG_BUNDLE_SAME ? "up to date"
                                                   : "skipped");
    }
    if (rc)
        mcg_cli_error("site", "refused: %s", err.msg);
    mcg_bundle_report_free(&rep);
    mcg_signers_free(root);
    mcg_repo_free(r);
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}

static int run(int argc, char **argv)
{
    if (argc < 2)
        return mcg_cli_usage_error(&mcg_cmd_site, "expected record, export or import");
    const char *sub = argv[1];
    if (!strcmp(sub, "-h") || !strcmp(sub, "--help") || !strcmp(sub, "help"))
        return mcg_cli_help(&mcg_cmd_site);
    if (!strcmp(sub, "record"))
        return do_record(argc - 1, argv + 1);
    if (!strcmp(sub, "export"))
        return do_export(argc - 1, argv + 1);
    if (!strcmp(sub, "import"))
        return do_import(argc - 1, argv + 1);
    return mcg_cli_usage_error(&mcg_cmd_site, "unknown subcommand '%s'", sub);
}
