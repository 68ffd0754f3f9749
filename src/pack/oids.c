/*
 * oids.c — collections of object ids: a list that sorts and searches, and
 * maps (or sets) for ids that come from untrusted packs. The maps use open
 * addressing with linear probing; the slot comes from the id's first 8
 * bytes mixed with a per-process random key, so ids chosen to collide
 * cannot make lookups slow.
 */
#include "pack/pack.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ lists */

void mcg_oidv_push(mcg_oidv *a, const git_oid *o)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 256;
        a->v = mcg_realloc(a->v, a->cap * sizeof(*a->v));
    }
    a->v[a->n++] = *o;
}

/* qsort/bsearch order of ids. */
static int oid_cmp(const void *a, const void *b)
{
    return git_oid_cmp(a, b);
}

void mcg_oidv_sort(mcg_oidv *a)
{
    if (!a->n)
        return;
    qsort(a->v, a->n, sizeof(*a->v), oid_cmp);
    size_t j = 1;
    for (size_t i = 1; i < a->n; i++)
        if (!git_oid_equal(&a->v[i], &a->v[j - 1]))
            a->v[j++] = a->v[i];
    a->n = j;
}

bool mcg_oidv_has(const mcg_oidv *a, const git_oid *o)
{
    return a->n && bsearch(o, a->v, a->n, sizeof(*a->v), oid_cmp) != NULL;
}

void mcg_oidv_free(mcg_oidv *a)
{
    free(a->v);
    memset(a, 0, sizeof(*a));
}

/* ------------------------------------------------------------ maps */
/* The first slot to probe for o (a pushed object's id is the pusher's choice). */
static size_t slot(const mcg_oidmap *m, const git_oid *o)
{
    return (size_t)mcg_keyed_hash(o->id, 8) & (m->cap - 1);
}

/* Insert o -> v unless o is there; true when it was added. */
static bool insert(mcg_oidmap *m, const git_oid *o, uint64_t v)
{
    size_t j = slot(m, o);
    while (m->used[j]) {
        if (git_oid_equal(&m->keys[j], o))
            return false;
        j = (j + 1) & (m->cap - 1);
    }
    m->used[j] = 1;
    m->keys[j] = *o;
    m->vals[j] = v;
    m->n++;
    return true;
}

/* Make room for n more ids (the table is kept at most half full). */
void mcg_oidmap_reserve(mcg_oidmap *m, size_t n)
{
    if ((m->n + n) * 2 <= m->cap)
        return;
    mcg_oidmap bigger = {0};
    bigger.cap = m->cap ? m->cap : 1024;
    while (bigger.cap < (m->n + n) * 2)
        bigger.cap *= 2;
    bigger.keys = mcg_malloc(bigger.cap * sizeof(*bigger.keys));
    bigger.vals = mcg_malloc(bigger.cap * sizeof(*bigger.vals));
    bigger.used = mcg_calloc(bigger.cap, 1);
    for (size_t i = 0; i < m->cap; i++)
        if (m->used[i])
            insert(&bigger, &m->keys[i], m->vals[i]);
    free(m->keys);
    free(m->vals);
    free(m->used);
    *m = bigger;
}

/* Add o -> v; true when o was not there yet (an existing value is kept). */
bool mcg_oidmap_put(mcg_oidmap *m, const git_oid *o, uint64_t v)
{
    mcg_oidmap_reserve(m, 1);
    return insert(m, o, v);
}

/* Whether o is there; its value in *v (v may be NULL). */
bool mcg_oidmap_get(const mcg_oidmap *m, const git_oid *o, uint64_t *v)
{
    if (!m->cap)
        return false;
    size_t j = slot(m, o);
    while (m->used[j]) {
        if (git_oid_equal(&m->keys[j], o)) {
            if (v)
                *v = m->vals[j];
            return true;
        }
        j = (j + 1) & (m->cap - 1);
    }
    return false;
}

/* Free the table; m is left empty, ready for reuse. */
void mcg_oidmap_free(mcg_oidmap *m)
{
    free(m->keys);
    free(m->vals);
    free(m->used);
    memset(m, 0, sizeof(*m));
}
