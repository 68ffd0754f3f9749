/*
 * bench_gen_history.c — make a long, really SSH-signed config history fast.
 *
 *   bench_gen_history REPO N BYTES SIGNERS_OUT [random]
 *
 * Appends N commits to REPO's main branch (on top of its tip, if any), each
 * rewriting one of 100 files data/fNN.txt with about BYTES bytes: words that
 * change a few lines per commit (text, deltas well), or with "random",
 * base64 of random bytes (incompressible, no deltas). Every commit carries a
 * gpgsig header holding a real SSHSIG (namespace git, sha512, ed25519), made
 * with a fixed key, so `git verify-commit` and `mcgit verify` accept them;
 * git commit -S forks ssh-keygen per commit and is ~25 ms, this is ~0.2 ms.
 * Writes "bench@example.com ssh-ed25519 AAAA..." to SIGNERS_OUT. Commit dates
 * count up from 2026-01-01 one minute apart, so the output is deterministic
 * (except in random mode).
 */
#include "util/util.h"

#include <git2.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NFILES 100

static unsigned char pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];

static void put_u32(mcg_buf *b, uint32_t v)
{
    unsigned char x[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 8), (unsigned char)v};
    mcg_buf_put(b, x, 4);
}

static void put_str(mcg_buf *b, const void *s, size_t n)
{
    put_u32(b, (uint32_t)n);
    mcg_buf_put(b, s, n);
}

static void pubkey_blob(mcg_buf *b)
{
    put_str(b, "ssh-ed25519", 11);
    put_str(b, pk, sizeof(pk));
}

/* An armored SSHSIG over msg (PROTOCOL.sshsig), without a trailing newline. */
static char *sshsig(const char *msg, size_t len)
{
    unsigned char h[crypto_hash_sha512_BYTES], sig[crypto_sign_BYTES];
    crypto_hash_sha512(h, (const unsigned char *)msg, len);
    mcg_buf tosign = MCG_BUF_INIT, blob = MCG_BUF_INIT, k = MCG_BUF_INIT, s = MCG_BUF_INIT,
            b64 = MCG_BUF_INIT, out = MCG_BUF_INIT;
    mcg_buf_put(&tosign, "SSHSIG", 6);
    put_str(&tosign, "git", 3);
    put_str(&tosign, "", 0);
    put_str(&tosign, "sha512", 6);
    put_str(&tosign, h, sizeof(h));
    crypto_sign_detached(sig, NULL, (const unsigned char *)tosign.ptr, tosign.len, sk);
    pubkey_blob(&k);
    put_str(&s, "ssh-ed25519", 11);
    put_str(&s, sig, sizeof(sig));
    mcg_buf_put(&blob, "SSHSIG", 6);
    put_u32(&blob, 1);
    put_str(&blob, k.ptr, k.len);
    put_str(&blob, "git", 3);
    put_str(&blob, "", 0);
    put_str(&blob, "sha512", 6);
    put_str(&blob, s.ptr, s.len);
    mcg_base64_encode((const unsigned char *)blob.ptr, blob.len, &b64);
    mcg_buf_puts(&out, "-----BEGIN SSH SIGNATURE-----\n");
    for (size_t i = 0; i < b64.len; i += 70) {
        mcg_buf_put(&out, b64.ptr + i, b64.len - i < 70 ? b64.len - i : 70);
        mcg_buf_putc(&out, '\n');
    }
    mcg_buf_puts(&out, "-----END SSH SIGNATURE-----");
    mcg_buf_free(&tosign);
    mcg_buf_free(&blob);
    mcg_buf_free(&k);
    mcg_buf_free(&s);
    mcg_buf_free(&b64);
    return mcg_buf_detach(&out, NULL);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static const char *const words[] = {"server", "pool",   "chrony", "iburst", "allow", "deny",
                                    "kernel", "param",  "unit",   "enable", "mask",  "drop",
                                    "node",   "worker", "master", "config", "value", "limit"};

/* One line of text words, about 60 bytes. */
static void text_line(mcg_buf *b, unsigned n)
{
    mcg_buf_printf(b, "%05u", n);
    for (int w = 0; w < 8; w++)
        mcg_buf_printf(b, " %s", words[next() % (sizeof(words) / sizeof(words[0]))]);
    mcg_buf_putc(b, '\n');
}

static int die(const char *what)
{
    const git_error *e = git_error_last();
    fprintf(stderr, "bench_gen_history: %s: %s\n", what, e && e->message ? e->message : "?");
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: bench_gen_history REPO N BYTES SIGNERS_OUT [random]\n");
        return 2;
    }
    long n = atol(argv[2]), bytes = atol(argv[3]);
    bool random_mode = argc > 5 && !strcmp(argv[5], "random");
    unsigned char seed[crypto_sign_SEEDBYTES] = "mcgit bench_gen_history seed!!!";
    if (sodium_init() < 0)
        return 1;
    crypto_sign_seed_keypair(pk, sk, seed);
    if (random_mode)
        randombytes_buf(&rng, sizeof(rng));

    mcg_buf kb = MCG_BUF_INIT, k64 = MCG_BUF_INIT;
    pubkey_blob(&kb);
    mcg_base64_encode((const unsigned char *)kb.ptr, kb.len, &k64);
    FILE *f = fopen(argv[4], "w");
    if (!f)
        return 1;
    fprintf(f, "bench@example.com ssh-ed25519 %s\n", k64.ptr);
    fclose(f);
    mcg_buf_free(&kb);
    mcg_buf_free(&k64);

    git_libgit2_init();
    git_repository *repo = NULL;
    git_commit *parent = NULL;
    git_tree *base = NULL;
    git_oid tip;
    if (git_repository_open(&repo, argv[1]) != 0)
        return die(argv[1]);
    if (git_reference_name_to_id(&tip, repo, "refs/heads/main") == 0) {
        if (git_commit_lookup(&parent, repo, &tip) != 0 || git_commit_tree(&base, parent) != 0)
            return die("main");
    }
    /* The current content of the data files, as lines. */
    mcg_buf content[NFILES];
    git_oid blobs[NFILES];
    size_t nlines = (size_t)(bytes / 60 > 0 ? bytes / 60 : 1);
    for (int i = 0; i < NFILES; i++) {
        memset(&content[i], 0, sizeof(content[i]));
        for (size_t l = 0; l < nlines; l++)
            text_line(&content[i], (unsigned)l);
        if (git_blob_create_from_buffer(&blobs[i], repo, content[i].ptr, content[i].len) != 0)
            return die("blob");
    }
    int64_t when = 1767225600; /* 2026-01-01T00:00:00Z */
    for (long c = 0; c < n; c++) {
        int fi = (int)(c % NFILES);
        mcg_buf *b = &content[fi];
        if (random_mode) {
            unsigned char *raw = mcg_malloc((size_t)bytes * 3 / 4 + 1);
            for (size_t i = 0; i < (size_t)bytes * 3 / 4; i++)
                raw[i] = (unsigned char)next();
            b->len = 0;
            mcg_base64_encode(raw, (size_t)bytes * 3 / 4, b);
            free(raw);
        } else {
            /* Rewrite three lines in place: a small change, as config churn is. */
            for (int k = 0; k < 3; k++) {
                size_t l = next() % nlines;
                char *line = b->ptr, *end;
                for (size_t j = 0; j < l; j++)
                    line = strchr(line, '\n') + 1;
                end = strchr(line, '\n') + 1;
                mcg_buf nl = MCG_BUF_INIT, rebuilt = MCG_BUF_INIT;
                text_line(&nl, (unsigned)l);
                mcg_buf_put(&rebuilt, b->ptr, (size_t)(line - b->ptr));
                mcg_buf_put(&rebuilt, nl.ptr, nl.len);
                mcg_buf_puts(&rebuilt, end);
                mcg_buf_free(b);
                *b = rebuilt;
                mcg_buf_free(&nl);
            }
        }
        if (git_blob_create_from_buffer(&blobs[fi], repo, b->ptr, b->len) != 0)
            return die("blob");
        git_treebuilder *dtb = NULL, *rtb = NULL;
        git_oid dtree, rtree, commit;
        if (git_treebuilder_new(&dtb, repo, NULL) != 0)
            return die("tree");
        for (int i = 0; i < NFILES; i++) {
            char name[32];
            snprintf(name, sizeof(name), "f%02d.txt", i);
            if (git_treebuilder_insert(NULL, dtb, name, &blobs[i], GIT_FILEMODE_BLOB) != 0)
                return die("tree");
        }
        if (git_treebuilder_write(&dtree, dtb) != 0 || git_treebuilder_new(&rtb, repo, base) != 0 ||
            git_treebuilder_insert(NULL, rtb, "data", &dtree, GIT_FILEMODE_TREE) != 0 ||
            git_treebuilder_write(&rtree, rtb) != 0)
            return die("tree");
        git_treebuilder_free(dtb);
        git_treebuilder_free(rtb);
        git_tree *tree = NULL;
        git_signature *sig = NULL;
        git_buf buf = {0};
        if (git_tree_lookup(&tree, repo, &rtree) != 0 ||
            git_signature_new(&sig, "Bench Operator", "bench@example.com", when + c * 60, 0) != 0)
            return die("commit");
        char msg[64];
        snprintf(msg, sizeof(msg), "change %ld: data/f%02d.txt\n", c + 1, fi);
        const git_commit *parents[1] = {parent};
        if (git_commit_create_buffer(&buf, repo, sig, sig, NULL, msg, tree, parent ? 1 : 0,
                                     parents) != 0)
            return die("commit");
        char *armored = sshsig(buf.ptr, buf.size);
        if (git_commit_create_with_signature(&commit, repo, buf.ptr, armored, "gpgsig") != 0)
            return die("commit");
        free(armored);
        git_buf_dispose(&buf);
        git_signature_free(sig);
        git_tree_free(base);
        base = tree;
        git_commit_free(parent);
        if (git_commit_lookup(&parent, repo, &commit) != 0)
            return die("commit");
    }
    git_reference *ref = NULL;
    if (parent && git_reference_create(&ref, repo, "refs/heads/main", git_commit_id(parent), 1,
                                       "bench_gen_history") != 0)
        return die("refs/heads/main");
    git_reference_free(ref);
    for (int i = 0; i < NFILES; i++)
        mcg_buf_free(&content[i]);
    git_tree_free(base);
    git_commit_free(parent);
    git_repository_free(repo);
    git_libgit2_shutdown();
    return 0;
}
