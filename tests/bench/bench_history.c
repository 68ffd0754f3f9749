/*
 * bench_history.c — make a long SSH-signed git history quickly, for
 * tests/bench/bench_verify.sh.
 *
 *     bench_history REPO TREE N SIGNERS
 *
 * Appends a linear history of N commits to refs/heads/main of the git
 * repository REPO, the first a root commit. Commit i has TREE with one file,
 * BENCH, set to "commit i\n", and carries the signature `git commit -S` makes
 * with gpg.format=ssh: a gpgsig header holding an armored SSHSIG blob
 * (PROTOCOL.sshsig: namespace "git", hash sha512, ssh-ed25519) over the
 * commit without that header. Signing with ssh-keygen costs one process per
 * commit, and a chain cannot be signed in batches (each commit names its
 * signed parent); libsodium signs 10,000 in well under a second.
 *
 * Objects are made in memory (libgit2's mempack backend) and written as one
 * packfile at the end: 30,000 loose objects would cost more to write, and
 * much more to delete, than the whole benchmark.
 *
 * The key comes from a fixed seed and commit times are fixed, so the same N
 * gives the same commit ids on every run. SIGNERS receives the key's
 * allowed_signers line (principal bench@example.com), for mcgit --trust and
 * git's gpg.ssh.allowedSignersFile alike.
 */
#include "util/util.h"

#include <git2.h>
#include <git2/sys/mempack.h>
#include <git2/sys/odb_backend.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T0 1767225600 /* 2026-01-01T00:00:00Z */

static void die(const char *what)
{
    const git_error *e = git_error_last();
    fprintf(stderr, "bench_history: %s: %s\n", what, e && e->message ? e->message : "failed");
    exit(1);
}

/* RFC 4251 string: uint32 length, bytes. */
static void put_string(mcg_buf *b, const void *s, size_t n)
{
    unsigned char len[4] = {(unsigned char)(n >> 24), (unsigned char)(n >> 16),
                            (unsigned char)(n >> 8), (unsigned char)n};
    mcg_buf_put(b, len, 4);
    mcg_buf_put(b, s, n);
}

static void put_cstring(mcg_buf *b, const char *s)
{
    put_string(b, s, strlen(s));
}

/* The ssh-ed25519 public key blob. */
static void key_blob(mcg_buf *b, const unsigned char pk[crypto_sign_PUBLICKEYBYTES])
{
    put_cstring(b, "ssh-ed25519");
    put_string(b, pk, crypto_sign_PUBLICKEYBYTES);
}

/*
 * The armored SSHSIG signature of msg, as ssh-keygen -Y sign -n git writes
 * it (base64 wrapped at 70 columns) but without the final newline, which
 * git_commit_create_with_signature would turn into an empty header line.
 */
static char *sshsig_sign(const void *msg, size_t len, const unsigned char *pk,
                         const unsigned char *sk)
{
    unsigned char h[crypto_hash_sha512_BYTES], sig[crypto_sign_BYTES];
    mcg_buf signed_data = MCG_BUF_INIT, inner = MCG_BUF_INIT, blob = MCG_BUF_INIT,
            b64 = MCG_BUF_INIT, out = MCG_BUF_INIT;

    crypto_hash_sha512(h, msg, len);
    mcg_buf_put(&signed_data, "SSHSIG", 6);
    put_cstring(&signed_data, "git");
    put_cstring(&signed_data, "");
    put_cstring(&signed_data, "sha512");
    put_string(&signed_data, h, sizeof(h));
    crypto_sign_detached(sig, NULL, (const unsigned char *)signed_data.ptr, signed_data.len, sk);

    put_cstring(&inner, "ssh-ed25519");
    put_string(&inner, sig, sizeof(sig));
    mcg_buf key = MCG_BUF_INIT;
    key_blob(&key, pk);
    mcg_buf_put(&blob, "SSHSIG", 6);
    mcg_buf_put(&blob, "\0\0\0\1", 4);
    put_string(&blob, key.ptr, key.len);
    put_cstring(&blob, "git");
    put_cstring(&blob, "");
    put_cstring(&blob, "sha512");
    put_string(&blob, inner.ptr, inner.len);

    mcg_base64_encode((const unsigned char *)blob.ptr, blob.len, &b64);
    mcg_buf_puts(&out, "-----BEGIN SSH SIGNATURE-----\n");
    for (size_t i = 0; i < b64.len; i += 70) {
        mcg_buf_put(&out, b64.ptr + i, b64.len - i < 70 ? b64.len - i : 70);
        mcg_buf_putc(&out, '\n');
    }
    mcg_buf_puts(&out, "-----END SSH SIGNATURE-----");

    mcg_buf_free(&key);
    mcg_buf_free(&signed_data);
    mcg_buf_free(&inner);
    mcg_buf_free(&blob);
    mcg_buf_free(&b64);
    return mcg_buf_detach(&out, NULL);
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: bench_history REPO TREE N SIGNERS\n");
        return 2;
    }
    long n = strtol(argv[3], NULL, 10);
    if (n < 1 || sodium_init() < 0) {
        fprintf(stderr, "bench_history: bad N or libsodium failed\n");
        return 2;
    }
    unsigned char seed[crypto_sign_SEEDBYTES], pk[crypto_sign_PUBLICKEYBYTES],
        sk[crypto_sign_SECRETKEYBYTES];
    memset(seed, 0x42, sizeof(seed));
    crypto_sign_seed_keypair(pk, sk, seed);

    mcg_buf key = MCG_BUF_INIT, b64 = MCG_BUF_INIT;
    key_blob(&key, pk);
    mcg_base64_encode((const unsigned char *)key.ptr, key.len, &b64);
    FILE *f = fopen(argv[4], "w");
    if (!f || fprintf(f, "bench@example.com namespaces=\"git\" ssh-ed25519 %s bench\n", b64.ptr) < 0 ||
        fclose(f) != 0) {
        perror(argv[4]);
        return 1;
    }
    mcg_buf_free(&key);
    mcg_buf_free(&b64);

    git_libgit2_init();
    git_repository *repo = NULL;
    git_odb *odb = NULL;
    git_odb_backend *mem = NULL;
    git_tree *base = NULL;
    git_oid base_oid, parent_oid;
    if (git_repository_open(&repo, argv[1]) != 0)
        die(argv[1]);
    if (git_repository_odb(&odb, repo) != 0 || git_mempack_new(&mem) != 0 ||
        git_odb_add_backend(odb, mem, 999) != 0)
        die("mempack");
    if (git_oid_fromstr(&base_oid, argv[2]) != 0 || git_tree_lookup(&base, repo, &base_oid) != 0)
        die(argv[2]);

    for (long i = 0; i < n; i++) {
        char text[64], msg[64];
        snprintf(text, sizeof(text), "commit %ld\n", i);
        snprintf(msg, sizeof(msg), "Bench commit %ld\n", i);
        git_oid blob_oid, tree_oid, commit_oid;
        git_treebuilder *tb = NULL;
        git_tree *tree = NULL;
        git_commit *parent = NULL;
        git_signature *who = NULL;
        git_buf content = GIT_BUF_INIT;
        if (git_blob_create_from_buffer(&blob_oid, repo, text, strlen(text)) != 0 ||
            git_treebuilder_new(&tb, repo, base) != 0 ||
            git_treebuilder_insert(NULL, tb, "BENCH", &blob_oid, GIT_FILEMODE_BLOB) != 0 ||
            git_treebuilder_write(&tree_oid, tb) != 0 || git_tree_lookup(&tree, repo, &tree_oid) != 0)
            die("tree");
        if (i > 0 && git_commit_lookup(&parent, repo, &parent_oid) != 0)
            die("parent");
        if (git_signature_new(&who, "Bench", "bench@example.com", T0 + (git_time_t)i * 60, 0) != 0)
            die("signature");
        const git_commit *parents[1] = {parent};
        if (git_commit_create_buffer(&content, repo, who, who, NULL, msg, tree, parent ? 1 : 0,
                                     parents) != 0)
            die("commit buffer");
        char *sig = sshsig_sign(content.ptr, content.size, pk, sk);
        if (git_commit_create_with_signature(&commit_oid, repo, content.ptr, sig, "gpgsig") != 0)
            die("commit");
        free(sig);
        parent_oid = commit_oid;
        git_buf_dispose(&content);
        git_signature_free(who);
        git_commit_free(parent);
        git_tree_free(tree);
        git_treebuilder_free(tb);
    }
    /* Write everything made above as one pack, then point main at it. */
    git_buf pack = GIT_BUF_INIT;
    git_odb_writepack *wp = NULL;
    git_indexer_progress stats;
    memset(&stats, 0, sizeof(stats));
    if (git_mempack_dump(&pack, repo, mem) != 0 || git_odb_write_pack(&wp, odb, NULL, NULL) != 0 ||
        wp->append(wp, pack.ptr, pack.size, &stats) != 0 || wp->commit(wp, &stats) != 0)
        die("write pack");
    wp->free(wp);
    git_buf_dispose(&pack);
    git_mempack_reset(mem);
    git_reference *ref = NULL;
    if (git_reference_create(&ref, repo, "refs/heads/main", &parent_oid, 1, "bench_history") != 0)
        die("refs/heads/main");
    char hex[GIT_OID_HEXSZ + 1];
    printf("%s\n", git_oid_tostr(hex, sizeof(hex), &parent_oid));
    git_reference_free(ref);
    git_tree_free(base);
    git_odb_free(odb); /* and the mempack backend it owns */
    git_repository_free(repo);
    git_libgit2_shutdown();
    sodium_memzero(sk, sizeof(sk));
    return 0;
}
