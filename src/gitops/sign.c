/*
 * sign.c — making signed commits in-process: an ed25519 key (libsodium)
 * and git's SSH signature format (PROTOCOL.sshsig, namespace "git"), so
 * tools like `mcgit demo` can produce commits `git verify-commit` accepts
 * without running git or ssh-keygen.
 */
#include "gitops/gitops_int.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

static void put_u32(mcg_buf *b, uint32_t v)
{
    unsigned char x[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16), (unsigned char)(v >> 8),
                          (unsigned char)v};
    mcg_buf_put(b, x, 4);
}

static void put_str(mcg_buf *b, const void *s, size_t n)
{
    put_u32(b, (uint32_t)n);
    mcg_buf_put(b, s, n);
}

static void pubkey_blob(mcg_buf *b, const unsigned char pk[32])
{
    put_str(b, "ssh-ed25519", 11);
    put_str(b, pk, 32);
}

void mcg_sshkey_generate(mcg_sshkey *key)
{
    if (sodium_init() < 0)
        abort();
    crypto_sign_keypair(key->pk, key->sk);
}

void mcg_sshkey_wipe(mcg_sshkey *key)
{
    sodium_memzero(key, sizeof(*key));
}

char *mcg_sshkey_public_line(const mcg_sshkey *key, const char *comment)
{
    mcg_buf blob = MCG_BUF_INIT, out = MCG_BUF_INIT;
    pubkey_blob(&blob, key->pk);
    mcg_buf_puts(&out, "ssh-ed25519 ");
    mcg_base64_encode((unsigned char *)blob.ptr, blob.len, &out);
    if (comment)
        mcg_buf_printf(&out, " %s", comment);
    mcg_buf_free(&blob);
    return mcg_buf_detach(&out, NULL);
}

char *mcg_sshsig_sign(const mcg_sshkey *key, const void *msg, size_t len)
{
    unsigned char h[crypto_hash_sha512_BYTES], sig[crypto_sign_BYTES];
    crypto_hash_sha512(h, msg, len);
    mcg_buf signed_data = MCG_BUF_INIT, blob = MCG_BUF_INIT, sigblob = MCG_BUF_INIT,
            b64 = MCG_BUF_INIT, out = MCG_BUF_INIT;
    mcg_buf_put(&signed_data, "SSHSIG", 6);
    put_str(&signed_data, "git", 3);
    put_str(&signed_data, "", 0);
    put_str(&signed_data, "sha512", 6);
    put_str(&signed_data, h, sizeof(h));
    crypto_sign_detached(sig, NULL, (unsigned char *)signed_data.ptr, signed_data.len, key->sk);
    put_str(&sigblob, "ssh-ed25519", 11);
    put_str(&sigblob, sig, sizeof(sig));
    mcg_buf_put(&blob, "SSHSIG", 6);
    put_u32(&blob, 1);
    mcg_buf pk = MCG_BUF_INIT;
    pubkey_blob(&pk, key->pk);
    put_str(&blob, pk.ptr, pk.len);
    put_str(&blob, "git", 3);
    put_str(&blob, "", 0);
    put_str(&blob, "sha512", 6);
    put_str(&blob, sigblob.ptr, sigblob.len);
    mcg_base64_encode((unsigned char *)blob.ptr, blob.len, &b64);
    mcg_buf_puts(&out, "-----BEGIN SSH SIGNATURE-----\n");
    for (size_t i = 0; i < b64.len; i += 70)
        mcg_buf_printf(&out, "%.*s\n", (int)(b64.len - i < 70 ? b64.len - i : 70), b64.ptr + i);
    mcg_buf_puts(&out, "-----END SSH SIGNATURE-----");
    sodium_memzero(h, sizeof(h));
    mcg_buf_free(&pk);
    mcg_buf_free(&signed_data);
    mcg_buf_free(&blob);
    mcg_buf_free(&sigblob);
    mcg_buf_free(&b64);
    return mcg_buf_detach(&out, NULL);
}

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
    git_libgit2_init();
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
