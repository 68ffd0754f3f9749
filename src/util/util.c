/*
 * util.c — errors, allocation, buffers, diagnostics and string vectors.
 *
 * Allocation failures abort: mcgit cannot do anything useful without memory
 * and every caller checking malloc would only hide real error paths.
 */
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <sodium.h>
#include <string.h>
#include <time.h>

bool mcg_vbfmt(char *buf, size_t cap, const char *fmt, va_list ap)
{
    int n = vsnprintf(buf, cap, fmt, ap);
    if (n >= 0 && (size_t)n < cap)
        return true;
    if (n < 0)
        buf[0] = '\0';
    memcpy(buf + (n < 0 ? 0 : cap - 4), "...", 4);
    return false;
}

bool mcg_bfmt(char *buf, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bool ok = mcg_vbfmt(buf, cap, fmt, ap);
    va_end(ap);
    return ok;
}

int mcg_err_set(mcg_err *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        mcg_vbfmt(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

int mcg_err_set_os(mcg_err *err, int code, int errnum, const char *fmt, ...)
{
    if (err) {
        char msg[MCG_ERR_MSG];
        va_list ap;
        va_start(ap, fmt);
        mcg_vbfmt(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        mcg_bfmt(err->msg, sizeof(err->msg), "%s: %s", msg, strerror(errnum));
        err->code = code;
    }
    return code;
}

int mcg_err_prefix(mcg_err *err, const char *fmt, ...)
{
    if (!err)
        return MCG_EIO;
    char pre[MCG_ERR_MSG], old[MCG_ERR_MSG];
    va_list ap;
    va_start(ap, fmt);
    mcg_vbfmt(pre, sizeof(pre), fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof(old));
    mcg_bfmt(err->msg, sizeof(err->msg), "%s: %s", pre, old);
    if (err->code == 0)
        err->code = MCG_EIO;
    return err->code;
}

void mcg_err_clear(mcg_err *err)
{
    if (err) {
        err->code = 0;
        err->msg[0] = '\0';
    }
}

static void oom(void)
{
    fputs("mcgit: out of memory\n", stderr);
    abort();
}

void *mcg_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom();
    return p;
}

void *mcg_calloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        oom();
    return p;
}

void *mcg_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom();
    return q;
}

char *mcg_strdup(const char *s)
{
    return mcg_strndup(s, strlen(s));
}

char *mcg_strndup(const char *s, size_t n)
{
    char *p = mcg_malloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *mcg_sprintf(const char *fmt, ...)
{
    mcg_buf b = MCG_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    mcg_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    return mcg_buf_detach(&b, NULL);
}

static void buf_grow(mcg_buf *b, size_t extra)
{
    if (extra > SIZE_MAX / 2 - b->len)
        oom();
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    b->ptr = mcg_realloc(b->ptr, cap);
    b->cap = cap;
}

void mcg_buf_put(mcg_buf *b, const void *data, size_t n)
{
    buf_grow(b, n);
    if (n)
        memcpy(b->ptr + b->len, data, n);
    b->len += n;
    b->ptr[b->len] = '\0';
}

void mcg_buf_puts(mcg_buf *b, const char *s)
{
    mcg_buf_put(b, s, strlen(s));
}

void mcg_buf_putc(mcg_buf *b, char c)
{
    mcg_buf_put(b, &c, 1);
}

void mcg_buf_vprintf(mcg_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return;
    buf_grow(b, (size_t)n);
    vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void mcg_buf_printf(mcg_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mcg_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

char *mcg_buf_detach(mcg_buf *b, size_t *len)
{
    if (!b->ptr)
        buf_grow(b, 0);
    char *p = b->ptr;
    p[b->len] = '\0';
    if (len)
        *len = b->len;
    b->ptr = NULL;
    b->len = b->cap = 0;
    return p;
}

void mcg_buf_free(mcg_buf *b)
{
    if (!b)
        return;
    free(b->ptr);
    b->ptr = NULL;
    b->len = b->cap = 0;
}

void mcg_diags_add(mcg_diags *d, const char *fmt, ...)
{
    mcg_buf b = MCG_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    mcg_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    if (d->count == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 8;
        d->msgs = mcg_realloc(d->msgs, d->cap * sizeof(*d->msgs));
    }
    d->msgs[d->count++] = mcg_buf_detach(&b, NULL);
}

void mcg_diags_free(mcg_diags *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->count; i++)
        free(d->msgs[i]);
    free(d->msgs);
    d->msgs = NULL;
    d->count = d->cap = 0;
}

/* Where a report is: FILE (its length) and LINE, COL (0 when absent). */
typedef struct diag_loc {
    size_t flen; /* 0: no location */
    unsigned long line, col;
} diag_loc;

static unsigned long diag_num(const char **p)
{
    unsigned long v = 0;
    while (**p >= '0' && **p <= '9') {
        if (v < 100000000UL)
            v = v * 10 + (unsigned long)(**p - '0');
        (*p)++;
    }
    return v;
}

static diag_loc diag_where(const char *m)
{
    diag_loc l = {0, 0, 0};
    size_t f = strcspn(m, ": \t");
    if (f == 0 || m[f] != ':')
        return l; /* "word word: ..." is no location */
    l.flen = f;
    const char *p = m + f + 1;
    if (*p >= '0' && *p <= '9') {
        const char *q = p;
        unsigned long line = diag_num(&q);
        if (*q == ':') {
            l.line = line;
            p = q + 1;
            if (*p >= '0' && *p <= '9') {
                q = p;
                unsigned long col = diag_num(&q);
                if (*q == ':')
                    l.col = col;
            }
        }
    }
    return l;
}

static int diag_cmp(const void *a, const void *b)
{
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    diag_loc lx = diag_where(x), ly = diag_where(y);
    if (!lx.flen != !ly.flen)
        return lx.flen ? 1 : -1; /* without a location first */
    if (lx.flen) {
        size_t n = lx.flen < ly.flen ? lx.flen : ly.flen;
        int c = memcmp(x, y, n);
        if (c)
            return c;
        if (lx.flen != ly.flen)
            return lx.flen < ly.flen ? -1 : 1;
        if (lx.line != ly.line)
            return lx.line < ly.line ? -1 : 1;
        if (lx.col != ly.col)
            return lx.col < ly.col ? -1 : 1;
    }
    return strcmp(x, y);
}

void mcg_diags_sort(mcg_diags *d)
{
    if (d && d->count > 1)
        qsort(d->msgs, d->count, sizeof(*d->msgs), diag_cmp);
}

void mcg_strv_push(mcg_strv *s, const char *str)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 8;
        s->v = mcg_realloc(s->v, s->cap * sizeof(*s->v));
    }
    s->v[s->n++] = mcg_strdup(str);
}

bool mcg_strv_contains(const mcg_strv *s, const char *str)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i], str) == 0)
            return true;
    return false;
}

int mcg_strcmp_ptr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void mcg_strv_sort(mcg_strv *s)
{
    if (s->n > 1)
        qsort(s->v, s->n, sizeof(*s->v), mcg_strcmp_ptr);
}

void mcg_strv_free(mcg_strv *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

static unsigned char hash_key[crypto_shorthash_KEYBYTES];
static pthread_once_t hash_once = PTHREAD_ONCE_INIT;

static void hash_seed(void)
{
    if (sodium_init() < 0)
        abort(); /* libsodium cannot run: nothing of mcgit could */
    randombytes_buf(hash_key, sizeof(hash_key));
}

uint64_t mcg_keyed_hash(const void *p, size_t n)
{
    pthread_once(&hash_once, hash_seed);
    unsigned char h[crypto_shorthash_BYTES];
    crypto_shorthash(h, p, n, hash_key);
    uint64_t v;
    memcpy(&v, h, sizeof(v));
    return v;
}

void mcg_wipe(void *p, size_t n)
{
    if (p && n)
        sodium_memzero(p, n);
}

/* Contract: util.h. */
int64_t mcg_parse_duration(const char *s)
{
    int64_t total = 0;
    if (!*s)
        return -1;
    while (*s) {
        int64_t n = 0;
        if (*s < '0' || *s > '9')
            return -1;
        while (*s >= '0' && *s <= '9') {
            n = n * 10 + (*s++ - '0');
            if (n > 100000000)
                return -1;
        }
        switch (*s++) {
        case 'h':
            total += n * 3600;
            break;
        case 'm':
            total += n * 60;
            break;
        case 's':
            total += n;
            break;
        default:
            return -1;
        }
        if (total > 10LL * 366 * 86400)
            return -1;
    }
    return total;
}

bool mcg_parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s)
        return false;
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

char *mcg_time_iso(char out[32], int64_t t)
{
    /* civil_from_days (H. Hinnant): any int64 instant, no libc time zone */
    int64_t days = t / 86400, secs = t % 86400;
    if (secs < 0) {
        secs += 86400;
        days--;
    }
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t y = (int64_t)yoe + era * 400;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    unsigned d = doy - (153 * mp + 2) / 5 + 1;
    unsigned m = mp < 10 ? mp + 3 : mp - 9;
    y += m <= 2;
    /* at most 12 year digits and a sign for any int64 t: 28 bytes, it fits */
    if (!mcg_bfmt(out, 32, "%04lld-%02u-%02uT%02u:%02u:%02uZ", (long long)y, m, d,
                  (unsigned)(secs / 3600), (unsigned)(secs / 60 % 60), (unsigned)(secs % 60)))
        mcg_bfmt(out, 32, "(year %lld)", (long long)y);
    return out;
}

void mcg_human_duration(int64_t s, char out[32])
{
    if (s < -1) {
        snprintf(out, 32, "<invalid>");
        return;
    }
    if (s < 0)
        s = 0; /* a second of clock skew reads as now, as kubectl has it */
    int64_t m = s / 60, h = s / 3600, d = h / 24;
    if (s < 120)
        snprintf(out, 32, "%llds", (long long)s);
    else if (m < 10)
        s % 60 ? snprintf(out, 32, "%lldm%llds", (long long)m, (long long)(s % 60))
               : snprintf(out, 32, "%lldm", (long long)m);
    else if (m < 180)
        snprintf(out, 32, "%lldm", (long long)m);
    else if (h < 8)
        m % 60 ? snprintf(out, 32, "%lldh%lldm", (long long)h, (long long)(m % 60))
               : snprintf(out, 32, "%lldh", (long long)h);
    else if (h < 48)
        snprintf(out, 32, "%lldh", (long long)h);
    else if (h < 24 * 8)
        h % 24 ? snprintf(out, 32, "%lldd%lldh", (long long)d, (long long)(h % 24))
               : snprintf(out, 32, "%lldd", (long long)d);
    else if (h < 24 * 365 * 2)
        snprintf(out, 32, "%lldd", (long long)d);
    else if (h < 24 * 365 * 8)
        d % 365 ? snprintf(out, 32, "%lldy%lldd", (long long)(d / 365), (long long)(d % 365))
                : snprintf(out, 32, "%lldy", (long long)(d / 365));
    else
        snprintf(out, 32, "%lldy", (long long)(d / 365));
}

size_t mcg_edit_distance(const char *a, const char *b, size_t limit)
{
    size_t la = strlen(a), lb = strlen(b);
    if ((la > lb ? la - lb : lb - la) > limit)
        return limit + 1;
    /* three rows of the table: i-2, i-1, i */
    size_t *pp = mcg_calloc(lb + 1, sizeof(size_t)), *p = mcg_calloc(lb + 1, sizeof(size_t));
    size_t *row = mcg_calloc(lb + 1, sizeof(size_t));
    for (size_t j = 0; j <= lb; j++)
        p[j] = j;
    size_t d = la == 0 ? lb : limit + 1;
    for (size_t i = 1; i <= la; i++) {
        size_t best = row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            size_t v = p[j - 1] + cost;
            if (p[j] + 1 < v)
                v = p[j] + 1;
            if (row[j - 1] + 1 < v)
                v = row[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && pp[j - 2] + 1 < v)
                v = pp[j - 2] + 1;
            row[j] = v;
            if (v < best)
                best = v;
        }
        if (best > limit) { /* every later row is at least as far */
            d = limit + 1;
            break;
        }
        size_t *t = pp;
        pp = p;
        p = row;
        row = t;
        if (i == la)
            d = p[lb];
    }
    free(pp);
    free(p);
    free(row);
    return d > limit ? limit + 1 : d;
}

const char *mcg_did_you_mean(const char *word, const char *const *candidates)
{
    size_t len = strlen(word), best = 3;
    const char *pick = NULL;
    for (const char *const *c = candidates; *c; c++) {
        size_t d = mcg_edit_distance(word, *c, 2);
        if (d == 0)
            return NULL;
        if (d < best && 2 * d < len) {
            best = d;
            pick = *c;
        }
    }
    return pick;
}

size_t mcg_bsearch_str(const void *base, size_t n, size_t size, size_t key_off, const char *key,
                       bool *found)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *k;
        memcpy(&k, (const char *)base + mid * size + key_off, sizeof(k));
        int c = strcmp(k, key);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}
