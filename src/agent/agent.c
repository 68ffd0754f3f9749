/*
 * agent.c — the node agent's reconcile pass: journal, update, actions,
 * reboots, drift and node status.
 *
 * The state directory (default <root>/var/lib/mcgit, 0700) holds:
 *   current              the name of the rendered config on disk
 *   configs/<name>.json  its canonical spec (and, during an update, the
 *                        target's), so drift checks and an interrupted
 *                        update need nothing from the cluster
 *   journal.json         the update in progress: target, from, backup and
 *                        restore lists, actions, phase, boot id
 *   backups/<sha256>     what was at a path before mcgit first overwrote it
 *   created-dirs.json    the directories mcgit created (removed, when empty,
 *                        once no config needs them)
 *   base-image           the image the node booted before its first rebase
 *                        (baseimage.c), until osImageURL is unset again
 * Every state file is written to a temp name, fsync'd and renamed.
 *
 * An update's phases, each recorded in the journal before it starts:
 *   apply   -> execute the plan (idempotent, so it is simply re-run)
 *   os      -> the OS steps (osconf.c): kernel arguments, OS image,
 *              extensions, kernel type, core's password hash, one at a
 *              time; the journal records each one done ("osStep")
 *   actions -> daemon-reload / reload / restart (live only), or
 *   reboot  -> run the reboot command; done when the boot id changed
 *              (live) or when the command exited 0 (not live)
 *   finish  -> record current, report Done, uncordon, drop the journal
 * A failure in apply rolls the disk back to the old config (the same
 * executor run backwards) and leaves the node Degraded with the reason.
 *
 * In the code: do_update plans (update_load, update_plan), cordons and
 * drains (update_drain) and writes the journal (journal_new); journal_run
 * then calls one function per phase over the typed journal: phase_write
 * (backups, then files; phase_revert on failure), phase_os,
 * phase_disruption, phase_reboot, phase_commit. A health phase goes
 * between the disruption (or reboot) and the commit (update_phase).
 */
#include "agent/agent_int.h"
#include "fsio/fsio.h"
#include "render/render.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define STATE_DEFAULT "var/lib/mcgit"
#define MAX_STATE_FILE (512u * 1024u * 1024u)
#define DRIFT_LIST_MAX 10

struct mcg_agent {
    mcg_agent_opts o;
    mcg_sroot root;
    int statefd;
    int lockfd;            /* flock on <state>/lock: one agent per state directory */
    const char *state_rel; /* STATE_DEFAULT when the state dir is inside the root */
    bool live;
    bool force;
    bool reboot_issued;          /* this process already ran the reboot command */
    char *revert_reason;         /* while a failed health check's revert is planned: why */
    volatile sig_atomic_t *stop; /* mcg_agent_loop's: set, a health phase ends the pass */
    mcg_acfg *cur;               /* parsed current config, cached for drift checks */
    char drain_evented[256];     /* the target whose Cordon/Drain events were recorded */
    char degraded_evented[MCG_AGENT_REASON]; /* the reason last recorded as an event */
};

static const mcg_acfg empty_cfg = {0};

const char *mcg_agent_state_name(mcg_agent_state s)
{
    return s == MCG_AGENT_DONE ? "Done" : s == MCG_AGENT_WORKING ? "Working" : "Degraded";
}

static void logf_(mcg_agent *a, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void logf_(mcg_agent *a, int level, const char *fmt, ...)
{
    if (a->o.verbosity < level)
        return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    mcg_vbfmt(line, sizeof(line), fmt, ap);
    va_end(ap);
    /* every line names the node, as node=NAME */
    if (a->o.node)
        mcg_log_line("agent", "node=%s: %s", a->o.node, line);
    else
        mcg_log_line("agent", "%s", line);
}

/* ------------------------------------------------------- state files */

/*
 * A state file written in two steps, so that its writeback can run while
 * the agent does something else: state_write_start() writes the data to a
 * temp file and starts writeback; state_write_finish() waits for it
 * (fsync), renames the file into place and syncs the directory.
 */
typedef struct {
    int fd;
    char *tmp, *name;
} state_pending;

static void state_write_abort(mcg_agent *a, state_pending *p)
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

static int state_write_start(mcg_agent *a, const char *name, const void *data, size_t len,
                             state_pending *p, mcg_err *err)
{
    const char *slash = strrchr(name, '/');
    p->name = mcg_strdup(name);
    p->tmp = slash ? mcg_sprintf("%.*s/.%s.tmp", (int)(slash - name), name, slash + 1)
                   : mcg_sprintf(".%s.tmp", name);
    p->fd = openat(a->statefd, p->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (p->fd < 0) {
        int rc = mcg_err_set(err, MCG_EIO, "state %s: %s", p->tmp, strerror(errno));
        state_write_abort(a, p);
        return rc;
    }
    if (mcg_write_all(p->fd, data, len) != 0) {
        int rc = mcg_err_set(err, MCG_EIO, "state %s: %s", p->tmp, strerror(errno));
        state_write_abort(a, p);
        return rc;
    }
    /* start writing back now; fsync in state_write_finish() still decides */
    (void)sync_file_range(p->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
    return 0;
}

static int state_write_finish(mcg_agent *a, state_pending *p, mcg_err *err)
{
    int rc = 0;
    if (fsync(p->fd) != 0)
        rc = mcg_err_set(err, MCG_EIO, "state %s: %s", p->tmp, strerror(errno));
    else if (renameat(a->statefd, p->tmp, a->statefd, p->name) != 0)
        rc = mcg_err_set(err, MCG_EIO, "state %s: %s", p->name, strerror(errno));
    if (rc) {
        state_write_abort(a, p);
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
    state_write_abort(a, p); /* frees the names */
    return 0;
}

static int state_write(mcg_agent *a, const char *name, const void *data, size_t len, mcg_err *err)
{
    state_pending p;
    int rc = state_write_start(a, name, data, len, &p, err);
    return rc ? rc : state_write_finish(a, &p, err);
}

static int state_read(mcg_agent *a, const char *name, char **data, size_t *len, mcg_err *err)
{
    *data = NULL;
    *len = 0;
    int fd = openat(a->statefd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return mcg_err_set(err, errno == ENOENT ? MCG_ENOTFOUND : MCG_EIO, "state %s: %s", name,
                           strerror(errno));
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

/* The name in `current`, or NULL. */
static char *read_current(mcg_agent *a)
{
    char *d;
    size_t n;
    mcg_err e = {0};
    if (state_read(a, "current", &d, &n, &e))
        return NULL;
    while (n && (d[n - 1] == '\n' || d[n - 1] == ' '))
        d[--n] = '\0';
    if (!n || strchr(d, '/')) {
        free(d);
        return NULL;
    }
    return d;
}

static int load_state_cfg(mcg_agent *a, const char *name, bool strict, mcg_acfg **out, mcg_err *err)
{
    char *p = mcg_sprintf("configs/%s.json", name), *spec;
    size_t len;
    int rc = state_read(a, p, &spec, &len, err);
    free(p);
    if (rc)
        return rc;
    rc = mcg_acfg_load(out, &a->root, name, spec, len, strict, err);
    free(spec);
    return rc;
}

#define CREATED_FILE "created-dirs.json"

/* The directories mcgit created, sorted (none when the file is missing or unreadable). */
static void load_created(mcg_agent *a, mcg_strv *out)
{
    char *data;
    size_t len;
    mcg_err e = {0};
    if (state_read(a, CREATED_FILE, &data, &len, &e) != 0)
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

static int save_created(mcg_agent *a, const mcg_strv *dirs, mcg_err *err)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < dirs->n; i++)
        json_array_append_new(arr, json_string(dirs->v[i]));
    char *s = json_dumps(arr, JSON_INDENT(1));
    int rc = state_write(a, CREATED_FILE, s, strlen(s), err);
    free(s);
    json_decref(arr);
    return rc;
}

/* The current config, parsed once and kept (NULL: none). */
static mcg_acfg *get_current(mcg_agent *a)
{
    char *name = read_current(a);
    if (!name) {
        mcg_acfg_free(a->cur);
        a->cur = NULL;
        return NULL;
    }
    if (!a->cur || strcmp(a->cur->name, name) != 0) {
        mcg_acfg_free(a->cur);
        a->cur = NULL;
        mcg_err e = {0};
        if (load_state_cfg(a, name, false, &a->cur, &e) != 0)
            logf_(a, 1, "current config %s: %s", name, e.msg);
    }
    free(name);
    return a->cur;
}

/* Drop every configs/ entry but keep. */
static void prune_configs(mcg_agent *a, const char *keep)
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

/* ------------------------------------------------------------- open */

/* Takes the state directory's lock, and writes this agent's pid into the
 * lock file for the next one to name. Held: one line naming the running
 * agent and what to do. */
static int take_lock(mcg_agent *a, mcg_err *err)
{
    a->lockfd = openat(a->statefd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (a->lockfd < 0)
        return mcg_err_set(err, MCG_EIO, "state directory: lock: %s", strerror(errno));
    if (flock(a->lockfd, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK)
            return mcg_err_set(err, MCG_EIO, "state directory: lock: %s", strerror(errno));
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
        return mcg_err_set(err, MCG_EIO, "state directory: lock: %s", strerror(errno));
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
    if (o->state_dir) {
        if ((rc = mcg_mkdirs(o->state_dir, 0700, err)) != 0)
            goto out;
        a->statefd = open(o->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (a->statefd < 0) {
            rc = mcg_err_set(err, MCG_EIO, "state directory %s: %s", o->state_dir, strerror(errno));
            goto out;
        }
    } else {
        a->state_rel = STATE_DEFAULT;
        if ((rc = mcg_sroot_opendir(&a->root, STATE_DEFAULT, true, 0700, &a->statefd, err)) != 0) {
            mcg_err_prefix(err, "state directory");
            goto out;
        }
        mcg_sroot_forget(&a->root);
    }
    if ((mkdirat(a->statefd, "configs", 0700) != 0 && errno != EEXIST) ||
        (mkdirat(a->statefd, "backups", 0700) != 0 && errno != EEXIST)) {
        rc = mcg_err_set(err, MCG_EIO, "state directory: %s", strerror(errno));
        goto out;
    }
    if ((rc = take_lock(a, err)) != 0)
        goto out;
    clean_state_temps(a);
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

/* ---------------------------------------------------------- reporting */

static void set_reason(mcg_agent_result *res, mcg_agent_state st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_reason(mcg_agent_result *res, mcg_agent_state st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mcg_vbfmt(res->reason, sizeof(res->reason), fmt, ap);
    va_end(ap);
    for (char *p = res->reason; *p; p++) /* one line */
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
    res->state = st;
}

/* Patch the node; failures (cluster unreachable) are logged, not fatal. */
static int patch(mcg_agent *a, mcg_cluster *c, const mcg_node_patch *p)
{
    if (!c)
        return 0;
    mcg_err e = {0};
    int rc = mcg_cluster_patch_node(c, a->o.node, p, &e);
    if (rc)
        logf_(a, 1, "cannot update node %s: %s", a->o.node, e.msg);
    return rc;
}

/* A Kubernetes Event about this node (best effort; nothing without a cluster). */
static void event(mcg_agent *a, mcg_cluster *c, bool warning, const char *reason, const char *fmt,
                  ...) __attribute__((format(printf, 5, 6)));
static void event(mcg_agent *a, mcg_cluster *c, bool warning, const char *reason, const char *fmt,
                  ...)
{
    if (!c || !a->o.node)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    mcg_vbfmt(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    mcg_event ev = {"mcgit-agent", false, a->o.node, warning, reason, msg};
    mcg_err e = {0};
    if (mcg_cluster_event(c, &ev, &e) != 0) /* best effort */
        logf_(a, 2, "event %s not recorded: %s", reason, e.msg);
}

static void report_degraded(mcg_agent *a, mcg_cluster *c, mcg_agent_result *res)
{
    logf_(a, 1, "Degraded: %s", res->reason);
    if (c && strcmp(a->degraded_evented, res->reason) != 0) { /* once per reason */
        event(a, c, true,
              strncmp(res->reason, "drift: ", 7) ? "NodeDegraded" : "ConfigDriftDetected", "%s",
              res->reason);
        snprintf(a->degraded_evented, sizeof(a->degraded_evented), "%s", res->reason);
    }
    mcg_node_patch p = MCG_NODE_PATCH_INIT;
    p.state = res->unreconcilable ? "Unreconcilable" : "Degraded"; /* MCO's states */
    p.reason = res->reason;
    patch(a, c, &p);
}

/* ---------------------------------------------------------- commands */

/* Run `sh -c cmd`; returns the exit status, or -1 when it could not run. */
/* sh -c cmd; its exit status (128 + signal; -1 when it could not run). */
static int run_sh(const char *cmd)
{
    char *argv[] = {(char *)"sh", (char *)"-c", (char *)cmd, NULL};
    pid_t pid;
    if (posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ) != 0)
        return -1;
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status)
                             : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static int run_cmd(mcg_agent *a, const char *cmd)
{
    logf_(a, 1, "running: %s", cmd);
    return run_sh(cmd);
}

static void read_boot_id(char out[64])
{
    const char *p = getenv("MCGIT_BOOT_ID_FILE"); /* tests: a fake host's boot id */
    FILE *f = fopen(p && *p ? p : "/proc/sys/kernel/random/boot_id", "re");
    out[0] = '\0';
    if (f) {
        if (!fgets(out, 64, f))
            out[0] = '\0';
        fclose(f);
    }
    out[strcspn(out, "\n")] = '\0';
}

/* ------------------------------------------------------------ journal */

static json_t *strv_json(const mcg_strv *v)
{
    json_t *a = json_array();
    for (size_t i = 0; i < v->n; i++)
        json_array_append_new(a, json_string(v->v[i]));
    return a;
}

static void json_strv(mcg_strv *out, const json_t *arr)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        if (json_is_string(v))
            mcg_strv_push(out, json_string_value(v));
    }
}

static int journal_write(mcg_agent *a, json_t *j, mcg_err *err)
{
    char *s = json_dumps(j, JSON_SORT_KEYS | JSON_INDENT(1));
    int rc = state_write(a, "journal.json", s, strlen(s), err);
    free(s);
    return rc;
}

static const char *jstr(const json_t *j, const char *key)
{
    const json_t *v = json_object_get(j, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/*
 * Roll the disk back from new_cfg to old (NULL: nothing managed): the
 * executor run backwards. created (the directories mcgit made, including
 * the forward run's) is updated: those old does not need are removed.
 */
static void rollback(mcg_agent *a, const mcg_acfg *old, const mcg_acfg *new_cfg,
                     const mcg_plan_disk *fwd, mcg_strv *created)
{
    mcg_plan_disk rb = {0};
    for (size_t i = 0; i < fwd->restores.n; i++)
        mcg_strv_push(&rb.backups, fwd->restores.v[i]);
    for (size_t i = 0; i < new_cfg->n; i++) {
        const char *p = new_cfg->ents[i].path;
        char *b = mcg_backup_name(p);
        struct stat st;
        if (!mcg_acfg_find(old, p) && fstatat(a->statefd, b, &st, AT_SYMLINK_NOFOLLOW) == 0)
            mcg_strv_push(&rb.restores, p);
        free(b);
    }
    mcg_exec_stats st = {0, 0};
    mcg_err e = {0};
    if (mcg_plan_execute(&a->root, a->statefd, new_cfg, old ? old : &empty_cfg, &rb, false, created,
                         &st, &e) != 0)
        logf_(a, 1, "rollback incomplete: %s", e.msg);
    mcg_plan_clean_temps(&a->root, new_cfg);
    mcg_plan_disk_free(&rb);
}

static void uncordon(mcg_agent *a, mcg_cluster *c)
{
    mcg_node_patch p = MCG_NODE_PATCH_INIT;
    p.unschedulable = 0;
    patch(a, c, &p);
}

/*
 * The phases of an update, in order, under the names journal.json gives
 * them. Each is recorded in the journal before it starts, so a restarted
 * agent carries on from the phase it had reached.
 */
typedef enum {
    PHASE_WRITE,   /* "apply": back up, then write the files; a failure reverts */
    PHASE_OS,      /* "os": the OS steps, one at a time ("osStep") */
    PHASE_ACTIONS, /* "actions": daemon-reload / reload / restart, or the reboot decided */
    PHASE_REBOOT,  /* "reboot": the reboot command run, done when the boot id changed */
    PHASE_HEALTH,  /* "health": the pool's checks, after the actions or the reboot */
    PHASE_COMMIT,  /* "finish": record current, report Done, uncordon, drop the journal */
    PHASE_UNKNOWN, /* anything else: the journal is refused */
} update_phase;

static const char *const phase_names[PHASE_UNKNOWN] = {"apply",  "os",     "actions",
                                                       "reboot", "health", "finish"};

/*
 * The update in progress, typed. journal.json stays the record, written
 * back at every phase change; these fields are read from it once, when the
 * journal is opened (journal_open).
 */
typedef struct {
    json_t *j;               /* journal.json (borrowed) */
    const char *target;      /* the config applied (in j) */
    const char *from;        /* the config it replaces, NULL: none (in j) */
    update_phase phase;      /* where the update is */
    bool resumed;            /* left by an earlier run */
    bool cordoned;           /* the update cordoned the node */
    bool force;              /* rewrite every path, not only the changed ones */
    mcg_plan_disk disk;      /* backups, restores, directories the update makes */
    mcg_acfg *old, *new_cfg; /* owned; new_cfg moves to a->cur at the commit */
    bool stop;               /* the pass ends here: Degraded, or waiting for the reboot */
} journal;

static void journal_free(journal *jr)
{
    mcg_plan_disk_free(&jr->disk);
    mcg_acfg_free(jr->old);
    mcg_acfg_free(jr->new_cfg);
    jr->old = jr->new_cfg = NULL;
}

/* Record that the update enters phase, and go there. */
static int journal_enter(mcg_agent *a, journal *jr, update_phase phase, mcg_err *err)
{
    json_object_set_new(jr->j, "phase", json_string(phase_names[phase]));
    jr->phase = phase;
    return journal_write(a, jr->j, err);
}

/*
 * Read the typed fields of jr->j and load the configs not given. A target
 * that cannot be loaded ends the update: journal dropped, node uncordoned
 * and Degraded (jr->stop). Fails only on a malformed journal.
 */
static int journal_open(mcg_agent *a, mcg_cluster *c, journal *jr, mcg_agent_result *res,
                        mcg_err *err)
{
    json_t *j = jr->j;
    const char *phase = jstr(j, "phase");
    mcg_err e = {0};
    jr->target = jstr(j, "target");
    jr->from = jstr(j, "from");
    jr->cordoned = json_is_true(json_object_get(j, "cordoned"));
    if (!jr->target || !phase || !mcg_name_is_dns_subdomain(jr->target) ||
        (jr->from && !mcg_name_is_dns_subdomain(jr->from)))
        return mcg_err_set(err, MCG_EINVAL, "state journal.json: malformed");
    jr->phase = PHASE_UNKNOWN;
    for (int k = 0; k < PHASE_UNKNOWN; k++)
        if (!strcmp(phase, phase_names[k]))
            jr->phase = (update_phase)k;
    if (!jr->new_cfg && load_state_cfg(a, jr->target, true, &jr->new_cfg, &e) != 0) {
        set_reason(res, MCG_AGENT_DEGRADED, "resuming update to %s: %s", jr->target, e.msg);
        unlinkat(a->statefd, "journal.json", 0);
        if (jr->cordoned)
            uncordon(a, c);
        report_degraded(a, c, res);
        jr->stop = true;
        return 0;
    }
    if (!jr->old && jr->from && load_state_cfg(a, jr->from, false, &jr->old, &e) != 0)
        logf_(a, 1, "previous config %s: %s (treating as none)", jr->from, e.msg);
    snprintf(res->config, sizeof(res->config), "%s", jr->from ? jr->from : "");
    json_strv(&jr->disk.backups, json_object_get(j, "backups"));
    json_strv(&jr->disk.restores, json_object_get(j, "restores"));
    json_strv(&jr->disk.mkdirs, json_object_get(j, "mkdirs"));
    mcg_strv_sort(&jr->disk.backups);
    mcg_strv_sort(&jr->disk.restores);
    mcg_strv_sort(&jr->disk.mkdirs);
    jr->force = json_is_true(json_object_get(j, "force"));
    return 0;
}

/*
 * Revert: the disk rolled back to the old config after a failed write
 * (why), the journal dropped, the node uncordoned and left Degraded.
 */
static void phase_revert(mcg_agent *a, mcg_cluster *c, journal *jr, mcg_strv *created,
                         mcg_agent_result *res, const mcg_err *why)
{
    rollback(a, jr->old, jr->new_cfg, &jr->disk, created);
    mcg_err e2 = {0};
    if (save_created(a, created, &e2) != 0)
        logf_(a, 1, "%s", e2.msg);
    unlinkat(a->statefd, "journal.json", 0);
    fsync(a->statefd);
    if (jr->cordoned)
        uncordon(a, c);
    set_reason(res, MCG_AGENT_DEGRADED, "applying %s: %s", jr->target, why->msg);
    report_degraded(a, c, res);
    jr->stop = true;
}

/*
 * Back up and write: mcg_plan_execute takes the backups of what mcgit
 * overwrites first (synced), then makes the disk match the target. A
 * failure reverts (phase_revert).
 */
static int phase_write(mcg_agent *a, mcg_cluster *c, journal *jr, mcg_agent_result *res,
                       mcg_err *err)
{
    mcg_exec_stats st = {0, 0};
    mcg_strv created = {0};
    mcg_err e = {0};
    int rc = 0;
    load_created(a, &created);
    mcg_agent_testpoint("journal-written");
    logf_(a, 1, "%s %s (from %s)", jr->resumed ? "resuming update to" : "updating to", jr->target,
          jr->from ? jr->from : "nothing");
    if (mcg_plan_execute(&a->root, a->statefd, jr->old, jr->new_cfg, &jr->disk, jr->force, &created,
                         &st, &e) != 0) {
        phase_revert(a, c, jr, &created, res, &e);
        goto out;
    }
    if ((rc = save_created(a, &created, err)) != 0)
        goto out;
    if (jr->resumed) {
        mcg_plan_clean_temps(&a->root, jr->new_cfg);
        mcg_plan_clean_temps(&a->root, jr->old);
    }
    res->applied = true;
    res->written += st.written;
    res->removed += st.removed;
    rc = journal_enter(
        a, jr, json_array_size(json_object_get(jr->j, "os")) ? PHASE_OS : PHASE_ACTIONS, err);
    mcg_agent_testpoint("written");
out:
    mcg_strv_free(&created);
    return rc;
}

/*
 * The image step of osImageURL (baseimage.c): "record" keeps what the node
 * boots now, once, before its first rebase; "restore" rebases back to it
 * when the field goes (without a record the node stays on its image).
 * *run: the command to run, if any (caller frees). False: failed (reason set).
 */
static bool base_image_step(mcg_agent *a, const json_t *step, char **run, mcg_agent_result *res)
{
    char *rec = NULL;
    size_t len = 0;
    mcg_err e = {0};
    bool have = state_read(a, "base-image", &rec, &len, &e) == 0;
    *run = NULL;
    if (jstr(step, "record")) {
        free(rec);
        if (have || (!a->live && !a->o.host_exec))
            return true;
        rec = mcg_booted_image_query(a->o.host_exec, json_is_true(json_object_get(step, "bootc")),
                                     &e);
        bool ok = rec && state_write(a, "base-image", rec, strlen(rec), &e) == 0;
        if (ok)
            logf_(a, 1, "booted image before the first rebase: %s", rec);
        else
            set_reason(res, MCG_AGENT_DEGRADED, "osImageURL: cannot record the booted image: %s",
                       e.msg);
        free(rec);
        return ok;
    }
    if (!have) {
        logf_(a, 1,
              "osImageURL unset: no image was recorded before a rebase, the node stays on "
              "its image");
        return true;
    }
    rec[strcspn(rec, "\n")] = '\0';
    *run = mcg_booted_image_command(rec);
    if (!*run)
        set_reason(res, MCG_AGENT_DEGRADED,
                   "osImageURL: the recorded booted image '%s' is not "
                   "understood",
                   rec);
    free(rec);
    return *run != NULL;
}

/* One OS step (a command, or a file step); false when it failed (reported Degraded). */
static bool os_step(mcg_agent *a, mcg_cluster *c, const json_t *step, mcg_agent_result *res)
{
    const char *field = jstr(step, "field"), *run = jstr(step, "run");
    mcg_err e = {0};
    if (!field)
        field = "?";
    if (jstr(step, "record") || jstr(step, "restore")) {
        char *back = NULL;
        if (!base_image_step(a, step, &back, res)) {
            report_degraded(a, c, res);
            return false;
        }
        if (!back)
            return true;
        json_t *s2 = json_pack("{s:s,s:s}", "field", field, "run", back);
        bool ok = os_step(a, c, s2, res);
        if (ok)
            unlinkat(a->statefd, "base-image", 0);
        json_decref(s2);
        free(back);
        return ok;
    }
    if (run && !a->live && !a->o.host_exec) {
        logf_(a, 1, "skipped (not live): %s", run);
        return true;
    }
    if (run) {
        char *cmd = a->o.host_exec ? mcg_sprintf("%s %s", a->o.host_exec, run) : mcg_strdup(run);
        int st = run_cmd(a, cmd);
        if (st != 0)
            set_reason(res, MCG_AGENT_DEGRADED, "%s: '%s' failed (exit %d) on node %s", field, cmd,
                       st, a->o.node ? a->o.node : "?");
        free(cmd);
        if (st != 0) {
            report_degraded(a, c, res);
            return false;
        }
        return true;
    }
    if (mcg_osstep_file(&a->root, step, &e) != 0) {
        set_reason(res, MCG_AGENT_DEGRADED, "%s: %s on node %s", field, e.msg,
                   a->o.node ? a->o.node : "?");
        report_degraded(a, c, res);
        return false;
    }
    return true;
}

/* The OS steps from the one the journal reached ("osStep"), each recorded when done. */
static int phase_os(mcg_agent *a, mcg_cluster *c, journal *jr, mcg_agent_result *res, mcg_err *err)
{
    const json_t *steps = json_object_get(jr->j, "os");
    json_int_t k = json_integer_value(json_object_get(jr->j, "osStep"));
    int rc;
    for (; k >= 0 && (size_t)k < json_array_size(steps); k++) {
        if (!os_step(a, c, json_array_get(steps, (size_t)k), res)) {
            jr->stop = true; /* the journal retries this step on the next pass */
            return 0;
        }
        json_object_set_new(jr->j, "osStep", json_integer(k + 1));
        if ((rc = journal_write(a, jr->j, err)) != 0)
            return rc;
    }
    return journal_enter(a, jr, PHASE_ACTIONS, err);
}

/* The systemctl verbs of the journal's actions: daemon-reload, reload 'u', restart 'u'. */
static void action_cmds(const json_t *j, mcg_strv *cmds)
{
    mcg_strv reload = {0}, restart = {0};
    json_strv(&reload, json_object_get(j, "reload"));
    json_strv(&restart, json_object_get(j, "restart"));
    if (json_is_true(json_object_get(j, "daemonReload")))
        mcg_strv_push(cmds, "daemon-reload");
    for (size_t i = 0; i < reload.n; i++) {
        char *s = mcg_sprintf("reload '%s'", reload.v[i]);
        mcg_strv_push(cmds, s);
        free(s);
    }
    for (size_t i = 0; i < restart.n; i++) {
        char *s = mcg_sprintf("restart '%s'", restart.v[i]);
        mcg_strv_push(cmds, s);
        free(s);
    }
    mcg_strv_free(&reload);
    mcg_strv_free(&restart);
}

/* Run the journal's systemctl actions (live only); false when one failed (reason set). */
static bool run_actions(mcg_agent *a, const json_t *j, mcg_agent_result *res)
{
    const char *sc = a->o.systemctl ? a->o.systemctl : "systemctl";
    mcg_strv cmds = {0};
    action_cmds(j, &cmds);
    bool failed = false;
    for (size_t i = 0; i < cmds.n && !failed; i++) {
        if (!a->live) {
            logf_(a, 1, "skipped (not live): systemctl %s", cmds.v[i]);
            continue;
        }
        char *cmd = mcg_sprintf("%s %s", sc, cmds.v[i]);
        int st = run_cmd(a, cmd);
        if (st != 0) {
            set_reason(res, MCG_AGENT_DEGRADED, "%s failed (exit %d)", cmd, st);
            failed = true;
        }
        free(cmd);
    }
    mcg_strv_free(&cmds);
    return !failed;
}

/* After the actions or the reboot: the pool's health checks, if it has any
 * (a revert runs none: it goes back to the config that was healthy). */
static update_phase after_disruption(const journal *jr)
{
    return jr->new_cfg->ign.health && !json_object_get(jr->j, "revert") ? PHASE_HEALTH
                                                                        : PHASE_COMMIT;
}

/*
 * Disruption: a reboot is recorded with the boot id it must change, for
 * phase_reboot; otherwise daemon-reload, reload and restart run.
 */
static int phase_disruption(mcg_agent *a, mcg_cluster *c, journal *jr, mcg_agent_result *res,
                            mcg_err *err)
{
    if (json_is_true(json_object_get(jr->j, "reboot"))) {
        char bid[64];
        read_boot_id(bid);
        json_object_set_new(jr->j, "bootId", json_string(bid));
        return journal_enter(a, jr, PHASE_REBOOT, err);
    }
    mcg_agent_testpoint("before-actions");
    if (!run_actions(a, jr->j, res)) { /* files are in place; the journal retries the actions */
        report_degraded(a, c, res);
        jr->stop = true;
        return 0;
    }
    return journal_enter(a, jr, after_disruption(jr), err);
}

/*
 * The reboot of a live node: run the reboot command once, then wait (the
 * pass ends Working) until the boot id differs from the journal's. True
 * when the pass ends here (waiting, or the command failed).
 */
static bool reboot_live(mcg_agent *a, mcg_cluster *c, journal *jr, mcg_agent_result *res)
{
    char bid[64];
    read_boot_id(bid);
    const char *was = jstr(jr->j, "bootId");
    if (was && strcmp(was, bid) != 0) {
        logf_(a, 1, "reboot done (boot id %s)", bid);
        return false;
    }
    if (!a->reboot_issued) {
        a->reboot_issued = true;
        event(a, c, false, "Reboot", "Node will reboot into config %s", jr->target);
        const char *cmd = a->o.reboot_command ? a->o.reboot_command : "systemctl reboot";
        mcg_agent_testpoint("before-reboot");
        int st = run_cmd(a, cmd);
        if (st != 0) {
            a->reboot_issued = false;
            set_reason(res, MCG_AGENT_DEGRADED, "reboot command '%s' failed (exit %d)", cmd, st);
            report_degraded(a, c, res);
            return true;
        }
    }
    set_reason(res, MCG_AGENT_WORKING, "waiting for the reboot into %s", jr->target);
    snprintf(res->config, sizeof(res->config), "%s", jr->from ? jr->from : "");
    return true;
}

/* The reboot: on a live node run and awaited; otherwise its command run, or only recorded. */
static int phase_reboot(mcg_agent *a, mcg_cluster *c, journal *jr, mcg_agent_result *res,
                        mcg_err *err)
{
    res->rebooted = true;
    if (a->live) {
        if (reboot_live(a, c, jr, res)) {
            jr->stop = true;
            return 0;
        }
    } else if (a->o.reboot_command) {
        event(a, c, false, "Reboot", "Node will reboot into config %s", jr->target);
        int st = run_cmd(a, a->o.reboot_command);
        if (st != 0) {
            set_reason(res, MCG_AGENT_DEGRADED, "reboot command '%s' failed (exit %d)",
                       a->o.reboot_command, st);
            report_degraded(a, c, res);
            jr->stop = true;
            return 0;
        }
    } else {
        event(a, c, false, "Reboot", "Node will reboot into config %s (recorded: not live)",
              jr->target);
        logf_(a, 1, "reboot recorded (not live: nothing run)");
    }
    return journal_enter(a, jr, after_disruption(jr), err);
}

/* ------------------------------------------------------------ health */

static int do_update(mcg_agent *a, mcg_cluster *c, const char *name, const char *spec, size_t len,
                     mcg_agent_result *res, mcg_err *err);

#define HEALTH_POLL_MS 1000
#define FAILED_TARGET "failed-target"

/*
 * One round of the pool's checks: 0 when all pass; 1 while one is not
 * passing yet (*name, why: the first); 2 when a unit failed for good.
 */
static int health_round(mcg_agent *a, const json_t *checks, const char **name, char *why,
                        size_t whyn)
{
    mcg_health_env env = {a->live, a->o.systemctl, a->o.host_exec};
    size_t i;
    json_t *hc;
    json_array_foreach(checks, i, hc) {
        char *cmd = mcg_health_cmd(hc, &env, false);
        if (!cmd)
            continue; /* this node cannot run it (neither live nor given the means) */
        int st = run_sh(cmd);
        free(cmd);
        if (st == 0)
            continue;
        *name = mcg_health_name(hc);
        const char *unit = json_string_value(json_object_get(hc, "unit"));
        char *probe = mcg_health_cmd(hc, &env, true);
        bool failed = probe && run_sh(probe) == 0;
        free(probe);
        if (unit)
            snprintf(why, whyn, "unit %s %s", unit, failed ? "failed" : "is not active");
        else
            snprintf(why, whyn, "'%s' exited %d",
                     json_string_value(json_array_get(json_object_get(hc, "command"), 0)), st);
        return failed ? 2 : 1;
    }
    return 0;
}

/* The update's target is what the disk holds: recorded as current, and as failed. */
static int record_failed(mcg_agent *a, const char *target, const char *reason, mcg_err *err)
{
    char *cur = mcg_sprintf("%s\n", target), *failed = mcg_sprintf("%s\n%s\n", target, reason);
    int rc = state_write(a, FAILED_TARGET, failed, strlen(failed), err);
    if (!rc)
        rc = state_write(a, "current", cur, strlen(cur), err);
    free(cur);
    free(failed);
    return rc;
}

/*
 * A check failed: the target is remembered as failed (never applied again
 * while it is the desired config) and, with onFailure Revert, the previous
 * config goes back as an update of its own (files, units, keys, OS fields,
 * a reboot if it needs one), which ends Degraded with the reason. With Halt
 * (or nothing to go back to) the node stays as it is, Degraded.
 */
static int health_failed(mcg_agent *a, mcg_cluster *c, journal *jr, const char *reason,
                         mcg_agent_result *res, mcg_err *err)
{
    const char *on = json_string_value(json_object_get(jr->new_cfg->ign.health, "onFailure"));
    bool revert = jr->from && !(on && !strcmp(on, "Halt"));
    int rc = record_failed(a, jr->target, reason, err);
    if (rc)
        return rc;
    unlinkat(a->statefd, "journal.json", 0);
    fsync(a->statefd);
    jr->stop = true;
    logf_(a, 1, "%s%s", reason, revert ? ": reverting" : "");
    event(a, c, true, "HealthCheckFailed", "%s", reason);
    char *spec = NULL, *path = revert ? mcg_sprintf("configs/%s.json", jr->from) : NULL;
    size_t len = 0;
    mcg_err e = {0};
    if (revert && state_read(a, path, &spec, &len, &e) != 0) {
        logf_(a, 1, "cannot revert: %s", e.msg);
        revert = false;
    }
    free(path);
    if (!revert) {
        set_reason(res, MCG_AGENT_DEGRADED, "%s", reason);
        snprintf(res->config, sizeof(res->config), "%s", jr->target);
        mcg_node_patch p = MCG_NODE_PATCH_INIT;
        p.current = jr->target;
        p.state = "Degraded";
        p.reason = res->reason;
        if (jr->cordoned) /* as after a failed write: Degraded nodes are not left cordoned */
            p.unschedulable = 0;
        patch(a, c, &p);
        return 0;
    }
    a->revert_reason = mcg_strdup(reason);
    rc = do_update(a, c, jr->from, spec, len, res, err);
    free(a->revert_reason);
    a->revert_reason = NULL;
    free(spec);
    return rc;
}

/*
 * Health: the pool's checks, run until all pass or the timeout (from the
 * first time this phase was entered, kept in the journal across a restart
 * or the reboot) ends. Meanwhile the node is Working, its reason naming the
 * check it waits for.
 */
static int phase_health(mcg_agent *a, mcg_cluster *c, journal *jr, mcg_agent_result *res,
                        mcg_err *err)
{
    const json_t *h = jr->new_cfg->ign.health, *checks = json_object_get(h, "checks");
    int64_t timeout = (int64_t)json_integer_value(json_object_get(h, "timeout"));
    int64_t now = (int64_t)time(NULL), deadline;
    int rc;
    if (!json_is_integer(json_object_get(jr->j, "healthDeadline"))) {
        json_object_set_new(jr->j, "healthDeadline", json_integer(now + timeout));
        if ((rc = journal_write(a, jr->j, err)) != 0)
            return rc;
    }
    deadline = (int64_t)json_integer_value(json_object_get(jr->j, "healthDeadline"));
    const char *name = NULL, *shown = NULL;
    char why[256] = "";
    int st;
    while ((st = health_round(a, checks, &name, why, sizeof(why))) == 1 &&
           (now = (int64_t)time(NULL)) < deadline) {
        if (a->stop && *a->stop) { /* stopping: the journal resumes the checks, same deadline */
            set_reason(res, MCG_AGENT_WORKING, "health checks interrupted: the agent is stopping");
            jr->stop = true;
            return 0;
        }
        if (name != shown) { /* Working, naming the check, once per check */
            set_reason(res, MCG_AGENT_WORKING, "waiting for health check %s (%s)", name, why);
            mcg_node_patch p = MCG_NODE_PATCH_INIT;
            p.state = "Working";
            p.reason = res->reason;
            patch(a, c, &p);
            logf_(a, 1, "%s", res->reason);
            shown = name;
        }
        struct timespec ts = {HEALTH_POLL_MS / 1000, (HEALTH_POLL_MS % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (st == 0) {
        logf_(a, 1, "health checks passed");
        return journal_enter(a, jr, PHASE_COMMIT, err);
    }
    char human[32];
    mcg_human_duration((int64_t)time(NULL) - (deadline - timeout), human);
    char *reason = mcg_sprintf("health check %s failed %s after update to %s: %s", name, human,
                               jr->target, why);
    rc = health_failed(a, c, jr, reason, res, err);
    free(reason);
    return rc;
}

/*
 * Commit: record current, report Done (and uncordon), drop the journal and
 * keep the target as the current config. With the cluster unreachable the
 * journal stays, so that Done is reported on a later pass.
 */
static int phase_commit(mcg_agent *a, mcg_cluster *c, journal *jr, mcg_agent_result *res,
                        mcg_err *err)
{
    const char *target = jr->target;
    char *line = mcg_sprintf("%s\n", target);
    mcg_agent_testpoint("before-commit");
    int rc = state_write(a, "current", line, strlen(line), err);
    free(line);
    if (rc)
        return rc;
    mcg_agent_testpoint("current-written");
    prune_configs(a, target);
    mcg_node_patch p = MCG_NODE_PATCH_INIT;
    p.current = target;
    p.state = "Done";
    /* MCO clears the reason on Done; a first config says what it took as installed */
    const char *installed = json_string_value(json_object_get(jr->j, "installed"));
    p.reason = installed ? installed : "";
    if (installed)
        logf_(a, 1, "%s", installed);
    if (jr->cordoned)
        p.unschedulable = 0;
    snprintf(res->config, sizeof(res->config), "%s", target);
    res->state = MCG_AGENT_DONE;
    res->reason[0] = '\0';
    const char *revert = json_string_value(json_object_get(jr->j, "revert"));
    if (revert) { /* back on the healthy config, Degraded with why */
        set_reason(res, MCG_AGENT_DEGRADED, "%s; reverted to %s", revert, target);
        p.state = "Degraded";
        p.reason = res->reason;
    }
    logf_(a, 1, "%s: %s", revert ? "Reverted" : "Done", target);
    if (patch(a, c, &p) != 0) {
        res->offline = true; /* keep the journal: report once the cluster is back */
        return 0;
    }
    if (jr->cordoned)
        event(a, c, false, "Uncordon",
              "Update completed for config %s and node has been uncordoned", target);
    if (!revert)
        event(a, c, false, "NodeDone", "Setting node %s, currentConfig %s to Done", a->o.node,
              target);
    a->degraded_evented[0] = '\0';
    unlinkat(a->statefd, "journal.json", 0);
    fsync(a->statefd);
    mcg_agent_testpoint("committed");
    mcg_acfg_free(a->cur);
    a->cur = jr->new_cfg; /* transferred */
    jr->new_cfg = NULL;
    return 0;
}

/*
 * Carry out the journal j from its recorded phase, one phase function
 * after another until the update is committed or a phase stops the pass.
 * Takes ownership of old and new_cfg (either may be NULL: loaded from the
 * state directory). Always leaves the outcome in res; returns 0 unless the
 * state directory itself fails.
 */
static int journal_run(mcg_agent *a, mcg_cluster *c, json_t *j, mcg_acfg *old, mcg_acfg *new_cfg,
                       bool resumed, mcg_agent_result *res, mcg_err *err)
{
    journal jr = {.j = j, .resumed = resumed, .old = old, .new_cfg = new_cfg};
    int rc = journal_open(a, c, &jr, res, err);
    if (!rc && !jr.stop && jr.phase == PHASE_WRITE)
        rc = phase_write(a, c, &jr, res, err);
    if (!rc && !jr.stop && jr.phase == PHASE_OS)
        rc = phase_os(a, c, &jr, res, err);
    if (!rc && !jr.stop && jr.phase == PHASE_ACTIONS)
        rc = phase_disruption(a, c, &jr, res, err);
    if (!rc && !jr.stop && jr.phase == PHASE_REBOOT)
        rc = phase_reboot(a, c, &jr, res, err);
    if (!rc && !jr.stop && jr.phase == PHASE_HEALTH)
        rc = phase_health(a, c, &jr, res, err);
    if (!rc && !jr.stop && jr.phase == PHASE_COMMIT)
        rc = phase_commit(a, c, &jr, res, err);
    else if (!rc && !jr.stop && jr.phase == PHASE_UNKNOWN)
        rc = mcg_err_set(err, MCG_EINVAL, "state journal.json: unknown phase '%s'",
                         jstr(j, "phase"));
    journal_free(&jr);
    return rc;
}

/* ------------------------------------------------------------ update */

static bool under_state(const mcg_agent *a, const char *path)
{
    if (!a->state_rel)
        return false;
    size_t n = strlen(a->state_rel);
    return !strncmp(path, a->state_rel, n) && (path[n] == '\0' || path[n] == '/');
}

/*
 * An update as do_update works it out before anything changes: what it
 * replaces, the parsed target, the OS steps, the disk plan, the
 * disruption. Freed with update_free.
 */
typedef struct {
    char *from;              /* the name in `current`, NULL: none */
    mcg_acfg *old, *new_cfg; /* owned until the journal takes them */
    mcg_disruption_policy pol;
    mcg_plan_disk disk;
    mcg_disruption act;
    json_t *os_steps;
    bool cordoned;      /* the update cordoned the node */
    state_pending copy; /* the kept copy of the target, until it is written */
} update;

static void update_free(mcg_agent *a, update *u)
{
    state_write_abort(a, &u->copy); /* only when the update stopped before it was finished */
    json_decref(u->os_steps);
    mcg_disruption_free(&u->act);
    mcg_plan_disk_free(&u->disk);
    mcg_policy_free(&u->pol);
    mcg_acfg_free(u->old);
    mcg_acfg_free(u->new_cfg);
    free(u->from);
}

/*
 * Plan, first part: the target name/spec checked against its hash and
 * parsed (its kept copy written meanwhile), the old config found. False
 * when the update is refused (reason in res).
 */
static bool update_load(mcg_agent *a, update *u, const char *name, const char *spec, size_t len,
                        mcg_agent_result *res)
{
    mcg_err e = {0};
    if (!mcg_render_name_matches(name, spec, len) || !mcg_name_is_dns_subdomain(name)) {
        set_reason(res, MCG_AGENT_DEGRADED, "rendered config %s does not match its hash", name);
        return false;
    }
    if (u->from && a->cur && !strcmp(a->cur->name, u->from)) {
        u->old = a->cur; /* parsed already (drift checks): transferred */
        a->cur = NULL;
    } else if (u->from && load_state_cfg(a, u->from, false, &u->old, &e) != 0) {
        logf_(a, 1, "previous config %s: %s (treating as none)", u->from, e.msg);
        u->old = NULL;
    }
    /* the kept copy of the config is written back while it is parsed */
    char *cpath = mcg_sprintf("configs/%s.json", name);
    int rc = state_write_start(a, cpath, spec, len, &u->copy, &e);
    free(cpath);
    if (rc) {
        set_reason(res, MCG_AGENT_DEGRADED, "%s", e.msg);
        return false;
    }
    if (mcg_acfg_load(&u->new_cfg, &a->root, name, spec, len, true, &e) != 0) {
        set_reason(res, MCG_AGENT_DEGRADED, "rendered config %s: %s", name, e.msg);
        return false;
    }
    for (size_t i = 0; i < u->new_cfg->notes.n; i++) /* skipped, as MCO's daemon skips it */
        logf_(a, 1, "%s", u->new_cfg->notes.v[i]);
    if (state_write_finish(a, &u->copy, &e) != 0) {
        set_reason(res, MCG_AGENT_DEGRADED, "%s", e.msg);
        return false;
    }
    for (size_t i = 0; i < u->new_cfg->n; i++)
        if (under_state(a, u->new_cfg->ents[i].path)) {
            set_reason(res, MCG_AGENT_DEGRADED, "/%s is inside the agent's state directory",
                       u->new_cfg->ents[i].path);
            return false;
        }
    return true;
}

/*
 * Plan, second part: the OS steps, the node disruption policy, the disk
 * plan (mcg_plan_prepare: nothing is written yet) and the actions. False
 * when the update is refused (reason in res).
 */
static bool update_plan(mcg_agent *a, mcg_cluster *c, update *u, const char *name,
                        mcg_agent_result *res)
{
    mcg_err e = {0};
    bool os_reboot = false;
    mcg_host host;
    mcg_host_detect(&host, &a->root, a->live);
    if (mcg_osplan_make(&u->os_steps, &os_reboot, &a->root, &host, u->old, u->new_cfg, a->o.node,
                        &e) != 0) {
        set_reason(res, MCG_AGENT_DEGRADED, "rendered config %s: %s", name, e.msg);
        /* the OS plan names a refusal of MCO's isConfigReconcilable so */
        res->unreconcilable = !strncmp(e.msg, "unreconcilable: ", 16);
        return false;
    }
    if (json_array_size(u->os_steps))
        logf_(a, 1, "OS steps: %zu (boot loader: %s)", json_array_size(u->os_steps),
              mcg_boot_name(host.boot));
    if (c && mcg_cluster_get_policy(c, &u->pol, &e) != 0) {
        set_reason(res, MCG_AGENT_DEGRADED, "node disruption policy: %s", e.msg);
        return false;
    }
    if (mcg_plan_prepare(&u->disk, &a->root, a->statefd, u->old, u->new_cfg, &e) != 0) {
        set_reason(res, MCG_AGENT_DEGRADED, "%s", e.msg);
        return false;
    }
    if (u->old)
        mcg_plan_decide(&u->act, u->old, u->new_cfg, c ? &u->pol : NULL);
    else /* a first apply: what the node already holds needs nothing */
        mcg_plan_decide_first(&u->act, &a->root, u->new_cfg, c ? &u->pol : NULL);
    if (os_reboot) /* MCO: kernel arguments, OS image, extensions, kernel type need one */
        u->act.reboot = true;
    char *acts = mcg_disruption_str(&u->act);
    logf_(a, 1, "update %s -> %s: actions %s", u->from ? u->from : "nothing", name, acts);
    free(acts);
    return true;
}

/*
 * Before the journal: the node reported Working, and cordoned and drained
 * when the update reboots or drains. False when the drain failed (reason
 * in res, node uncordoned).
 */
static bool update_drain(mcg_agent *a, mcg_cluster *c, update *u, const char *name,
                         mcg_agent_result *res)
{
    mcg_err e = {0};
    mcg_node_patch p = MCG_NODE_PATCH_INIT;
    p.state = "Working";
    p.reason = "";
    patch(a, c, &p);
    if (!c || !(u->act.reboot || u->act.drain))
        return true;
    mcg_node_patch q = MCG_NODE_PATCH_INIT;
    q.unschedulable = 1;
    /* once per target: a drain that keeps failing is retried every pass */
    bool tell = strcmp(a->drain_evented, name) != 0;
    if (patch(a, c, &q) == 0) {
        u->cordoned = true;
        if (tell)
            event(a, c, false, "Cordon", "Cordoned node to apply update");
    }
    if (tell)
        event(a, c, false, "Drain", "Draining node to update config.");
    snprintf(a->drain_evented, sizeof(a->drain_evented), "%s", name);
    if (mcg_cluster_drain(c, a->o.node, &e) != 0) {
        set_reason(res, MCG_AGENT_DEGRADED, "drain: %s", e.msg);
        if (u->cordoned)
            uncordon(a, c);
        return false;
    }
    return true;
}

/* The journal of update u to name, at its first phase; takes u->os_steps. */
static json_t *journal_new(mcg_agent *a, update *u, const char *name)
{
    json_t *j = json_object();
    json_object_set_new(j, "version", json_integer(1));
    json_object_set_new(j, "target", json_string(name));
    json_object_set_new(j, "from", u->from ? json_string(u->from) : json_null());
    json_object_set_new(j, "force", json_boolean(a->force));
    json_object_set_new(j, "phase", json_string(phase_names[PHASE_WRITE]));
    json_object_set_new(j, "backups", strv_json(&u->disk.backups));
    json_object_set_new(j, "restores", strv_json(&u->disk.restores));
    json_object_set_new(j, "mkdirs", strv_json(&u->disk.mkdirs));
    json_object_set_new(j, "reboot", json_boolean(u->act.reboot));
    json_object_set_new(j, "drain", json_boolean(u->act.drain));
    json_object_set_new(j, "daemonReload", json_boolean(u->act.daemon_reload));
    json_object_set_new(j, "reload", strv_json(&u->act.reload));
    json_object_set_new(j, "restart", strv_json(&u->act.restart));
    json_object_set_new(j, "cordoned", json_boolean(u->cordoned));
    json_object_set_new(j, "os", u->os_steps);
    u->os_steps = NULL;
    json_object_set_new(j, "osStep", json_integer(0));
    if (a->revert_reason) /* going back after a failed health check: ends Degraded */
        json_object_set_new(j, "revert", json_string(a->revert_reason));
    /* a first config: the install-time sections it holds, for the status */
    char *note = u->old ? NULL : mcg_osconf_installed_note(&a->root, u->new_cfg);
    if (note)
        json_object_set_new(j, "installed", json_string(note));
    free(note);
    return j;
}

/*
 * Update the disk to config name/spec (the hash is checked here): plan,
 * cordon and drain, write the journal, then carry it out (journal_run).
 */
static int do_update(mcg_agent *a, mcg_cluster *c, const char *name, const char *spec, size_t len,
                     mcg_agent_result *res, mcg_err *err)
{
    mcg_err e = {0};
    update u;
    memset(&u, 0, sizeof(u));
    u.copy.fd = -1;
    json_t *j = NULL;
    int rc = 0;
    u.from = read_current(a);
    if (!update_load(a, &u, name, spec, len, res) || !update_plan(a, c, &u, name, res) ||
        !update_drain(a, c, &u, name, res))
        goto degraded;
    j = journal_new(a, &u, name);
    if (journal_write(a, j, &e) != 0) {
        if (u.cordoned)
            uncordon(a, c);
        set_reason(res, MCG_AGENT_DEGRADED, "%s", e.msg);
        goto degraded;
    }
    rc = journal_run(a, c, j, u.old, u.new_cfg, false, res, err);
    u.old = u.new_cfg = NULL; /* transferred */
    goto out;
degraded:
    report_degraded(a, c, res);
    snprintf(res->config, sizeof(res->config), "%s", u.from ? u.from : "");
out:
    json_decref(j);
    update_free(a, &u);
    return rc;
}

/* ------------------------------------------------------------- drift */

static void drift_pass(mcg_agent *a, mcg_cluster *c, const mcg_node *n, mcg_agent_result *res)
{
    mcg_acfg *cur = get_current(a);
    if (!cur) {
        res->state = MCG_AGENT_DONE;
        return;
    }
    snprintf(res->config, sizeof(res->config), "%s", cur->name);
    mcg_strv diffs = {0};
    mcg_err e = {0};
    mcg_drift_check(&a->root, cur, &diffs, &e);
    if (diffs.n) {
        mcg_buf b = MCG_BUF_INIT;
        mcg_buf_puts(&b, "drift: ");
        for (size_t i = 0; i < diffs.n && i < DRIFT_LIST_MAX; i++)
            mcg_buf_printf(&b, "%s%s", i ? "; " : "", diffs.v[i]);
        if (diffs.n > DRIFT_LIST_MAX)
            mcg_buf_printf(&b, "; and %zu more", diffs.n - DRIFT_LIST_MAX);
        set_reason(res, MCG_AGENT_DEGRADED, "%s", b.ptr);
        mcg_buf_free(&b);
        if (c && n &&
            (!n->state || strcmp(n->state, "Degraded") || !n->reason ||
             strcmp(n->reason, res->reason)))
            report_degraded(a, c, res);
        else
            logf_(a, 2, "Degraded: %s", res->reason);
    } else {
        res->state = MCG_AGENT_DONE;
        if (c && n &&
            (!n->state || strcmp(n->state, "Done") || (n->reason && *n->reason) || !n->current ||
             strcmp(n->current, cur->name))) {
            mcg_node_patch p = MCG_NODE_PATCH_INIT;
            p.current = cur->name;
            p.state = "Done";
            p.reason = "";
            patch(a, c, &p);
            logf_(a, 1, "Done: %s", cur->name);
            a->degraded_evented[0] = '\0'; /* a new problem is a new event */
        }
    }
    mcg_strv_free(&diffs);
}

int mcg_agent_check_drift(mcg_agent_result *res, mcg_agent *a, mcg_err *err)
{
    (void)err;
    memset(res, 0, sizeof(*res));
    drift_pass(a, NULL, NULL, res);
    return 0;
}

/* ------------------------------------------------------------- passes */

/* Finish a journal left by an earlier run, if any. */
static int resume(mcg_agent *a, mcg_cluster *c, mcg_agent_result *res, bool *had, mcg_err *err)
{
    char *data;
    size_t len;
    mcg_err e = {0};
    *had = false;
    int rc = state_read(a, "journal.json", &data, &len, &e);
    if (rc == MCG_ENOTFOUND)
        return 0;
    if (rc)
        return mcg_err_set(err, rc, "%s", e.msg);
    *had = true;
    json_error_t je;
    json_t *j = json_loadb(data, len, 0, &je);
    free(data);
    if (!j || !json_is_object(j)) {
        json_decref(j);
        return mcg_err_set(err, MCG_EINVAL, "state journal.json: invalid JSON");
    }
    rc = journal_run(a, c, j, NULL, NULL, true, res, err);
    json_decref(j);
    return rc;
}

/*
 * A target whose health check failed is not applied again while it stays
 * the desired config: the node stays Degraded with the reason (and, after a
 * revert, the config it went back to). Another desired config forgets it.
 * True when the pass ends here.
 */
static bool held_failed(mcg_agent *a, mcg_cluster *c, const char *desired, const char *cur,
                        mcg_agent_result *res)
{
    char *data = NULL;
    size_t len = 0;
    mcg_err e = {0};
    if (state_read(a, FAILED_TARGET, &data, &len, &e) != 0)
        return false;
    char *nl = strchr(data, '\n');
    const char *reason = nl ? nl + 1 : "";
    if (nl)
        *nl = '\0';
    bool held = desired && !strcmp(data, desired);
    if (held) {
        char *end = strchr(reason, '\n');
        set_reason(res, MCG_AGENT_DEGRADED, "%.*s%s%s",
                   end ? (int)(end - reason) : (int)strlen(reason), reason,
                   cur && strcmp(cur, data) ? "; reverted to " : "",
                   cur && strcmp(cur, data) ? cur : "");
        snprintf(res->config, sizeof(res->config), "%s", cur ? cur : "");
        report_degraded(a, c, res);
    } else {
        unlinkat(a->statefd, FAILED_TARGET, 0);
    }
    free(data);
    return held;
}

/* MCO's way to make its daemon apply its config again, whatever the disk holds. */
#define FORCE_FILE "run/machine-config-daemon-force"

/* Whether the root holds FORCE_FILE; it is removed, and the pass applies with force. */
static bool take_force_file(mcg_agent *a)
{
    int dfd;
    const char *base;
    mcg_err e = {0};
    struct stat st;
    if (mcg_sroot_parent(&a->root, FORCE_FILE, false, &dfd, &base, &e) != 0 ||
        fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return false;
    if (unlinkat(dfd, base, 0) != 0)
        logf_(a, 1, "/%s: cannot remove it: %s", FORCE_FILE, strerror(errno));
    a->force = true;
    return true;
}

int mcg_agent_apply(mcg_agent_result *res, mcg_agent *a, const char *name, const char *spec,
                    size_t len, mcg_err *err)
{
    memset(res, 0, sizeof(*res));
    bool had;
    int rc = resume(a, NULL, res, &had, err);
    if (rc || (had && res->state != MCG_AGENT_DONE))
        return rc;
    char *cur = read_current(a);
    bool same = cur && !strcmp(cur, name);
    free(cur);
    if (same && !a->force) {
        drift_pass(a, NULL, NULL, res);
        return 0;
    }
    rc = do_update(a, NULL, name, spec, len, res, err);
    if (!rc && res->state == MCG_AGENT_DONE)
        a->force = false;
    return rc;
}

/*
 * A live host is proven to be the node again at the start of every pass,
 * before a journal is resumed or anything is written, cordoned or reported:
 * a node unbound and bound to new hardware while this agent runs is not
 * managed from here any more. 0: proven. MCG_ETRUST: this host is not (or
 * no longer) the node, err says why in one line. *offline: the node could
 * not be read (cluster unreachable): nothing proven, the pass may only
 * check drift without writing.
 */
static int reprove_host(mcg_agent *a, mcg_cluster *c, bool *offline, mcg_err *err)
{
    mcg_host_identity h;
    mcg_node n;
    mcg_err e = {0};
    *offline = false;
    if (!a->live)
        return 0;
    memset(&n, 0, sizeof(n));
    if (mcg_agent_host_identity(&h, a->o.root ? a->o.root : "/", &e) != 0)
        return mcg_err_set(err, MCG_ETRUST, "refusing to manage this host as node %s: %s",
                           a->o.node, e.msg);
    int rc = mcg_cluster_get_node(c, a->o.node, &n, &e);
    if (rc == MCG_ENOTFOUND || rc == MCG_EINVAL)
        return mcg_err_set(err, MCG_ETRUST, "refusing to manage this host (%s): node %s: %s",
                           h.hostname, a->o.node, e.msg);
    if (rc) {
        *offline = true;
        logf_(a, 1, "identity not re-proven (%s): checking drift offline, nothing written", e.msg);
        return 0;
    }
    rc = mcg_agent_identity_match(&h, &n, err);
    mcg_node_clear(&n);
    return rc;
}

int mcg_agent_run_once(mcg_agent_result *res, mcg_agent *a, mcg_cluster *c, mcg_err *err)
{
    memset(res, 0, sizeof(*res));
    mcg_node n;
    memset(&n, 0, sizeof(n));
    char *spec = NULL, *cur = NULL;
    size_t len = 0;
    bool had, offline;
    mcg_err e = {0};
    int rc = reprove_host(a, c, &offline, err);
    if (rc)
        return rc;
    if (offline) {
        drift_pass(a, NULL, NULL, res);
        res->offline = true;
        return 0;
    }
    rc = resume(a, c, res, &had, err);
    if (rc || (had && res->state != MCG_AGENT_DONE))
        return rc;
    if ((rc = mcg_cluster_get_node(c, a->o.node, &n, &e)) != 0) {
        if (rc == MCG_ENOTFOUND || rc == MCG_EINVAL)
            return mcg_err_set(err, rc, "%s", e.msg);
        rc = 0;
        logf_(a, 1, "cluster unreachable (%s): checking drift offline", e.msg);
        drift_pass(a, NULL, NULL, res);
        res->offline = true;
        goto out;
    }
    cur = read_current(a);
    if (held_failed(a, c, n.desired, cur, res))
        goto out;
    if (take_force_file(a))
        logf_(a, 1, "/%s found (and removed): re-applying %s", FORCE_FILE,
              n.desired ? n.desired : "nothing");
    if (!n.desired || !*n.desired) {
        drift_pass(a, cur ? c : NULL, &n, res);
        goto out;
    }
    if (cur && !strcmp(cur, n.desired) && !a->force) {
        drift_pass(a, c, &n, res);
        goto out;
    }
    if (mcg_cluster_get_config(c, n.desired, &spec, &len, &e) != 0) {
        set_reason(res, MCG_AGENT_DEGRADED, "rendered config %s: %s", n.desired, e.msg);
        report_degraded(a, c, res);
        snprintf(res->config, sizeof(res->config), "%s", cur ? cur : "");
        goto out;
    }
    rc = do_update(a, c, n.desired, spec, len, res, err);
    if (!rc && res->state == MCG_AGENT_DONE)
        a->force = false;
out:
    free(spec);
    free(cur);
    mcg_node_clear(&n);
    return rc;
}

int mcg_agent_metrics_declare(mcg_metrics *m, mcg_err *err)
{
    static const double buckets[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                     0.5,   1,      2.5,   5,    10,    30,   60,  300};
    int rc;
    if ((rc = mcg_metrics_declare(m, "mcgit_agent_passes_total", MCG_METRIC_COUNTER,
                                  "Agent passes, by result (ok, failed, offline: the cluster "
                                  "could not be reached and drift was checked locally).",
                                  "node,result", NULL, 0, err)) != 0 ||
        (rc = mcg_metrics_declare(m, "mcgit_agent_pass_duration_seconds", MCG_METRIC_HISTOGRAM,
                                  "Agent passes: an update (apply, actions) or a drift check.",
                                  "node", buckets, sizeof(buckets) / sizeof(*buckets), err)) != 0 ||
        (rc = mcg_metrics_declare(m, "mcgit_agent_node_state", MCG_METRIC_GAUGE,
                                  "1 for the node's state after the last pass (Done, Working, "
                                  "Degraded), 0 for the others.",
                                  "node,state", NULL, 0, err)) != 0 ||
        (rc = mcg_metrics_declare(m, "mcgit_agent_drift_detections_total", MCG_METRIC_COUNTER,
                                  "Times drift was found (a managed path differs from the "
                                  "config on disk; counted once until it changes).",
                                  "node", NULL, 0, err)) != 0 ||
        (rc = mcg_metrics_declare(m, "mcgit_agent_applies_total", MCG_METRIC_COUNTER,
                                  "Passes that changed files (an update applied).", "node", NULL, 0,
                                  err)) != 0 ||
        (rc = mcg_metrics_declare(m, "mcgit_agent_reboots_total", MCG_METRIC_COUNTER,
                                  "Reboot actions carried out (or recorded, not live).", "node",
                                  NULL, 0, err)) != 0)
        return rc;
    return 0;
}

/* Record one pass of the loop; last_drift: the drift reason last counted. */
static void record_pass(mcg_agent *a, int rc, const mcg_agent_result *res, double seconds,
                        char *last_drift, size_t n)
{
    mcg_metrics *m = a->o.metrics;
    const char *node = a->o.node ? a->o.node : "";
    if (!m)
        return;
    const char *result = rc ? "failed" : res->offline ? "offline" : "ok";
    mcg_metrics_add(m, "mcgit_agent_passes_total", MCG_LV(node, result), 1);
    mcg_metrics_observe(m, "mcgit_agent_pass_duration_seconds", MCG_LV(node), seconds);
    if (rc)
        return;
    for (int s = MCG_AGENT_DONE; s <= MCG_AGENT_DEGRADED; s++)
        mcg_metrics_set(m, "mcgit_agent_node_state",
                        MCG_LV(node, mcg_agent_state_name((mcg_agent_state)s)),
                        res->state == (mcg_agent_state)s ? 1 : 0);
    bool drift = res->state == MCG_AGENT_DEGRADED && !strncmp(res->reason, "drift: ", 7);
    if (drift && strcmp(last_drift, res->reason) != 0)
        mcg_metrics_add(m, "mcgit_agent_drift_detections_total", MCG_LV(node), 1);
    snprintf(last_drift, n, "%s", drift ? res->reason : "");
    if (res->applied)
        mcg_metrics_add(m, "mcgit_agent_applies_total", MCG_LV(node), 1);
    if (res->rebooted)
        mcg_metrics_add(m, "mcgit_agent_reboots_total", MCG_LV(node), 1);
}

int mcg_agent_loop(mcg_agent *a, mcg_cluster *c, unsigned interval, volatile sig_atomic_t *stop,
                   mcg_err *err)
{
    mcg_agent_state last = MCG_AGENT_DONE;
    bool first = true;
    char last_drift[MCG_AGENT_REASON] = "";
    a->stop = stop;
    while (!*stop) {
        mcg_agent_result res;
        mcg_err e = {0};
        double t0 = mcg_mono_seconds();
        int rc = mcg_agent_run_once(&res, a, c, &e);
        record_pass(a, rc, &res, mcg_mono_seconds() - t0, last_drift, sizeof(last_drift));
        if (rc == MCG_ETRUST) /* this host is no longer the node: stop, in one line */
            return mcg_err_set(err, rc, "%s", e.msg);
        if (rc) {
            logf_(a, 1, "pass failed: %s", e.msg);
            if (rc == MCG_ENOTFOUND && first)
                return mcg_err_set(err, rc, "%s", e.msg);
        } else if (first || res.state != last) {
            if (res.state == MCG_AGENT_DONE && !res.config[0]) /* nothing applied: not "Done" */
                logf_(a, 1, "no config on this node yet: waiting for its desiredConfig");
            else
                logf_(a, 1, "%s%s%s", mcg_agent_state_name(res.state), res.reason[0] ? ": " : "",
                      res.reason);
            last = res.state;
        }
        first = false;
        a->force = false;
        /* Until the interval has passed or our node changed (a backend that
         * watches, kube, wakes at once on a new desiredConfig; local sleeps).
         * The stop flag is lent to the backend only while waiting, so a pass
         * in progress always finishes. */
        mcg_err we = {0};
        mcg_cluster_set_stop(c, stop);
        if (!*stop && mcg_cluster_wait_change(c, a->o.node, (long)interval * 1000, &we) < 0)
            logf_(a, 2, "waiting for changes: %s", we.msg);
        mcg_cluster_set_stop(c, NULL);
    }
    return 0;
}
