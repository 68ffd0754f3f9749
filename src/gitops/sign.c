/*
 * sign.c — making signed commits in-process: stage a work tree, build the
 * commit, sign it with trust's mcg_sshsig_sign (an ed25519 key, git's SSH
 * signature format), so tools like `mcgit demo` can produce commits
 * `git verify-commit` accepts without running git or ssh-keygen.
 */
#include "gitops/gitops_int.h"

#include <stdlib.h>
#include <string.h>

int mcg_gitops_commit_worktree(char out[MCG_SHA_HEX + 1], const char *path, const char *message,
                               const mcg_sshkey *key, int64_t when, mcg_err *err)
{
    git_repository *repo = NULL;
    git_index *idx = NULL;
    git_tree *tree = NULL;
    git_commit *parent = NULL;
    git_signature *sig = NULL;
    git_buf buf = {0};
    git_reference *head = NULL;
    char *armored = NULL;
    int rc = 0;
    git_oid tree_oid, commit_oid, parent_oid;
    mcg_gitops_lib_init();
    if (git_repository_open(&repo, path) != 0 || git_repository_index(&idx, repo) != 0) {
        rc = mcg_git_err(err, path);
        goto out;
    }
    git_strarray all = {(char *[]){"*"}, 1};
    if (git_index_add_all(idx, &all, GIT_INDEX_ADD_DEFAULT, NULL, NULL) != 0 ||
        git_index_update_all(idx, &all, NULL, NULL) != 0 || git_index_write(idx) != 0 ||
        git_index_write_tree(&tree_oid, idx) != 0 || git_tree_lookup(&tree, repo, &tree_oid) != 0) {
        rc = mcg_git_err(err, "stage");
        goto out;
    }
    bool has_parent = git_reference_name_to_id(&parent_oid, repo, "HEAD") == 0;
    if (has_parent && git_commit_lookup(&parent, repo, &parent_oid) != 0) {
        rc = mcg_git_err(err, "HEAD");
        goto out;
    }
    if (git_signature_new(&sig, "mcgit demo", "demo@mcgit.invalid", (git_time_t)when, 0) != 0) {
        rc = mcg_git_err(err, "signature");
        goto out;
    }
    const git_commit *parents[1] = {parent};
    if (git_commit_create_buffer(&buf, repo, sig, sig, NULL, message, tree, has_parent ? 1 : 0,
                                 parents) != 0) {
        rc = mcg_git_err(err, "commit");
        goto out;
    }
    armored = key ? mcg_sshsig_sign(key, buf.ptr, buf.size) : NULL;
    if (git_commit_create_with_signature(&commit_oid, repo, buf.ptr, armored, "gpgsig") != 0) {
        rc = mcg_git_err(err, "commit");
        goto out;
    }
    /* Move the branch HEAD points at (creating it on the first commit). */
    const char *target = "refs/heads/main";
    if (git_reference_lookup(&head, repo, "HEAD") == 0 &&
        git_reference_type(head) == GIT_REFERENCE_SYMBOLIC)
        target = git_reference_symbolic_target(head);
    git_reference *moved = NULL;
    if (git_reference_create(&moved, repo, target, &commit_oid, 1, "mcgit commit") != 0) {
        rc = mcg_git_err(err, target);
        goto out;
    }
    git_reference_free(moved);
    git_oid_tostr(out, MCG_SHA_HEX + 1, &commit_oid);
out:
    free(armored);
    git_reference_free(head);
    git_buf_dispose(&buf);
    git_signature_free(sig);
    git_commit_free(parent);
    git_tree_free(tree);
    git_index_free(idx);
    git_repository_free(repo);
    git_libgit2_shutdown();
    return rc;
}
