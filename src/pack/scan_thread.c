/*
 * scan_thread.c — the pack scan's thread: pack bytes handed over in copies
 * of the indexer's chunks (at most MCG_SCAN_QUEUE waiting; the feeder waits
 * beyond that), parsed by scan.c, and the kept commits' signatures checked
 * meanwhile — by the calling thread too, once the pack has ended. finish
 * hands what was learnt over as an mcg_packscan (scan_result.c).
 */
#include "pack/pack_int.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ signatures */

/* Check the next kept commit's signature, if any (mu held on entry and exit). */
static bool check_next(mcg_pack_scanner *p)
{
    if (p->next >= p->ncommits)
        return false;
    size_t k = p->next++;
    /* objs moves only on the scanner thread, which holds mu to read it here too */
    const unsigned char *data = p->objs[p->commits[k].obj].data;
    size_t len = p->objs[p->commits[k].obj].len;
    mcg_buf sig = MCG_BUF_INIT, payload = MCG_BUF_INIT;
    unsigned char d[MCG_SIGMEMO_DIGEST];
    pthread_mutex_unlock(&p->mu);
    bool ok = mcg_commit_split_signature(&sig, &payload, data, len) == 0 &&
              mcg_sshsig_check(d, sig.ptr, sig.len, payload.ptr, payload.len) == 0;
    mcg_buf_free(&sig);
    mcg_buf_free(&payload);
    pthread_mutex_lock(&p->mu);
    p->commits[k].ok = ok;
    if (ok)
        memcpy(p->commits[k].digest, d, sizeof(d));
    return true;
}

/* ------------------------------------------------------------ threads */

/*
 * With p->mu held: check one queued commit, or wait for more work (true);
 * false once the scan is over and no commit is left to check.
 */
static bool check_or_wait(mcg_pack_scanner *p)
{
    if (check_next(p))
        return true;
    if (p->scan_done)
        return false;
    pthread_cond_wait(&p->cv, &p->mu);
    return true;
}

/* The scanner thread: parse what is queued, check signatures in between. */
static void *scanner_main(void *arg)
{
    mcg_pack_scanner *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (p->stop)
            break;
        if (p->head) {
            mcg_scan_chunk *c = p->head;
            p->head = c->next;
            if (!p->head)
                p->tail = NULL;
            p->queued -= c->len;
            pthread_cond_broadcast(&p->cv); /* room for the feeder */
            pthread_mutex_unlock(&p->mu);
            mcg_scan_bytes(p, c->data, c->len);
            free(c);
            pthread_mutex_lock(&p->mu);
            continue;
        }
        if (p->eof && !p->scan_done) {
            p->scan_done = true;
            pthread_cond_broadcast(&p->cv);
        }
        if (!check_or_wait(p))
            break;
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

mcg_pack_scanner *mcg_pack_scan_start(void)
{
    mcg_pack_scanner *p = mcg_calloc(1, sizeof(*p));
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->sc.scratch = mcg_malloc(MCG_SCAN_SCRATCH);
    p->md = EVP_MD_CTX_new();
    if (inflateInit(&p->sc.z) == Z_OK) {
        p->sc.zinit = true;
        /* The scanner takes no signals: they go to the main thread, which cleans up. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        p->threaded = pthread_create(&p->th, NULL, scanner_main, p) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    return p;
}

int mcg_pack_scan_bases(mcg_pack_scanner *p, const char *objects)
{
    if (!p || p->bases)
        return -1;
    return git_odb_open(&p->bases, objects) == 0 ? 0 : -1;
}

void mcg_pack_scan_feed(mcg_pack_scanner *p, const void *buf, size_t n)
{
    if (!p || !p->threaded || !n)
        return;
    mcg_scan_chunk *c = mcg_malloc(sizeof(*c) + n);
    c->next = NULL;
    c->len = n;
    memcpy(c->data, buf, n);
    pthread_mutex_lock(&p->mu);
    while (p->queued >= MCG_SCAN_QUEUE && !p->stop)
        pthread_cond_wait(&p->cv, &p->mu);
    if (p->tail)
        p->tail->next = c;
    else
        p->head = c;
    p->tail = c;
    p->queued += n;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

bool mcg_pack_scan_sizes(mcg_pack_scanner *p, mcg_pack_sizes *out)
{
    memset(out, 0, sizeof(*out));
    if (!p || !p->threaded)
        return false;
    pthread_mutex_lock(&p->mu);
    p->eof = true;
    pthread_cond_broadcast(&p->cv);
    while (!p->scan_done)
        pthread_cond_wait(&p->cv, &p->mu);
    /* the parser is done with sc and sizes: only signature checks follow */
    bool whole = mcg_scan_reached_end(p);
    *out = p->sizes;
    pthread_mutex_unlock(&p->mu);
    return whole;
}

void mcg_scan_objs_free(mcg_scan_obj *objs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(objs[i].data);
    free(objs);
}

/* Free the scanner and whatever it still holds. */
static void scanner_free(mcg_pack_scanner *p)
{
    for (mcg_scan_chunk *c = p->head, *nx; c; c = nx) {
        nx = c->next;
        free(c);
    }
    mcg_scan_objs_free(p->objs, p->nobjs);
    free(p->commits);
    free(p->fifo);
    free(p->refs);
    free(p->hints);
    mcg_oidmap_free(&p->ids);
    mcg_oidmap_free(&p->links);
    free(p->sc.out);
    free(p->sc.ext);
    git_odb_free(p->bases);
    free(p->sc.scratch);
    if (p->sc.zinit)
        inflateEnd(&p->sc.z);
    EVP_MD_CTX_free(p->md);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

int mcg_scan_commit_cmp(const void *a, const void *b)
{
    return git_oid_cmp(&((const mcg_scan_commit *)a)->id, &((const mcg_scan_commit *)b)->id);
}

int mcg_scan_hint_cmp(const void *a, const void *b)
{
    return git_oid_cmp(&((const mcg_scan_hint *)a)->tree, &((const mcg_scan_hint *)b)->tree);
}

mcg_packscan *mcg_pack_scan_finish(mcg_pack_scanner *p)
{
    if (!p)
        return NULL;
    if (p->threaded) {
        pthread_mutex_lock(&p->mu);
        p->eof = true;
        pthread_cond_broadcast(&p->cv);
        while (check_or_wait(p))
            ; /* help until the scan is over and no commit is left */
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->th, NULL);
    }
    mcg_packscan *s = mcg_calloc(1, sizeof(*s));
    unsigned char(*d)[MCG_SIGMEMO_DIGEST] =
        mcg_malloc((p->ncommits ? p->ncommits : 1) * sizeof(*d));
    for (size_t i = 0; i < p->ncommits; i++)
        if (p->commits[i].ok)
            memcpy(d[s->checked++], p->commits[i].digest, MCG_SIGMEMO_DIGEST);
    s->memo = mcg_sigmemo_new((const unsigned char(*)[MCG_SIGMEMO_DIGEST])d, s->checked);
    free(d);
    s->complete = p->threaded && !p->incomplete && mcg_scan_reached_end(p);
    s->hints_ok = s->complete && !p->odd_tree;
    /* Hand over what the checks use; the cached bases go. */
    for (size_t i = 0; i < p->nobjs; i++)
        if (p->objs[i].cached) {
            free(p->objs[i].data);
            p->objs[i].data = NULL;
        }
    s->objs = p->objs;
    s->nobjs = p->nobjs;
    s->commits = p->commits;
    s->ncommits = p->ncommits;
    if (s->ncommits)
        qsort(s->commits, s->ncommits, sizeof(*s->commits), mcg_scan_commit_cmp);
    s->hints = p->hints;
    s->nhints = p->nhints;
    if (s->nhints)
        qsort(s->hints, s->nhints, sizeof(*s->hints), mcg_scan_hint_cmp);
    s->links = p->links;
    s->ids = p->ids;
    s->refs = p->refs;
    s->nrefs = p->nrefs;
    p->objs = NULL;
    p->nobjs = 0;
    p->commits = NULL;
    p->hints = NULL;
    p->refs = NULL;
    memset(&p->links, 0, sizeof(p->links));
    memset(&p->ids, 0, sizeof(p->ids));
    scanner_free(p);
    return s;
}

void mcg_pack_scan_abort(mcg_pack_scanner *p)
{
    if (!p)
        return;
    if (p->threaded) {
        pthread_mutex_lock(&p->mu);
        p->stop = true;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->th, NULL);
    }
    scanner_free(p);
}
