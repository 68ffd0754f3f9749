/*
 * cmd_bundle.c — `mcgit bundle create|verify|import`: config history on a
 * USB stick, as standard git bundles, verified before anything moves.
 */
#include "cli/cli.h"
#include "gitops/verify.h"
#include "bundle/bundle.h"
#include "trust/trust.h"
#include "osenv/osenv.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int run(int argc, char **argv);

/* The subcommands, for the options only some take. */
enum { SUB_CREATE = 1, SUB_CHECK = 2 /* verify, import */ };

static const mcg_opt bundle_opts[] = {
    MCG_OPT_HELP,
    MCG_OPT_VALUE('r', "repo", "R", "the config repo"),
    MCG_OPT_SUB_VALUE(SUB_CREATE, 's', "since", "REV",
                      "create: incremental: only what is new since REV,\n"
                      "which becomes the bundle's prerequisite (the\n"
                      "importing repo must have it); its pack is thin, as\n"
                      "git's: objects may be deltas on the prerequisite's\n"
                      "trees and blobs"),
    MCG_OPT_SUB_VALUE(SUB_CREATE, 'f', "ref", "REF",
                      "create: bundle REF instead (repeatable: main, v1.2,\n"
                      "refs/x/y)"),
    MCG_OPT_SUB_VALUE(SUB_CHECK, 't', "trust", "F",
                      "verify, import: the trust root, an allowed_signers\n"
                      "file"),
    MCG_OPT_SUB_VALUE(SUB_CHECK, 'K', "revoked", "K",
                      "verify, import: a KRL or a list of public keys; a\n"
                      "commit by a revoked key refuses the bundle"),
    MCG_OPT_SHORT_FLAG('q', "quiet", "no progress bar and no summary line on standard\nerror"),
    MCG_OPT_END,
};

const mcg_cmd mcg_cmd_bundle = {
    .name = "bundle",
    .summary = "move config history as a git bundle file (air-gapped sites)",
    .usage = "usage: mcgit bundle create --repo R FILE [--since REV] [--ref REF ...] [-q]\n"
             "       mcgit bundle verify --repo R FILE --trust F [--revoked K] [-q]\n"
             "       mcgit bundle import --repo R FILE --trust F [--revoked K] [-q]\n"
             "\n"
             "Standard git bundles (`# v2 git bundle`): plain git reads what mcgit writes\n"
             "(`git bundle verify`, `git clone FILE`) and mcgit reads what git writes\n"
             "(`git bundle create FILE main`, v2, or v3 with object-format sha1).\n"
             "\n"
             "create   write a bundle of R to FILE (`-`: standard output), atomically.\n"
             "         By default it holds HEAD, the source branch and every tag.\n"
             "\n"
             "verify   report what `import` would do, changing nothing: each ref's old\n"
             "         and new value, every new commit with its signer (principal and key\n"
             "         fingerprint), the plan of the new source tip (as `mcgit plan`\n"
             "         prints it: per pool old -> new, the changes and their disruption\n"
             "         actions), and whether the bundle would be accepted (exit 0) or\n"
             "         refused (exit 1, with the reason). import prints the same plan.\n"
             "\n"
             "import   check the header and that every prerequisite is present; index\n"
             "         the pack into a quarantine object directory; verify every new\n"
             "         commit's signature against the trust root F (and the repo's own\n"
             "         .mcgit/allowed_signers, as `mcgit verify` does); require every ref\n"
             "         update to be a fast-forward (a stale bundle that would roll a\n"
             "         branch back is refused; an identical ref is left alone); only then\n"
             "         move the objects in and the refs forward, and render the new\n"
             "         source tip (as `mcgit render --repo` does). Any refusal leaves the\n"
             "         repository's refs and object files exactly as they were. Branches\n"
             "         and tags are imported; HEAD, the rendered branch (made locally)\n"
             "         and other namespaces are skipped. An accepted import (also one\n"
             "         already up to date) is counted in the repository, which a\n"
             "         controller exports as mcgit_bundle_imports_total.\n"
             "\n"
             "Before the pack is indexed, its delta graph is resolved: a delta whose\n"
             "result is its own base, a cycle of deltas, a base neither the pack nor the\n"
             "repo has, a chain over 1000 deltas deep, or an object that would inflate\n"
             "past 16 MiB (or the pack past 1024 times its size plus 256 MiB) is refused\n"
             "in one line. More than 256 refs move by one write of packed-refs (no\n"
             "reflog entries for them), all at once or none.\n"
             "\n"
             "verify and import read FILE `-` from standard input.\n"
             "\n"
             "A progress bar is drawn on standard error when it is a terminal. A command\n"
             "interrupted (Ctrl-C, SIGTERM, SIGHUP) removes its quarantine or temp file;\n"
             "one left by kill -9 is removed by the next verify or import of the repo.\n",
    .run = run,
    .opts = bundle_opts,
};

/*
 * Ctrl-C, SIGTERM or a hang-up in the middle of a bundle command: remove the
 * quarantine or temp file it has made, then die of the signal as before.
 */
static void on_signal(int sig)
{
    mcg_bundle_signal_cleanup();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void catch_signals(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaddset(&sa.sa_mask, sigs[i]);
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        struct sigaction old;
        /* A signal ignored by whoever started us (nohup) stays ignored. */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(sigs[i], &sa, NULL);
    }
}

/* A one-line bar on stderr, redrawn at most every 1%. */
typedef struct progress_bar {
    const char *what; /* the step being drawn, NULL none */
    int last;         /* last percentage drawn, -1 none */
} progress_bar;

/* mcg_bundle_progress's callback: draw step `what` at cur of total; NULL ends the line. */
static void progress_draw(void *ctx, const char *what, uint64_t cur, uint64_t total)
{
    progress_bar *p = ctx;
    if (!what) {
        if (p->what && p->last >= 0)
            mcg_log_partial("\n");
        p->what = NULL;
        p->last = -1;
        return;
    }
    if (!total)
        return;
    int pct = (int)(cur * 100 / total);
    if (what != p->what) {
        if (p->what && p->last >= 0)
            mcg_log_partial("\n");
        p->what = what;
        p->last = -1;
    }
    if (pct == p->last)
        return;
    p->last = pct;
    char bar[31];
    int fill = pct * 30 / 100;
    for (int i = 0; i < 30; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[30] = '\0';
    mcg_log_partial("\r%-20s [%s] %3d%% (%llu/%llu)", what, bar, pct, (unsigned long long)cur,
                    (unsigned long long)total);
}

/* The progress display: a bar when stderr is a terminal and not -q, else none. */
static mcg_bundle_progress progress_for(progress_bar *bar)
{
    mcg_bundle_progress p = {NULL, NULL};
    bar->what = NULL;
    bar->last = -1;
    if (isatty(STDERR_FILENO) && mcg_verbosity > 0) {
        p.fn = progress_draw;
        p.ctx = bar;
    }
    return p;
}

static int do_create(int argc, char **argv)
{
    const char *repo = NULL;
    mcg_bundle_create_opts o = {0};
    mcg_strv refs = {0};
    int c, rc, ex;
    const mcg_optbind binds[] = {{'r', &repo, NULL}, {'s', &o.since, NULL}, MCG_BIND_END};
    optind = 1;
    while ((c = mcg_cli_parse_next(&mcg_cmd_bundle, SUB_CREATE, argc, argv, binds, &ex)) > 0) {
        if (c == 'q')
            mcg_verbosity = 0;
        else /* 'f' */
            mcg_strv_push(&refs, optarg);
    }
    if (c < 0) {
        mcg_strv_free(&refs);
        return ex;
    }
    if (!repo || optind + 1 != argc) {
        mcg_strv_free(&refs);
        return mcg_cli_usage_error(&mcg_cmd_bundle, "create needs --repo R and one FILE");
    }
    o.refs = (const char *const *)refs.v;
    o.nrefs = refs.n;
    progress_bar bar;
    o.progress = progress_for(&bar);
    mcg_err err = {0};
    mcg_repo *r = NULL;
    mcg_bundle_info info = {0};
    rc = mcg_repo_open(&r, repo, &err);
    if (!rc) {
        catch_signals();
        rc = mcg_bundle_create(&info, r, argv[optind], &o, &err);
    }
    if (rc)
        mcg_cli_error("bundle", "%s", err.msg);
    else
        mcg_cli_info("bundle: %zu ref%s, %zu prerequisite%s, %zu objects, %llu bytes", info.nrefs,
                     info.nrefs == 1 ? "" : "s", info.nprerequisites,
                     info.nprerequisites == 1 ? "" : "s", info.nobjects,
                     (unsigned long long)info.bytes);
    mcg_repo_free(r);
    mcg_strv_free(&refs);
    if (rc == MCG_EUSAGE)
        return MCG_EXIT_USAGE;
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}

static const char *action_text(const mcg_bundle_ref *br)
{
    switch (br->action) {
    case MCG_BUNDLE_SKIP:
        return "skipped";
    case MCG_BUNDLE_SAME:
        return "up to date";
    case MCG_BUNDLE_CREATE:
        return "new";
    case MCG_BUNDLE_FORWARD:
        return "fast-forward";
    case MCG_BUNDLE_STALE:
        return "stale: refused";
    case MCG_BUNDLE_REWRITE:
        return "not a fast-forward: refused";
    }
    return "?";
}

/* The report `verify` prints. */
static void print_report(const mcg_bundle_report *rep, const char *file)
{
    if (!rep->version)
        return;
    printf("bundle %s: v%d, %zu ref%s, %zu prerequisite%s", file, rep->version, rep->nrefs,
           rep->nrefs == 1 ? "" : "s", rep->prerequisites.n, rep->prerequisites.n == 1 ? "" : "s");
    if (rep->pack_bytes)
        printf(", %zu objects in %llu bytes", rep->objects, (unsigned long long)rep->pack_bytes);
    if (rep->prechecked)
        printf(", %zu commit signature%s checked while indexing", rep->prechecked,
               rep->prechecked == 1 ? "" : "s");
    printf("\n");
    for (size_t i = 0; i < rep->prerequisites.n; i++)
        printf("prerequisite %s\n", rep->prerequisites.v[i]);
    for (size_t i = 0; i < rep->nrefs; i++) {
        const mcg_bundle_ref *br = &rep->refs[i];
        printf("%s %s -> %s (%s", br->name, br->old_sha[0] ? br->old_sha : "(none)", br->new_sha,
               action_text(br));
        if (br->note)
            printf(": %s", br->note);
        if (br->verified_with)
            printf(", checked with %s", br->verified_with);
        else if (br->verify.n)
            printf(", %zu commit%s checked", br->verify.n, br->verify.n == 1 ? "" : "s");
        printf(")\n");
        for (size_t j = 0; j < br->verify.n; j++) {
            const mcg_verdict *v = &br->verify.v[j];
            if (v->good)
                printf("  %s good %s %s\n", v->sha, v->principal, v->fingerprint);
            else
                printf("  %s BAD %s\n", v->sha, v->reason);
        }
    }
}

/* The plan of the bundle's source tip against the rendered branch, or why there is none. */
static void print_plan(const mcg_bundle_report *rep)
{
    for (size_t i = 0; i < rep->plan.n; i++)
        printf("%s\n", rep->plan.v[i]);
    if (rep->plan_error)
        printf("plan: not available: %s\n", rep->plan_error);
}

/* What an import moved: each ref created or forwarded, the plan, the render. */
static void print_imported(const mcg_bundle_report *rep, mcg_repo *r)
{
    for (size_t i = 0; i < rep->nrefs; i++) {
        const mcg_bundle_ref *br = &rep->refs[i];
        if (br->action != MCG_BUNDLE_CREATE && br->action != MCG_BUNDLE_FORWARD)
            continue;
        printf("%s %s -> %s (", br->name, br->old_sha[0] ? br->old_sha : "(none)", br->new_sha);
        if (br->verified_with)
            printf("verified with %s)\n", br->verified_with);
        else
            printf("%zu commit%s verified)\n", br->verify.n, br->verify.n == 1 ? "" : "s");
    }
    print_plan(rep);
    fflush(stdout); /* the render's line after the refs it is about, on a shared terminal too */
    if (rep->rendered && rep->render.created)
        mcg_cli_info("rendered source commit %.12s: branch %s is now %.12s", rep->render.source,
                     mcg_repo_rendered_branch(r), rep->render.rendered);
}

static int do_check(int argc, char **argv, bool import)
{
    const char *repo = NULL, *trust = NULL, *revoked = NULL;
    int c, ex;
    const mcg_optbind binds[] = {
        {'r', &repo, NULL}, {'t', &trust, NULL}, {'K', &revoked, NULL}, MCG_BIND_END};
    optind = 1;
    while ((c = mcg_cli_parse_next(&mcg_cmd_bundle, SUB_CHECK, argc, argv, binds, &ex)) > 0)
        mcg_verbosity = 0; /* 'q' */
    if (c < 0)
        return ex;
    if (!repo || !trust || optind + 1 != argc)
        return mcg_cli_usage_error(&mcg_cmd_bundle, "%s needs --repo R, --trust F and one FILE",
                                   import ? "import" : "verify");
    const char *file = argv[optind];
    mcg_err err = {0};
    mcg_signers *root = NULL;
    mcg_repo *r = NULL;
    mcg_bundle_report rep = {0};
    mcg_diags diags = {0};
    int rc = mcg_gitops_load_trust(&root, trust, revoked, &err);
    if (!rc)
        rc = mcg_repo_open(&r, repo, &err);
    if (!rc) {
        progress_bar bar;
        mcg_bundle_progress prog = progress_for(&bar);
        catch_signals();
        if (import)
            rc = mcg_bundle_import(&rep, r, file, root, &prog, &diags, &err);
        else
            rc = mcg_bundle_verify(&rep, r, file, root, &prog, &err);
    }
    if (rep.newest[0]) {
        /* freeze protection: how old is what this bundle brings? */
        char when[32], age[32];
        mcg_human_duration((int64_t)time(NULL) - rep.newest_time, age);
        mcg_cli_info("newest source commit %.12s, %s (%s old)", rep.newest,
                     mcg_time_iso(when, rep.newest_time), age);
    }
    if (!import) {
        print_report(&rep, file);
        print_plan(&rep);
        if (rep.version)
            printf("%s\n", rc ? "refused" : "accepted");
    } else if (rep.imported) {
        print_imported(&rep, r);
    } else if (!rc) {
        mcg_cli_info("bundle %s: already up to date; nothing imported", file);
    }
    if (rc) {
        mcg_cli_diags("bundle", &diags);
        mcg_cli_error("bundle", "%s", err.msg);
    }
    mcg_diags_free(&diags);
    mcg_bundle_report_free(&rep);
    mcg_repo_free(r);
    mcg_signers_free(root);
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}

static int run(int argc, char **argv)
{
    if (argc < 2)
        return mcg_cli_usage_error(&mcg_cmd_bundle, "expected create, verify or import");
    const char *sub = argv[1];
    if (!strcmp(sub, "-h") || !strcmp(sub, "--help") || !strcmp(sub, "help"))
        return mcg_cli_help(&mcg_cmd_bundle);
    if (!strcmp(sub, "create"))
        return do_create(argc - 1, argv + 1);
    if (!strcmp(sub, "verify"))
        return do_check(argc - 1, argv + 1, false);
    if (!strcmp(sub, "import"))
        return do_check(argc - 1, argv + 1, true);
    return mcg_cli_usage_error(&mcg_cmd_bundle, "unknown subcommand '%s'", sub);
}
