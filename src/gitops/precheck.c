/*
 * precheck.c — checking the signatures of a pack's commits while the pack
 * is being indexed.
 *
 * Bundle import streams the pack into libgit2's indexer on the calling
 * thread; nothing can be read back before the indexer has finished. So a
 * second thread reads the same bytes as they go by: it follows the pack's
 * object headers, inflates every object just far enough to find where it
 * ends, keeps the commits (applying commit deltas, which git writes for
 * nearly every commit, to the commits it holds) and checks each commit's
 * signature cryptographically (mcg_sshsig_check). When the indexer is done
 * the calling thread helps with what is left, and the result is a memo
 * (trust.h): the ordinary verification then decides trust commit by commit
 * as always and skips only the arithmetic already done.
 *
 * Nothing here decides anything. A commit the scan misses (a REF_DELTA, a
 * base not held, a commit too large, a pack it cannot follow) is simply
 * verified in full later; bytes that are not what the indexer stored can
 * only produce digests nobody looks up, since a digest stands for a key, a
 * message digest and a signature that verified, not for a commit id.
 *
 * Memory: the pack is handed over in copies of the indexer's chunks, at
 * most PRECHECK_QUEUE bytes waiting (the feeder waits beyond that); the
 * commits held are capped at PRECHECK_HELD bytes, after which commits are
 * left to the full verification.
 */
#include "gitops/gitops_int.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define PRECHECK_QUEUE (16u * 1024 * 1024)  /* pack bytes waiting for the scanner */
#define PRECHECK_HELD (64u * 1024 * 1024)   /* commit bytes held for deltas and checks */
#define PRECHECK_MAX_COMMIT (4u * 1024 * 1024)
#define PRECHECK_SCRATCH (64u * 1024)

enum { T_COMMIT = 1, T_TREE = 2, T_BLOB = 3, T_TAG = 4, T_OFS = 6, T_REF = 7 };

typedef struct chunk {
    struct chunk *next;
    size_t len;
    unsigned char data[];
} chunk;

/* A commit seen in the pack: where it starts and its content. */
typedef struct held {
    uint64_t off;
    unsigned char *data;
    size_t len;
    bool ok; /* its signature verified: digest is set */
    unsigned char digest[MCG_SIGMEMO_DIGEST];
} held;

/* The scanner's position in the pack stream. */
typedef struct scan {
    enum { S_PACKHDR, S_OBJHDR, S_ZDATA, S_TRAILER, S_BROKEN } state;
    uint64_t pos;     /* pack bytes consumed */
    uint32_t nobj, i; /* objects in the pack, objects done */
    unsigned char hdr[32];
    size_t hlen;
    /* the current object */
    uint64_t off;        /* its first byte */
    int type;            /* T_* as stored */
    uint64_t size;       /* inflated size from its header */
    uint64_t base;       /* T_OFS: the base's offset */
    bool keep;           /* inflate into out (a commit, or a delta on a held commit) */
    unsigned char *out;  /* size bytes when keep */
    z_stream z;
    bool zinit;
    unsigned char *scratch; /* where inflate writes what is not kept */
} scan;

struct mcg_precheck {
    pthread_t th;
    bool threaded;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* under mu */
    chunk *head, *tail;
    size_t queued;
    bool eof, stop, scan_done;
    held *commits;
    size_t n, cap, next; /* commits seen; next one to check */
    size_t held_bytes;
    /* the scanner's own */
    scan sc;
};

/* ------------------------------------------------------------ commits */

/*
 * Split a raw commit as git_commit_extract_signature does: the value of its
 * first "gpgsig" header (continuation lines joined by '\n', each without its
 * leading space) and everything else, which is what was signed. False when
 * there is no such header.
 */
static bool split_signed(const unsigned char *c, size_t n, mcg_buf *sig, mcg_buf *payload)
{
    static const char field[] = "gpgsig ";
    const size_t flen = sizeof(field) - 1;
    size_t p = 0;
    while (p < n) {
        const unsigned char *nl = memchr(c + p, '\n', n - p);
        if (!nl || nl == c + p)
            return false; /* the headers ended (blank line) without one */
        size_t e = (size_t)(nl - c) + 1; /* one past the line's '\n' */
        if (e - p > flen && memcmp(c + p, field, flen) == 0) {
            mcg_buf_put(sig, c + p + flen, e - 1 - (p + flen));
            while (e < n && c[e] == ' ') {
                const unsigned char *nl2 = memchr(c + e, '\n', n - e);
                if (!nl2)
                    return false;
                mcg_buf_put(sig, "\n", 1);
                mcg_buf_put(sig, c + e + 1, (size_t)(nl2 - (c + e + 1)));
                e = (size_t)(nl2 - c) + 1;
            }
            mcg_buf_put(payload, c, p);
            mcg_buf_put(payload, c + e, n - e);
            return true;
        }
        p = e;
    }
    return false;
}

/* Check one held commit's signature; fills ok and digest. */
static void check_commit(const unsigned char *data, size_t len, bool *ok,
                         unsigned char digest[MCG_SIGMEMO_DIGEST])
{
    mcg_buf sig = MCG_BUF_INIT, payload = MCG_BUF_INIT;
    *ok = split_signed(data, len, &sig, &payload) &&
          mcg_sshsig_check(digest, sig.ptr, sig.len, payload.ptr, payload.len) == 0;
    mcg_buf_free(&sig);
    mcg_buf_free(&payload);
}

/*
 * The held commit starting at off, or NULL. Scanner thread only: it alone
 * adds commits (and so moves the array), and the fields it reads here never
 * change once added.
 */
static const held *held_at(const mcg_precheck *p, uint64_t off)
{
    size_t lo = 0, hi = p->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->commits[mid].off < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->n && p->commits[lo].off == off ? &p->commits[lo] : NULL;
}

static void held_add(mcg_precheck *p, uint64_t off, unsigned char *data, size_t len)
{
    pthread_mutex_lock(&p->mu);
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 1024;
        p->commits = mcg_realloc(p->commits, p->cap * sizeof(*p->commits));
    }
    held *h = &p->commits[p->n++];
    memset(h, 0, sizeof(*h));
    h->off = off;
    h->data = data;
    h->len = len;
    p->held_bytes += len;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* ------------------------------------------------------------ scanning */

static void scan_break(scan *s)
{
    s->state = S_BROKEN;
    free(s->out);
    s->out = NULL;
}

/* The object header in s->hdr is complete when this returns true. */
static bool objhdr_complete(scan *s)
{
    size_t i = 0;
    while (i < s->hlen && (s->hdr[i] & 0x80))
        i++;
    if (i >= s->hlen)
        return false; /* the size varint goes on */
    int type = (s->hdr[0] >> 4) & 7;
    size_t rest = s->hlen - (i + 1);
    if (type == T_OFS) {
        size_t j = i + 1;
        while (j < s->hlen && (s->hdr[j] & 0x80))
            j++;
        return j < s->hlen;
    }
    if (type == T_REF)
        return rest >= 20;
    return true;
}

/* Decode the complete header in s->hdr and set up the object's inflation. */
static void objhdr_start(mcg_precheck *p, scan *s)
{
    const unsigned char *h = s->hdr;
    size_t i = 0;
    s->type = (h[0] >> 4) & 7;
    s->size = h[0] & 15;
    for (int shift = 4; h[i] & 0x80; shift += 7) {
        i++;
        if (shift > 57) {
            scan_break(s);
            return;
        }
        s->size |= (uint64_t)(h[i] & 0x7f) << shift;
    }
    i++;
    s->keep = false;
    if (s->type == T_OFS) {
        uint64_t ofs = h[i] & 0x7f;
        while (h[i] & 0x80) {
            i++;
            if (ofs > (UINT64_MAX >> 8)) {
                scan_break(s);
                return;
            }
            ofs = ((ofs + 1) << 7) | (h[i] & 0x7f);
        }
        if (ofs == 0 || ofs > s->off) {
            scan_break(s);
            return;
        }
        s->base = s->off - ofs;
        /* a delta is worth keeping when its base is a commit held */
        s->keep = s->size <= PRECHECK_MAX_COMMIT && held_at(p, s->base) != NULL;
    } else if (s->type == T_COMMIT) {
        s->keep = s->size <= PRECHECK_MAX_COMMIT;
    } else if (s->type == 0 || s->type == 5) {
        scan_break(s);
        return;
    }
    if (s->keep && p->held_bytes + s->size > PRECHECK_HELD)
        s->keep = false;
    s->out = s->keep ? mcg_malloc(s->size + 1) : NULL; /* +1: an overlong object shows */
    if (inflateReset(&s->z) != Z_OK) {
        scan_break(s);
        return;
    }
    s->z.next_out = s->keep ? s->out : s->scratch;
    s->z.avail_out = s->keep ? (uInt)s->size + 1 : PRECHECK_SCRATCH;
    s->z.total_out = 0;
    s->state = S_ZDATA;
}

/* The current object's data has ended: hold it if it is a commit. */
static void object_done(mcg_precheck *p, scan *s)
{
    if (s->keep) {
        unsigned char *content = s->out;
        size_t len = (size_t)s->size;
        s->out = NULL;
        if (s->type == T_OFS) {
            const held *b = held_at(p, s->base);
            unsigned char *r = b ? mcg_git_delta_apply(&len, b->data, b->len, content, len,
                                                       PRECHECK_MAX_COMMIT)
                                 : NULL;
            free(content);
            content = r;
        }
        if (content)
            held_add(p, s->off, content, len);
    }
    s->i++;
    s->hlen = 0;
    s->state = s->i == s->nobj ? S_TRAILER : S_OBJHDR;
}

/* Scan n more bytes of the pack. */
static void scan_bytes(mcg_precheck *p, const unsigned char *b, size_t n)
{
    scan *s = &p->sc;
    while (n && s->state != S_BROKEN && s->state != S_TRAILER) {
        if (s->state == S_PACKHDR) {
            size_t take = 12 - s->hlen < n ? 12 - s->hlen : n;
            memcpy(s->hdr + s->hlen, b, take);
            s->hlen += take;
            b += take;
            n -= take;
            s->pos += take;
            if (s->hlen < 12)
                continue;
            uint32_t ver = (uint32_t)s->hdr[4] << 24 | (uint32_t)s->hdr[5] << 16 |
                           (uint32_t)s->hdr[6] << 8 | s->hdr[7];
            if (memcmp(s->hdr, "PACK", 4) != 0 || (ver != 2 && ver != 3)) {
                scan_break(s);
                break;
            }
            s->nobj = (uint32_t)s->hdr[8] << 24 | (uint32_t)s->hdr[9] << 16 |
                      (uint32_t)s->hdr[10] << 8 | s->hdr[11];
            s->hlen = 0;
            s->state = s->nobj ? S_OBJHDR : S_TRAILER;
        } else if (s->state == S_OBJHDR) {
            if (s->hlen == 0)
                s->off = s->pos;
            if (s->hlen == sizeof(s->hdr)) {
                scan_break(s);
                break;
            }
            s->hdr[s->hlen++] = *b++;
            n--;
            s->pos++;
            if (objhdr_complete(s))
                objhdr_start(p, s);
        } else { /* S_ZDATA */
            s->z.next_in = (unsigned char *)b;
            s->z.avail_in = (uInt)(n > UINT32_MAX ? UINT32_MAX : n);
            uInt before = s->z.avail_in;
            int zr;
            for (;;) {
                zr = inflate(&s->z, Z_NO_FLUSH);
                if (zr == Z_STREAM_END || (zr != Z_OK && zr != Z_BUF_ERROR))
                    break;
                if (s->z.avail_out == 0) {
                    if (s->keep) { /* more than the header said */
                        zr = Z_DATA_ERROR;
                        break;
                    }
                    s->z.next_out = s->scratch;
                    s->z.avail_out = PRECHECK_SCRATCH;
                    continue;
                }
                if (s->z.avail_in == 0)
                    break; /* the rest comes with the next chunk */
                if (zr == Z_BUF_ERROR) { /* no progress with room on both sides */
                    zr = Z_DATA_ERROR;
                    break;
                }
            }
            size_t used = before - s->z.avail_in;
            b += used;
            n -= used;
            s->pos += used;
            if (zr == Z_STREAM_END) {
                if (s->z.total_out != s->size) {
                    scan_break(s);
                    break;
                }
                object_done(p, s);
            } else if (zr != Z_OK && zr != Z_BUF_ERROR) {
                scan_break(s);
                break;
            }
        }
    }
}

/* ------------------------------------------------------------ threads */

/* Check the next unchecked commit, if any (called with mu held; returns with it held). */
static bool check_next(mcg_precheck *p)
{
    if (p->next >= p->n)
        return false;
    size_t i = p->next++;
    const unsigned char *data = p->commits[i].data;
    size_t len = p->commits[i].len;
    bool ok;
    unsigned char d[MCG_SIGMEMO_DIGEST];
    pthread_mutex_unlock(&p->mu);
    check_commit(data, len, &ok, d);
    pthread_mutex_lock(&p->mu);
    p->commits[i].ok = ok;
    memcpy(p->commits[i].digest, d, sizeof(d));
    return true;
}

static void *scanner_main(void *arg)
{
    mcg_precheck *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (p->stop)
            break;
        if (p->head) {
            chunk *c = p->head;
            p->head = c->next;
            if (!p->head)
                p->tail = NULL;
            p->queued -= c->len;
            pthread_cond_broadcast(&p->cv); /* room for the feeder */
            pthread_mutex_unlock(&p->mu);
            scan_bytes(p, c->data, c->len);
            free(c);
            pthread_mutex_lock(&p->mu);
            continue;
        }
        if (p->eof && !p->scan_done) {
            p->scan_done = true;
            pthread_cond_broadcast(&p->cv);
        }
        if (check_next(p))
            continue;
        if (p->scan_done)
            break;
        pthread_cond_wait(&p->cv, &p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

mcg_precheck *mcg_precheck_start(void)
{
    mcg_precheck *p = mcg_calloc(1, sizeof(*p));
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->sc.scratch = mcg_malloc(PRECHECK_SCRATCH);
    if (inflateInit(&p->sc.z) != Z_OK) {
        p->sc.state = S_BROKEN;
    } else {
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

void mcg_precheck_feed(mcg_precheck *p, const void *buf, size_t n)
{
    if (!p || !p->threaded || !n)
        return;
    chunk *c = mcg_malloc(sizeof(*c) + n);
    c->next = NULL;
    c->len = n;
    memcpy(c->data, buf, n);
    pthread_mutex_lock(&p->mu);
    while (p->queued >= PRECHECK_QUEUE && !p->stop)
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

static void precheck_free(mcg_precheck *p)
{
    for (chunk *c = p->head, *nx; c; c = nx) {
        nx = c->next;
        free(c);
    }
    for (size_t i = 0; i < p->n; i++)
        free(p->commits[i].data);
    free(p->commits);
    free(p->sc.out);
    free(p->sc.scratch);
    if (p->sc.zinit)
        inflateEnd(&p->sc.z);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

mcg_sigmemo *mcg_precheck_finish(mcg_precheck *p, size_t *checked)
{
    *checked = 0;
    if (!p)
        return NULL;
    if (p->threaded) {
        pthread_mutex_lock(&p->mu);
        p->eof = true;
        pthread_cond_broadcast(&p->cv);
        /* help: check commits until the scan is over and none is left */
        for (;;) {
            if (check_next(p))
                continue;
            if (p->scan_done)
                break;
            pthread_cond_wait(&p->cv, &p->mu);
        }
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->th, NULL);
    }
    unsigned char(*d)[MCG_SIGMEMO_DIGEST] = mcg_malloc((p->n ? p->n : 1) * sizeof(*d));
    size_t k = 0;
    for (size_t i = 0; i < p->n; i++)
        if (p->commits[i].ok)
            memcpy(d[k++], p->commits[i].digest, MCG_SIGMEMO_DIGEST);
    mcg_sigmemo *m = mcg_sigmemo_new((const unsigned char(*)[MCG_SIGMEMO_DIGEST])d, k);
    *checked = k;
    free(d);
    precheck_free(p);
    return m;
}

void mcg_precheck_abort(mcg_precheck *p)
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
    precheck_free(p);
}
