/*
 * cmd_verify.c — `mcgit verify`: the signature verdict of every new commit.
 */
#include "cli/cli.h"
#include "gitops/verify.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static int run(int argc, char **argv);

static const mcg_opt opts[] = {
    MCG_OPT_HELP,
    MCG_OPT_VALUE('r', "repo", "R", "the config repo"),
    MCG_OPT_VALUE('R', "rev", "REV", "verify up to REV (default: the source branch)"),
    MCG_OPT_VALUE('s', "since", "REV",
                  "verify what REV does not reach (default: the last\n"
                  "commit mcgit verified here, else the root)"),
    MCG_OPT_FLAG('A', "all", "verify the whole history, ignoring the last\nverified commit"),
    MCG_OPT_TRUST,
    MCG_OPT_REVOKED,
    MCG_OPT_SHORT_VALUE('o', "output", "text|json",
                        "text (default), or a JSON list of {\"commit\",\n"
                        "\"status\" (good, bad), \"principal\",\n"
                        "\"fingerprint\", \"reason\", \"untrusted\",\n"
                        "\"stillIn\"}"),
    MCG_OPT_END,
};

const mcg_cmd mcg_cmd_verify = {
    .name = "verify",
    .summary = "verify the SSH signature of every new source commit",
    .usage = "usage: mcgit verify --repo R [--rev REV] [--since REV | --all] --trust F\n"
             "                    [--revoked K] [-o json]\n"
             "\n"
             "Check every commit reachable from REV (default: the source branch, git\n"
             "config mcgit.sourceBranch, else main) and not from --since (default: the\n"
             "last commit mcgit verified here, else the root; --all: the root),\n"
             "merges included. A commit is good when its SSH signature (namespace git)\n"
             "verifies at its committer time under the signers of every one of its\n"
             "parents (the trust root F, an allowed_signers file, plus\n"
             ".mcgit/allowed_signers as it stands in that parent when the parent is\n"
             "good; F alone for a first commit), and its committer time is at most an\n"
             "hour before its first parent's. See docs/concepts.md.\n"
             "With --revoked K (an OpenSSH KRL or a list of public keys, as git's\n"
             "gpg.ssh.revocationFile), a commit by a revoked key or certificate is bad.\n"
             "A commit whose valid signature is by a key not trusted now (revoked,\n"
             "removed) is bad, whatever builds on it: nothing is vouched for by a later\n"
             "commit. History below the last commit verified here, or below a\n"
             "checkpoint the trust root names (`# mcgit-checkpoint: <commit>`), is not\n"
             "verified again: a trust change applies to what arrives after it\n"
             "(docs/trust.md). After revoking a key, `--all` (which ignores both) lists\n"
             "every commit it signed, and after each, one line per pool whose current\n"
             "rendered config still holds its changes (the blast radius):\n"
             "`still-in <sha> <pool>: <kind> <key>, ...`.\n"
             "\n"
             "Prints one line per commit, parents first:\n"
             "  good <sha> <principal> <fingerprint>\n"
             "  bad <sha> <reason>\n"
             "When there is no new commit: one line, `nothing to verify: ...`.\n"
             "Exit status 1 if any commit is bad.\n",
    .run = run,
    .opts = opts,
};

/* One verdict as an object of the -o json list. */
static json_t *verdict_json(const mcg_verdict *v, const mcg_strv *radius)
{
    json_t *o = json_pack("{s:s,s:s}", "commit", v->sha, "status", v->good ? "good" : "bad");
    if (v->good) {
        json_object_set_new(o, "principal", json_string(v->principal));
        json_object_set_new(o, "fingerprint", json_string(v->fingerprint));
    } else {
        json_object_set_new(o, "reason", json_string(v->reason));
        if (v->fingerprint[0])
            json_object_set_new(o, "fingerprint", json_string(v->fingerprint));
        if (v->held) /* a valid signature by a key not trusted now */
            json_object_set_new(o, "untrusted", json_true());
    }
    if (radius->n) {
        json_t *ra = json_array();
        for (size_t k = 0; k < radius->n; k++)
            json_array_append_new(ra, json_string(radius->v[k]));
        json_object_set_new(o, "stillIn", ra);
    }
    return o;
}

static void print_json(const mcg_verify_report *rep, const mcg_strv *radius)
{
    json_t *arr = json_array();
    mcg_err err = {0};
    for (size_t i = 0; i < rep->n; i++)
        json_array_append_new(arr, verdict_json(&rep->v[i], &radius[i]));
    mcg_buf b = MCG_BUF_INIT;
    mcg_json_canonical(arr, &b, &err);
    fwrite(b.ptr, 1, b.len, stdout);
    mcg_buf_free(&b);
    json_decref(arr);
}

static void print_text(const mcg_verify_report *rep, const mcg_strv *radius, const char *tip,
                       const char *since)
{
    if (!rep->n)
        printf("nothing to verify: no commit of %s is newer than %s\n", tip,
               since ? since : "the last verified one");
    for (size_t i = 0; i < rep->n; i++) {
        const mcg_verdict *v = &rep->v[i];
        if (v->good)
            printf("good %s %s %s\n", v->sha, v->principal, v->fingerprint);
        else
            printf("bad %s %s\n", v->sha, v->reason);
        for (size_t k = 0; k < radius[i].n; k++)
            printf("still-in %s %s\n", v->sha, radius[i].v[k]);
    }
}

/* The command line, as run reads it. */
typedef struct verify_args {
    const char *repo, *rev, *since, *trust, *revoked, *format;
    bool all;
} verify_args;

/* Parse the options into a: -1 when run goes on, else the exit status. */
static int parse_args(int argc, char **argv, verify_args *a)
{
    const mcg_optbind binds[] = {{'r', &a->repo, NULL},   {'R', &a->rev, NULL},
                                 {'s', &a->since, NULL},  {'A', NULL, &a->all},
                                 {'t', &a->trust, NULL},  {'K', &a->revoked, NULL},
                                 {'o', &a->format, NULL}, MCG_BIND_END};
    int ex = mcg_cli_parse(&mcg_cmd_verify, argc, argv, binds);
    if (ex >= 0)
        return ex;
    if (!a->repo || !a->trust || optind != argc)
        return mcg_cli_usage_error(&mcg_cmd_verify, "--repo and --trust are required");
    if (a->all && a->since)
        return mcg_cli_usage_error(&mcg_cmd_verify, "--all and --since exclude each other");
    if (strcmp(a->format, "text") && strcmp(a->format, "json"))
        return mcg_cli_usage_error(&mcg_cmd_verify, "unknown output format '%s'", a->format);
    return -1;
}

/* The verdicts printed; with --all, for each commit by a key not trusted
 * now, what it left in the pools. */
static void report(const verify_args *a, const mcg_verify_report *rep, mcg_repo *r)
{
    mcg_strv *radius = mcg_calloc(rep->n ? rep->n : 1, sizeof(*radius));
    for (size_t i = 0; a->all && i < rep->n; i++)
        if (rep->v[i].held)
            mcg_gitops_blast_radius(&radius[i], r, rep->v[i].sha, NULL);
    if (!strcmp(a->format, "json"))
        print_json(rep, radius);
    else
        print_text(rep, radius, a->rev ? a->rev : mcg_repo_source_branch(r), a->since);
    for (size_t i = 0; i < rep->n; i++)
        mcg_strv_free(&radius[i]);
    free(radius);
}

static int run(int argc, char **argv)
{
    verify_args a = {.format = "text"};
    int st = parse_args(argc, argv, &a);
    if (st >= 0)
        return st;
    mcg_err err = {0};
    mcg_signers *root = NULL;
    mcg_repo *r = NULL, *helper = NULL;
    mcg_verify_report rep = {0};
    int rc = mcg_gitops_load_trust(&root, a.trust, a.revoked, &err);
    if (!rc)
        rc = mcg_repo_open(&r, a.repo, &err);
    /* Both cores: a second handle on the repository for the second thread,
     * with its own object database (libgit2 1.5 holds an object database's
     * lock while it inflates, so one shared by two threads reads on one);
     * verdicts and messages are those of one pass, mcg_gitops_verify. */
    mcg_verify_range range = {.since = a.since};
    mcg_verify_threads th = {0};
    if (!rc) {
        range.tip = a.rev ? a.rev : mcg_repo_source_branch(r);
        if (mcg_repo_open(&helper, a.repo, NULL) == 0)
            th.helper = helper;
        mcg_verify_opts vo = {.from_root = a.all};
        rc = mcg_gitops_verify_ranges(&range, 1, r, &th, &vo, root, &err);
        rep = range.rep;
    }
    if (rc) {
        mcg_cli_error("verify", "%s", err.msg);
        goto out;
    }
    report(&a, &rep, r);
    if (rep.nbad)
        rc = MCG_ETRUST;
out:
    mcg_verify_report_free(&rep);
    mcg_repo_free(helper);
    mcg_repo_free(r);
    mcg_signers_free(root);
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}
