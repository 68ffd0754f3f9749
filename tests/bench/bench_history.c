/*
 * bench_history.c — make a long, really SSH-signed config history fast, for
 * the benchmarks (bench_verify.sh, bench_bundle.sh) and the bundle tests.
 *
 *   bench_history [--files K] [--bytes B] [--random] [--pack] REPO N SIGNERS_OUT
 *
 * Appends N commits to refs/heads/main of the git repository REPO and
 * prints the new tip. When main does not exist yet, the first commit is a
 * root commit whose tree is REPO's index (what `git add -A` staged). Every
 * commit rewrites one of K files data/fNN.txt (default 100, in turn) of
 * about B bytes (default 4,000): three lines of words change, as config
 * churn does (text, deltas well); with --random the whole file becomes
 * base64 of random bytes (incompressible, no deltas).
 *
 * Each commit carries the signature `git commit -S` makes with
 * gpg.format=ssh: a gpgsig header holding an armored SSHSIG (PROTOCOL.sshsig:
 * namespace "git", sha512, ssh-ed25519) over the commit without that header,
 * made with libsodium from a fixed key, so `git verify-commit`,
 * `git log --show-signature` and `mcgit verify` accept them. git commit -S
 * forks ssh-keygen per commit (~25 ms); this is ~0.2 ms, and a chain cannot
 * be signed in batches (each commit names its signed parent).
 *
 * Objects are written loose, as `git commit` would, or with --pack made in
 * memory (libgit2's mempack) and written as one pack at the end: 30,000
 * loose objects cost more to write, and much more to delete, than a
 * signature benchmark. SIGNERS_OUT receives the key's allowed_signers line
 * (principal bench@example.com), for mcgit --trust and git's
 * gpg.ssh.allowedSignersFile alike. Commit times count up one minute apart
 * from 2026-01-01 (or from main's tip), so without --random the same
 * arguments give the same commit ids on every run.
 */
#include "util/util.h"

#include <getopt.h>
#include <git2.h>
#include <git2/sys/mempack.h>
#include <git2/sys/odb_backend.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T0 1767225600 /* 2026-01-01T00:00:00Z */
#define MAX_FILES 1000

static unsigned char pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];

static int die(const char *what)
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
static void key_blob(mcg_buf *b)
{
    put_cstring(b, "ssh-ed25519");
    put_string(b, pk, sizeof(pk));
}

/*
 * The armored SSHSIG signature of msg, as ssh-keygen -Y sign -n git writes
 * it (base64 wrapped at 70 columns) but without the final newline, which
 * git_commit_create_with_signature would turn into an empty header line.
 */
static char *sshsig_sign(const void *msg, size_t len)
{
    unsigned char h[crypto_hash_sha512_BYTES], sig[crypto_sign_BYTES];
    mcg_buf signed_data = MCG_BUF_INIT, inner = MCG_BUF_INIT, blob = MCG_BUF_INIT,
            key = MCG_BUF_INIT, b64 = MCG_BUF_INIT, out = MCG_BUF_INIT;

    crypto_hash_sha512(h, msg, len);
    mcg_buf_put(&signed_data, "SSHSIG", 6);
    put_cstring(&signed_data, "git");
    put_cstring(&signed_data, "");
    put_cstring(&signed_data, "sha512");
    put_string(&signed_data, h, sizeof(h));
    crypto_sign_detached(sig, NULL, (const unsigned char *)signed_data.ptr, signed_data.len, sk);

    put_cstring(&inner, "ssh-ed25519");
    put_string(&inner, sig, sizeof(sig));
    key_blob(&key);
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

/* A fixed xorshift generator: the same text on every run. */
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

/* Rewrite line l of b (lines of text_line) in place. */
static void rewrite_line(mcg_buf *b, size_t l)
{
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

static void random_text(mcg_buf *b, size_t bytes)
{
    size_t n = bytes * 3 / 4;
    unsigned char *raw = mcg_malloc(n + 1);
    randombytes_buf(raw, n);
    b->len = 0;
    mcg_base64_encode(raw, n, b);
    free(raw);
}

static int usage(void)
{
    fprintf(stderr, "usage: bench_history [--files K] [--bytes B] [--random] [--pack] REPO N "
                    "SIGNERS_OUT\n");
    return 2;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"files", required_argument, 0, 'f'},
                                         {"bytes", required_argument, 0, 'b'},
                                         {"random", no_argument, 0, 'r'},
                                         {"pack", no_argument, 0, 'p'},
                                         {0, 0, 0, 0}};
    long nfiles = 100, bytes = 4000;
    bool random_mode = false, pack = false;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            nfiles = atol(optarg);
            break;
        case 'b':
            bytes = atol(optarg);
            break;
        case 'r':
            random_mode = true;
            break;
        case 'p':
            pack = true;
            break;
        default:
            return usage();
        }
    }
    if (argc - optind != 3)
        return usage();
    const char *path = argv[optind], *signers = argv[optind + 2];
    long n = atol(argv[optind + 1]);
    if (n < 1 || nfiles < 1 || nfiles > MAX_FILES || bytes < 1 || sodium_init() < 0)
        return usage();

    unsigned char seed[crypto_sign_SEEDBYTES];
    memset(seed, 0x42, sizeof(seed));
    crypto_sign_seed_keypair(pk, sk, seed);
    mcg_buf kb = MCG_BUF_INIT, k64 = MCG_BUF_INIT;
    key_blob(&kb);
    mcg_base64_encode((const unsigned char *)kb.ptr, kb.len, &k64);
    FILE *f = fopen(signers, "w");
    if (!f ||
        fprintf(f, "bench@example.com namespaces=\"git\" ssh-ed25519 %s bench\n", k64.ptr) < 0 ||
        fclose(f) != 0) {
        perror(signers);
        return 1;
    }
    mcg_buf_free(&kb);
    mcg_buf_free(&k64);

    git_libgit2_init();
    git_repository *repo = NULL;
    git_odb *odb = NULL;
    git_odb_backend *mem = NULL;
    git_commit *parent = NULL;
    git_tree *base = NULL;
    git_oid tip;
    if (git_repository_open(&repo, path) != 0)
        die(path);
    if (pack && (git_repository_odb(&odb, repo) != 0 || git_mempack_new(&mem) != 0 ||
                 git_odb_add_backend(odb, mem, 999) != 0))
        die("mempack");
    int64_t when = T0;
    if (git_reference_name_to_id(&tip, repo, "refs/heads/main") == 0) {
        if (git_commit_lookup(&parent, repo, &tip) != 0 || git_commit_tree(&base, parent) != 0)
            die("main");
        if (git_commit_time(parent) + 60 > when)
            when = git_commit_time(parent) + 60;
    } else {
        git_index *index = NULL;
        git_oid tree_oid;
        if (git_repository_index(&index, repo) != 0 ||
            git_index_write_tree(&tree_oid, index) != 0 ||
            git_tree_lookup(&base, repo, &tree_oid) != 0)
            die("index");
        git_index_free(index);
    }

    /* The current content of the data files. */
    mcg_buf *content = mcg_calloc((size_t)nfiles, sizeof(*content));
    git_oid *blobs = mcg_calloc((size_t)nfiles, sizeof(*blobs));
    size_t nlines = (size_t)(bytes / 60 > 0 ? bytes / 60 : 1);
    for (long i = 0; i < nfiles; i++) {
        if (random_mode)
            random_text(&content[i], (size_t)bytes);
        else
            for (size_t l = 0; l < nlines; l++)
                text_line(&content[i], (unsigned)l);
        if (git_blob_create_from_buffer(&blobs[i], repo, content[i].ptr, content[i].len) != 0)
            die("blob");
    }
    for (long k = 0; k < n; k++) {
        long fi = k % nfiles;
        mcg_buf *b = &content[fi];
        if (random_mode)
            random_text(b, (size_t)bytes);
        else
            for (int r = 0; r < 3; r++)
                rewrite_line(b, next() % nlines);
        if (git_blob_create_from_buffer(&blobs[fi], repo, b->ptr, b->len) != 0)
            die("blob");
        git_treebuilder *dtb = NULL, *rtb = NULL;
        git_oid dtree, rtree, commit;
        if (git_treebuilder_new(&dtb, repo, NULL) != 0)
            die("tree");
        for (long i = 0; i < nfiles; i++) {
            char name[32];
            snprintf(name, sizeof(name), "f%02ld.txt", i);
            if (git_treebuilder_insert(NULL, dtb, name, &blobs[i], GIT_FILEMODE_BLOB) != 0)
                die("tree");
        }
        if (git_treebuilder_write(&dtree, dtb) != 0 || git_treebuilder_new(&rtb, repo, base) != 0 ||
            git_treebuilder_insert(NULL, rtb, "data", &dtree, GIT_FILEMODE_TREE) != 0 ||
            git_treebuilder_write(&rtree, rtb) != 0)
            die("tree");
        git_treebuilder_free(dtb);
        git_treebuilder_free(rtb);
        git_tree *tree = NULL;
        git_signature *sig = NULL;
        git_buf buf = GIT_BUF_INIT;
        if (git_tree_lookup(&tree, repo, &rtree) != 0 ||
            git_signature_new(&sig, "Bench Operator", "bench@example.com", when + k * 60, 0) != 0)
            die("commit");
        char msg[64];
        snprintf(msg, sizeof(msg), "change %ld: data/f%02ld.txt\n", k + 1, fi);
        const git_commit *parents[1] = {parent};
        if (git_commit_create_buffer(&buf, repo, sig, sig, NULL, msg, tree, parent ? 1 : 0,
                                     parents) != 0)
            die("commit");
        char *armored = sshsig_sign(buf.ptr, buf.size);
        if (git_commit_create_with_signature(&commit, repo, buf.ptr, armored, "gpgsig") != 0)
            die("commit");
        free(armored);
        git_buf_dispose(&buf);
        git_signature_free(sig);
        git_tree_free(base);
        base = tree;
        git_commit_free(parent);
        if (git_commit_lookup(&parent, repo, &commit) != 0)
            die("commit");
    }
    if (pack) {
        /* Everything made above, as one pack. */
        git_buf packed = GIT_BUF_INIT;
        git_odb_writepack *wp = NULL;
        git_indexer_progress stats;
        memset(&stats, 0, sizeof(stats));
        if (git_mempack_dump(&packed, repo, mem) != 0 ||
            git_odb_write_pack(&wp, odb, NULL, NULL) != 0 ||
            wp->append(wp, packed.ptr, packed.size, &stats) != 0 || wp->commit(wp, &stats) != 0)
            die("write pack");
        wp->free(wp);
        git_buf_dispose(&packed);
        git_mempack_reset(mem);
    }
    git_reference *ref = NULL;
    if (git_reference_create(&ref, repo, "refs/heads/main", git_commit_id(parent), 1,
                             "bench_history") != 0)
        die("refs/heads/main");
    char hex[GIT_OID_HEXSZ + 1];
    printf("%s\n", git_oid_tostr(hex, sizeof(hex), git_commit_id(parent)));
    git_reference_free(ref);
    for (long i = 0; i < nfiles; i++)
        mcg_buf_free(&content[i]);
    free(content);
    free(blobs);
    git_tree_free(base);
    git_commit_free(parent);
    git_odb_free(odb); /* and the mempack backend it owns */
    git_repository_free(repo);
    git_libgit2_shutdown();
    sodium_memzero(sk, sizeof(sk));
    return 0;
}
