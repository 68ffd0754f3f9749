/*
 * imports.c — the count of accepted bundle imports a repository has taken,
 * for an air-gapped site's monitoring: `mcgit bundle import` counts each
 * import it accepts (refs moved, or already up to date), and a controller
 * reading the repository exports the count and the time of the newest one
 * (mcgit_bundle_imports_total, mcgit_bundle_last_import_timestamp_seconds).
 *
 * The record is $GIT_DIR/mcgit/bundle-imports, two lines "imports N" and
 * "last UNIX-SECONDS", replaced atomically under an exclusive lock on
 * $GIT_DIR/mcgit/bundle-imports.lock (imports may run side by side). A
 * refused import writes nothing: a refusal changes nothing in the repository.
 */
#include "fsio/fsio.h"
#include "gitops/gitops_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* Parse the record's text; false when it is not two well-formed lines. */
static bool parse_stats(const char *text, mcg_import_stats *out)
{
    uint64_t n = 0, last = 0;
    char a[32], b[32];
    if (sscanf(text, "imports %31s\nlast %31s\n", a, b) != 2 || !mcg_parse_u64(a, &n) ||
        !mcg_parse_u64(b, &last) || last > INT64_MAX)
        return false;
    out->imports = n;
    out->last = (int64_t)last;
    return true;
}

bool mcg_gitops_import_stats(const mcg_repo *r, mcg_import_stats *out)
{
    memset(out, 0, sizeof(*out));
    char *path = mcg_sprintf("%smcgit/bundle-imports", git_repository_path(r->git));
    char *data = NULL;
    size_t len = 0;
    bool ok = mcg_read_file(path, 4096, &data, &len, NULL) == 0 && parse_stats(data, out);
    free(data);
    free(path);
    return ok;
}

int mcg_gitops_note_import(mcg_repo *r, int64_t now, mcg_err *err)
{
    char *dir = mcg_sprintf("%smcgit", git_repository_path(r->git));
    char *lock = mcg_sprintf("%s/bundle-imports.lock", dir);
    char *path = mcg_sprintf("%s/bundle-imports", dir);
    int fd = -1, rc = 0;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", dir);
        goto out;
    }
    fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0 || flock(fd, LOCK_EX) != 0) {
        rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", lock);
        goto out;
    }
    mcg_import_stats st;
    if (!mcg_gitops_import_stats(r, &st))
        memset(&st, 0, sizeof(st)); /* none yet, or unreadable: count from here */
    char line[96];
    int n = snprintf(line, sizeof(line), "imports %" PRIu64 "\nlast %" PRId64 "\n", st.imports + 1,
                     now > 0 ? now : 0);
    rc = mcg_write_file_atomic(path, line, (size_t)n, 0644, err);
out:
    if (fd >= 0)
        close(fd); /* releases the lock */
    free(path);
    free(lock);
    free(dir);
    return rc;
}
