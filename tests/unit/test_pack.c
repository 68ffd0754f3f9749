/*
 * test_pack.c — pack/: the raw object parser (tables of commits, tags and
 * trees that must parse and that must be refused), delta application
 * (valid, truncated, out-of-range copies, oversize), the object id
 * collections, and on a small real pack made with libgit2's packbuilder in
 * a throwaway repository: the pack scan (whole, byte by byte, damaged,
 * truncated), the pack writer (REF_DELTA -> OFS_DELTA, re-indexed by
 * libgit2), stored-entry reuse, entry headers against git's encoding, and
 * the store of in-memory objects (git verify-pack reads it, git index-pack
 * makes the same index), and the delta graph check (the packbuilder's
 * REF_DELTA chains pass; a delta on its own result, a cycle, a missing
 * base, a delta on itself, a deep chain, oversize and damage are refused).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testlib.h"

#include "gitops/gitops.h"
#include "pack/pack_int.h"

#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#define H40 "0123456789abcdef0123456789abcdef01234567"
#define H40B "89abcdef0123456789ABCDEF0123456789abcdef"

/* ------------------------------------------------------------ raw objects */

typedef struct {
    const char *name;
    const char *in; /* NUL-terminated; len is strlen unless given */
    size_t len;
    bool ok;
    int parents; /* commits: how many parents are passed */
} raw_case;

static const raw_case commit_cases[] = {
    {"root commit", "tree " H40 "\nauthor a <a> 0 +0000\n\nmsg\n", 0, true, 0},
    {"tree line only", "tree " H40 "\n", 0, true, 0},
    {"one parent", "tree " H40 "\nparent " H40B "\nauthor x\n", 0, true, 1},
    {"merge", "tree " H40 "\nparent " H40 "\nparent " H40B "\n", 0, true, 2},
    {"upper-case hex", "tree " H40B "\n", 0, true, 0},
    {"a short parent line ends the list", "tree " H40 "\nparent 0123\n", 0, true, 0},
    {"empty", "", 0, false, 0},
    {"no tree line", "author a <a> 0 +0000\n", 0, false, 0},
    {"tree line without LF", "tree " H40, 0, false, 0},
    {"short tree id", "tree 0123456789abcdef0123456789abcdef0123456\n", 0, false, 0},
    {"long tree id", "tree " H40 "8\n", 0, false, 0},
    {"non-hex tree id", "tree 0123456789abcdef0123456789abcdef0123456g\n", 0, false, 0},
    {"two spaces", "tree  " H40 "\n", 0, false, 0},
    {"parent without LF", "tree " H40 "\nparent " H40 "x\n", 0, false, 0},
    {"non-hex parent", "tree " H40 "\nparent 0123456789abcdef0123456789abcdef0123456z\n", 0, false,
     0},
    {"NUL in the tree id", "tree 0123456789\0bcdef0123456789abcdef01234567\n", 46, false, 0},
};

static void count_parent(const git_oid *id, void *ctx)
{
    (void)id;
    (*(int *)ctx)++;
}

static void test_commit_links(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(commit_cases) / sizeof(commit_cases[0]); i++) {
        const raw_case *c = &commit_cases[i];
        size_t len = c->len ? c->len : strlen(c->in);
        /* an exact-size copy, so that ASan sees any read past the object */
        char *copy = mcg_malloc(len ? len : 1);
        memcpy(copy, c->in, len);
        git_oid tree;
        int parents = 0;
        bool ok = mcg_pack_commit_links(&tree, count_parent, &parents, copy, len);
        if (ok != c->ok)
            fail_msg("commit case '%s': got %s", c->name, ok ? "ok" : "refused");
        if (ok) {
            assert_int_equal(parents, c->parents);
            char hex[GIT_OID_HEXSZ + 1];
            git_oid_tostr(hex, sizeof(hex), &tree);
            assert_true(!strncasecmp(hex, c->in + 5, GIT_OID_HEXSZ));
        }
        /* without a callback too */
        assert_int_equal(mcg_pack_commit_links(&tree, NULL, NULL, copy, len), c->ok);
        free(copy);
    }
}

static const raw_case tag_cases[] = {
    {"tag", "object " H40 "\ntype commit\ntag v1\n", 0, true, 0},
    {"object line only", "object " H40 "\n", 0, true, 0},
    {"empty", "", 0, false, 0},
    {"no LF", "object " H40, 0, false, 0},
    {"misspelt", "objekt " H40 "\n", 0, false, 0},
    {"short id", "object 0123\n", 0, false, 0},
    {"type first", "type commit\nobject " H40 "\n", 0, false, 0},
};

static void test_tag_target(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(tag_cases) / sizeof(tag_cases[0]); i++) {
        const raw_case *c = &tag_cases[i];
        size_t len = strlen(c->in);
        char *copy = mcg_malloc(len ? len : 1);
        memcpy(copy, c->in, len);
        git_oid id;
        bool ok = mcg_pack_tag_target(&id, copy, len);
        if (ok != c->ok)
            fail_msg("tag case '%s': got %s", c->name, ok ? "ok" : "refused");
        if (ok) {
            git_oid want;
            git_oid_fromstr(&want, H40);
            assert_true(git_oid_equal(&id, &want));
        }
        free(copy);
    }
}

/* A tree entry's bytes: mode, space, name, NUL, 20 id bytes (id = byte fill). */
static size_t tree_entry(unsigned char *out, const char *mode, const char *name, unsigned char fill)
{
    size_t n = (size_t)sprintf((char *)out, "%s %s", mode, name);
    out[n++] = '\0';
    memset(out + n, fill, GIT_OID_RAWSZ);
    return n + GIT_OID_RAWSZ;
}

typedef struct {
    const char *name;
    const char *mode, *entry; /* one entry; entry NULL: use raw */
    int cut;                  /* bytes cut off the end */
    bool ok;
    unsigned want_mode;
} tree_case;

static const tree_case tree_cases[] = {
    {"file", "100644", "README", 0, true, 0100644},
    {"directory", "40000", ".mcgit", 0, true, 040000},
    {"submodule", "160000", "vendor", 0, true, 0160000},
    {"seven digits", "1234567", "x", 0, true, 01234567},
    {"eight digits", "10064444", "x", 0, false, 0},
    {"non-octal mode", "100648", "x", 0, false, 0},
    {"empty mode", "", "x", 0, false, 0},
    {"empty name", "100644", "", 0, false, 0},
    {"short id", "100644", "x", 1, false, 0},
    {"no id", "100644", "x", 20, false, 0},
    {"no NUL", "100644", "x", 21, false, 0},
};

static void test_tree_entries(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(tree_cases) / sizeof(tree_cases[0]); i++) {
        const tree_case *c = &tree_cases[i];
        unsigned char buf[128];
        size_t n = tree_entry(buf, c->mode, c->entry, 0xab) - (size_t)c->cut;
        unsigned char *copy = mcg_malloc(n);
        memcpy(copy, buf, n);
        const unsigned char *p = copy;
        mcg_pack_tree_entry e;
        bool ok = mcg_pack_tree_entry_next(&e, &p, copy + n);
        if (ok != c->ok)
            fail_msg("tree case '%s': got %s", c->name, ok ? "ok" : "refused");
        if (ok) {
            assert_int_equal(e.mode, c->want_mode);
            assert_int_equal(e.namelen, strlen(c->entry));
            assert_memory_equal(e.name, c->entry, e.namelen);
            assert_int_equal(e.id.id[0], 0xab);
            assert_ptr_equal(p, copy + n);
        }
        free(copy);
    }
    /* Several entries in a row. */
    unsigned char buf[256];
    size_t n = tree_entry(buf, "40000", "a", 1);
    n += tree_entry(buf + n, "100644", "b", 2);
    n += tree_entry(buf + n, "120000", "c", 3);
    const unsigned char *p = buf;
    mcg_pack_tree_entry e;
    for (int k = 1; k <= 3; k++) {
        assert_true(mcg_pack_tree_entry_next(&e, &p, buf + n));
        assert_int_equal(e.id.id[19], k);
    }
    assert_ptr_equal(p, buf + n);
}

static void test_parse_oid(void **state)
{
    (void)state;
    git_oid id;
    assert_true(mcg_pack_parse_oid(&id, H40));
    assert_true(mcg_pack_parse_oid(&id, H40 " trailing"));
    assert_false(mcg_pack_parse_oid(&id, "0123"));
    assert_false(mcg_pack_parse_oid(&id, ""));
    assert_false(mcg_pack_parse_oid(&id, "0123456789abcdef0123456789abcdef0123456 "));
    assert_false(mcg_pack_parse_oid(&id, "x123456789abcdef0123456789abcdef01234567"));
}

/* ------------------------------------------------------------ delta */

typedef struct {
    const char *name;
    unsigned char d[32];
    size_t dlen;
    size_t max;
    const char *want; /* NULL: refused */
} delta_case;

/* Base "hello world" (11 bytes). */
static const delta_case delta_cases[] = {
    {"copy and insert", {11, 11, 0x90, 5, 6, ' ', 't', 'h', 'e', 'r', 'e'}, 11, 100, "hello there"},
    {"copy with offset", {11, 5, 0x91, 6, 5}, 5, 100, "world"},
    {"insert only", {11, 3, 3, 'a', 'b', 'c'}, 6, 100, "abc"},
    {"empty result", {11, 0}, 2, 100, ""},
    {"result exactly max", {11, 3, 3, 'a', 'b', 'c'}, 6, 3, "abc"},
    {"oversize", {11, 3, 3, 'a', 'b', 'c'}, 6, 2, NULL},
    {"wrong base size", {10, 3, 3, 'a', 'b', 'c'}, 6, 100, NULL},
    {"truncated insert", {11, 3, 3, 'a', 'b'}, 5, 100, NULL},
    {"truncated copy operands", {11, 5, 0x91, 6}, 4, 100, NULL},
    {"truncated header", {11}, 1, 100, NULL},
    {"unterminated size", {0x8b}, 1, 100, NULL},
    {"copy past the base", {11, 5, 0x91, 8, 5}, 5, 100, NULL},
    {"copy offset past the base", {11, 1, 0x91, 12, 1}, 5, 100, NULL},
    {"copy length 0 is 0x10000", {11, 5, 0x80}, 3, 100, NULL},
    {"copy longer than the result", {11, 2, 0x90, 5}, 4, 100, NULL},
    {"insert longer than the result", {11, 2, 3, 'a', 'b', 'c'}, 6, 100, NULL},
    {"result shorter than announced", {11, 6, 0x90, 5}, 4, 100, NULL},
    {"opcode 0", {11, 1, 0, 1, 'a'}, 5, 100, NULL},
    {"huge offset bytes", {11, 1, 0x8f, 0xff, 0xff, 0xff, 0xff, 0x10, 1}, 8, 100, NULL},
};

static void test_delta_apply(void **state)
{
    (void)state;
    const unsigned char base[] = "hello world";
    for (size_t i = 0; i < sizeof(delta_cases) / sizeof(delta_cases[0]); i++) {
        const delta_case *c = &delta_cases[i];
        unsigned char *d = mcg_malloc(c->dlen ? c->dlen : 1);
        memcpy(d, c->d, c->dlen);
        unsigned char *b = mcg_malloc(11);
        memcpy(b, base, 11);
        size_t len = 12345;
        unsigned char *out = mcg_pack_delta_apply(&len, b, 11, d, c->dlen, c->max);
        if (!c->want && out)
            fail_msg("delta case '%s' was applied", c->name);
        if (c->want && !out)
            fail_msg("delta case '%s' was refused", c->name);
        if (out) {
            assert_int_equal(len, strlen(c->want));
            assert_memory_equal(out, c->want, len);
        }
        free(out);
        free(b);
        free(d);
    }
}

/* A deterministic text of n bytes: lines of letters. */
static unsigned char *sample_text(size_t n, unsigned seed)
{
    unsigned char *t = mcg_malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++)
        t[i] = (i % 50 == 49) ? '\n' : (unsigned char)('a' + (i * 7 + i / 50 * seed) % 26);
    return t;
}

typedef struct {
    const char *name;
    size_t blen, tlen;
    size_t edit_at, edit_len; /* bytes of the target changed (target = base resized, edited) */
    size_t max;               /* limit given to create */
    size_t want_max;          /* the delta must be at most this long (0: no bound) */
    bool refused;             /* create must return NULL */
} create_case;

static const create_case create_cases[] = {
    {"identical", 8192, 8192, 0, 0, 8192, 16, false},
    {"one line changed", 8192, 8192, 4000, 40, 8192, 80, false},
    {"appended", 4000, 4100, 4000, 0, 8192, 140, false},
    {"truncated", 4000, 3000, 0, 0, 8192, 16, false},
    {"edit at the start", 4000, 4000, 0, 30, 8192, 60, false},
    {"edit at the end", 4000, 4000, 3990, 10, 8192, 40, false},
    {"empty base", 0, 300, 0, 0, 8192, 0, false},
    {"empty target", 300, 0, 0, 0, 8192, 8, false},
    {"base shorter than a block", 10, 200, 0, 0, 8192, 0, false},
    {"large copy over 64 KiB", 200000, 200000, 100000, 5, 1 << 20, 60, false},
    {"over the limit", 4000, 4000, 0, 4000, 100, 0, true},
};

static void test_delta_create(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(create_cases) / sizeof(create_cases[0]); i++) {
        const create_case *c = &create_cases[i];
        unsigned char *base = sample_text(c->blen, 3);
        unsigned char *target = sample_text(c->tlen, 3);
        size_t common = c->blen < c->tlen ? c->blen : c->tlen;
        memcpy(target, base, common);
        for (size_t k = 0; k < c->edit_len && c->edit_at + k < c->tlen; k++)
            target[c->edit_at + k] = (unsigned char)('A' + k % 26);
        size_t dlen = 0, dlen2 = 0, outlen = 0;
        unsigned char *d = mcg_pack_delta_create(&dlen, base, c->blen, target, c->tlen, c->max);
        if (c->refused) {
            if (d)
                fail_msg("create case '%s' made a delta", c->name);
        } else {
            if (!d)
                fail_msg("create case '%s' made no delta", c->name);
            if (c->want_max && dlen > c->want_max)
                fail_msg("create case '%s': %zu bytes, want <= %zu", c->name, dlen, c->want_max);
            unsigned char *out = mcg_pack_delta_apply(&outlen, base, c->blen, d, dlen, c->tlen);
            if (!out || outlen != c->tlen || (c->tlen && memcmp(out, target, c->tlen)))
                fail_msg("create case '%s' does not apply back", c->name);
            free(out);
            /* the same input, the same delta */
            unsigned char *d2 =
                mcg_pack_delta_create(&dlen2, base, c->blen, target, c->tlen, c->max);
            assert_non_null(d2);
            assert_int_equal(dlen, dlen2);
            assert_memory_equal(d, d2, dlen);
            free(d2);
        }
        free(d);
        free(base);
        free(target);
    }
}

/* ------------------------------------------------------------ ids */

static void test_oidmap(void **state)
{
    (void)state;
    mcg_oidmap m = {0};
    git_oid id;
    uint64_t v = 0;
    memset(&id, 0, sizeof(id));
    assert_false(mcg_oidmap_get(&m, &id, &v)); /* empty: no table yet */
    for (uint32_t i = 0; i < 20000; i++) {
        memset(&id, 0, sizeof(id));
        memcpy(id.id + 16, &i, sizeof(i)); /* equal first 8 bytes: all hash alike */
        assert_true(mcg_oidmap_put(&m, &id, i * 3u));
    }
    assert_int_equal(m.n, 20000);
    for (uint32_t i = 0; i < 20000; i++) {
        memset(&id, 0, sizeof(id));
        memcpy(id.id + 16, &i, sizeof(i));
        assert_true(mcg_oidmap_get(&m, &id, &v));
        assert_int_equal(v, i * 3u);
        assert_false(mcg_oidmap_put(&m, &id, 7)); /* there already: value kept */
        assert_true(mcg_oidmap_get(&m, &id, NULL));
    }
    assert_true(mcg_oidmap_get(&m, &id, &v));
    assert_int_equal(v, 19999u * 3u);
    memset(&id, 0xff, sizeof(id));
    assert_false(mcg_oidmap_get(&m, &id, NULL));
    mcg_oidmap_reserve(&m, 100000); /* growing keeps every entry */
    assert_int_equal(m.n, 20000);
    assert_true(m.cap >= 2 * 120000);
    mcg_oidmap_free(&m);
    assert_int_equal(m.n, 0);
    assert_false(mcg_oidmap_get(&m, &id, NULL));
}

static void test_oidv(void **state)
{
    (void)state;
    mcg_oidv a = {0};
    git_oid id;
    for (int round = 0; round < 3; round++)
        for (int i = 999; i >= 0; i--) {
            memset(&id, 0, sizeof(id));
            id.id[0] = (unsigned char)(i >> 8);
            id.id[1] = (unsigned char)i;
            mcg_oidv_push(&a, &id);
        }
    assert_int_equal(a.n, 3000);
    mcg_oidv_sort(&a);
    assert_int_equal(a.n, 1000);
    for (size_t i = 1; i < a.n; i++)
        assert_true(git_oid_cmp(&a.v[i - 1], &a.v[i]) < 0);
    assert_true(mcg_oidv_has(&a, &a.v[500]));
    memset(&id, 0xee, sizeof(id));
    assert_false(mcg_oidv_has(&a, &id));
    mcg_oidv_free(&a);
    assert_false(mcg_oidv_has(&a, &id));
    mcg_oidv_sort(&a); /* empty: nothing to do */
}

/* ------------------------------------------------------------ a real pack */

typedef struct fixture {
    char dir[256];
    git_repository *repo;
    git_oid commits[8];
    size_t ncommits;
    git_oid signers_blob; /* .mcgit/allowed_signers of the last commit */
    git_oid signed_root;  /* its root tree */
    git_oid plain_root;   /* the first commit's root tree: no .mcgit */
    git_oid readme_last;  /* README's blob in the last commit */
    mcg_buf pack;         /* the packbuilder's stream of every object */
    size_t nobjects;
} fixture;

static git_oid blob(git_repository *repo, const char *text, size_t len)
{
    git_oid id;
    assert_int_equal(git_blob_create_from_buffer(&id, repo, text, len), 0);
    return id;
}

/* A root tree: README (text), and when signers: .mcgit/allowed_signers. */
static git_oid root_tree(fixture *f, const char *readme, size_t len, const char *signers)
{
    git_treebuilder *tb = NULL;
    git_oid id, readme_id = blob(f->repo, readme, len);
    assert_int_equal(git_treebuilder_new(&tb, f->repo, NULL), 0);
    if (signers) {
        git_treebuilder *sub = NULL;
        git_oid sub_id;
        f->signers_blob = blob(f->repo, signers, strlen(signers));
        assert_int_equal(git_treebuilder_new(&sub, f->repo, NULL), 0);
        assert_int_equal(git_treebuilder_insert(NULL, sub, "allowed_signers", &f->signers_blob,
                                                GIT_FILEMODE_BLOB),
                         0);
        assert_int_equal(git_treebuilder_write(&sub_id, sub), 0);
        git_treebuilder_free(sub);
        assert_int_equal(git_treebuilder_insert(NULL, tb, ".mcgit", &sub_id, GIT_FILEMODE_TREE), 0);
    }
    assert_int_equal(git_treebuilder_insert(NULL, tb, "README", &readme_id, GIT_FILEMODE_BLOB), 0);
    assert_int_equal(git_treebuilder_write(&id, tb), 0);
    git_treebuilder_free(tb);
    f->readme_last = readme_id;
    return id;
}

static int collect_stream(void *buf, size_t size, void *payload)
{
    mcg_buf_put(payload, buf, size);
    return 0;
}

/*
 * A bare repository with 6 signed commits, each changing a few lines of an
 * 8 KB README (so the packbuilder makes deltas); the last three carry
 * .mcgit/allowed_signers. Its objects are streamed into f->pack.
 */
static int setup_repo(void **state)
{
    fixture *f = mcg_calloc(1, sizeof(*f));
    mcg_test_tmpdir(f->dir, "pack");
    git_libgit2_init();
    assert_int_equal(git_repository_init(&f->repo, f->dir, 1), 0);
    mcg_sshkey key;
    mcg_sshkey_generate(&key);
    char text[8192];
    for (size_t i = 0; i < sizeof(text); i++)
        text[i] = (char)('a' + (i * 7 + i / 64) % 26);
    for (size_t i = 63; i < sizeof(text); i += 64)
        text[i] = '\n';
    git_signature *sig = NULL;
    assert_int_equal(git_signature_new(&sig, "T", "t@example.com", 1700000000, 0), 0);
    for (size_t c = 0; c < 6; c++) {
        memset(text + 640 * c, 'A' + (int)c, 40);
        git_oid tree_id =
            root_tree(f, text, sizeof(text), c >= 3 ? "t@example.com ssh-ed25519 AAAA\n" : NULL);
        if (c == 0)
            f->plain_root = tree_id;
        f->signed_root = tree_id;
        git_tree *tree = NULL;
        git_commit *parent = NULL;
        git_buf buf = GIT_BUF_INIT;
        assert_int_equal(git_tree_lookup(&tree, f->repo, &tree_id), 0);
        if (c)
            assert_int_equal(git_commit_lookup(&parent, f->repo, &f->commits[c - 1]), 0);
        char msg[32];
        snprintf(msg, sizeof(msg), "commit %zu\n", c);
        assert_int_equal(git_commit_create_buffer(&buf, f->repo, sig, sig, NULL, msg, tree,
                                                  c ? 1 : 0, (const git_commit **)&parent),
                         0);
        char *armored = mcg_sshsig_sign(&key, buf.ptr, buf.size);
        assert_int_equal(
            git_commit_create_with_signature(&f->commits[c], f->repo, buf.ptr, armored, "gpgsig"),
            0);
        free(armored);
        git_buf_dispose(&buf);
        git_commit_free(parent);
        git_tree_free(tree);
        f->ncommits++;
    }
    git_signature_free(sig);
    mcg_sshkey_wipe(&key);
    git_packbuilder *pb = NULL;
    assert_int_equal(git_packbuilder_new(&pb, f->repo), 0);
    for (size_t c = 0; c < f->ncommits; c++)
        assert_int_equal(git_packbuilder_insert_commit(pb, &f->commits[c]), 0);
    assert_int_equal(git_packbuilder_foreach(pb, collect_stream, &f->pack), 0);
    f->nobjects = git_packbuilder_object_count(pb);
    git_packbuilder_free(pb);
    *state = f;
    return 0;
}

static int teardown_repo(void **state)
{
    fixture *f = *state;
    git_repository_free(f->repo);
    git_libgit2_shutdown();
    mcg_test_rm_rf(f->dir);
    mcg_buf_free(&f->pack);
    free(f);
    return 0;
}

/* in_pack for the scan: ids in the repo, except one left out (may be NULL). */
typedef struct in_repo {
    git_odb *odb;
    const git_oid *except;
} in_repo;

static bool in_repo_cb(const git_oid *id, void *ctx)
{
    in_repo *r = ctx;
    return !(r->except && git_oid_equal(id, r->except)) && git_odb_exists(r->odb, id);
}

/* Scan data in chunks of at most step bytes. */
static mcg_packscan *scan(const unsigned char *data, size_t len, size_t step)
{
    mcg_pack_scanner *p = mcg_pack_scan_start();
    for (size_t off = 0; off < len; off += step)
        mcg_pack_scan_feed(p, data + off, len - off < step ? len - off : step);
    return mcg_pack_scan_finish(p);
}

static void test_scan_whole(void **state)
{
    fixture *f = *state;
    const size_t steps[] = {f->pack.len, 4096, 7, 1};
    git_odb *odb = NULL, *empty = NULL;
    assert_int_equal(git_repository_odb(&odb, f->repo), 0);
    assert_int_equal(git_odb_new(&empty), 0);
    for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
        mcg_packscan *s = scan((unsigned char *)f->pack.ptr, f->pack.len, steps[k]);
        in_repo all = {odb, NULL};
        assert_non_null(s);
        /* every commit signature is checked (crypto only: the memo) */
        assert_int_equal(mcg_packscan_checked(s), f->ncommits);
        assert_int_equal(mcg_sigmemo_count(mcg_packscan_memo(s)), f->ncommits);
        mcg_packscan_confirm(s, in_repo_cb, &all, odb);
        assert_true(mcg_packscan_complete(s));
        /* connected: every link in the pack */
        const git_oid *by = NULL, *missing = NULL;
        assert_int_equal(mcg_packscan_connected(s, in_repo_cb, &all, empty, &by, &missing), 0);
        /* ... and not when a blob is said to be missing: named with the tree that needs it */
        in_repo but = {odb, &f->readme_last};
        assert_int_equal(mcg_packscan_connected(s, in_repo_cb, &but, empty, &by, &missing), 1);
        assert_true(git_oid_equal(missing, &f->readme_last));
        assert_non_null(by);
        assert_true(git_oid_equal(by, &f->signed_root));
        /* the signer file hints */
        bool present = true;
        git_oid blob_id;
        assert_true(mcg_packscan_signers(s, &f->signed_root, &present, &blob_id));
        assert_true(present);
        assert_true(git_oid_equal(&blob_id, &f->signers_blob));
        assert_true(mcg_packscan_signers(s, &f->plain_root, &present, &blob_id));
        assert_false(present);
        git_oid unknown;
        memset(&unknown, 0x42, sizeof(unknown));
        assert_false(mcg_packscan_signers(s, &unknown, &present, &blob_id));
        /* the backend serves the commits, byte for byte */
        git_odb_backend *be = NULL;
        assert_int_equal(mcg_packscan_backend(&be, s), 0);
        assert_non_null(be);
        for (size_t c = 0; c < f->ncommits; c++) {
            void *data = NULL;
            size_t len = 0;
            git_object_t type;
            git_odb_object *obj = NULL;
            assert_int_equal(be->read(&data, &len, &type, be, &f->commits[c]), 0);
            assert_int_equal(git_odb_read(&obj, odb, &f->commits[c]), 0);
            assert_int_equal(type, GIT_OBJECT_COMMIT);
            assert_int_equal(len, git_odb_object_size(obj));
            assert_memory_equal(data, git_odb_object_data(obj), len);
            assert_int_equal(be->exists(be, &f->commits[c]), 1);
            git_odb_object_free(obj);
            git_odb_backend_data_free(be, data);
        }
        assert_int_equal(be->exists(be, &unknown), 0);
        be->free(be);
        mcg_packscan_free(s);
    }
    git_odb_free(empty);
    git_odb_free(odb);
}

/* An id the indexer did not write leaves the scan incomplete: nothing it knows is used. */
static void test_scan_unconfirmed(void **state)
{
    fixture *f = *state;
    git_odb *odb = NULL;
    assert_int_equal(git_repository_odb(&odb, f->repo), 0);
    mcg_packscan *s = scan((unsigned char *)f->pack.ptr, f->pack.len, 65536);
    in_repo but = {odb, &f->signed_root};
    mcg_packscan_confirm(s, in_repo_cb, &but, odb);
    assert_false(mcg_packscan_complete(s));
    bool present;
    git_oid blob_id;
    assert_false(mcg_packscan_signers(s, &f->signed_root, &present, &blob_id));
    git_odb_backend *be = (git_odb_backend *)1;
    assert_int_equal(mcg_packscan_backend(&be, s), 0);
    assert_null(be);
    mcg_packscan_free(s);
    git_odb_free(odb);
}

/* Damaged and truncated packs: never complete, never a crash. */
static void test_scan_damaged(void **state)
{
    fixture *f = *state;
    git_odb *odb = NULL;
    assert_int_equal(git_repository_odb(&odb, f->repo), 0);
    in_repo all = {odb, NULL};
    unsigned char *copy = mcg_malloc(f->pack.len);
    /* every truncation at a stride, and a few flipped bytes */
    for (size_t len = 0; len < f->pack.len - GIT_OID_RAWSZ; len += 97) {
        memcpy(copy, f->pack.ptr, len);
        mcg_packscan *s = scan(copy, len, 1000);
        mcg_packscan_confirm(s, in_repo_cb, &all, odb);
        assert_false(mcg_packscan_complete(s));
        mcg_packscan_free(s);
    }
    for (size_t at = 12; at < f->pack.len - GIT_OID_RAWSZ; at += f->pack.len / 23) {
        memcpy(copy, f->pack.ptr, f->pack.len);
        copy[at] ^= 0x5a;
        mcg_packscan *s = scan(copy, f->pack.len, 333);
        mcg_packscan_confirm(s, in_repo_cb, &all, odb); /* complete or not; no crash */
        mcg_packscan_free(s);
    }
    /* not a pack at all */
    mcg_packscan *s = scan((const unsigned char *)"PACK\0\0\0\x09garbage", 15, 15);
    assert_false(mcg_packscan_complete(s));
    assert_int_equal(mcg_packscan_checked(s), 0);
    mcg_packscan_free(s);
    /* abort without finishing, and NULL everywhere */
    mcg_pack_scanner *p = mcg_pack_scan_start();
    mcg_pack_scan_feed(p, f->pack.ptr, f->pack.len / 2);
    mcg_pack_scan_abort(p);
    mcg_pack_scan_abort(NULL);
    assert_null(mcg_pack_scan_finish(NULL));
    mcg_packscan_free(NULL);
    assert_int_equal(mcg_packscan_checked(NULL), 0);
    assert_false(mcg_packscan_complete(NULL));
    free(copy);
    git_odb_free(odb);
}

/* Index the pack file at path into dir with libgit2; its object count. */
static size_t index_file(const char *path, const char *dir)
{
    git_indexer *idx = NULL;
    git_indexer_options o;
    git_indexer_options_init(&o, GIT_INDEXER_OPTIONS_VERSION);
    git_indexer_progress st = {0};
    FILE *fp = fopen(path, "rb");
    unsigned char buf[4096];
    size_t n;
    assert_non_null(fp);
    assert_int_equal(git_indexer_new(&idx, dir, 0644, NULL, &o), 0);
    while ((n = fread(buf, 1, sizeof(buf), fp)) > 0)
        assert_int_equal(git_indexer_append(idx, buf, n, &st), 0);
    fclose(fp);
    assert_int_equal(git_indexer_commit(idx, &st), 0);
    git_indexer_free(idx);
    return st.total_objects;
}

static void test_writer(void **state)
{
    fixture *f = *state;
    char path[512], dir[512];
    snprintf(path, sizeof(path), "%s/out.pack", f->dir);
    snprintf(dir, sizeof(dir), "%s/idx1", f->dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    mcg_pack_writer *w = NULL;
    mcg_err err = {0};
    assert_int_equal(mcg_pack_writer_new(&w, fd, &err), 0);
    /* in uneven pieces, as libgit2 hands them over */
    for (size_t off = 0, step = 1; off < f->pack.len; off += step, step = step * 3 % 1000 + 1)
        assert_int_equal(
            mcg_pack_writer_stream(w, f->pack.ptr + off,
                                   f->pack.len - off < step ? f->pack.len - off : step),
            0);
    assert_true(mcg_pack_writer_done(w));
    assert_null(mcg_pack_writer_failure(w));
    assert_int_equal(mcg_pack_writer_errno(w), 0);
    assert_true(w->ofs > 0); /* libgit2's REF_DELTAs became OFS_DELTAs */
    assert_int_equal(w->refs, 0);
    assert_true(mcg_pack_writer_written(w) < f->pack.len);
    close(fd);
    /* data after the end is refused */
    assert_int_not_equal(mcg_pack_writer_stream(w, "x", 1), 0);
    assert_non_null(mcg_pack_writer_failure(w));
    mcg_pack_writer_free(w);
    mcg_pack_writer_free(NULL);
    assert_int_equal(index_file(path, dir), f->nobjects);

    /* a stream that is not a pack */
    fd = open(path, O_WRONLY | O_TRUNC);
    assert_int_equal(mcg_pack_writer_new(&w, fd, &err), 0);
    assert_int_not_equal(mcg_pack_writer_stream(w, "PACK\0\0\0\3\0\0\0\1", 12), 0);
    assert_non_null(mcg_pack_writer_failure(w));
    mcg_pack_writer_free(w);
    close(fd);
}

static void test_reuse(void **state)
{
    fixture *f = *state;
    char packdir[512], path[512], dir[512];
    snprintf(packdir, sizeof(packdir), "%s/objects/pack", f->dir);
    snprintf(path, sizeof(path), "%s/reused.pack", f->dir);
    snprintf(dir, sizeof(dir), "%s/idx2", f->dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    assert_null(mcg_pack_reuse_open(packdir)); /* no pack yet */
    git_packbuilder *pb = NULL;
    assert_int_equal(git_packbuilder_new(&pb, f->repo), 0);
    for (size_t c = 0; c < f->ncommits; c++)
        assert_int_equal(git_packbuilder_insert_commit(pb, &f->commits[c]), 0);
    assert_int_equal(git_packbuilder_write(pb, packdir, 0644, NULL, NULL), 0);
    git_packbuilder_free(pb);

    mcg_pack_reuse *r = mcg_pack_reuse_open(packdir);
    assert_non_null(r);
    git_odb *odb = NULL;
    assert_int_equal(git_repository_odb(&odb, f->repo), 0);
    mcg_pack_place *v = mcg_calloc(f->nobjects, sizeof(*v));
    size_t n = 0;
    /* every object of the fixture, found in the pack */
    mcg_packscan *s = scan((unsigned char *)f->pack.ptr, f->pack.len, 65536);
    for (size_t i = 0; i < s->ids.cap; i++)
        if (s->ids.used[i])
            v[n++].id = s->ids.keys[i];
    git_oid blobs[2] = {f->readme_last, f->signers_blob};
    for (size_t i = 0; i < 2; i++)
        v[n++].id = blobs[i];
    mcg_packscan_free(s);
    for (size_t i = 0; i < n; i++)
        assert_true(mcg_pack_reuse_find(r, &v[i]));
    mcg_pack_place nowhere;
    memset(&nowhere, 0x17, sizeof(nowhere));
    assert_false(mcg_pack_reuse_find(r, &nowhere));
    assert_int_equal(nowhere.pack, -1);
    mcg_pack_reuse_order(v, n);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    mcg_pack_writer *w = NULL;
    mcg_err err = {0};
    assert_int_equal(mcg_pack_writer_new(&w, fd, &err), 0);
    assert_int_equal(mcg_pack_writer_begin(w, (uint32_t)n), 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(mcg_pack_reuse_copy(w, r, &v[i], odb, &err), 0);
    assert_int_equal(mcg_pack_writer_end(w), 0);
    mcg_pack_writer_free(w);
    close(fd);
    assert_int_equal(index_file(path, dir), n);
    free(v);
    git_odb_free(odb);
    mcg_pack_reuse_free(r);
    mcg_pack_reuse_free(NULL);
}

/* Index the pack file at path into dir with libgit2, completing a thin pack from odb: the rc. */
static int index_thin(const char *path, const char *dir, git_odb *odb)
{
    git_indexer *idx = NULL;
    git_indexer_options o;
    git_indexer_options_init(&o, GIT_INDEXER_OPTIONS_VERSION);
    git_indexer_progress st = {0};
    FILE *fp = fopen(path, "rb");
    unsigned char buf[4096];
    size_t n;
    int rc = 0;
    assert_non_null(fp);
    assert_int_equal(git_indexer_new(&idx, dir, 0644, odb, &o), 0);
    while ((n = fread(buf, 1, sizeof(buf), fp)) > 0 && !rc)
        rc = git_indexer_append(idx, buf, n, &st);
    fclose(fp);
    if (!rc)
        rc = git_indexer_commit(idx, &st);
    git_indexer_free(idx);
    return rc;
}

/* The id of name in tree id. */
static git_oid entry_id(git_repository *repo, const git_oid *tree_id, const char *name)
{
    git_tree *t = NULL;
    assert_int_equal(git_tree_lookup(&t, repo, tree_id), 0);
    const git_tree_entry *e = git_tree_entry_byname(t, name);
    assert_non_null(e);
    git_oid id = *git_tree_entry_id(e);
    git_tree_free(t);
    return id;
}

/*
 * A thin pack of the last commit against the one before: every object a
 * delta on its parent's version, named by id (REF_DELTA); libgit2's indexer
 * completes it from the repository and refuses it without; the scan follows
 * it given the repository's objects, and names the missing base without.
 */
static void test_thin(void **state)
{
    fixture *f = *state;
    char path[512], dir[512], dir2[512], objects[512];
    snprintf(path, sizeof(path), "%s/thin.pack", f->dir);
    snprintf(dir, sizeof(dir), "%s/idx3", f->dir);
    snprintf(dir2, sizeof(dir2), "%s/idx4", f->dir);
    snprintf(objects, sizeof(objects), "%s/objects", f->dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    assert_int_equal(mkdir(dir2, 0755), 0);
    size_t last = f->ncommits - 1;
    git_commit *c = NULL, *parent = NULL;
    assert_int_equal(git_commit_lookup(&c, f->repo, &f->commits[last]), 0);
    assert_int_equal(git_commit_lookup(&parent, f->repo, &f->commits[last - 1]), 0);
    git_oid ptree = *git_commit_tree_id(parent);
    git_oid preadme = entry_id(f->repo, &ptree, "README");
    mcg_pack_place v[3];
    memset(v, 0, sizeof(v));
    v[0] = (mcg_pack_place){
        .id = f->commits[last], .pack = -1, .has_base = true, .base = f->commits[last - 1]};
    v[1] = (mcg_pack_place){.id = f->signed_root, .pack = -1, .has_base = true, .base = ptree};
    v[2] = (mcg_pack_place){.id = f->readme_last, .pack = -1, .has_base = true, .base = preadme};
    mcg_oidmap have = {0};
    mcg_oidmap_put(&have, &f->commits[last - 1], 0);
    mcg_oidmap_put(&have, &ptree, 0);
    mcg_oidmap_put(&have, &preadme, 0);
    git_odb *odb = NULL, *empty = NULL;
    assert_int_equal(git_repository_odb(&odb, f->repo), 0);
    assert_int_equal(git_odb_new(&empty), 0);

    /* self-contained first (no have set), then thin: smaller, with REF_DELTAs */
    uint64_t sizes[2];
    for (int thin = 0; thin < 2; thin++) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        mcg_pack_writer *w = NULL;
        mcg_err err = {0};
        assert_int_equal(mcg_pack_writer_new(&w, fd, &err), 0);
        if (thin)
            mcg_pack_writer_thin(w, &have);
        assert_int_equal(mcg_pack_writer_begin(w, 3), 0);
        for (size_t i = 0; i < 3; i++)
            assert_int_equal(mcg_pack_write_object(w, odb, &v[i], &err), 0);
        assert_int_equal(mcg_pack_writer_end(w), 0);
        sizes[thin] = mcg_pack_writer_written(w);
        if (thin) {
            assert_int_equal(w->refs, 3); /* the README: 8 KB as a delta of a few bytes */
            assert_int_equal(mcg_pack_thin_depth(w, &f->readme_last), 1);
        } else {
            assert_int_equal(w->refs, 0);
        }
        mcg_pack_writer_free(w);
        close(fd);
    }
    assert_true(sizes[1] * 3 < sizes[0] * 2); /* the commit's signature does not shrink */
    /* libgit2 completes the thin pack from the repository, and cannot without it */
    assert_int_equal(index_thin(path, dir, odb), 0);
    assert_int_not_equal(index_thin(path, dir2, NULL), 0);

    /* the scan follows it with the repository's objects ... */
    unsigned char *data = NULL;
    size_t len = 0;
    {
        FILE *fp = fopen(path, "rb");
        assert_non_null(fp);
        fseek(fp, 0, SEEK_END);
        len = (size_t)ftell(fp);
        rewind(fp);
        data = mcg_malloc(len);
        assert_int_equal(fread(data, 1, len, fp), len);
        fclose(fp);
    }
    in_repo all = {odb, NULL};
    mcg_pack_scanner *p = mcg_pack_scan_start();
    assert_int_equal(mcg_pack_scan_bases(p, objects), 0);
    mcg_pack_scan_feed(p, data, len);
    mcg_packscan *s = mcg_pack_scan_finish(p);
    mcg_packscan_confirm(s, in_repo_cb, &all, odb);
    assert_true(mcg_packscan_complete(s));
    assert_int_equal(mcg_packscan_checked(s), 1);
    bool present = false;
    git_oid blob_id;
    /* the root tree was read from a delta on the repository's; .mcgit is the repository's */
    assert_false(mcg_packscan_signers(s, &f->signed_root, &present, &blob_id));
    git_oid missing;
    assert_false(mcg_packscan_missing_base(s, empty, &missing));
    mcg_packscan_free(s);
    /* ... and without them is incomplete, naming a base an empty repository lacks */
    s = scan(data, len, 100);
    mcg_packscan_confirm(s, in_repo_cb, &all, odb);
    assert_false(mcg_packscan_complete(s));
    assert_true(mcg_packscan_missing_base(s, empty, &missing));
    assert_true(git_oid_equal(&missing, &f->commits[last - 1]));
    assert_false(mcg_packscan_missing_base(s, odb, &missing));
    mcg_packscan_free(s);
    p = mcg_pack_scan_start();
    assert_int_not_equal(mcg_pack_scan_bases(p, "/nonexistent/objects"), 0);
    mcg_pack_scan_abort(p);

    free(data);
    mcg_oidmap_free(&have);
    git_odb_free(empty);
    git_odb_free(odb);
    git_commit_free(parent);
    git_commit_free(c);
}

/*
 * Stored entries in a thin pack: the old and new README packed together
 * (one stored as a delta on the other, as the packbuilder chose), the new
 * one copied for a reader that has the old one: either its stored delta,
 * naming the old README (REF_DELTA), or, stored whole, made a delta on it.
 * Either way a REF_DELTA the reader completes from the repository.
 */
static void test_thin_reuse(void **state)
{
    fixture *f = *state;
    char packdir[512], path[512], dir[512];
    snprintf(packdir, sizeof(packdir), "%s/thinpacks", f->dir);
    snprintf(path, sizeof(path), "%s/thin-reused.pack", f->dir);
    snprintf(dir, sizeof(dir), "%s/idx5", f->dir);
    assert_int_equal(mkdir(packdir, 0755), 0);
    assert_int_equal(mkdir(dir, 0755), 0);
    git_commit *parent = NULL;
    assert_int_equal(git_commit_lookup(&parent, f->repo, &f->commits[f->ncommits - 2]), 0);
    git_oid old = entry_id(f->repo, git_commit_tree_id(parent), "README");
    git_commit_free(parent);
    git_packbuilder *pb = NULL;
    assert_int_equal(git_packbuilder_new(&pb, f->repo), 0);
    assert_int_equal(git_packbuilder_insert(pb, &old, NULL), 0);
    assert_int_equal(git_packbuilder_insert(pb, &f->readme_last, NULL), 0);
    assert_int_equal(git_packbuilder_write(pb, packdir, 0644, NULL, NULL), 0);
    git_packbuilder_free(pb);
    mcg_pack_reuse *r = mcg_pack_reuse_open(packdir);
    assert_non_null(r);
    mcg_pack_place o = {.id = f->readme_last, .has_base = true, .base = old};
    assert_true(mcg_pack_reuse_find(r, &o));
    mcg_oidmap have = {0};
    mcg_oidmap_put(&have, &old, 0);
    git_odb *odb = NULL;
    assert_int_equal(git_repository_odb(&odb, f->repo), 0);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    mcg_pack_writer *w = NULL;
    mcg_err err = {0};
    assert_int_equal(mcg_pack_writer_new(&w, fd, &err), 0);
    mcg_pack_writer_thin(w, &have);
    assert_int_equal(mcg_pack_writer_begin(w, 1), 0);
    assert_int_equal(mcg_pack_reuse_copy(w, r, &o, odb, &err), 0);
    assert_int_equal(mcg_pack_writer_end(w), 0);
    assert_int_equal(w->refs, 1);
    assert_true(mcg_pack_writer_written(w) < 12 + 20 + 200); /* not the 8 KB README whole */
    mcg_pack_writer_free(w);
    close(fd);
    assert_int_equal(index_thin(path, dir, odb), 0);
    mcg_oidmap_free(&have);
    git_odb_free(odb);
    mcg_pack_reuse_free(r);
}

/* ------------------------------------------------------------ entry headers */

typedef struct {
    const char *name;
    int type;
    uint64_t size, ofs;
    const char *ref; /* REF_DELTA: 40 hex digits */
    unsigned char want[32];
    size_t want_len;
} header_case;

/* As git's pack-format.txt encodes them (and unpack_object_header, get_delta_base read them). */
static const header_case header_cases[] = {
    {"empty blob", MCG_PACK_BLOB, 0, 0, NULL, {0x30}, 1},
    {"15 bytes: one byte", MCG_PACK_BLOB, 15, 0, NULL, {0x3f}, 1},
    {"16 bytes: two", MCG_PACK_BLOB, 16, 0, NULL, {0xb0, 0x01}, 2},
    {"commit of 1000", MCG_PACK_COMMIT, 1000, 0, NULL, {0x98, 0x3e}, 2},
    {"tree of 2^11", MCG_PACK_TREE, 2048, 0, NULL, {0xa0, 0x80, 0x01}, 3},
    {"tag of 2^32 - 1", MCG_PACK_TAG, 0xffffffffu, 0, NULL, {0xcf, 0xff, 0xff, 0xff, 0x7f}, 5},
    {"OFS_DELTA 1 back", MCG_PACK_OFS, 5, 1, NULL, {0x65, 0x01}, 2},
    {"OFS_DELTA 127 back", MCG_PACK_OFS, 5, 127, NULL, {0x65, 0x7f}, 2},
    {"OFS_DELTA 128 back: each continuation minus one",
     MCG_PACK_OFS,
     5,
     128,
     NULL,
     {0x65, 0x80, 0x00},
     3},
    {"OFS_DELTA 16511 back", MCG_PACK_OFS, 5, 16511, NULL, {0x65, 0xff, 0x7f}, 3},
    {"OFS_DELTA 16512 back", MCG_PACK_OFS, 5, 16512, NULL, {0x65, 0x80, 0x80, 0x00}, 4},
    {"REF_DELTA",
     MCG_PACK_REF,
     20,
     0,
     H40,
     {0xf4, 0x01, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01,
      0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67},
     22},
};

static void test_entry_header(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(header_cases) / sizeof(header_cases[0]); i++) {
        const header_case *c = &header_cases[i];
        unsigned char h[32];
        git_oid ref;
        if (c->ref)
            assert_int_equal(git_oid_fromstr(&ref, c->ref), 0);
        size_t n = mcg_pack_entry_header(h, c->type, c->size, c->ofs, c->ref ? &ref : NULL);
        if (n != c->want_len || memcmp(h, c->want, n) != 0)
            fail_msg("%s: %zu bytes, want %zu", c->name, n, c->want_len);
    }
    assert_int_equal(mcg_pack_type_of(GIT_OBJECT_BLOB), MCG_PACK_BLOB);
    assert_int_equal(mcg_pack_type_of(GIT_OBJECT_OFS_DELTA), MCG_PACK_NONE);
}

/* ------------------------------------------------------------ store */

typedef struct {
    mcg_pack_obj *v;
    size_t n, cap;
} obj_list;

static void obj_push(obj_list *l, git_object_t type, const void *data, size_t len)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->v = mcg_realloc(l->v, l->cap * sizeof(*l->v));
    }
    mcg_pack_obj *o = &l->v[l->n++];
    assert_int_equal(git_odb_hash(&o->id, data, len, type), 0);
    o->type = type;
    o->len = len;
    o->data = mcg_malloc(len ? len : 1);
    memcpy(o->data, data, len);
}

/* Run a shell command; its exit status. */
static int sh(const char *fmt, const char *a, const char *b)
{
    char *cmd = mcg_sprintf(fmt, a, b);
    int rc = system(cmd);
    free(cmd);
    return rc;
}

static void test_store(void **state)
{
    fixture *f = *state;
    obj_list l = {0};
    /* the fixture's commits, trees and blobs, and blobs of every header length */
    git_odb *odb = NULL;
    assert_int_equal(git_repository_odb(&odb, f->repo), 0);
    for (size_t c = 0; c < f->ncommits; c++) {
        git_commit *commit = NULL;
        assert_int_equal(git_commit_lookup(&commit, f->repo, &f->commits[c]), 0);
        git_odb_object *o = NULL;
        assert_int_equal(git_odb_read(&o, odb, &f->commits[c]), 0);
        obj_push(&l, GIT_OBJECT_COMMIT, git_odb_object_data(o), git_odb_object_size(o));
        git_odb_object_free(o);
        assert_int_equal(git_odb_read(&o, odb, git_commit_tree_id(commit)), 0);
        obj_push(&l, GIT_OBJECT_TREE, git_odb_object_data(o), git_odb_object_size(o));
        git_odb_object_free(o);
        git_commit_free(commit);
    }
    git_odb_free(odb);
    size_t big = 300000;
    unsigned char *data = mcg_malloc(big);
    for (size_t i = 0; i < big; i++)
        data[i] = (unsigned char)(i * 2654435761u >> 13);
    for (size_t len = 0; len < big; len = len ? len * 3 : 1)
        obj_push(&l, GIT_OBJECT_BLOB, data, len);
    obj_push(&l, GIT_OBJECT_BLOB, data, big);
    free(data);

    char packdir[512], other[512];
    snprintf(packdir, sizeof(packdir), "%s/store/objects/pack", f->dir);
    mcg_err err = {0};
    assert_int_equal(mcg_pack_store(packdir, l.v, l.n, &err), 0);
    /* git reads the pack, and indexes it to the same bytes as our index */
    assert_int_equal(sh("git verify-pack '%s'/pack-*.idx >/dev/null%s", packdir, ""), 0);
    snprintf(other, sizeof(other), "%s/store/other.idx", f->dir);
    assert_int_equal(sh("git index-pack -o '%s' '%s'/pack-*.pack >/dev/null", other, packdir), 0);
    assert_int_equal(sh("cmp -s '%s' '%s'/pack-*.idx", other, packdir), 0);
    /* every object reads back through libgit2 */
    git_odb_backend *be = NULL;
    char objects[512];
    snprintf(objects, sizeof(objects), "%s/store/objects", f->dir);
    assert_int_equal(git_odb_new(&odb), 0);
    assert_int_equal(git_odb_backend_pack(&be, objects), 0);
    assert_int_equal(git_odb_add_backend(odb, be, 1), 0);
    for (size_t i = 0; i < l.n; i++) {
        git_odb_object *o = NULL;
        assert_int_equal(git_odb_read(&o, odb, &l.v[i].id), 0);
        assert_int_equal(git_odb_object_size(o), l.v[i].len);
        if (l.v[i].len)
            assert_memory_equal(git_odb_object_data(o), l.v[i].data, l.v[i].len);
        git_odb_object_free(o);
    }
    git_odb_free(odb);
    /* the same objects again: the same pack, written over itself */
    assert_int_equal(mcg_pack_store(packdir, l.v, l.n, &err), 0);
    assert_int_equal(sh("test $(ls '%s' | wc -l) = 2%s", packdir, ""), 0);
    /* a pack directory that cannot be made: an error, nothing written */
    char blocked[512];
    snprintf(blocked, sizeof(blocked), "%s/store/file", f->dir);
    assert_int_equal(sh("touch '%s'%s", blocked, ""), 0);
    snprintf(blocked, sizeof(blocked), "%s/store/file/pack", f->dir);
    assert_int_not_equal(mcg_pack_store(blocked, l.v, l.n, &err), 0);
    assert_true(err.msg[0] != '\0');
    for (size_t i = 0; i < l.n; i++)
        free(l.v[i].data);
    free(l.v);
}

/* ------------------------------------------------------------ delta graph */

/* One entry of a hand-made pack: whole (type 1-4), or a delta on entry base (OFS) or id ref. */
typedef struct gentry {
    int type;
    const char *data; /* a delta's instructions, or the object */
    size_t len;
    int base;        /* OFS: the base's entry number */
    const char *ref; /* REF: the base's content as a blob ("a\n"), hashed here */
} gentry;

/* The id of blob content c. */
static git_oid blob_id(const char *c)
{
    git_oid id;
    assert_int_equal(git_odb_hash(&id, c, strlen(c), GIT_OBJECT_BLOB), 0);
    return id;
}

/* A pack of the n entries, its SHA-1 trailer included. */
static void mkpack(mcg_buf *out, const gentry *e, size_t n)
{
    unsigned char h[64], z[1024], sum[32];
    uint64_t offs[16];
    unsigned int slen = 0;
    memcpy(h, "PACK\0\0\0\2\0\0\0", 11);
    h[11] = (unsigned char)n;
    mcg_buf_put(out, h, 12);
    for (size_t i = 0; i < n; i++) {
        offs[i] = out->len;
        git_oid ref;
        if (e[i].ref)
            ref = blob_id(e[i].ref);
        uint64_t dist =
            e[i].type == MCG_PACK_OFS ? (e[i].base < 0 ? 0 : offs[i] - offs[e[i].base]) : 0;
        size_t hl = mcg_pack_entry_header(h, e[i].type, e[i].len, dist, e[i].ref ? &ref : NULL);
        if (e[i].type == MCG_PACK_OFS && dist == 0)
            h[hl++] = 0; /* distance 0: the delta itself */
        mcg_buf_put(out, h, hl);
        uLongf zl = sizeof(z);
        assert_int_equal(compress(z, &zl, (const Bytef *)e[i].data, e[i].len), Z_OK);
        mcg_buf_put(out, z, zl);
    }
    EVP_Digest(out->ptr, out->len, sum, &slen, EVP_sha1(), NULL);
    mcg_buf_put(out, sum, 20);
}

/* The graph check of data; its message in err. */
static size_t graph_hold; /* lim.hold of graph_check */

static int graph_check(const void *data, size_t len, git_odb *have, unsigned depth, mcg_err *err)
{
    char dir[256];
    mcg_pack_graph *g = NULL;
    mcg_pack_limits lim = {.max_object = 1 << 20,
                           .ratio = 1024,
                           .floor = 64 << 20,
                           .max_depth = depth,
                           .hold = graph_hold};
    mcg_test_tmpdir(dir, "graph");
    assert_int_equal(mcg_pack_graph_new(&g, dir, err), 0);
    for (size_t off = 0; off < len; off += 7)
        mcg_pack_graph_feed(g, (const char *)data + off, len - off < 7 ? len - off : 7);
    int rc = mcg_pack_graph_check(g, have, &lim, "the pack", NULL, err);
    mcg_pack_graph_free(g);
    mcg_test_rm_rf(dir);
    return rc;
}

static void test_graph_packbuilder(void **state)
{
    fixture *f = *state;
    mcg_err err = {0};
    /* libgit2's packbuilder writes REF_DELTA chains: every one resolves */
    assert_int_equal(graph_check(f->pack.ptr, f->pack.len, NULL, 1000, &err), 0);
    /* so they do when every base kept is dropped and rebuilt from its chain */
    graph_hold = 1;
    assert_int_equal(graph_check(f->pack.ptr, f->pack.len, NULL, 1000, &err), 0);
    graph_hold = 0;
    /* its chains are deeper than 0 */
    assert_int_equal(graph_check(f->pack.ptr, f->pack.len, NULL, 0, &err), MCG_EINVAL);
    assert_contains(err.msg, "a chain of deltas deeper than 0");
    /* a byte flipped: damaged, by its checksum */
    mcg_buf copy = {0};
    mcg_buf_put(&copy, f->pack.ptr, f->pack.len);
    copy.ptr[copy.len / 2] ^= 0x55;
    assert_int_equal(graph_check(copy.ptr, copy.len, NULL, 1000, &err), MCG_EINVAL);
    assert_contains(err.msg, "damaged or truncated");
    mcg_buf_free(&copy);
}

static void test_graph_shapes(void **state)
{
    (void)state;
    /* copy the whole 2-byte base; insert 2 bytes over a 2-byte base */
    static const char copy2[] = "\x02\x02\x90\x02",
                      ins_a[] = "\x02\x02\x02"
                                "a\n",
                      ins_b[] = "\x02\x02\x02"
                                "b\n",
                      grow[] = "\x02\x03\x90\x02\x01y";
    static const struct {
        const char *name;
        gentry e[4];
        size_t n;
        int rc;
        const char *msg;
    } cases[] = {
        {"honest",
         {{MCG_PACK_BLOB, "a\n", 2, 0, NULL}, {MCG_PACK_OFS, grow, 6, 0, NULL}},
         2,
         0,
         ""},
        {"a REF_DELTA chain in any order",
         {{MCG_PACK_REF, ins_b, 5, 0, "a\n"}, {MCG_PACK_BLOB, "a\n", 2, 0, NULL}},
         2,
         0,
         ""},
        {"a delta whose result is its own base",
         {{MCG_PACK_BLOB, "a\n", 2, 0, NULL}, {MCG_PACK_REF, copy2, 4, 0, "a\n"}},
         2,
         MCG_EINVAL,
         "made a second time"},
        {"two REF_DELTAs on each other's result",
         {{MCG_PACK_REF, ins_a, 5, 0, "b\n"}, {MCG_PACK_REF, ins_b, 5, 0, "a\n"}},
         2,
         MCG_ENOTFOUND,
         "neither the pack builds nor the repository has"},
        {"an OFS_DELTA on a REF_DELTA on its result",
         {{MCG_PACK_REF, ins_a, 5, 0, "b\n"}, {MCG_PACK_OFS, ins_b, 5, 0, NULL}},
         2,
         MCG_ENOTFOUND,
         "neither the pack builds"},
        {"an OFS_DELTA on itself",
         {{MCG_PACK_BLOB, "a\n", 2, 0, NULL}, {MCG_PACK_OFS, copy2, 4, -1, NULL}},
         2,
         MCG_EINVAL,
         "a delta whose base is itself"},
        {"a delta that copies past its base",
         {{MCG_PACK_BLOB, "a\n", 2, 0, NULL}, {MCG_PACK_OFS, "\x02\x04\x90\x04", 4, 0, NULL}},
         2,
         MCG_EINVAL,
         "does not apply to its base"},
        {"a delta declaring 2 MiB",
         {{MCG_PACK_BLOB, "a\n", 2, 0, NULL},
          {MCG_PACK_OFS, "\x02\x80\x80\x80\x01\x90\x02", 7, 0, NULL}},
         2,
         MCG_EINVAL,
         "over the limit of 1048576 for one object"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        mcg_buf p = {0};
        mcg_err err = {0};
        mkpack(&p, cases[i].e, cases[i].n);
        int rc = graph_check(p.ptr, p.len, NULL, 1000, &err);
        if (rc != cases[i].rc || !strstr(err.msg, cases[i].msg))
            fail_msg("%s: rc %d (want %d): %s", cases[i].name, rc, cases[i].rc, err.msg);
        mcg_buf_free(&p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commit_links),
        cmocka_unit_test(test_tag_target),
        cmocka_unit_test(test_tree_entries),
        cmocka_unit_test(test_parse_oid),
        cmocka_unit_test(test_delta_apply),
        cmocka_unit_test(test_delta_create),
        cmocka_unit_test(test_oidmap),
        cmocka_unit_test(test_oidv),
        cmocka_unit_test(test_entry_header),
        cmocka_unit_test_setup_teardown(test_scan_whole, setup_repo, teardown_repo),
        cmocka_unit_test_setup_teardown(test_scan_unconfirmed, setup_repo, teardown_repo),
        cmocka_unit_test_setup_teardown(test_scan_damaged, setup_repo, teardown_repo),
        cmocka_unit_test_setup_teardown(test_writer, setup_repo, teardown_repo),
        cmocka_unit_test_setup_teardown(test_thin, setup_repo, teardown_repo),
        cmocka_unit_test_setup_teardown(test_thin_reuse, setup_repo, teardown_repo),
        cmocka_unit_test_setup_teardown(test_reuse, setup_repo, teardown_repo),
        cmocka_unit_test_setup_teardown(test_store, setup_repo, teardown_repo),
        cmocka_unit_test_setup_teardown(test_graph_packbuilder, setup_repo, teardown_repo),
        cmocka_unit_test(test_graph_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
