/*
 * cmd_render.c — `mcgit render [DIR] [-o names|json]`: each pool's rendered
 * config name (or the whole rendered documents) for a config directory.
 */
#include "cli/cli.h"
#include "gitops/gitops.h"
#include "trust/trust.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static int run(int argc, char **argv);
static void print_render(const mcg_render *r, const char *format);
static void print_warnings(const mcg_model *m);
static int render_repo(const char *repo, const char *rev, const char *trust, const char *revoked,
                       const char *format);

static const mcg_opt render_opts[] = {
    MCG_OPT_HELP,
    MCG_OPT_SHORT_VALUE('o', "output", "names|json", "names (default) or json, as above"),
    MCG_OPT_VALUE('r', "repo", "R", "render a commit of the git repository R"),
    MCG_OPT_VALUE('R', "rev", "REV", "with --repo: the commit (default: the source\nbranch)"),
    MCG_OPT_TRUST,
    MCG_OPT_REVOKED,
    MCG_OPT_END,
};

const mcg_cmd mcg_cmd_render = {
    .name = "render",
    .summary = "render each pool's MachineConfigs into one config",
    .usage = "usage: mcgit render [DIR] [-o names|json]\n"
             "       mcgit render --repo R [--rev REV] --trust F [--revoked K] [-o names|json]\n"
             "\n"
             "Render the config directory DIR (default: the current directory) without\n"
             "touching git. For each pool: select its MachineConfigs (custom pools inherit\n"
             "worker's), merge them in name order, and name the result\n"
             "rendered-<pool>-<hash>, hash = first 32 hex digits of the SHA-256 of the\n"
             "canonical spec. The same input gives the same bytes on any machine.\n"
             "\n"
             "  -o names   one line per pool: `<pool> rendered-<pool>-<hash>` (default)\n"
             "  -o json    one JSON document: {\"pools\": {\"<pool>\": {\"name\", \n"
             "             \"machineConfigs\": [...], \"spec\": {\"config\": <Ignition 3.4.0>,\n"
             "             and kernelArguments, extensions, fips, kernelType, osImageURL,\n"
             "             baseOSExtensionsContainerImage when not their defaults}}}}\n"
             "\n"
             "Invalid input: every problem as `file:line: message` on stderr, exit 1.\n"
             "Warnings (a key Ignition ignores, a MachineConfig no pool selects) go to\n"
             "stderr as `warning: file:line: message` and leave the exit status alone.\n"
             "\n"
             "With --repo, render a commit of the git repository R instead (REV, default\n"
             "the source branch): first verify the signature of every commit since the\n"
             "last verified one against the trust root F and the revocation list K (see\n"
             "`mcgit help verify`), then\n"
             "append a commit to the rendered branch holding, per pool, spec.json, name,\n"
             "files/<path> and units/<unit>, made by mcgit <mcgit@localhost> at the source\n"
             "commit's time (same history, same commit ids, in any clone). A source that\n"
             "was already rendered adds nothing. A refused commit moves nothing.\n",
    .run = run,
    .opts = render_opts,
};

static int run(int argc, char **argv)
{
    const char *format = "names", *repo = NULL, *rev = NULL, *trust = NULL, *revoked = NULL;
    const mcg_optbind binds[] = {{'o', &format, NULL}, {'r', &repo, NULL},    {'R', &rev, NULL},
                                 {'t', &trust, NULL},  {'K', &revoked, NULL}, MCG_BIND_END};
    int ex = mcg_cli_parse(&mcg_cmd_render, argc, argv, binds);
    if (ex >= 0)
        return ex;
    if (strcmp(format, "names") && strcmp(format, "json"))
        return mcg_cli_usage_error(&mcg_cmd_render, "unknown output format '%s'", format);
    if (argc - optind > 1 || (repo && optind != argc))
        return mcg_cli_usage_error(&mcg_cmd_render, "expected at most one DIR, or --repo");
    if ((rev || trust || revoked) && !repo)
        return mcg_cli_usage_error(&mcg_cmd_render, "--rev, --trust and --revoked go with --repo");
    if (repo && !trust)
        return mcg_cli_usage_error(&mcg_cmd_render, "--repo needs --trust FILE");
    if (repo)
        return render_repo(repo, rev, trust, revoked, format);
    const char *dir = optind < argc ? argv[optind] : ".";
    mcg_diags diags = {0};
    mcg_err err = {0};
    mcg_model *m = NULL;
    mcg_render *r = NULL;
    int rc = mcg_source_load_dir(&m, dir, &diags, &err);
    if (rc == 0)
        rc = mcg_render_model(&r, m, &diags);
    print_warnings(m);
    if (rc) {
        if (rc == MCG_EIO)
            mcg_cli_error("render", "%s", err.msg);
        mcg_cli_diags("render", &diags);
        goto out;
    }
    print_render(r, format);
out:
    mcg_render_free(r);
    mcg_model_free(m);
    mcg_diags_free(&diags);
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}

/* What Ignition only warns about, and MachineConfigs no pool selects. */
static void print_warnings(const mcg_model *m)
{
    if (m && !m->settings.warnings_as_errors)
        for (size_t i = 0; i < m->warnings.count; i++)
            mcg_cli_error("render", "warning: %s", m->warnings.msgs[i]);
}

static void print_render(const mcg_render *r, const char *format)
{
    mcg_err err = {0};
    if (!strcmp(format, "names")) {
        for (size_t i = 0; i < r->n; i++)
            printf("%s %s\n", r->pools[i].pool, r->pools[i].name);
    } else {
        json_t *pools = json_object();
        for (size_t i = 0; i < r->n; i++) {
            const mcg_rendered_pool *rp = &r->pools[i];
            json_t *mcs = json_array();
            for (size_t j = 0; j < rp->mcs.n; j++)
                json_array_append_new(mcs, json_string(rp->mcs.v[j]));
            json_t *spec = json_loadb(rp->spec, rp->spec_len, 0, NULL);
            json_object_set_new(
                pools, rp->pool,
                json_pack("{s:s,s:o,s:o}", "name", rp->name, "machineConfigs", mcs, "spec", spec));
        }
        json_t *doc = json_pack("{s:o}", "pools", pools);
        mcg_buf b = MCG_BUF_INIT;
        mcg_json_canonical(doc, &b, &err);
        fwrite(b.ptr, 1, b.len, stdout);
        mcg_buf_free(&b);
        json_decref(doc);
    }
}

static int render_repo(const char *repo, const char *rev, const char *trust, const char *revoked,
                       const char *format)
{
    mcg_err err = {0};
    mcg_signers *root = NULL;
    mcg_repo *r = NULL;
    mcg_render *rd = NULL;
    mcg_diags diags = {0};
    mcg_verify_report rep = {0};
    mcg_render_result res;
    int rc = mcg_gitops_load_trust(&root, trust, revoked, &err);
    if (!rc)
        rc = mcg_repo_open(&r, repo, &err);
    if (!rc)
        rc = mcg_gitops_render(&res, &rd, &rep, r, rev, root, &diags, &err);
    if (rc) {
        for (size_t i = 0; i < rep.n; i++)
            if (!rep.v[i].good)
                mcg_cli_error("render", "bad %s %s", rep.v[i].sha, rep.v[i].reason);
        mcg_cli_diags("render", &diags);
        mcg_cli_error("render", "%s", err.msg);
    } else if (!res.created) {
        mcg_cli_info("source %.12s is already rendered as %.12s; nothing to do", res.source,
                     res.rendered);
    } else {
        mcg_model *m = NULL;
        mcg_diags wd = {0};
        if (mcg_gitops_load_commit(&m, r, res.source, &wd, NULL) == 0)
            print_warnings(m);
        mcg_model_free(m);
        mcg_diags_free(&wd);
        mcg_cli_info("rendered %.12s as %s %.12s", res.source, mcg_repo_rendered_branch(r),
                     res.rendered);
        print_render(rd, format);
    }
    mcg_verify_report_free(&rep);
    mcg_diags_free(&diags);
    mcg_render_free(rd);
    mcg_repo_free(r);
    mcg_signers_free(root);
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}
