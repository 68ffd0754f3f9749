/*
 * safepath.c — resolving paths inside the node root without ever leaving it.
 *
 * Every path the agent touches is relative to a root directory fd. The
 * parent directory of a path is opened with openat2(RESOLVE_IN_ROOT |
 * RESOLVE_NO_SYMLINKS) when the kernel has it, so any symlink on the way
 * fails the lookup; when it does not (ENOSYS), or when the fast lookup fails
 * and we need to create directories or to say which component is wrong, the
 * path is walked one component at a time with O_NOFOLLOW | O_DIRECTORY.
 * Whatever happens next goes through the returned directory fd (openat,
 * renameat, ...) with the last component never followed, so a directory
 * swapped for a symlink after the check cannot redirect a write.
 *
 * Files are sorted by path, so consecutive lookups usually share a parent:
 * the last parent fd is cached. The filesystem of every directory opened is
 * noted, so that one syncfs() per filesystem (mcg_sroot_sync) makes all
 * changes durable, mount points inside the root included.
 */
#include "agent/agent_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#define HAVE_OPENAT2_H 1
#endif
#endif

#ifndef HAVE_OPENAT2_H
struct open_how {
    uint64_t flags;
    uint64_t mode;
    uint64_t resolve;
};
#define RESOLVE_NO_MAGICLINKS 0x02
#define RESOLVE_NO_SYMLINKS 0x04
#define RESOLVE_IN_ROOT 0x10
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif

int mcg_sroot_open(mcg_sroot *r, const char *root, mcg_err *err)
{
    memset(r, 0, sizeof(*r));
    r->cache_fd = -1;
    /* The root itself is the operator's choice and may be reached through
     * symlinks; everything below it may not. */
    r->fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (r->fd < 0)
        return mcg_err_set_os(err, MCG_EIO, errno, "root %s", root);
    return 0;
}

void mcg_sroot_forget(mcg_sroot *r)
{
    if (r->cache_fd >= 0)
        close(r->cache_fd);
    r->cache_fd = -1;
    free(r->cache_path);
    r->cache_path = NULL;
    free(r->missing_path);
    r->missing_path = NULL;
}

static void drop_devs(mcg_sroot *r)
{
    for (size_t i = 0; i < r->ndevs; i++)
        close(r->devs[i].fd);
    free(r->devs);
    r->devs = NULL;
    r->ndevs = 0;
}

void mcg_sroot_close(mcg_sroot *r)
{
    mcg_sroot_forget(r);
    drop_devs(r);
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
}

/* Remember fd's filesystem (a new one only: a handful per root). */
static void note_dev(mcg_sroot *r, int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return;
    for (size_t i = 0; i < r->ndevs; i++)
        if (r->devs[i].dev == st.st_dev)
            return;
    int keep = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (keep < 0)
        return;
    r->devs = mcg_realloc(r->devs, (r->ndevs + 1) * sizeof(*r->devs));
    r->devs[r->ndevs].dev = st.st_dev;
    r->devs[r->ndevs].fd = keep;
    r->ndevs++;
}

int mcg_sroot_sync(mcg_sroot *r, mcg_err *err)
{
    int rc = 0;
    struct stat st;
    bool root_seen = false;
    bool have_root = fstat(r->fd, &st) == 0;
    for (size_t i = 0; i < r->ndevs && !rc; i++) {
        root_seen |= have_root && r->devs[i].dev == st.st_dev;
        if (syncfs(r->devs[i].fd) != 0)
            rc = mcg_err_set_os(err, MCG_EIO, errno, "syncfs");
    }
    if (!rc && !root_seen && syncfs(r->fd) != 0)
        rc = mcg_err_set_os(err, MCG_EIO, errno, "syncfs");
    drop_devs(r);
    return rc;
}

/* Explain why component `upto` (a prefix of the path) could not be entered. */
static int way_error(int dirfd, const char *comp, const char *upto, int e, mcg_err *err)
{
    struct stat st;
    if (fstatat(dirfd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISLNK(st.st_mode))
            return mcg_err_set(err, MCG_ETRUST, "/%s: is a symbolic link (refusing to follow it)",
                               upto);
        if (!S_ISDIR(st.st_mode))
            return mcg_err_set(err, MCG_ETRUST, "/%s: is not a directory", upto);
    }
    return mcg_err_set_os(err, MCG_EIO, e, "/%s", upto);
}

/* Walk dir (a path relative to the root) component by component. */
static int walk(mcg_sroot *r, const char *dir, bool create, int *out, mcg_err *err)
{
    char *p = mcg_strdup(dir);
    int cur = dup(r->fd), rc = 0;
    if (cur < 0) {
        rc = mcg_err_set_os(err, MCG_EIO, errno, "dup");
        goto out;
    }
    char *s = p;
    for (;;) {
        char *slash = strchr(s, '/');
        if (slash)
            *slash = '\0';
        int fd = openat(cur, s, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT && create) {
            if (mkdirat(cur, s, 0755) == 0) {
                if (r->made)
                    mcg_strv_push(r->made, p); /* p ends at this component */
            } else if (errno != EEXIST) {
                rc = mcg_err_set_os(err, MCG_EIO, errno, "/%s", p);
                goto out;
            }
            fd = openat(cur, s, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (fd < 0) {
            int e = errno;
            if (e == ENOENT)
                rc = mcg_err_set(err, MCG_ENOTFOUND, "/%s: missing", p);
            else
                rc = way_error(cur, s, p, e, err);
            goto out;
        }
        close(cur);
        cur = fd;
        if (!slash)
            break;
        *slash = '/';
        s = slash + 1;
    }
    *out = cur;
    cur = -1;
out:
    if (cur >= 0)
        close(cur);
    free(p);
    return rc;
}

/* Open directory `dir` (relative, non-empty) inside the root. */
static int open_dir(mcg_sroot *r, const char *dir, bool create, int *out, mcg_err *err)
{
    if (!r->no_openat2) {
        struct open_how how;
        memset(&how, 0, sizeof(how));
        how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
        how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
        long fd = syscall(SYS_openat2, r->fd, dir, &how, sizeof(how));
        if (fd >= 0) {
            *out = (int)fd;
            return 0;
        }
        if (errno == ENOENT && !create)
            return mcg_err_set(err, MCG_ENOTFOUND, "/%s: missing", dir);
        if (errno == ENOSYS || errno == EPERM) /* no openat2, or a seccomp filter */
            r->no_openat2 = true;
        /* anything else: the walk creates, or names the culprit */
    }
    return walk(r, dir, create, out, err);
}

int mcg_sroot_parent(mcg_sroot *r, const char *rel, bool create, int *dirfd, const char **base,
                     mcg_err *err)
{
    const char *slash = strrchr(rel, '/');
    if (!slash) {
        *dirfd = r->fd;
        *base = rel;
        return 0;
    }
    size_t n = (size_t)(slash - rel);
    *base = slash + 1;
    if (r->cache_path && strlen(r->cache_path) == n && !memcmp(r->cache_path, rel, n)) {
        *dirfd = r->cache_fd;
        return 0;
    }
    if (!create && r->missing_path && strlen(r->missing_path) == n &&
        !memcmp(r->missing_path, rel, n))
        return mcg_err_set(err, MCG_ENOTFOUND, "/%s: missing", r->missing_path);
    char *dir = mcg_strndup(rel, n);
    int fd = -1;
    int rc = open_dir(r, dir, create, &fd, err);
    if (rc) {
        free(r->missing_path);
        r->missing_path = rc == MCG_ENOTFOUND ? dir : NULL;
        if (rc != MCG_ENOTFOUND)
            free(dir);
        return rc;
    }
    mcg_sroot_forget(r);
    note_dev(r, fd);
    r->cache_path = dir; /* transferred */
    r->cache_fd = fd;
    *dirfd = fd;
    return 0;
}

int mcg_sroot_opendir(mcg_sroot *r, const char *rel, bool create, int mode, int *fd, mcg_err *err)
{
    int dfd;
    const char *base;
    int rc = mcg_sroot_parent(r, rel, create, &dfd, &base, err);
    if (rc)
        return rc;
    int f = openat(dfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (f < 0 && errno == ENOENT && create) {
        if (mkdirat(dfd, base, (mode_t)mode) == 0) {
            if (r->made)
                mcg_strv_push(r->made, rel);
        } else if (errno != EEXIST) {
            return mcg_err_set_os(err, MCG_EIO, errno, "/%s", rel);
        }
        free(r->missing_path); /* it may have been this one */
        r->missing_path = NULL;
        f = openat(dfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (f < 0) {
        int e = errno;
        if (e == ENOENT)
            return mcg_err_set(err, MCG_ENOTFOUND, "/%s: missing", rel);
        return way_error(dfd, base, rel, e, err);
    }
    note_dev(r, f); /* a mount point's own directory is on the mounted filesystem */
    *fd = f;
    return 0;
}

void mcg_agent_tmpname(const char *base, char out[64])
{
    unsigned char d[MCG_SHA256_LEN];
    char hex[2 * MCG_SHA256_LEN + 1];
    mcg_sha256(base, strlen(base), d);
    mcg_hex(d, 8, hex);
    memcpy(out, ".mcgit-", 7);
    memcpy(out + 7, hex, 16);
    memcpy(out + 23, ".tmp", 5);
}
