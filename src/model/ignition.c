/*
 * ignition.c — an Ignition config, validated as Ignition and MCO validate it.
 *
 * The agent writes files, directories, links, systemd units (with drop-ins)
 * and the boot user core's SSH keys and password hash. The sections MCO calls
 * unreconcilable on an installed node — disks, RAID, filesystems, LUKS,
 * groups, users other than core, Ignition's own kernel arguments — are
 * accepted and kept verbatim (mcg_ignition.extra), so a render carries them
 * and an agent can report a change to them instead of half-applying it. What
 * neither can deliver on a running node is refused by name: remote sources
 * and appends, remote configs and CAs.
 *
 * Validation follows Ignition's split between errors and warnings: a key
 * Ignition does not know is a warning (mcg_pctx_warn), a malformed value an
 * error. Unit and drop-in contents are checked as systemd reads unit files.
 * Ignition 2.x configs are translated first (ignition_v2.c).
 */
#include "model/model_int.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILE_BYTES (1536u * 1024u) /* one file cannot exceed a whole render */

static void owner_free(mcg_owner *o)
{
    free(o->name);
    o->name = NULL;
}

static void storage_free(mcg_storage *s)
{
    free(s->path);
    free(s->source);
    free(s->compression);
    free(s->data);
    free(s->target);
    owner_free(&s->user);
    owner_free(&s->group);
}

static void unit_free(mcg_unit *u)
{
    free(u->name);
    free(u->contents);
    for (size_t i = 0; i < u->ndropins; i++) {
        free(u->dropins[i].name);
        free(u->dropins[i].contents);
    }
    free(u->dropins);
}

void mcg_ignition_free(mcg_ignition *ign)
{
    if (!ign)
        return;
    free(ign->version);
    for (size_t i = 0; i < ign->nstorage; i++)
        storage_free(&ign->storage[i]);
    free(ign->storage);
    for (size_t i = 0; i < ign->nunits; i++)
        unit_free(&ign->units[i]);
    free(ign->units);
    mcg_strv_free(&ign->ssh_keys);
    free(ign->password_hash);
    json_decref(ign->extra);
    json_decref(ign->health);
    mcg_osspec_free(&ign->os);
    memset(ign, 0, sizeof(*ign));
}

/* Refuse a field mcgit does not manage when it holds anything. */
static void refuse(mcg_pctx *c, const json_t *obj, const char *key, const char *name,
                   const char *why)
{
    json_t *v = json_object_get(obj, key);
    if (!mcg_json_is_deep_empty(v))
        mcg_pctx_err(c, v, "field '%s' is not supported: %s", name, why);
}

static void parse_owner(mcg_pctx *c, const json_t *obj, const char *key, const char *name,
                        mcg_owner *out)
{
    json_t *o = mcg_get_obj(c, obj, key, name);
    if (!o)
        return;
    static const char *const keys[] = {"id", "name", NULL};
    mcg_check_keys_warn(c, o, name, keys);
    mcg_get_str(c, o, "name", name, &out->name);
    mcg_get_int(c, o, "id", name, &out->has_id, &out->id);
    if (out->has_id && (out->id < 0 || out->id > 0x7fffffff))
        mcg_pctx_err(c, o, "field '%s.id' is out of range", name);
    if (out->has_id && out->name) {
        mcg_pctx_err(c, o, "field '%s' may give id or name, not both", name);
    }
    if (out->name && (!*out->name || strchr(out->name, ':') || strchr(out->name, '\n')))
        mcg_pctx_err(c, o, "field '%s.name' is not a valid user or group name", name);
}

/* sha256-<hex> / sha512-<hex> over the file's bytes (after decompression). */
static void check_verification(mcg_pctx *c, const json_t *ver, const char *name,
                               const unsigned char *data, size_t len)
{
    static const char *const keys[] = {"hash", NULL};
    mcg_check_keys_warn(c, ver, name, keys);
    json_t *h = json_object_get(ver, "hash");
    if (!h || json_is_null(h))
        return;
    if (!json_is_string(h)) {
        mcg_pctx_err(c, h, "field '%s.hash' must be a string", name);
        return;
    }
    const char *s = json_string_value(h);
    const EVP_MD *md = NULL;
    size_t hexlen = 0;
    if (!strncmp(s, "sha512-", 7)) {
        md = EVP_sha512();
        hexlen = 128;
    } else if (!strncmp(s, "sha256-", 7)) {
        md = EVP_sha256();
        hexlen = 64;
    } else {
        mcg_pctx_err(c, h, "field '%s.hash' must be sha256-<hex> or sha512-<hex>", name);
        return;
    }
    unsigned char dig[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;
    char hex[2 * EVP_MAX_MD_SIZE + 1];
    if (!EVP_Digest(data, len, dig, &dlen, md, NULL) || strlen(s + 7) != hexlen) {
        mcg_pctx_err(c, h, "field '%s.hash' is malformed", name);
        return;
    }
    mcg_hex(dig, dlen, hex);
    if (strcasecmp(hex, s + 7) != 0)
        mcg_pctx_err(c, h, "field '%s.hash' does not match the contents", name);
}

static void parse_contents(mcg_pctx *c, const json_t *file, const char *name, mcg_storage *st)
{
    json_t *ct = mcg_get_obj(c, file, "contents", name);
    if (!ct)
        return;
    char cname[300];
    mcg_bfmt(cname, sizeof(cname), "%s.contents", name);
    static const char *const keys[] = {"source", "compression", "verification", "httpHeaders",
                                       NULL};
    mcg_check_keys_warn(c, ct, cname, keys);
    refuse(c, ct, "httpHeaders", "contents.httpHeaders", "only data: URLs are supported");
    st->has_contents = true;
    int before = c->errors;
    mcg_get_str(c, ct, "source", cname, &st->source);
    const char *url = st->source;
    mcg_get_str(c, ct, "compression", cname, &st->compression);
    if (st->compression && !*st->compression) {
        free(st->compression);
        st->compression = NULL;
    }
    if (st->compression && strcmp(st->compression, "gzip") != 0)
        mcg_pctx_err(c, json_object_get(ct, "compression"),
                     "field '%s.compression' must be gzip (got '%s')", cname, st->compression);
    if (c->errors != before)
        return;
    mcg_buf raw = MCG_BUF_INIT;
    /* Problems with the bytes are reported at the source, or at contents
     * when there is none (compression of nothing). */
    const json_t *at = json_object_get(ct, "source") ? json_object_get(ct, "source") : ct;
    if (url) {
        mcg_err e = {0};
        if (strncmp(url, "data:", 5) != 0) {
            mcg_pctx_err(c, at,
                         "field '%s.source': remote sources are not supported, use a data: URL",
                         cname);
            goto out;
        }
        if (mcg_dataurl_decode(url, &raw, &e) != 0) {
            mcg_pctx_err(c, at, "field '%s.source': %s", cname, e.msg);
            goto out;
        }
    }
    if (st->compression) {
        mcg_buf plain = MCG_BUF_INIT;
        mcg_err e = {0};
        if (mcg_gunzip((unsigned char *)raw.ptr, raw.len, MAX_FILE_BYTES, &plain, &e) != 0) {
            mcg_pctx_err(c, at, "field '%s.source': %s", cname, e.msg);
            mcg_buf_free(&plain);
            goto out;
        }
        mcg_buf_free(&raw);
        raw = plain;
    }
    if (raw.len > MAX_FILE_BYTES) {
        mcg_pctx_err(c, ct, "field '%s' is larger than 1.5 MiB", cname);
        goto out;
    }
    /* Ignition: "if compression is specified, the hash describes the
     * decompressed file". */
    json_t *ver = mcg_get_obj(c, ct, "verification", cname);
    if (ver) {
        char vname[320];
        snprintf(vname, sizeof(vname), "%s.verification", cname);
        check_verification(c, ver, vname, (unsigned char *)raw.ptr, raw.len);
    }
    st->data = (unsigned char *)mcg_buf_detach(&raw, &st->data_len);
out:
    mcg_buf_free(&raw);
}

static void parse_common(mcg_pctx *c, const json_t *e, const char *name, mcg_storage *st)
{
    mcg_get_str(c, e, "path", name, &st->path);
    json_t *pv = json_object_get(e, "path");
    if (!st->path)
        mcg_pctx_err(c, e, "field '%s.path' is required", name);
    else if (!mcg_path_is_clean_abs(st->path))
        mcg_pctx_err(c, pv, "field '%s.path' must be an absolute clean path (got '%s')", name,
                     st->path);
    else if (!strcmp(st->path, MCG_FORCE_FILE)) /* MCO refuses it too */
        mcg_pctx_err(c, pv,
                     "field '%s.path': %s cannot be written by a MachineConfig (it makes the "
                     "node agent re-apply its config and reboot)",
                     name, st->path);
    mcg_get_bool(c, e, "overwrite", name, &st->overwrite);
    char sub[300];
    snprintf(sub, sizeof(sub), "%s.user", name);
    parse_owner(c, e, "user", sub, &st->user);
    snprintf(sub, sizeof(sub), "%s.group", name);
    parse_owner(c, e, "group", sub, &st->group);
    st->loc.line = mcg_pctx_line(c, e);
    st->loc.file = c->file;
}

static void parse_mode(mcg_pctx *c, const json_t *e, const char *name, mcg_storage *st)
{
    int64_t mode = 0;
    mcg_get_int(c, e, "mode", name, &st->has_mode, &mode);
    if (st->has_mode && mode < 0)
        mcg_pctx_err(c, json_object_get(e, "mode"), "field '%s.mode' must not be negative", name);
    else if (st->has_mode && mode > 0777)
        mcg_pctx_err(c, json_object_get(e, "mode"),
                     "field '%s.mode' must be at most 0777 (got 0%llo): setuid, setgid and "
                     "sticky bits are not supported",
                     name, (unsigned long long)mode);
    st->mode = (int)(mode & 0777);
}

/*
 * Grow an array of n elements that this file allocated (from NULL) to hold
 * n + 1. Its capacity is implied by n — the next power of two, at least 8 —
 * so appending n elements costs O(n) copies, not O(n^2).
 */
static void *grow(void *v, size_t n, size_t size)
{
    if (n != 0 && (n < 8 || (n & (n - 1)) != 0))
        return v; /* room left */
    return mcg_realloc(v, (n ? 2 * n : 8) * size);
}

static mcg_storage *storage_new(mcg_ignition *ign)
{
    ign->storage = grow(ign->storage, ign->nstorage, sizeof(*ign->storage));
    mcg_storage *st = &ign->storage[ign->nstorage++];
    memset(st, 0, sizeof(*st));
    return st;
}

/*
 * The paths (or unit names) of one config seen so far, with the line each
 * was first given on: an open-addressing hash table, so checking 10,000
 * entries for duplicates is linear, not quadratic. Keys are borrowed.
 */
typedef struct {
    const char **keys;
    int *lines;
    size_t cap, n;
} keyset;

static size_t key_hash(const char *s)
{
    return (size_t)mcg_keyed_hash(s, strlen(s)); /* keys come from the pusher's YAML */
}

/* Add key (given on line). False when it is there already: *first is its line. */
static bool keyset_add(keyset *ks, const char *key, int line, int *first)
{
    if (2 * (ks->n + 1) > ks->cap) {
        keyset old = *ks;
        ks->cap = old.cap ? 2 * old.cap : 64;
        ks->keys = mcg_calloc(ks->cap, sizeof(*ks->keys));
        ks->lines = mcg_calloc(ks->cap, sizeof(*ks->lines));
        ks->n = 0;
        for (size_t i = 0; i < old.cap; i++)
            if (old.keys[i]) {
                int unused;
                keyset_add(ks, old.keys[i], old.lines[i], &unused);
            }
        free(old.keys);
        free(old.lines);
    }
    size_t i = key_hash(key) & (ks->cap - 1);
    for (; ks->keys[i]; i = (i + 1) & (ks->cap - 1))
        if (!strcmp(ks->keys[i], key)) {
            *first = ks->lines[i];
            return false;
        }
    ks->keys[i] = key;
    ks->lines[i] = line;
    ks->n++;
    return true;
}

static void keyset_free(keyset *ks)
{
    free(ks->keys);
    free(ks->lines);
}

/*
 * Keep the list obj[key] as an unreconcilable section of ign: a list of
 * mappings, each naming itself by idkey (a string), unique in this config.
 */
static void keep_section(mcg_pctx *c, const json_t *obj, const char *key, const char *name,
                         const char *idkey, mcg_ignition *ign)
{
    json_t *arr = mcg_get_arr(c, obj, key, name);
    if (!arr || !json_array_size(arr))
        return;
    int before = c->errors;
    keyset seen = {0}; /* linear: 80,000 users cost no more than their bytes */
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        json_t *id = json_is_object(e) ? json_object_get(e, idkey) : NULL;
        if (!json_is_object(e)) {
            mcg_pctx_err(c, e, "field '%s[%zu]' must be a mapping", name, i);
        } else if (!json_is_string(id) || !json_string_length(id) ||
                   strlen(json_string_value(id)) != json_string_length(id)) {
            mcg_pctx_err(c, e, "field '%s[%zu].%s' is required", name, i, idkey);
        } else {
            int first;
            if (!keyset_add(&seen, json_string_value(id), mcg_pctx_line(c, e), &first))
                mcg_pctx_err(c, e, "%s '%s' is given twice in this config", name,
                             json_string_value(id));
        }
    }
    keyset_free(&seen);
    if (c->errors != before)
        return;
    if (!ign->extra)
        ign->extra = json_object();
    json_object_set_new(ign->extra, key, json_deep_copy(arr));
}

/* Entry e of kind k (0 files, 1 directories, 2 links), named ename, into ign. */
static void parse_entry(mcg_pctx *c, const json_t *e, int k, const char *ename, mcg_ignition *ign,
                        keyset *seen)
{
    if (!json_is_object(e)) {
        mcg_pctx_err(c, e, "field '%s' must be a mapping", ename);
        return;
    }
    mcg_storage *st = storage_new(ign);
    int before = c->errors;
    if (k == 0) {
        static const char *const fk[] = {"path",  "overwrite", "mode",   "user",
                                         "group", "contents",  "append", NULL};
        st->kind = MCG_NODE_FILE;
        mcg_check_keys_warn(c, e, ename, fk);
        refuse(c, e, "append", "append", "files are written whole");
        parse_common(c, e, ename, st);
        parse_mode(c, e, ename, st);
        parse_contents(c, e, ename, st);
    } else if (k == 1) {
        static const char *const dk[] = {"path", "overwrite", "mode", "user", "group", NULL};
        st->kind = MCG_NODE_DIR;
        mcg_check_keys_warn(c, e, ename, dk);
        parse_common(c, e, ename, st);
        parse_mode(c, e, ename, st);
    } else {
        static const char *const lk[] = {"path",   "overwrite", "user", "group",
                                         "target", "hard",      NULL};
        st->kind = MCG_NODE_LINK;
        mcg_check_keys_warn(c, e, ename, lk);
        parse_common(c, e, ename, st);
        mcg_get_str(c, e, "target", ename, &st->target);
        mcg_get_bool(c, e, "hard", ename, &st->hard);
        if (st->target && (!*st->target || strlen(st->target) > 4095))
            mcg_pctx_err(c, json_object_get(e, "target"), "field '%s.target' is invalid", ename);
        if (st->hard == MCG_TRUE && st->target && !mcg_path_is_clean_abs(st->target))
            mcg_pctx_err(c, json_object_get(e, "target"),
                         "field '%s.target' of a hard link must be an absolute clean path", ename);
    }
    if (c->errors != before) {
        storage_free(st);
        ign->nstorage--;
        return;
    }
    /* One key space for files, directories and links within a config. */
    int first;
    if (!keyset_add(seen, st->path, st->loc.line, &first))
        mcg_pctx_err(c, e, "path '%s' is given twice in this config (first on line %d)", st->path,
                     first);
}

static void parse_storage(mcg_pctx *c, const json_t *storage, const char *prefix, mcg_ignition *ign)
{
    char name[256];
    static const char *const keys[] = {"files", "directories", "links", "disks",
                                       "raid",  "filesystems", "luks",  NULL};
    snprintf(name, sizeof(name), "%s.storage", prefix);
    mcg_check_keys_warn(c, storage, name, keys);
    /* unreconcilable once a node is installed: kept, never applied */
    keep_section(c, storage, "disks", "storage.disks", "device", ign);
    keep_section(c, storage, "raid", "storage.raid", "name", ign);
    keep_section(c, storage, "filesystems", "storage.filesystems", "device", ign);
    keep_section(c, storage, "luks", "storage.luks", "name", ign);

    static const char *const kinds[] = {"files", "directories", "links"};
    keyset seen = {0};
    for (int k = 0; k < 3; k++) {
        snprintf(name, sizeof(name), "storage.%s", kinds[k]);
        json_t *arr = mcg_get_arr(c, storage, kinds[k], name);
        size_t i;
        json_t *e;
        json_array_foreach(arr, i, e) {
            char ename[300];
            snprintf(ename, sizeof(ename), "storage.%s[%zu]", kinds[k], i);
            parse_entry(c, e, k, ename, ign, &seen);
        }
    }
    keyset_free(&seen);
}

static bool valid_dropin_name(const char *s)
{
    size_t n = strlen(s);
    return n > 5 && n < 256 && !strchr(s, '/') && !strcmp(s + n - 5, ".conf") && s[0] != '.';
}

static bool is_blank(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r';
}

/*
 * The next logical line of unit text at *line: the following line(s)
 * joined at a trailing backslash, blanks trimmed (*l, *ln bytes). *lineno
 * counts the physical lines; returns the number of the first. *line moves
 * past it (NULL at the end of the text).
 */
static int unit_next_line(const char **line, const char **l, size_t *ln, int *lineno)
{
    const char *s = *line;
    const char *end = strchr(s, '\n');
    size_t n = end ? (size_t)(end - s) : strlen(s);
    int first = ++*lineno;
    const char *next = end ? end + 1 : NULL;
    /* a continuation joins the following line(s) into this one */
    while (n && s[n - 1] == '\\' && next && *next) {
        const char *e2 = strchr(next, '\n');
        n = (size_t)((e2 ? e2 : next + strlen(next)) - s);
        next = e2 ? e2 + 1 : NULL;
        (*lineno)++;
    }
    size_t a = 0;
    while (a < n && is_blank(s[a]))
        a++;
    while (n > a && is_blank(s[n - 1]))
        n--;
    *l = s + a;
    *ln = n - a;
    *line = next;
    return first;
}

/*
 * Check unit file text as systemd's parser (and go-systemd's, which
 * Ignition uses) reads it: lines joined at a trailing backslash; blank
 * lines and lines starting with '#' or ';' are comments; "[Section]" opens
 * a section and must close on the same line; every other line is
 * "Key=Value" inside a section. The first problem is reported at the
 * contents' line with the line inside the text. *has_install tells whether
 * an [Install] section was seen.
 */
static bool check_unit_text(mcg_pctx *c, const json_t *at, const char *what, const char *text,
                            bool *has_install)
{
    bool in_section = false;
    int lineno = 0;
    *has_install = false;
    for (const char *line = text; line && *line;) {
        const char *l;
        size_t ln;
        int first = unit_next_line(&line, &l, &ln, &lineno);
        if (!ln || l[0] == '#' || l[0] == ';')
            continue;
        if (l[0] == '[') {
            if (ln < 3 || l[ln - 1] != ']' || memchr(l + 1, ']', ln - 2) ||
                memchr(l + 1, '[', ln - 2)) {
                mcg_pctx_err(c, at, "%s line %d: invalid section header '%.*s'", what, first,
                             (int)(ln > 60 ? 60 : ln), l);
                return false;
            }
            in_section = true;
            if (ln == 9 && !memcmp(l, "[Install]", 9))
                *has_install = true;
            continue;
        }
        const char *eq = memchr(l, '=', ln);
        if (!eq) {
            mcg_pctx_err(c, at, "%s line %d: '%.*s' is not a Key=Value assignment", what, first,
                         (int)(ln > 60 ? 60 : ln), l);
            return false;
        }
        size_t kl = (size_t)(eq - l);
        while (kl && is_blank(l[kl - 1]))
            kl--;
        if (!kl) {
            mcg_pctx_err(c, at, "%s line %d: assignment without a key", what, first);
            return false;
        }
        if (!in_section) {
            mcg_pctx_err(c, at, "%s line %d: assignment outside of any [Section]", what, first);
            return false;
        }
    }
    return true;
}

/* A growable list with its capacity (drop-ins of one unit). */
static void dropins_push(mcg_unit *u, size_t *cap, mcg_dropin d)
{
    if (u->ndropins == *cap) {
        *cap = *cap ? 2 * *cap : 4;
        u->dropins = mcg_realloc(u->dropins, *cap * sizeof(*u->dropins));
    }
    u->dropins[u->ndropins++] = d;
}

/*
 * One drop-in of unit u (d: its mapping, dname: where it is), kept when it
 * is valid and not given twice (dseen: the names so far).
 */
static void parse_dropin(mcg_pctx *c, json_t *d, const char *dname, mcg_unit *u, size_t *cap,
                         keyset *dseen)
{
    if (!json_is_object(d)) {
        mcg_pctx_err(c, d, "field '%s' must be a mapping", dname);
        return;
    }
    static const char *const dk[] = {"name", "contents", NULL};
    mcg_check_keys_warn(c, d, dname, dk);
    mcg_dropin di = {0};
    di.loc.file = c->file;
    di.loc.line = mcg_pctx_line(c, d);
    mcg_get_str(c, d, "name", dname, &di.name);
    mcg_get_str(c, d, "contents", dname, &di.contents);
    bool ok = true, install;
    int first;
    if (!di.name) {
        mcg_pctx_err(c, d, "field '%s.name' is required", dname);
        ok = false;
    } else if (!valid_dropin_name(di.name)) {
        mcg_pctx_err(c, json_object_get(d, "name"), "'%s' is not a valid drop-in name (NAME.conf)",
                     di.name);
        ok = false;
    } else if (di.contents) {
        char what[360];
        snprintf(what, sizeof(what), "%s.contents", dname);
        ok = check_unit_text(c, json_object_get(d, "contents"), what, di.contents, &install);
    }
    if (ok && !keyset_add(dseen, di.name, di.loc.line, &first)) {
        mcg_pctx_err(c, d, "drop-in '%s' is given twice for unit '%s'", di.name,
                     u->name ? u->name : "?");
        ok = false;
    }
    if (!ok) {
        free(di.name);
        free(di.contents);
        return;
    }
    dropins_push(u, cap, di); /* di.name stays where dseen points */
}

/* The drop-ins of unit u (e: its mapping, name: where it is). */
static void parse_dropins(mcg_pctx *c, json_t *e, const char *name, mcg_unit *u)
{
    json_t *dr = mcg_get_arr(c, e, "dropins", name);
    keyset dseen = {0};
    size_t cap = 0;
    size_t j;
    json_t *d;
    json_array_foreach(dr, j, d) {
        char dname[340];
        snprintf(dname, sizeof(dname), "%s.dropins[%zu]", name, j);
        parse_dropin(c, d, dname, u, &cap, &dseen);
    }
    keyset_free(&dseen);
}

/* The fields of unit u but its drop-ins: name, enabled, mask, contents. */
static void parse_unit_fields(mcg_pctx *c, json_t *e, const char *name, mcg_unit *u)
{
    u->loc.file = c->file;
    u->loc.line = mcg_pctx_line(c, e);
    mcg_get_str(c, e, "name", name, &u->name);
    if (!u->name)
        mcg_pctx_err(c, e, "field '%s.name' is required", name);
    else if (!mcg_name_is_unit(u->name))
        mcg_pctx_err(c, json_object_get(e, "name"), "'%s' is not a valid systemd unit name",
                     u->name);
    mcg_get_bool(c, e, "enabled", name, &u->enabled);
    mcg_get_bool(c, e, "mask", name, &u->mask);
    mcg_get_str(c, e, "contents", name, &u->contents);
    if (u->contents) {
        char what[340];
        bool install;
        snprintf(what, sizeof(what), "%s.contents", name);
        if (check_unit_text(c, json_object_get(e, "contents"), what, u->contents, &install) &&
            !install && u->enabled == MCG_TRUE && *u->contents)
            mcg_pctx_warn(c, json_object_get(e, "contents"),
                          "unit '%s' is enabled but has no [Install] section",
                          u->name ? u->name : "?");
    }
}

static void parse_units(mcg_pctx *c, const json_t *systemd, mcg_ignition *ign)
{
    static const char *const keys[] = {"units", NULL};
    mcg_check_keys_warn(c, systemd, "systemd", keys);
    json_t *arr = mcg_get_arr(c, systemd, "units", "systemd.units");
    keyset seen = {0};
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        char name[300];
        snprintf(name, sizeof(name), "systemd.units[%zu]", i);
        if (!json_is_object(e)) {
            mcg_pctx_err(c, e, "field '%s' must be a mapping", name);
            continue;
        }
        static const char *const uk[] = {"name", "enabled", "mask", "contents", "dropins", NULL};
        int before = c->errors;
        mcg_check_keys_warn(c, e, name, uk);
        mcg_unit u = {0};
        parse_unit_fields(c, e, name, &u);
        parse_dropins(c, e, name, &u);
        int first;
        if (c->errors == before && !keyset_add(&seen, u.name, u.loc.line, &first))
            mcg_pctx_err(c, e, "unit '%s' is given twice in this config", u.name);
        if (c->errors != before) {
            unit_free(&u);
            continue;
        }
        ign->units = grow(ign->units, ign->nunits, sizeof(*ign->units));
        ign->units[ign->nunits++] = u; /* u.name stays where seen points */
    }
    keyset_free(&seen);
}

static void parse_passwd(mcg_pctx *c, const json_t *passwd, mcg_ignition *ign)
{
    static const char *const keys[] = {"users", "groups", NULL};
    mcg_check_keys_warn(c, passwd, "passwd", keys);
    keep_section(c, passwd, "groups", "passwd.groups", "name", ign);
    json_t *users = mcg_get_arr(c, passwd, "users", "passwd.users");
    json_t *others = json_array();
    size_t i;
    json_t *u;
    json_array_foreach(users, i, u) {
        char name[64];
        snprintf(name, sizeof(name), "passwd.users[%zu]", i);
        if (!json_is_object(u)) {
            mcg_pctx_err(c, u, "field '%s' must be a mapping", name);
            continue;
        }
        json_t *n = json_object_get(u, "name");
        if (!json_is_string(n) || !json_string_length(n) ||
            strlen(json_string_value(n)) != json_string_length(n)) {
            mcg_pctx_err(c, n ? n : u, "field '%s.name' is required", name);
            continue;
        }
        if (strcmp(json_string_value(n), "core") != 0) {
            /* another user: Ignition makes it at install; MCO calls a change to it
             * unreconcilable. Kept with the unreconcilable sections. */
            json_array_append(others, u);
            continue;
        }
        const char *key;
        json_t *v;
        json_object_foreach(u, key, v) {
            if (strcmp(key, "name") && strcmp(key, "sshAuthorizedKeys") &&
                strcmp(key, "passwordHash") && !mcg_json_is_empty(v))
                mcg_pctx_err(c, v,
                             "field 'passwd.users[%zu].%s' is not supported: of user 'core' "
                             "only sshAuthorizedKeys and passwordHash are managed",
                             i, key);
        }
        char *hash = NULL;
        if (mcg_get_str(c, u, "passwordHash", name, &hash) && hash) {
            if (strchr(hash, ':') || strchr(hash, '\n')) {
                mcg_pctx_err(c, json_object_get(u, "passwordHash"),
                             "field '%s.passwordHash' must not contain ':' or a newline", name);
                free(hash);
            } else {
                free(ign->password_hash);
                ign->password_hash = hash;
            }
        }
        json_t *keysarr = mcg_get_arr(c, u, "sshAuthorizedKeys", "sshAuthorizedKeys");
        size_t j;
        json_t *k;
        json_array_foreach(keysarr, j, k) {
            if (!json_is_string(k) || !json_string_length(k) ||
                strchr(json_string_value(k), '\n') ||
                strlen(json_string_value(k)) != json_string_length(k)) {
                mcg_pctx_err(c, k, "sshAuthorizedKeys[%zu] must be a one-line string", j);
                continue;
            }
            if (!mcg_strv_contains(&ign->ssh_keys, json_string_value(k)))
                mcg_strv_push(&ign->ssh_keys, json_string_value(k));
        }
    }
    if (json_array_size(others)) {
        json_t *holder = json_pack("{s:O}", "users", others);
        keep_section(c, holder, "users", "passwd.users", "name", ign);
        json_decref(holder);
    }
    json_decref(others);
}

/* Ignition's own kernelArguments (3.3+): kept as an unreconcilable section. */
static void parse_ign_kargs(mcg_pctx *c, const json_t *cfg, mcg_ignition *ign)
{
    json_t *ka = mcg_get_obj(c, cfg, "kernelArguments", "kernelArguments");
    if (!ka || mcg_json_is_deep_empty(ka))
        return;
    static const char *const keys[] = {"shouldExist", "shouldNotExist", NULL};
    mcg_check_keys_warn(c, ka, "kernelArguments", keys);
    int before = c->errors;
    for (const char *const *k = keys; *k; k++) {
        json_t *arr = mcg_get_arr(c, ka, *k, "kernelArguments");
        size_t i;
        json_t *v;
        json_array_foreach(arr, i, v) {
            if (!json_is_string(v))
                mcg_pctx_err(c, v, "kernelArguments.%s[%zu] must be a string", *k, i);
        }
    }
    if (c->errors != before)
        return;
    json_t *keep = json_object();
    for (const char *const *k = keys; *k; k++) {
        json_t *arr = json_object_get(ka, *k);
        if (json_is_array(arr) && json_array_size(arr))
            json_object_set_new(keep, *k, json_deep_copy(arr));
    }
    if (!ign->extra)
        ign->extra = json_object();
    json_object_set_new(ign->extra, "kernelArguments", keep);
}

/* The Ignition 3.x versions read as they are. */
static bool version_ok(const char *v)
{
    static const char *const ok[] = {"3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0", "3.5.0", NULL};
    for (const char *const *p = ok; *p; p++)
        if (!strcmp(*p, v))
            return true;
    return false;
}

/* The Ignition 2.x versions MCO translates (its v2_2 parser reads 2.0 to 2.2). */
static bool version_v2(const char *v)
{
    return !strcmp(v, "2.0.0") || !strcmp(v, "2.1.0") || !strcmp(v, "2.2.0");
}

int mcg_ignition_from_json(mcg_pctx *c, const json_t *cfg, const char *prefix, mcg_ignition *out)
{
    int before = c->errors;
    json_t *translated = NULL;
    memset(out, 0, sizeof(*out));
    if (!json_is_object(cfg)) {
        mcg_pctx_err(c, cfg, "field '%s' must be a mapping", prefix);
        return MCG_EINVAL;
    }
    json_t *ig = json_object_get(cfg, "ignition");
    json_t *ver = json_is_object(ig) ? json_object_get(ig, "version") : NULL;
    if (!json_is_string(ver)) {
        /* MCO: a completely empty config is valid (only the fields beside it count) */
        if (!json_object_size(cfg))
            return 0;
        mcg_pctx_err(c, ig ? ig : cfg, "field '%s.ignition.version' is required", prefix);
        return MCG_EINVAL;
    }
    const char *vs = json_string_value(ver);
    if (version_v2(vs)) {
        if (!(translated = mcg_ignition_translate_v2(c, cfg)))
            return MCG_EINVAL;
        cfg = translated;
        ig = json_object_get(cfg, "ignition");
        vs = "3.2.0"; /* MCO translates 2.2 to 3.2 first */
    } else if (!version_ok(vs)) {
        mcg_pctx_err(c, ver,
                     "Ignition version '%s' is not supported (2.0.0 to 2.2.0, 3.0.0 to 3.5.0)", vs);
        return MCG_EINVAL;
    }
    out->version = mcg_strdup(vs);
    static const char *const top[] = {"ignition", "passwd",          "storage",
                                      "systemd",  "kernelArguments", NULL};
    mcg_check_keys_warn(c, cfg, prefix, top);
    static const char *const igk[] = {"version", "config", "timeouts", "security", "proxy", NULL};
    mcg_check_keys_warn(c, ig, "ignition", igk);
    refuse(c, ig, "config", "ignition.config", "remote configs are not supported");
    refuse(c, ig, "security", "ignition.security", "remote sources are not supported");
    refuse(c, ig, "proxy", "ignition.proxy", "remote sources are not supported");
    parse_ign_kargs(c, cfg, out);
    json_t *p = mcg_get_obj(c, cfg, "passwd", "passwd");
    if (p)
        parse_passwd(c, p, out);
    json_t *s = mcg_get_obj(c, cfg, "storage", "storage");
    if (s)
        parse_storage(c, s, prefix, out);
    json_t *sd = mcg_get_obj(c, cfg, "systemd", "systemd");
    if (sd)
        parse_units(c, sd, out);
    json_decref(translated);
    if (c->errors != before) {
        mcg_ignition_free(out);
        return MCG_EINVAL;
    }
    return 0;
}

int mcg_ignition_parse_json(mcg_ignition *out, const char *what, const char *data, size_t len,
                            mcg_err *err)
{
    memset(out, 0, sizeof(*out));
    json_t *root = NULL;
    int rc = mcg_json_parse(&root, what, data, len, err);
    if (rc)
        return rc;
    mcg_diags d = {0}, warns = {0};
    /* warnings were shown when the config was rendered (the name's hash
     * ties these bytes to that render); here they change nothing */
    mcg_pctx c = {.file = what, .diags = &d, .warns = &warns, .near_miss_warns = true};
    json_t *cfg = json_is_object(root) ? json_object_get(root, "config") : NULL;
    static const char *const keys[] = {"config",
                                       "kernelArguments",
                                       "extensions",
                                       "fips",
                                       "kernelType",
                                       "osImageURL",
                                       "baseOSExtensionsContainerImage",
                                       "mcgitHealth",
                                       NULL};
    if (!cfg) {
        rc = mcg_err_set(err, MCG_EINVAL, "%s: no 'config' in rendered spec", what);
        goto out;
    }
    mcg_check_keys(&c, root, "", keys);
    if (c.errors || mcg_ignition_from_json(&c, cfg, "config", out) != 0) {
        rc = mcg_err_set(err, MCG_EINVAL, "%s", d.count ? d.msgs[0] : what);
        goto out;
    }
    mcg_osspec_from_json(&c, root, &out->os);
    json_t *health = json_object_get(root, "mcgitHealth");
    if (health && !json_is_array(json_object_get(health, "checks")))
        mcg_pctx_err(&c, health, "mcgitHealth has no list of checks");
    else if (health)
        out->health = json_incref(health);
    if (c.errors) {
        rc = mcg_err_set(err, MCG_EINVAL, "%s", d.msgs[0]);
        mcg_ignition_free(out);
    }
out:
    mcg_diags_free(&d);
    mcg_diags_free(&warns);
    json_decref(root);
    return rc;
}
