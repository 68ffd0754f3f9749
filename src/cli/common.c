/*
 * common.c — what every command shares: messages, help, file helpers.
 */
#include "cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int mcg_verbosity = 1;

const mcg_cmd *mcg_cmd_find(const char *name)
{
    for (const mcg_cmd *const *c = mcg_commands; *c; c++)
        if (!strcmp((*c)->name, name))
            return *c;
    return NULL;
}

void mcg_cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "mcgit %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void mcg_cli_info(const char *fmt, ...)
{
    if (mcg_verbosity < 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int mcg_cli_usage_error(const mcg_cmd *cmd, const char *fmt, ...)
{
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "mcgit %s: ", cmd->name);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
    fputs(cmd->usage, stderr);
    return MCG_EXIT_USAGE;
}

int mcg_cli_help(const mcg_cmd *cmd)
{
    fputs(cmd->usage, stdout);
    return MCG_EXIT_OK;
}

void mcg_cli_diags(const char *cmd, const mcg_diags *d)
{
    for (size_t i = 0; i < d->count; i++)
        fprintf(stderr, "mcgit %s: %s\n", cmd, d->msgs[i]);
}

int mcg_read_file(const char *path, size_t limit, char **data, size_t *len, mcg_err *err)
{
    *data = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return mcg_err_set(err, errno == ENOENT ? MCG_ENOTFOUND : MCG_EIO, "%s: %s", path,
                           errno == ELOOP ? "is a symbolic link" : strerror(errno));
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
            rc = mcg_err_set(err, MCG_EIO, "%s: %s", path, strerror(errno));
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

int mcg_write_file_atomic(const char *path, const void *data, size_t len, int mode, mcg_err *err)
{
    char *dircopy = mcg_strdup(path);
    char *dir = dirname(dircopy);
    char *tmp = mcg_sprintf("%s.tmp.%ld", path, (long)getpid());
    int rc = 0, fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0) {
        rc = mcg_err_set(err, MCG_EIO, "%s: %s", tmp, strerror(errno));
        goto out;
    }
    const char *p = data;
    size_t left = len;
    while (left) {
        ssize_t n = write(fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = mcg_err_set(err, MCG_EIO, "%s: %s", tmp, strerror(errno));
            break;
        }
        p += n;
        left -= (size_t)n;
    }
    if (!rc && fsync(fd) != 0)
        rc = mcg_err_set(err, MCG_EIO, "%s: fsync: %s", tmp, strerror(errno));
    close(fd);
    if (!rc && rename(tmp, path) != 0)
        rc = mcg_err_set(err, MCG_EIO, "%s: %s", path, strerror(errno));
    if (rc) {
        unlink(tmp);
        goto out;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
out:
    free(tmp);
    free(dircopy);
    return rc;
}

#include "trust/trust.h"

int mcg_cli_load_trust(mcg_signers **out, const char *path, mcg_err *err)
{
    char *data = NULL;
    size_t len = 0;
    *out = NULL;
    int rc = mcg_read_file(path, MCG_SIGNERS_MAX_TEXT, &data, &len, err);
    if (rc == 0)
        rc = mcg_signers_parse(out, path, data, len, err);
    free(data);
    return rc;
}
