/*
 * state.c — the agent's state directory (default <root>/var/lib/mcgit,
 * 0700), opened and locked with the agent, and the files in it:
 *   current              the name of the rendered config on disk
 *   configs/<name>.json  its canonical spec (and, during an update, the
 *                        target's), so drift checks and an interrupted
 *                        update need nothing from the cluster
 *   journal.json         the update in progress (journal.c)
 *   backups/<sha256>     what was at a path before mcgit first overwrote it
 *   created-dirs.json    the directories mcgit created (removed, when empty,
 *                        once no config needs them)
 *   failed-target        a target whose health check failed, and why
 *   base-image           the image the node booted before its first rebase
 *                        (baseimage.c), until osImageURL is unset again
 *   lock                 flock'ed by the running agent, holding its pid
 * Every state file is written to a temp name, fsync'd and renamed.
 */
#include "agent/agent_int.h"
#include "fsio/fsio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define STATE_DEFAULT "var/lib/mcgit"
#define MAX_STATE_FILE (512u * 1024u * 1024u)
#define CREATED_FILE "created-dirs.json"

void mcg_agent_state_abort(mcg_agent *a, mcg_agent_pending *p)
{
    if (p->fd >= 0) {
        close(p->fd);
        unlinkat(a->statefd, p->tmp, 0);
    }
    free(p->tmp);
    free(p->name);
    p->fd = -1;
    p->tmp = p->name = NULL;
}

int mcg_agent_state_start(mcg_agent *a, const char *name, const void *data, size_t len,
                          mcg_agent_pending *p, mcg_err *err)
{
    const char *slash = strrchr(name, '/');
    p->name = mcg_strdup(name);
    p->tmp = slash ? mcg_sprintf("%.*s/.%s.tmp", (int)(slash - name), name, slash + 1)
                   : mcg_sprintf(".%s.tmp", name);
    p->fd = openat(a->statefd, p->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (p->fd < 0) {
        int rc = mcg_err_set_os(err, MCG_EIO, errno, "state %s", p->tmp);
        mcg_agent_state_abort(a, p);
        return rc;
    }
    if (mcg_write_all(p->fd, data, len) != 0) {
        int rc = mcg_err_set_os(err, MCG_EIO, errno, "state %s", p->tmp);
        mcg_agent_state_abort(a, p);
        return rc;
    }
    /* start writing back now; fsync in mcg_agent_state_finish() still decides */
    (void)sync_file_range(p->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
    return 0;
}

int mcg_agent_state_finish(mcg_agent *a, mcg_agent_pending *p, mcg_err *err)
{
    int rc = 0;
    if (fsync(p->fd) != 0)
        rc = mcg_err_set_os(err, MCG_EIO, errno, "state %s", p->tmp);
    else if (renameat(a->statefd, p->tmp, a->statefd, p->name) != 0)
        rc = mcg_err_set_os(err, MCG_EIO, errno, "state %s", p->name);
    if (rc) {
        mcg_agent_state_abort(a, p);
        return rc;
    }
    close(p->fd);
    p->fd = -1;
    int dfd = strchr(p->name, '/')
                  ? openat(a->statefd, "configs", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                  : -1;
    fsync(dfd >= 0 ? dfd : a->statefd);
    if (dfd >= 0)
        close(dfd);
    mcg_agent_state_abort(a, p); /* frees the names */
    return 0;
}

int mcg_agent_state_write(mcg_agent *a, const char *name, const void *data, size_t len,
                          mcg_err *err)
{
    mcg_agent_pending p;
    int rc = mcg_agent_state_start(a, name, data, len, &p, err);
    return rc ? rc : mcg_agent_state_finish(a, &p, err);
}

int mcg_agent_state_read(mcg_agent *a, const char *name, char **data, size_t *len, mcg_err *err)
{
    *data = NULL;
    *len = 0;
    int fd = openat(a->statefd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return mcg_err_set_os(err, errno == ENOENT ? MCG_ENOTFOUND : MCG_EIO, errno, "state %s",
                              name);
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > MAX_STATE_FILE) {
        close(fd);
        return mcg_err_set(err, MCG_EIO, "state %s: not a regular file or too large", name);
    }
    size_t n = (size_t)st.st_size, off = 0;
    char *buf = mcg_malloc(n + 1);
    while (off < n) {
        ssize_t r = read(fd, buf + off, n - off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = mcg_err_set(err, MCG_EIO, "state %s: short read", name);
            break;
        }
        off += (size_t)r;
    }
    close(fd);
    if (rc) {
        free(buf);
        return rc;
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return 0;
}

void mcg_agent_state_remove(mcg_agent *a, const char *name)
{
    unlinkat(a->statefd, name, 0);
    fsync(a->statefd);
}

char *mcg_agent_current_name(mcg_agent *a)
{
    char *d;
    size_t n;
    mcg_err e = {0};
    if (mcg_agent_state_read(a, "current", &d, &n, &e))
        return NULL;
    while (n && (d[n - 1] == '\n' || d[n - 1] == ' '))
        d[--n] = '\0';
    if (!n || strchr(d, '/')) {
        free(d);
        return NULL;
    }
    return d;
}

int mcg_agent_config_read(mcg_agent *a, const char *name, char **spec, size_t *len, mcg_err *err)
{
    char *p = mcg_sprintf("configs/%s.json", name);
    int rc = mcg_agent_state_read(a, p, spec, len, err);
    free(p);
    return rc;
}

int mcg_agent_config_load(mcg_agent *a, const char *name, bool strict, mcg_acfg **out, mcg_err *err)
{
    char *spec;
    size_t len;
    int rc = mcg_agent_config_read(a, name, &spec, &len, err);
    if (rc)
        return rc;
    rc = mcg_acfg_load(out, &a->root, name, spec, len, strict, err);
    free(spec);
    return rc;
}

void mcg_agent_created_load(mcg_agent *a, mcg_strv *out)
{
    char *data;
    size_t len;
    mcg_err e = {0};
    if (mcg_agent_state_read(a, CREATED_FILE, &data, &len, &e) != 0)
        return;
    json_t *j = json_loadb(data, len, 0, NULL);
    free(data);
    size_t i;
    json_t *v;
    json_array_foreach(j, i, v) {
        const char *d = json_string_value(v);
        char *abs = d ? mcg_sprintf("/%s", d) : NULL;
        if (abs && mcg_path_is_clean_abs(abs)) /* relative to the root, clean */
            mcg_strv_push(out, d);
        free(abs);
    }
    json_decref(j);
    mcg_strv_sort(out);
}

int mcg_agent_created_save(mcg_agent *a, const mcg_strv *dirs, mcg_err *err)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < dirs->n; i++)
        json_array_append_new(arr, json_string(dirs->v[i]));
    char *s = json_dumps(arr, JSON_INDENT(1));
    int rc = mcg_agent_state_write(a, CREATED_FILE, s, strlen(s), err);
    free(s);
    json_decref(arr);
    return rc;
}

mcg_acfg *mcg_agent_current(mcg_agent *a)
{
    char *name = mcg_agent_current_name(a);
    if (!name) {
        mcg_acfg_free(a->cur);
        a->cur = NULL;
        return NULL;
    }
    if (!a->cur || strcmp(a->cur->name, name) != 0) {
        mcg_acfg_free(a->cur);
        a->cur = NULL;
        mcg_err e = {0};
        if (mcg_agent_config_load(a, name, false, &a->cur, &e) != 0)
            mcg_agent_log(a, 1, "current config %s: %s", name, e.msg);
    }
    free(name);
    return a->cur;
}

void mcg_agent_configs_prune(mcg_agent *a, const char *keep)
{
    int dfd = openat(a->statefd, "configs", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return;
    }
    char *k = mcg_sprintf("%s.json", keep);
    mcg_strv del = {0};
    struct dirent *de;
    while ((de = readdir(d)))
        if (de->d_name[0] != '.' && strcmp(de->d_name, k) != 0)
            mcg_strv_push(&del, de->d_name);
    for (size_t i = 0; i < del.n; i++)
        unlinkat(dirfd(d), del.v[i], 0);
    fsync(dirfd(d));
    closedir(d);
    mcg_strv_free(&del);
    free(k);
}

/* Remove temp files a killed agent left in the state directory. */
static void clean_state_temps(mcg_agent *a)
{
    static const char *const subs[] = {".", "configs", "backups", NULL};
    for (const char *const *s = subs; *s; s++) {
        int dfd = openat(a->statefd, *s, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
            continue;
        DIR *d = fdopendir(dfd);
        if (!d) {
            close(dfd);
            continue;
        }
        mcg_strv del = {0};
        struct dirent *de;
        while ((de = readdir(d))) {
            size_t n = strlen(de->d_name);
            if ((de->d_name[0] == '.' && n > 5 && !strcmp(de->d_name + n - 4, ".tmp")) ||
                !strncmp(de->d_name, ".tmp-", 5))
                mcg_strv_push(&del, de->d_name);
        }
        for (size_t i = 0; i < del.n; i++)
            unlinkat(dirfd(d), del.v[i], 0);
        closedir(d);
        mcg_strv_free(&del);
    }
}

/* Takes the state directory's lock, and writes this agent's pid into the
 * lock file for the next one to name. Held: one line naming the running
 * agent and what to do. */
int mcg_agent_take_lock(mcg_agent *a, mcg_err *err)
{
    a->lockfd = openat(a->statefd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (a->lockfd < 0)
        return mcg_err_set_os(err, MCG_EIO, errno, "state directory: lock");
    if (flock(a->lockfd, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK)
            return mcg_err_set_os(err, MCG_EIO, errno, "state directory: lock");
        char buf[32] = "";
        ssize_t n = pread(a->lockfd, buf, sizeof(buf) - 1, 0);
        long pid = n > 0 ? strtol(buf, NULL, 10) : 0;
        if (pid > 0)
            return mcg_err_set(err, MCG_ECONFLICT,
                               "state directory: another agent (pid %ld) is running on this root; "
                               "it applies each new desiredConfig itself (stop it first to apply "
                               "by hand: kill %ld)",
                               pid, pid);
        return mcg_err_set(err, MCG_ECONFLICT,
                           "state directory: another agent is running on this root; it applies "
                           "each new desiredConfig itself (stop it first to apply by hand)");
    }
    char pidline[32];
    int len = snprintf(pidline, sizeof(pidline), "%ld\n", (long)getpid());
    if (ftruncate(a->lockfd, 0) != 0 || pwrite(a->lockfd, pidline, (size_t)len, 0) != len)
        return mcg_err_set_os(err, MCG_EIO, errno, "state directory: lock");
    return 0;
}

/* Open (creating it 0700) the state directory: o->state_dir, or the default inside the root. */
static int open_state_dir(mcg_agent *a, const mcg_agent_opts *o, mcg_err *err)
{
    int rc;
    if (o->state_dir) {
        if ((rc = mcg_mkdirs(o->state_dir, 0700, err)) != 0)
            return rc;
        a->statefd = open(o->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (a->statefd < 0)
            return mcg_err_set_os(err, MCG_EIO, errno, "state directory %s", o->state_dir);
    } else {
        a->state_rel = STATE_DEFAULT;
        if ((rc = mcg_sroot_opendir(&a->root, STATE_DEFAULT, true, 0700, &a->statefd, err)) != 0) {
            mcg_err_prefix(err, "state directory");
            return rc;
        }
        mcg_sroot_forget(&a->root);
    }
    if ((mkdirat(a->statefd, "configs", 0700) != 0 && errno != EEXIST) ||
        (mkdirat(a->statefd, "backups", 0700) != 0 && errno != EEXIST))
        return mcg_err_set_os(err, MCG_EIO, errno, "state directory");
    return 0;
}

int mcg_agent_open(mcg_agent **out, const mcg_agent_opts *o, mcg_cluster *c, mcg_err *err)
{
    *out = NULL;
    mcg_agent *a = mcg_calloc(1, sizeof(*a));
    a->o = *o;
    a->statefd = -1;
    a->lockfd = -1;
    a->root.fd = -1;
    a->root.cache_fd = -1;
    a->force = o->force;
    const char *root = o->root ? o->root : "/";
    int rc = mcg_sroot_open(&a->root, root, err);
    if (rc)
        goto out;
    a->live = mcg_agent_root_is_live(root, o->live);
    /* before the state directory, the journal or any node write */
    if (a->live && (rc = mcg_agent_verify_host(root, o->node, c, err)) != 0)
        goto out;
    if ((rc = open_state_dir(a, o, err)) != 0 ||
        (!o->key_only && (rc = mcg_agent_take_lock(a, err)) != 0))
        goto out;
    if (!o->key_only) {
        clean_state_temps(a);
        /* the node key is made at the first start, for the operator to pin
         * (--print-node-key) before the node's first attestation */
        char *line = NULL;
        mcg_err kerr = {0};
        if (mcg_agent_node_key_line(&line, a, &kerr) != 0)
            mcg_agent_log(a, 0, "node key: %s", kerr.msg);
        free(line);
    }
    *out = a;
    a = NULL;
out:
    mcg_agent_free(a);
    return rc;
}

void mcg_agent_free(mcg_agent *a)
{
    if (!a)
        return;
    mcg_sroot_close(&a->root);
    if (a->statefd >= 0)
        close(a->statefd);
    if (a->lockfd >= 0)
        close(a->lockfd);
    mcg_acfg_free(a->cur);
    free(a);
}
