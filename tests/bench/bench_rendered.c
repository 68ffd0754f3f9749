/*
 * bench_rendered.c — what rendering a long source history from scratch
 * costs: the pure rendered history (Render-Rule 2) of N commits.
 *
 *   bench_rendered [--every K] REPO N
 *
 * Creates a config repo at REPO (the template, as `mcgit init` writes it)
 * and a first-parent history of N unsigned commits on main, each rewriting
 * data/fNN.txt (one of 100, in turn); with --every K, every K-th commit
 * instead rewrites machineconfigs/50-bench.yaml (a worker MachineConfig
 * writing /etc/bench.conf), so K = 1 changes a config in every commit. The
 * history is written as one pack (libgit2's mempack). Then it times, each
 * with a fresh repository handle and no rendered branch:
 *
 *   cold  — R(tip) from nothing: every commit walked, every distinct
 *           config rendered once, one rendered commit per commit;
 *   warm  — R(tip) again with the rendered commits known (as a rendered
 *           branch gives them): the walk alone;
 *   next  — one more commit (a config change) on top, the rendered branch
 *           known: what a push costs on a long history.
 *
 * Each line gives wall and CPU time (this process's user + system).
 * Signatures are not verified here (mcgit verify's cost is in
 * PERFORMANCE.md, "Signature verification"): this is the rendering alone,
 * through gitops' chain API (gitops_int.h).
 */
#include "gitops/gitops_int.h"

#include <getopt.h>
#include <git2/sys/mempack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define T0 1767225600 /* 2026-01-01T00:00:00Z */

static void die(const char *what)
{
    const git_error *e = git_error_last();
    fprintf(stderr, "bench_rendered: %s: %s\n", what, e && e->message ? e->message : "failed");
    exit(1);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double last_cpu; /* CPU time of the last timed_render */

static void add_file(git_index *idx, const char *path, const char *text)
{
    git_index_entry e;
    memset(&e, 0, sizeof(e));
    e.path = path;
    e.mode = GIT_FILEMODE_BLOB;
    if (git_index_add_from_buffer(idx, &e, text, strlen(text)) != 0)
        die(path);
}

static const char *mc_fmt = "apiVersion: machineconfiguration.openshift.io/v1\n"
                            "kind: MachineConfig\n"
                            "metadata:\n"
                            "  name: 50-bench\n"
                            "  labels:\n"
                            "    machineconfiguration.openshift.io/role: worker\n"
                            "spec:\n"
                            "  config:\n"
                            "    ignition:\n"
                            "      version: 3.4.0\n"
                            "    storage:\n"
                            "      files:\n"
                            "      - path: /etc/bench.conf\n"
                            "        contents:\n"
                            "          source: data:,version%%20%u\n";

/*
 * Append commits first..last to main: commit 0 is the template tree (the
 * work tree); later ones change a data file, or with every, every every-th
 * the MachineConfig.
 */
static void make_history(const char *path, unsigned first, unsigned last, unsigned every)
{
    git_repository *repo = NULL;
    git_index *idx = NULL;
    git_odb *odb = NULL;
    git_odb_backend *mem = NULL;
    git_signature *sig = NULL;
    git_oid parent, tree_oid, commit_oid;
    bool have_parent = false;
    char text[1024], name[64];
    if (git_repository_open(&repo, path) != 0 || git_repository_index(&idx, repo) != 0)
        die(path);
    git_strarray all = {(char *[]){"*"}, 1};
    if (git_reference_name_to_id(&parent, repo, "refs/heads/main") == 0) {
        git_commit *pc = NULL;
        git_tree *pt = NULL;
        if (git_commit_lookup(&pc, repo, &parent) != 0 || git_commit_tree(&pt, pc) != 0 ||
            git_index_read_tree(idx, pt) != 0)
            die("main");
        git_tree_free(pt);
        git_commit_free(pc);
        have_parent = true;
    } else if (git_index_add_all(idx, &all, GIT_INDEX_ADD_DEFAULT, NULL, NULL) != 0) {
        die("add");
    }
    if (git_repository_odb(&odb, repo) != 0 || git_mempack_new(&mem) != 0 ||
        git_odb_add_backend(odb, mem, 1000) != 0)
        die("mempack");
    for (unsigned i = first; i <= last; i++) {
        if (i > 0 && every && i % every == 0) {
            snprintf(text, sizeof(text), mc_fmt, i);
            add_file(idx, "machineconfigs/50-bench.yaml", text);
        } else if (i > 0) {
            snprintf(name, sizeof(name), "data/f%02u.txt", i % 100);
            snprintf(text, sizeof(text), "change %u\nof the data files\nonly\n", i);
            add_file(idx, name, text);
        }
        git_tree *tree = NULL;
        git_commit *pc = NULL;
        if (git_index_write_tree_to(&tree_oid, idx, repo) != 0 ||
            git_tree_lookup(&tree, repo, &tree_oid) != 0 ||
            (have_parent && git_commit_lookup(&pc, repo, &parent) != 0) ||
            git_signature_new(&sig, "bench", "bench@example.com", T0 + 60 * (git_time_t)i, 0) != 0)
            die("tree");
        const git_commit *parents[1] = {pc};
        snprintf(text, sizeof(text), "commit %u", i);
        if (git_commit_create(&commit_oid, repo, NULL, sig, sig, NULL, text, tree,
                              have_parent ? 1 : 0, parents) != 0)
            die("commit");
        git_signature_free(sig);
        git_commit_free(pc);
        git_tree_free(tree);
        parent = commit_oid;
        have_parent = true;
    }
    git_buf packed = {0};
    git_odb_writepack *wp = NULL;
    git_indexer_progress stats;
    memset(&stats, 0, sizeof(stats));
    if (git_mempack_dump(&packed, repo, mem) != 0 ||
        git_odb_write_pack(&wp, odb, NULL, NULL) != 0 ||
        wp->append(wp, packed.ptr, packed.size, &stats) != 0 || wp->commit(wp, &stats) != 0)
        die("pack");
    wp->free(wp);
    git_buf_dispose(&packed);
    git_mempack_reset(mem);
    git_reference *ref = NULL;
    if (git_reference_create(&ref, repo, "refs/heads/main", &parent, 1, "bench") != 0)
        die("main");
    git_reference_free(ref);
    git_index_free(idx);
    git_odb_free(odb);
    git_repository_free(repo);
}

/* Time one chain render of main; made/renders reported. */
static double timed_render(const char *path, bool seed, size_t *made, size_t *renders, git_oid *out)
{
    mcg_repo *r = NULL;
    mcg_chain *ch = NULL;
    mcg_err err = {0};
    git_oid tip;
    if (mcg_repo_open(&r, path, &err) != 0 ||
        git_reference_name_to_id(&tip, r->git, "refs/heads/main") != 0)
        die(err.msg[0] ? err.msg : "open");
    double t = now_s(), c0 = cpu_s();
    bool rule2 = false;
    if (mcg_chain_new(&ch, r, &rule2, &err) != 0)
        die(err.msg);
    mcg_repo *scratch = NULL;
    git_odb_backend *mem = NULL;
    if (!rule2) {
        /* as mcg_gitops_render does a first render: in memory, one pack */
        mcg_chain_free(ch);
        if (mcg_repo_scratch(&scratch, &mem, r, &err) != 0 ||
            mcg_chain_new(&ch, scratch, NULL, &err) != 0)
            die(err.msg);
    }
    if (mcg_chain_render(out, ch, &tip, NULL, NULL, &err) != 0 ||
        (scratch && mcg_repo_scratch_persist(r, scratch, mem, &err) != 0))
        die(err.msg);
    t = now_s() - t;
    last_cpu = cpu_s() - c0;
    mcg_chain_stats(ch, made, renders);
    mcg_repo_free(scratch);
    if (seed) {
        /* keep the result as the rendered branch, for the warm run */
        git_reference *ref = NULL;
        if (git_reference_create(&ref, r->git, "refs/heads/rendered", out, 1, "bench") != 0)
            die("rendered");
        git_reference_free(ref);
    }
    mcg_chain_free(ch);
    mcg_repo_free(r);
    return t;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"every", required_argument, 0, 'e'}, {0, 0, 0, 0}};
    unsigned every = 0;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c != 'e')
            return 2;
        every = (unsigned)strtoul(optarg, NULL, 10);
    }
    if (argc - optind != 2) {
        fprintf(stderr, "usage: bench_rendered [--every K] REPO N\n");
        return 2;
    }
    const char *path = argv[optind];
    unsigned n = (unsigned)strtoul(argv[optind + 1], NULL, 10);
    mcg_err err = {0};
    if (mcg_gitops_init(path, &err) != 0) {
        fprintf(stderr, "bench_rendered: %s\n", err.msg);
        return 1;
    }
    git_libgit2_init();
    double t = now_s();
    make_history(path, 0, n, every);
    fprintf(stderr, "history of %u commits made in %.2f s\n", n + 1, now_s() - t);
    size_t made, renders;
    git_oid r1, r2;
    double cold = timed_render(path, true, &made, &renders, &r1);
    printf("cold  %8.3f s wall  %8.3f s CPU  %zu rendered commits, %zu renders\n", cold, last_cpu,
           made, renders);
    double warm = timed_render(path, false, &made, &renders, &r2);
    printf("warm  %8.3f s wall  %8.3f s CPU  %zu rendered commits, %zu renders\n", warm, last_cpu,
           made, renders);
    if (!git_oid_equal(&r1, &r2)) {
        fprintf(stderr, "bench_rendered: warm and cold renders differ\n");
        return 1;
    }
    make_history(path, n + 1, n + 1, 1); /* one more commit, a config change */
    double next = timed_render(path, true, &made, &renders, &r2);
    printf("next  %8.3f s wall  %8.3f s CPU  %zu rendered commits, %zu renders\n", next, last_cpu,
           made, renders);
    git_libgit2_shutdown();
    return 0;
}
