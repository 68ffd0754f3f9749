/*
 * local.c — the embedded `local:DIR` cluster backend.
 *
 * DIR holds Kubernetes-shaped JSON objects, one file each:
 *   nodes/<name>.json            Node (labels, annotations, unschedulable, Ready)
 *   configs/<rendered-name>.json published rendered configs (canonical spec bytes)
 *   configs/.meta/<rendered-name>.json  their metadata: owner pool, version
 *   pools/<pool>.json            MachineConfigPool with status
 *   machineconfiguration.json    the MachineConfiguration "cluster" spec
 *   sync.json                    operator sync requests and the controller's answer
 *   events.jsonl                 events, one JSON object a line, oldest first
 *                                (events.jsonl.1: the previous MiB of them)
 *   roots/<name>/                simulated nodes' root filesystems
 * Every write is atomic (temp file, fsync, rename) and every
 * read-modify-write of a node holds an exclusive flock on DIR/.lock, so a
 * controller, many agents and `mcgit node` can share DIR without lost
 * updates. Reading one object needs no lock (a rename is atomic: the old
 * object or the new one); listing the nodes holds the lock shared, so the
 * list is one consistent snapshot. Config and policy objects have one
 * writer, the controller, and are written whole; a pool object is written
 * by the controller under the lock keeping its annotations and spec.paused,
 * which an operator's `mcgit pool pause` sets (read-modify-write under the
 * lock; each change of spec moves metadata.generation, as on kube),
 * and sync.json is read-modify-written under the lock by both.
 *
 * DIR and its subdirectories are created by the first write; reading a DIR
 * that does not exist is an error, so a mistyped --cluster creates nothing.
 *
 * Names reach these ops already checked by the wrappers (cluster.c), so they
 * are safe in paths; only names read back from DIR (a listing) are checked
 * here. The backend has no leader election: one controller per DIR.
 */
#include "cluster/cluster_int.h"
#include "fsio/fsio.h"
#include "osenv/osenv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_OBJECT (4u * 1024u * 1024u)

/* What a reader last saw of one node file: changed by every (atomic) write. */
typedef struct seen_node {
    char *name;
    ino_t ino;
    off_t size;
    struct timespec mtime;
} seen_node;

/* The node files as a reader last saw them (sorted by name). */
typedef struct seen_set {
    seen_node *v;
    size_t n;
    bool valid;
} seen_set;

typedef struct local {
    mcg_cluster base;
    char *dir;
    bool made;      /* the subdirectories exist (made on the first write) */
    int ifd;        /* inotify on DIR/nodes for wait_change, -1 until first needed */
    seen_set one;   /* the node get_node read last (one entry) */
    seen_set all;   /* every node, as list_nodes read them */
    seen_node sync; /* DIR/sync.json as get_sync read it (or this process wrote it) */
    bool sync_valid;
} local;

/*
 * DIR and its subdirectories are made by the first write, not by opening:
 * a read-only command (`mcgit status`) pointed at a mistyped DIR creates
 * nothing and says the directory does not exist.
 */
static int ensure_dirs(local *l, mcg_err *err)
{
    static const char *const subs[] = {"nodes", "configs", "pools", "roots", NULL};
    if (l->made)
        return 0;
    for (const char *const *s = subs; *s; s++) {
        char *p = mcg_sprintf("%s/%s", l->dir, *s);
        int rc = mcg_mkdirs(p, 0755, err);
        free(p);
        if (rc) {
            mcg_err_prefix(err, "cluster %s", l->base.spec);
            return rc;
        }
    }
    l->made = true;
    return 0;
}

/* Reads of a cluster whose directory does not exist fail (nothing to read). */
static int check_dir(local *l, mcg_err *err)
{
    if (l->made || access(l->dir, F_OK) == 0)
        return 0;
    return mcg_err_set(err, MCG_ENOTFOUND, "cluster %s: %s: no such directory", l->base.spec,
                       l->dir);
}

/*
 * Take DIR/.lock: LOCK_EX for a read-modify-write, LOCK_SH for a
 * consistent read of many objects (no writer runs meanwhile). Returns the
 * descriptor, or -1 with err set. A shared lock on a directory no writer
 * has touched yet (no .lock) needs no lock: *fd is -1 and 0 is returned.
 */
static int lock_dir(local *l, int how, int *fd, mcg_err *err)
{
    *fd = -1;
    int rc;
    if (how == LOCK_EX && (rc = ensure_dirs(l, err)) != 0)
        return rc;
    char *p = mcg_sprintf("%s/.lock", l->dir);
    /* never blocking on a FIFO put in its place, never through a link */
    int f = how == LOCK_EX ? open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644)
                           : open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    free(p);
    if (f < 0 && how == LOCK_SH && errno == ENOENT)
        return 0;
    if (f < 0)
        return mcg_err_set_os(err, MCG_EIO, errno, "%s/.lock", l->dir);
    while (flock(f, how) != 0) {
        if (errno != EINTR) {
            int e = errno;
            close(f);
            return mcg_err_set_os(err, MCG_EIO, e, "%s/.lock", l->dir);
        }
    }
    *fd = f;
    return 0;
}

static void unlock_dir(int fd)
{
    if (fd >= 0) {
        flock(fd, LOCK_UN);
        close(fd);
    }
}

static int read_json(json_t **out, const char *path, mcg_err *err)
{
    char *data = NULL;
    size_t len = 0;
    *out = NULL;
    int rc = mcg_read_file(path, MAX_OBJECT, &data, &len, err);
    if (rc)
        return rc;
    json_error_t je;
    *out = json_loadb(data, len, 0, &je);
    free(data);
    if (!*out)
        return mcg_err_set(err, MCG_EINVAL, "%s:%d: invalid JSON: %s", path, je.line, je.text);
    return 0;
}

static int write_json(const char *path, const json_t *v, mcg_err *err)
{
    mcg_buf b = MCG_BUF_INIT;
    int rc = mcg_json_canonical(v, &b, err);
    if (!rc)
        rc = mcg_write_file_atomic(path, b.ptr, b.len, 0644, err);
    mcg_buf_free(&b);
    return rc;
}

static char *node_path(local *l, const char *name)
{
    return mcg_sprintf("%s/nodes/%s.json", l->dir, name);
}

/* Read one node object (name already checked). */
static int read_node(local *l, const char *name, mcg_node *out, mcg_err *err)
{
    memset(out, 0, sizeof(*out));
    char *p = node_path(l, name);
    json_t *o = NULL;
    int rc = read_json(&o, p, err);
    if (rc == MCG_ENOTFOUND)
        mcg_err_set(err, MCG_ENOTFOUND, "node '%s' not found", name);
    if (!rc)
        rc = mcg_node_from_json(out, o, err);
    json_decref(o);
    free(p);
    return rc;
}

/* ------------------------------------------------------------ change tracking */

/*
 * wait_change wakes a caller as soon as a node file it read changes, not at
 * the end of its interval: inotify on DIR/nodes, compared with what the
 * caller last saw (each file's inode, size and mtime; every write renames a
 * new file into place, so any write changes them). The process's own node
 * writes update what it saw, so an agent is not woken by its own report.
 */
static void seen_clear(seen_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i].name);
    free(s->v);
    memset(s, 0, sizeof(*s));
}

/* Stat DIR/nodes/NAME.json into e (a missing file: ino 0). */
static void stat_node(local *l, const char *name, seen_node *e)
{
    char *path = node_path(l, name);
    struct stat st;
    memset(e, 0, sizeof(*e));
    if (lstat(path, &st) == 0) {
        e->ino = st.st_ino;
        e->size = st.st_size;
        e->mtime = st.st_mtim;
    }
    free(path);
}

/* Stat DIR/sync.json into e (missing: ino 0). */
static void stat_sync(local *l, seen_node *e)
{
    char *path = mcg_sprintf("%s/sync.json", l->dir);
    struct stat st;
    memset(e, 0, sizeof(*e));
    if (lstat(path, &st) == 0) {
        e->ino = st.st_ino;
        e->size = st.st_size;
        e->mtime = st.st_mtim;
    }
    free(path);
}

static bool same_node(const seen_node *a, const seen_node *b)
{
    return a->ino == b->ino && a->size == b->size && a->mtime.tv_sec == b->mtime.tv_sec &&
           a->mtime.tv_nsec == b->mtime.tv_nsec;
}

/* Record names (sorted) as seen now into s. */
static void seen_record(local *l, seen_set *s, const mcg_strv *names)
{
    seen_clear(s);
    s->v = mcg_calloc(names->n ? names->n : 1, sizeof(*s->v));
    for (size_t i = 0; i < names->n; i++) {
        stat_node(l, names->v[i], &s->v[s->n]);
        s->v[s->n++].name = mcg_strdup(names->v[i]);
    }
    s->valid = true;
}

/* The node names in DIR/nodes, sorted. */
static void node_names(local *l, mcg_strv *out)
{
    char *d = mcg_sprintf("%s/nodes", l->dir);
    DIR *dh = opendir(d);
    free(d);
    if (!dh)
        return;
    struct dirent *de;
    while ((de = readdir(dh))) {
        size_t len = strlen(de->d_name);
        if (de->d_name[0] != '.' && len > 5 && !strcmp(de->d_name + len - 5, ".json")) {
            char *nm = mcg_strndup(de->d_name, len - 5);
            if (mcg_name_is_dns_subdomain(nm))
                mcg_strv_push(out, nm);
            free(nm);
        }
    }
    closedir(dh);
    mcg_strv_sort(out);
}

/* Whether the files of s differ from what s recorded (or the set of names does). */
static bool seen_changed(local *l, const seen_set *s, bool whole_dir)
{
    mcg_strv names = {0};
    bool changed = false;
    if (whole_dir) {
        node_names(l, &names);
        changed = names.n != s->n;
        for (size_t i = 0; !changed && i < names.n; i++)
            changed = strcmp(names.v[i], s->v[i].name) != 0;
    }
    for (size_t i = 0; !changed && i < s->n; i++) {
        seen_node now;
        stat_node(l, s->v[i].name, &now);
        changed = !same_node(&now, &s->v[i]);
    }
    mcg_strv_free(&names);
    return changed;
}

/* After this process wrote node name: what it wrote counts as seen. */
static void seen_own_write(local *l, const char *name)
{
    seen_set *sets[] = {&l->one, &l->all};
    for (size_t k = 0; k < 2; k++)
        for (size_t i = 0; i < sets[k]->n; i++)
            if (!strcmp(sets[k]->v[i].name, name)) {
                seen_node now;
                stat_node(l, name, &now);
                now.name = sets[k]->v[i].name; /* kept */
                sets[k]->v[i] = now;
            }
}

/*
 * Block until a node the caller read changes (1), the timeout passes (0),
 * or the stop flag is set (0). Without inotify (or DIR/nodes), a sleep.
 */
static int l_wait_change(mcg_cluster *c, const char *node, long timeout_ms, mcg_err *err)
{
    local *l = (local *)c;
    (void)err;
    struct timespec start;
    mcg_mono_now(&start);
    if (l->ifd < 0) {
        char *d = mcg_sprintf("%s/nodes", l->dir);
        l->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (l->ifd >= 0 &&
            inotify_add_watch(
                l->ifd, d, IN_MOVED_TO | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_ATTRIB) < 0) {
            close(l->ifd);
            l->ifd = -1;
        }
        free(d);
        /* the controller (node NULL) also wakes on an operator's sync.json */
        if (l->ifd >= 0 && !node)
            (void)inotify_add_watch(l->ifd, l->dir, IN_MOVED_TO);
    }
    seen_set *s = node ? &l->one : &l->all;
    if (!node && !l->sync_valid) {
        stat_sync(l, &l->sync);
        l->sync_valid = true;
    }
    if (node && !(s->valid && s->n == 1 && !strcmp(s->v[0].name, node))) {
        mcg_strv one = {0};
        mcg_strv_push(&one, node);
        seen_record(l, s, &one); /* nothing read yet: from now on */
        mcg_strv_free(&one);
    } else if (!node && !s->valid) {
        mcg_strv names = {0};
        node_names(l, &names);
        seen_record(l, s, &names);
        mcg_strv_free(&names);
    }
    for (;;) {
        char buf[4096];
        if (l->ifd >= 0)
            while (read(l->ifd, buf, sizeof(buf)) > 0)
                ; /* drained: what counts is the comparison below */
        if (seen_changed(l, s, node == NULL))
            return 1;
        if (!node) {
            seen_node now;
            stat_sync(l, &now);
            if (!same_node(&now, &l->sync))
                return 1;
        }
        struct timespec now;
        mcg_mono_now(&now);
        long gone =
            (long)((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000);
        long left = timeout_ms - gone;
        if (left <= 0 || (c->stop && *c->stop))
            return 0;
        struct pollfd pfd = {l->ifd, POLLIN, 0};
        int slice =
            (int)(left < 200 ? left : 200); /* the stop flag is looked at 5 times a second */
        if (l->ifd >= 0)
            (void)poll(&pfd, 1, slice);
        else {
            struct timespec ts = {0, (long)slice * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
}

static int l_get_node(mcg_cluster *c, const char *name, mcg_node *out, mcg_err *err)
{
    local *l = (local *)c;
    int rc = check_dir(l, err);
    if (rc)
        return rc;
    /* seen before read: a write in between shows as a change, never as none */
    mcg_strv one = {0};
    mcg_strv_push(&one, name);
    seen_record(l, &l->one, &one);
    mcg_strv_free(&one);
    return read_node(l, name, out, err);
}

/*
 * Every node, sorted by name, as one snapshot: the listing holds the shared
 * lock, so no read-modify-write lands half-way through it and the planner
 * never sees one node before and another after the same instant.
 */
static int l_list_nodes(mcg_cluster *c, mcg_node **out, size_t *n, mcg_err *err)
{
    local *l = (local *)c;
    int lk, rc;
    if ((rc = check_dir(l, err)) != 0 || (rc = lock_dir(l, LOCK_SH, &lk, err)) != 0)
        return rc;
    char *d = mcg_sprintf("%s/nodes", l->dir);
    DIR *dh = opendir(d);
    free(d);
    if (!dh) {
        int e = errno;
        unlock_dir(lk);
        return e == ENOENT ? 0 : mcg_err_set_os(err, MCG_EIO, e, "%s/nodes", l->dir);
    }
    mcg_strv names = {0};
    struct dirent *de;
    while ((de = readdir(dh))) {
        size_t len = strlen(de->d_name);
        if (de->d_name[0] != '.' && len > 5 && !strcmp(de->d_name + len - 5, ".json")) {
            char *nm = mcg_strndup(de->d_name, len - 5);
            mcg_strv_push(&names, nm);
            free(nm);
        }
    }
    closedir(dh);
    mcg_strv_sort(&names);
    {
        /* under the shared lock: exactly what is read (no writer meanwhile) */
        mcg_strv valid = {0};
        for (size_t i = 0; i < names.n; i++)
            if (mcg_name_is_dns_subdomain(names.v[i]))
                mcg_strv_push(&valid, names.v[i]);
        seen_record(l, &l->all, &valid);
        mcg_strv_free(&valid);
    }
    mcg_node *nodes = mcg_calloc(names.n ? names.n : 1, sizeof(*nodes));
    size_t k = 0;
    for (size_t i = 0; i < names.n; i++) {
        if (!mcg_name_is_dns_subdomain(names.v[i]))
            continue; /* not ours */
        int r = read_node(l, names.v[i], &nodes[k], err);
        if (r == MCG_ENOTFOUND)
            continue; /* removed meanwhile */
        if (r) {
            rc = r;
            break;
        }
        k++;
    }
    unlock_dir(lk);
    mcg_strv_free(&names);
    if (rc) {
        mcg_nodes_free(nodes, k);
        return rc;
    }
    *out = nodes;
    *n = k;
    return 0;
}

static void set_ann(json_t *ann, const char *key, const char *val)
{
    if (!val)
        return;
    if (*val)
        json_object_set_new(ann, key, json_string(val));
    else
        json_object_del(ann, key);
}

/*
 * Read-modify-write of one node object under the directory lock: edit()
 * changes the parsed object (or refuses with an error), then it is written
 * back atomically.
 */
typedef int (*node_edit_fn)(json_t *node, const char *name, const void *arg, mcg_err *err);

static int modify_node(local *l, const char *name, node_edit_fn edit, const void *arg, mcg_err *err)
{
    int lk, rc;
    if ((rc = check_dir(l, err)) != 0 || (rc = lock_dir(l, LOCK_EX, &lk, err)) != 0)
        return rc;
    char *path = node_path(l, name);
    json_t *o = NULL;
    rc = read_json(&o, path, err);
    if (rc == MCG_ENOTFOUND)
        mcg_err_set(err, MCG_ENOTFOUND, "node '%s' not found", name);
    if (!rc)
        rc = edit(o, name, arg, err);
    if (!rc)
        rc = write_json(path, o, err);
    if (!rc)
        seen_own_write(l, name);
    json_decref(o);
    free(path);
    unlock_dir(lk);
    return rc;
}

static int edit_patch(json_t *o, const char *name, const void *arg, mcg_err *err)
{
    const mcg_node_patch *p = arg;
    json_t *md = json_object_get(o, "metadata");
    json_t *ann = json_object_get(md, "annotations");
    if (!json_is_object(ann)) {
        ann = json_object();
        json_object_set_new(md, "annotations", ann);
    }
    if (p->bound_machine_id && *p->bound_machine_id) {
        /* under the lock: a node bound to another host stays bound to it */
        json_t *b = json_object_get(ann, MCG_ANN_MACHINE_ID);
        if (json_is_string(b) && *json_string_value(b) &&
            strcmp(json_string_value(b), p->bound_machine_id) != 0)
            return mcg_err_set(err, MCG_ECONFLICT, "node '%s' is bound to machine-id %s", name,
                               json_string_value(b));
    }
    if (p->if_desired) {
        json_t *d = json_object_get(ann, MCG_ANN_DESIRED);
        const char *cur = json_is_string(d) ? json_string_value(d) : "";
        if (strcmp(cur, p->if_desired) != 0)
            return mcg_err_set(err, MCG_ECONFLICT, "node '%s': desiredConfig changed", name);
    }
    set_ann(ann, MCG_ANN_DESIRED, p->desired);
    set_ann(ann, MCG_ANN_CURRENT, p->current);
    set_ann(ann, MCG_ANN_STATE, p->state);
    set_ann(ann, MCG_ANN_REASON, p->reason);
    set_ann(ann, MCG_ANN_MACHINE_ID, p->bound_machine_id);
    set_ann(ann, MCG_ANN_NODE_KEY, p->node_key);
    set_ann(ann, MCG_ANN_ATTESTATION, p->attestation);
    char *failure = mcg_node_failure_value(p->failed_check, p->failed_config);
    set_ann(ann, MCG_ANN_HEALTH_FAILURE, failure);
    free(failure);
    if (p->unschedulable >= 0)
        json_object_set_new(json_object_get(o, "spec"), "unschedulable",
                            json_boolean(p->unschedulable));
    if (p->ready >= 0) {
        /* the conditions only: status.nodeInfo (the node's identity) stays */
        json_t *st = json_object_get(o, "status");
        if (!json_is_object(st)) {
            st = json_object();
            json_object_set_new(o, "status", st);
        }
        json_object_set_new(
            st, "conditions",
            json_pack("[{s:s,s:s}]", "type", "Ready", "status", p->ready ? "True" : "False"));
    }
    return 0;
}

static int l_patch_node(mcg_cluster *c, const char *name, const mcg_node_patch *p, mcg_err *err)
{
    return modify_node((local *)c, name, edit_patch, p, err);
}

/* Write name under the directory dfd with data unless it exists (never
 * through a symbolic link); 0 when written or already there. */
static int seed_file(int dfd, const char *dir, const char *name, const char *data, mcg_err *err)
{
    int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return errno == EEXIST ? 0 : mcg_err_set_os(err, MCG_EIO, errno, "%s/%s", dir, name);
    size_t len = strlen(data);
    int rc = write(fd, data, len) == (ssize_t)len && fsync(fd) == 0 ? 0 : -1;
    if (rc)
        rc = mcg_err_set_os(err, MCG_EIO, errno, "%s/%s", dir, name);
    close(fd);
    return rc;
}

/*
 * A new simulated node's root: DIR/roots/NAME, whose etc/passwd and etc/group
 * name root and core (as a fresh RHCOS node's do) unless they are there
 * already, so that configs owned by root or core apply (the agent looks
 * owners up in the root's own files). Nothing is written through a symbolic
 * link.
 */
static int seed_root(local *l, const char *name, mcg_err *err)
{
    char *root = mcg_sprintf("%s/roots/%s", l->dir, name);
    char *etc = mcg_sprintf("%s/etc", root);
    int fd = -1, rc = mcg_mkdirs(root, 0755, err);
    if (!rc && mkdir(etc, 0755) != 0 && errno != EEXIST)
        rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", etc);
    if (!rc && (fd = open(etc, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 &&
        errno != ELOOP && errno != ENOTDIR) /* not a directory of its own: left alone */
        rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", etc);
    if (!rc && fd >= 0)
        rc = seed_file(fd, etc, "passwd",
                       "root:x:0:0:root:/root:/bin/bash\n"
                       "core:x:1000:1000:CoreOS Admin:/home/core:/bin/bash\n",
                       err);
    if (!rc && fd >= 0)
        rc = seed_file(fd, etc, "group", "root:x:0:\ncore:x:1000:\n", err);
    if (fd >= 0)
        close(fd);
    free(etc);
    free(root);
    return rc;
}

static int l_add_node(mcg_cluster *c, const char *name, const mcg_labels *labels, int64_t now,
                      mcg_err *err)
{
    local *l = (local *)c;
    int lk, rc;
    if ((rc = lock_dir(l, LOCK_EX, &lk, err)) != 0)
        return rc;
    char *path = node_path(l, name);
    if (access(path, F_OK) == 0) {
        rc = mcg_err_set(err, MCG_ECONFLICT, "node '%s' already exists", name);
        goto out;
    }
    mcg_node n = {0};
    n.name = (char *)name;
    n.labels = *labels;
    n.created = now;
    n.ready = true;
    json_t *o = mcg_node_to_json(&n);
    rc = write_json(path, o, err);
    json_decref(o);
    if (!rc)
        rc = seed_root(l, name, err);
out:
    free(path);
    unlock_dir(lk);
    return rc;
}

static int l_remove_node(mcg_cluster *c, const char *name, mcg_err *err)
{
    local *l = (local *)c;
    int lk, rc;
    if ((rc = check_dir(l, err)) != 0 || (rc = lock_dir(l, LOCK_EX, &lk, err)) != 0)
        return rc;
    char *path = node_path(l, name);
    if (unlink(path) != 0)
        rc = mcg_err_set(err, errno == ENOENT ? MCG_ENOTFOUND : MCG_EIO, "node '%s': %s", name,
                         errno == ENOENT ? "not found" : strerror(errno));
    free(path);
    unlock_dir(lk);
    return rc;
}

static int edit_labels(json_t *o, const char *name, const void *arg, mcg_err *err)
{
    (void)name;
    json_t *md = json_object_get(o, "metadata");
    json_t *have = json_object_get(md, "labels");
    mcg_labels l = {0};
    const char *k;
    json_t *v;
    json_object_foreach(have, k, v)
        if (json_is_string(v))
            mcg_labels_add(&l, k, json_string_value(v));
    mcg_labels_finish(&l);
    int rc = mcg_labels_parse_arg(&l, (const char *)arg, err);
    if (!rc) {
        json_t *lab = json_object();
        for (size_t i = 0; i < l.n; i++)
            json_object_set_new(lab, l.items[i].key, json_string(l.items[i].value));
        json_object_set_new(md, "labels", lab);
    }
    mcg_labels_free(&l);
    return rc;
}

static int l_label_node(mcg_cluster *c, const char *name, const char *edits, mcg_err *err)
{
    return modify_node((local *)c, name, edit_labels, edits, err);
}

/*
 * DIR/configs/.meta/NAME.json: the metadata of a published config (cluster.h),
 * written once: its owner pool, by name, and the version that made it.
 */
static int put_config_meta(local *l, const char *name, mcg_err *err)
{
    char *dir = mcg_sprintf("%s/configs/.meta", l->dir);
    char *path = mcg_sprintf("%s/%s.json", dir, name);
    char *pool = mcg_cluster_config_pool(name);
    int rc = 0;
    if (access(path, F_OK) != 0 && (rc = mcg_mkdirs(dir, 0755, err)) == 0) {
        json_t *md = json_pack("{s:s,s:{s:s}}", "name", name, "annotations", MCG_ANN_GENERATED_BY,
                               MCGIT_VERSION);
        if (pool)
            json_object_set_new(md, "ownerReferences",
                                json_pack("[{s:s,s:s,s:s,s:b}]", "apiVersion", MCG_API_OPENSHIFT,
                                          "kind", "MachineConfigPool", "name", pool, "controller",
                                          1));
        json_t *o = json_pack("{s:o}", "metadata", md);
        rc = write_json(path, o, err);
        json_decref(o);
    }
    free(pool);
    free(path);
    free(dir);
    return rc;
}

static int l_put_config(mcg_cluster *c, const char *name, const char *spec, size_t len,
                        mcg_err *err)
{
    local *l = (local *)c;
    int rc = ensure_dirs(l, err);
    if (rc)
        return rc;
    char *path = mcg_sprintf("%s/configs/%s.json", l->dir, name);
    rc = access(path, F_OK) == 0 ? 0 : mcg_write_file_atomic(path, spec, len, 0644, err);
    if (!rc)
        rc = put_config_meta(l, name, err);
    free(path);
    return rc;
}

static int l_get_config(mcg_cluster *c, const char *name, char **spec, size_t *len, mcg_err *err)
{
    local *l = (local *)c;
    char *path = mcg_sprintf("%s/configs/%s.json", l->dir, name);
    int rc = mcg_read_file(path, MAX_OBJECT, spec, len, err);
    if (rc == MCG_ENOTFOUND)
        mcg_err_set(err, MCG_ENOTFOUND, "rendered config '%s' is not published", name);
    free(path);
    return rc;
}

static int list_dir_json(local *l, const char *sub, mcg_strv *names, mcg_err *err)
{
    int rc = check_dir(l, err);
    if (rc)
        return rc;
    char *d = mcg_sprintf("%s/%s", l->dir, sub);
    DIR *dh = opendir(d);
    free(d);
    if (!dh)
        return errno == ENOENT ? 0 : mcg_err_set_os(err, MCG_EIO, errno, "%s/%s", l->dir, sub);
    struct dirent *de;
    while ((de = readdir(dh))) {
        size_t len = strlen(de->d_name);
        if (de->d_name[0] != '.' && len > 5 && !strcmp(de->d_name + len - 5, ".json")) {
            char *nm = mcg_strndup(de->d_name, len - 5);
            mcg_strv_push(names, nm);
            free(nm);
        }
    }
    closedir(dh);
    mcg_strv_sort(names);
    return 0;
}

static int l_list_configs(mcg_cluster *c, mcg_strv *names, mcg_err *err)
{
    return list_dir_json((local *)c, "configs", names, err);
}

/* Remove DIR/sub/name.json; an object already gone is not an error. */
static int remove_object(local *l, const char *sub, const char *name, mcg_err *err)
{
    char *path = mcg_sprintf("%s/%s/%s.json", l->dir, sub, name);
    int rc =
        unlink(path) == 0 || errno == ENOENT ? 0 : mcg_err_set_os(err, MCG_EIO, errno, "%s", path);
    free(path);
    return rc;
}

static int l_delete_config(mcg_cluster *c, const char *name, mcg_err *err)
{
    int rc = remove_object((local *)c, "configs", name, err);
    return rc ? rc : remove_object((local *)c, "configs/.meta", name, err);
}

/* metadata.generation of a pool object (1 when it has none). */
static json_int_t generation_of(const json_t *o)
{
    json_t *g = json_object_get(json_object_get(o, "metadata"), "generation");
    return json_is_integer(g) && json_integer_value(g) > 0 ? json_integer_value(g) : 1;
}

/*
 * metadata.generation as the API server keeps it: 1 at creation, one more
 * for each change of spec (old NULL: a new object).
 */
static void set_generation(json_t *o, const json_t *old)
{
    json_int_t gen = 1;
    if (old)
        gen = generation_of(old) +
              !json_equal(json_object_get(old, "spec"), json_object_get(o, "spec"));
    json_t *md = json_object_get(o, "metadata");
    if (json_is_object(md))
        json_object_set_new(md, "generation", json_integer(gen));
}

/*
 * What the controller's object takes from the one it replaces: the
 * annotations (it writes none, as on kube, where it patches spec and
 * status) and spec.paused, the operator's pause, never the controller's.
 */
static void keep_operator_fields(json_t *o, const json_t *old)
{
    json_t *ann = json_object_get(json_object_get(old, "metadata"), "annotations");
    json_t *md = json_object_get(o, "metadata");
    if (json_is_object(ann) && json_object_size(ann) && json_is_object(md))
        json_object_set(md, "annotations", ann);
    json_t *spec = json_object_get(o, "spec");
    json_t *paused = json_object_get(json_object_get(old, "spec"), "paused");
    if (json_is_object(spec)) {
        if (paused)
            json_object_set(spec, "paused", paused);
        else
            json_object_del(spec, "paused");
    }
}

/*
 * Write a pool object whole, under the lock, keeping the operator's fields
 * of the object it replaces, with metadata.generation moved on a change of
 * spec and status.observedGeneration = the generation written (this write
 * is the controller's pass over that spec).
 */
static int l_put_pool(mcg_cluster *c, const char *name, const json_t *obj, mcg_err *err)
{
    local *l = (local *)c;
    int lk, rc;
    if ((rc = lock_dir(l, LOCK_EX, &lk, err)) != 0)
        return rc;
    char *path = mcg_sprintf("%s/pools/%s.json", l->dir, name);
    json_t *old = NULL, *o = json_deep_copy(obj);
    mcg_err rerr = {0};
    if (read_json(&old, path, &rerr) != 0)
        old = NULL;
    if (old)
        keep_operator_fields(o, old);
    set_generation(o, old);
    json_t *st = json_object_get(o, "status");
    if (json_is_object(st))
        json_object_set_new(st, "observedGeneration", json_integer(generation_of(o)));
    rc = write_json(path, o, err);
    json_decref(old);
    json_decref(o);
    free(path);
    unlock_dir(lk);
    return rc;
}

/*
 * Set or lift the operator's pause of an existing pool object: spec.paused,
 * and on resume the older annotation too (cluster.h).
 */
static int l_pause_pool(mcg_cluster *c, const char *name, bool pause, bool *changed,
                        bool *git_paused, mcg_err *err)
{
    local *l = (local *)c;
    int lk, rc;
    if ((rc = check_dir(l, err)) != 0 || (rc = lock_dir(l, LOCK_EX, &lk, err)) != 0)
        return rc;
    char *path = mcg_sprintf("%s/pools/%s.json", l->dir, name);
    json_t *o = NULL, *old = NULL;
    rc = read_json(&o, path, err);
    if (rc == MCG_ENOTFOUND)
        rc = mcg_err_set(err, MCG_ENOTFOUND,
                         "cluster %s has no pool '%s' (the controller makes the pools of the "
                         "config repo at its first pass)",
                         l->base.spec, name);
    if (rc)
        goto out;
    json_t *md = json_object_get(o, "metadata"), *spec = json_object_get(o, "spec");
    if (!json_is_object(md) || !json_is_object(spec)) {
        rc = mcg_err_set(err, MCG_EINVAL, "%s: no metadata or spec", path);
        goto out;
    }
    *git_paused = mcg_pool_object_git_paused(o);
    bool lift = !pause && mcg_pool_object_halt_pending(o);
    if (mcg_pool_object_operator_paused(o) == pause && !lift)
        goto out; /* already so: nothing written */
    old = json_deep_copy(o);
    json_object_set_new(spec, "paused", json_boolean(pause));
    if (lift) {
        char ts[32];
        if (!json_is_object(json_object_get(md, "annotations")))
            json_object_set_new(md, "annotations", json_object());
        json_object_set_new(json_object_get(md, "annotations"), MCG_ANN_RESUMED,
                            json_string(mcg_time_iso(ts, (int64_t)time(NULL))));
    }
    json_t *ann = json_object_get(md, "annotations");
    if (!pause && json_is_object(ann)) {
        json_object_del(ann, MCG_ANN_PAUSED);
        if (!json_object_size(ann))
            json_object_del(md, "annotations");
    }
    set_generation(o, old);
    if ((rc = write_json(path, o, err)) == 0)
        *changed = true;
out:
    json_decref(old);
    json_decref(o);
    free(path);
    unlock_dir(lk);
    return rc;
}

/* An annotation on an existing pool object, under the lock. */
static int l_annotate_pool(mcg_cluster *c, const char *name, const char *key, const char *value,
                           mcg_err *err)
{
    local *l = (local *)c;
    int lk, rc;
    if ((rc = check_dir(l, err)) != 0 || (rc = lock_dir(l, LOCK_EX, &lk, err)) != 0)
        return rc;
    char *path = mcg_sprintf("%s/pools/%s.json", l->dir, name);
    json_t *o = NULL;
    rc = read_json(&o, path, err);
    if (rc == MCG_ENOTFOUND)
        rc = mcg_err_set(err, MCG_ENOTFOUND, "cluster %s has no pool '%s'", l->base.spec, name);
    json_t *md = rc ? NULL : json_object_get(o, "metadata");
    if (!rc && !json_is_object(md))
        rc = mcg_err_set(err, MCG_EINVAL, "%s: no metadata", path);
    if (!rc) {
        if (!json_is_object(json_object_get(md, "annotations")))
            json_object_set_new(md, "annotations", json_object());
        json_object_set_new(json_object_get(md, "annotations"), key, json_string(value));
        rc = write_json(path, o, err);
    }
    json_decref(o);
    free(path);
    unlock_dir(lk);
    return rc;
}

/* ------------------------------------------------------------------ sync */

static uint64_t json_u64(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

/* DIR/sync.json into st (missing: all zero; the object in *obj when obj). */
static int read_sync(local *l, mcg_sync_state *st, json_t **obj, mcg_err *err)
{
    char *path = mcg_sprintf("%s/sync.json", l->dir);
    json_t *o = NULL;
    memset(st, 0, sizeof(*st));
    int rc = read_json(&o, path, err);
    free(path);
    if (rc == MCG_ENOTFOUND) {
        o = json_object();
        rc = 0;
    }
    if (rc)
        return rc;
    if (!json_is_object(o)) {
        json_decref(o);
        return mcg_err_set(err, MCG_EINVAL, "%s/sync.json: not a JSON object", l->dir);
    }
    st->requested = json_u64(o, "requested");
    st->handled = json_u64(o, "handled");
    st->failed = json_is_true(json_object_get(o, "failed"));
    const char *at = json_string_value(json_object_get(o, "handledAt"));
    const char *res = json_string_value(json_object_get(o, "result"));
    mcg_bfmt(st->handled_at, sizeof(st->handled_at), "%s", at ? at : "");
    mcg_bfmt(st->result, sizeof(st->result), "%s", res ? res : "");
    if (obj)
        *obj = o;
    else
        json_decref(o);
    return 0;
}

static int l_get_sync(mcg_cluster *c, mcg_sync_state *out, mcg_err *err)
{
    local *l = (local *)c;
    int rc = check_dir(l, err);
    if (rc)
        return rc;
    stat_sync(l, &l->sync); /* seen before read, as for nodes */
    l->sync_valid = true;
    return read_sync(l, out, NULL, err);
}

/* Read-modify-write of DIR/sync.json under the lock: the request counter
 * (gen NULL: the answer fields from ans) or the answer. */
typedef struct sync_answer {
    uint64_t gen;
    bool failed;
    const char *result;
} sync_answer;

static int modify_sync(local *l, uint64_t *gen, const sync_answer *ans, mcg_err *err)
{
    int lk, rc;
    if ((rc = lock_dir(l, LOCK_EX, &lk, err)) != 0)
        return rc;
    mcg_sync_state st;
    json_t *o = NULL;
    char ts[32];
    mcg_time_iso(ts, (int64_t)time(NULL));
    if ((rc = read_sync(l, &st, &o, err)) != 0)
        goto out;
    if (gen) {
        *gen = st.requested + 1;
        json_object_set_new(o, "requested", json_integer((json_int_t)*gen));
        json_object_set_new(o, "requestedAt", json_string(ts));
    } else {
        if (ans->gen <= st.handled)
            goto out; /* a newer answer is there already */
        json_object_set_new(o, "handled", json_integer((json_int_t)ans->gen));
        json_object_set_new(o, "handledAt", json_string(ts));
        json_object_set_new(o, "failed", json_boolean(ans->failed));
        json_t *r = json_string(ans->result); /* NULL: not UTF-8 */
        json_object_set_new(o, "result", r ? r : json_string("(result not UTF-8)"));
    }
    char *path = mcg_sprintf("%s/sync.json", l->dir);
    rc = write_json(path, o, err);
    free(path);
    if (!rc && !gen && l->sync_valid)
        stat_sync(l, &l->sync); /* our own answer does not wake us */
out:
    json_decref(o);
    unlock_dir(lk);
    return rc;
}

static int l_request_sync(mcg_cluster *c, uint64_t *gen, mcg_err *err)
{
    local *l = (local *)c;
    int rc = check_dir(l, err);
    return rc ? rc : modify_sync(l, gen, NULL, err);
}

static int l_answer_sync(mcg_cluster *c, uint64_t gen, bool failed, const char *result,
                         mcg_err *err)
{
    local *l = (local *)c;
    sync_answer a = {gen, failed, result};
    int rc = check_dir(l, err);
    return rc ? rc : modify_sync(l, NULL, &a, err);
}

static int l_list_pools(mcg_cluster *c, json_t **items, mcg_err *err)
{
    local *l = (local *)c;
    mcg_strv names = {0};
    *items = json_array();
    int rc = list_dir_json(l, "pools", &names, err);
    for (size_t i = 0; !rc && i < names.n; i++) {
        char *path = mcg_sprintf("%s/pools/%s.json", l->dir, names.v[i]);
        json_t *o = NULL;
        int r = read_json(&o, path, err);
        if (r == 0)
            json_array_append_new(*items, o);
        else if (r != MCG_ENOTFOUND)
            rc = r;
        free(path);
    }
    mcg_strv_free(&names);
    if (rc) {
        json_decref(*items);
        *items = NULL;
    }
    return rc;
}

static int l_delete_pool(mcg_cluster *c, const char *name, mcg_err *err)
{
    return remove_object((local *)c, "pools", name, err);
}

static int l_put_policy(mcg_cluster *c, const json_t *spec, mcg_err *err)
{
    local *l = (local *)c;
    int rc = ensure_dirs(l, err);
    if (rc)
        return rc;
    char *path = mcg_sprintf("%s/machineconfiguration.json", l->dir);
    json_t *o = json_pack("{s:s,s:s,s:{s:s},s:O}", "apiVersion", MCG_API_MCGIT, "kind",
                          "MachineConfiguration", "metadata", "name", "cluster", "spec", spec);
    rc = write_json(path, o, err);
    json_decref(o);
    free(path);
    return rc;
}

static int l_get_policy(mcg_cluster *c, json_t **spec, mcg_err *err)
{
    local *l = (local *)c;
    char *path = mcg_sprintf("%s/machineconfiguration.json", l->dir);
    json_t *o = NULL;
    int rc = read_json(&o, path, err);
    free(path);
    *spec = NULL;
    if (rc)
        return rc;
    json_t *s = json_object_get(o, "spec");
    *spec = json_is_object(s) ? json_incref(s) : json_object();
    json_decref(o);
    return 0;
}

static int l_drain(mcg_cluster *c, const char *name, mcg_err *err)
{
    (void)c;
    (void)name;
    (void)err;
    return 0; /* a local cluster runs no pods */
}

static char *l_node_root(mcg_cluster *c, const char *name)
{
    return mcg_sprintf("%s/roots/%s", ((local *)c)->dir, name);
}

/* An event: one line appended to DIR/events.jsonl in one write (O_APPEND:
 * writers never interleave within a line). Events are best effort, as the
 * API server's are: not fsynced, and past 1 MiB the file moves to
 * events.jsonl.1, replacing the one before. */
#define EVENTS_MAX (1L << 20)
/*
 * The events file opened for appending: never blocking (a FIFO or device
 * put in its place would hang the controller, SIGTERM included), never
 * through a symbolic link, and only a regular file; -1 (errno) or -2 (not a
 * regular file).
 */
static int events_open(const char *path)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
    struct stat st;
    if (fd < 0 && errno == ENXIO) /* a FIFO nobody reads */
        return -2;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        return -2;
    }
    return fd;
}
static int l_event(mcg_cluster *c, const mcg_event *ev, mcg_err *err)
{
    local *l = (local *)c;
    int rc = ensure_dirs(l, err);
    if (rc)
        return rc;
    struct timespec ts;
    mcg_wall_now(&ts);
    char when[32];
    mcg_time_iso(when, (int64_t)ts.tv_sec);
    json_t *o = json_pack("{s:s,s:f,s:s,s:s,s:s,s:s,s:s,s:s}", "lastTimestamp", when, "time",
                          (double)ts.tv_sec + (double)ts.tv_nsec / 1e9, "kind",
                          ev->pool ? "MachineConfigPool" : "Node", "name", ev->name, "type",
                          ev->warning ? "Warning" : "Normal", "reason", ev->reason, "message",
                          ev->message, "component", ev->component);
    char *line = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    if (!line)
        return mcg_err_set(err, MCG_ENOMEM, "event about %s: out of memory", ev->name);
    char *path = mcg_sprintf("%s/events.jsonl", l->dir);
    int fd = events_open(path);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > EVENTS_MAX) {
        char *old = mcg_sprintf("%s.1", path);
        if (rename(path, old) == 0) { /* the next event starts a new file */
            close(fd);
            fd = events_open(path);
        }
        free(old);
    }
    size_t len = strlen(line);
    line[len++] = '\n'; /* over the NUL: written by length */
    if (fd == -2)
        rc = mcg_err_set(err, MCG_EIO, "%s: not a regular file", path);
    else if (fd < 0)
        rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", path);
    else if (write(fd, line, len) != (ssize_t)len)
        rc = mcg_err_set(err, MCG_EIO, "%s: short write", path);
    if (fd >= 0)
        close(fd);
    free(path);
    free(line);
    return rc;
}

static void l_free(mcg_cluster *c)
{
    local *l = (local *)c;
    if (l->ifd >= 0)
        close(l->ifd);
    seen_clear(&l->one);
    seen_clear(&l->all);
    free(l->dir);
    free(l->base.spec);
    free(l);
}

/*
 * Many node patches under one lock, made durable together: each edited node
 * is written to its own temp file, one syncfs() makes them all durable, then
 * they are renamed into place and the directory is fsynced once. A crash
 * before a rename leaves that node's old file (and a stray temp file, which
 * no reader looks at); after it, the new one.
 */
static int l_patch_nodes(mcg_cluster *c, const char *const *names, const mcg_node_patch *patches,
                         size_t n, int *rcs, mcg_err *err)
{
    local *l = (local *)c;
    int lk, rc;
    if ((rc = check_dir(l, err)) != 0 || (rc = lock_dir(l, LOCK_EX, &lk, err)) != 0)
        return rc;
    char *nodes_dir = mcg_sprintf("%s/nodes", l->dir);
    char **tmps = mcg_calloc(n ? n : 1, sizeof(*tmps));
    for (size_t i = 0; i < n && !rc; i++) {
        rcs[i] = 0;
        char *path = node_path(l, names[i]);
        json_t *o = NULL;
        mcg_err e = {0};
        int r = read_json(&o, path, &e);
        if (!r)
            r = edit_patch(o, names[i], &patches[i], &e);
        if (!r) {
            mcg_buf b = MCG_BUF_INIT;
            if ((r = mcg_json_canonical(o, &b, &e)) == 0) {
                tmps[i] = mcg_sprintf("%s.tmp.%ld", path, (long)getpid());
                int fd = open(tmps[i], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
                if (fd < 0 || mcg_write_all(fd, b.ptr, b.len) != 0) {
                    rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", tmps[i]);
                }
                if (fd >= 0)
                    close(fd);
            }
            mcg_buf_free(&b);
        }
        if (r == MCG_ECONFLICT || r == MCG_ENOTFOUND)
            rcs[i] = r;
        else if (r && !rc)
            rc = mcg_err_set(err, r, "%s", e.msg);
        json_decref(o);
        free(path);
    }
    if (!rc) {
        int dfd = open(nodes_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0 || syncfs(dfd) != 0)
            rc = mcg_err_set_os(err, MCG_EIO, errno, "%s: syncfs", nodes_dir);
        if (dfd >= 0)
            close(dfd);
    }
    for (size_t i = 0; i < n; i++) {
        if (!tmps[i])
            continue;
        if (!rc) {
            char *path = node_path(l, names[i]);
            if (rename(tmps[i], path) != 0)
                rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", path);
            else
                seen_own_write(l, names[i]);
            free(path);
        }
        if (rc)
            unlink(tmps[i]);
        free(tmps[i]);
    }
    free(tmps);
    mcg_fsync_dir(nodes_dir);
    free(nodes_dir);
    unlock_dir(lk);
    return rc;
}

static const mcg_cluster_ops local_ops = {
    .list_nodes = l_list_nodes,
    .get_node = l_get_node,
    .patch_node = l_patch_node,
    .add_node = l_add_node,
    .remove_node = l_remove_node,
    .label_node = l_label_node,
    .put_config = l_put_config,
    .get_config = l_get_config,
    .list_configs = l_list_configs,
    .delete_config = l_delete_config,
    .put_pool = l_put_pool,
    .list_pools = l_list_pools,
    .delete_pool = l_delete_pool,
    .put_policy = l_put_policy,
    .get_policy = l_get_policy,
    .drain = l_drain,
    .node_root = l_node_root,
    .free = l_free,
    .event = l_event,
    .patch_nodes = l_patch_nodes,
    .wait_change = l_wait_change,
    .pause_pool = l_pause_pool,
    .annotate_pool = l_annotate_pool,
    .get_sync = l_get_sync,
    .request_sync = l_request_sync,
    .answer_sync = l_answer_sync,
};

int mcg_cluster_local_open(mcg_cluster **out, const char *spec, const char *dir, mcg_err *err)
{
    (void)err;
    local *l = mcg_calloc(1, sizeof(*l));
    l->base.ops = &local_ops;
    l->ifd = -1;
    l->base.spec = mcg_strdup(spec);
    l->dir = mcg_strdup(dir);
    *out = &l->base;
    return 0;
}
