/*
 * verify.c — the checks after indexing run on two threads, each with its own view of
 * the repo (libgit2 objects are not shared between threads; the odb locks
 * internally). Most signatures' arithmetic is already done by then
 * (pack/scan*.c); a pack the scan could not read whole leaves more here:
 *
 *   the second thread   connectivity, then verification jobs
 *   the main thread     plans the jobs, then verification jobs
 *
 * A ref's range (since, tip] is cut along tip's first-parent chain at
 * c_K, c_2K, ... into jobs mcg_gitops_verify(tip = c_jK, since = c_(j+1)K),
 * the oldest with the ref's own since. The pieces partition the range: each
 * is "reachable from c_jK and not from c_(j+1)K", every cut descends from
 * since (checked; else the range is verified whole), and a commit reachable
 * from a lower cut is never in a higher piece. A commit's verdict depends on
 * its signature, the trust root and its first parent (whose allowed_signers
 * counts when the parent is good or below since): within a piece the parent
 * either is in the piece, as in the whole range, or is the cut below, which
 * a piece takes as good — and is checked by the piece below. So when every
 * piece is all good, the whole range is; when any commit is bad the import
 * is refused, and the ref is verified again in one piece so that the report
 * and the message are exactly those of mcg_gitops_verify over the range.
 */
#include "bundle/bundle_int.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define VERIFY_MIN_PIECE 64 /* commits; fewer is not worth a piece */
#define VERIFY_PIECES 16    /* per ref, at most */

typedef struct vjob {
    size_t ref; /* index in the report's refs */
    char tip[MCG_SHA_HEX + 1];
    char since[MCG_SHA_HEX + 1]; /* "" none */
    size_t commits;              /* first-parent commits in the piece, for progress */
    mcg_verify_report vr;
    int rc;
    mcg_err err;
} vjob;

typedef struct vpool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool published;
    vjob *jobs;
    size_t njobs, next;
    const mcg_signers *root;
    mcg_verify_opts hints; /* memo, scan and now for every job */
    const mcg_bundle_progress *prog;
    uint64_t done, total; /* commits verified, for the progress bar */
} vpool;

/* The next job, waiting until jobs are published; NULL when none is left. */
static vjob *vpool_take(vpool *p)
{
    vjob *j = NULL;
    pthread_mutex_lock(&p->mu);
    while (!p->published)
        pthread_cond_wait(&p->cv, &p->mu);
    if (p->next < p->njobs)
        j = &p->jobs[p->next++];
    pthread_mutex_unlock(&p->mu);
    return j;
}

/* Hand the planned jobs to both threads (n 0: none, planning failed). */
static void vpool_publish(vpool *p, vjob *jobs, size_t n)
{
    pthread_mutex_lock(&p->mu);
    p->jobs = jobs;
    p->njobs = n;
    p->published = true;
    for (size_t i = 0; i < n; i++)
        p->total += jobs[i].commits;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* Take and run jobs until none is left, on view. */
static void vpool_run(vpool *p, mcg_repo *view)
{
    vjob *j;
    while ((j = vpool_take(p)) != NULL) {
        mcg_verify_opts o = p->hints;
        o.since = j->since[0] ? j->since : NULL;
        j->rc = mcg_gitops_verify(&j->vr, view, j->tip, &o, p->root, &j->err);
        pthread_mutex_lock(&p->mu);
        p->done += j->commits;
        mcg_bundle_tick(p->prog, "verifying commits", p->done, p->total);
        pthread_mutex_unlock(&p->mu);
    }
}

typedef struct worker {
    vpool *pool;
    mcg_bundle_conn *conn;
} worker;

/* The second thread: connectivity, then jobs. */
static void *worker_main(void *arg)
{
    worker *w = arg;
    mcg_bundle_check_connected(w->conn);
    vpool_run(w->pool, w->conn->view);
    return NULL;
}

void mcg_bundle_effective_since(char out[MCG_SHA_HEX + 1], mcg_repo *v, const char *tip,
                                const char *since, const mcg_signers *root)
{
    out[0] = '\0';
    if (since) {
        snprintf(out, MCG_SHA_HEX + 1, "%s", since);
        return;
    }
    char sha[MCG_SHA_HEX + 1];
    if (!mcg_gitops_verified_mark(v, root, sha))
        return;
    if (mcg_repo_descends(v, tip, sha))
        memcpy(out, sha, sizeof(sha));
}

/*
 * Add the jobs verifying (since, tip] for ref i to *jobs: the pieces of
 * tip's first-parent chain, newest first, or the whole range in one job.
 */
static int plan_ref(vjob **jobs, size_t *n, size_t *cap, mcg_repo *v, size_t i, const char *tip,
                    const char *since, mcg_err *err)
{
    mcg_oidv chain = {0};
    git_oid cur, stop;
    bool has_stop = since[0] != '\0';
    bool reached = !has_stop;
    int rc = 0;
    git_oid_fromstr(&cur, tip);
    if (has_stop)
        git_oid_fromstr(&stop, since);
    for (;;) {
        git_commit *c = NULL;
        if (has_stop && git_oid_equal(&cur, &stop)) {
            reached = true;
            break;
        }
        if (git_commit_lookup(&c, mcg_repo_git(v), &cur) != 0) {
            rc = mcg_git_err(err, "damaged bundle");
            goto out;
        }
        mcg_oidv_push(&chain, &cur);
        unsigned np = git_commit_parentcount(c);
        if (np)
            cur = *git_commit_parent_id(c, 0);
        git_commit_free(c);
        if (!np)
            break;
    }
    size_t piece = chain.n / VERIFY_PIECES;
    if (piece < VERIFY_MIN_PIECE)
        piece = VERIFY_MIN_PIECE;
    size_t cuts = chain.n > piece ? (chain.n - 1) / piece : 0;
    /* Every cut must descend from since; the lowest is enough to ask. */
    if (cuts && !reached) {
        char low[MCG_SHA_HEX + 1];
        git_oid_tostr(low, sizeof(low), &chain.v[cuts * piece]);
        if (!mcg_repo_descends(v, low, since))
            cuts = 0;
    }
    for (size_t k = 0; k <= cuts; k++) {
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 16;
            *jobs = mcg_realloc(*jobs, *cap * sizeof(**jobs));
        }
        vjob *j = &(*jobs)[(*n)++];
        memset(j, 0, sizeof(*j));
        j->ref = i;
        git_oid_tostr(j->tip, sizeof(j->tip), &chain.v[k * piece]);
        if (k < cuts)
            git_oid_tostr(j->since, sizeof(j->since), &chain.v[(k + 1) * piece]);
        else
            memcpy(j->since, since, MCG_SHA_HEX + 1);
        j->commits = k < cuts ? piece : chain.n - k * piece;
    }
out:
    mcg_oidv_free(&chain);
    return rc;
}

int mcg_bundle_verify_all(mcg_repo *q, mcg_repo *q2, mcg_bundle_report *rep,
                          const mcg_bundle_vref *want, const git_oid *tips, size_t ntips,
                          const mcg_oidmap *pack, const mcg_signers *root,
                          const mcg_verify_opts *hints, const mcg_bundle_progress *prog,
                          mcg_err *err)
{
    vjob *jobs = NULL;
    size_t njobs = 0, cap = 0;
    char mark[MCG_SHA_HEX + 1];
    vpool pool = {.root = root, .hints = *hints, .prog = prog};
    /* History arriving at a repo that holds verified history is also
     * checked against this host's clock (mcg_verify_opts.now). */
    pool.hints.now = mcg_gitops_verified_mark(q, root, mark) ? (int64_t)time(NULL) : 0;
    mcg_bundle_conn conn = {.view = q2, .scan = hints->scan, .pack = pack, .tips = tips,
                            .ntips = ntips};
    worker w = {&pool, &conn};
    pthread_t th;
    bool threaded = false;
    int rc = 0, plan_rc = 0;
    mcg_err plan_err = {0};

    pthread_mutex_init(&pool.mu, NULL);
    pthread_cond_init(&pool.cv, NULL);
    /* The worker takes no signals: they go to the main thread, which cleans up. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    threaded = pthread_create(&th, NULL, worker_main, &w) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!threaded)
        conn.view = q; /* one thread: it runs everything below in turn */

    for (size_t i = 0; i < rep->nrefs && !plan_rc; i++)
        if (want[i].tip[0] && want[i].with < 0)
            plan_rc = plan_ref(&jobs, &njobs, &cap, q, i, want[i].tip, want[i].eff, &plan_err);
    vpool_publish(&pool, plan_rc ? NULL : jobs, plan_rc ? 0 : njobs);
    if (!threaded)
        mcg_bundle_check_connected(&conn);
    vpool_run(&pool, q);
    if (threaded)
        pthread_join(th, NULL);
    mcg_bundle_tick(prog, NULL, 0, 0);

    if (conn.rc) {
        *err = conn.err;
        rc = conn.rc;
        goto out;
    }
    if (plan_rc) {
        *err = plan_err;
        rc = plan_rc;
        goto out;
    }
    /* Pieces were planned newest first: gather each ref's oldest first. */
    for (size_t i = 0; i < rep->nrefs && !rc; i++) {
        mcg_bundle_ref *br = &rep->refs[i];
        if (!want[i].tip[0] || want[i].with >= 0)
            continue;
        size_t total = 0, bad = 0;
        for (size_t k = 0; k < njobs; k++)
            if (jobs[k].ref == i) {
                if (jobs[k].rc) {
                    *err = jobs[k].err;
                    rc = jobs[k].rc;
                    goto out;
                }
                total += jobs[k].vr.n;
                bad += jobs[k].vr.nbad;
            }
        if (bad) {
            /* Refused: the report and reason of one pass over the whole range. */
            mcg_verify_opts o = pool.hints;
            o.since = want[i].since[0] ? want[i].since : NULL;
            if ((rc = mcg_gitops_verify(&br->verify, q, want[i].tip, &o, root, err)) != 0)
                goto out;
            continue;
        }
        br->verify.v = mcg_calloc(total ? total : 1, sizeof(*br->verify.v));
        for (size_t k = njobs; k-- > 0;)
            if (jobs[k].ref == i) {
                memcpy(br->verify.v + br->verify.n, jobs[k].vr.v,
                       jobs[k].vr.n * sizeof(*jobs[k].vr.v));
                br->verify.n += jobs[k].vr.n;
                mcg_verify_report_free(&jobs[k].vr); /* copied: not held twice */
            }
    }
out:
    for (size_t k = 0; k < njobs; k++)
        mcg_verify_report_free(&jobs[k].vr);
    free(jobs);
    pthread_cond_destroy(&pool.cv);
    pthread_mutex_destroy(&pool.mu);
    return rc;
}
