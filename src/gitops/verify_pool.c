/*
 * verify_pool.c — mcg_gitops_verify on two threads, with exactly its
 * verdicts. Each thread has its own handle on the repository (libgit2
 * objects are not shared between threads; the odb locks internally):
 *
 *   the second thread   an optional first task (a bundle's connectivity
 *                       check); then, while the first range is still being
 *                       walked, verification of runs it reads ahead
 *                       (below); then verification chunks
 *   the calling thread  walks each range (mcg_verify_walk: the very walk
 *                       of one pass), publishes its chunks, then verifies
 *                       chunks too
 *
 * A run is a set of commits of a range verified parents first, with every
 * commit outside it taken as good (mcg_verify_list). A commit's verdict
 * depends on its signature, the trust root and its parents — each good or
 * outside the range, or else not counted — and parents come before
 * children in the walk. So when the runs cover the range once and every
 * commit of it is good, the verdicts are exactly one pass's; and in any
 * case, every commit before the first one (in walk order) that some run
 * calls bad is good in one pass, and that one's verdict is one pass's too:
 * by induction over the walk, each of those commits saw the true verdicts
 * of its parents. From that commit on, the range is verified again on the
 * calling thread in one run (its start is then true), so the report —
 * verdicts, order, the first bad commit, every message — is the one pass's.
 *
 * libgit2 hands out the first commit of a topological walk only once it
 * has read the whole range, which costs about a tenth of the verification.
 * Meanwhile the second thread reads ahead on its own: from the tip along
 * first parents, up to the range's lower end, in runs of VERIFY_RUN
 * commits, each verified oldest first (each commit's first parent comes
 * before it). When the walk is over such a run counts only if every one of
 * its commits is in the range and the approvals commit is the walk's;
 * the other commits of the range are cut into chunks.
 */
#include "gitops/gitops_int.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VERIFY_MIN_CHUNK 32 /* commits; fewer is not worth a hand-over */
#define VERIFY_CHUNKS 128   /* per range, at most: small, so both threads end together */
#define VERIFY_RUN 64       /* commits per run read ahead */

typedef struct vjob {
    size_t range;    /* index in the ranges */
    size_t from, to; /* in the range's list of commits to verify (vlist) */
    size_t nbad;
} vjob;

/* A run read ahead of the walk of the first range. */
typedef struct vahead {
    git_oid *ids; /* parents first */
    mcg_verdict *v;
    size_t n, nbad;
    bool valid;  /* every commit of it is in the range */
    size_t *pos; /* when valid: where each stands in the walk */
} vahead;

/* What a range's chunks verify: its walk, less the commits read ahead. */
typedef struct vlist {
    git_oid *ids; /* the walk's order itself when pos is NULL */
    size_t *pos;  /* ids[k] is order[pos[k]]; NULL: k */
    size_t n;
} vlist;

typedef struct vpool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    vjob *jobs;
    size_t njobs, cap, next;
    bool closed; /* every range walked: no job will be added */
    mcg_vrange *vr;
    vlist *vl;
    mcg_verify_range *ranges;
    const mcg_signers *root;
    const mcg_verify_opts *opts;
    const mcg_verify_threads *th;
    uint64_t done, total; /* commits verified, for progress */
    /* reading ahead of the first range's walk */
    bool ahead_on;          /* the second thread reads ahead */
    atomic_bool ahead_stop; /* the walk is over: stop */
    bool ahead_busy;        /* the second thread reads ahead now (under mu) */
    bool ahead_done;        /* it has read ahead all it will (under mu) */
    git_oid ahead_tip, ahead_since, ahead_notes;
    bool ahead_has_since, ahead_has_notes;
    vahead *ahead; /* written by the second thread while ahead_busy */
    size_t nahead;
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

/* Publish range i's list as chunks. */
static void vpool_add(vpool *p, size_t i)
{
    size_t n = p->vl[i].n;
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
        const mcg_vrange *vr = &p->vr[j.range];
        const vlist *vl = &p->vl[j.range];
        size_t nbad;
        mcg_verdict *out = p->ranges[j.range].rep.v;
        if (vl->pos)
            mcg_verify_list(out, vl->pos + j.from, &nbad, r, vl->ids + j.from, j.to - j.from,
                            vr->has_notes ? &vr->notes : NULL, &o, p->root, NULL);
        else
            mcg_verify_list(out + j.from, NULL, &nbad, r, vl->ids + j.from, j.to - j.from,
                            vr->has_notes ? &vr->notes : NULL, &o, p->root, NULL);
        pthread_mutex_lock(&p->mu);
        p->jobs[k].nbad = nbad; /* jobs may have moved: index again */
        p->done += j.to - j.from;
        if (p->th && p->th->tick)
            p->th->tick(p->th->tick_ctx, p->done, p->total);
        pthread_mutex_unlock(&p->mu);
    }
}

/*
 * The first parent of commit id, from its raw text ("tree <id>\n" then
 * "parent <id>\n", as libgit2 parses a commit): true with it in *parent;
 * false for a first commit, an object that cannot be read or does not
 * look so. Only where to read ahead depends on it.
 */
static bool first_parent(git_odb *odb, const git_oid *id, git_oid *parent)
{
    git_odb_object *obj = NULL;
    bool ok = false;
    if (git_odb_read(&obj, odb, id) != 0)
        return false;
    const char *d = git_odb_object_data(obj);
    size_t len = git_odb_object_size(obj);
    const size_t tl = 5 + MCG_SHA_HEX + 1, pl = 7 + MCG_SHA_HEX + 1; /* "tree X\n", "parent X\n" */
    if (git_odb_object_type(obj) == GIT_OBJECT_COMMIT && len >= tl + pl && !memcmp(d, "tree ", 5) &&
        d[tl - 1] == '\n' && !memcmp(d + tl, "parent ", 7) && d[tl + pl - 1] == '\n')
        ok = git_oid_fromstrn(parent, d + tl + 7, MCG_SHA_HEX) == 0;
    git_odb_object_free(obj);
    return ok;
}

/*
 * The second thread, while the first range is walked: runs from its tip
 * along first parents, down to its since, each verified oldest first, until
 * the walk is over (ahead_stop). A run cut short is dropped.
 */
static void read_ahead(vpool *p, mcg_repo *r)
{
    git_odb *odb = NULL;
    git_oid cur = p->ahead_tip;
    bool more = true;
    mcg_verify_opts o = *p->opts;
    o.since = p->ranges[0].since;
    if (git_repository_odb(&odb, r->git) != 0)
        return;
    while (more && !atomic_load(&p->ahead_stop)) {
        git_oid *ids = mcg_calloc(VERIFY_RUN, sizeof(*ids));
        size_t n = 0;
        while (n < VERIFY_RUN && more && !atomic_load(&p->ahead_stop)) {
            if (p->ahead_has_since && git_oid_equal(&cur, &p->ahead_since)) {
                more = false;
                break;
            }
            ids[n++] = cur;
            more = first_parent(odb, &ids[n - 1], &cur);
        }
        for (size_t a = 0, b = n; a + 1 < b; a++, b--) { /* oldest first */
            git_oid t = ids[a];
            ids[a] = ids[b - 1];
            ids[b - 1] = t;
        }
        mcg_verdict *v = mcg_calloc(n ? n : 1, sizeof(*v));
        size_t nbad = 0;
        if (n == 0 || atomic_load(&p->ahead_stop) ||
            mcg_verify_list(v, NULL, &nbad, r, ids, n, p->ahead_has_notes ? &p->ahead_notes : NULL,
                            &o, p->root, &p->ahead_stop) < n) {
            free(ids);
            free(v);
            break;
        }
        if ((p->nahead & (p->nahead - 1)) == 0) /* 0, 1, 2, 4...: grow */
            p->ahead = mcg_realloc(p->ahead, (p->nahead ? p->nahead * 2 : 1) * sizeof(*p->ahead));
        p->ahead[p->nahead++] = (vahead){.ids = ids, .v = v, .n = n, .nbad = nbad};
    }
    git_odb_free(odb);
}

/*
 * The second thread: its first task, reading ahead (unless the walk is
 * already over: the calling thread then does not wait for it), then jobs.
 */
static void *helper_main(void *arg)
{
    vpool *p = arg;
    bool go = false;
    if (p->th->first)
        p->th->first(p->th->first_ctx);
    pthread_mutex_lock(&p->mu);
    if (p->ahead_on && !atomic_load(&p->ahead_stop))
        go = p->ahead_busy = true;
    pthread_mutex_unlock(&p->mu);
    if (go)
        read_ahead(p, p->th->helper);
    pthread_mutex_lock(&p->mu);
    p->ahead_busy = false;
    p->ahead_done = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
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
 * Where the second thread reads ahead in the first range: its tip, and
 * where to stop (its since, else the verified mark: the walk's lower end
 * when the tip descends from it). False when there is nothing to do.
 */
static bool ahead_prepare(vpool *p, mcg_repo *r, const mcg_verify_opts *o)
{
    char sha[MCG_SHA_HEX + 1];
    if (mcg_repo_resolve(r, p->ranges[0].tip, sha, NULL) != 0 ||
        git_oid_fromstr(&p->ahead_tip, sha) != 0)
        return false;
    if (p->ranges[0].since) {
        if (mcg_repo_resolve(r, p->ranges[0].since, sha, NULL) != 0)
            return false;
        p->ahead_has_since = git_oid_fromstr(&p->ahead_since, sha) == 0;
    } else if (!o->from_root && mcg_gitops_verified_mark(r, p->root, sha)) {
        p->ahead_has_since = git_oid_fromstr(&p->ahead_since, sha) == 0;
    }
    /* as mcg_verify_walk takes them; checked against the walk's after it */
    if (o->approvals)
        p->ahead_has_notes = git_oid_fromstr(&p->ahead_notes, o->approvals) == 0;
    else
        p->ahead_has_notes =
            git_reference_name_to_id(&p->ahead_notes, r->git, MCG_APPROVALS_REF) == 0;
    return true;
}

/*
 * After the walk of the first range: stop reading ahead, keep the runs
 * wholly inside the range, and list the rest of it for chunks.
 */
static void ahead_settle(vpool *p)
{
    mcg_vrange *vr = &p->vr[0];
    vlist *vl = &p->vl[0];
    atomic_store(&p->ahead_stop, true); /* before the lock: see helper_main */
    pthread_mutex_lock(&p->mu);
    while (p->ahead_busy)
        pthread_cond_wait(&p->cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
    if (vr->n == 0)
        return; /* nothing walked: no run counts */
    bool notes_same = vr->has_notes == p->ahead_has_notes &&
                      (!vr->has_notes || git_oid_equal(&vr->notes, &p->ahead_notes));
    size_t nids = 0;
    for (size_t b = 0; b < p->nahead && notes_same; b++)
        nids += p->ahead[b].n;
    if (nids == 0)
        return; /* the walk's order as it is */
    /* Where each commit read ahead stands in the walk. */
    mcg_oidmap at = {0};
    mcg_oidmap_reserve(&at, nids);
    size_t *where = mcg_calloc(nids, sizeof(*where));
    bool *covered = mcg_calloc(vr->n ? vr->n : 1, sizeof(*covered));
    for (size_t b = 0, k = 0; b < p->nahead; b++)
        for (size_t j = 0; j < p->ahead[b].n; j++, k++) {
            where[k] = SIZE_MAX;
            mcg_oidmap_put(&at, &p->ahead[b].ids[j], k);
        }
    for (size_t i = 0; i < vr->n; i++) {
        uint64_t k;
        if (mcg_oidmap_get(&at, &vr->order[i], &k))
            where[k] = i;
    }
    for (size_t b = 0, k = 0; b < p->nahead; b++) {
        vahead *a = &p->ahead[b];
        a->valid = true;
        for (size_t j = 0; j < a->n; j++)
            if (where[k + j] == SIZE_MAX)
                a->valid = false;
        for (size_t j = 0; j < a->n && a->valid; j++)
            covered[where[k + j]] = true;
        k += a->n;
    }
    size_t left = 0;
    for (size_t i = 0; i < vr->n; i++)
        left += !covered[i];
    vl->ids = mcg_calloc(left ? left : 1, sizeof(*vl->ids));
    vl->pos = mcg_calloc(left ? left : 1, sizeof(*vl->pos));
    vl->n = 0;
    for (size_t i = 0; i < vr->n; i++)
        if (!covered[i]) {
            vl->ids[vl->n] = vr->order[i];
            vl->pos[vl->n++] = i;
        }
    /* Keep each valid run's positions. */
    for (size_t b = 0, k = 0; b < p->nahead; b++) {
        vahead *a = &p->ahead[b];
        if (a->valid) {
            a->pos = mcg_calloc(a->n, sizeof(*a->pos));
            for (size_t j = 0; j < a->n; j++)
                a->pos[j] = where[k + j];
        }
        k += a->n;
    }
    pthread_mutex_lock(&p->mu);
    p->done += vr->n - left; /* progress counts them as verified */
    p->total += vr->n - left;
    pthread_mutex_unlock(&p->mu);
    mcg_oidmap_free(&at);
    free(where);
    free(covered);
}

/*
 * Range i after its chunks ran: put the verdicts of the runs read ahead in
 * place (the chunks wrote theirs there), find the first commit any run
 * called bad, and from it on verify again in one run
 * (see the top of the file).
 */
static void settle(vpool *p, size_t i, mcg_repo *r)
{
    mcg_verify_report *rep = &p->ranges[i].rep;
    vlist *vl = &p->vl[i];
    size_t redo = SIZE_MAX;
    for (size_t k = 0; k < p->njobs; k++) {
        vjob *j = &p->jobs[k];
        if (j->range != i || !j->nbad)
            continue;
        for (size_t m = j->from; m < j->to; m++) {
            size_t at = vl->pos ? vl->pos[m] : m;
            if (!rep->v[at].good && at < redo)
                redo = at;
        }
    }
    for (size_t b = 0; i == 0 && b < p->nahead; b++) {
        vahead *a = &p->ahead[b];
        if (!a->valid)
            continue;
        for (size_t m = 0; m < a->n; m++) {
            rep->v[a->pos[m]] = a->v[m];
            if (!a->v[m].good && a->pos[m] < redo)
                redo = a->pos[m];
        }
    }
    rep->nbad = 0; /* every commit before redo is good */
    if (redo != SIZE_MAX) {
        mcg_verify_opts o = *p->opts;
        o.since = p->ranges[i].since;
        rep->nbad = mcg_verify_chunk(rep->v + redo, r, &p->vr[i], redo, p->vr[i].n, &o, p->root);
    }
    if (p->ranges[i].newest)
        mcg_verify_tip_now(rep, r, &p->vr[i], p->opts, p->root);
}

/*
 * The helper thread on the second repository handle, with the read-ahead
 * prepared when there are ranges (n); false when it could not start.
 */
static bool start_helper(pthread_t *helper, vpool *pool, mcg_repo *r, const mcg_verify_opts *o,
                         size_t n)
{
    pool->ahead_on = n > 0 && ahead_prepare(pool, r, o);
    /* The helper takes no signals: they go to the calling thread. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    bool threaded = pthread_create(helper, NULL, helper_main, pool) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return threaded;
}

/* Each range's report settled (rc 0) or dropped, and everything the pool holds freed. */
static void pool_finish(vpool *pool, mcg_verify_range *ranges, size_t n, mcg_repo *r, int rc)
{
    for (size_t i = 0; i < n; i++) {
        if (!rc)
            settle(pool, i, r);
        else
            mcg_verify_report_free(&ranges[i].rep);
        if (pool->vl[i].pos) {
            free(pool->vl[i].ids);
            free(pool->vl[i].pos);
        }
        mcg_vrange_free(&pool->vr[i]);
    }
    for (size_t b = 0; b < pool->nahead; b++) {
        free(pool->ahead[b].ids);
        free(pool->ahead[b].pos);
        free(pool->ahead[b].v);
    }
    free(pool->ahead);
    free(pool->vr);
    free(pool->vl);
    free(pool->jobs);
    pthread_cond_destroy(&pool->cv);
    pthread_mutex_destroy(&pool->mu);
}

/* Commits the read-ahead verified were never a job: the bar still ends at
 * every commit of the n ranges. */
static void tick_all(const vpool *pool, size_t n)
{
    uint64_t all = 0;
    for (size_t i = 0; i < n; i++)
        all += pool->vr[i].n;
    if (all && pool->th && pool->th->tick)
        pool->th->tick(pool->th->tick_ctx, all, all);
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
    pool.vl = mcg_calloc(n ? n : 1, sizeof(*pool.vl));
    atomic_init(&pool.ahead_stop, false);
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
    if (th && th->helper)
        threaded = start_helper(&helper, &pool, r, &o, n);
    if (!threaded && th && th->first)
        th->first(th->first_ctx); /* one thread: it runs everything in turn */

    if (threaded && pool.ahead_on && th->ahead_first) {
        pthread_mutex_lock(&pool.mu);
        while (!pool.ahead_done)
            pthread_cond_wait(&pool.cv, &pool.mu);
        pthread_mutex_unlock(&pool.mu);
    }
    /* Walk each range as one pass would, and hand its chunks out at once. */
    for (size_t i = 0; i < n && !rc; i++) {
        mcg_verify_opts wo = o; /* o is shared with the helper: not written now */
        wo.since = ranges[i].since;
        rc = mcg_verify_walk(&pool.vr[i], r, ranges[i].tip, &wo, root, err);
        if (i == 0 && threaded)
            ahead_settle(&pool);
        if (rc)
            break;
        ranges[i].rep.v = mcg_calloc(pool.vr[i].n ? pool.vr[i].n : 1, sizeof(mcg_verdict));
        ranges[i].rep.n = pool.vr[i].n;
        if (!pool.vl[i].pos) {
            pool.vl[i].ids = pool.vr[i].order;
            pool.vl[i].n = pool.vr[i].n;
        }
        vpool_add(&pool, i);
    }
    vpool_close(&pool);
    vpool_run(&pool, r);
    if (threaded)
        pthread_join(helper, NULL);
    if (!rc)
        tick_all(&pool, n);
    pool_finish(&pool, ranges, n, r, rc);
    return rc;
}
