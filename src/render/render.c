/*
 * render.c — selection, Ignition merge, canonical spec and content name.
 *
 * Merge rules (as MCO merges MachineConfigs): files, directories and links share one key
 * space (path); units are keyed by name and drop-ins by name within their
 * unit; for the same key a later entry wins field by field, a field it
 * leaves unset keeps the earlier value; an entry of another kind at the same
 * path replaces the earlier one whole. A file's contents (source and
 * compression) are one field: mixing one MC's source with another's
 * compression would decode neither. core's SSH keys are united in order of
 * first appearance; core's passwordHash is a field like any other. The
 * sections MCO calls unreconcilable (disks, raid, filesystems, luks, groups,
 * other users) merge entry by entry under their key (device or name), a
 * later entry's fields replacing the earlier's. After the merge, unset
 * fields take Ignition's defaults (file mode 0644, directory 0755,
 * overwrite true) so that configs that mean the same thing hash the same.
 *
 * The fields beside the config follow MCO's MergeMachineConfigs: kernel
 * arguments concatenated in merge order (repeats kept: `y=0 z=4` then
 * `y=1 z=4` gives `y=0 z=4 y=1 z=4`, as MCO's e2e test 67825 expects),
 * extensions appended, fips true if any MC sets it, kernelType the last
 * non-default value in merge order (realtime or 64k-pages), osImageURL and
 * baseOSExtensionsContainerImage the last non-empty value; kernel-devel is
 * refused with a non-default kernel. They are part of the spec (omitted when
 * they hold their defaults, so configs without them keep their names) and
 * so of its hash.
 */
#include "render/render.h"

#include <stdlib.h>
#include <string.h>

static char *dup_or_null(const char *s)
{
    return s ? mcg_strdup(s) : NULL;
}

static void owner_merge(mcg_owner *d, const mcg_owner *s)
{
    if (s->name || s->has_id) {
        free(d->name);
        d->name = dup_or_null(s->name);
        d->has_id = s->has_id;
        d->id = s->id;
    }
}

static void storage_clear(mcg_storage *s)
{
    free(s->path);
    free(s->source);
    free(s->compression);
    free(s->data);
    free(s->target);
    free(s->user.name);
    free(s->group.name);
    memset(s, 0, sizeof(*s));
}

static void storage_copy(mcg_storage *d, const mcg_storage *s)
{
    *d = *s;
    d->path = mcg_strdup(s->path);
    d->source = dup_or_null(s->source);
    d->compression = dup_or_null(s->compression);
    d->target = dup_or_null(s->target);
    d->user.name = dup_or_null(s->user.name);
    d->group.name = dup_or_null(s->group.name);
    d->data = NULL;
    if (s->data) {
        d->data = mcg_malloc(s->data_len + 1);
        memcpy(d->data, s->data, s->data_len);
        d->data[s->data_len] = 0;
    }
}

static void storage_merge(mcg_storage *d, const mcg_storage *s)
{
    if (d->kind != s->kind) {
        /* Another kind at the same path replaces the entry whole; the path
         * string is kept because the merge index points at it. */
        char *path = d->path;
        d->path = NULL;
        storage_clear(d);
        storage_copy(d, s);
        free(d->path);
        d->path = path;
        return;
    }
    d->loc = s->loc;
    if (s->has_mode) {
        d->has_mode = true;
        d->mode = s->mode;
    }
    if (s->overwrite)
        d->overwrite = s->overwrite;
    owner_merge(&d->user, &s->user);
    owner_merge(&d->group, &s->group);
    if (s->has_contents) {
        free(d->source);
        free(d->compression);
        free(d->data);
        d->has_contents = true;
        d->source = dup_or_null(s->source);
        d->compression = dup_or_null(s->compression);
        d->data = mcg_malloc(s->data_len + 1);
        if (s->data_len)
            memcpy(d->data, s->data, s->data_len);
        d->data[s->data_len] = 0;
        d->data_len = s->data_len;
    }
    if (s->target) {
        free(d->target);
        d->target = mcg_strdup(s->target);
    }
    if (s->hard)
        d->hard = s->hard;
}

/* Drop-in merges go through an index of the unit's drop-in names (see
 * unit_merge), declared with the other keyed lookups below. */
typedef struct keyidx keyidx;
static void idx_put(keyidx *ix, char *key, size_t pos);
static bool idx_get(const keyidx *ix, const char *key, size_t *pos);
static void idx_free(keyidx *ix);

/*
 * Merge unit s into d. Drop-ins are matched by name through a hash index
 * (built when either side has more than a few), so a unit with n drop-ins
 * merges in O(n), and d's array grows geometrically.
 */
static void unit_merge(mcg_unit *d, const mcg_unit *s);
/*
 * Keyed lookups use a linear scan per entry; configs hold tens of entries,
 * but 10,000 MCs x 10 files must still be fast, so callers merge through an
 * index (see merge_index below).
 */
struct keyidx {
    char **keys;
    size_t *pos;
    size_t cap;
    size_t n;
};

static size_t str_hash(const char *s)
{
    size_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static void idx_put(keyidx *ix, char *key, size_t pos);

static void idx_grow(keyidx *ix)
{
    keyidx n = {mcg_calloc(ix->cap ? ix->cap * 2 : 64, sizeof(char *)),
                mcg_calloc(ix->cap ? ix->cap * 2 : 64, sizeof(size_t)), ix->cap ? ix->cap * 2 : 64,
                0};
    for (size_t i = 0; i < ix->cap; i++)
        if (ix->keys[i])
            idx_put(&n, ix->keys[i], ix->pos[i]);
    free(ix->keys);
    free(ix->pos);
    *ix = n;
}

/* key is borrowed: it must live as long as the index. */
static void idx_put(keyidx *ix, char *key, size_t pos)
{
    if ((ix->n + 1) * 2 > ix->cap)
        idx_grow(ix);
    size_t j = str_hash(key) & (ix->cap - 1);
    while (ix->keys[j] && strcmp(ix->keys[j], key) != 0)
        j = (j + 1) & (ix->cap - 1);
    if (!ix->keys[j])
        ix->n++;
    ix->keys[j] = key;
    ix->pos[j] = pos;
}

static bool idx_get(const keyidx *ix, const char *key, size_t *pos)
{
    if (!ix->cap)
        return false;
    size_t j = str_hash(key) & (ix->cap - 1);
    while (ix->keys[j]) {
        if (!strcmp(ix->keys[j], key)) {
            *pos = ix->pos[j];
            return true;
        }
        j = (j + 1) & (ix->cap - 1);
    }
    return false;
}

static void idx_free(keyidx *ix)
{
    free(ix->keys);
    free(ix->pos);
    memset(ix, 0, sizeof(*ix));
}

/* The allocation size for n drop-ins: a power of two, at least 4. */
static size_t dropin_cap(size_t n)
{
    size_t c = 4;
    while (c < n)
        c *= 2;
    return c;
}

/* Merge drop-in s into d: contents when s sets them. */
static void dropin_set(mcg_dropin *d, const mcg_dropin *s)
{
    if (s->contents) {
        free(d->contents);
        d->contents = mcg_strdup(s->contents);
    }
}

static void unit_merge(mcg_unit *d, const mcg_unit *s)
{
    if (s->enabled)
        d->enabled = s->enabled;
    if (s->mask)
        d->mask = s->mask;
    if (s->contents) {
        free(d->contents);
        d->contents = mcg_strdup(s->contents);
    }
    if (!s->ndropins)
        return;
    /* Sized to a power of two: realloc to the size a block already has
     * stays in place, so a unit that gains one drop-in per MC still costs
     * O(n) copies in all. */
    size_t need = d->ndropins + s->ndropins;
    d->dropins = mcg_realloc(d->dropins, dropin_cap(need) * sizeof(*d->dropins));
    keyidx ix = {0};
    bool indexed = d->ndropins * s->ndropins > 64;
    if (indexed)
        for (size_t j = 0; j < d->ndropins; j++)
            idx_put(&ix, d->dropins[j].name, j);
    for (size_t i = 0; i < s->ndropins; i++) {
        const mcg_dropin *sd = &s->dropins[i];
        size_t j = d->ndropins;
        if (indexed) {
            if (!idx_get(&ix, sd->name, &j))
                j = d->ndropins;
        } else {
            for (j = 0; j < d->ndropins && strcmp(d->dropins[j].name, sd->name) != 0; j++)
                ;
        }
        if (j == d->ndropins) {
            d->dropins[j] = (mcg_dropin){mcg_strdup(sd->name), NULL, sd->loc};
            d->ndropins++;
            if (indexed)
                idx_put(&ix, d->dropins[j].name, j);
        }
        dropin_set(&d->dropins[j], sd);
    }
    idx_free(&ix);
}

/* The key naming an entry of an unreconcilable section. */
static const char *extra_idkey(const char *section)
{
    return !strcmp(section, "disks") || !strcmp(section, "filesystems") ? "device" : "name";
}

/*
 * Merge the unreconcilable sections src into d->extra: entries with equal
 * keys merge field by field (the later's top-level fields win), new ones
 * are appended; Ignition's kernelArguments lists are united.
 */
static void extra_merge(mcg_ignition *d, const json_t *src)
{
    if (!d->extra)
        d->extra = json_object();
    const char *sec;
    json_t *list;
    json_object_foreach((json_t *)src, sec, list) {
        json_t *have = json_object_get(d->extra, sec);
        if (!strcmp(sec, "kernelArguments")) {
            json_t *mine = have ? have : json_object();
            const char *k;
            json_t *vals;
            json_object_foreach(list, k, vals) {
                json_t *dst = json_object_get(mine, k);
                if (!dst)
                    json_object_set_new(mine, k, dst = json_array());
                size_t i;
                json_t *v;
                json_array_foreach(vals, i, v) {
                    bool dup = false;
                    for (size_t j = 0; j < json_array_size(dst) && !dup; j++)
                        dup = json_equal(json_array_get(dst, j), v);
                    if (!dup)
                        json_array_append(dst, v);
                }
            }
            if (!have)
                json_object_set_new(d->extra, sec, mine);
            continue;
        }
        if (!have)
            json_object_set_new(d->extra, sec, have = json_array());
        const char *idk = extra_idkey(sec);
        /* keys are strings (the model checked them): index them, so n MCs of
         * m entries merge in O(n m), not O(n m^2) */
        keyidx ix = {0};
        size_t i, pos;
        json_t *e;
        json_array_foreach(have, i, e) {
            idx_put(&ix, (char *)json_string_value(json_object_get(e, idk)), i);
        }
        json_array_foreach(list, i, e) {
            const char *id = json_string_value(json_object_get(e, idk));
            if (id && idx_get(&ix, id, &pos)) {
                /* field by field; the key itself stays (the index points at it) */
                json_t *dst = json_array_get(have, pos), *v;
                const char *k;
                json_object_foreach(e, k, v) {
                    if (strcmp(k, idk) != 0)
                        json_object_set(dst, k, v);
                }
                continue;
            }
            json_array_append_new(have, json_deep_copy(e));
            json_t *added = json_array_get(have, json_array_size(have) - 1);
            if (id)
                idx_put(&ix, (char *)json_string_value(json_object_get(added, idk)),
                        json_array_size(have) - 1);
        }
        idx_free(&ix);
    }
}

typedef struct merger {
    mcg_ignition *dst;
    keyidx paths, units, keys;
} merger;

static void merger_rebuild(merger *mg)
{
    idx_free(&mg->paths);
    idx_free(&mg->units);
    idx_free(&mg->keys);
    for (size_t i = 0; i < mg->dst->nstorage; i++)
        idx_put(&mg->paths, mg->dst->storage[i].path, i);
    for (size_t i = 0; i < mg->dst->nunits; i++)
        idx_put(&mg->units, mg->dst->units[i].name, i);
    for (size_t i = 0; i < mg->dst->ssh_keys.n; i++)
        idx_put(&mg->keys, mg->dst->ssh_keys.v[i], i);
}

static void merger_add(merger *mg, const mcg_ignition *src)
{
    mcg_ignition *d = mg->dst;
    size_t pos;
    for (size_t i = 0; i < src->nstorage; i++) {
        const mcg_storage *s = &src->storage[i];
        if (idx_get(&mg->paths, s->path, &pos)) {
            storage_merge(&d->storage[pos], s);
            continue;
        }
        d->storage = mcg_realloc(d->storage, (d->nstorage + 1) * sizeof(*d->storage));
        storage_copy(&d->storage[d->nstorage], s);
        idx_put(&mg->paths, d->storage[d->nstorage].path, d->nstorage);
        d->nstorage++;
    }
    for (size_t i = 0; i < src->nunits; i++) {
        const mcg_unit *s = &src->units[i];
        if (!idx_get(&mg->units, s->name, &pos)) {
            d->units = mcg_realloc(d->units, (d->nunits + 1) * sizeof(*d->units));
            pos = d->nunits++;
            memset(&d->units[pos], 0, sizeof(d->units[pos]));
            d->units[pos].name = mcg_strdup(s->name);
            idx_put(&mg->units, d->units[pos].name, pos);
        }
        d->units[pos].loc = s->loc;
        unit_merge(&d->units[pos], s);
    }
    for (size_t i = 0; i < src->ssh_keys.n; i++) {
        if (idx_get(&mg->keys, src->ssh_keys.v[i], &pos))
            continue;
        mcg_strv_push(&d->ssh_keys, src->ssh_keys.v[i]);
        idx_put(&mg->keys, d->ssh_keys.v[d->ssh_keys.n - 1], d->ssh_keys.n - 1);
    }
    if (src->password_hash) {
        free(d->password_hash);
        d->password_hash = mcg_strdup(src->password_hash);
    }
    if (src->extra)
        extra_merge(d, src->extra);
    /* the MachineConfig fields beside the config (MergeMachineConfigs) */
    for (size_t i = 0; i < src->os.kargs.n; i++) /* concatenated: repeats kept, as MCO */
        mcg_strv_push(&d->os.kargs, src->os.kargs.v[i]);
    for (size_t i = 0; i < src->os.extensions.n; i++)
        mcg_strv_push(&d->os.extensions, src->os.extensions.v[i]);
    d->os.fips = d->os.fips || src->os.fips;
    const char *kt = src->os.kernel_type;
    if (kt && (!d->os.kernel_type || strcmp(kt, "default") != 0)) { /* the last non-default */
        free(d->os.kernel_type);
        d->os.kernel_type = mcg_strdup(kt);
    }
    if (src->os.os_image_url) {
        free(d->os.os_image_url);
        d->os.os_image_url = mcg_strdup(src->os.os_image_url);
    }
    if (src->os.ext_image) {
        free(d->os.ext_image);
        d->os.ext_image = mcg_strdup(src->os.ext_image);
    }
}

static void merger_free(merger *mg)
{
    idx_free(&mg->paths);
    idx_free(&mg->units);
    idx_free(&mg->keys);
}

void mcg_ignition_merge(mcg_ignition *dst, const mcg_ignition *src)
{
    merger mg = {.dst = dst};
    merger_rebuild(&mg);
    merger_add(&mg, src);
    merger_free(&mg);
}

/* ------------------------------------------------------------ selection */

static bool mc_selected(const mcg_pool *p, const mcg_machineconfig *mc)
{
    return !mcg_selector_is_empty(&p->mc_selector) &&
           mcg_selector_matches(&p->mc_selector, &mc->labels);
}

/*
 * Indices into m->mcs (sorted by name, mcg_model_finish) of the MCs pool
 * merges, in merge order: for a custom pool worker's first, then its own
 * that worker did not already select. Linear in the number of MCs. Returns
 * the count; *out is owned by the caller (free).
 */
static size_t select_indices(size_t **out, const mcg_model *m, const mcg_pool *pool)
{
    bool custom = strcmp(pool->name, "master") != 0 && strcmp(pool->name, "worker") != 0;
    const mcg_pool *worker = custom ? mcg_model_pool(m, "worker") : NULL;
    size_t *idx = mcg_calloc(m->nmcs ? m->nmcs : 1, sizeof(*idx));
    bool *taken = mcg_calloc(m->nmcs ? m->nmcs : 1, sizeof(*taken));
    size_t n = 0;
    if (worker)
        for (size_t i = 0; i < m->nmcs; i++)
            if (mc_selected(worker, &m->mcs[i])) {
                idx[n++] = i;
                taken[i] = true;
            }
    for (size_t i = 0; i < m->nmcs; i++)
        if (!taken[i] && mc_selected(pool, &m->mcs[i]))
            idx[n++] = i;
    free(taken);
    *out = idx;
    return n;
}

void mcg_render_select(mcg_strv *out, const mcg_model *m, const mcg_pool *pool)
{
    size_t *idx = NULL;
    size_t n = select_indices(&idx, m, pool);
    for (size_t i = 0; i < n; i++)
        mcg_strv_push(out, m->mcs[idx[i]].name);
    free(idx);
}

/* ------------------------------------------------------------ output */

static int storage_cmp(const void *a, const void *b)
{
    return strcmp(((const mcg_storage *)a)->path, ((const mcg_storage *)b)->path);
}

static int unit_cmp(const void *a, const void *b)
{
    return strcmp(((const mcg_unit *)a)->name, ((const mcg_unit *)b)->name);
}

static int dropin_cmp(const void *a, const void *b)
{
    return strcmp(((const mcg_dropin *)a)->name, ((const mcg_dropin *)b)->name);
}

/* An unreconcilable section of ign, NULL when absent or empty. */
static json_t *extra_get(const mcg_ignition *ign, const char *key)
{
    json_t *v = ign->extra ? json_object_get(ign->extra, key) : NULL;
    return v && (json_is_array(v) ? json_array_size(v) : json_object_size(v)) ? v : NULL;
}

/* Whether the spec names user core (SSH keys or a password hash). */
static bool has_core(const mcg_ignition *ign)
{
    return ign->ssh_keys.n || ign->password_hash;
}

typedef struct {
    const char *key;
    json_t *v;
} keyed;

/* By key, bytewise. */
static int keyed_cmp(const void *a, const void *b)
{
    return strcmp(((const keyed *)a)->key, ((const keyed *)b)->key);
}

/* Sort a list of mappings by their string field key (unique in a merged list). */
static void json_array_sort_by(json_t *arr, const char *key)
{
    size_t n = json_array_size(arr);
    if (n < 2)
        return;
    keyed *v = mcg_calloc(n, sizeof(*v));
    for (size_t i = 0; i < n; i++) {
        v[i].v = json_incref(json_array_get(arr, i));
        const char *k = json_string_value(json_object_get(v[i].v, key));
        v[i].key = k ? k : "";
    }
    qsort(v, n, sizeof(*v), keyed_cmp);
    json_array_clear(arr);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, v[i].v); /* the key strings live in v[i].v */
    free(v);
}

/* Fill Ignition's defaults and sort keyed lists: the canonical form. */
static void normalise(mcg_ignition *ign)
{
    free(ign->version);
    ign->version = mcg_strdup("3.4.0");
    for (size_t i = 0; i < ign->nstorage; i++) {
        mcg_storage *s = &ign->storage[i];
        if (!s->overwrite)
            s->overwrite = MCG_TRUE;
        if (s->kind == MCG_NODE_FILE && !s->has_mode)
            s->has_mode = true, s->mode = 0644;
        if (s->kind == MCG_NODE_DIR && !s->has_mode)
            s->has_mode = true, s->mode = 0755;
        if (s->kind == MCG_NODE_LINK && !s->hard)
            s->hard = MCG_FALSE;
        if (s->kind == MCG_NODE_FILE && !s->data) {
            s->data = mcg_calloc(1, 1);
            s->data_len = 0;
        }
    }
    if (ign->nstorage > 1)
        qsort(ign->storage, ign->nstorage, sizeof(*ign->storage), storage_cmp);
    if (ign->nunits > 1)
        qsort(ign->units, ign->nunits, sizeof(*ign->units), unit_cmp);
    for (size_t i = 0; i < ign->nunits; i++)
        if (ign->units[i].ndropins > 1)
            qsort(ign->units[i].dropins, ign->units[i].ndropins, sizeof(mcg_dropin), dropin_cmp);
    const char *sec;
    json_t *list;
    json_object_foreach(ign->extra, sec, list) {
        if (json_is_array(list))
            json_array_sort_by(list, extra_idkey(sec));
    }
}

/*
 * The canonical spec ({"config": <Ignition 3.4.0>, the fields beside it}),
 * written directly: the document mcg_json_canonical() would print for it
 * (keys sorted bytewise, 2-space indent, jansson's string escapes, raw
 * UTF-8, trailing newline), without building and sorting a jansson tree
 * first, which costs five times as long (docs/PERFORMANCE.md). Every object
 * below has its keys emitted in sorted order by construction and none is
 * empty. test_render.c checks that jansson reads each spec back and prints
 * the same bytes.
 */
static void w_indent(mcg_buf *b, int depth)
{
    static const char spaces[] = "                                ";
    mcg_buf_putc(b, '\n');
    for (int n = 2 * depth; n > 0; n -= 32)
        mcg_buf_put(b, spaces, n < 32 ? (size_t)n : 32);
}

/* A JSON string as jansson escapes it (no JSON_ESCAPE_SLASH/ENSURE_ASCII). */
static void w_str(mcg_buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    mcg_buf_putc(b, '"');
    const char *run = s;
    for (const char *p = s;; p++) {
        unsigned char c = (unsigned char)*p;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        mcg_buf_put(b, run, (size_t)(p - run));
        if (!c)
            break;
        static const char from[] = "\"\\\b\f\n\r\t", to[] = "\"\\bfnrt";
        const char *hit = strchr(from, c);
        char e[6] = {'\\', hit ? to[hit - from] : 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        size_t n = hit ? 2 : 6;
        mcg_buf_put(b, e, n);
        run = p + 1;
    }
    mcg_buf_putc(b, '"');
}

/* Start the next member "key": of an object whose members sit at depth. */
static void w_key(mcg_buf *b, int depth, int *count, const char *key)
{
    if ((*count)++)
        mcg_buf_putc(b, ',');
    w_indent(b, depth);
    w_str(b, key);
    mcg_buf_put(b, ": ", 2);
}

/* Start the next element of an array whose elements sit at depth. */
static void w_elem(mcg_buf *b, int depth, int *count)
{
    if ((*count)++)
        mcg_buf_putc(b, ',');
    w_indent(b, depth);
}

static void w_close(mcg_buf *b, int depth, char c)
{
    w_indent(b, depth);
    mcg_buf_putc(b, c);
}

static void w_bool(mcg_buf *b, mcg_tri t)
{
    mcg_buf_puts(b, t == MCG_TRUE ? "true" : "false");
}

static void w_owner(mcg_buf *b, int depth, const mcg_owner *o)
{
    int n = 0;
    mcg_buf_putc(b, '{');
    if (o->has_id) {
        w_key(b, depth + 1, &n, "id");
        mcg_buf_printf(b, "%" JSON_INTEGER_FORMAT, (json_int_t)o->id);
    } else {
        w_key(b, depth + 1, &n, "name");
        w_str(b, o->name);
    }
    w_close(b, depth, '}');
}

/* One file, directory or link; keys in sorted order: contents group hard
 * mode overwrite path target user. */
static void w_storage(mcg_buf *b, int depth, const mcg_storage *s)
{
    int n = 0, d = depth + 1;
    mcg_buf_putc(b, '{');
    if (s->kind == MCG_NODE_FILE && s->source) {
        int m = 0;
        w_key(b, d, &n, "contents");
        mcg_buf_putc(b, '{');
        if (s->compression) {
            w_key(b, d + 1, &m, "compression");
            w_str(b, s->compression);
        }
        w_key(b, d + 1, &m, "source");
        w_str(b, s->source);
        w_close(b, d, '}');
    }
    if (s->group.name || s->group.has_id) {
        w_key(b, d, &n, "group");
        w_owner(b, d, &s->group);
    }
    if (s->kind == MCG_NODE_LINK && s->hard) {
        w_key(b, d, &n, "hard");
        w_bool(b, s->hard);
    }
    if (s->kind != MCG_NODE_LINK && s->has_mode) {
        w_key(b, d, &n, "mode");
        mcg_buf_printf(b, "%d", s->mode);
    }
    if (s->overwrite) {
        w_key(b, d, &n, "overwrite");
        w_bool(b, s->overwrite);
    }
    w_key(b, d, &n, "path");
    w_str(b, s->path);
    if (s->kind == MCG_NODE_LINK && s->target) {
        w_key(b, d, &n, "target");
        w_str(b, s->target);
    }
    if (s->user.name || s->user.has_id) {
        w_key(b, d, &n, "user");
        w_owner(b, d, &s->user);
    }
    w_close(b, depth, '}');
}

/* A unit; keys in sorted order: contents dropins enabled mask name. */
static void w_unit(mcg_buf *b, int depth, const mcg_unit *u)
{
    int n = 0, d = depth + 1;
    mcg_buf_putc(b, '{');
    if (u->contents) {
        w_key(b, d, &n, "contents");
        w_str(b, u->contents);
    }
    if (u->ndropins) {
        int k = 0;
        w_key(b, d, &n, "dropins");
        mcg_buf_putc(b, '[');
        for (size_t i = 0; i < u->ndropins; i++) {
            int m = 0;
            w_elem(b, d + 1, &k);
            mcg_buf_putc(b, '{');
            if (u->dropins[i].contents) {
                w_key(b, d + 2, &m, "contents");
                w_str(b, u->dropins[i].contents);
            }
            w_key(b, d + 2, &m, "name");
            w_str(b, u->dropins[i].name);
            w_close(b, d + 1, '}');
        }
        w_close(b, d, ']');
    }
    if (u->enabled) {
        w_key(b, d, &n, "enabled");
        w_bool(b, u->enabled);
    }
    if (u->mask) {
        w_key(b, d, &n, "mask");
        w_bool(b, u->mask);
    }
    w_key(b, d, &n, "name");
    w_str(b, u->name);
    w_close(b, depth, '}');
}

/*
 * A jansson value whose member sits at depth, printed as mcg_json_canonical
 * prints it (the same dump) with every line after the first indented to
 * that depth. Used for the unreconcilable sections, kept verbatim.
 */
static int w_raw_cb(const char *buf, size_t size, void *data)
{
    mcg_buf_put(data, buf, size);
    return 0;
}

static void w_raw(mcg_buf *b, int depth, const json_t *v)
{
    mcg_buf tmp = MCG_BUF_INIT;
    json_dump_callback(v, w_raw_cb, &tmp, JSON_SORT_KEYS | JSON_INDENT(2) | JSON_ENCODE_ANY);
    const char *p = tmp.ptr, *end = tmp.ptr + tmp.len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) {
            mcg_buf_put(b, p, (size_t)(end - p));
            break;
        }
        mcg_buf_put(b, p, (size_t)(nl - p));
        w_indent(b, depth);
        p = nl + 1;
    }
    mcg_buf_free(&tmp);
}

/* A list of strings whose member sits at depth. */
static void w_strv(mcg_buf *b, int depth, const mcg_strv *v)
{
    int k = 0;
    mcg_buf_putc(b, '[');
    for (size_t i = 0; i < v->n; i++) {
        w_elem(b, depth + 1, &k);
        w_str(b, v->v[i]);
    }
    w_close(b, depth, ']');
}

/* core's entry of passwd.users, as an element at depth 4. */
static void w_core(mcg_buf *b, const mcg_ignition *ign)
{
    int u = 0;
    mcg_buf_putc(b, '{');
    w_key(b, 5, &u, "name");
    w_str(b, "core");
    if (ign->password_hash) {
        w_key(b, 5, &u, "passwordHash");
        w_str(b, ign->password_hash);
    }
    if (ign->ssh_keys.n) {
        w_key(b, 5, &u, "sshAuthorizedKeys");
        w_strv(b, 5, &ign->ssh_keys);
    }
    w_close(b, 4, '}');
}

/* config.passwd, a member at depth 2 (cfg: the members of config so far). */
static void w_passwd(mcg_buf *b, const mcg_ignition *ign, int *cfg)
{
    int n = 0;
    json_t *ex_users = extra_get(ign, "users"), *ex_groups = extra_get(ign, "groups");
    if (!has_core(ign) && !ex_users && !ex_groups)
        return;
    w_key(b, 2, cfg, "passwd");
    mcg_buf_putc(b, '{');
    if (ex_groups) {
        w_key(b, 3, &n, "groups");
        w_raw(b, 3, ex_groups);
    }
    if (has_core(ign) || ex_users) {
        int users = 0;
        bool core_done = !has_core(ign);
        w_key(b, 3, &n, "users");
        mcg_buf_putc(b, '[');
        /* sorted by name: core at its place among the others (sorted) */
        for (size_t i = 0; i <= json_array_size(ex_users); i++) {
            json_t *u = json_array_get(ex_users, i);
            const char *un = u ? json_string_value(json_object_get(u, "name")) : NULL;
            if (!core_done && (!u || strcmp(un ? un : "", "core") > 0)) {
                w_elem(b, 4, &users);
                w_core(b, ign);
                core_done = true;
            }
            if (u) {
                w_elem(b, 4, &users);
                w_raw(b, 4, u);
            }
        }
        w_close(b, 3, ']');
    }
    w_close(b, 2, '}');
}

/* config.storage, a member at depth 2. */
static void w_storage_section(mcg_buf *b, const mcg_ignition *ign, int *cfg)
{
    static const char *const storage_extra[] = {"disks", "filesystems", "luks", "raid", NULL};
    bool storage_ex = false;
    for (const char *const *k = storage_extra; *k; k++)
        storage_ex = storage_ex || extra_get(ign, *k);
    if (!ign->nstorage && !storage_ex)
        return;
    /* keys in sorted order, the kept sections among the managed lists */
    static const struct {
        const char *key;
        int kind; /* mcg_node_kind, or -1: a kept section */
    } lists[] = {{"directories", MCG_NODE_DIR},
                 {"disks", -1},
                 {"files", MCG_NODE_FILE},
                 {"filesystems", -1},
                 {"links", MCG_NODE_LINK},
                 {"luks", -1},
                 {"raid", -1}};
    int n = 0;
    w_key(b, 2, cfg, "storage");
    mcg_buf_putc(b, '{');
    for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++) {
        if (lists[l].kind < 0) {
            json_t *v = extra_get(ign, lists[l].key);
            if (v) {
                w_key(b, 3, &n, lists[l].key);
                w_raw(b, 3, v);
            }
            continue;
        }
        int k = 0;
        for (size_t i = 0; i < ign->nstorage; i++) {
            if ((int)ign->storage[i].kind != lists[l].kind)
                continue;
            if (!k) {
                w_key(b, 3, &n, lists[l].key);
                mcg_buf_putc(b, '[');
            }
            w_elem(b, 4, &k);
            w_storage(b, 4, &ign->storage[i]);
        }
        if (k)
            w_close(b, 3, ']');
    }
    w_close(b, 2, '}');
}

/* config.systemd, a member at depth 2. */
static void w_systemd(mcg_buf *b, const mcg_ignition *ign, int *cfg)
{
    int k = 0, m = 0;
    if (!ign->nunits)
        return;
    w_key(b, 2, cfg, "systemd");
    mcg_buf_putc(b, '{');
    w_key(b, 3, &m, "units");
    mcg_buf_putc(b, '[');
    for (size_t i = 0; i < ign->nunits; i++) {
        w_elem(b, 4, &k);
        w_unit(b, 4, &ign->units[i]);
    }
    w_close(b, 3, ']');
    w_close(b, 2, '}');
}

/* config, the member at depth 1: ignition, kernelArguments, passwd, storage, systemd. */
static void w_config(mcg_buf *b, const mcg_ignition *ign, int *top)
{
    int cfg = 0, n = 0;
    w_key(b, 1, top, "config");
    mcg_buf_putc(b, '{');
    w_key(b, 2, &cfg, "ignition");
    mcg_buf_putc(b, '{');
    w_key(b, 3, &n, "version");
    w_str(b, "3.4.0");
    w_close(b, 2, '}');
    if (extra_get(ign, "kernelArguments")) {
        w_key(b, 2, &cfg, "kernelArguments");
        w_raw(b, 2, extra_get(ign, "kernelArguments"));
    }
    w_passwd(b, ign, &cfg);
    w_storage_section(b, ign, &cfg);
    w_systemd(b, ign, &cfg);
    w_close(b, 1, '}');
}

/* The members after config: extensions, fips, kernelArguments, kernelType, mcgitHealth,
 * osImageURL. */
static void w_os_fields(mcg_buf *b, const mcg_ignition *ign, int *top)
{
    const mcg_osspec *os = &ign->os;
    if (os->extensions.n) {
        w_key(b, 1, top, "extensions");
        w_strv(b, 1, &os->extensions);
    }
    if (os->fips) {
        w_key(b, 1, top, "fips");
        mcg_buf_puts(b, "true");
    }
    if (os->kargs.n) {
        w_key(b, 1, top, "kernelArguments");
        w_strv(b, 1, &os->kargs);
    }
    if (os->kernel_type) {
        w_key(b, 1, top, "kernelType");
        w_str(b, os->kernel_type);
    }
    if (ign->health) {
        w_key(b, 1, top, "mcgitHealth");
        w_raw(b, 1, ign->health);
    }
    if (os->os_image_url) {
        w_key(b, 1, top, "osImageURL");
        w_str(b, os->os_image_url);
    }
}

static void spec_canonical(const mcg_ignition *ign, mcg_buf *b)
{
    int top = 0;
    const mcg_osspec *os = &ign->os;
    mcg_buf_putc(b, '{');
    if (os->ext_image) {
        w_key(b, 1, &top, "baseOSExtensionsContainerImage");
        w_str(b, os->ext_image);
    }
    w_config(b, ign, &top);
    w_os_fields(b, ign, &top);
    w_close(b, 0, '}');
    mcg_buf_putc(b, '\n');
}

int mcg_render_name(const mcg_ignition *ign, const char *pool, char **spec, size_t *spec_len,
                    char hash[MCG_HASH_HEX + 1], char **name, mcg_err *err)
{
    mcg_buf b = MCG_BUF_INIT;
    int rc = 0;
    spec_canonical(ign, &b);
    if (b.len > MCG_RENDER_MAX_BYTES) {
        rc = mcg_err_set(err, MCG_EINVAL, "rendered config is %zu bytes, over the 1.5 MiB limit",
                         b.len);
        goto out;
    }
    unsigned char dig[MCG_SHA256_LEN];
    char hex[2 * MCG_SHA256_LEN + 1];
    mcg_sha256(b.ptr, b.len, dig);
    mcg_hex(dig, sizeof(dig), hex);
    memcpy(hash, hex, MCG_HASH_HEX);
    hash[MCG_HASH_HEX] = '\0';
    *name = mcg_sprintf("rendered-%s-%s", pool, hash);
    *spec = mcg_buf_detach(&b, spec_len);
out:
    mcg_buf_free(&b);
    return rc;
}

bool mcg_render_name_matches(const char *name, const char *spec, size_t spec_len)
{
    size_t n = strlen(name);
    if (n < 9 + 1 + MCG_HASH_HEX || strncmp(name, "rendered-", 9) != 0 ||
        name[n - MCG_HASH_HEX - 1] != '-')
        return false;
    unsigned char dig[MCG_SHA256_LEN];
    char hex[2 * MCG_SHA256_LEN + 1];
    mcg_sha256(spec, spec_len, dig);
    mcg_hex(dig, sizeof(dig), hex);
    return mcg_memeq_ct(hex, name + n - MCG_HASH_HEX, MCG_HASH_HEX);
}

/*
 * What only the merged config can tell: an entry below a file or a link
 * cannot exist on disk, and a link needs a target (absolute and clean for a
 * hard link) once every MC has had its say, since MCs merge field by field.
 */
static int check_conflicts(const mcg_ignition *ign, mcg_err *err)
{
    keyidx leaves = {0};
    int rc = 0;
    for (size_t i = 0; i < ign->nstorage; i++) {
        const mcg_storage *s = &ign->storage[i];
        if (s->kind != MCG_NODE_LINK)
            continue;
        if (!s->target)
            return mcg_err_set(err, MCG_EINVAL, "%s:%d: link '%s' has no target", s->loc.file,
                               s->loc.line, s->path);
        if (s->hard == MCG_TRUE && !mcg_path_is_clean_abs(s->target))
            return mcg_err_set(err, MCG_EINVAL,
                               "%s:%d: hard link '%s' needs an absolute clean target (got '%s')",
                               s->loc.file, s->loc.line, s->path, s->target);
    }
    for (size_t i = 0; i < ign->nstorage; i++)
        if (ign->storage[i].kind != MCG_NODE_DIR)
            idx_put(&leaves, ign->storage[i].path, i);
    for (size_t i = 0; i < ign->nstorage && !rc; i++) {
        char *p = mcg_strdup(ign->storage[i].path);
        for (char *slash = strrchr(p, '/'); slash && slash != p; slash = strrchr(p, '/')) {
            *slash = '\0';
            size_t pos;
            if (idx_get(&leaves, p, &pos)) {
                const mcg_storage *s = &ign->storage[i];
                rc = mcg_err_set(err, MCG_EINVAL, "%s:%d: path '%s' lies below '%s', which is a %s",
                                 s->loc.file, s->loc.line, s->path, p,
                                 ign->storage[pos].kind == MCG_NODE_FILE ? "file" : "link");
                break;
            }
        }
        free(p);
    }
    idx_free(&leaves);
    return rc;
}

/* A pool's health checks as its rendered spec carries them (NULL: none, as MCO's pools). */
static json_t *health_json(const mcg_rollout_spec *r)
{
    if (!r->present || !r->nchecks)
        return NULL;
    json_t *checks = json_array();
    for (size_t i = 0; i < r->nchecks; i++) {
        const mcg_health_check *hc = &r->checks[i];
        json_t *c = json_pack("{s:s}", "name", hc->name);
        if (hc->unit)
            json_object_set_new(c, "unit", json_string(hc->unit));
        if (hc->command.n) {
            json_t *a = json_array();
            for (size_t k = 0; k < hc->command.n; k++)
                json_array_append_new(a, json_string(hc->command.v[k]));
            json_object_set_new(c, "command", a);
        }
        json_array_append_new(checks, c);
    }
    return json_pack("{s:o,s:s,s:I}", "checks", checks, "onFailure",
                     r->halt_only ? "Halt" : "Revert", "timeout", (json_int_t)r->health_timeout);
}

static int render_pool(mcg_rendered_pool *rp, const mcg_model *m, const mcg_pool *pool,
                       mcg_err *err)
{
    rp->pool = mcg_strdup(pool->name);
    size_t *idx = NULL;
    size_t n = select_indices(&idx, m, pool);
    if (n == 0) {
        free(idx);
        return mcg_err_set(err, MCG_EINVAL,
                           "%s:%d: pool '%s' selects no MachineConfig (check "
                           "machineConfigSelector)",
                           pool->loc.file, pool->loc.line, pool->name);
    }
    merger mg = {.dst = &rp->merged};
    for (size_t i = 0; i < n; i++) {
        mcg_strv_push(&rp->mcs, m->mcs[idx[i]].name);
        merger_add(&mg, &m->mcs[idx[i]].config);
    }
    merger_free(&mg);
    free(idx);
    if (rp->merged.os.kernel_type && mcg_strv_contains(&rp->merged.os.extensions, "kernel-devel"))
        return mcg_err_set(err, MCG_EINVAL,
                           "%s:%d: pool '%s': the kernel-devel extension is not supported with "
                           "kernelType %s",
                           pool->loc.file, pool->loc.line, pool->name, rp->merged.os.kernel_type);
    int rc = check_conflicts(&rp->merged, err);
    if (rc)
        return rc;
    normalise(&rp->merged);
    rp->merged.health = health_json(&pool->rollout);
    rc = mcg_render_name(&rp->merged, pool->name, &rp->spec, &rp->spec_len, rp->hash, &rp->name,
                         err);
    if (rc)
        return mcg_err_prefix(err, "%s:%d: pool '%s'", pool->loc.file, pool->loc.line, pool->name);
    return 0;
}

int mcg_render_model(mcg_render **out, const mcg_model *m, mcg_diags *diags)
{
    mcg_render *r = mcg_calloc(1, sizeof(*r));
    int rc = 0;
    r->pools = mcg_calloc(m->npools ? m->npools : 1, sizeof(*r->pools));
    for (size_t i = 0; i < m->npools; i++) {
        mcg_err err = {0};
        mcg_rendered_pool *rp = &r->pools[r->n++];
        if (render_pool(rp, m, &m->pools[i], &err) != 0) {
            rp->error = mcg_strdup(err.msg);
            mcg_diags_add(diags, "%s", err.msg);
            rc = MCG_EINVAL;
        }
    }
    *out = r;
    return rc;
}

void mcg_render_free(mcg_render *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        mcg_rendered_pool *rp = &r->pools[i];
        free(rp->pool);
        mcg_strv_free(&rp->mcs);
        mcg_ignition_free(&rp->merged);
        free(rp->spec);
        free(rp->name);
        free(rp->error);
    }
    free(r->pools);
    free(r);
}

const mcg_rendered_pool *mcg_render_pool(const mcg_render *r, const char *pool)
{
    for (size_t i = 0; i < r->n; i++)
        if (!strcmp(r->pools[i].pool, pool))
            return &r->pools[i];
    return NULL;
}
