/*
 * entries.c — expanding a rendered config into the flat list of paths the
 * agent manages.
 *
 * Everything the agent writes or checks is one entry: a file with contents,
 * mode and owner; a directory; a symlink; a hard link; or a symlink that
 * must be absent (the [Install] links of a disabled unit). Storage entries
 * map one to one; a unit becomes its unit file (or a symlink to /dev/null
 * when masked), its drop-ins under <unit>.d/ and, when enabled, the links
 * `systemctl --root` makes from its [Install] section:
 *   WantedBy=T   -> etc/systemd/system/T.wants/<unit>    -> /path/of/unit
 *   RequiredBy=T -> etc/systemd/system/T.requires/<unit>
 *   UpheldBy=T   -> etc/systemd/system/T.upholds/<unit>
 *   Alias=A      -> etc/systemd/system/A
 * core's SSH keys become home/core/.ssh/authorized_keys.d/ignition (0600) in
 * 0700 directories owned by core: the file Ignition and MCO keep them in
 * (backed up on the first write, like any file found at a path). The other
 * files sshd reads keys for core from — .ssh/authorized_keys, which MCO
 * removes too, and authorized_keys.d/mcgit, where mcgit kept them before —
 * must be absent. When core's keys leave the config the keys file is left
 * empty and the others absent (mcg_acfg_keep_ssh): nothing kept from
 * before mcgit comes back. Owners given by name are looked up in the
 * root's etc/passwd and etc/group, never the host's.
 *
 * Once expanded, old and new configs are compared entry by entry, so the
 * plan, the drift check and the rollback share one description.
 */
#include "agent/agent_int.h"
#include "render/render.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define UNIT_DIR "etc/systemd/system"
#define SSH_DIR "home/core/.ssh"
#define SSH_KEYS_DIR SSH_DIR "/authorized_keys.d"
#define SSH_FILE SSH_KEYS_DIR "/ignition"
/* Other files sshd reads core's keys from: OpenSSH's default, and an older mcgit's file. */
static const char *const ssh_other_files[] = {SSH_DIR "/authorized_keys", SSH_KEYS_DIR "/mcgit"};
#define MAX_SMALL (4u * 1024u * 1024u)

typedef struct {
    mcg_ent *v;
    size_t n, cap;
    mcg_strv notes; /* what was skipped, for the log (moved to the config) */
} entv;

static mcg_ent *push(entv *ev)
{
    if (ev->n == ev->cap) {
        ev->cap = ev->cap ? 2 * ev->cap : 64;
        ev->v = mcg_realloc(ev->v, ev->cap * sizeof(*ev->v));
    }
    mcg_ent *e = &ev->v[ev->n++];
    memset(e, 0, sizeof(*e));
    return e;
}

static void ent_free(mcg_ent *e)
{
    free(e->path);
    free(e->key_owned);
    free(e->data_owned);
    free(e->target);
}

/* Read a small file inside the root; MCG_ENOTFOUND when absent. */
static int read_small(mcg_sroot *r, const char *rel, char **data, size_t *len, mcg_err *err)
{
    int dfd;
    const char *base;
    *data = NULL;
    *len = 0;
    int rc = mcg_sroot_parent(r, rel, false, &dfd, &base, err);
    if (rc)
        return rc;
    int fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT)
            return mcg_err_set(err, MCG_ENOTFOUND, "/%s: missing", rel);
        return errno == ELOOP ? mcg_err_set(err, MCG_EIO, "/%s: is a symbolic link", rel)
                              : mcg_err_set_os(err, MCG_EIO, errno, "/%s", rel);
    }
    struct stat st;
    mcg_buf b = MCG_BUF_INIT;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return mcg_err_set(err, MCG_EIO, "/%s: not a regular file", rel);
    }
    char chunk[16384];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 || b.len + (size_t)n > MAX_SMALL) {
            if (n != 0) {
                close(fd);
                mcg_buf_free(&b);
                return mcg_err_set(err, MCG_EIO, "/%s: read failed or too large", rel);
            }
            break;
        }
        mcg_buf_put(&b, chunk, (size_t)n);
    }
    close(fd);
    *data = mcg_buf_detach(&b, len);
    return 0;
}

/* ----------------------------------------------------- passwd / group */

typedef struct {
    char *passwd, *group; /* file contents, or NULL when unreadable */
    bool loaded;
} idtab;

/*
 * The database etc/<db>, then usr/lib/<db> (the OS image's users and groups
 * on RHCOS and Fedora CoreOS, which NSS reads through nss-altfiles after
 * files): one text, etc's entries first, so a name found in both is etc's.
 * NULL when neither exists.
 */
static char *nss_db(mcg_sroot *r, const char *db)
{
    mcg_buf b = MCG_BUF_INIT;
    static const char *const dirs[] = {"etc", "usr/lib"};
    for (size_t i = 0; i < 2; i++) {
        char *rel = mcg_sprintf("%s/%s", dirs[i], db), *data = NULL;
        size_t len = 0;
        mcg_err e = {0};
        if (read_small(r, rel, &data, &len, &e) == 0) {
            mcg_buf_put(&b, data, len);
            if (len && data[len - 1] != '\n')
                mcg_buf_putc(&b, '\n');
        }
        free(data);
        free(rel);
    }
    if (!b.ptr)
        return NULL;
    mcg_buf_putc(&b, '\0');
    size_t n;
    return mcg_buf_detach(&b, &n);
}

static void idtab_load(idtab *t, mcg_sroot *r)
{
    if (t->loaded)
        return;
    t->passwd = nss_db(r, "passwd");
    t->group = nss_db(r, "group");
    t->loaded = true;
}

/* Find name in a colon-separated database; field 2 (id) and 3 (gid). */
static bool id_lookup(const char *db, const char *name, long *id, long *gid)
{
    size_t nl = strlen(name);
    for (const char *line = db; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t ll = end ? (size_t)(end - line) : strlen(line);
        if (ll > nl && !memcmp(line, name, nl) && line[nl] == ':') {
            /* name:x:id:gid:... */
            const char *f = memchr(line + nl + 1, ':', ll - nl - 1);
            if (f) {
                char *stop;
                long v = strtol(f + 1, &stop, 10);
                if (stop != f + 1 && *stop == ':' && v >= 0) {
                    *id = v;
                    if (gid) {
                        long g = strtol(stop + 1, &stop, 10);
                        *gid = g;
                    }
                    return true;
                }
            }
        }
        line = end ? end + 1 : NULL;
    }
    return false;
}

static int resolve_owner(idtab *t, mcg_sroot *r, const mcg_owner *o, bool user, bool strict,
                         long *out, mcg_err *err)
{
    *out = 0;
    if (o->has_id) {
        *out = (long)o->id;
        return 0;
    }
    if (!o->name)
        return 0;
    idtab_load(t, r);
    long id = 0;
    if (id_lookup(user ? t->passwd : t->group, o->name, &id, NULL)) {
        *out = id;
        return 0;
    }
    if (!strict)
        return 0;
    return mcg_err_set(err, MCG_ENOTFOUND, "%s '%s' not found in /etc/%s or /usr/lib/%s",
                       user ? "user" : "group", o->name, user ? "passwd" : "group",
                       user ? "passwd" : "group");
}

/* ------------------------------------------------------------ units */

static bool is_template(const char *unit)
{
    const char *at = strchr(unit, '@');
    return at && at[1] == '.';
}

/* Words of the [Install] keys we act on, from unit file text. */
typedef struct {
    mcg_strv wanted, required, upheld, alias, also;
    char *default_instance;
} install_sec;

static void install_free(install_sec *s)
{
    mcg_strv_free(&s->wanted);
    mcg_strv_free(&s->required);
    mcg_strv_free(&s->upheld);
    mcg_strv_free(&s->alias);
    mcg_strv_free(&s->also);
    free(s->default_instance);
}

static void push_words(mcg_strv *v, const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        size_t j = i;
        while (j < n && s[j] != ' ' && s[j] != '\t')
            j++;
        if (j > i) {
            char *w = mcg_strndup(s + i, j - i);
            if (!mcg_strv_contains(v, w))
                mcg_strv_push(v, w);
            free(w);
        }
        i = j;
    }
}

/* One line of the [Install] section (n bytes, trimmed): KEY=VALUE into s. */
static void install_key(install_sec *s, const char *line, size_t n)
{
    const char *eq = memchr(line, '=', n);
    if (!eq)
        return;
    size_t kl = (size_t)(eq - line);
    while (kl && (line[kl - 1] == ' ' || line[kl - 1] == '\t'))
        kl--;
    const char *v = eq + 1;
    size_t vl = n - (size_t)(v - line);
#define KEY(k) (kl == strlen(k) && !memcmp(line, k, kl))
    if (KEY("WantedBy"))
        push_words(&s->wanted, v, vl);
    else if (KEY("RequiredBy"))
        push_words(&s->required, v, vl);
    else if (KEY("UpheldBy"))
        push_words(&s->upheld, v, vl);
    else if (KEY("Alias"))
        push_words(&s->alias, v, vl);
    else if (KEY("Also"))
        push_words(&s->also, v, vl);
    else if (KEY("DefaultInstance")) {
        while (vl && (*v == ' ' || *v == '\t'))
            v++, vl--;
        free(s->default_instance);
        s->default_instance = mcg_strndup(v, vl);
    }
#undef KEY
}

static void parse_install(install_sec *s, const char *text)
{
    bool in = false;
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        while (n && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
            n--;
        while (n && (*line == ' ' || *line == '\t'))
            line++, n--;
        if (n && line[0] == '[')
            in = n == 9 && !memcmp(line, "[Install]", 9);
        else if (in && n && line[0] != '#' && line[0] != ';')
            install_key(s, line, n);
        line = end ? end + 1 : NULL;
    }
}

/*
 * Add the [Install] links of unit u (file at /unit_path, text) as SYMLINK
 * entries (enable) or ABSENT entries (disable).
 */
static void add_install_links(entv *ev, const mcg_unit *u, const char *unit_path, const char *text,
                              bool enable, mcg_strv *also)
{
    install_sec s = {0};
    parse_install(&s, text);
    for (size_t i = 0; also && i < s.also.n; i++)
        if (mcg_name_is_unit(s.also.v[i]) && !mcg_strv_contains(also, s.also.v[i]))
            mcg_strv_push(also, s.also.v[i]);
    char *inst = NULL;
    if (is_template(u->name)) {
        if (s.default_instance && *s.default_instance) {
            const char *at = strchr(u->name, '@');
            inst =
                mcg_sprintf("%.*s@%s%s", (int)(at - u->name), u->name, s.default_instance, at + 1);
        }
    } else {
        inst = mcg_strdup(u->name);
    }
    struct {
        mcg_strv *v;
        const char *suffix;
    } deps[] = {{&s.wanted, "wants"}, {&s.required, "requires"}, {&s.upheld, "upholds"}};
    for (size_t d = 0; inst && d < 3; d++) {
        for (size_t i = 0; i < deps[d].v->n; i++) {
            const char *t = deps[d].v->v[i];
            if (!mcg_name_is_unit(t))
                continue;
            mcg_ent *e = push(ev);
            e->kind = enable ? MCG_ENT_SYMLINK : MCG_ENT_ABSENT;
            e->origin = MCG_ORIG_UNIT;
            e->path = mcg_sprintf(UNIT_DIR "/%s.%s/%s", t, deps[d].suffix, inst);
            e->key = e->key_owned = mcg_strdup(u->name); /* u may be a stand-in */
            e->target = mcg_sprintf("/%s", unit_path);
        }
    }
    for (size_t i = 0; i < s.alias.n; i++) {
        if (!mcg_name_is_unit(s.alias.v[i]))
            continue;
        mcg_ent *e = push(ev);
        e->kind = enable ? MCG_ENT_SYMLINK : MCG_ENT_ABSENT;
        e->origin = MCG_ORIG_UNIT;
        e->path = mcg_sprintf(UNIT_DIR "/%s", s.alias.v[i]);
        e->key = e->key_owned = mcg_strdup(u->name);
        e->target = mcg_sprintf("/%s", unit_path);
    }
    free(inst);
    install_free(&s);
}

/*
 * The [Install] links of unit u (enable: made, else absent), from contents
 * (the config's file) or, when NULL, the unit file the OS ships; the Also=
 * units it names pushed to also (when given). A unit to enable found
 * nowhere is skipped, with a note, as MCO's daemon skips it.
 */
static void unit_links(entv *ev, mcg_sroot *r, const mcg_unit *u, const char *contents, bool enable,
                       bool strict, mcg_strv *also)
{
    if (contents) {
        char *upath = mcg_sprintf(UNIT_DIR "/%s", u->name);
        add_install_links(ev, u, upath, contents, enable, also);
        free(upath);
        return;
    }
    /* the unit ships with the OS: find its file as systemd would */
    static const char *const dirs[] = {UNIT_DIR, "usr/lib/systemd/system", "lib/systemd/system",
                                       NULL};
    char *text = NULL;
    size_t len;
    mcg_err e2 = {0};
    for (const char *const *d = dirs; *d; d++) {
        char *p = mcg_sprintf("%s/%s", *d, u->name);
        int r2 = read_small(r, p, &text, &len, &e2);
        if (!r2)
            add_install_links(ev, u, p, text, enable, also);
        free(p);
        free(text);
        if (!r2)
            return;
    }
    if (strict && enable) {
        char *note = mcg_sprintf("unit %s: not enabled: no unit file in the config or under "
                                 "/etc/systemd/system, /usr/lib/systemd/system",
                                 u->name);
        mcg_strv_push(&ev->notes, note);
        free(note);
    }
}

static void add_unit(entv *ev, mcg_sroot *r, const mcg_ignition *ign, const mcg_unit *u,
                     bool strict)
{
    char *upath = mcg_sprintf(UNIT_DIR "/%s", u->name);
    bool masked = u->mask == MCG_TRUE;
    /* contents "" is unset, as MCO reads it (a 0-byte unit is masked to systemd) */
    const char *contents = u->contents && *u->contents ? u->contents : NULL;
    if (masked || contents) {
        mcg_ent *e = push(ev);
        e->origin = MCG_ORIG_UNIT;
        e->path = mcg_strdup(upath);
        e->key = u->name;
        if (masked) {
            e->kind = MCG_ENT_SYMLINK;
            e->target = mcg_strdup("/dev/null");
        } else {
            e->kind = MCG_ENT_FILE;
            e->mode = 0644;
            e->data = (const unsigned char *)contents;
            e->len = strlen(contents);
        }
    } else if (u->mask == MCG_FALSE) {
        /* mask: false unmasks: no /dev/null link at the unit's path */
        mcg_ent *e = push(ev);
        e->kind = MCG_ENT_ABSENT;
        e->origin = MCG_ORIG_UNIT;
        e->path = mcg_strdup(upath);
        e->key = u->name;
        e->target = mcg_strdup("/dev/null");
    }
    for (size_t i = 0; i < u->ndropins; i++) {
        const mcg_dropin *d = &u->dropins[i];
        if (!d->contents || !*d->contents) /* "": removed, as MCO reads it */
            continue;
        mcg_ent *e = push(ev);
        e->kind = MCG_ENT_FILE;
        e->origin = MCG_ORIG_UNIT;
        e->path = mcg_sprintf(UNIT_DIR "/%s.d/%s", u->name, d->name);
        e->key = u->name;
        e->mode = 0644;
        e->data = (const unsigned char *)d->contents;
        e->len = strlen(d->contents);
    }
    if (!masked && u->enabled != MCG_UNSET) {
        bool enable = u->enabled == MCG_TRUE;
        mcg_strv also = {0};
        unit_links(ev, r, u, contents, enable, strict, &also);
        /* Also= units are enabled (disabled) with it, as systemctl does */
        for (size_t i = 0; i < also.n; i++) {
            const mcg_unit *au = NULL;
            for (size_t k = 0; k < ign->nunits && !au; k++)
                if (!strcmp(ign->units[k].name, also.v[i]))
                    au = &ign->units[k];
            mcg_unit tmp = {0};
            tmp.name = also.v[i];
            const char *ac = au && au->contents && *au->contents ? au->contents : NULL;
            unit_links(ev, r, au ? au : &tmp, ac, enable, strict, NULL);
        }
        mcg_strv_free(&also);
    }
    free(upath);
}

/* ------------------------------------------------------------ config */

static int ent_cmp(const void *a, const void *b)
{
    return strcmp(((const mcg_ent *)a)->path, ((const mcg_ent *)b)->path);
}

void mcg_acfg_free(mcg_acfg *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        ent_free(&c->ents[i]);
    free(c->ents);
    mcg_strv_free(&c->notes);
    mcg_ignition_free(&c->ign);
    free(c->name);
    free(c);
}

/* The entry of storage item s (a file, directory or link) with its owner. */
static int add_storage(entv *ev, idtab *ids, mcg_sroot *r, mcg_storage *s, bool strict,
                       mcg_err *err)
{
    long uid, gid;
    int rc;
    if ((rc = resolve_owner(ids, r, &s->user, true, strict, &uid, err)) != 0 ||
        (rc = resolve_owner(ids, r, &s->group, false, strict, &gid, err)) != 0) {
        mcg_err_prefix(err, "%s", s->path);
        return rc;
    }
    mcg_ent *e = push(ev);
    e->origin = MCG_ORIG_STORAGE;
    e->path = mcg_strdup(s->path + 1);
    e->key = s->path;
    e->uid = (uid_t)uid;
    e->gid = (gid_t)gid;
    switch (s->kind) {
    case MCG_NODE_FILE:
        e->kind = MCG_ENT_FILE;
        e->mode = s->has_mode ? s->mode : 0644;
        e->data = s->data ? s->data : (const unsigned char *)"";
        e->len = s->data ? s->data_len : 0;
        break;
    case MCG_NODE_DIR:
        e->kind = MCG_ENT_DIR;
        e->mode = s->has_mode ? s->mode : 0755;
        break;
    case MCG_NODE_LINK:
        if (s->hard == MCG_TRUE) {
            e->kind = MCG_ENT_HARDLINK;
            e->target = mcg_strdup(s->target + 1); /* clean absolute, checked by model */
        } else {
            e->kind = MCG_ENT_SYMLINK;
            e->target = mcg_strdup(s->target ? s->target : "");
        }
        break;
    }
    return 0;
}

/* Core's SSH keys: its .ssh directories and the keys file, owned by core. */
static void add_ssh_keys(entv *ev, idtab *ids, mcg_sroot *r, const mcg_strv *keys)
{
    long uid = 0, gid = 0;
    idtab_load(ids, r);
    if (!id_lookup(ids->passwd, "core", &uid, &gid)) {
        /* MCO's daemon too: no core, no keys to manage */
        mcg_strv_push(&ev->notes, "user core is not in /etc/passwd: its SSH keys are skipped");
        return;
    }
    static const char *const dirs[] = {SSH_DIR, SSH_KEYS_DIR};
    for (size_t i = 0; i < 2; i++) {
        mcg_ent *e = push(ev);
        e->kind = MCG_ENT_DIR;
        e->origin = MCG_ORIG_SSH;
        e->path = mcg_strdup(dirs[i]);
        e->key = "sshkey";
        e->mode = 0700;
        e->uid = (uid_t)uid;
        e->gid = (gid_t)gid;
    }
    mcg_buf b = MCG_BUF_INIT;
    for (size_t i = 0; i < keys->n; i++) {
        mcg_buf_puts(&b, keys->v[i]);
        mcg_buf_putc(&b, '\n');
    }
    mcg_ent *e = push(ev);
    e->kind = MCG_ENT_FILE;
    e->origin = MCG_ORIG_SSH;
    e->path = mcg_strdup(SSH_FILE);
    e->key = "sshkey";
    e->mode = 0600;
    e->uid = (uid_t)uid;
    e->gid = (gid_t)gid;
    e->data_owned = (unsigned char *)mcg_buf_detach(&b, &e->len);
    e->data = e->data_owned;
    for (size_t i = 0; i < sizeof(ssh_other_files) / sizeof(ssh_other_files[0]); i++) {
        e = push(ev);
        e->kind = MCG_ENT_REMOVED;
        e->origin = MCG_ORIG_SSH;
        e->path = mcg_strdup(ssh_other_files[i]);
        e->key = "sshkey";
    }
}

/*
 * Sort the entries by path. One path, one owner: a disabled unit's absent
 * link yields to anything that puts something there; two real entries on
 * one path are refused.
 */
static int sort_unique_paths(entv *ev, mcg_err *err)
{
    if (ev->n > 1)
        qsort(ev->v, ev->n, sizeof(*ev->v), ent_cmp);
    size_t k = 0;
    for (size_t i = 0; i < ev->n; i++) {
        if (k && !strcmp(ev->v[k - 1].path, ev->v[i].path)) {
            mcg_ent *prev = &ev->v[k - 1], *cur = &ev->v[i];
            if (cur->kind == MCG_ENT_ABSENT) {
                ent_free(cur);
                continue;
            }
            if (prev->kind == MCG_ENT_ABSENT) {
                ent_free(prev);
                *prev = *cur;
                continue;
            }
            if (cur->kind == MCG_ENT_SYMLINK && prev->kind == MCG_ENT_SYMLINK &&
                !strcmp(cur->target, prev->target)) {
                ent_free(cur);
                continue;
            }
            int rc = mcg_err_set(err, MCG_EINVAL, "/%s is managed twice (by %s and %s)", cur->path,
                                 prev->key, cur->key);
            for (size_t j = i; j < ev->n; j++)
                ent_free(&ev->v[j]);
            ev->n = k;
            return rc;
        }
        ev->v[k++] = ev->v[i];
    }
    ev->n = k;
    return 0;
}

int mcg_acfg_load(mcg_acfg **out, mcg_sroot *r, const char *name, const char *spec, size_t len,
                  bool strict, mcg_err *err)
{
    *out = NULL;
    mcg_acfg *c = mcg_calloc(1, sizeof(*c));
    c->name = mcg_strdup(name);
    entv ev = {0};
    idtab ids = {0};
    int rc = mcg_ignition_parse_json(&c->ign, name, spec, len, err);
    if (rc)
        goto out;
    for (size_t i = 0; i < c->ign.nstorage; i++)
        if ((rc = add_storage(&ev, &ids, r, &c->ign.storage[i], strict, err)) != 0)
            goto out;
    for (size_t i = 0; i < c->ign.nunits; i++)
        add_unit(&ev, r, &c->ign, &c->ign.units[i], strict);
    if (c->ign.ssh_keys.n)
        add_ssh_keys(&ev, &ids, r, &c->ign.ssh_keys);
    rc = sort_unique_paths(&ev, err);
out:
    free(ids.passwd);
    free(ids.group);
    c->ents = ev.v;
    c->n = ev.n;
    c->notes = ev.notes;
    if (rc) {
        mcg_acfg_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

/*
 * core's keys leaving the config (old had them, new_cfg has none): the keys
 * file stays, empty, and the other files sshd reads stay absent, as MCO's
 * daemon writes an empty authorized_keys.d/ignition. A key the config
 * dropped never logs in again, so what was there before mcgit (the install
 * key among it) is not put back.
 */
void mcg_acfg_keep_ssh(mcg_acfg *new_cfg, const mcg_acfg *old)
{
    if (!new_cfg || !old || mcg_acfg_find(new_cfg, SSH_FILE) || !mcg_acfg_find(old, SSH_FILE))
        return;
    entv ev = {new_cfg->ents, new_cfg->n, new_cfg->n, {0}};
    for (size_t i = 0; i < old->n; i++) {
        const mcg_ent *o = &old->ents[i];
        if (o->origin != MCG_ORIG_SSH || mcg_acfg_find(new_cfg, o->path))
            continue;
        mcg_ent *e = push(&ev);
        e->kind = o->kind;
        e->origin = MCG_ORIG_SSH;
        e->path = mcg_strdup(o->path);
        e->key = "sshkey";
        e->mode = o->mode;
        e->uid = o->uid;
        e->gid = o->gid;
    }
    if (ev.n > 1)
        qsort(ev.v, ev.n, sizeof(*ev.v), ent_cmp);
    new_cfg->ents = ev.v;
    new_cfg->n = ev.n;
}

const mcg_ent *mcg_acfg_find(const mcg_acfg *c, const char *path)
{
    if (!c)
        return NULL;
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int d = strcmp(c->ents[mid].path, path);
        if (!d)
            return &c->ents[mid];
        if (d < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

bool mcg_ent_equal(const mcg_ent *a, const mcg_ent *b)
{
    if (a->kind != b->kind || strcmp(a->path, b->path))
        return false;
    switch (a->kind) {
    case MCG_ENT_FILE:
        return a->mode == b->mode && a->uid == b->uid && a->gid == b->gid && a->len == b->len &&
               (a->len == 0 || !memcmp(a->data, b->data, a->len));
    case MCG_ENT_DIR:
        return a->mode == b->mode && a->uid == b->uid && a->gid == b->gid;
    case MCG_ENT_SYMLINK:
    case MCG_ENT_HARDLINK:
        return a->uid == b->uid && a->gid == b->gid && !strcmp(a->target, b->target);
    case MCG_ENT_ABSENT:
    case MCG_ENT_REMOVED:
        return true;
    }
    return false;
}
