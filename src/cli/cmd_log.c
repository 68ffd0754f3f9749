/*
 * cmd_log.c — `mcgit log`: the rollout history on the rendered branch.
 */
#include "cli/cli.h"
#include "gitops/verify.h"
#include "gitops/rendered.h"
#include "trust/trust.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int run(int argc, char **argv);

static const mcg_opt log_opts[] = {
    MCG_OPT_HELP,
    MCG_OPT_VALUE('r', "repo", "R", "the config repo"),
    MCG_OPT_VALUE('t', "trust", "F",
                  "the trust root, an allowed_signers file: name\nthe signers' principals"),
    MCG_OPT_SHORT_VALUE('o', "output", "text|json",
                        "text (default), or a JSON list of {\"rendered\",\n"
                        "\"source\", \"time\", \"subject\", \"author\",\n"
                        "\"signer\": {\"fingerprint\", \"principal\"} or\n"
                        "null, \"rollbackTo\", \"pools\": {\"<pool>\":\n"
                        "\"rendered-<pool>-<hash>\"}} (null where not\n"
                        "known)"),
    MCG_OPT_END,
};

const mcg_cmd mcg_cmd_log = {
    .name = "log",
    .summary = "show the rollout history (the rendered branch)",
    .usage = "usage: mcgit log --repo R [--trust F] [-o json]\n"
             "\n"
             "List the rendered commits, newest first: the rendered commit, its time (the\n"
             "source commit's, UTC), the source commit it was rendered from with its\n"
             "subject and author, the signer (the fingerprint of the key whose signature\n"
             "over the source commit holds; with --trust F also the principal the trust\n"
             "root F, with the repo's .mcgit/allowed_signers as of the commit's parent,\n"
             "names for it), and each pool's rendered config name. A rollback (a source\n"
             "commit with a Rollback-To trailer) is marked `rollback to <sha>`. With no\n"
             "rendered commit yet it prints one line saying so (-o json: []).\n",
    .run = run,
    .opts = log_opts,
};

static json_t *str_or_null(const char *s)
{
    return s && *s ? json_string(s) : json_null();
}

static void print_text(const mcg_rendered_log_entry *e, const char *ts)
{
    printf("%.12s  %s  source %.12s%s%.12s\n", e->rendered, ts, e->source[0] ? e->source : "-",
           e->rollback[0] ? "  rollback to " : "", e->rollback);
    if (e->subject)
        printf("    %s\n", e->subject);
    if (e->author)
        printf("    author %s\n", e->author);
    if (e->signer[0])
        printf("    signed by %s%s%s\n", e->signer, e->principal[0] ? " " : "", e->principal);
    for (size_t j = 0; j < e->pools.n; j++)
        printf("    %s\n", e->pools.v[j]);
}

static int run(int argc, char **argv)
{
    const char *repo = NULL, *format = "text", *trust = NULL;
    const mcg_optbind binds[] = {
        {'r', &repo, NULL}, {'t', &trust, NULL}, {'o', &format, NULL}, MCG_BIND_END};
    int ex = mcg_cli_parse(&mcg_cmd_log, argc, argv, binds);
    if (ex >= 0)
        return ex;
    if (!repo || optind != argc)
        return mcg_cli_usage_error(&mcg_cmd_log, "--repo is required");
    if (strcmp(format, "text") && strcmp(format, "json"))
        return mcg_cli_usage_error(&mcg_cmd_log, "unknown output format '%s'", format);
    mcg_err err = {0};
    mcg_repo *r = NULL;
    mcg_signers *root = NULL;
    mcg_rendered_log log = {0};
    int rc = trust ? mcg_gitops_load_trust(&root, trust, NULL, &err) : 0;
    if (!rc)
        rc = mcg_repo_open(&r, repo, &err);
    if (!rc)
        rc = mcg_gitops_log(&log, r, &err);
    if (!rc)
        rc = mcg_gitops_log_sources(&log, r, root, &err);
    if (rc) {
        mcg_cli_error("log", "%s", err.msg);
        goto out;
    }
    if (!log.n && !strcmp(format, "text"))
        printf("no rendered commits yet (branch '%s' is empty or missing; see `mcgit render "
               "--repo`)\n",
               mcg_repo_rendered_branch(r));
    json_t *arr = json_array();
    for (size_t i = 0; i < log.n; i++) {
        mcg_rendered_log_entry *e = &log.e[i];
        char ts[32];
        mcg_time_iso(ts, e->time);
        if (!strcmp(format, "text")) {
            print_text(e, ts);
            continue;
        }
        json_t *pools = json_object();
        for (size_t j = 0; j < e->pools.n; j++) {
            char *sp = strchr(e->pools.v[j], ' ');
            if (sp) {
                *sp = '\0';
                json_object_set_new(pools, e->pools.v[j], json_string(sp + 1));
                *sp = ' ';
            }
        }
        json_t *o = json_pack("{s:s,s:s,s:o}", "rendered", e->rendered, "time", ts, "pools", pools);
        json_object_set_new(o, "source", str_or_null(e->source));
        json_object_set_new(o, "rollbackTo", str_or_null(e->rollback));
        json_object_set_new(o, "subject", str_or_null(e->subject));
        json_object_set_new(o, "author", str_or_null(e->author));
        json_object_set_new(o, "signer",
                            e->signer[0] ? json_pack("{s:s,s:o}", "fingerprint", e->signer,
                                                     "principal", str_or_null(e->principal))
                                         : json_null());
        json_array_append_new(arr, o);
    }
    if (!strcmp(format, "json")) {
        mcg_buf b = MCG_BUF_INIT;
        mcg_json_canonical(arr, &b, &err);
        fwrite(b.ptr, 1, b.len, stdout);
        mcg_buf_free(&b);
    }
    json_decref(arr);
out:
    mcg_rendered_log_free(&log);
    mcg_repo_free(r);
    mcg_signers_free(root);
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}
