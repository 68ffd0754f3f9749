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
 * the last parent fd is cached.
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
        return mcg_err_set(err, MCG_EIO, "root %s: %s", root, strerror(errno));
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

void mcg_sroot_close(mcg_sroot *r)
{
    mcg_sroot_forget(r);
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
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
    return mcg_err_set(err, MCG_EIO, "/%s: %s", upto, strerror(e));
}

/* Walk dir (a path relative to the root) component by component. */
static int walk(mcg_sroot *r, const char *dir, bool create, int *out, mcg_err *err)
{
    char *p = mcg_strdup(dir);
    int cur = dup(r->fd), rc = 0;
    if (cur < 0) {
        rc = mcg_err_set(err, MCG_EIO, "dup: %s", strerror(errno));
        goto out;
    }
    char *s = p;
    for (;;) {
        char *slash = strchr(s, '/');
        if (slash)
            *slash = '\0';
        int fd = openat(cur, s, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT && create) {
            if (mkdirat(cur, s, 0755) != 0 && errno != EEXIST) {
                rc = mcg_err_set(err, MCG_EIO, "/%s: %s", p, strerror(errno));
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
        if (mkdirat(dfd, base, (mode_t)mode) != 0 && errno != EEXIST)
            return mcg_err_set(err, MCG_EIO, "/%s: %s", rel, strerror(errno));
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

