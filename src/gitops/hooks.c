/*
 * hooks.c — installing mcgit's git hooks into a repository.
 */
#include "fsio/fsio.h"
#include "gitops/gitops_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Whether path already holds exactly data with mode 0755. */
static bool hook_same(const char *path, const char *data, size_t len)
{
    struct stat st;
    char *have = NULL;
    size_t hlen = 0;
    bool same = lstat(path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0755 &&
                mcg_read_file(path, len + 1, &have, &hlen, NULL) == 0 && hlen == len &&
                !memcmp(have, data, len);
    free(have);
    return same;
}

/* Set key to value unless it already is; *changed when it was set. */
static int config_set(git_config *cfg, const char *key, const char *value, bool *changed)
{
    git_buf b = GIT_BUF_INIT_CONST(NULL, 0);
    memset(&b, 0, sizeof(b));
    bool same = git_config_get_string_buf(&b, cfg, key) == 0 && !strcmp(b.ptr, value);
    git_buf_dispose(&b);
    if (same)
        return 0;
    *changed = true;
    return git_config_set_string(cfg, key, value);
}

/* The hook scripts written into hooks where they differ (each added to installed). */
static int write_hooks(const char *hooks, bool bare, mcg_strv *installed, bool *ch, mcg_err *err)
{
    int rc = 0;
    for (const mcg_template_file *f = mcg_hook_files; f->path && !rc; f++) {
        if (bare && !strcmp(f->path, "pre-commit"))
            continue; /* nothing is committed in a bare repository */
        char *path = mcg_sprintf("%s/%s", hooks, f->path);
        if (!hook_same(path, (const char *)f->data, f->len)) {
            rc = mcg_write_file_atomic(path, f->data, f->len, 0755, err);
            if (!rc && chmod(path, 0755) != 0)
                rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", path);
            if (!rc && installed)
                mcg_strv_push(installed, path);
            *ch = true;
        }
        free(path);
    }
    return rc;
}

/* The mcgit.* settings the hooks read; a libgit2 error (not set in err). */
static int set_hook_config(git_config *cfg, const mcg_hook_install_opts *o, bool *ch)
{
    if (config_set(cfg, "mcgit.trust", o->trust, ch) != 0 ||
        (o->revoked && config_set(cfg, "mcgit.revoked", o->revoked, ch) != 0) ||
        (o->source_branch && config_set(cfg, "mcgit.sourceBranch", o->source_branch, ch) != 0) ||
        (o->webhook_url && *o->webhook_url &&
         config_set(cfg, "mcgit.webhookURL", o->webhook_url, ch) != 0) ||
        (o->webhook_token && config_set(cfg, "mcgit.webhookTokenFile", o->webhook_token, ch) != 0))
        return -1;
    return 0;
}

int mcg_gitops_hook_install(const mcg_hook_install_opts *o, mcg_strv *installed, bool *changed,
                            char **binary, mcg_err *err)
{
    git_repository *g = NULL;
    git_config *cfg = NULL;
    git_reference *cur = NULL;
    char *hooks = NULL, *head = NULL;
    bool ch = false;
    int rc = 0;
    mcg_gitops_lib_init();
    if (binary)
        *binary = NULL;
    if (o->source_branch && !mcg_model_branch_name_ok(o->source_branch)) {
        rc = mcg_err_set(err, MCG_EINVAL, "'%s' is not a valid branch name", o->source_branch);
        goto out;
    }
    if (git_repository_open_ext(&g, o->repo, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) != 0) {
        rc = mcg_git_err(err, o->repo);
        goto out;
    }
    hooks = mcg_sprintf("%shooks", git_repository_path(g));
    if (mkdir(hooks, 0755) != 0 && errno != EEXIST) {
        rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", hooks);
        goto out;
    }
    if ((rc = write_hooks(hooks, git_repository_is_bare(g), installed, &ch, err)) != 0)
        goto out;
    if (git_repository_config(&cfg, g) != 0 || set_hook_config(cfg, o, &ch) != 0) {
        rc = mcg_git_err(err, "git config");
        goto out;
    }
    if (o->webhook_url && !*o->webhook_url) {
        git_config_delete_entry(cfg, "mcgit.webhookURL"); /* absent already: fine */
        git_config_delete_entry(cfg, "mcgit.webhookTokenFile");
    }
    /* HEAD names the source branch, so a clone checks out what is rendered. */
    git_buf b = GIT_BUF_INIT_CONST(NULL, 0);
    memset(&b, 0, sizeof(b));
    if (binary && git_config_get_string_buf(&b, cfg, "mcgit.binary") == 0)
        *binary = mcg_strdup(b.ptr);
    git_buf_dispose(&b);
    memset(&b, 0, sizeof(b));
    const char *branch = o->source_branch ? o->source_branch : "main";
    if (!o->source_branch && git_config_get_string_buf(&b, cfg, "mcgit.sourceBranch") == 0)
        branch = b.ptr;
    head = mcg_sprintf("refs/heads/%s", branch);
    git_buf_dispose(&b);
    if (git_reference_lookup(&cur, g, "HEAD") == 0 &&
        git_reference_type(cur) == GIT_REFERENCE_SYMBOLIC &&
        !strcmp(git_reference_symbolic_target(cur), head))
        goto out; /* already there */
    ch = true;
    if (git_repository_set_head(g, head) != 0)
        rc = mcg_git_err(err, "HEAD");
out:
    if (changed)
        *changed = ch;
    git_reference_free(cur);
    free(head);
    free(hooks);
    git_config_free(cfg);
    git_repository_free(g);
    git_libgit2_shutdown();
    return rc;
}
