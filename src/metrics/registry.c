/*
 * registry.c — metric families and their series, and the text exposition
 * format (Prometheus 0.0.4).
 *
 * The idea: a family is declared once with its type, help and label names;
 * a series is one tuple of label values, created at zero the first time it
 * is touched. Families are kept sorted by name and each family's series by
 * label values (binary search on update, insertion in place), so formatting
 * is a straight walk and the same state always formats to the same bytes.
 * One mutex guards everything: updates come from the controller's or
 * agent's loop, reads from the HTTP server's thread. Pure: no I/O, no
 * clock; callers pass durations in.
 */
#include "metrics/metrics.h"

#include <stddef.h>
#include <math.h>
#include <stddef.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define ERRORS_FAMILY "mcgit_metrics_errors_total"

typedef struct series {
    char **lv;        /* label values, nlabels of them */
    double value;     /* counter, gauge; histogram: the sum */
    uint64_t count;   /* histogram: observations */
    uint64_t *bucket; /* histogram: observations <= buckets[i] (not cumulative), nbuckets */
} series;

typedef struct family {
    char *name, *help;
    mcg_metric_type type;
    size_t nlabels;
    char *labels[MCG_METRICS_MAX_LABELS];
    double buckets[MCG_METRICS_MAX_BUCKETS];
    size_t nbuckets;
    series *s;
    size_t n, cap;
} family;

struct mcg_metrics {
    pthread_mutex_t mu;
    family *f; /* sorted by name */
    size_t n, cap;
};

/* A metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) or, with label, a label name
 * (no colon, not starting with "__"). */
static bool name_ok(const char *s, bool label)
{
    if (!s || !*s)
        return false;
    for (size_t i = 0; s[i]; i++) {
        char c = s[i];
        bool alpha =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (!label && c == ':');
        if (!alpha && !(i > 0 && c >= '0' && c <= '9'))
            return false;
    }
    return !label || strncmp(s, "__", 2) != 0;
}

/* Index of family name, or where it would go (*found false). Lock held. */
static size_t family_find(const mcg_metrics *m, const char *name, bool *found)
{
    return mcg_bsearch_str(m->f, m->n, sizeof(*m->f), offsetof(family, name), name, found);
}

/* Drop every series of f (its declaration stays). */
static void family_clear(family *f)
{
    for (size_t i = 0; i < f->n; i++) {
        for (size_t j = 0; j < f->nlabels; j++)
            free(f->s[i].lv[j]);
        free(f->s[i].lv);
        free(f->s[i].bucket);
    }
    free(f->s);
    f->s = NULL;
    f->n = f->cap = 0;
}

/* The label names of family f (metric name), comma-separated, each valid and given once. */
static int parse_labels(family *f, const char *name, const char *labels, mcg_err *err)
{
    const char *p = labels;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char *l = mcg_strndup(p, len);
        bool bad = !name_ok(l, true) || !strcmp(l, "le") || f->nlabels == MCG_METRICS_MAX_LABELS;
        for (size_t j = 0; j < f->nlabels && !bad; j++)
            bad = !strcmp(f->labels[j], l);
        if (bad) {
            int rc = mcg_err_set(err, MCG_EINVAL, "metric '%s': bad label name '%s'", name, l);
            free(l);
            for (size_t j = 0; j < f->nlabels; j++)
                free(f->labels[j]);
            return rc;
        }
        f->labels[f->nlabels++] = l;
        if (!comma)
            break;
        p = comma + 1;
    }
    return 0;
}

/* mcg_metrics_declare with the lock held (or before the registry is shared);
 * err may be NULL. */
static int declare_locked(mcg_metrics *m, const char *name, mcg_metric_type type, const char *help,
                          const char *labels, const double *buckets, size_t nbuckets, mcg_err *err)
{
    if (!name_ok(name, false))
        return mcg_err_set(err, MCG_EINVAL, "metric '%s': invalid name", name ? name : "");
    if ((type == MCG_METRIC_HISTOGRAM) != (nbuckets > 0) || nbuckets > MCG_METRICS_MAX_BUCKETS ||
        (nbuckets && !buckets))
        return mcg_err_set(err, MCG_EINVAL, "metric '%s': buckets go with histograms (1..%d)", name,
                           MCG_METRICS_MAX_BUCKETS);
    for (size_t i = 0; i < nbuckets; i++)
        if (!isfinite(buckets[i]) || (i && !(buckets[i] > buckets[i - 1])))
            return mcg_err_set(err, MCG_EINVAL, "metric '%s': buckets must increase", name);
    bool found;
    size_t at = family_find(m, name, &found);
    if (found)
        return mcg_err_set(err, MCG_EINVAL, "metric '%s': declared twice", name);
    family f;
    memset(&f, 0, sizeof(f));
    int rc;
    if (labels && *labels && (rc = parse_labels(&f, name, labels, err)) != 0)
        return rc;
    f.name = mcg_strdup(name);
    f.help = mcg_strdup(help ? help : "");
    f.type = type;
    if (nbuckets)
        memcpy(f.buckets, buckets, nbuckets * sizeof(*buckets));
    f.nbuckets = nbuckets;
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 16;
        m->f = mcg_realloc(m->f, m->cap * sizeof(*m->f));
    }
    memmove(&m->f[at + 1], &m->f[at], (m->n - at) * sizeof(*m->f));
    m->f[at] = f;
    m->n++;
    return 0;
}

mcg_metrics *mcg_metrics_new(void)
{
    mcg_metrics *m = mcg_calloc(1, sizeof(*m));
    pthread_mutex_init(&m->mu, NULL);
    declare_locked(m, ERRORS_FAMILY, MCG_METRIC_COUNTER,
                   "Metric updates that did not fit their family (a bug in mcgit).", NULL, NULL, 0,
                   NULL);
    return m;
}

void mcg_metrics_free(mcg_metrics *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++) {
        family_clear(&m->f[i]);
        for (size_t j = 0; j < m->f[i].nlabels; j++)
            free(m->f[i].labels[j]);
        free(m->f[i].name);
        free(m->f[i].help);
    }
    free(m->f);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

int mcg_metrics_declare(mcg_metrics *m, const char *name, mcg_metric_type type, const char *help,
                        const char *labels, const double *buckets, size_t nbuckets, mcg_err *err)
{
    mcg_err scratch;
    if (!err)
        err = &scratch;
    pthread_mutex_lock(&m->mu);
    int rc = declare_locked(m, name, type, help, labels, buckets, nbuckets, err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

/* Order of two series' label values, label by label. */
static int lv_cmp(const family *f, char *const *a, const char *const *b)
{
    for (size_t i = 0; i < f->nlabels; i++) {
        int c = strcmp(a[i], b[i]);
        if (c)
            return c;
    }
    return 0;
}

/* The series of f with label values lv, created when missing (create), or
 * NULL. Lock held; lv checked by the caller. */
static series *series_get(family *f, const char *const *lv, bool create)
{
    size_t lo = 0, hi = f->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = lv_cmp(f, f->s[mid].lv, lv);
        if (!c)
            return &f->s[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!create)
        return NULL;
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 8;
        f->s = mcg_realloc(f->s, f->cap * sizeof(*f->s));
    }
    memmove(&f->s[lo + 1], &f->s[lo], (f->n - lo) * sizeof(*f->s));
    series *s = &f->s[lo];
    memset(s, 0, sizeof(*s));
    s->lv = mcg_calloc(f->nlabels ? f->nlabels : 1, sizeof(*s->lv));
    for (size_t i = 0; i < f->nlabels; i++)
        s->lv[i] = mcg_strdup(lv[i]);
    if (f->nbuckets)
        s->bucket = mcg_calloc(f->nbuckets, sizeof(*s->bucket));
    f->n++;
    return s;
}

/* Count a misuse in the errors family. Lock held. */
static void misuse(mcg_metrics *m)
{
    bool found;
    size_t at = family_find(m, ERRORS_FAMILY, &found);
    if (found)
        series_get(&m->f[at], NULL, true)->value += 1;
}

typedef enum { OP_ADD, OP_SET, OP_OBSERVE } op_kind;

/* One update of the series name{lv} by v; a misuse is counted instead. */
static void update(mcg_metrics *m, const char *name, const char *const *lv, double v, op_kind op)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    bool found;
    size_t at = name ? family_find(m, name, &found) : (found = false, 0);
    family *f = found ? &m->f[at] : NULL;
    bool fits = f && !isnan(v);
    if (fits)
        switch (op) {
        case OP_ADD:
            fits = f->type == MCG_METRIC_GAUGE || (f->type == MCG_METRIC_COUNTER && v >= 0);
            break;
        case OP_SET:
            fits = f->type == MCG_METRIC_GAUGE;
            break;
        case OP_OBSERVE:
            fits = f->type == MCG_METRIC_HISTOGRAM;
            break;
        }
    for (size_t i = 0; fits && i < f->nlabels; i++)
        fits = lv && lv[i];
    if (!fits) {
        misuse(m);
        pthread_mutex_unlock(&m->mu);
        return;
    }
    series *s = series_get(f, lv, true);
    switch (op) {
    case OP_ADD:
        s->value += v;
        break;
    case OP_SET:
        s->value = v;
        break;
    case OP_OBSERVE:
        s->value += v;
        s->count++;
        for (size_t i = 0; i < f->nbuckets; i++)
            if (v <= f->buckets[i]) {
                s->bucket[i]++;
                break;
            }
        break;
    }
    pthread_mutex_unlock(&m->mu);
}

void mcg_metrics_add(mcg_metrics *m, const char *name, const char *const *lv, double v)
{
    update(m, name, lv, v, OP_ADD);
}

void mcg_metrics_set(mcg_metrics *m, const char *name, const char *const *lv, double v)
{
    update(m, name, lv, v, OP_SET);
}

void mcg_metrics_observe(mcg_metrics *m, const char *name, const char *const *lv, double v)
{
    update(m, name, lv, v, OP_OBSERVE);
}

void mcg_metrics_reset(mcg_metrics *m, const char *name)
{
    if (!m || !name)
        return;
    pthread_mutex_lock(&m->mu);
    bool found;
    size_t at = family_find(m, name, &found);
    if (found)
        family_clear(&m->f[at]);
    pthread_mutex_unlock(&m->mu);
}

bool mcg_metrics_get(mcg_metrics *m, const char *name, const char *const *lv, double *out)
{
    *out = 0;
    if (!m || !name)
        return false;
    pthread_mutex_lock(&m->mu);
    bool found;
    size_t at = family_find(m, name, &found);
    family *f = found ? &m->f[at] : NULL;
    bool ok = f && f->type != MCG_METRIC_HISTOGRAM;
    for (size_t i = 0; ok && i < f->nlabels; i++)
        ok = lv && lv[i];
    series *s = ok ? series_get(f, lv, false) : NULL;
    if (s)
        *out = s->value;
    pthread_mutex_unlock(&m->mu);
    return s != NULL;
}

/* A value as the format writes it: +Inf, -Inf, NaN, or the shortest
 * decimal that reads back as the same double. */
static void put_value(mcg_buf *b, double v)
{
    if (isnan(v)) {
        mcg_buf_puts(b, "NaN");
        return;
    }
    if (isinf(v)) {
        mcg_buf_puts(b, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    char s[40];
    if (v == floor(v) && fabs(v) < 1e15) {
        snprintf(s, sizeof(s), "%.0f", v); /* integers in full: 10, not 1e+01 */
        mcg_buf_puts(b, s);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(s, sizeof(s), "%.*g", prec, v);
        if (strtod(s, NULL) == v)
            break;
    }
    mcg_buf_puts(b, s);
}

/* Escape for a label value (\\, \", \n) or, with help, a HELP text (\\, \n). */
static void put_escaped(mcg_buf *b, const char *s, bool help)
{
    for (; *s; s++) {
        if (*s == '\\')
            mcg_buf_puts(b, "\\\\");
        else if (*s == '\n')
            mcg_buf_puts(b, "\\n");
        else if (*s == '"' && !help)
            mcg_buf_puts(b, "\\\"");
        else
            mcg_buf_putc(b, *s);
    }
}

/* name{l1="v1",...,extra} — extra: an additional label pair already
 * formatted (le="..."), or NULL. */
static void put_series_name(mcg_buf *b, const family *f, const char *suffix, const series *s,
                            const char *le)
{
    mcg_buf_puts(b, f->name);
    mcg_buf_puts(b, suffix);
    if (!f->nlabels && !le)
        return;
    mcg_buf_putc(b, '{');
    for (size_t i = 0; i < f->nlabels; i++) {
        mcg_buf_printf(b, "%s%s=\"", i ? "," : "", f->labels[i]);
        put_escaped(b, s->lv[i], false);
        mcg_buf_putc(b, '"');
    }
    if (le)
        mcg_buf_printf(b, "%sle=\"%s\"", f->nlabels ? "," : "", le);
    mcg_buf_putc(b, '}');
}

void mcg_metrics_format(mcg_metrics *m, mcg_buf *out)
{
    static const char *const types[] = {"counter", "gauge", "histogram"};
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < m->n; i++) {
        const family *f = &m->f[i];
        mcg_buf_printf(out, "# HELP %s ", f->name);
        put_escaped(out, f->help, true);
        mcg_buf_printf(out, "\n# TYPE %s %s\n", f->name, types[f->type]);
        for (size_t k = 0; k < f->n; k++) {
            const series *s = &f->s[k];
            if (f->type != MCG_METRIC_HISTOGRAM) {
                put_series_name(out, f, "", s, NULL);
                mcg_buf_putc(out, ' ');
                put_value(out, s->value);
                mcg_buf_putc(out, '\n');
                continue;
            }
            uint64_t cum = 0;
            for (size_t j = 0; j <= f->nbuckets; j++) {
                mcg_buf le = MCG_BUF_INIT;
                if (j < f->nbuckets) {
                    cum += s->bucket[j];
                    put_value(&le, f->buckets[j]);
                } else {
                    cum = s->count;
                    mcg_buf_puts(&le, "+Inf");
                }
                put_series_name(out, f, "_bucket", s, le.ptr);
                mcg_buf_printf(out, " %llu\n", (unsigned long long)cum);
                mcg_buf_free(&le);
            }
            put_series_name(out, f, "_sum", s, NULL);
            mcg_buf_putc(out, ' ');
            put_value(out, s->value);
            mcg_buf_putc(out, '\n');
            put_series_name(out, f, "_count", s, NULL);
            mcg_buf_printf(out, " %llu\n", (unsigned long long)s->count);
        }
    }
    pthread_mutex_unlock(&m->mu);
}
