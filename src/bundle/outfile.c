/*
 * outfile.c — where a bundle goes: standard output, or a file replaced
 * atomically. The file is first written unnamed (O_TMPFILE in the target's
 * directory), so that even kill -9 leaves nothing behind, then given a temp
 * name and renamed over the target. File systems without O_TMPFILE (vfat USB sticks)
 * get a named temp file instead, which a signal handler removes
 * (mcg_bundle_signal_cleanup) and kill -9 leaves as FILE.tmp-XXXXXX.
 */
#include "bundle/bundle_int.h"
#include "fsio/fsio.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

int mcg_bundle_out_open(mcg_bundle_out *o, const char *path, mcg_err *err)
{
    memset(o, 0, sizeof(*o));
    o->fd = -1;
    if (!strcmp(path, "-")) {
        if (isatty(STDOUT_FILENO))
            return mcg_err_set(err, MCG_EUSAGE, "refusing to write a bundle to a terminal");
        o->fd = STDOUT_FILENO;
        o->to_stdout = true;
        return 0;
    }
    o->path = mcg_strdup(path);
    char *copy = mcg_strdup(path);
    mode_t mask = umask(0);
    umask(mask);
    o->fd = open(dirname(copy), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
    free(copy);
    if (o->fd >= 0 && access("/proc/self/fd", X_OK) == 0) {
        o->anon = true;
        return 0;
    }
    if (o->fd >= 0)
        close(o->fd); /* no /proc to link it through */
    o->tmp = mcg_sprintf("%s.tmp-XXXXXX", path);
    o->fd = mkostemp(o->tmp, O_CLOEXEC);
    if (o->fd < 0) {
        int e = errno;
        free(o->tmp);
        o->tmp = NULL;
        return mcg_err_set_os(err, MCG_EIO, e, "%s", path);
    }
    mcg_bundle_pending_set(NULL, o->tmp);
    if (fchmod(o->fd, 0666 & ~mask) != 0) {
        /* vfat and the like have no modes: the file keeps what it got */
    }
    return 0;
}

/* Give an O_TMPFILE a unique temp name beside the target. */
static int out_link_anon(mcg_bundle_out *o)
{
    char proc[64];
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", o->fd);
    for (int tries = 0; tries < 100; tries++) {
        static const char chars[] =
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        unsigned char rnd[6];
        char suffix[7];
        if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
            return -1;
        for (int i = 0; i < 6; i++)
            suffix[i] = chars[rnd[i] % (sizeof(chars) - 1)];
        suffix[6] = '\0';
        free(o->tmp);
        o->tmp = mcg_sprintf("%s.tmp-%s", o->path, suffix);
        mcg_bundle_pending_set(NULL, o->tmp);
        if (linkat(AT_FDCWD, proc, AT_FDCWD, o->tmp, AT_SYMLINK_FOLLOW) == 0)
            return 0;
        mcg_bundle_pending_set(NULL, NULL);
        if (errno != EEXIST)
            return -1;
    }
    errno = EEXIST;
    return -1;
}

int mcg_bundle_out_commit(mcg_bundle_out *o, mcg_err *err)
{
    if (o->to_stdout)
        return 0;
    if (fsync(o->fd) != 0)
        return mcg_err_set_os(err, MCG_EIO, errno, "%s: fsync", o->path);
    if (o->anon && out_link_anon(o) != 0)
        return mcg_err_set_os(err, MCG_EIO, errno, "%s", o->path);
    if (rename(o->tmp, o->path) != 0)
        return mcg_err_set_os(err, MCG_EIO, errno, "%s", o->path);
    mcg_bundle_pending_set(NULL, NULL);
    free(o->tmp);
    o->tmp = NULL; /* renamed: nothing to remove */
    char *copy = mcg_strdup(o->path);
    mcg_fsync_dir(dirname(copy));
    free(copy);
    return 0;
}

void mcg_bundle_out_close(mcg_bundle_out *o)
{
    if (o->fd >= 0 && !o->to_stdout)
        close(o->fd);
    if (o->tmp) {
        unlink(o->tmp);
        mcg_bundle_pending_set(NULL, NULL);
        free(o->tmp);
    }
    free(o->path);
    memset(o, 0, sizeof(*o));
    o->fd = -1;
}
