/*
 * hooks.c — installing mcgit's git hooks into a repository.
 */
#include "fsio/fsio.h"
#include "gitops/gitops_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int mcg_gitops_hook_install(const mcg_hook_install_opts *o, mcg_strv *installed, mcg_err *err)
{
    git_repository *g = NULL;
    git_config *cfg = NULL;
    char *hooks = NULL, *head = NULL;
    int rc = 0;
    git_libgit2_init();
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
        rc = mcg_err_set(err, MCG_EIO, "%s: %s", hooks, strerror(errno));
        goto out;
    }
    for (const mcg_template_file *f = mcg_hook_files; f->path && !rc; f++) {
        char *path = mcg_sprintf("%s/%s", hooks, f->path);
        rc = mcg_write_file_atomic(path, f->data, f->len, 0755, err);
        if (!rc && chmod(path, 0755) != 0)
            rc = mcg_err_set(err, MCG_EIO, "%s: %s", path, strerror(errno));
        if (!rc && installed)
            mcg_strv_push(installed, path);
        free(path);
    }
    if (rc)
        goto out;
    if (git_repository_config(&cfg, g) != 0 ||
        git_config_set_string(cfg, "mcgit.trust", o->trust) != 0 ||
        git_config_set_string(cfg, "mcgit.binary", o->binary) != 0 ||
        (o->revoked && git_config_set_string(cfg, "mcgit.revoked", o->revoked) != 0) ||
        (o->source_branch &&
         git_config_set_string(cfg, "mcgit.sourceBranch", o->source_branch) != 0) ||
        (o->webhook_url && *o->webhook_url &&
         git_config_set_string(cfg, "mcgit.webhookURL", o->webhook_url) != 0) ||
        (o->webhook_token &&
         git_config_set_string(cfg, "mcgit.webhookTokenFile", o->webhook_token) != 0)) {
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
    const char *branch = o->source_branch ? o->source_branch : "main";
    if (!o->source_branch && git_config_get_string_buf(&b, cfg, "mcgit.sourceBranch") == 0)
        branch = b.ptr;
    head = mcg_sprintf("refs/heads/%s", branch);
    git_buf_dispose(&b);
    if (git_repository_set_head(g, head) != 0)
        rc = mcg_git_err(err, "HEAD");
out:
    free(head);
    free(hooks);
    git_config_free(cfg);
    git_repository_free(g);
    git_libgit2_shutdown();
    return rc;
}
