/*
 * test_gitops.c — gitops/ verification without a shell: histories built
 * with libgit2 and signed in process, checked by mcg_gitops_verify.
 *
 *   - the signer rule: a commit must be allowed by EVERY parent (a removed
 *     signer's merge is refused whatever its parent order), committer times
 *     may not go back more than MCG_CLOCK_SKEW, and arriving history is
 *     checked against the receiver's clock;
 *   - verification hints (a pack scan's signature memo and signer-file
 *     hints) change no verdict: every case is verified with and without
 *     them and the reports must be identical, field by field;
 *   - verification on two threads (mcg_gitops_verify_ranges) reports
 *     exactly what one pass does, also over long histories with merges,
 *     signer changes and bad commits in every chunk position;
 *   - the hooks' decisions (mcg_gitops_pre_receive / post_receive): update
 *     lines that do not parse fail the push closed, refs mcgit owns are
 *     refused, an unsigned source push is refused, another branch is noted,
 *     each with the line the pusher sees.
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
#include "gitops/gitops_int.h"
#include "pack/pack.h"

#include <git2.h>

#define T0 1767225600 /* 2026-01-01T00:00:00Z */

typedef struct fx {
    char dir[256];
    git_repository *repo;
    mcg_sshkey alice, bob;
    mcg_signers *root; /* alice */
    char *bob_line;    /* bob's allowed_signers line */
} fx;

static git_oid blob(git_repository *repo, const char *text)
{
    git_oid id;
    assert_int_equal(git_blob_create_from_buffer(&id, repo, text, strlen(text)), 0);
    return id;
}

/* Write raw text as a commit object (any text: the odb does not parse it). */
static int write_raw_commit(git_oid *id, git_repository *repo, const char *raw, size_t len)
{
    git_odb *odb = NULL;
    int rc = git_repository_odb(&odb, repo);
    if (rc == 0)
        rc = git_odb_write(id, odb, raw, len, GIT_OBJECT_COMMIT);
    git_odb_free(odb);
    return rc;
}

/* A root tree with README = readme and, when signers, .mcgit/allowed_signers. */
static git_oid tree_of(fx *f, const char *readme, const char *signers)
{
    git_treebuilder *tb = NULL;
    git_oid id, r = blob(f->repo, readme);
    assert_int_equal(git_treebuilder_new(&tb, f->repo, NULL), 0);
    if (signers) {
        git_treebuilder *sub = NULL;
        git_oid sid, b = blob(f->repo, signers);
        assert_int_equal(git_treebuilder_new(&sub, f->repo, NULL), 0);
        assert_int_equal(
            git_treebuilder_insert(NULL, sub, "allowed_signers", &b, GIT_FILEMODE_BLOB), 0);
        assert_int_equal(git_treebuilder_write(&sid, sub), 0);
        git_treebuilder_free(sub);
        assert_int_equal(git_treebuilder_insert(NULL, tb, ".mcgit", &sid, GIT_FILEMODE_TREE), 0);
    }
    assert_int_equal(git_treebuilder_insert(NULL, tb, "README", &r, GIT_FILEMODE_BLOB), 0);
    assert_int_equal(git_treebuilder_write(&id, tb), 0);
    git_treebuilder_free(tb);
    return id;
}

/* A commit of tree with parents, at time when, signed by key (NULL: unsigned). */
static git_oid commit(fx *f, git_oid tree_id, const git_oid *parents, size_t np, int64_t when,
                      const mcg_sshkey *key)
{
    git_signature *sig = NULL;
    git_tree *tree = NULL;
    const git_commit *ps[4] = {0};
    git_buf buf = GIT_BUF_INIT;
    git_oid id;
    assert_int_equal(git_signature_new(&sig, "T", "t@example.com", (git_time_t)when, 0), 0);
    assert_int_equal(git_tree_lookup(&tree, f->repo, &tree_id), 0);
    for (size_t i = 0; i < np; i++)
        assert_int_equal(git_commit_lookup((git_commit **)&ps[i], f->repo, &parents[i]), 0);
    assert_int_equal(git_commit_create_buffer(&buf, f->repo, sig, sig, NULL, "c\n", tree, np, ps),
                     0);
    if (key) {
        char *armored = mcg_sshsig_sign(key, buf.ptr, buf.size);
        assert_int_equal(git_commit_create_with_signature(&id, f->repo, buf.ptr, armored, "gpgsig"),
                         0);
        free(armored);
    } else {
        assert_int_equal(git_commit_create_with_signature(&id, f->repo, buf.ptr, NULL, NULL), 0);
    }
    git_buf_dispose(&buf);
    for (size_t i = 0; i < np; i++)
        git_commit_free((git_commit *)ps[i]);
    git_tree_free(tree);
    git_signature_free(sig);
    return id;
}

static int setup(void **state)
{
    fx *f = mcg_calloc(1, sizeof(*f));
    mcg_test_tmpdir(f->dir, "gitops");
    git_libgit2_init();
    assert_int_equal(git_repository_init(&f->repo, f->dir, 1), 0);
    mcg_sshkey_generate(&f->alice);
    mcg_sshkey_generate(&f->bob);
    char *a = mcg_sshkey_public_line(&f->alice, "alice");
    char *line = mcg_sprintf("alice@example.com %s\n", a);
    mcg_err err = {0};
    assert_int_equal(mcg_signers_parse(&f->root, "trust", line, strlen(line), &err), 0);
    free(line);
    free(a);
    char *b = mcg_sshkey_public_line(&f->bob, "bob");
    f->bob_line = mcg_sprintf("bob@example.com %s\n", b);
    free(b);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    git_repository_free(f->repo);
    git_libgit2_shutdown();
    mcg_test_rm_rf(f->dir);
    mcg_signers_free(f->root);
    mcg_sshkey_wipe(&f->alice);
    mcg_sshkey_wipe(&f->bob);
    free(f->bob_line);
    free(f);
    return 0;
}

static int collect(void *buf, size_t size, void *payload)
{
    mcg_buf_put(payload, buf, size);
    return 0;
}

static bool in_odb(const git_oid *id, void *odb)
{
    return git_odb_exists(odb, id) == 1;
}

/* The hints a bundle import would have for commits: a scan of a pack of them. */
static mcg_packscan *scan_of(fx *f, const git_oid *tips, size_t n)
{
    git_packbuilder *pb = NULL;
    mcg_buf pack = MCG_BUF_INIT;
    assert_int_equal(git_packbuilder_new(&pb, f->repo), 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(git_packbuilder_insert_commit(pb, &tips[i]), 0);
    assert_int_equal(git_packbuilder_foreach(pb, collect, &pack), 0);
    git_packbuilder_free(pb);
    mcg_pack_scanner *p = mcg_pack_scan_start();
    mcg_pack_scan_feed(p, pack.ptr, pack.len);
    mcg_packscan *s = mcg_pack_scan_finish(p);
    mcg_buf_free(&pack);
    git_odb *odb = NULL;
    assert_int_equal(git_repository_odb(&odb, f->repo), 0);
    mcg_packscan_confirm(s, in_odb, odb, odb);
    git_odb_free(odb);
    assert_true(mcg_packscan_complete(s));
    return s;
}

static void assert_same_report(const mcg_verify_report *a, const mcg_verify_report *b);
static void assert_ranges_same(fx *f, const char *tip, const mcg_verify_opts *o,
                               const mcg_verify_report *want);

/*
 * Verify tip with opts, and again with the scan's hints added: both reports
 * must be equal in every field, and so must the two-thread verification's.
 * Returns the verdict of tip ("good" when
 * every commit is good) in the first report, which the caller frees.
 */
static void verify_both(fx *f, mcg_verify_report *rep, const git_oid *tip, mcg_verify_opts o)
{
    char sha[MCG_SHA_HEX + 1];
    mcg_repo *r = NULL;
    mcg_err err = {0};
    git_oid_tostr(sha, sizeof(sha), tip);
    assert_int_equal(mcg_repo_open(&r, f->dir, &err), 0);
    assert_int_equal(mcg_gitops_verify(rep, r, sha, &o, f->root, &err), 0);
    mcg_packscan *s = scan_of(f, tip, 1);
    mcg_verify_opts h = o;
    h.memo = mcg_packscan_memo(s);
    h.scan = s;
    mcg_verify_report with = {0};
    assert_int_equal(mcg_gitops_verify(&with, r, sha, &h, f->root, &err), 0);
    assert_same_report(&with, rep);
    mcg_verify_report_free(&with);
    assert_ranges_same(f, sha, &o, rep);
    mcg_packscan_free(s);
    mcg_repo_free(r);
}

/* Two reports equal in every field. */
static void assert_same_report(const mcg_verify_report *a, const mcg_verify_report *b)
{
    assert_int_equal(a->n, b->n);
    assert_int_equal(a->nbad, b->nbad);
    for (size_t i = 0; i < a->n; i++)
        assert_memory_equal(&a->v[i], &b->v[i], sizeof(a->v[i]));
}

/*
 * mcg_gitops_verify_ranges of (since, tip] on one thread, on two, and on two
 * with the walk waiting until the second thread has read ahead all it can
 * (its runs then cover the whole first-parent line, the chunks the rest):
 * each equal to want.
 */
static void assert_ranges_same(fx *f, const char *tip, const mcg_verify_opts *o,
                               const mcg_verify_report *want)
{
    mcg_repo *r = NULL, *helper = NULL;
    mcg_err err = {0};
    assert_int_equal(mcg_repo_open(&r, f->dir, &err), 0);
    assert_int_equal(mcg_repo_open(&helper, f->dir, &err), 0);
    for (int threads = 1; threads <= 3; threads++) {
        mcg_verify_threads th = {.helper = threads >= 2 ? helper : NULL,
                                 .ahead_first = threads == 3};
        mcg_verify_range range = {.tip = tip, .since = o->since};
        assert_int_equal(mcg_gitops_verify_ranges(&range, 1, r, &th, o, f->root, &err), 0);
        assert_same_report(&range.rep, want);
        mcg_verify_report_free(&range.rep);
    }
    mcg_repo_free(helper);
    mcg_repo_free(r);
}

/* The verdict of commit id in rep. */
static const mcg_verdict *verdict(const mcg_verify_report *rep, const git_oid *id)
{
    char sha[MCG_SHA_HEX + 1];
    git_oid_tostr(sha, sizeof(sha), id);
    for (size_t i = 0; i < rep->n; i++)
        if (!strcmp(rep->v[i].sha, sha))
            return &rep->v[i];
    fail_msg("commit %s not in the report", sha);
    return NULL;
}

static void test_removed_signer(void **state)
{
    fx *f = *state;
    git_oid base = commit(f, tree_of(f, "base", NULL), NULL, 0, T0, &f->alice);
    git_oid c1 = commit(f, tree_of(f, "c1", f->bob_line), &base, 1, T0 + 10, &f->alice);
    git_oid bob_ok = commit(f, tree_of(f, "bob ok", f->bob_line), &c1, 1, T0 + 20, &f->bob);
    git_oid c2 = commit(f, tree_of(f, "c2", ""), &c1, 1, T0 + 30, &f->alice);
    git_oid t2 = tree_of(f, "merge", "");
    git_oid p12[] = {c1, c2}, p21[] = {c2, c1}, p3[] = {bob_ok, c1, c2};
    git_oid m12 = commit(f, t2, p12, 2, T0 + 40, &f->bob);
    git_oid m21 = commit(f, t2, p21, 2, T0 + 40, &f->bob);
    git_oid oct = commit(f, t2, p3, 3, T0 + 40, &f->bob);
    git_oid alice_merge = commit(f, t2, p21, 2, T0 + 40, &f->alice);
    const git_oid *bad[] = {&m12, &m21, &oct};
    for (size_t i = 0; i < 3; i++) {
        mcg_verify_report rep = {0};
        verify_both(f, &rep, bad[i], (mcg_verify_opts){0});
        if (bad[i] == &oct) /* bob's commit while he was listed stays good */
            assert_true(verdict(&rep, &bob_ok)->good);
        assert_true(verdict(&rep, &c2)->good);
        const mcg_verdict *v = verdict(&rep, bad[i]);
        assert_false(v->good);
        assert_non_null(strstr(v->reason, "is not in allowed signers"));
        mcg_verify_report_free(&rep);
    }
    mcg_verify_report rep = {0};
    verify_both(f, &rep, &alice_merge, (mcg_verify_opts){0});
    assert_int_equal(rep.nbad, 0);
    mcg_verify_report_free(&rep);
}

static void test_clock(void **state)
{
    fx *f = *state;
    char *line = mcg_sprintf("carol@example.com valid-before=\"20260601Z\" %s",
                             strchr(f->bob_line, ' ') + 1);
    mcg_signers *old = f->root, *carol = NULL;
    mcg_err err = {0};
    assert_int_equal(mcg_signers_parse(&carol, "trust2", line, strlen(line), &err), 0);
    f->root = mcg_signers_union(old, carol);
    git_oid base = commit(f, tree_of(f, "b", NULL), NULL, 0, T0, &f->alice);
    git_oid in_window = commit(f, tree_of(f, "w", NULL), &base, 1, T0 + 86400 * 100, &f->bob);
    git_oid back = commit(f, tree_of(f, "back", NULL), &in_window, 1,
                          T0 + 86400 * 100 - MCG_CLOCK_SKEW - 1, &f->alice);
    git_oid skew_ok = commit(f, tree_of(f, "ok", NULL), &in_window, 1,
                             T0 + 86400 * 100 - MCG_CLOCK_SKEW, &f->alice);
    mcg_verify_report rep = {0};
    /* history held already, or a first fetch: judged by committer times */
    verify_both(f, &rep, &skew_ok, (mcg_verify_opts){0});
    assert_int_equal(rep.nbad, 0);
    mcg_verify_report_free(&rep);
    verify_both(f, &rep, &back, (mcg_verify_opts){0});
    assert_false(verdict(&rep, &back)->good);
    assert_non_null(strstr(verdict(&rep, &back)->reason, "before its parent's"));
    mcg_verify_report_free(&rep);
    /* arriving after carol's window closed: refused, whatever its date */
    char since[MCG_SHA_HEX + 1];
    git_oid_tostr(since, sizeof(since), &base);
    verify_both(f, &rep, &in_window, (mcg_verify_opts){.since = since, .now = T0 + 86400 * 200});
    assert_int_equal(rep.n, 1);
    assert_false(rep.v[0].good);
    assert_non_null(strstr(rep.v[0].reason, "on arrival: "));
    mcg_verify_report_free(&rep);
    /* arriving inside it: good; dated more than the skew ahead of the clock: refused */
    verify_both(f, &rep, &in_window, (mcg_verify_opts){.since = since, .now = T0 + 86400 * 100});
    assert_int_equal(rep.nbad, 0);
    mcg_verify_report_free(&rep);
    verify_both(f, &rep, &in_window,
                (mcg_verify_opts){.since = since, .now = T0 + 86400 * 100 - MCG_CLOCK_SKEW - 1});
    assert_int_equal(rep.nbad, 1);
    assert_non_null(strstr(rep.v[0].reason, "ahead of this host's clock"));
    mcg_verify_report_free(&rep);
    mcg_signers_free(f->root);
    mcg_signers_free(carol);
    f->root = old;
    free(line);
}

static void test_mark_survives_root_change(void **state)
{
    fx *f = *state;
    git_oid base = commit(f, tree_of(f, "m", NULL), NULL, 0, T0, &f->alice);
    char sha[MCG_SHA_HEX + 1], got[MCG_SHA_HEX + 1];
    git_oid_tostr(sha, sizeof(sha), &base);
    mcg_repo *r = NULL;
    mcg_err err = {0};
    assert_int_equal(mcg_repo_open(&r, f->dir, &err), 0);
    assert_false(mcg_gitops_verified_mark(r, f->root, got));
    assert_int_equal(mcg_gitops_mark_verified(r, sha, f->root, &err), 0);
    assert_true(mcg_gitops_verified_mark(r, f->root, got));
    assert_string_equal(got, sha);
    /* another trust root: the mark still counts (a trust change applies to
     * history that arrives after it) */
    mcg_signers *other = NULL;
    assert_int_equal(mcg_signers_parse(&other, "o", f->bob_line, strlen(f->bob_line), &err), 0);
    assert_true(mcg_gitops_verified_mark(r, other, got));
    assert_string_equal(got, sha);
    mcg_signers_free(other);
    mcg_repo_free(r);
}

/*
 * Trust changes (docs/trust.md): nothing is vouched for by a later commit.
 * A commit whose valid signature is by a key the trust root no longer
 * trusts (revoked, or its line deleted) is held and bad, whatever builds on
 * it; it counts only below a checkpoint the trust root names or the
 * repository's verified mark. A signer the repo removed in signed history
 * stays removed. With and without hints alike.
 */
static void test_no_vouching(void **state)
{
    fx *f = *state;
    mcg_err err = {0};
    git_oid c0 = commit(f, tree_of(f, "0", NULL), NULL, 0, T0, &f->alice);
    git_oid c1 = commit(f, tree_of(f, "1", NULL), &c0, 1, T0 + 10, &f->bob);
    git_oid c2 = commit(f, tree_of(f, "2", NULL), &c1, 1, T0 + 20, &f->alice);
    mcg_signers *old = f->root;
    char *a = mcg_sshkey_public_line(&f->alice, "alice");
    char *b = mcg_sshkey_public_line(&f->bob, NULL);
    char cp1[MCG_SHA_HEX + 1], cp0[MCG_SHA_HEX + 1];
    git_oid_tostr(cp1, sizeof(cp1), &c1);
    git_oid_tostr(cp0, sizeof(cp0), &c0);
    /* bob revoked: c1 bad under c2, and as the tip */
    for (int k = 0; k < 3; k++) {
        /* k 0: no checkpoint; 1: one below c1 (c0); 2: one at c1 */
        char *text = mcg_sprintf("alice@example.com %s\n%s%s%s\n", a, f->bob_line,
                                 k ? "  #  mcgit-checkpoint: " : "",
                                 k == 1 ? cp0
                                 : k    ? cp1
                                        : "");
        assert_int_equal(mcg_signers_parse(&f->root, "trust", text, strlen(text), &err), 0);
        assert_int_equal(mcg_signers_checkpoints(f->root, "trust", text, strlen(text), &err), 0);
        assert_int_equal(mcg_signers_checkpoint_count(f->root), k ? 1 : 0);
        assert_int_equal(mcg_signers_revoke(f->root, "revoked", b, strlen(b), &err), 0);
        mcg_verify_report rep = {0};
        verify_both(f, &rep, &c2, (mcg_verify_opts){0});
        if (k < 2) {
            assert_int_equal(rep.nbad, 1);
            const mcg_verdict *v = verdict(&rep, &c1);
            assert_true(!v->good && v->held);
            assert_non_null(strstr(v->reason, "is revoked"));
        } else { /* history up to the checkpoint counts as verified */
            assert_int_equal(rep.n, 1);
            assert_int_equal(rep.nbad, 0);
        }
        mcg_verify_report_free(&rep);
        /* --all ignores checkpoints: the blast radius is listed */
        verify_both(f, &rep, &c2, (mcg_verify_opts){.from_root = true});
        assert_int_equal(rep.nbad, 1);
        mcg_verify_report_free(&rep);
        mcg_signers_free(f->root);
        free(text);
    }
    f->root = old;
    /* bob's line deleted from the root (it is alice alone): the same */
    mcg_verify_report rep = {0};
    verify_both(f, &rep, &c2, (mcg_verify_opts){0});
    assert_int_equal(rep.nbad, 1);
    assert_false(verdict(&rep, &c1)->good);
    assert_true(verdict(&rep, &c1)->held);
    mcg_verify_report_free(&rep);
    /* below the verified mark it counts: a receiver keeps what it verified */
    verify_both(f, &rep, &c2, (mcg_verify_opts){.since = cp1});
    assert_int_equal(rep.nbad, 0);
    mcg_verify_report_free(&rep);
    /* bob added, then removed by the repo in signed history: his commit on
     * top of the removal stays bad, alice's commit on it notwithstanding */
    git_oid d0 = commit(f, tree_of(f, "0", f->bob_line), NULL, 0, T0, &f->alice);
    git_oid d1 = commit(f, tree_of(f, "1", ""), &d0, 1, T0 + 10, &f->alice);
    git_oid d2 = commit(f, tree_of(f, "2", ""), &d1, 1, T0 + 20, &f->bob);
    git_oid d3 = commit(f, tree_of(f, "3", ""), &d2, 1, T0 + 30, &f->alice);
    verify_both(f, &rep, &d3, (mcg_verify_opts){0});
    assert_int_equal(rep.nbad, 1);
    assert_false(verdict(&rep, &d2)->good);
    assert_false(verdict(&rep, &d2)->held);
    mcg_verify_report_free(&rep);
    free(b);
    free(a);
}

/* Checkpoint lines: malformed ones refuse the file with its line; others are comments. */
static void test_checkpoint_lines(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int rc;
        size_t n;
    } cases[] = {
        {"# a comment\n", 0, 0},
        {"# mcgit-checkpoint: 0123456789abcdef0123456789abcdef01234567\n", 0, 1},
        {"#mcgit-checkpoint:0123456789abcdef0123456789abcdef01234567 after the revocation\r\n", 0,
         1},
        {"# mcgit-checkpoint: 0123456789abcdef0123456789abcdef01234567\n"
         "# mcgit-checkpoint: 0123456789abcdef0123456789abcdef01234567\n",
         0, 1},
        {"# mcgit-checkpoint: 0123456789abcdef\n", MCG_EINVAL, 0},
        {"# mcgit-checkpoint: 0123456789ABCDEF0123456789abcdef01234567\n", MCG_EINVAL, 0},
        {"# mcgit-checkpoint: 0123456789abcdef0123456789abcdef012345678\n", MCG_EINVAL, 0},
        {"# mcgit-checkpoint:\n", MCG_EINVAL, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        mcg_signers *s = NULL;
        mcg_err err = {0};
        assert_int_equal(mcg_signers_parse(&s, "t", cases[i].text, strlen(cases[i].text), &err), 0);
        int rc = mcg_signers_checkpoints(s, "t", cases[i].text, strlen(cases[i].text), &err);
        assert_int_equal(rc, cases[i].rc);
        assert_int_equal(mcg_signers_checkpoint_count(s), cases[i].n);
        if (rc)
            assert_non_null(strstr(err.msg, "t:1: a checkpoint line is"));
        mcg_signers_free(s);
    }
}

/*
 * Accepted bundle imports counted in the repository: each note adds one and
 * keeps the newest time; a damaged record reads as none, and counting
 * starts again from it (the controller's counter never goes back).
 */
static void test_import_stats(void **state)
{
    fx *f = *state;
    mcg_repo *r = NULL;
    mcg_err err = {0};
    mcg_import_stats st;
    assert_int_equal(mcg_repo_open(&r, f->dir, &err), 0);
    assert_false(mcg_gitops_import_stats(r, &st));
    assert_int_equal(st.imports, 0);
    assert_int_equal(mcg_gitops_note_import(r, 1767225600, &err), 0);
    assert_int_equal(mcg_gitops_note_import(r, 1767225700, &err), 0);
    assert_true(mcg_gitops_import_stats(r, &st));
    assert_int_equal(st.imports, 2);
    assert_int_equal(st.last, 1767225700);
    static const char *const damaged[] = {"", "imports x\nlast 1\n", "imports 1\n",
                                          "last 5\nimports 1\n", "imports -1\nlast 1\n"};
    char *path = mcg_sprintf("%s/mcgit/bundle-imports", f->dir);
    for (size_t i = 0; i < sizeof(damaged) / sizeof(*damaged); i++) {
        FILE *fp = fopen(path, "w");
        assert_non_null(fp);
        fputs(damaged[i], fp);
        fclose(fp);
        assert_false(mcg_gitops_import_stats(r, &st));
    }
    assert_int_equal(mcg_gitops_note_import(r, 1767225800, &err), 0);
    assert_true(mcg_gitops_import_stats(r, &st));
    assert_int_equal(st.imports, 1);
    free(path);
    mcg_repo_free(r);
}

/*
 * A long history (chunks of 32 commits and more, runs read ahead of 64): a first-parent line with
 * side branches merged back, bob added and later removed as a signer, and
 * bad commits (unsigned, by bob once removed, backdated) placed at a chunk
 * start, inside chunks and at the end; after the unsigned commit 200, bob
 * signs a hundred commits, each bad only because its parent is, so a chunk
 * that took its start's parent as good would call one good. Each prefix of interest is verified
 * in one pass and on two threads, whole and from a since: a commit of the
 * first-parent line, or a side branch's (the line below its fork is then
 * outside the range, so a run read ahead along the line must not count).
 */
static void test_threads_long(void **state)
{
    fx *f = *state;
    if (getenv("MCGIT_VALGRIND")) {
        /* 16 s natively, a quarter of an hour under Valgrind: the Debug and
         * ASan phases of tests/run-all.sh run it, Valgrind's says so */
        print_message("not under Valgrind: test_threads_long (700 signed commits)\n");
        return;
    }
    enum { N = 700 };
    git_oid *line = mcg_calloc(N, sizeof(*line));
    git_oid side, sides[N];
    const char *signers = NULL;
    int64_t t = T0;
    line[0] = commit(f, tree_of(f, "0", NULL), NULL, 0, t, &f->alice);
    for (int i = 1; i < N; i++) {
        char readme[32];
        snprintf(readme, sizeof(readme), "%d", i);
        t += 10;
        if (i == 100)
            signers = f->bob_line; /* bob may sign from here */
        if (i == 400)
            signers = ""; /* and no longer */
        const mcg_sshkey *key = (i > 100 && i < 400 && i % 3 == 0) ? &f->bob : &f->alice;
        if (i > 200 && i < 300)
            key = &f->bob; /* each bad only through its bad parent: across chunk ends */
        if (i == 64 || i == 200 || i == 333 || i == 650)
            key = NULL; /* unsigned: bad, its children follow from the root */
        if (i == 450)
            key = &f->bob;                                      /* removed signer */
        int64_t when = i == 500 ? t - MCG_CLOCK_SKEW - 100 : t; /* backdated */
        if (i % 50 == 25) { /* a side branch of two commits, merged back */
            git_oid s1 = commit(f, tree_of(f, "s1", signers), &line[i - 1], 1, when, &f->alice);
            side = commit(f, tree_of(f, "s2", signers), &s1, 1, when, key ? key : &f->alice);
            sides[i] = side;
            git_oid ps[] = {line[i - 1], side};
            line[i] = commit(f, tree_of(f, readme, signers), ps, 2, when, key);
        } else {
            line[i] = commit(f, tree_of(f, readme, signers), &line[i - 1], 1, when, key);
        }
    }
    static const int tips[] = {64, 299, 499, N - 1};
    /* since: -1 none, else line[k], or -k: the side branch merged at line[k] */
    static const int sinces[] = {-1, 63, -75, -275};
    mcg_repo *r = NULL;
    mcg_err err = {0};
    assert_int_equal(mcg_repo_open(&r, f->dir, &err), 0);
    for (size_t a = 0; a < sizeof(tips) / sizeof(tips[0]); a++)
        for (size_t b = 0; b < sizeof(sinces) / sizeof(sinces[0]); b++) {
            int at = sinces[b] < 0 ? -sinces[b] : sinces[b];
            if (at >= tips[a])
                continue;
            char tip[MCG_SHA_HEX + 1], since[MCG_SHA_HEX + 1];
            git_oid_tostr(tip, sizeof(tip), &line[tips[a]]);
            git_oid_tostr(since, sizeof(since), sinces[b] < -1 ? &sides[at] : &line[at]);
            mcg_verify_opts o = {.since = sinces[b] == -1 ? NULL : since};
            mcg_verify_report want = {0};
            assert_int_equal(mcg_gitops_verify(&want, r, tip, &o, f->root, &err), 0);
            assert_ranges_same(f, tip, &o, &want);
            mcg_verify_report_free(&want);
        }
    /* the whole history has every kind of bad verdict */
    char tip[MCG_SHA_HEX + 1];
    git_oid_tostr(tip, sizeof(tip), &line[N - 1]);
    mcg_verify_report rep = {0};
    assert_int_equal(mcg_gitops_verify(&rep, r, tip, NULL, f->root, &err), 0);
    assert_true(rep.n > N);
    assert_false(verdict(&rep, &line[64])->good);
    assert_false(verdict(&rep, &line[450])->good);
    assert_false(verdict(&rep, &line[500])->good);
    assert_false(verdict(&rep, &line[299])->good);
    assert_true(verdict(&rep, &line[63])->good);
    mcg_verify_report_free(&rep);
    mcg_repo_free(r);
    free(line);
}

/*
 * mcg_commit_split_signature reads a commit's signature as git does, from
 * the header only: for each placement of a real signature below, mcgit's
 * verdict (split, then verify under alice) must equal `git verify-commit`'s
 * with alice in gpg.ssh.allowedSignersFile. git is the expected value: a
 * signature moved into the message is no signature to git, and so to mcgit.
 */
static void test_split_git_parity(void **state)
{
    fx *f = *state;
    static const char H[] = "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n"
                            "author T <t@example.com> 1767225600 +0000\n"
                            "committer T <t@example.com> 1767225600 +0000\n";
    /* %1$s: the header above; SIG: the armored signature of the text
     * without it (the payload, computed with git's rule below). */
    static const struct {
        const char *payload; /* what is signed */
        const char *object;  /* the commit: @ stands for the gpgsig header */
    } cases[] = {
        {"%s\nmsg\n", "%s@\nmsg\n"},   /* git's own placement */
        {"%s\nmsg\n", "%s\nmsg\n@"},   /* moved into the message */
        {"%s\nmsg\n", "%s\nmsg\n\n@"}, /* after a blank line */
        {"%s\nmsg\ngpgsig in the message\n", "%s@\nmsg\ngpgsig in the message\n"},
        {"%s\nmsg\n", "%sgpgsigx other\n cont\n@\nmsg\n"},       /* another gpgsig field */
        {"%s\nmsg\n", "%s@gpgsig-sha256 other\n more\n\nmsg\n"}, /* the other hash's */
        {"%s\nmsg\n", "%s\nmsg\n"},                              /* unsigned */
    };
    char *pub = mcg_sshkey_public_line(&f->alice, NULL);
    char *as = mcg_sprintf("%s/allowed", f->dir);
    char *line = mcg_sprintf("t@example.com %s\n", pub);
    FILE *fp = fopen(as, "w");
    assert_non_null(fp);
    fputs(line, fp);
    fclose(fp);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char payload[512], object[4096];
        snprintf(payload, sizeof(payload), cases[i].payload, H);
        char *armored = mcg_sshsig_sign(&f->alice, payload, strlen(payload));
        mcg_buf hdr = MCG_BUF_INIT; /* "gpgsig <line>\n <line>\n ..." */
        mcg_buf_puts(&hdr, "gpgsig ");
        for (const char *a = armored; *a; a++) {
            mcg_buf_putc(&hdr, *a);
            if (*a == '\n')
                mcg_buf_putc(&hdr, ' ');
        }
        mcg_buf_putc(&hdr, '\n');
        char tmpl[512];
        snprintf(tmpl, sizeof(tmpl), cases[i].object, H);
        char *at = strchr(tmpl, '@');
        if (at) {
            *at = '\0';
            snprintf(object, sizeof(object), "%s%.*s%s", tmpl, (int)hdr.len, hdr.ptr, at + 1);
        } else {
            snprintf(object, sizeof(object), "%s", tmpl);
        }
        git_oid id;
        assert_int_equal(write_raw_commit(&id, f->repo, object, strlen(object)), 0);
        char *cmd = mcg_sprintf("git -C '%s' -c gpg.format=ssh -c gpg.ssh.allowedSignersFile='%s' "
                                "verify-commit %s >/dev/null 2>&1",
                                f->dir, as, git_oid_tostr_s(&id));
        bool git_good = system(cmd) == 0;
        mcg_buf sig = MCG_BUF_INIT, data = MCG_BUF_INIT;
        mcg_sig_result res = {0};
        mcg_err err = {0};
        bool ours =
            mcg_commit_split_signature(&sig, &data, object, strlen(object)) == 0 &&
            mcg_sshsig_verify(&res, f->root, sig.ptr, sig.len, data.ptr, data.len, T0, &err) == 0;
        if (ours != git_good)
            fail_msg("case %zu: git verify-commit says %s, mcgit %s (%s)", i,
                     git_good ? "good" : "bad", ours ? "good" : "bad", err.msg);
        free(cmd);
        mcg_buf_free(&sig);
        mcg_buf_free(&data);
        mcg_buf_free(&hdr);
        free(armored);
    }
    free(line);
    free(as);
    free(pub);
}

#define Z40 "0000000000000000000000000000000000000000"
#define A40 "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3"

/* Update lines: the ones git's receive-pack writes parse, nothing else does. */
static void test_receive_parse_line(void **state)
{
    (void)state;
    static const char *const good[] = {
        Z40 " " A40 " refs/heads/main\n",
        A40 " " Z40 " refs/tags/v1\n",
        A40 " " A40 " x\n",
    };
    static const char *const bad[] = {
        "",
        "\n",
        Z40 " " A40 " refs/heads/main",     /* no newline */
        Z40 " " A40 "  refs/heads/main\n",  /* two spaces */
        Z40 " " A40 " refs/heads/ma in\n",  /* a space in the ref */
        Z40 " " A40 " refs/heads/m\tain\n", /* a control character */
        Z40 " " A40 " \n",                  /* no ref */
        Z40 "  " A40 " refs/heads/main\n",
        "A94A8FE5CCB19BA61C4C0873D391E987982FBBD3 " A40 " refs/heads/main\n",
        Z40 "0 " A40 " refs/heads/main\n", /* a 41-digit id */
        Z40 " " A40 "\n",
    };
    char old[MCG_SHA_HEX + 1], new[MCG_SHA_HEX + 1], ref[MCG_REFNAME_MAX];
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        assert_true(mcg_gitops_receive_parse_line(good[i], strlen(good[i]), old, new, ref));
        assert_int_equal(strlen(old), MCG_SHA_HEX);
        assert_int_equal(strlen(new), MCG_SHA_HEX);
        const char *want = good[i] + 2 * MCG_SHA_HEX + 2;
        assert_int_equal(strlen(ref), strlen(want) - 1); /* without the newline */
        assert_true(!strncmp(ref, want, strlen(ref)));
        ref[0] = '\0';
    }
    assert_string_equal(old, A40);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (mcg_gitops_receive_parse_line(bad[i], strlen(bad[i]), old, new, ref))
            fail_msg("bad case %zu parsed", i);
    /* a ref name one byte too long for ref[] */
    mcg_buf b = MCG_BUF_INIT;
    mcg_buf_puts(&b, Z40 " " A40 " ");
    for (size_t i = 0; i < MCG_REFNAME_MAX; i++)
        mcg_buf_putc(&b, 'r');
    mcg_buf_putc(&b, '\n');
    assert_false(mcg_gitops_receive_parse_line(b.ptr, b.len, old, new, ref));
    mcg_buf_free(&b);
}

/* One push through mcg_gitops_pre_receive: its code, and out in one string. */
static int pre_receive(fx *f, const char *input, char **lines)
{
    mcg_repo *r = NULL;
    mcg_err err = {0};
    mcg_diags d = {0};
    mcg_buf all = MCG_BUF_INIT;
    assert_int_equal(mcg_repo_open(&r, f->dir, &err), 0);
    int rc = mcg_gitops_pre_receive(r, f->root, input, strlen(input), T0 + 60, &d);
    for (size_t i = 0; i < d.count; i++)
        mcg_buf_printf(&all, "%s\n", d.msgs[i]);
    mcg_diags_free(&d);
    mcg_repo_free(r);
    *lines = all.ptr ? all.ptr : mcg_strdup("");
    return rc;
}

static void test_pre_receive(void **state)
{
    fx *f = *state;
    char *out = NULL;
    /* a line that does not parse refuses the push, even beside good ones */
    assert_int_equal(pre_receive(f, Z40 " " A40 " refs/heads/feature\ngarbage\n", &out),
                     MCG_EINVAL);
    assert_string_equal(out, "refusing push: cannot parse update line 2: 'garbage'\n"
                             "note: feature is not the source branch (main): accepted, "
                             "nothing will be rendered or rolled out\n");
    free(out);
    /* a line without its newline (stdin cut short) */
    assert_int_equal(pre_receive(f, Z40 " " A40 " refs/heads/feature", &out), MCG_EINVAL);
    assert_contains(out, "refusing push: cannot parse update line 1: '" Z40);
    free(out);
    /* refs mcgit owns */
    assert_int_equal(pre_receive(f, Z40 " " A40 " refs/mcgit/x\n", &out), MCG_ETRUST);
    assert_string_equal(out, "refusing refs/mcgit/x: refs/mcgit/ is written by mcgit only\n");
    free(out);
    assert_int_equal(pre_receive(f, Z40 " " A40 " refs/heads/rendered\n", &out), MCG_ETRUST);
    assert_string_equal(out,
                        "refusing refs/heads/rendered: the rendered branch is written by mcgit "
                        "only\n");
    free(out);
    /* an unsigned commit on the source branch */
    git_oid c = commit(f, tree_of(f, "a\n", NULL), NULL, 0, T0, NULL);
    char sha[MCG_SHA_HEX + 1];
    git_oid_tostr(sha, sizeof(sha), &c);
    char *in = mcg_sprintf(Z40 " %s refs/heads/main\n", sha);
    assert_int_equal(pre_receive(f, in, &out), MCG_ETRUST);
    char *want = mcg_sprintf("refusing refs/heads/main: commit %.12s: ", sha);
    assert_true(!strncmp(out, want, strlen(want)));
    free(want);
    free(out);
    free(in);
    /* nothing to do: accepted, nothing said */
    assert_int_equal(pre_receive(f, "", &out), 0);
    assert_string_equal(out, "");
    free(out);
}

/* The post-receive hook renders only when the source branch moved. */
static void test_post_receive(void **state)
{
    fx *f = *state;
    mcg_repo *r = NULL;
    mcg_err err = {0};
    mcg_diags d = {0};
    bool moved = true;
    assert_int_equal(mcg_repo_open(&r, f->dir, &err), 0);
    const char *in = Z40 " " A40 " refs/heads/feature\n" A40 " " Z40 " refs/heads/main\n";
    assert_int_equal(mcg_gitops_post_receive(&moved, r, f->root, in, strlen(in), &d), 0);
    assert_false(moved); /* a deleted source branch renders nothing */
    assert_int_equal(d.count, 0);
    in = "x y z\n";
    assert_int_equal(mcg_gitops_post_receive(&moved, r, f->root, in, strlen(in), &d), MCG_EINVAL);
    assert_false(moved);
    assert_int_equal(d.count, 1);
    assert_string_equal(d.msgs[0], "ignoring push: cannot parse update line 1: 'x y z'");
    mcg_diags_free(&d);
    /* the source branch moved (to an unsigned commit: the render says why not) */
    git_oid c = commit(f, tree_of(f, "a\n", NULL), NULL, 0, T0, NULL);
    char sha[MCG_SHA_HEX + 1];
    git_oid_tostr(sha, sizeof(sha), &c);
    assert_int_equal(git_reference_create(NULL, f->repo, "refs/heads/main", &c, 1, NULL), 0);
    char *line = mcg_sprintf(Z40 " %s refs/heads/main\n", sha);
    assert_int_not_equal(mcg_gitops_post_receive(&moved, r, f->root, line, strlen(line), &d), 0);
    assert_true(moved);
    assert_true(d.count >= 1);
    assert_contains(d.msgs[d.count - 1], "render failed: ");
    free(line);
    mcg_diags_free(&d);
    mcg_repo_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_removed_signer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mark_survives_root_change, setup, teardown),
        cmocka_unit_test_setup_teardown(test_import_stats, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads_long, setup, teardown),
        cmocka_unit_test_setup_teardown(test_split_git_parity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_vouching, setup, teardown),
        cmocka_unit_test(test_checkpoint_lines),
        cmocka_unit_test(test_receive_parse_line),
        cmocka_unit_test_setup_teardown(test_pre_receive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_post_receive, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
