/*
 * verify_pool.c — mcg_gitops_verify on two threads, with exactly its
 * verdicts. Each thread has its own handle on the repository (libgit2
 * objects are not shared between threads; the odb locks internally):
 *
 *   the second thread   an optional first task (a bundle's connectivity
 *                       check), then verification chunks
 *   the calling thread  walks each range (mcg_verify_walk: the very walk
 *                       of one pass), publishes its chunks, then verifies
 *                       chunks too
 *
 * A chunk is a run order[a, b) of a range's walk, verified with every
 * commit before a taken as good (mcg_verify_chunk). A commit's verdict
 * depends on its signature, the trust root and its parents — each good or
 * outside the range, or else not counted — and parents come before
 * children in the walk. So a chunk's verdicts are exactly one pass's when
 * every commit before it is good: all of them when every chunk is all
 * good, and always those of the chunks up to the first with a bad commit.
 * From that chunk on, the range is verified again on the calling thread in
 * one run (its start is then true), so the report — verdicts, order, the
 * first bad commit, every message — is the one pass's.
 */
#include "gitops/gitops_int.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VERIFY_MIN_CHUNK 64 /* commits; fewer is not worth a hand-over */
#define VERIFY_CHUNKS 32     /* per range, at most */

typedef struct vjob {
    size_t range; /* index in the ranges */
    size_t from, to;
    size_t nbad;
} vjob;

typedef struct vpool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    vjob *jobs;
    size_t njobs, cap, next;
    bool closed; /* every range walked: no job will be added */
    mcg_vrange *vr;
    mcg_verify_range *ranges;
    const mcg_signers *root;
    const mcg_verify_opts *opts;
    const mcg_verify_threads *th;
    uint64_t done, total; /* commits verified, for progress */
} vpool;

/* The next job, waiting while more may come; false when none is left. */
static bool vpool_take(vpool *p, vjob *out, size_t *k)
{
    bool ok = false;
    pthread_mutex_lock(&p->mu);
    while (p->next == p->njobs && !p->closed)
        pthread_cond_wait(&p->cv, &p->mu);
    if (p->next < p->njobs) {
        *k = p->next++;
        *out = p->jobs[*k];
        ok = true;
    }
    pthread_mutex_unlock(&p->mu);
    return ok;
}

/* Publish range i's walk as chunks. */
static void vpool_add(vpool *p, size_t i)
{
    size_t n = p->vr[i].n;
    size_t chunk = n / VERIFY_CHUNKS;
    if (chunk < VERIFY_MIN_CHUNK)
        chunk = VERIFY_MIN_CHUNK;
    pthread_mutex_lock(&p->mu);
    for (size_t a = 0; a < n; a += chunk) {
        if (p->njobs == p->cap) {
            p->cap = p->cap ? p->cap * 2 : 64;
            p->jobs = mcg_realloc(p->jobs, p->cap * sizeof(*p->jobs));
        }
        p->jobs[p->njobs++] = (vjob){.range = i, .from = a, .to = n - a > chunk ? a + chunk : n};
    }
    p->total += n;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* No more jobs will come. */
static void vpool_close(vpool *p)
{
    pthread_mutex_lock(&p->mu);
    p->closed = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* Take and run jobs until none is left, on the handle r. */
static void vpool_run(vpool *p, mcg_repo *r)
{
    vjob j;
    size_t k;
    while (vpool_take(p, &j, &k)) {
        mcg_verify_opts o = *p->opts;
        o.since = p->ranges[j.range].since;
        size_t nbad = mcg_verify_chunk(p->ranges[j.range].rep.v + j.from, r, &p->vr[j.range],
                                       j.from, j.to, &o, p->root);
        pthread_mutex_lock(&p->mu);
        p->jobs[k].nbad = nbad; /* jobs may have moved: index again */
        p->done += j.to - j.from;
        if (p->th && p->th->tick)
            p->th->tick(p->th->tick_ctx, p->done, p->total);
        pthread_mutex_unlock(&p->mu);
    }
}

/* The second thread: its first task, then jobs. */
static void *helper_main(void *arg)
{
    vpool *p = arg;
    if (p->th->first)
        p->th->first(p->th->first_ctx);
    vpool_run(p, p->th->helper);
    return NULL;
}

void mcg_gitops_effective_since(char out[MCG_SHA_HEX + 1], mcg_repo *r, const char *tip,
                                const char *since, const mcg_signers *root)
{
    out[0] = '\0';
    if (since) {
        snprintf(out, MCG_SHA_HEX + 1, "%s", since);
        return;
    }
    char sha[MCG_SHA_HEX + 1];
    if (!mcg_gitops_verified_mark(r, root, sha))
        return;
    if (mcg_repo_descends(r, tip, sha))
        memcpy(out, sha, sizeof(sha));
}

/*
 * Range i after its chunks ran: count the bad, and from the first chunk
 * with a bad commit on, verify again in one run (see the top of the file).
 */
static void settle(vpool *p, size_t i, mcg_repo *r)
{
    mcg_verify_report *rep = &p->ranges[i].rep;
    size_t redo = SIZE_MAX;
    for (size_t k = 0; k < p->njobs; k++)
        if (p->jobs[k].range == i && p->jobs[k].nbad && p->jobs[k].from < redo)
            redo = p->jobs[k].from;
    rep->nbad = 0; /* every chunk before redo is all good */
    if (redo != SIZE_MAX) {
        mcg_verify_opts o = *p->opts;
        o.since = p->ranges[i].since;
        rep->nbad = mcg_verify_chunk(rep->v + redo, r, &p->vr[i], redo, p->vr[i].n, &o, p->root);
    }
}

int mcg_gitops_verify_ranges(mcg_verify_range *ranges, size_t n, mcg_repo *r,
                             const mcg_verify_threads *th, const mcg_verify_opts *opts,
                             const mcg_signers *root, mcg_err *err)
{
    static const mcg_verify_opts none = {0};
    mcg_verify_opts o = opts ? *opts : none;
    vpool pool = {.root = root, .opts = &o, .th = th, .ranges = ranges};
    char notes[MCG_SHA_HEX + 1];
    pthread_t helper;
    bool threaded = false;
    int rc = 0;

    pool.vr = mcg_calloc(n ? n : 1, sizeof(*pool.vr));
    for (size_t i = 0; i < n; i++)
        memset(&ranges[i].rep, 0, sizeof(ranges[i].rep));
    /* Every range reads the same approvals, whatever the ref does meanwhile. */
    git_oid nid;
    if (!o.approvals && git_reference_name_to_id(&nid, r->git, MCG_APPROVALS_REF) == 0) {
        git_oid_tostr(notes, sizeof(notes), &nid);
        o.approvals = notes;
    }
    pthread_mutex_init(&pool.mu, NULL);
    pthread_cond_init(&pool.cv, NULL);
    if (th && th->helper) {
        /* The helper takes no signals: they go to the calling thread. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        threaded = pthread_create(&helper, NULL, helper_main, &pool) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    if (!threaded && th && th->first)
        th->first(th->first_ctx); /* one thread: it runs everything in turn */

    /* Walk each range as one pass would, and hand its chunks out at once. */
    for (size_t i = 0; i < n && !rc; i++) {
        mcg_verify_opts wo = o; /* o is shared with the helper: not written now */
        wo.since = ranges[i].since;
        if ((rc = mcg_verify_walk(&pool.vr[i], r, ranges[i].tip, &wo, root, err)) != 0)
            break;
        ranges[i].rep.v = mcg_calloc(pool.vr[i].n ? pool.vr[i].n : 1, sizeof(mcg_verdict));
        ranges[i].rep.n = pool.vr[i].n;
        vpool_add(&pool, i);
    }
    vpool_close(&pool);
    vpool_run(&pool, r);
    if (threaded)
        pthread_join(helper, NULL);
    for (size_t i = 0; i < n; i++) {
        if (!rc)
            settle(&pool, i, r);
        else
            mcg_verify_report_free(&ranges[i].rep);
        mcg_vrange_free(&pool.vr[i]);
    }
    free(pool.vr);
    free(pool.jobs);
    pthread_cond_destroy(&pool.cv);
    pthread_mutex_destroy(&pool.mu);
    return rc;
}
