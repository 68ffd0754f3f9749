/*
 * cmd_log.c — `mcgit log`: the rollout history on the rendered branch.
 */
#include "cli/cli.h"
#include "gitops/gitops.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int run(int argc, char **argv);

const mcg_cmd mcg_cmd_log = {
    "log",
    "show the rollout history (the rendered branch)",
    "usage: mcgit log --repo R [-o json]\n"
    "\n"
    "List the rendered commits, newest first: the rendered commit, the source\n"
    "commit it was rendered from, its time (the source commit's, UTC), and each\n"
    "pool's rendered config name. Rollbacks are marked `rollback to <sha>`.\n"
    "\n"
    "  -o json   a JSON list of {\"rendered\", \"source\", \"time\", \"rollbackTo\",\n"
    "            \"pools\": {\"<pool>\": \"rendered-<pool>-<hash>\"}}\n",
    run,
};

static void fmt_time(int64_t t, char out[32])
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {{"help", no_argument, 0, 'h'},
                                         {"repo", required_argument, 0, 'r'},
                                         {"output", required_argument, 0, 'o'},
                                         {0, 0, 0, 0}};
    const char *repo = NULL, *format = "text";
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        switch (c) {
        case 'h': return mcg_cli_help(&mcg_cmd_log);
        case 'r': repo = optarg; break;
        case 'o': format = optarg; break;
        default: return mcg_cli_usage_error(&mcg_cmd_log, NULL);
        }
    }
    if (!repo || optind != argc)
        return mcg_cli_usage_error(&mcg_cmd_log, "--repo is required");
    if (strcmp(format, "text") && strcmp(format, "json"))
        return mcg_cli_usage_error(&mcg_cmd_log, "unknown output format '%s'", format);
    mcg_err err = {0};
    mcg_repo *r = NULL;
    mcg_log log = {0};
    int rc = mcg_repo_open(&r, repo, &err);
    if (!rc)
        rc = mcg_gitops_log(&log, r, &err);
    if (rc) {
        mcg_cli_error("log", "%s", err.msg);
        goto out;
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < log.n; i++) {
        mcg_log_entry *e = &log.e[i];
        char ts[32];
        fmt_time(e->time, ts);
        if (!strcmp(format, "text")) {
            printf("%.12s  %s  source %.12s%s%.12s\n", e->rendered, ts,
                   e->source[0] ? e->source : "-", e->rollback[0] ? "  rollback to " : "",
                   e->rollback);
            for (size_t j = 0; j < e->pools.n; j++)
                printf("    %s\n", e->pools.v[j]);
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
        json_object_set_new(o, "source", e->source[0] ? json_string(e->source) : json_null());
        json_object_set_new(o, "rollbackTo", e->rollback[0] ? json_string(e->rollback) : json_null());
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
    mcg_log_free(&log);
    mcg_repo_free(r);
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}
