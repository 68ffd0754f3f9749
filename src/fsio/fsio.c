/*
 * fsio.c — see fsio.h.
 */
#include "fsio/fsio.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Read all of fd (a regular file) into *data, at most limit bytes; closes fd. */
static int read_fd(int fd, const char *path, size_t limit, char **data, size_t *len, mcg_err *err)
{
    struct stat st;
    int rc = 0;
    mcg_buf b = MCG_BUF_INIT;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = mcg_err_set(err, MCG_EIO, "%s: not a regular file", path);
        goto out;
    }
    char chunk[65536];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", path);
            goto out;
        }
        if (n == 0)
            break;
        if (b.len + (size_t)n > limit) {
            rc = mcg_err_set(err, MCG_ENOMEM, "%s: larger than %zu bytes", path, limit);
            goto out;
        }
        mcg_buf_put(&b, chunk, (size_t)n);
    }
    *data = mcg_buf_detach(&b, len);
out:
    mcg_buf_free(&b);
    close(fd);
    return rc;
}

int mcg_read_file(const char *path, size_t limit, char **data, size_t *len, mcg_err *err)
{
    *data = NULL;
    *len = 0;
    /* O_NONBLOCK: a FIFO in the file's place must not hang the reader (it is
     * refused as not a regular file; regular files ignore the flag) */
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return errno == ELOOP ? mcg_err_set(err, MCG_EIO, "%s: is a symbolic link", path)
                              : mcg_err_set_os(err, errno == ENOENT ? MCG_ENOTFOUND : MCG_EIO,
                                               errno, "%s", path);
    return read_fd(fd, path, limit, data, len, err);
}

int mcg_read_file_named(const char *path, size_t limit, char **data, size_t *len, mcg_err *err)
{
    *data = NULL;
    *len = 0;
    /* O_NONBLOCK: a FIFO (a link may lead anywhere) is opened without
     * waiting for a writer, then refused as not a regular file */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return mcg_err_set_os(err, errno == ENOENT ? MCG_ENOTFOUND : MCG_EIO, errno, "%s", path);
    return read_fd(fd, path, limit, data, len, err);
}

int mcg_write_file_atomic(const char *path, const void *data, size_t len, int mode, mcg_err *err)
{
    char *dircopy = mcg_strdup(path);
    char *dir = dirname(dircopy);
    char *tmp = mcg_sprintf("%s.tmp.%ld", path, (long)getpid());
    int rc = 0, fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0) {
        rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", tmp);
        goto out;
    }
    if (mcg_write_all(fd, data, len) != 0)
        rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", tmp);
    if (!rc && fsync(fd) != 0)
        rc = mcg_err_set_os(err, MCG_EIO, errno, "%s: fsync", tmp);
    close(fd);
    if (!rc && rename(tmp, path) != 0)
        rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", path);
    if (rc) {
        unlink(tmp);
        goto out;
    }
    mcg_fsync_dir(dir);
out:
    free(tmp);
    free(dircopy);
    return rc;
}

int mcg_write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

void mcg_fsync_dir(const char *dir)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
}

int mcg_mkdirs(const char *path, int mode, mcg_err *err)
{
    char *p = mcg_strdup(path);
    int rc = 0;
    for (char *s = p + 1;; s++) {
        if (*s == '/' || *s == '\0') {
            char c = *s;
            *s = '\0';
            if (mkdir(p, (mode_t)mode) != 0 && errno != EEXIST) {
                rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", p);
                break;
            }
            *s = c;
            if (!c)
                break;
        }
    }
    free(p);
    return rc;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    (void)(flag == FTW_DP ? rmdir(path) : unlink(path));
    return 0;
}

int mcg_remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : -1;
    nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return lstat(path, &st) == 0 ? -1 : 0;
}
