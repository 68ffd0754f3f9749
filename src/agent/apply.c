/*
 * apply.c — planning, applying and checking a config's entries on disk.
 *
 * A change is the difference between two expanded configs (old -> new):
 * paths only in new are added (backing up whatever was there before mcgit
 * managed it), paths in both whose entries differ are rewritten, paths only
 * in old are removed (or their backup restored). Execution is idempotent —
 * the plan depends only on the two configs and on the backup / restore
 * lists fixed in the journal — so a restarted agent simply executes it
 * again. The same function run new -> old is the rollback.
 *
 * Files are written in batches: every temp file of a batch is written
 * (mode and owner set on the open fd), one syncfs() makes their data
 * durable, then the renames. That is the guarantee of fsync-per-file (a
 * crash leaves the old file or the complete new one under each name) at a
 * fraction of the cost. The renames, like every other change, become
 * durable with the next batch's syncfs and, at the latest, with one
 * syncfs() per filesystem touched at the end of the execution — before the
 * journal moves on; a crash before that replays the (idempotent) plan.
 *
 * Directories: the plan lists those the update will create (they do not
 * exist yet), and the state directory keeps the list of every directory
 * mcgit created. When a config no longer needs one of those — no path it
 * manages lies below it — it is removed if empty; if something else is in
 * it, it is left and no longer counted as mcgit's. Directories that
 * existed before mcgit are never removed.
 *
 * The drift check reads each managed file and compares its bytes with the
 * config (size first, so most changes cost no read at all) — no hashing —
 * and its type, mode and (when running as root) owner from lstat.
 */
#include "agent/agent_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BATCH_FILES 4096
#define BATCH_DIRS 256

/* ------------------------------------------------------------ actions */

/* The policy's rules live in model/disruption.c, shared with `mcgit plan`. */
static void decide_one(mcg_disruption *out, const mcg_ent *e, const mcg_disruption_policy *policy)
{
    static const mcg_disrupt_kind kinds[] = {
        [MCG_ORIG_STORAGE] = MCG_DISRUPT_FILE,
        [MCG_ORIG_UNIT] = MCG_DISRUPT_UNIT,
        [MCG_ORIG_SSH] = MCG_DISRUPT_SSHKEY,
    };
    mcg_disruption_add(out, policy, kinds[e->origin], e->key);
    /* a unit's links (enabled, mask) changed: systemd reloads, unless it reboots anyway */
    if (e->origin == MCG_ORIG_UNIT && e->kind != MCG_ENT_FILE)
        out->daemon_reload = true;
}

void mcg_plan_decide(mcg_disruption *out, const mcg_acfg *old, const mcg_acfg *new_cfg,
                     const mcg_disruption_policy *policy)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < new_cfg->n; i++) {
        const mcg_ent *o = mcg_acfg_find(old, new_cfg->ents[i].path);
        if (!o || !mcg_ent_equal(o, &new_cfg->ents[i]))
            decide_one(out, &new_cfg->ents[i], policy);
    }
    for (size_t i = 0; old && i < old->n; i++)
        if (!mcg_acfg_find(new_cfg, old->ents[i].path))
            decide_one(out, &old->ents[i], policy);
    /* core's password hash: the sshkey rule, as MCO's daemon applies it */
    const char *op = old ? old->ign.password_hash : NULL, *np = new_cfg->ign.password_hash;
    if ((op || np) && (!op || !np || strcmp(op, np)))
        mcg_disruption_add(out, policy, MCG_DISRUPT_SSHKEY, "sshkey");
    mcg_disruption_finish(out);
}

/* ------------------------------------------------------------ backups */

void mcg_plan_disk_free(mcg_plan_disk *d)
{
    mcg_strv_free(&d->backups);
    mcg_strv_free(&d->restores);
    mcg_strv_free(&d->mkdirs);
}

static int cmp_str(const void *key, const void *elem)
{
    return strcmp(key, *(char *const *)elem);
}

/* True when the sorted list v holds s (binary search). */
static bool mcg_sorted_has(const mcg_strv *v, const char *s)
{
    return v->n && bsearch(s, v->v, v->n, sizeof(*v->v), cmp_str) != NULL;
}

/* Sort v and drop repeated strings. */
static void sort_unique(mcg_strv *v)
{
    mcg_strv_sort(v);
    size_t k = 0;
    for (size_t i = 0; i < v->n; i++) {
        if (k && !strcmp(v->v[k - 1], v->v[i]))
            free(v->v[i]);
        else
            v->v[k++] = v->v[i];
    }
    v->n = k;
}

/*
 * The directories cfg needs, sorted: every ancestor of a path it puts on
 * disk, and its own directories. (An absent link needs nothing.)
 */
static void needed_dirs(const mcg_acfg *cfg, mcg_strv *out)
{
    const char *last = NULL; /* previous entry: its ancestors are in already */
    size_t last_len = 0;
    for (size_t i = 0; cfg && i < cfg->n; i++) {
        const mcg_ent *e = &cfg->ents[i];
        if (e->kind == MCG_ENT_ABSENT || e->kind == MCG_ENT_REMOVED)
            continue;
        const char *slash = strrchr(e->path, '/');
        size_t plen = slash ? (size_t)(slash - e->path) : 0;
        if (!(last && plen == last_len && !memcmp(last, e->path, plen))) {
            for (const char *p = strchr(e->path, '/'); p; p = strchr(p + 1, '/')) {
                char *d = mcg_strndup(e->path, (size_t)(p - e->path));
                mcg_strv_push(out, d);
                free(d);
            }
            last = e->path;
            last_len = plen;
        }
        if (e->kind == MCG_ENT_DIR)
            mcg_strv_push(out, e->path);
    }
    sort_unique(out);
}

char *mcg_backup_name(const char *path)
{
    unsigned char d[MCG_SHA256_LEN];
    char hex[2 * MCG_SHA256_LEN + 1];
    mcg_sha256(path, strlen(path), d);
    mcg_hex(d, sizeof(d), hex);
    return mcg_sprintf("backups/%s", hex);
}

static bool backup_exists(int statefd, const char *path)
{
    char *b = mcg_backup_name(path);
    struct stat st;
    bool ok = fstatat(statefd, b, &st, AT_SYMLINK_NOFOLLOW) == 0;
    free(b);
    return ok;
}

/* Copy fd's data into a new file at dfd/name (mode, owner), fsync'd when sync. */
static int copy_to(int src, const struct stat *st, int dfd, const char *name, bool sync,
                   mcg_err *err, const char *what)
{
    int out = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (out < 0)
        return mcg_err_set_os(err, MCG_EIO, errno, "%s", what);
    int rc = 0;
    char buf[65536];
    for (;;) {
        ssize_t n = read(src, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || (n > 0 && mcg_write_all(out, buf, (size_t)n) != 0)) {
            rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", what);
            break;
        }
        if (n == 0)
            break;
    }
    if (!rc && (fchmod(out, st->st_mode & 07777) != 0 ||
                (geteuid() == 0 && fchown(out, st->st_uid, st->st_gid) != 0)))
        rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", what);
    if (!rc && sync && fsync(out) != 0)
        rc = mcg_err_set_os(err, MCG_EIO, errno, "%s: fsync", what);
    close(out);
    return rc;
}

/* MCO's daemon's own record of a path it wrote, on a node it managed. */
enum { MCO_NONE, MCO_CREATED, MCO_ORIG };
#define MCO_DIR "etc/machine-config-daemon"

/*
 * What MCO's daemon kept about root/path: a noorig stamp (MCO_CREATED: it
 * created the file, so nothing was there before it) or an orig backup
 * (MCO_ORIG: what was there before MCO, whose path inside the root is
 * returned, to be freed). *kind: MCO_NONE when neither.
 */
static char *mco_record(mcg_sroot *r, const char *path, int *kind)
{
    int dfd;
    const char *base;
    struct stat st;
    mcg_err e = {0};
    char *p = mcg_sprintf(MCO_DIR "/noorig/%s.mcdnoorig", path);
    *kind = MCO_NONE;
    if (mcg_sroot_parent(r, p, false, &dfd, &base, &e) == 0 &&
        fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        *kind = MCO_CREATED;
        free(p);
        return NULL;
    }
    free(p);
    p = mcg_sprintf(MCO_DIR "/orig/%s.mcdorig", path);
    if (mcg_sroot_parent(r, p, false, &dfd, &base, &e) == 0 &&
        fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))) {
        *kind = MCO_ORIG;
        return p;
    }
    free(p);
    return NULL;
}

/*
 * Keep a copy of root/path (a file or symlink) as the state dir's backup.
 * On a node MCO's daemon managed, its record wins: a file it created has
 * no backup (it is removed when it leaves), and the original it kept is
 * the backup rather than its own content.
 */
static int take_backup(mcg_sroot *r, int statefd, const char *path, mcg_err *err)
{
    int dfd, kind;
    const char *base;
    char *orig = mco_record(r, path, &kind);
    if (kind == MCO_CREATED)
        return 0;
    int rc = mcg_sroot_parent(r, orig ? orig : path, false, &dfd, &base, err);
    struct stat st;
    if (rc || fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        free(orig);                          /* base points into it */
        return rc == MCG_ENOTFOUND ? 0 : rc; /* nothing there (any more): nothing to keep */
    }
    char *bname = mcg_backup_name(path);
    char *tmp = mcg_sprintf("backups/.tmp-%s", bname + 8);
    unlinkat(statefd, tmp, 0);
    if (S_ISLNK(st.st_mode)) {
        char target[4096];
        ssize_t n = readlinkat(dfd, base, target, sizeof(target) - 1);
        if (n < 0 || symlinkat((target[n] = '\0', target), statefd, tmp) != 0)
            rc = mcg_err_set_os(err, MCG_EIO, errno, "backup of /%s", path);
    } else if (S_ISREG(st.st_mode)) {
        int src = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (src < 0)
            rc = mcg_err_set_os(err, MCG_EIO, errno, "backup of /%s", path);
        else {
            char *what = mcg_sprintf("backup of /%s", path);
            rc = copy_to(src, &st, statefd, tmp, true, err, what);
            free(what);
            close(src);
        }
    } else {
        goto out; /* directories and specials are never replaced by a file silently */
    }
    if (!rc && renameat(statefd, tmp, statefd, bname) != 0)
        rc = mcg_err_set_os(err, MCG_EIO, errno, "backup of /%s", path);
    if (rc)
        unlinkat(statefd, tmp, 0);
out:
    free(tmp);
    free(bname);
    free(orig);
    return rc;
}

/* Put a backup back at root/path and drop it. No backup: nothing to do. */
static int restore_backup(mcg_sroot *r, int statefd, const char *path, mcg_err *err)
{
    char *bname = mcg_backup_name(path);
    struct stat st;
    int rc = 0, dfd;
    const char *base;
    char tmp[64];
    if (fstatat(statefd, bname, &st, AT_SYMLINK_NOFOLLOW) != 0)
        goto out;
    if ((rc = mcg_sroot_parent(r, path, true, &dfd, &base, err)) != 0)
        goto out;
    mcg_agent_tmpname(base, tmp);
    unlinkat(dfd, tmp, 0);
    if (S_ISLNK(st.st_mode)) {
        char target[4096];
        ssize_t n = readlinkat(statefd, bname, target, sizeof(target) - 1);
        if (n < 0 || symlinkat((target[n] = '\0', target), dfd, tmp) != 0)
            rc = mcg_err_set_os(err, MCG_EIO, errno, "restore /%s", path);
        else if (geteuid() == 0 &&
                 fchownat(dfd, tmp, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) != 0)
            rc = mcg_err_set_os(err, MCG_EIO, errno, "restore /%s", path);
    } else {
        int src = openat(statefd, bname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (src < 0)
            rc = mcg_err_set_os(err, MCG_EIO, errno, "restore /%s", path);
        else {
            char *what = mcg_sprintf("restore /%s", path);
            rc = copy_to(src, &st, dfd, tmp, true, err, what);
            free(what);
            close(src);
        }
    }
    if (!rc && renameat(dfd, tmp, dfd, base) != 0)
        rc = mcg_err_set_os(err, MCG_EIO, errno, "restore /%s", path);
    if (rc) {
        unlinkat(dfd, tmp, 0);
        goto out;
    }
    fsync(dfd);
    if (unlinkat(statefd, bname, 0) != 0)
        rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", bname);
out:
    free(bname);
    return rc;
}

/* ------------------------------------------------------------ prepare */

static bool is_linkish(const mcg_ent *e)
{
    return e && (e->kind == MCG_ENT_SYMLINK || e->kind == MCG_ENT_HARDLINK);
}

/*
 * One path e of the new config (o: the old config's entry, or NULL),
 * before anything is written: no symlink where a file or directory goes
 * unless the old config put it there, no file where a directory goes and
 * no directory where something else goes. What mcgit finds at a path it
 * did not manage yet goes on the backup list.
 */
static int prepare_entry(mcg_plan_disk *out, mcg_sroot *r, int statefd, const mcg_ent *e,
                         const mcg_ent *o, mcg_err *err)
{
    int dfd;
    const char *base;
    int rc = mcg_sroot_parent(r, e->path, false, &dfd, &base, err);
    if (rc == MCG_ENOTFOUND)
        return 0; /* created later, below a directory we make */
    if (rc)
        return rc;
    if (e->kind == MCG_ENT_HARDLINK) {
        int tfd;
        const char *tb;
        if ((rc = mcg_sroot_parent(r, e->target, false, &tfd, &tb, err)) != 0) {
            mcg_err_prefix(err, "hard link /%s", e->path);
            return rc;
        }
        /* the cache now holds the target's parent: look e up again */
        if ((rc = mcg_sroot_parent(r, e->path, false, &dfd, &base, err)) != 0)
            return rc;
    }
    struct stat st;
    if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return 0; /* nothing there yet */
    if (S_ISLNK(st.st_mode) && !is_linkish(o) &&
        (e->kind == MCG_ENT_FILE || e->kind == MCG_ENT_DIR))
        return mcg_err_set(err, MCG_ETRUST, "/%s: is a symbolic link (refusing to replace it)",
                           e->path);
    if (e->kind == MCG_ENT_DIR && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode))
        return mcg_err_set(err, MCG_EINVAL, "/%s: exists and is not a directory", e->path);
    if (e->kind != MCG_ENT_DIR && e->kind != MCG_ENT_ABSENT && S_ISDIR(st.st_mode))
        return mcg_err_set(err, MCG_EINVAL, "/%s: is a directory", e->path);
    /* what an absent entry removes is kept too (a unit's link it disables):
     * it comes back when the entry leaves the config */
    bool removes = e->kind == MCG_ENT_ABSENT ? S_ISLNK(st.st_mode)
                                             : S_ISREG(st.st_mode) || S_ISLNK(st.st_mode);
    if (!o && e->kind != MCG_ENT_DIR && removes && !backup_exists(statefd, e->path))
        mcg_strv_push(&out->backups, e->path);
    return 0;
}

/* The paths leaving the config whose backup is restored (the rest are removed). */
static int prepare_restores(mcg_plan_disk *out, mcg_sroot *r, int statefd, const mcg_acfg *old,
                            const mcg_acfg *new_cfg, mcg_err *err)
{
    for (size_t i = 0; old && i < old->n; i++) {
        const mcg_ent *o = &old->ents[i];
        /* core's keys files: never what was there before mcgit (mcg_acfg_keep_ssh) */
        if (mcg_acfg_find(new_cfg, o->path) || o->kind == MCG_ENT_DIR || o->origin == MCG_ORIG_SSH)
            continue;
        int dfd;
        const char *base;
        int rc = mcg_sroot_parent(r, o->path, false, &dfd, &base, err);
        if (rc && rc != MCG_ENOTFOUND)
            return rc;
        if (backup_exists(statefd, o->path))
            mcg_strv_push(&out->restores, o->path);
    }
    return 0;
}

/* The directories that do not exist yet: parents come first, and a
 * directory below a missing one is missing too. */
static void prepare_mkdirs(mcg_plan_disk *out, mcg_sroot *r, const mcg_acfg *new_cfg)
{
    mcg_strv need = {0};
    needed_dirs(new_cfg, &need);
    for (size_t i = 0; i < need.n; i++) {
        const char *d = need.v[i], *slash = strrchr(d, '/');
        bool missing = false;
        if (slash) {
            char *parent = mcg_strndup(d, (size_t)(slash - d));
            missing = mcg_sorted_has(&out->mkdirs, parent);
            free(parent);
        }
        if (!missing) {
            int dfd;
            const char *base;
            struct stat st;
            mcg_err e = {0};
            int r2 = mcg_sroot_parent(r, d, false, &dfd, &base, &e);
            missing =
                r2 == MCG_ENOTFOUND ||
                (r2 == 0 && fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT);
        }
        if (missing)
            mcg_strv_push(&out->mkdirs, d);
    }
    mcg_strv_free(&need);
}

int mcg_plan_prepare(mcg_plan_disk *out, mcg_sroot *r, int statefd, const mcg_acfg *old,
                     const mcg_acfg *new_cfg, mcg_err *err)
{
    memset(out, 0, sizeof(*out));
    int rc = 0;
    mcg_sroot_forget(r);
    for (size_t i = 0; i < new_cfg->n; i++) {
        const mcg_ent *e = &new_cfg->ents[i];
        if ((rc = prepare_entry(out, r, statefd, e, mcg_acfg_find(old, e->path), err)) != 0)
            goto out;
    }
    if ((rc = prepare_restores(out, r, statefd, old, new_cfg, err)) != 0)
        goto out;
    prepare_mkdirs(out, r, new_cfg);
out:
    mcg_sroot_forget(r);
    if (rc)
        mcg_plan_disk_free(out);
    return rc;
}

/* ------------------------------------------------------------ execute */

typedef struct {
    const mcg_ent *e;
    int slot;
    char tmp[64];
} pending;

typedef struct {
    pending *p;
    size_t n;
    int fds[BATCH_DIRS];
    dev_t devs[BATCH_DIRS];
    gid_t gids[BATCH_DIRS]; /* each directory's group */
    char *paths[BATCH_DIRS];
    int ndirs;
    bool as_root;
    mode_t umask; /* the process's, applied to files it creates */
    uid_t euid;
    gid_t egid;
    mcg_exec_stats *st;
} batch;

static const char *base_of(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static void batch_discard(batch *b)
{
    for (size_t i = 0; i < b->n; i++)
        unlinkat(b->fds[b->p[i].slot], b->p[i].tmp, 0);
    for (int i = 0; i < b->ndirs; i++) {
        close(b->fds[i]);
        free(b->paths[i]);
    }
    b->n = 0;
    b->ndirs = 0;
}

static int batch_flush(batch *b, mcg_err *err)
{
    int rc = 0;
    mcg_agent_testpoint("temps-written");
    /* 1. the data of every temp file, durable: one syncfs per filesystem */
    for (int i = 0; i < b->ndirs && !rc; i++) {
        bool seen = false;
        for (int j = 0; j < i; j++)
            seen |= b->devs[j] == b->devs[i];
        if (!seen && syncfs(b->fds[i]) != 0)
            rc = mcg_err_set_os(err, MCG_EIO, errno, "/%s: syncfs", b->paths[i]);
    }
    /* 2. the renames */
    mcg_agent_testpoint("temps-synced");
    size_t done = 0;
    for (; done < b->n && !rc; done++) {
        const pending *p = &b->p[done];
        if (renameat(b->fds[p->slot], p->tmp, b->fds[p->slot], base_of(p->e->path)) != 0)
            rc = mcg_err_set_os(err, MCG_EIO, errno, "/%s", p->e->path);
        mcg_agent_testpoint(done == 0 ? "renamed-one" : "renamed-more");
    }
    if (rc) {
        for (size_t i = done ? done - 1 : 0; i < b->n; i++)
            unlinkat(b->fds[b->p[i].slot], b->p[i].tmp, 0);
    }
    /* the new names become durable with the next syncfs (mcg_sroot_sync at
     * the end at the latest): no fsync per directory */
    for (int i = 0; i < b->ndirs; i++) {
        close(b->fds[i]);
        free(b->paths[i]);
    }
    b->st->written += rc ? 0 : b->n;
    b->n = 0;
    b->ndirs = 0;
    return rc;
}

/*
 * The batch's slot of the directory dfd holding e (base: e's name in it),
 * taken when the batch has none yet (flushing a batch of full slots).
 */
static int batch_slot(batch *b, int dfd, const mcg_ent *e, const char *base, int *out, mcg_err *err)
{
    size_t dl = (size_t)(base - e->path);
    int rc, slot = -1;
    for (int i = b->ndirs - 1; i >= 0 && slot < 0; i--)
        if (strlen(b->paths[i]) == dl && !memcmp(b->paths[i], e->path, dl))
            slot = i;
    if (slot < 0) {
        if (b->ndirs == BATCH_DIRS && (rc = batch_flush(b, err)) != 0)
            return rc;
        struct stat st;
        int fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0 || fstat(fd, &st) != 0) {
            if (fd >= 0)
                close(fd);
            return mcg_err_set_os(err, MCG_EIO, errno, "/%s", e->path);
        }
        slot = b->ndirs++;
        b->fds[slot] = fd;
        b->devs[slot] = st.st_dev;
        b->gids[slot] = st.st_gid;
        b->paths[slot] = mcg_strndup(e->path, dl);
    }
    *out = slot;
    return 0;
}

static int batch_add(batch *b, mcg_sroot *r, const mcg_ent *e, mcg_err *err)
{
    int dfd, slot = -1;
    const char *base;
    int rc = mcg_sroot_parent(r, e->path, true, &dfd, &base, err);
    if (rc || (rc = batch_slot(b, dfd, e, base, &slot, err)) != 0)
        return rc;
    pending *p = &b->p[b->n];
    p->e = e;
    p->slot = slot;
    mcg_agent_tmpname(base, p->tmp);
    /* A new temp file is created with its mode, and is owned by the process,
     * its group the process's or the directory's: when those are the wanted
     * ones, no chmod or chown is needed. One a killed agent left is reused
     * and always gets both. */
    mode_t mode = (mode_t)e->mode;
    int fd =
        openat(b->fds[slot], p->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    bool fresh = fd >= 0;
    if (fd < 0 && errno == EEXIST)
        fd = openat(b->fds[slot], p->tmp, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return mcg_err_set_os(err, MCG_EIO, errno, "/%s", e->path);
    b->n++; /* from here on the temp file is ours to remove on failure */
    bool set_mode = !fresh || (mode & b->umask) != 0;
    bool set_owner =
        b->as_root && (!fresh || e->uid != b->euid || e->gid != b->egid || e->gid != b->gids[slot]);
    if (mcg_write_all(fd, e->data, e->len) != 0 || (set_mode && fchmod(fd, mode) != 0) ||
        (set_owner && fchown(fd, e->uid, e->gid) != 0))
        rc = mcg_err_set_os(err, MCG_EIO, errno, "/%s", e->path);
    close(fd);
    if (!rc && b->n == BATCH_FILES)
        rc = batch_flush(b, err);
    return rc;
}

static int write_dir(mcg_sroot *r, const mcg_ent *e, bool as_root, mcg_err *err)
{
    int fd;
    int rc = mcg_sroot_opendir(r, e->path, true, e->mode, &fd, err);
    if (rc)
        return rc;
    struct stat st;
    if (fstat(fd, &st) != 0 ||
        ((st.st_mode & 07777) != (mode_t)e->mode && fchmod(fd, (mode_t)e->mode) != 0) ||
        (as_root && (st.st_uid != e->uid || st.st_gid != e->gid) &&
         fchown(fd, e->uid, e->gid) != 0))
        rc = mcg_err_set_os(err, MCG_EIO, errno, "/%s", e->path);
    close(fd);
    return rc;
}

static int write_link(mcg_sroot *r, const mcg_ent *e, bool as_root, mcg_err *err)
{
    int dfd, rc;
    const char *base;
    char tmp[64];
    if (e->kind == MCG_ENT_HARDLINK) {
        int tfd;
        const char *tb;
        if ((rc = mcg_sroot_parent(r, e->target, false, &tfd, &tb, err)) != 0)
            return mcg_err_prefix(err, "hard link /%s", e->path);
        int keep = fcntl(tfd, F_DUPFD_CLOEXEC, 3);
        char *tbase = mcg_strdup(tb);
        if ((rc = mcg_sroot_parent(r, e->path, true, &dfd, &base, err)) == 0) {
            mcg_agent_tmpname(base, tmp);
            unlinkat(dfd, tmp, 0);
            if (linkat(keep, tbase, dfd, tmp, 0) != 0 || renameat(dfd, tmp, dfd, base) != 0) {
                rc = mcg_err_set_os(err, MCG_EIO, errno, "/%s", e->path);
                unlinkat(dfd, tmp, 0);
            }
        }
        free(tbase);
        close(keep);
        return rc;
    }
    if ((rc = mcg_sroot_parent(r, e->path, true, &dfd, &base, err)) != 0)
        return rc;
    char cur[4096];
    ssize_t n = readlinkat(dfd, base, cur, sizeof(cur) - 1);
    if (n >= 0 && (size_t)n == strlen(e->target) && !memcmp(cur, e->target, (size_t)n) && !as_root)
        return 0;
    mcg_agent_tmpname(base, tmp);
    unlinkat(dfd, tmp, 0);
    if (symlinkat(e->target, dfd, tmp) != 0 ||
        (as_root && fchownat(dfd, tmp, e->uid, e->gid, AT_SYMLINK_NOFOLLOW) != 0) ||
        renameat(dfd, tmp, dfd, base) != 0) {
        rc = mcg_err_set_os(err, MCG_EIO, errno, "/%s", e->path);
        unlinkat(dfd, tmp, 0);
    }
    return rc;
}

static int remove_path(mcg_sroot *r, const mcg_ent *e, bool only_symlink, mcg_err *err)
{
    int dfd;
    const char *base;
    int rc = mcg_sroot_parent(r, e->path, false, &dfd, &base, err);
    if (rc == MCG_ENOTFOUND)
        return 0;
    if (rc)
        return rc;
    struct stat st;
    if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISDIR(st.st_mode))
        return 0;
    if (only_symlink && !S_ISLNK(st.st_mode))
        return 0;
    if (unlinkat(dfd, base, 0) != 0 && errno != ENOENT)
        return mcg_err_set_os(err, MCG_EIO, errno, "/%s", e->path);
    return 0;
}

/*
 * Remove the directories in created that cfg does not need, deepest first
 * (in reverse sorted order a directory comes after everything below it),
 * when they are empty. Whatever is not removed — not empty, gone, turned
 * into something else — stops being mcgit's. Leaves created sorted.
 */
static void prune_dirs(mcg_sroot *r, const mcg_acfg *cfg, mcg_strv *created, mcg_exec_stats *st)
{
    mcg_strv need = {0}, keep = {0};
    needed_dirs(cfg, &need);
    sort_unique(created);
    mcg_sroot_forget(r);
    for (size_t i = created->n; i-- > 0;) {
        const char *d = created->v[i];
        if (mcg_sorted_has(&need, d)) {
            mcg_strv_push(&keep, d);
            continue;
        }
        int dfd;
        const char *base;
        mcg_err e = {0};
        if (mcg_sroot_parent(r, d, false, &dfd, &base, &e) == 0 &&
            unlinkat(dfd, base, AT_REMOVEDIR) == 0)
            st->removed++;
    }
    mcg_sroot_forget(r);
    mcg_strv_free(created);
    for (size_t i = keep.n; i-- > 0;)
        mcg_strv_push(created, keep.v[i]);
    mcg_strv_free(&keep);
    mcg_strv_free(&need);
}

/* Whether e is to be written: forced, new, or changed since old. */
static bool exec_changed(const mcg_acfg *old, const mcg_ent *e, bool force)
{
    const mcg_ent *o = mcg_acfg_find(old, e->path);
    return force || !o || !mcg_ent_equal(o, e);
}

/* 1. Backups of what was there before mcgit, durable before any overwrite. */
static int exec_backups(mcg_sroot *r, int statefd, const mcg_plan_disk *disk, mcg_err *err)
{
    int rc;
    bool any_backup = false;
    for (size_t i = 0; i < disk->backups.n; i++) {
        if (backup_exists(statefd, disk->backups.v[i]))
            continue;
        if ((rc = take_backup(r, statefd, disk->backups.v[i], err)) != 0)
            return rc;
        any_backup = true;
    }
    if (any_backup && fsync(statefd) != 0)
        return mcg_err_set_os(err, MCG_EIO, errno, "state directory: fsync");
    mcg_agent_testpoint("backups-taken");
    return 0;
}

/* 2. Directories, parents first (sorted by path). */
static int exec_dirs(batch *b, mcg_sroot *r, const mcg_acfg *old, const mcg_acfg *new_cfg,
                     bool force, mcg_err *err)
{
    int rc;
    for (size_t i = 0; i < new_cfg->n; i++) {
        const mcg_ent *e = &new_cfg->ents[i];
        if (e->kind == MCG_ENT_DIR && exec_changed(old, e, force)) {
            if ((rc = write_dir(r, e, b->as_root, err)) != 0)
                return rc;
            b->st->written++;
        }
    }
    return 0;
}

/* 3. Paths leaving the config: restore what mcgit found there, or remove. */
static int exec_leaving(batch *b, mcg_sroot *r, int statefd, const mcg_acfg *old,
                        const mcg_acfg *new_cfg, const mcg_plan_disk *disk, mcg_err *err)
{
    int rc;
    for (size_t i = 0; old && i < old->n; i++) {
        const mcg_ent *o = &old->ents[i];
        if (o->kind == MCG_ENT_DIR || mcg_acfg_find(new_cfg, o->path))
            continue;
        if (mcg_sorted_has(&disk->restores, o->path))
            rc = restore_backup(r, statefd, o->path, err);
        else if (o->kind == MCG_ENT_ABSENT || o->kind == MCG_ENT_REMOVED)
            continue; /* mcgit kept it away, and nothing was there before */
        else
            rc = remove_path(r, o, false, err);
        if (rc)
            return rc;
        b->st->removed++;
    }
    return 0;
}

/* 4. Files, in synced batches. */
static int exec_files(batch *b, mcg_sroot *r, const mcg_acfg *old, const mcg_acfg *new_cfg,
                      bool force, mcg_err *err)
{
    int rc;
    for (size_t i = 0; i < new_cfg->n; i++) {
        const mcg_ent *e = &new_cfg->ents[i];
        if (e->kind == MCG_ENT_FILE && exec_changed(old, e, force))
            if ((rc = batch_add(b, r, e, err)) != 0)
                return rc;
    }
    return batch_flush(b, err);
}

/* 5. Links, and links that must go. */
static int exec_links(batch *b, mcg_sroot *r, const mcg_acfg *old, const mcg_acfg *new_cfg,
                      bool force, mcg_err *err)
{
    int rc;
    for (size_t i = 0; i < new_cfg->n; i++) {
        const mcg_ent *e = &new_cfg->ents[i];
        if (e->kind == MCG_ENT_FILE || e->kind == MCG_ENT_DIR || !exec_changed(old, e, force))
            continue;
        if (e->kind == MCG_ENT_ABSENT || e->kind == MCG_ENT_REMOVED)
            rc = remove_path(r, e, e->kind == MCG_ENT_ABSENT, err);
        else
            rc = write_link(r, e, b->as_root, err);
        if (rc)
            return rc;
        b->st->written++;
    }
    return 0;
}

int mcg_plan_execute(mcg_sroot *r, int statefd, const mcg_acfg *old, const mcg_acfg *new_cfg,
                     const mcg_plan_disk *disk, bool force, mcg_strv *created, mcg_exec_stats *st,
                     mcg_err *err)
{
    int rc = 0;
    batch b;
    memset(&b, 0, sizeof(b));
    b.as_root = geteuid() == 0;
    b.umask = umask(0);
    umask(b.umask);
    b.euid = geteuid();
    b.egid = getegid();
    b.st = st;
    b.p = mcg_calloc(BATCH_FILES, sizeof(*b.p));
    mcg_sroot_forget(r);
    /* directories the journal says this update makes are mcgit's from now on,
     * and so is any other one made on the way */
    for (size_t i = 0; i < disk->mkdirs.n; i++)
        mcg_strv_push(created, disk->mkdirs.v[i]);
    r->made = created;
    if ((rc = exec_backups(r, statefd, disk, err)) != 0 ||
        (rc = exec_dirs(&b, r, old, new_cfg, force, err)) != 0 ||
        (rc = exec_leaving(&b, r, statefd, old, new_cfg, disk, err)) != 0 ||
        (rc = exec_files(&b, r, old, new_cfg, force, err)) != 0 ||
        (rc = exec_links(&b, r, old, new_cfg, force, err)) != 0)
        goto out;
    /* 6. directories mcgit made that the config no longer needs */
    prune_dirs(r, new_cfg, created, st);
    /* 7. everything above (renames, links, removals, directories), durable:
     * one syncfs per filesystem a change went through */
    rc = mcg_sroot_sync(r, err);
    mcg_agent_testpoint("files-synced");
out:
    if (rc)
        batch_discard(&b);
    free(b.p);
    r->made = NULL;
    mcg_sroot_forget(r);
    return rc;
}

void mcg_plan_clean_temps(mcg_sroot *r, const mcg_acfg *cfg)
{
    mcg_err e = {0};
    mcg_sroot_forget(r);
    for (size_t i = 0; cfg && i < cfg->n; i++) {
        int dfd;
        const char *base;
        if (mcg_sroot_parent(r, cfg->ents[i].path, false, &dfd, &base, &e) != 0)
            continue;
        char tmp[64];
        mcg_agent_tmpname(base, tmp);
        unlinkat(dfd, tmp, 0);
    }
    mcg_sroot_forget(r);
}

/* ------------------------------------------------------------ drift */

static void mode_str(char out[16], mode_t m)
{
    const char *t = S_ISREG(m)   ? "file"
                    : S_ISDIR(m) ? "directory"
                    : S_ISLNK(m) ? "symlink"
                                 : "special";
    snprintf(out, 16, "%s %04o", t, (unsigned)(m & 07777));
}

/* fd holds exactly the len bytes at want (read bufsz at a time into buf). */
static bool same_content(int fd, const unsigned char *want, size_t len, char *buf, size_t bufsz)
{
    size_t off = 0;
    for (;;) {
        ssize_t n = read(fd, buf, bufsz);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return false;
        if (n == 0)
            return off == len;
        if (off + (size_t)n > len || memcmp(buf, want + off, (size_t)n) != 0)
            return false;
        off += (size_t)n;
    }
}

/* Append "what" to a path's message, parts joined by " and ". */
static void part(mcg_buf *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void part(mcg_buf *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (m->len)
        mcg_buf_puts(m, " and ");
    mcg_buf_vprintf(m, fmt, ap);
    va_end(ap);
}

static void owner_part(mcg_buf *m, const struct stat *st, const mcg_ent *e)
{
    if (st->st_uid != e->uid || st->st_gid != e->gid)
        part(m, "owner %u:%u, want %u:%u", (unsigned)st->st_uid, (unsigned)st->st_gid,
             (unsigned)e->uid, (unsigned)e->gid);
}

/* "mode HAVE, want WANT" unless the mode is the wanted one. */
static void mode_part(mcg_buf *m, mode_t have_mode, mode_t want_mode)
{
    char have[16], want[16];
    if (have_mode == want_mode)
        return;
    mode_str(have, have_mode);
    mode_str(want, want_mode);
    part(m, "mode %s, want %s", have, want);
}

/* What the scratch buffers of a drift check hold, and whether owners count. */
typedef struct {
    char *buf;
    size_t bufsz;
    bool owners; /* owners are only set by an agent running as root: only then are they checked */
} drift_bufs;

/* A file: type, mode, owner, size and content. */
static void drift_file(mcg_buf *m, int dfd, const char *base, const mcg_ent *e, const drift_bufs *d)
{
    struct stat st;
    int fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT)
            part(m, "missing");
        else if (errno == ELOOP)
            part(m, "is a symbolic link, want a file");
        else
            part(m, "%s", strerror(errno));
        return;
    }
    if (fstat(fd, &st) != 0) {
        part(m, "%s", strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        char have[16], want[16];
        mode_str(have, st.st_mode);
        mode_str(want, S_IFREG | (mode_t)e->mode);
        part(m, "mode %s, want %s", have, want);
    } else {
        mode_part(m, st.st_mode, S_IFREG | (mode_t)e->mode);
        if (d->owners)
            owner_part(m, &st, e);
        if ((size_t)st.st_size != e->len || !same_content(fd, e->data, e->len, d->buf, d->bufsz))
            part(m, "content differs");
    }
    close(fd);
}

/* A directory: type, mode and owner. */
static void drift_dir(mcg_buf *m, int dfd, const char *base, const mcg_ent *e, bool owners)
{
    struct stat st;
    if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        part(m, "missing");
        return;
    }
    mode_part(m, st.st_mode, S_IFDIR | (mode_t)e->mode);
    if (owners && S_ISDIR(st.st_mode))
        owner_part(m, &st, e);
}

/* A symbolic link: its target and owner. */
static void drift_symlink(mcg_buf *m, int dfd, const char *base, const mcg_ent *e, bool owners)
{
    struct stat st;
    char cur[4096];
    ssize_t n = readlinkat(dfd, base, cur, sizeof(cur) - 1);
    if (n < 0) {
        if (errno == ENOENT)
            part(m, "missing");
        else
            part(m, "not a symbolic link, want a link to %s", e->target);
        return;
    }
    cur[n] = '\0';
    if (strcmp(cur, e->target))
        part(m, "link to %s, want %s", cur, e->target);
    if (owners && fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0)
        owner_part(m, &st, e);
}

/* A hard link: the same inode as its target (its owner and mode are the
 * target's, checked with the target). */
static void drift_hardlink(mcg_buf *m, mcg_sroot *r, int dfd, const char *base, const mcg_ent *e)
{
    struct stat st, ts;
    int tfd;
    const char *tb;
    mcg_err pe = {0};
    if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        part(m, "missing");
        return;
    }
    dev_t dev = st.st_dev;
    ino_t ino = st.st_ino;
    if (mcg_sroot_parent(r, e->target, false, &tfd, &tb, &pe) != 0 ||
        fstatat(tfd, tb, &ts, AT_SYMLINK_NOFOLLOW) != 0 || ts.st_dev != dev || ts.st_ino != ino)
        part(m, "not a hard link to /%s", e->target);
}

/* How the disk differs from entry e, into m (empty: it does not). */
static void drift_entry(mcg_buf *m, mcg_sroot *r, const mcg_ent *e, const drift_bufs *d)
{
    int dfd;
    const char *base;
    mcg_err pe = {0};
    struct stat st;
    int rc = mcg_sroot_parent(r, e->path, false, &dfd, &base, &pe);
    if (rc) {
        if ((e->kind == MCG_ENT_ABSENT || e->kind == MCG_ENT_REMOVED) && rc == MCG_ENOTFOUND)
            return;
        if (rc == MCG_ENOTFOUND)
            part(m, "missing");
        else
            mcg_buf_puts(m, pe.msg); /* "/etc: is a symbolic link ..." */
        return;
    }
    switch (e->kind) {
    case MCG_ENT_FILE:
        drift_file(m, dfd, base, e, d);
        break;
    case MCG_ENT_DIR:
        drift_dir(m, dfd, base, e, d->owners);
        break;
    case MCG_ENT_SYMLINK:
        drift_symlink(m, dfd, base, e, d->owners);
        break;
    case MCG_ENT_HARDLINK:
        drift_hardlink(m, r, dfd, base, e);
        break;
    case MCG_ENT_ABSENT:
        if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
            part(m, "present, want absent (unit disabled)");
        break;
    case MCG_ENT_REMOVED:
        if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode))
            part(m, "present, want absent (core's keys are only the rendered ones)");
        break;
    }
}

static void drift_bufs_init(drift_bufs *d)
{
    d->bufsz = 1u << 17;
    d->buf = mcg_malloc(d->bufsz);
    d->owners = geteuid() == 0;
}

void mcg_plan_decide_first(mcg_disruption *out, mcg_sroot *r, const mcg_acfg *new_cfg,
                           const mcg_disruption_policy *policy)
{
    drift_bufs d;
    drift_bufs_init(&d);
    mcg_buf m = MCG_BUF_INIT;
    memset(out, 0, sizeof(*out));
    mcg_sroot_forget(r);
    for (size_t i = 0; i < new_cfg->n; i++) {
        m.len = 0;
        drift_entry(&m, r, &new_cfg->ents[i], &d);
        if (m.len) /* differs from the disk: it changes */
            decide_one(out, &new_cfg->ents[i], policy);
    }
    mcg_sroot_forget(r);
    mcg_disruption_finish(out);
    mcg_buf_free(&m);
    free(d.buf);
}

int mcg_drift_check(mcg_sroot *r, const mcg_acfg *cfg, mcg_strv *out, mcg_err *err)
{
    (void)err;
    drift_bufs d;
    drift_bufs_init(&d);
    mcg_buf m = MCG_BUF_INIT;
    mcg_sroot_forget(r);
    for (size_t i = 0; i < cfg->n; i++) {
        const mcg_ent *e = &cfg->ents[i];
        m.len = 0;
        drift_entry(&m, r, e, &d);
        if (m.len) {
            char *msg = mcg_sprintf("/%s: %s", e->path, m.ptr);
            mcg_strv_push(out, msg);
            free(msg);
        }
    }
    mcg_sroot_forget(r);
    mcg_buf_free(&m);
    free(d.buf);
    return 0;
}
