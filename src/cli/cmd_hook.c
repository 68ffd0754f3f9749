/*
 * cmd_hook.c — `mcgit hook`: install git server/client hooks, and the code
 * they run.
 *
 *   mcgit hook install --repo R --trust F
 *   mcgit hook pre-receive  --repo R --trust F   (reads "<old> <new> <ref>" lines)
 *   mcgit hook post-receive --repo R --trust F
 */
#include "cli/cli.h"
#include "gitops/gitops.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <git2.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int run(int argc, char **argv);

const mcg_cmd mcg_cmd_hook = {
    "hook",
    "install the git hooks, or run one",
    "usage: mcgit hook install --repo R --trust F\n"
    "       mcgit hook pre-receive --repo R --trust F\n"
    "       mcgit hook post-receive --repo R --trust F\n"
    "\n"
    "install       put pre-receive, post-receive and pre-commit into R's hooks\n"
    "              directory and record F (made absolute) and this mcgit binary in\n"
    "              R's git config (mcgit.trust, mcgit.binary).\n"
    "pre-receive   read `<old> <new> <ref>` lines on stdin; refuse (exit 1) a push\n"
    "              to the source branch if any new commit is unsigned or untrusted,\n"
    "              the update is not a fast-forward, or the new tree does not\n"
    "              validate; refuse any push to the rendered branch. Each refusal\n"
    "              is one line, which the pusher sees as `remote: ...`.\n"
    "post-receive  render the new tip of the source branch (as `mcgit render\n"
    "              --repo`).\n"
    "The pre-commit hook runs `mcgit validate` on the working tree.\n",
    run,
};

static int install(const char *repo, const char *trust)
{
    mcg_err err = {0};
    git_repository *g = NULL;
    git_config *cfg = NULL;
    char trust_abs[PATH_MAX], self[PATH_MAX];
    int rc = 0;
    git_libgit2_init();
    if (!realpath(trust, trust_abs)) {
        mcg_cli_error("hook", "%s: %s", trust, strerror(errno));
        rc = MCG_EIO;
        goto out;
    }
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
        mcg_cli_error("hook", "cannot find the mcgit binary: %s", strerror(errno));
        rc = MCG_EIO;
        goto out;
    }
    self[n] = '\0';
    if (git_repository_open_ext(&g, repo, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) != 0) {
        mcg_git_err_print:;
        const git_error *e = git_error_last();
        mcg_cli_error("hook", "%s: %s", repo, e ? e->message : "not a git repository");
        rc = MCG_EIO;
        goto out;
    }
    char *hooks = mcg_sprintf("%shooks", git_repository_path(g));
    mkdir(hooks, 0755);
    for (const mcg_template_file *f = mcg_hook_files; f->path && !rc; f++) {
        char *path = mcg_sprintf("%s/%s", hooks, f->path);
        rc = mcg_write_file_atomic(path, f->data, f->len, 0755, &err);
        if (!rc && chmod(path, 0755) != 0)
            rc = mcg_err_set(&err, MCG_EIO, "%s: %s", path, strerror(errno));
        if (rc)
            mcg_cli_error("hook", "%s", err.msg);
        else
            mcg_cli_info("installed %s", path);
        free(path);
    }
    free(hooks);
    if (rc)
        goto out;
    if (git_repository_config(&cfg, g) != 0 ||
        git_config_set_string(cfg, "mcgit.trust", trust_abs) != 0 ||
        git_config_set_string(cfg, "mcgit.binary", self) != 0)
        goto mcg_git_err_print;
out:
    git_config_free(cfg);
    git_repository_free(g);
    git_libgit2_shutdown();
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}

static bool is_zero(const char *sha)
{
    return strspn(sha, "0") == strlen(sha);
}

/* Check one ref update; print one line per refusal reason. */
static int check_update(mcg_repo *r, const mcg_signers *root, const char *old, const char *new,
                        const char *ref)
{
    char *src = mcg_sprintf("refs/heads/%s", mcg_repo_source_branch(r));
    char *ren = mcg_sprintf("refs/heads/%s", mcg_repo_rendered_branch(r));
    int rc = 0;
    if (!strcmp(ref, ren)) {
        fprintf(stderr, "mcgit: refusing %s: the rendered branch is written by mcgit only\n", ref);
        rc = MCG_ETRUST;
        goto out;
    }
    if (strcmp(ref, src) != 0)
        goto out;
    if (is_zero(new)) {
        fprintf(stderr, "mcgit: refusing %s: the source branch cannot be deleted\n", ref);
        rc = MCG_ETRUST;
        goto out;
    }
    if (!is_zero(old) && !mcg_repo_descends(r, new, old)) {
        fprintf(stderr, "mcgit: refusing %s: %.12s is not a fast-forward of %.12s\n", ref, new, old);
        rc = MCG_ECONFLICT;
        goto out;
    }
    mcg_verify_report rep = {0};
    mcg_err err = {0};
    if (mcg_gitops_verify(&rep, (mcg_repo *)r, new, is_zero(old) ? NULL : old, root, &err) != 0) {
        fprintf(stderr, "mcgit: refusing %s: %s\n", ref, err.msg);
        rc = MCG_EIO;
        goto out;
    }
    for (size_t i = 0; i < rep.n; i++)
        if (!rep.v[i].good)
            fprintf(stderr, "mcgit: refusing %s: commit %.12s: %s\n", ref, rep.v[i].sha,
                    rep.v[i].reason);
    if (rep.nbad)
        rc = MCG_ETRUST;
    mcg_verify_report_free(&rep);
    if (rc)
        goto out;
    mcg_model *m = NULL;
    mcg_render *rd = NULL;
    mcg_diags d = {0};
    if (mcg_gitops_load_commit(&m, r, new, &d, &err) == 0)
        mcg_render_model(&rd, m, &d);
    if (m && !m->settings.warnings_as_errors)
        for (size_t i = 0; i < m->warnings.count; i++)
            fprintf(stderr, "mcgit: %.12s: warning: %s\n", new, m->warnings.msgs[i]);
    for (size_t i = 0; i < d.count; i++)
        fprintf(stderr, "mcgit: refusing %s: %s\n", ref, d.msgs[i]);
    if (d.count)
        rc = MCG_EINVAL;
    mcg_diags_free(&d);
    mcg_render_free(rd);
    mcg_model_free(m);
out:
    free(src);
    free(ren);
    return rc;
}

static int receive(const char *which, const char *repo, const char *trust)
{
    mcg_err err = {0};
    mcg_signers *root = NULL;
    mcg_repo *r = NULL;
    int rc = mcg_cli_load_trust(&root, trust, &err);
    if (!rc)
        rc = mcg_repo_open(&r, repo, &err);
    if (rc) {
        fprintf(stderr, "mcgit: refusing push: %s\n", err.msg);
        goto out;
    }
    char line[1024];
    bool pre = !strcmp(which, "pre-receive");
    bool source_moved = false;
    while (fgets(line, sizeof(line), stdin)) {
        char old[64], new[64], ref[900];
        if (sscanf(line, "%63s %63s %899s", old, new, ref) != 3)
            continue;
        char *src = mcg_sprintf("refs/heads/%s", mcg_repo_source_branch(r));
        if (!strcmp(ref, src) && !is_zero(new))
            source_moved = true;
        free(src);
        if (pre) {
            int one = check_update(r, root, old, new, ref);
            if (one && !rc)
                rc = one;
        }
    }
    if (!pre && source_moved) {
        mcg_render_result res;
        mcg_diags d = {0};
        rc = mcg_gitops_render(&res, NULL, NULL, r, NULL, root, &d, &err);
        for (size_t i = 0; i < d.count; i++)
            fprintf(stderr, "mcgit: %s\n", d.msgs[i]);
        if (rc)
            fprintf(stderr, "mcgit: render failed: %s\n", err.msg);
        else if (res.created)
            fprintf(stderr, "mcgit: rendered %.12s as %s %.12s\n", res.source,
                    mcg_repo_rendered_branch(r), res.rendered);
        mcg_diags_free(&d);
    }
out:
    mcg_repo_free(r);
    mcg_signers_free(root);
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {{"help", no_argument, 0, 'h'},
                                         {"repo", required_argument, 0, 'r'},
                                         {"trust", required_argument, 0, 't'},
                                         {0, 0, 0, 0}};
    const char *repo = NULL, *trust = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'h': return mcg_cli_help(&mcg_cmd_hook);
        case 'r': repo = optarg; break;
        case 't': trust = optarg; break;
        default: return mcg_cli_usage_error(&mcg_cmd_hook, NULL);
        }
    }
    if (argc - optind != 1 || !repo || !trust)
        return mcg_cli_usage_error(&mcg_cmd_hook, "expected a subcommand, --repo and --trust");
    const char *sub = argv[optind];
    if (!strcmp(sub, "install"))
        return install(repo, trust);
    if (!strcmp(sub, "pre-receive") || !strcmp(sub, "post-receive"))
        return receive(sub, repo, trust);
    return mcg_cli_usage_error(&mcg_cmd_hook, "unknown subcommand '%s'", sub);
}
