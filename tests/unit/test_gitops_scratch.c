/*
 * test_gitops_scratch.c — the in-memory object store renders write into
 * (src/gitops/scratch.c): nothing reaches the disk before persist; persist
 * writes one pack from 100 objects on and loose objects below, which git
 * itself accepts (fsck --strict); an object the disk holds is not stored
 * twice; reads see the disk, its alternates and the store; and ids are
 * exactly those the repository's own object database gives.
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

#include "gitops/gitops_int.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include <git2.h>
#include <git2/sys/commit.h>

typedef struct fx {
    char dir[256];
    git_repository *repo; /* the repository's own handle */
    mcg_repo *r;
} fx;

static int setup(void **state)
{
    fx *f = mcg_calloc(1, sizeof(*f));
    mcg_err err = {0};
    mcg_test_tmpdir(f->dir, "scratch");
    git_libgit2_init();
    assert_int_equal(git_repository_init(&f->repo, f->dir, 1), 0);
    assert_int_equal(mcg_repo_open(&f->r, f->dir, &err), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    mcg_repo_free(f->r);
    git_repository_free(f->repo);
    git_libgit2_shutdown();
    mcg_test_rm_rf(f->dir);
    free(f);
    return 0;
}

/* Files under objects/ (loose objects and pack files), counted by kind. */
static void count_objects(const char *dir, size_t *loose, size_t *packs)
{
    *loose = *packs = 0;
    char *objects = mcg_sprintf("%s/objects", dir);
    DIR *d = opendir(objects);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strlen(e->d_name) != 2 || e->d_name[0] == '.')
            continue; /* pack, info, . and .. */
        char *sub = mcg_sprintf("%s/%s", objects, e->d_name);
        DIR *s = opendir(sub);
        struct dirent *f;
        while (s && (f = readdir(s)))
            if (f->d_name[0] != '.')
                (*loose)++;
        if (s)
            closedir(s);
        free(sub);
    }
    closedir(d);
    char *pack = mcg_sprintf("%s/pack", objects);
    d = opendir(pack);
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".pack"))
            (*packs)++;
    if (d)
        closedir(d);
    free(pack);
    free(objects);
}

/* Write n distinct blobs through the scratch handle; their ids into ids. */
static void write_blobs(git_repository *git, size_t n, const char *tag, git_oid *ids)
{
    for (size_t i = 0; i < n; i++) {
        char *text = mcg_sprintf("%s blob %zu\n", tag, i);
        assert_int_equal(git_blob_create_from_buffer(&ids[i], git, text, strlen(text)), 0);
        git_oid want;
        assert_int_equal(git_odb_hash(&want, text, strlen(text), GIT_OBJECT_BLOB), 0);
        assert_true(git_oid_equal(&want, &ids[i]));
        free(text);
    }
}

static void test_nothing_before_persist_then_one_pack(void **state)
{
    fx *f = *state;
    mcg_repo *s = NULL;
    git_odb_backend *mem = NULL;
    mcg_err err = {0};
    git_oid ids[150];
    size_t loose, packs;
    assert_int_equal(mcg_repo_scratch(&s, &mem, f->r, &err), 0);
    write_blobs(mcg_repo_git(s), 150, "pack", ids);
    /* read back through the scratch handle, nothing on disk yet */
    git_blob *b = NULL;
    assert_int_equal(git_blob_lookup(&b, mcg_repo_git(s), &ids[7]), 0);
    assert_memory_equal(git_blob_rawcontent(b), "pack blob 7\n", 12);
    git_blob_free(b);
    count_objects(f->dir, &loose, &packs);
    assert_int_equal(loose + packs, 0);
    assert_int_not_equal(git_blob_lookup(&b, f->repo, &ids[7]), 0);

    assert_int_equal(mcg_repo_scratch_persist(f->r, s, mem, &err), 0);
    count_objects(f->dir, &loose, &packs);
    assert_int_equal(loose, 0);
    assert_int_equal(packs, 1);
    /* the repository's own handle reads every one, and so does the scratch */
    git_odb *odb = NULL;
    assert_int_equal(git_repository_odb(&odb, f->repo), 0);
    git_odb_refresh(odb);
    for (size_t i = 0; i < 150; i++)
        assert_true(git_odb_exists(odb, &ids[i]));
    git_odb_free(odb);
    assert_int_equal(git_blob_lookup(&b, mcg_repo_git(s), &ids[149]), 0);
    git_blob_free(b);

    /* the same objects again: held already, nothing more is written */
    write_blobs(mcg_repo_git(s), 150, "pack", ids);
    assert_int_equal(mcg_repo_scratch_persist(f->r, s, mem, &err), 0);
    count_objects(f->dir, &loose, &packs);
    assert_int_equal(loose + packs, 1);
    mcg_repo_free(s);

    char *cmd = mcg_sprintf("git -C '%s' fsck --strict >/dev/null 2>&1", f->dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
}

static void test_few_objects_loose(void **state)
{
    fx *f = *state;
    mcg_repo *s = NULL;
    git_odb_backend *mem = NULL;
    mcg_err err = {0};
    git_oid ids[99];
    size_t loose, packs;
    assert_int_equal(mcg_repo_scratch(&s, &mem, f->r, &err), 0);
    write_blobs(mcg_repo_git(s), 99, "loose", ids);
    assert_int_equal(mcg_repo_scratch_persist(f->r, s, mem, &err), 0);
    count_objects(f->dir, &loose, &packs);
    assert_int_equal(loose, 99);
    assert_int_equal(packs, 0);
    /* a persist with nothing new writes nothing */
    assert_int_equal(mcg_repo_scratch_persist(f->r, s, mem, &err), 0);
    count_objects(f->dir, &loose, &packs);
    assert_int_equal(loose, 99);
    mcg_repo_free(s);
}

/* A commit made in the scratch handle has the id the repository's own gives. */
static void test_same_ids_as_the_repository(void **state)
{
    fx *f = *state;
    mcg_repo *s = NULL;
    git_odb_backend *mem = NULL;
    mcg_err err = {0};
    git_signature *sig = NULL;
    git_treebuilder *tb = NULL;
    git_oid blob, tree, c1, c2, s_tree, s_c1, s_c2;
    assert_int_equal(git_signature_new(&sig, "mcgit", "mcgit@localhost", 1767225600, 60), 0);
    const char *text = "hello\n";
    assert_int_equal(git_blob_create_from_buffer(&blob, f->repo, text, strlen(text)), 0);
    assert_int_equal(git_treebuilder_new(&tb, f->repo, NULL), 0);
    assert_int_equal(git_treebuilder_insert(NULL, tb, "a", &blob, GIT_FILEMODE_BLOB), 0);
    assert_int_equal(git_treebuilder_write(&tree, tb), 0);
    git_treebuilder_free(tb);
    const git_oid *p1[] = {&c1};
    assert_int_equal(
        git_commit_create_from_ids(&c1, f->repo, NULL, sig, sig, NULL, "one\n", &tree, 0, NULL), 0);
    /* the second commit exists only in the scratch store */
    assert_int_equal(mcg_repo_scratch(&s, &mem, f->r, &err), 0);
    git_repository *sg = mcg_repo_git(s);
    assert_int_equal(git_treebuilder_new(&tb, sg, NULL), 0);
    assert_int_equal(git_treebuilder_insert(NULL, tb, "a", &blob, GIT_FILEMODE_BLOB), 0);
    assert_int_equal(git_treebuilder_write(&s_tree, tb), 0);
    git_treebuilder_free(tb);
    assert_true(git_oid_equal(&s_tree, &tree));
    assert_int_equal(
        git_commit_create_from_ids(&s_c1, sg, NULL, sig, sig, NULL, "one\n", &s_tree, 0, NULL), 0);
    assert_true(git_oid_equal(&s_c1, &c1));
    assert_int_equal(
        git_commit_create_from_ids(&s_c2, sg, NULL, sig, sig, NULL, "two\n", &s_tree, 1, p1), 0);
    assert_int_equal(
        git_commit_create_from_ids(&c2, f->repo, NULL, sig, sig, NULL, "two\n", &tree, 1, p1), 0);
    assert_true(git_oid_equal(&s_c2, &c2));
    /* prefixes resolve in the store and on disk */
    git_object *o = NULL;
    assert_int_equal(git_object_lookup_prefix(&o, sg, &s_c2, 12, GIT_OBJECT_COMMIT), 0);
    git_object_free(o);
    assert_int_equal(git_object_lookup_prefix(&o, sg, &blob, 10, GIT_OBJECT_BLOB), 0);
    git_object_free(o);
    git_signature_free(sig);
    mcg_repo_free(s);
}

/* Objects behind objects/info/alternates are read, and not stored again. */
static void test_alternates(void **state)
{
    fx *f = *state;
    char other[256];
    git_repository *o = NULL;
    mcg_repo *s = NULL;
    git_odb_backend *mem = NULL;
    mcg_err err = {0};
    git_oid id, again;
    size_t loose, packs;
    mcg_test_tmpdir(other, "scratch-alt");
    assert_int_equal(git_repository_init(&o, other, 1), 0);
    const char *text = "only in the alternate\n";
    assert_int_equal(git_blob_create_from_buffer(&id, o, text, strlen(text)), 0);
    char *alt = mcg_sprintf("%s/objects/info/alternates", f->dir);
    char *line = mcg_sprintf("%s/objects\n", other);
    FILE *fp = fopen(alt, "w");
    assert_non_null(fp);
    fputs(line, fp);
    fclose(fp);
    assert_int_equal(mcg_repo_scratch(&s, &mem, f->r, &err), 0);
    git_blob *b = NULL;
    assert_int_equal(git_blob_lookup(&b, mcg_repo_git(s), &id), 0);
    git_blob_free(b);
    assert_int_equal(git_blob_create_from_buffer(&again, mcg_repo_git(s), text, strlen(text)), 0);
    assert_int_equal(mcg_repo_scratch_persist(f->r, s, mem, &err), 0);
    count_objects(f->dir, &loose, &packs);
    assert_int_equal(loose + packs, 0);
    mcg_repo_free(s);
    git_repository_free(o);
    mcg_test_rm_rf(other);
    free(alt);
    free(line);
}

/* Name of the one pack in dir/objects/pack (without extension), into out. */
static void only_pack(const char *dir, char out[128])
{
    char *pack = mcg_sprintf("%s/objects/pack", dir);
    DIR *d = opendir(pack);
    struct dirent *e;
    out[0] = '\0';
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".pack"))
            snprintf(out, 128, "%.*s", (int)(strlen(e->d_name) - 5), e->d_name);
    if (d)
        closedir(d);
    free(pack);
    assert_true(out[0] != '\0');
}

/* An index that cannot be written: a one-line reason, and no pack left behind. */
static void test_index_fails_nothing_left(void **state)
{
    fx *f = *state;
    char name[128], other[256];
    mcg_repo *s = NULL, *r2 = NULL;
    git_repository *g2 = NULL;
    git_odb_backend *mem = NULL;
    mcg_err err = {0};
    git_oid ids[120];
    size_t loose, packs;
    /* the pack these objects make, and its name (the bytes are deterministic) */
    assert_int_equal(mcg_repo_scratch(&s, &mem, f->r, &err), 0);
    write_blobs(mcg_repo_git(s), 120, "idx", ids);
    assert_int_equal(mcg_repo_scratch_persist(f->r, s, mem, &err), 0);
    mcg_repo_free(s);
    only_pack(f->dir, name);
    /* in another repository the index's name is taken by a directory */
    mcg_test_tmpdir(other, "scratch-idx");
    assert_int_equal(git_repository_init(&g2, other, 1), 0);
    assert_int_equal(mcg_repo_open(&r2, other, &err), 0);
    char *blocker = mcg_sprintf("%s/objects/pack/%s.idx", other, name);
    assert_int_equal(mkdir(blocker, 0755), 0);
    assert_int_equal(mcg_repo_scratch(&s, &mem, r2, &err), 0);
    write_blobs(mcg_repo_git(s), 120, "idx", ids);
    assert_int_not_equal(mcg_repo_scratch_persist(r2, s, mem, &err), 0);
    assert_contains(err.msg, "writing the rendered objects");
    assert_null(strchr(err.msg, '\n'));
    rmdir(blocker);
    count_objects(other, &loose, &packs);
    assert_int_equal(loose + packs, 0);
    mcg_repo_free(s);
    mcg_repo_free(r2);
    git_repository_free(g2);
    mcg_test_rm_rf(other);
    free(blocker);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_nothing_before_persist_then_one_pack, setup, teardown),
        cmocka_unit_test_setup_teardown(test_few_objects_loose, setup, teardown),
        cmocka_unit_test_setup_teardown(test_same_ids_as_the_repository, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alternates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_index_fails_nothing_left, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
