/*
 * selector.c — Kubernetes labels and label selectors.
 *
 * Labels are kept sorted by key so that anything derived from them is
 * deterministic, and lookups are binary searches. A set read from an
 * object (a Node's or MachineConfig's labels, which can be many) is built
 * by appending and sorting once, never by a sorted insert per label. Selector semantics follow
 * metav1.LabelSelector: every matchLabels pair must be present and every expression true.
 */
#include "model/model.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static int kv_cmp(const void *a, const void *b)
{
    return strcmp(((const mcg_kv *)a)->key, ((const mcg_kv *)b)->key);
}

const char *mcg_labels_get(const mcg_labels *l, const char *key)
{
    if (!l || !l->n)
        return NULL;
    mcg_kv k = {(char *)key, NULL};
    mcg_kv *f = bsearch(&k, l->items, l->n, sizeof(*l->items), kv_cmp);
    return f ? f->value : NULL;
}

/* Position of key in the sorted items (*found: it is there). */
static size_t labels_pos(const mcg_labels *l, const char *key, bool *found)
{
    size_t hi = l->n;
    *found = false;
    if (hi && strcmp(l->items[hi - 1].key, key) < 0)
        return hi; /* sorts last: the common case when building in order */
    return mcg_bsearch_str(l->items, l->n, sizeof(*l->items), offsetof(mcg_kv, key), key, found);
}

/* Room for one more item (capacity doubles). */
static void labels_grow(mcg_labels *l)
{
    if (l->n < l->cap)
        return;
    l->cap = l->cap ? l->cap * 2 : 4;
    l->items = mcg_realloc(l->items, l->cap * sizeof(*l->items));
}

void mcg_labels_set(mcg_labels *l, const char *key, const char *value)
{
    bool found;
    size_t i = labels_pos(l, key, &found);
    if (found) {
        free(l->items[i].value);
        l->items[i].value = mcg_strdup(value);
        return;
    }
    labels_grow(l);
    memmove(&l->items[i + 1], &l->items[i], (l->n - i) * sizeof(*l->items));
    l->items[i].key = mcg_strdup(key);
    l->items[i].value = mcg_strdup(value);
    l->n++;
}

void mcg_labels_add(mcg_labels *l, const char *key, const char *value)
{
    labels_grow(l);
    l->items[l->n].key = mcg_strdup(key);
    l->items[l->n].value = mcg_strdup(value);
    l->n++;
}

/* Stable merge sort by key of v[0..n) using tmp (n items). */
static void kv_merge_sort(mcg_kv *v, mcg_kv *tmp, size_t n)
{
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t a = lo, b = mid, k = lo;
            while (a < mid && b < hi)
                tmp[k++] = strcmp(v[b].key, v[a].key) < 0 ? v[b++] : v[a++];
            while (a < mid)
                tmp[k++] = v[a++];
            while (b < hi)
                tmp[k++] = v[b++];
        }
        memcpy(v, tmp, n * sizeof(*v));
    }
}

void mcg_labels_finish(mcg_labels *l)
{
    if (l->n < 2)
        return;
    bool sorted = true;
    for (size_t i = 1; i < l->n && sorted; i++)
        sorted = strcmp(l->items[i - 1].key, l->items[i].key) < 0;
    if (sorted)
        return;
    mcg_kv *tmp = mcg_calloc(l->n, sizeof(*tmp));
    kv_merge_sort(l->items, tmp, l->n);
    free(tmp);
    /* equal keys are adjacent, in the order added: keep the last of each */
    size_t k = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (i + 1 < l->n && !strcmp(l->items[i].key, l->items[i + 1].key)) {
            free(l->items[i].key);
            free(l->items[i].value);
            continue;
        }
        l->items[k++] = l->items[i];
    }
    l->n = k;
}

bool mcg_labels_remove(mcg_labels *l, const char *key)
{
    bool found;
    size_t i = labels_pos(l, key, &found);
    if (!found)
        return false;
    free(l->items[i].key);
    free(l->items[i].value);
    memmove(&l->items[i], &l->items[i + 1], (l->n - i - 1) * sizeof(*l->items));
    l->n--;
    return true;
}

void mcg_labels_free(mcg_labels *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++) {
        free(l->items[i].key);
        free(l->items[i].value);
    }
    free(l->items);
    l->items = NULL;
    l->n = 0;
    l->cap = 0;
}

/* Label keys: optional DNS-subdomain prefix '/', name of [A-Za-z0-9-_.] <= 63. */
static bool label_name_ok(const char *s, size_t n, bool allow_empty)
{
    if (n == 0)
        return allow_empty;
    if (n > 63)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        bool alnum =
            (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
        if (!alnum && ch != '-' && ch != '_' && ch != '.')
            return false;
        if ((i == 0 || i == n - 1) && !alnum)
            return false;
    }
    return true;
}

static bool label_key_ok(const char *k)
{
    const char *slash = strchr(k, '/');
    if (slash) {
        char *prefix = mcg_strndup(k, (size_t)(slash - k));
        bool ok = mcg_name_is_dns_subdomain(prefix);
        free(prefix);
        return ok && label_name_ok(slash + 1, strlen(slash + 1), false);
    }
    return label_name_ok(k, strlen(k), false);
}

int mcg_labels_parse_arg(mcg_labels *l, const char *arg, mcg_err *err)
{
    char *copy = mcg_strdup(arg), *save = NULL;
    int rc = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        size_t tl = strlen(tok);
        if (!eq && tl > 1 && tok[tl - 1] == '-') {
            tok[tl - 1] = '\0';
            if (!label_key_ok(tok)) {
                rc = mcg_err_set(err, MCG_EUSAGE, "invalid label key '%s'", tok);
                break;
            }
            mcg_labels_remove(l, tok);
            continue;
        }
        if (!eq) {
            rc = mcg_err_set(err, MCG_EUSAGE, "label '%s' is not key=value", tok);
            break;
        }
        *eq = '\0';
        if (!label_key_ok(tok) || !label_name_ok(eq + 1, strlen(eq + 1), true)) {
            rc = mcg_err_set(err, MCG_EUSAGE, "invalid label '%s=%s'", tok, eq + 1);
            break;
        }
        mcg_labels_set(l, tok, eq + 1);
    }
    free(copy);
    return rc;
}

bool mcg_selector_is_empty(const mcg_selector *s)
{
    return !s->present || (s->match.n == 0 && s->nexprs == 0);
}

bool mcg_selector_matches(const mcg_selector *s, const mcg_labels *labels)
{
    if (!s->present)
        return false;
    for (size_t i = 0; i < s->match.n; i++) {
        const char *v = mcg_labels_get(labels, s->match.items[i].key);
        if (!v || strcmp(v, s->match.items[i].value) != 0)
            return false;
    }
    for (size_t i = 0; i < s->nexprs; i++) {
        const mcg_sel_expr *e = &s->exprs[i];
        const char *v = mcg_labels_get(labels, e->key);
        switch (e->op) {
        case MCG_SEL_IN:
            if (!v || !mcg_strv_contains(&e->values, v))
                return false;
            break;
        case MCG_SEL_NOTIN:
            if (v && mcg_strv_contains(&e->values, v))
                return false;
            break;
        case MCG_SEL_EXISTS:
            if (!v)
                return false;
            break;
        case MCG_SEL_DOESNOTEXIST:
            if (v)
                return false;
            break;
        }
    }
    return true;
}

bool mcg_name_is_dns_label(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        bool an = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
        if (!an && !(ch == '-' && i > 0 && i < n - 1))
            return false;
    }
    return true;
}

bool mcg_name_is_dns_subdomain(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253)
        return false;
    const char *p = s;
    for (;;) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        char part[64];
        if (len == 0 || len > 63)
            return false;
        memcpy(part, p, len);
        part[len] = '\0';
        if (!mcg_name_is_dns_label(part))
            return false;
        if (!dot)
            return true;
        p = dot + 1;
    }
}

bool mcg_name_is_unit(const char *s)
{
    static const char *const suffixes[] = {".service",   ".socket", ".device", ".mount",
                                           ".automount", ".swap",   ".target", ".path",
                                           ".timer",     ".slice",  ".scope",  NULL};
    size_t n = strlen(s);
    if (n == 0 || n > 255 || s[0] == '.' || s[0] == '-')
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || strchr(":-_.\\@", ch);
        if (!ok || ch == '\0')
            return false;
    }
    for (const char *const *suf = suffixes; *suf; suf++) {
        size_t sl = strlen(*suf);
        if (n > sl && !strcmp(s + n - sl, *suf))
            return true;
    }
    return false;
}
