/*
 * cmd_verify.c — `mcgit verify`: the signature verdict of every new commit.
 */
#include "cli/cli.h"
#include "gitops/gitops.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static int run(int argc, char **argv);

const mcg_cmd mcg_cmd_verify = {
    "verify",
    "verify the SSH signature of every new source commit",
    "usage: mcgit verify --repo R [--rev REV] [--since REV] --trust F [--revoked K]\n"
    "                    [-o json]\n"
    "\n"
    "Check every commit reachable from REV (default: the source branch, git\n"
    "config mcgit.sourceBranch, else main) and not from --since (default: the\n"
    "last commit mcgit verified under the same trust root, else the root),\n"
    "merges included. A commit is good when its SSH signature (namespace git)\n"
    "verifies at its committer time under the signers of every one of its\n"
    "parents (the trust root F, an allowed_signers file, plus\n"
    ".mcgit/allowed_signers as it stands in that parent when the parent is\n"
    "good; F alone for a first commit), and its committer time is at most an\n"
    "hour before its first parent's. See docs/concepts.md.\n"
    "With --revoked K (an OpenSSH KRL or a list of public keys, as git's\n"
    "gpg.ssh.revocationFile), a commit by a revoked key or certificate is bad.\n"
    "\n"
    "Prints one line per commit, parents first:\n"
    "  good <sha> <principal> <fingerprint>\n"
    "  bad <sha> <reason>\n"
    "When there is no new commit: one line, `nothing to verify: ...`.\n"
    "Exit status 1 if any commit is bad.\n"
    "\n"
    "  -o json   a JSON list of {\"commit\", \"status\", \"principal\", \"fingerprint\",\n"
    "            \"reason\"}\n",
    run,
};

/* The verdicts as one JSON document. */
static void print_json(const mcg_verify_report *rep, mcg_err *err)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < rep->n; i++) {
        const mcg_verdict *v = &rep->v[i];
        json_t *o = json_pack("{s:s,s:s}", "commit", v->sha, "status", v->good ? "good" : "bad");
        if (v->good) {
            json_object_set_new(o, "principal", json_string(v->principal));
            json_object_set_new(o, "fingerprint", json_string(v->fingerprint));
        } else {
            json_object_set_new(o, "reason", json_string(v->reason));
            if (v->fingerprint[0])
                json_object_set_new(o, "fingerprint", json_string(v->fingerprint));
        }
        json_array_append_new(arr, o);
    }
    mcg_buf b = MCG_BUF_INIT;
    mcg_json_canonical(arr, &b, err);
    fwrite(b.ptr, 1, b.len, stdout);
    mcg_buf_free(&b);
    json_decref(arr);
}

/* The verdicts as lines "good SHA PRINCIPAL FINGERPRINT" / "bad SHA REASON" (tip, since: what was
 * asked). */
static void print_text(const mcg_verify_report *rep, const char *tip, const char *since)
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
    }
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {
        {"help", no_argument, 0, 'h'},         {"repo", required_argument, 0, 'r'},
        {"rev", required_argument, 0, 'R'},    {"since", required_argument, 0, 's'},
        {"trust", required_argument, 0, 't'},  {"revoked", required_argument, 0, 'K'},
        {"output", required_argument, 0, 'o'}, {0, 0, 0, 0}};
    const char *repo = NULL, *rev = NULL, *since = NULL, *trust = NULL, *revoked = NULL,
               *format = "text";
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        switch (c) {
        case 'h':
            return mcg_cli_help(&mcg_cmd_verify);
        case 'r':
            repo = optarg;
            break;
        case 'R':
            rev = optarg;
            break;
        case 's':
            since = optarg;
            break;
        case 't':
            trust = optarg;
            break;
        case 'K':
            revoked = optarg;
            break;
        case 'o':
            format = optarg;
            break;
        default:
            return mcg_cli_usage_error(&mcg_cmd_verify, NULL);
        }
    }
    if (!repo || !trust || optind != argc)
        return mcg_cli_usage_error(&mcg_cmd_verify, "--repo and --trust are required");
    if (strcmp(format, "text") && strcmp(format, "json"))
        return mcg_cli_usage_error(&mcg_cmd_verify, "unknown output format '%s'", format);
    mcg_err err = {0};
    mcg_signers *root = NULL;
    mcg_repo *r = NULL, *helper = NULL;
    mcg_verify_report rep = {0};
    int rc = mcg_cli_load_trust(&root, trust, revoked, &err);
    if (!rc)
        rc = mcg_repo_open(&r, repo, &err);
    /* Both cores: a second handle on the repository for the second thread,
     * with its own object database (libgit2 1.5 holds an object database's
     * lock while it inflates, so one shared by two threads reads on one);
     * verdicts and messages are those of one pass, mcg_gitops_verify. */
    mcg_verify_range range = {.since = since};
    mcg_verify_threads th = {0};
    if (!rc) {
        range.tip = rev ? rev : mcg_repo_source_branch(r);
        if (mcg_repo_open(&helper, repo, NULL) == 0)
            th.helper = helper;
        rc = mcg_gitops_verify_ranges(&range, 1, r, &th, NULL, root, &err);
        rep = range.rep;
    }
    if (rc) {
        mcg_cli_error("verify", "%s", err.msg);
        goto out;
    }
    if (!strcmp(format, "json"))
        print_json(&rep, &err);
    else
        print_text(&rep, rev ? rev : mcg_repo_source_branch(r), since);
    if (rep.nbad)
        rc = MCG_ETRUST;
out:
    mcg_verify_report_free(&rep);
    mcg_repo_free(helper);
    mcg_repo_free(r);
    mcg_signers_free(root);
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}
