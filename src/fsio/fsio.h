/*
 * fsio — small, careful file I/O shared by the commands, the cluster store
 * and the agent: whole-file reads that refuse symlinks and bound the size,
 * and atomic replacement (temp file in the same directory, fsync, rename,
 * fsync of the directory), so a crash leaves the old file or the new one.
 */
#ifndef MCG_FSIO_H
#define MCG_FSIO_H

#include "util/util.h"

/* Read a whole regular file (the last component is never followed if it is
 * a symlink), refusing files over limit bytes. *data is NUL-terminated. */
int mcg_read_file(const char *path, size_t limit, char **data, size_t *len, mcg_err *err);
/* The same for a file the operator names on the command line or in the
 * environment (a trust root, a revocation list, git credentials, a token):
 * symbolic links are followed, as Kubernetes mounts every key of a ConfigMap
 * or Secret volume as KEY -> ..data/KEY, but what they lead to must still be
 * a regular file. */
int mcg_read_file_named(const char *path, size_t limit, char **data, size_t *len, mcg_err *err);
/* Replace path atomically with data, created with mode. */
int mcg_write_file_atomic(const char *path, const void *data, size_t len, int mode, mcg_err *err);
/* write(2) all of data, retrying on EINTR and short writes; -1 with errno set on failure. */
int mcg_write_all(int fd, const void *data, size_t len);
/* fsync a directory so a rename in it is durable (best effort). */
void mcg_fsync_dir(const char *dir);
/* rm -rf without following symlinks (best effort; 0 when all is gone). */
int mcg_remove_tree(const char *path);
/* mkdir -p with mode for each created directory. */
int mcg_mkdirs(const char *path, int mode, mcg_err *err);

#endif
