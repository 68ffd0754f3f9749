/*
 * quarantine.c — where an import's pack waits until every check has
 * passed, and how it never outlives the run that made it.
 *
 * The quarantine is objects/mcgit-incoming-XXXXXX/pack/, holding the pack
 * being indexed and its index. Three things remove it:
 *
 *   - the import or verify that made it, on every path out;
 *   - a signal: mcg_bundle_signal_cleanup() (async-signal-safe), which the
 *     command line calls from its SIGINT/SIGTERM/SIGHUP handlers;
 *   - the next run, for one left by a process that died without running
 *     either (kill -9, a crash, power loss). Every live run holds a shared
 *     flock() on the objects directory from before it creates its
 *     quarantine until after it has removed it; a run that can take the
 *     lock exclusively knows that no other run is alive, so every
 *     mcgit-incoming-* directory it finds is stale and is removed. The lock
 *     dies with its process, so a kill -9 never leaves it held.
 *
 * The prefix is mcgit's own: git's receive-pack quarantines (incoming-*)
 * are never touched.
 */
#include "bundle/bundle_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * What a signal handler must remove: the live quarantine, or the temp file a
 * bundle is being written to. Written only by the main thread, with `armed`
 * cleared while the paths change, so a handler sees complete strings.
 */
static struct {
    volatile sig_atomic_t armed;
    char dir[PATH_MAX];  /* the quarantine, "" none */
    char pack[PATH_MAX]; /* dir/pack */
    char file[PATH_MAX]; /* a bundle's temp file, "" none */
} pending;

/*
 * Remove a quarantine: every file in its pack/ directory, pack/, itself.
 * Only what an import makes: anything else inside (a directory someone put
 * there) makes the rmdir fail and the directory stay. Async-signal-safe:
 * open, getdents64, unlinkat, rmdir, no allocation.
 */
static void quarantine_remove(const char *dir, const char *packdir)
{
    int fd = open(packdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
        /* Repeat until a pass removes nothing: removal during a scan may skip names. */
        bool removed = true;
        for (int pass = 0; removed && pass < 16; pass++) {
            _Alignas(8) char buf[4096];
            ssize_t n;
            removed = false;
            lseek(fd, 0, SEEK_SET);
            while ((n = getdents64(fd, buf, sizeof(buf))) > 0) {
                for (ssize_t off = 0; off < n;) {
                    const struct dirent64 *e = (const struct dirent64 *)(buf + off);
                    off += e->d_reclen;
                    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
                        unlinkat(fd, e->d_name, 0) == 0)
                        removed = true;
                }
            }
        }
        close(fd);
    }
    rmdir(packdir);
    rmdir(dir);
}

/* See bundle.h: async-signal-safe. */
void mcg_bundle_signal_cleanup(void)
{
    if (!pending.armed)
        return;
    if (pending.file[0])
        unlink(pending.file);
    if (pending.dir[0])
        quarantine_remove(pending.dir, pending.pack);
}

void mcg_bundle_pending_set(const char *dir, const char *file)
{
    pending.armed = 0;
    atomic_signal_fence(memory_order_seq_cst); /* disarmed before the paths change */
    pending.dir[0] = pending.pack[0] = pending.file[0] = '\0';
    if (dir && strlen(dir) + sizeof("/pack") <= sizeof(pending.dir)) {
        snprintf(pending.dir, sizeof(pending.dir), "%s", dir);
        snprintf(pending.pack, sizeof(pending.pack), "%s/pack", dir);
    }
    if (file && strlen(file) < sizeof(pending.file))
        snprintf(pending.file, sizeof(pending.file), "%s", file);
    atomic_signal_fence(memory_order_seq_cst); /* the paths are complete before arming */
    pending.armed = pending.dir[0] || pending.file[0];
}

/* Remove every mcgit-incoming-XXXXXX under objects (caller holds the lock exclusively). */
static void quarantine_remove_stale(const char *objects)
{
    DIR *d = opendir(objects);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, MCG_BUNDLE_QUARANTINE_PREFIX,
                    strlen(MCG_BUNDLE_QUARANTINE_PREFIX)) != 0 ||
            strlen(e->d_name) != strlen(MCG_BUNDLE_QUARANTINE_PREFIX) + 6)
            continue;
        char *dir = mcg_sprintf("%s%s", objects, e->d_name);
        char *pack = mcg_sprintf("%s/pack", dir);
        quarantine_remove(dir, pack);
        free(pack);
        free(dir);
    }
    closedir(d);
}

/*
 * Lock the objects directory shared for this run (*fd keeps the lock),
 * removing stale quarantines first when no other run is alive. A file
 * system without flock() gets no cleanup, never a wrong one.
 */
void mcg_bundle_quarantine_lock(int *fd, const char *objects)
{
    *fd = open(objects, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (*fd < 0)
        return;
    if (flock(*fd, LOCK_EX | LOCK_NB) == 0) {
        quarantine_remove_stale(objects);
        /* Downgrade: a run that takes the exclusive lock in between finds
         * no quarantine of ours yet. */
        if (flock(*fd, LOCK_SH) == 0)
            return;
    } else if (errno == EWOULDBLOCK) {
        int rc;
        while ((rc = flock(*fd, LOCK_SH)) != 0 && errno == EINTR)
            ;
        if (rc == 0)
            return;
    }
    close(*fd);
    *fd = -1;
}
int mcg_bundle_quarantine_create(char **qdir, const char *objects, mcg_err *err)
{
    char *dir = mcg_sprintf("%s" MCG_BUNDLE_QUARANTINE_PREFIX "XXXXXX", objects);
    *qdir = NULL;
    if (!mkdtemp(dir)) {
        int e = errno;
        free(dir);
        return mcg_err_set_os(err, MCG_EIO, e, "quarantine in %s", objects);
    }
    *qdir = dir;
    mcg_bundle_pending_set(dir, NULL);
    char *packdir = mcg_sprintf("%s/pack", dir);
    int mk = mkdir(packdir, 0700);
    free(packdir);
    if (mk != 0)
        return mcg_err_set_os(err, MCG_EIO, errno, "quarantine");
    return 0;
}

void mcg_bundle_quarantine_drop(const char *qdir)
{
    char *pack = mcg_sprintf("%s/pack", qdir);
    quarantine_remove(qdir, pack);
    free(pack);
    mcg_bundle_pending_set(NULL, NULL);
}
