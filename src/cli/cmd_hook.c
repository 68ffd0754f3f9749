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
#include "metrics/metrics.h"

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

const mcg_cmd mcg_cmd_hook = {
    "hook",
    "install the git hooks, or run one",
    "usage: mcgit hook install --repo R --trust F [--revoked K] [--source-branch B]\n"
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
    "              (install warns when it finds no mcgit there). With\n"
    "              --revoked, the revocation list K too (mcgit.revoked, made\n"
    "              absolute). Without it a recorded mcgit.revoked is kept\n"
    "              (`git config --unset mcgit.revoked` removes it). The hooks\n"
    "              pass it to mcgit, and a recorded K that cannot be read\n"
    "              refuses every push.\n"
    "pre-receive   read `<old> <new> <ref>` lines on stdin; refuse (exit 1) a push\n"
    "              to the source branch if any new commit is unsigned or untrusted\n"
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
    "--revoked K: an OpenSSH KRL or a list of public keys; a commit by a\n"
    "revoked key or certificate is refused.\n"
    "The pre-commit hook runs `mcgit validate` on the working tree.\n",
    run,
};

/* Whether name (a path when it holds a '/', else looked up in PATH) is an
 * executable file: what the hooks check before they run it. */
static bool runnable(const char *name)
{
    struct stat st;
    if (strchr(name, '/'))
        return stat(name, &st) == 0 && S_ISREG(st.st_mode) && access(name, X_OK) == 0;
    const char *path = getenv("PATH");
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

/* Say which mcgit the hooks will run, and warn when they cannot run it. */
static void check_binary(const char *binary)
{
    if (binary)
        mcg_cli_info("the hooks run %s (git config mcgit.binary)", binary);
    if (!runnable(binary ? binary : "mcgit"))
        fprintf(stderr,
                "mcgit hook: warning: the hooks cannot run %s (not found or not executable), so "
                "every push is refused until %s\n",
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
        mcg_cli_error("hook", "%s: %s", token, strerror(errno));
        return MCG_EXIT_FAIL;
    }
    if (!realpath(trust, trust_abs)) {
        mcg_cli_error("hook", "trust root (an allowed_signers file): %s: %s", trust,
                      strerror(errno));
        return MCG_EXIT_FAIL;
    }
    if (revoked && !realpath(revoked, revoked_abs)) {
        mcg_cli_error("hook", "%s: %s", revoked, strerror(errno));
        return MCG_EXIT_FAIL;
    }
    /* record nothing the hooks would then refuse every push over */
    if (mcg_cli_load_trust(&check, trust_abs, revoked ? revoked_abs : NULL, &err) != 0) {
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
        check_binary(binary);
    free(binary);
    mcg_strv_free(&installed);
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}

static bool is_zero(const char *sha)
{
    return strspn(sha, "0") == strlen(sha);
}

/*
 * One update line as git's receive-pack writes it to the hooks: "<old>
 * <new> <ref>\n", ids of 40 hex digits, a ref name without spaces or
 * control characters. Anything else — a truncated or overlong line, extra
 * fields, other ids — is not parsed at all (the hook then fails closed).
 */
static bool parse_update(const char *line, size_t len, char old[64], char new[64], char ref[4096])
{
    static const char hex[] = "0123456789abcdef";
    if (len < 2 * MCG_SHA_HEX + 4 || line[len - 1] != '\n' || len - 2 * MCG_SHA_HEX - 3 >= 4096)
        return false;
    for (size_t i = 0; i < 2 * MCG_SHA_HEX + 1; i++) {
        bool sep = i == MCG_SHA_HEX;
        if (sep ? line[i] != ' ' : !line[i] || !strchr(hex, line[i]))
            return false;
    }
    if (line[2 * MCG_SHA_HEX + 1] != ' ')
        return false;
    const char *r = line + 2 * MCG_SHA_HEX + 2;
    size_t rl = len - 2 * MCG_SHA_HEX - 3;
    for (size_t i = 0; i < rl; i++)
        if ((unsigned char)r[i] <= ' ' || r[i] == 0x7f)
            return false;
    memcpy(old, line, MCG_SHA_HEX);
    old[MCG_SHA_HEX] = '\0';
    memcpy(new, line + MCG_SHA_HEX + 1, MCG_SHA_HEX);
    new[MCG_SHA_HEX] = '\0';
    memcpy(ref, r, rl);
    ref[rl] = '\0';
    return true;
}

/* Tell the controller (post-receive, after a push to the source branch):
 * a warning when that fails, never a failed push. */
static void notify(const char *url, const char *token)
{
    mcg_err err = {0};
    if (mcg_metrics_notify(url, token, "{\"event\":\"push\"}", 2000, &err) != 0)
        fprintf(stderr, "mcgit: warning: the controller was not told of this push: %s\n", err.msg);
    else
        fprintf(stderr, "mcgit: told the controller at %s\n", url);
}

static int receive(const char *which, const char *repo, const char *trust, const char *revoked,
                   const char *url, const char *token)
{
    mcg_err err = {0};
    mcg_signers *root = NULL;
    mcg_repo *r = NULL;
    int rc = mcg_cli_load_trust(&root, trust, revoked, &err);
    if (!rc)
        rc = mcg_repo_open(&r, repo, &err);
    if (rc) {
        fprintf(stderr, "mcgit: refusing push: %s\n", err.msg);
        goto out;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    unsigned lineno = 0;
    bool pre = !strcmp(which, "pre-receive");
    bool source_moved = false;
    int64_t now = (int64_t)time(NULL);
    char *src = mcg_sprintf("refs/heads/%s", mcg_repo_source_branch(r));
    /* All updates first: approvals pushed with the branch count for it. */
    mcg_strv lines = {0};
    char approvals[64] = "";
    while ((len = getline(&line, &cap, stdin)) >= 0) {
        char old[64], new[64], ref[4096];
        lineno++;
        if (!parse_update(line, (size_t)len, old, new, ref)) {
            /* fail closed: an update not understood is not let through */
            fprintf(stderr, "mcgit: %s push: cannot parse update line %u: '%.80s'\n",
                    pre ? "refusing" : "ignoring", lineno, strtok(line, "\n") ? line : "");
            rc = MCG_EINVAL;
            continue;
        }
        mcg_strv_push(&lines, line);
        if (!strcmp(ref, "refs/notes/mcgit-approvals") && !is_zero(new))
            snprintf(approvals, sizeof(approvals), "%s", new);
    }
    free(line);
    for (size_t i = 0; i < lines.n; i++) {
        char old[64], new[64], ref[4096];
        parse_update(lines.v[i], strlen(lines.v[i]), old, new, ref);
        if (!strcmp(ref, src) && !is_zero(new))
            source_moved = true;
        if (pre) {
            mcg_diags d = {0};
            int one = mcg_gitops_receive_check(r, root, old, new, ref, now,
                                               approvals[0] ? approvals : NULL, &d);
            for (size_t k = 0; k < d.count; k++)
                fprintf(stderr, "mcgit: %s\n", d.msgs[k]);
            mcg_diags_free(&d);
            if (one && !rc)
                rc = one;
        }
    }
    mcg_strv_free(&lines);
    free(src);
    if (!pre && source_moved) {
        mcg_render_result res;
        mcg_diags d = {0};
        rc = mcg_gitops_render(&res, NULL, NULL, r, NULL, root, &d, &err);
        mcg_diags_sort(&d);
        for (size_t i = 0; i < d.count; i++)
            fprintf(stderr, "mcgit: %s\n", d.msgs[i]);
        if (rc)
            fprintf(stderr, "mcgit: render failed: %s\n", err.msg);
        else if (res.created)
            fprintf(stderr, "mcgit: rendered %.12s as %s %.12s\n", res.source,
                    mcg_repo_rendered_branch(r), res.rendered);
        mcg_diags_free(&d);
        if (url && *url)
            notify(url, token);
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
                                         {"source-branch", required_argument, 0, 's'},
                                         {"revoked", required_argument, 0, 'K'},
                                         {"webhook-url", required_argument, 0, 'U'},
                                         {"webhook-token-file", required_argument, 0, 'T'},
                                         {0, 0, 0, 0}};
    const char *repo = NULL, *trust = NULL, *source_branch = NULL, *revoked = NULL;
    const char *url = NULL, *token = NULL;
    int c;
    optind = 1;
    while ((c = mcg_cli_getopt(&mcg_cmd_hook, argc, argv, "h", opts)) != -1) {
        switch (c) {
        case 'h': return mcg_cli_help(&mcg_cmd_hook);
        case 'r': repo = optarg; break;
        case 't': trust = optarg; break;
        case 's': source_branch = optarg; break;
        case 'K': revoked = optarg; break;
        case 'U': url = optarg; break;
        case 'T': token = optarg; break;
        default: return mcg_cli_usage_error(&mcg_cmd_hook, NULL);
        }
    }
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
