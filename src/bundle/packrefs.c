/*
 * packrefs.c — many refs moved at once by one write of packed-refs.
 *
 * libgit2's ref transaction holds one open lock file per ref until it
 * commits: a bundle of 20,000 tags ran out of file descriptors ("Too many
 * open files"). Past MCG_BUNDLE_PACKED_REFS refs, bundle import moves its
 * refs as git's own packed transaction does: packed-refs.lock is taken
 * (one file, O_EXCL: libgit2 and git take the same lock), every ref is
 * compared with the value checked before, the merged packed-refs (the
 * refs it held, the new values) is written, fsynced and renamed over
 * packed-refs — all refs move at once or none — and then a loose file
 * still holding a moved ref's old value is removed, so the packed value
 * shows. No reflog entries are written for these refs.
 */
#include "bundle/bundle_int.h"
#include "fsio/fsio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PACKED_MAX ((size_t)1 << 30)

typedef struct pentry {
    const char *name; /* into the old file's text, or a report's ref */
    size_t namelen;
    const char *sha;  /* 40 hex digits */
    const char *peel; /* 40 hex digits, or NULL */
} pentry;

static int pentry_cmp(const void *a, const void *b)
{
    const pentry *x = a, *y = b;
    size_t n = x->namelen < y->namelen ? x->namelen : y->namelen;
    int c = memcmp(x->name, y->name, n);
    return c ? c : x->namelen < y->namelen ? -1 : x->namelen > y->namelen;
}

/* The entries of packed-refs text (modified in place: lines end in NUL). */
static void parse_packed(pentry **v, size_t *n, size_t *cap, char *text, size_t len)
{
    char *p = text, *end = text + len;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *e = nl ? nl : end;
        *e = '\0';
        if (*p == '^' && *n && e - p == 41) {
            (*v)[*n - 1].peel = p + 1;
        } else if (e - p > 41 && p[40] == ' ') {
            if (*n == *cap)
                *v = mcg_realloc(*v, (*cap = *cap ? *cap * 2 : 1024) * sizeof(**v));
            (*v)[(*n)++] = (pentry){p + 41, (size_t)(e - p - 41), p, NULL};
        }
        p = e + 1;
    }
}

/* Every moving ref still has the value the import checked. */
static int compare_all(mcg_repo *r, const mcg_bundle_report *rep, mcg_err *err)
{
    for (size_t i = 0; i < rep->nrefs; i++) {
        const mcg_bundle_ref *br = &rep->refs[i];
        if (br->action != MCG_BUNDLE_CREATE && br->action != MCG_BUNDLE_FORWARD)
            continue;
        git_oid cur;
        char cur_sha[MCG_SHA_HEX + 1] = "";
        if (git_reference_name_to_id(&cur, mcg_repo_git(r), br->name) == 0)
            git_oid_tostr(cur_sha, sizeof(cur_sha), &cur);
        if (strcmp(cur_sha, br->old_sha) != 0)
            return mcg_err_set(err, MCG_ECONFLICT, "%s changed during the import; nothing moved",
                               br->name);
    }
    return 0;
}

/* The merged entries, sorted: the old file's, with the report's moves applied. */
static pentry *merge(const mcg_bundle_report *rep, char *text, size_t len, size_t *nout)
{
    pentry *v = NULL, *moves = NULL;
    size_t n = 0, cap = 0, nm = 0;
    parse_packed(&v, &n, &cap, text, len);
    moves = mcg_calloc(rep->nrefs + 1, sizeof(*moves));
    for (size_t i = 0; i < rep->nrefs; i++) {
        const mcg_bundle_ref *br = &rep->refs[i];
        if (br->action == MCG_BUNDLE_CREATE || br->action == MCG_BUNDLE_FORWARD)
            moves[nm++] = (pentry){br->name, strlen(br->name), br->new_sha, NULL};
    }
    qsort(moves, nm, sizeof(*moves), pentry_cmp);
    for (size_t i = 0; i < n; i++) { /* an old entry that moves takes its new value */
        pentry *m = bsearch(&v[i], moves, nm, sizeof(*moves), pentry_cmp);
        if (m) {
            v[i].sha = m->sha;
            v[i].peel = NULL;
            m->peel = m->sha; /* marks it done */
        }
    }
    for (size_t i = 0; i < nm; i++) {
        if (moves[i].peel)
            continue;
        if (n == cap)
            v = mcg_realloc(v, (cap = cap ? cap * 2 : 1024) * sizeof(*v));
        v[n++] = moves[i];
    }
    free(moves);
    qsort(v, n, sizeof(*v), pentry_cmp);
    *nout = n;
    return v;
}

/* A name that is a directory of another (refs/x beside refs/x/y): refused, as git does. */
static int df_conflict(const char *common, const pentry *v, size_t n, mcg_err *err)
{
    for (size_t i = 0; i + 1 < n; i++) {
        /* entries under v[i]/ sort after it, before any name past v[i]'s '/' */
        for (size_t j = i + 1;
             j < n && v[j].namelen > v[i].namelen && !memcmp(v[j].name, v[i].name, v[i].namelen) &&
             v[j].name[v[i].namelen] <= '/';
             j++)
            if (v[j].name[v[i].namelen] == '/')
                return mcg_err_set(err, MCG_ECONFLICT, "%.*s and %.*s cannot both be refs",
                                   (int)v[i].namelen, v[i].name, (int)v[j].namelen, v[j].name);
    }
    for (size_t i = 0; i < n; i++) { /* a loose directory where a ref goes */
        char *path = mcg_sprintf("%s%.*s", common, (int)v[i].namelen, v[i].name);
        struct stat st;
        bool dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
        free(path);
        if (dir)
            return mcg_err_set(err, MCG_ECONFLICT, "%.*s: refs exist under it", (int)v[i].namelen,
                               v[i].name);
    }
    return 0;
}

/* Write the entries to fd: git's format, without the peeled traits. */
static int write_packed(int fd, const pentry *v, size_t n)
{
    FILE *f = fdopen(dup(fd), "w");
    if (!f)
        return -1;
    fputs("# pack-refs with: sorted \n", f);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%.40s %.*s\n", v[i].sha, (int)v[i].namelen, v[i].name);
        if (v[i].peel)
            fprintf(f, "^%.40s\n", v[i].peel);
    }
    int rc = fflush(f) == 0 && !ferror(f) ? 0 : -1;
    fclose(f);
    return rc == 0 ? fsync(fd) : -1;
}

/* After the rename: loose files still holding a moved ref's old value go. */
static int drop_loose(const char *common, const mcg_bundle_report *rep, mcg_err *err)
{
    int rc = 0;
    for (size_t i = 0; i < rep->nrefs; i++) {
        const mcg_bundle_ref *br = &rep->refs[i];
        if (br->action != MCG_BUNDLE_CREATE && br->action != MCG_BUNDLE_FORWARD)
            continue;
        char *path = mcg_sprintf("%s%s", common, br->name), *data = NULL;
        size_t len = 0;
        mcg_err e = {0};
        if (mcg_read_file(path, 4096, &data, &len, &e) == 0) {
            if (br->old_sha[0] && len >= MCG_SHA_HEX && !memcmp(data, br->old_sha, MCG_SHA_HEX))
                unlink(path);
            else if (!rc)
                rc = mcg_err_set(err, MCG_ECONFLICT, "%s changed during the import (%s)", br->name,
                                 path);
        }
        free(data);
        free(path);
    }
    return rc;
}

int mcg_bundle_move_packed(mcg_repo *r, const mcg_bundle_report *rep, mcg_err *err)
{
    const char *common = git_repository_commondir(mcg_repo_git(r));
    char *lock = mcg_sprintf("%spacked-refs.lock", common);
    char *packed = mcg_sprintf("%spacked-refs", common), *text = NULL;
    size_t len = 0, n = 0;
    pentry *v = NULL;
    mcg_err e = {0};
    int rc = 0, fd = open(lock, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = mcg_err_set(err, errno == EEXIST ? MCG_ECONFLICT : MCG_EIO, "%s: %s%s", lock,
                         strerror(errno), errno == EEXIST ? " (another git process?)" : "");
        goto out;
    }
    if ((rc = compare_all(r, rep, err)) != 0)
        goto unlock;
    if (access(packed, F_OK) == 0 && mcg_read_file(packed, PACKED_MAX, &text, &len, &e) != 0) {
        rc = mcg_err_set(err, MCG_EIO, "%s", e.msg);
        goto unlock;
    }
    static char none[1];
    v = merge(rep, text ? text : none, text ? len : 0, &n);
    if ((rc = df_conflict(common, v, n, err)) != 0)
        goto unlock;
    if (write_packed(fd, v, n) != 0 || close(fd) != 0) {
        fd = -1;
        rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", lock);
        goto unlock;
    }
    fd = -1;
    if (rename(lock, packed) != 0) {
        rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", packed);
        goto unlock;
    }
    mcg_fsync_dir(common);
    rc = drop_loose(common, rep, err);
    goto out;
unlock:
    if (fd >= 0)
        close(fd);
    unlink(lock);
out:
    free(v);
    free(text);
    free(lock);
    free(packed);
    return rc;
}
