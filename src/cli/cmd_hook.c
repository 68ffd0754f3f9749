/*
 * cmd_hook.c — `mcgit hook`: install git server/client hooks, and the code
 * they run.
 *
 *   mcgit hook install --repo R --trust F
 *   mcgit hook pre-receive  --repo R --trust F   (reads "<old> <new> <ref>" lines)
 *   mcgit hook post-receive --repo R --trust F
 */
#include "cli/cli.h"
#include "gitops/verify.h"
#include "gitops/receive.h"
#include "metrics/metrics.h"
#include "osenv/osenv.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int run(int argc, char **argv);

static const mcg_opt hook_opts[] = {
    MCG_OPT_HELP,
    MCG_OPT_VALUE('r', "repo", "R", "the repository whose hooks these are"),
    MCG_OPT_TRUST,
    MCG_OPT_VALUE('K', "revoked", "K",
                  "an OpenSSH KRL or a list of public keys; a commit\n"
                  "by a revoked key or certificate is refused"),
    MCG_OPT_VALUE('s', "source-branch", "B", "install: the source branch (default: main)"),
    MCG_OPT_VALUE('U', "webhook-url", "URL", "install, post-receive: tell the controller there"),
    MCG_OPT_VALUE('T', "webhook-token-file", "T", "the bearer token for --webhook-url"),
    MCG_OPT_END,
};

const mcg_cmd mcg_cmd_hook = {
    .name = "hook",
    .summary = "install the git hooks, or run one",
    .usage = "usage: mcgit hook install --repo R --trust F [--revoked K] [--source-branch B]\n"
             "                          [--webhook-url URL [--webhook-token-file T]]\n"
             "       mcgit hook pre-receive --repo R --trust F [--revoked K]\n"
             "       mcgit hook post-receive --repo R --trust F [--revoked K]\n"
             "                          [--webhook-url URL [--webhook-token-file T]]\n"
             "\n"
             "install       put pre-receive, post-receive and (unless R is bare)\n"
             "              pre-commit into R's hooks directory, record F (made\n"
             "              absolute) in R's git config (mcgit.trust), B as\n"
             "              mcgit.sourceBranch when given (default main), and point HEAD\n"
             "              at the source branch. The hooks run `mcgit` from PATH, or\n"
             "              git config mcgit.binary when set; when they cannot run it,\n"
             "              they say so in one line, and pre-receive refuses the push\n"
             "              (install warns when it finds no mcgit there, and notes when\n"
             "              the one on your PATH is not on the PATH sshd gives a push\n"
             "              over ssh). With --revoked, the revocation list K too\n"
             "              (mcgit.revoked, made absolute; it must exist: an empty file\n"
             "              revokes nothing). Without it a recorded mcgit.revoked is kept\n"
             "              (`git config --unset mcgit.revoked` removes it). The hooks\n"
             "              pass it to mcgit, and a recorded K that cannot be read\n"
             "              refuses every push.\n"
             "pre-receive   read `<old> <new> <ref>` lines on stdin; refuse (exit 1) a push\n"
             "              to the source branch if any new commit is unsigned (with a\n"
             "              hint: `git commit --amend -S --no-edit`) or untrusted\n"
             "              (also against this host's clock), the update is not a\n"
             "              fast-forward, or the new tree does not validate; refuse any\n"
             "              push to refs/mcgit/* or the rendered branch, a moved tag, and\n"
             "              a new tag whose history does not verify. Other refs are\n"
             "              accepted and read by nothing (a push to another branch gets\n"
             "              a `mcgit: note:` line naming the source branch). Each\n"
             "              refusal is one line, which the pusher sees as `remote: ...`.\n"
             "              An accepted push to the source branch is answered with its\n"
             "              warnings and its plan (`remote: mcgit: plan: ...`, as\n"
             "              `mcgit plan` prints it).\n"
             "post-receive  render the new tip of the source branch (as `mcgit render\n"
             "              --repo`), then, with a webhook URL (recorded by install as\n"
             "              mcgit.webhookURL, the token file T made absolute as\n"
             "              mcgit.webhookTokenFile), POST to it with\n"
             "              `Authorization: Bearer <the token in T>` so a controller\n"
             "              started with --webhook-token-file passes at once, e.g.\n"
             "              http://controller:8080/hooks/git. At most 2 s; a failure is a\n"
             "              `remote: mcgit: warning:` line and never fails the push.\n"
             "              `--webhook-url ''` at install removes both settings.\n"
             "The pre-commit hook runs `mcgit validate` on the working tree.\n",
    .run = run,
    .opts = hook_opts,
};

/* The PATH Debian's sshd gives the commands it runs: a push over ssh runs the hooks with it. */
#define SSHD_PATH "/usr/local/bin:/usr/bin:/bin:/usr/games"

/* Whether name (a path when it holds a '/', else looked up in path) is an
 * executable file: what the hooks check before they run it. */
static bool runnable_in(const char *name, const char *path)
{
    struct stat st;
    if (strchr(name, '/'))
        return stat(name, &st) == 0 && S_ISREG(st.st_mode) && access(name, X_OK) == 0;
    char *dirs = mcg_strdup(path && *path ? path : "/usr/bin:/bin"), *save = NULL;
    bool found = false;
    for (char *d = strtok_r(dirs, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
        char *p = mcg_sprintf("%s/%s", *d ? d : ".", name);
        found = stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
        free(p);
    }
    free(dirs);
    return found;
}

static bool runnable(const char *name)
{
    return runnable_in(name, mcg_env_get("PATH"));
}

/* Say which mcgit the hooks will run, and warn when they cannot run it (the
 * note on sshd's PATH only when something was installed: a no-op is one line). */
static void check_binary(const char *binary, const char *repo, bool changed)
{
    if (binary)
        mcg_cli_info("the hooks run %s (git config mcgit.binary)", binary);
    if (changed && !binary && runnable("mcgit") && !runnable_in("mcgit", SSHD_PATH))
        mcg_log_line("hook",
                     "note: mcgit is on your PATH but not on the PATH sshd gives a push over ssh "
                     "(%s): for pushes over ssh, install it there or `git -C %s config "
                     "mcgit.binary /absolute/path/to/mcgit`",
                     SSHD_PATH, repo);
    if (!runnable(binary ? binary : "mcgit"))
        mcg_log_line(
            "hook",
            "warning: the hooks cannot run %s (not found or not executable), so "
            "every push is refused until %s",
            binary ? binary : "mcgit from PATH",
            binary ? "it is there, or `git config --unset mcgit.binary` lets them use mcgit "
                     "from PATH"
                   : "mcgit is on the PATH the hooks get, or git config mcgit.binary names it");
}

static int install(const char *repo, const char *trust, const char *revoked,
                   const char *source_branch, const char *url, const char *token)
{
    mcg_err err = {0};
    mcg_strv installed = {0};
    mcg_signers *check = NULL;
    char trust_abs[PATH_MAX], revoked_abs[PATH_MAX], token_abs[PATH_MAX];
    if (token && !realpath(token, token_abs)) {
        mcg_cli_error_os("hook", errno, "%s", token);
        return MCG_EXIT_FAIL;
    }
    if (!realpath(trust, trust_abs)) {
        mcg_cli_error_os("hook", errno, "trust root (an allowed_signers file): %s", trust);
        return MCG_EXIT_FAIL;
    }
    if (revoked && !realpath(revoked, revoked_abs)) {
        mcg_err e = {0};
        mcg_err_set_os(&e, MCG_EIO, errno, "revocation list (--revoked: a KRL or public keys) %s",
                       revoked);
        mcg_cli_error("hook", "%s (an empty file revokes nothing; without --revoked none is used)",
                      e.msg);
        return MCG_EXIT_FAIL;
    }
    /* record nothing the hooks would then refuse every push over */
    if (mcg_gitops_load_trust(&check, trust_abs, revoked ? revoked_abs : NULL, &err) != 0) {
        mcg_cli_error("hook", "%s", err.msg);
        return MCG_EXIT_FAIL;
    }
    mcg_signers_free(check);
    mcg_hook_install_opts o = {.repo = repo,
                               .trust = trust_abs,
                               .revoked = revoked ? revoked_abs : NULL,
                               .source_branch = source_branch,
                               .webhook_url = url,
                               .webhook_token = token ? token_abs : NULL};
    bool changed = false;
    char *binary = NULL;
    int rc = mcg_gitops_hook_install(&o, &installed, &changed, &binary, &err);
    for (size_t i = 0; i < installed.n; i++)
        mcg_cli_info("installed %s", installed.v[i]);
    if (rc)
        mcg_cli_error("hook", "%s", err.msg);
    else if (!changed)
        printf("hooks of %s already installed with these settings; nothing changed\n", repo);
    if (!rc)
        check_binary(binary, repo, changed);
    free(binary);
    mcg_strv_free(&installed);
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}

/* Tell the controller (post-receive, after a push to the source branch):
 * a warning when that fails, never a failed push. */
static void notify(const char *url, const char *token)
{
    mcg_err err = {0};
    if (mcg_metrics_notify(url, token, "{\"event\":\"push\"}", 2000, &err) != 0)
        mcg_log_line(NULL, "mcgit: warning: the controller was not told of this push: %s", err.msg);
    else
        mcg_log_line(NULL, "mcgit: told the controller at %s", url);
}

/* All of stdin (the hooks' update lines) into buf; false on a read error. */
static bool read_stdin(mcg_buf *buf)
{
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), stdin)) > 0)
        mcg_buf_put(buf, chunk, n);
    return !ferror(stdin);
}

/* Run a hook: gitops decides, this prints its lines as the pusher sees them. */
static int receive(const char *which, const char *repo, const char *trust, const char *revoked,
                   const char *url, const char *token)
{
    mcg_err err = {0};
    mcg_signers *root = NULL;
    mcg_repo *r = NULL;
    mcg_buf in = MCG_BUF_INIT;
    mcg_diags d = {0};
    bool source_moved = false;
    int rc = mcg_gitops_load_trust(&root, trust, revoked, &err);
    if (!rc)
        rc = mcg_repo_open(&r, repo, &err);
    if (rc) {
        mcg_log_line(NULL, "mcgit: refusing push: %s", err.msg);
        goto out;
    }
    bool pre = !strcmp(which, "pre-receive");
    if (!read_stdin(&in)) {
        /* fail closed: updates not read are not let through */
        mcg_cli_error_os(NULL, errno, "mcgit: %s push: cannot read the update lines",
                         pre ? "refusing" : "ignoring");
        rc = MCG_EIO;
        goto out;
    }
    if (pre)
        rc = mcg_gitops_pre_receive(r, root, in.ptr, in.len, (int64_t)time(NULL), &d);
    else
        rc = mcg_gitops_post_receive(&source_moved, r, root, in.ptr, in.len, &d);
    for (size_t i = 0; i < d.count; i++)
        mcg_log_line(NULL, "mcgit: %s", d.msgs[i]);
    if (source_moved && url && *url)
        notify(url, token);
out:
    mcg_diags_free(&d);
    mcg_buf_free(&in);
    mcg_repo_free(r);
    mcg_signers_free(root);
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}

static int run(int argc, char **argv)
{
    const char *repo = NULL, *trust = NULL, *source_branch = NULL, *revoked = NULL;
    const char *url = NULL, *token = NULL;
    const mcg_optbind binds[] = {
        {'r', &repo, NULL},    {'t', &trust, NULL}, {'s', &source_branch, NULL},
        {'K', &revoked, NULL}, {'U', &url, NULL},   {'T', &token, NULL},
        MCG_BIND_END};
    int ex = mcg_cli_parse(&mcg_cmd_hook, argc, argv, binds);
    if (ex >= 0)
        return ex;
    if (argc - optind != 1 || !repo || !trust)
        return mcg_cli_usage_error(&mcg_cmd_hook, "expected a subcommand, --repo and --trust");
    const char *sub = argv[optind];
    if (token && !url)
        return mcg_cli_usage_error(&mcg_cmd_hook, "--webhook-token-file goes with --webhook-url");
    if (!strcmp(sub, "install"))
        return install(repo, trust, revoked, source_branch, url, token);
    if (!strcmp(sub, "pre-receive") || !strcmp(sub, "post-receive"))
        return receive(sub, repo, trust, revoked, url, token);
    return mcg_cli_usage_error(&mcg_cmd_hook, "unknown subcommand '%s'", sub);
}
