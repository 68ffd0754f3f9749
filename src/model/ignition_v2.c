/*
 * ignition_v2.c — Ignition 2.0–2.2 configs translated to 3.x, as MCO does.
 *
 * MCO's ParseAndConvertConfig first removes what spec 3 forbids inside one
 * config (removeIgnDuplicateFilesUnitsUsers: of files with one path the last
 * wins; of units with one name the last wins and takes the earlier ones'
 * drop-ins it lacks; every user must be core, their SSH keys united), then
 * translates with ign-converter's v23tov30 (filesystem "root" = "/"):
 *   - files, directories, links: `filesystem` must be "root" (the only one
 *     mapped) and disappears; a file's unset `overwrite` becomes true, and
 *     `append: true` becomes 3.x's `append` list (which mcgit refuses);
 *     an empty `source` or `compression` means none;
 *   - units: `enable: true` (deprecated) or `enabled: true` -> enabled true,
 *     `enabled: false` -> false; `mask: false` -> unset;
 *   - networkd units cannot be translated (an error); `networkd: {}` is fine;
 *   - storage.filesystems: only one named "root" (dropped); disks and raid
 *     carry over; ignition.config.append -> merge.
 * The result is a new 3.x tree that shares the input's values, so every
 * problem found later is still reported at its line in the input.
 */
#include "model/model_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A new object/array that reports at src's line. */
static json_t *like(mcg_pctx *c, const json_t *src, json_t *fresh)
{
    if (c->lines && src)
        mcg_linemap_put(c->lines, fresh, mcg_pctx_line(c, src));
    return fresh;
}

/* A shallow copy of object o (values shared), at o's line. */
static json_t *copy_obj(mcg_pctx *c, const json_t *o)
{
    json_t *n = like(c, o, json_object());
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v) {
        json_object_set(n, k, v);
    }
    return n;
}

/* A node (file, directory, link): `filesystem: root` checked and dropped. */
static json_t *node(mcg_pctx *c, const json_t *e, const char *name)
{
    if (!json_is_object(e)) {
        mcg_pctx_err(c, e, "field '%s' must be a mapping", name);
        return NULL;
    }
    json_t *fs = json_object_get(e, "filesystem");
    if (!json_is_string(fs)) {
        mcg_pctx_err(c, fs ? fs : e, "field '%s.filesystem' is required in Ignition 2.x (\"root\")",
                     name);
        return NULL;
    }
    if (strcmp(json_string_value(fs), "root") != 0) {
        mcg_pctx_err(c, fs,
                     "field '%s.filesystem': filesystem '%s' cannot be translated to Ignition 3 "
                     "(only \"root\")",
                     name, json_string_value(fs));
        return NULL;
    }
    json_t *n = copy_obj(c, e);
    json_object_del(n, "filesystem");
    return n;
}

/* A 2.x file as 3.x: overwrite true when unset, empty source/compression unset,
 * append: true as the 3.x append list. NULL (reported) when untranslatable. */
static json_t *file_v2(mcg_pctx *c, const json_t *e, const char *name)
{
    json_t *n = node(c, e, name);
    if (!n)
        return NULL;
    json_t *ov = json_object_get(n, "overwrite");
    if (!ov || json_is_null(ov))
        json_object_set_new(n, "overwrite", json_true());
    json_t *ct = json_object_get(n, "contents");
    if (json_is_object(ct)) {
        json_t *nc = copy_obj(c, ct);
        json_t *src = json_object_get(nc, "source");
        if (json_is_string(src) && !json_string_length(src))
            json_object_del(nc, "source");
        json_t *comp = json_object_get(nc, "compression");
        if (json_is_string(comp) && !json_string_length(comp))
            json_object_del(nc, "compression");
        json_object_set_new(n, "contents", nc);
    }
    json_t *ap = json_object_get(n, "append");
    if (json_is_true(ap)) {
        /* 3.x: the contents become the append list (refused later by name) */
        json_t *list = like(c, ap, json_array());
        json_array_append(list, json_object_get(n, "contents") ? json_object_get(n, "contents")
                                                               : like(c, ap, json_object()));
        json_object_set_new(n, "append", list);
        json_object_del(n, "contents");
        json_object_set_new(n, "overwrite", json_false());
    } else if (ap) {
        json_object_del(n, "append");
    }
    return n;
}

/* A 2.x unit as 3.x: enable -> enabled, mask: false unset. NULL when not a mapping. */
static json_t *unit_v2(mcg_pctx *c, const json_t *e, const char *name)
{
    if (!json_is_object(e)) {
        mcg_pctx_err(c, e, "field '%s' must be a mapping", name);
        return NULL;
    }
    json_t *n = copy_obj(c, e);
    json_t *enable = json_object_get(n, "enable"), *enabled = json_object_get(n, "enabled");
    if (enable && !json_is_boolean(enable))
        mcg_pctx_err(c, enable, "field '%s.enable' must be true or false", name);
    if (json_is_true(enable) && !json_is_false(enabled))
        json_object_set_new(n, "enabled", json_true());
    json_object_del(n, "enable");
    if (json_is_false(json_object_get(n, "mask")))
        json_object_del(n, "mask");
    return n;
}

/* Translate the list cfg[key] entry by entry with fn. */
static json_t *list(mcg_pctx *c, const json_t *obj, const char *key, const char *prefix,
                    json_t *(*fn)(mcg_pctx *, const json_t *, const char *))
{
    char name[96];
    snprintf(name, sizeof(name), "%s.%s", prefix, key);
    json_t *arr = mcg_get_arr(c, obj, key, name);
    if (!arr)
        return NULL;
    json_t *out = like(c, arr, json_array());
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        char ename[128];
        snprintf(ename, sizeof(ename), "%s[%zu]", name, i);
        json_t *t = fn(c, e, ename);
        if (t)
            json_array_append_new(out, t);
    }
    return out;
}

/* e[k] when it is a string, else NULL. */
static const char *key_of(const json_t *e, const char *k)
{
    return json_string_value(json_object_get(e, k));
}

/* An entry's key and position, to group equal keys by sorting: O(n log n). */
typedef struct {
    const char *key;
    size_t pos;
} keypos;

/* By key, then by position: equal keys end up adjacent, in input order. */
static int keypos_cmp(const void *a, const void *b)
{
    const keypos *x = a, *y = b;
    int r = strcmp(x->key, y->key);
    return r ? r : (x->pos > y->pos) - (x->pos < y->pos);
}

/*
 * Sorted (key, position) pairs of the entries of arr that have a string key
 * k; *n is their count. Caller frees.
 */
static keypos *group(const json_t *arr, const char *k, size_t *n)
{
    keypos *kp = mcg_calloc(json_array_size(arr) + 1, sizeof(*kp));
    *n = 0;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const char *key = key_of(json_array_get(arr, i), k);
        if (key)
            kp[(*n)++] = (keypos){key, i};
    }
    if (*n > 1)
        qsort(kp, *n, sizeof(*kp), keypos_cmp);
    return kp;
}

/* The elements of arr (len of them; the reference is taken) not marked in drop; frees drop and kp.
 */
static json_t *kept(json_t *arr, size_t len, bool *drop, keypos *kp)
{
    json_t *out = json_array();
    for (size_t i = 0; i < len; i++)
        if (!drop[i])
            json_array_append(out, json_array_get(arr, i));
    free(drop);
    free(kp);
    json_decref(arr);
    return out;
}

/* removeIgnDuplicateFilesUnitsUsers for files: of one path the last is kept. */
static json_t *dedupe_last(json_t *arr, const char *k)
{
    size_t n, len = json_array_size(arr);
    keypos *kp = group(arr, k, &n);
    bool *drop = mcg_calloc(len + 1, sizeof(*drop));
    for (size_t i = 0; i + 1 < n; i++)
        if (!strcmp(kp[i].key, kp[i + 1].key))
            drop[kp[i].pos] = true;
    return kept(arr, len, drop, kp);
}

/* Units: the last of a name wins and takes the earlier ones' missing drop-ins. */
static json_t *dedupe_units(mcg_pctx *c, json_t *arr)
{
    size_t n, len = json_array_size(arr);
    keypos *kp = group(arr, "name", &n);
    bool *drop = mcg_calloc(len + 1, sizeof(*drop));
    for (size_t g = 0; g < n;) {
        size_t end = g + 1;
        while (end < n && !strcmp(kp[end].key, kp[g].key))
            end++;
        if (end - g > 1) {
            json_t *kept = json_array_get(arr, kp[end - 1].pos);
            json_t *merged = NULL;
            json_t *mine = json_object_get(kept, "dropins");
            /* later entries first, as MCO walks them from the end */
            for (size_t i = end - 1; i-- > g;) {
                json_t *u = json_array_get(arr, kp[i].pos);
                drop[kp[i].pos] = true;
                json_t *theirs = json_object_get(u, "dropins");
                size_t k;
                json_t *d;
                json_array_foreach(theirs, k, d) {
                    if (!merged) {
                        merged = like(c, theirs, json_array());
                        if (json_is_array(mine))
                            json_array_extend(merged, mine);
                    }
                    const char *dn = key_of(d, "name");
                    bool have = false;
                    for (size_t m = 0; dn && m < json_array_size(merged) && !have; m++)
                        have = key_of(json_array_get(merged, m), "name") &&
                               !strcmp(key_of(json_array_get(merged, m), "name"), dn);
                    if (!have)
                        json_array_append(merged, d);
                }
            }
            if (merged)
                json_object_set_new(kept, "dropins", merged);
        }
        g = end;
    }
    return kept(arr, len, drop, kp);
}

/* Users: every one must be core; their SSH keys united into the last. */
static json_t *merge_users(mcg_pctx *c, const json_t *users)
{
    size_t n = json_array_size(users);
    if (!n)
        return NULL;
    json_t *keys = like(c, users, json_array()), *last = NULL;
    size_t i;
    json_t *u;
    json_array_foreach(users, i, u) {
        const char *name = json_is_object(u) ? key_of(u, "name") : NULL;
        if (!name || strcmp(name, "core") != 0) {
            mcg_pctx_err(c, u,
                         "user '%s' in an Ignition 2.x config: only user 'core' is supported "
                         "(MCO refuses to translate others)",
                         name ? name : "?");
            continue;
        }
        last = u;
    }
    if (!last) {
        json_decref(keys);
        return NULL;
    }
    /* the last user's keys first, then the earlier ones', without repeats */
    for (size_t pass = 0; pass < n; pass++) {
        json_t *src = json_object_get(json_array_get(users, n - 1 - pass), "sshAuthorizedKeys");
        size_t j;
        json_t *k;
        json_array_foreach(src, j, k) {
            bool dup = false;
            for (size_t m = 0; m < json_array_size(keys) && !dup; m++)
                dup = json_equal(json_array_get(keys, m), k);
            if (!dup)
                json_array_append(keys, k);
        }
    }
    json_t *core = copy_obj(c, last);
    if (json_array_size(keys))
        json_object_set(core, "sshAuthorizedKeys", keys);
    json_object_del(core, "create"); /* deprecated in 2.x, gone in 3.x */
    json_decref(keys);
    json_t *out = like(c, users, json_array());
    json_array_append_new(out, core);
    return out;
}

/* See model_int.h: the 3.x tree for a 2.x config, or NULL with problems in c. */
json_t *mcg_ignition_translate_v2(mcg_pctx *c, const json_t *cfg)
{
    int before = c->errors;
    json_t *out = copy_obj(c, cfg);
    /* keys unknown to 2.x (and 3.x) are reported by the 3.x pass that follows */
    /* ignition: version 3.2.0; config.append -> merge */
    json_t *ig = copy_obj(c, json_object_get(cfg, "ignition"));
    json_object_set_new(ig, "version", json_string("3.2.0"));
    json_t *icfg = json_object_get(ig, "config");
    if (json_is_object(icfg) && json_object_get(icfg, "append")) {
        json_t *n = copy_obj(c, icfg);
        json_object_set(n, "merge", json_object_get(icfg, "append"));
        json_object_del(n, "append");
        json_object_set_new(ig, "config", n);
    }
    json_object_set_new(out, "ignition", ig);
    /* networkd */
    json_t *nd = mcg_get_obj(c, cfg, "networkd", "networkd");
    if (nd && !mcg_json_is_deep_empty(nd))
        mcg_pctx_err(c, nd,
                     "networkd units cannot be translated to Ignition 3: write them as files "
                     "under /etc/systemd/network");
    json_object_del(out, "networkd");
    /* storage */
    json_t *st = mcg_get_obj(c, cfg, "storage", "storage");
    if (st) {
        json_t *ns = copy_obj(c, st);
        json_t *f = list(c, st, "files", "storage", file_v2);
        if (f)
            json_object_set_new(ns, "files", dedupe_last(f, "path"));
        json_t *d = list(c, st, "directories", "storage", node);
        if (d)
            json_object_set_new(ns, "directories", d);
        json_t *l = list(c, st, "links", "storage", node);
        if (l)
            json_object_set_new(ns, "links", l);
        json_t *fss = mcg_get_arr(c, st, "filesystems", "storage.filesystems");
        size_t i;
        json_t *e;
        json_array_foreach(fss, i, e) {
            const char *n = json_is_object(e) ? key_of(e, "name") : NULL;
            if (!n || strcmp(n, "root") != 0)
                mcg_pctx_err(c, e,
                             "storage.filesystems[%zu]: filesystem '%s' cannot be translated to "
                             "Ignition 3 (only \"root\")",
                             i, n ? n : "?");
        }
        json_object_del(ns, "filesystems");
        json_object_set_new(out, "storage", ns);
    }
    /* systemd */
    json_t *sd = mcg_get_obj(c, cfg, "systemd", "systemd");
    if (sd) {
        json_t *nsd = copy_obj(c, sd);
        json_t *u = list(c, sd, "units", "systemd", unit_v2);
        if (u)
            json_object_set_new(nsd, "units", dedupe_units(c, u));
        json_object_set_new(out, "systemd", nsd);
    }
    /* passwd */
    json_t *pw = mcg_get_obj(c, cfg, "passwd", "passwd");
    if (pw) {
        json_t *npw = copy_obj(c, pw);
        json_t *users = mcg_get_arr(c, pw, "users", "passwd.users");
        json_t *nu = users ? merge_users(c, users) : NULL;
        if (nu)
            json_object_set_new(npw, "users", nu);
        else
            json_object_del(npw, "users");
        json_object_set_new(out, "passwd", npw);
    }
    if (c->errors != before) {
        json_decref(out);
        return NULL;
    }
    return out;
}
