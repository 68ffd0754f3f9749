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

/* Whether tz names a zone of the host's time zone database ("UTC" always does). */
bool mcg_tz_known(const char *tz);
/* UTC time t as local time in zone tz into *out; MCG_ENOTFOUND for an unknown zone. */
struct tm;
int mcg_tz_local(const char *tz, int64_t t, struct tm *out);

/*
 * The environment variable name as a whole number from min to max into
 * *out: def when unset or empty; MCG_EINVAL, naming the variable, the value
 * and the range, when it is anything else (junk is refused, never taken as
 * the default). The one reader of numeric settings from the environment.
 */
int mcg_env_u64(const char *name, uint64_t def, uint64_t min, uint64_t max, uint64_t *out,
                mcg_err *err);

/* The one logger: "mcgit WHO: message" (WHO NULL or "": the message alone) on stderr,
 * one write per line. */
#include <stdarg.h>
void mcg_log_line(const char *who, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mcg_log_vline(const char *who, const char *fmt, va_list ap);

/* The monotonic clock: seconds (durations), milliseconds (deadlines). */
double mcg_mono_seconds(void);
int64_t mcg_mono_ms(void);

#endif
