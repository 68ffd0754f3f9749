/*
 * bundle.c — git bundles in and out, verified before anything moves.
 *
 * A bundle (git's Documentation/gitformat-bundle.txt) is a text header —
 * "# v2 git bundle" (or v3 with "@capability" lines), "-<oid> <comment>"
 * prerequisites, "<oid> <refname>" refs, a blank line — then a packfile.
 * libgit2 1.5 knows nothing of bundles, so the header is written and parsed
 * here; the pack is produced by git_packbuilder and streamed straight to the
 * file, and read back by streaming it into git_indexer.
 *
 * Import is quarantined: the pack is indexed into a fresh directory
 * objects/incoming-XXXXXX that a second repository handle sees as an
 * alternate object store. Against that view every check runs — refs present,
 * fast-forward only, every new commit signed under the trust root, the new
 * source tip renders. Only then are pack and index renamed into
 * objects/pack/ and the refs moved (locked, compared, then swapped). Every
 * other path removes the quarantine, so a refused bundle leaves the refs and
 * object files exactly as they were.
 */
#include "gitops/gitops_int.h"
#include "fsio/fsio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BUNDLE_MAX_LINE (64 * 1024) /* one header line */
#define BUNDLE_MAX_REFS 100000      /* refs + prerequisites */
#define BUNDLE_CHUNK (256 * 1024)   /* bytes per indexer append */

/* ------------------------------------------------------------ oid lists */

typedef struct oidv {
    git_oid *v;
    size_t n, cap;
} oidv;

static void oidv_push(oidv *a, const git_oid *o)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 256;
        a->v = mcg_realloc(a->v, a->cap * sizeof(*a->v));
    }
    a->v[a->n++] = *o;
}

static int oid_cmp(const void *a, const void *b)
{
    return git_oid_cmp(a, b);
}

/* Sort and drop duplicates, so oidv_has can bsearch. */
static void oidv_sort(oidv *a)
{
    if (!a->n)
        return;
    qsort(a->v, a->n, sizeof(*a->v), oid_cmp);
    size_t j = 1;
    for (size_t i = 1; i < a->n; i++)
        if (!git_oid_equal(&a->v[i], &a->v[j - 1]))
            a->v[j++] = a->v[i];
    a->n = j;
}

static bool oidv_has(const oidv *a, const git_oid *o)
{
    return a->n && bsearch(o, a->v, a->n, sizeof(*a->v), oid_cmp) != NULL;
}

static void oidv_free(oidv *a)
{
    free(a->v);
    memset(a, 0, sizeof(*a));
}

/* ------------------------------------------------------------ progress */

/* A one-line bar on stderr, redrawn at most every 1% (terminals only). */
typedef struct progress {
    bool on;
    const char *what;
    int last; /* last percentage drawn, -1 none */
} progress;

static void progress_draw(progress *p, const char *what, uint64_t cur, uint64_t total)
{
    if (!p->on || !total)
        return;
    int pct = (int)(cur * 100 / total);
    if (what != p->what) {
        if (p->what && p->last >= 0)
            fputc('\n', stderr);
        p->what = what;
        p->last = -1;
    }
    if (pct == p->last)
        return;
    p->last = pct;
    char bar[31];
    int fill = pct * 30 / 100;
    for (int i = 0; i < 30; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[30] = '\0';
    fprintf(stderr, "\r%-20s [%s] %3d%% (%llu/%llu)", what, bar, pct, (unsigned long long)cur,
            (unsigned long long)total);
    fflush(stderr);
}

static void progress_end(progress *p)
{
    if (p->on && p->what && p->last >= 0)
        fputc('\n', stderr);
    p->what = NULL;
    p->last = -1;
}

/* ------------------------------------------------------------ small I/O */

/* ============================================================ create */

typedef struct bref {
    char *name;
    git_oid target; /* what the ref line names (a tag object for annotated tags) */
    git_oid commit; /* target peeled to a commit */
} bref;

typedef struct breflist {
    bref *v;
    size_t n, cap;
} breflist;

static void breflist_free(breflist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].name);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

static bool breflist_has(const breflist *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i].name, name))
            return true;
    return false;
}

/* Add ref `name` pointing at target; only refs that peel to a commit. */
static int breflist_add(breflist *l, git_repository *repo, const char *name, const git_oid *target,
                        mcg_err *err)
{
    git_object *obj = NULL, *peeled = NULL;
    int rc = 0;
    if (breflist_has(l, name))
        return 0;
    if (git_object_lookup(&obj, repo, target, GIT_OBJECT_ANY) != 0 ||
        git_object_peel(&peeled, obj, GIT_OBJECT_COMMIT) != 0) {
        rc = mcg_err_set(err, MCG_EINVAL, "%s does not point to a commit", name);
        goto out;
    }
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->v = mcg_realloc(l->v, l->cap * sizeof(*l->v));
    }
    bref *b = &l->v[l->n++];
    b->name = mcg_strdup(name);
    b->target = *target;
    b->commit = *git_object_id(peeled);
out:
    git_object_free(peeled);
    git_object_free(obj);
    return rc;
}

static int bref_cmp(const void *a, const void *b)
{
    const bref *x = a, *y = b;
    /* HEAD first (as git writes it last-or-first does not matter to readers). */
    bool hx = !strcmp(x->name, "HEAD"), hy = !strcmp(y->name, "HEAD");
    if (hx != hy)
        return hx ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* The default selection: HEAD (= the source branch tip), the source branch, every tag. */
static int default_refs(breflist *l, mcg_repo *r, mcg_err *err)
{
    char *branch = mcg_sprintf("refs/heads/%s", r->source_branch);
    git_oid oid;
    git_reference_iterator *it = NULL;
    git_reference *ref = NULL;
    int rc = 0;
    if (git_reference_name_to_id(&oid, r->git, branch) != 0) {
        rc = mcg_err_set(err, MCG_ENOTFOUND, "no branch '%s' to bundle", r->source_branch);
        goto out;
    }
    if ((rc = breflist_add(l, r->git, "HEAD", &oid, err)) != 0 ||
        (rc = breflist_add(l, r->git, branch, &oid, err)) != 0)
        goto out;
    if (git_reference_iterator_glob_new(&it, r->git, "refs/tags/*") != 0) {
        rc = mcg_git_err(err, "refs/tags");
        goto out;
    }
    while (git_reference_next(&ref, it) == 0) {
        git_reference *res = NULL;
        mcg_err ignore = {0};
        /* Tags that do not lead to a commit are not part of a config history. */
        if (git_reference_resolve(&res, ref) == 0 && git_reference_target(res))
            breflist_add(l, r->git, git_reference_name(ref), git_reference_target(res), &ignore);
        git_reference_free(res);
        git_reference_free(ref);
        ref = NULL;
    }
out:
    git_reference_iterator_free(it);
    free(branch);
    return rc;
}

static int named_refs(breflist *l, mcg_repo *r, const char *const *names, size_t n, mcg_err *err)
{
    for (size_t i = 0; i < n; i++) {
        git_reference *ref = NULL, *res = NULL;
        int rc = 0;
        if (git_reference_dwim(&ref, r->git, names[i]) != 0)
            return mcg_err_set(err, MCG_ENOTFOUND, "no ref '%s'", names[i]);
        if (git_reference_resolve(&res, ref) != 0 || !git_reference_target(res))
            rc = mcg_git_err(err, names[i]);
        else
            rc = breflist_add(l, r->git, git_reference_name(ref), git_reference_target(res), err);
        git_reference_free(res);
        git_reference_free(ref);
        if (rc)
            return rc;
    }
    return 0;
}

static int walk_new(git_revwalk **out, mcg_repo *r, const breflist *refs, const git_oid *since,
                    mcg_err *err)
{
    git_revwalk *w = NULL;
    *out = NULL;
    if (git_revwalk_new(&w, r->git) != 0 || git_revwalk_sorting(w, GIT_SORT_TIME) != 0)
        goto fail;
    for (size_t i = 0; i < refs->n; i++)
        if (git_revwalk_push(w, &refs->v[i].commit) != 0)
            goto fail;
    if (since && git_revwalk_hide(w, since) != 0)
        goto fail;
    *out = w;
    return 0;
fail:
    git_revwalk_free(w);
    return mcg_git_err(err, "revwalk");
}

typedef struct write_ctx {
    int fd;
    int err_no;
    uint64_t bytes;
    size_t nobj;
    git_packbuilder *pb;
    progress *prog;
} write_ctx;

static int pack_write_cb(void *buf, size_t size, void *payload)
{
    write_ctx *w = payload;
    if (mcg_write_all(w->fd, buf, size) != 0) {
        w->err_no = errno;
        return -1;
    }
    w->bytes += size;
    progress_draw(w->prog, "writing objects", git_packbuilder_written(w->pb), w->nobj);
    return 0;
}

static int pack_progress_cb(int stage, uint32_t current, uint32_t total, void *payload)
{
    progress *p = payload;
    if (stage == GIT_PACKBUILDER_ADDING_OBJECTS)
        progress_draw(p, "counting objects", current, total ? total : current);
    else
        progress_draw(p, "compressing objects", current, total);
    return 0;
}

/* Insert annotated tag objects (and tags of tags) so the ref lines resolve. */
static int insert_tags(git_packbuilder *pb, git_repository *repo, const breflist *refs,
                       mcg_err *err)
{
    for (size_t i = 0; i < refs->n; i++) {
        git_oid id = refs->v[i].target;
        for (int depth = 0; depth < 16; depth++) {
            git_tag *tag = NULL;
            if (git_object_lookup((git_object **)&tag, repo, &id, GIT_OBJECT_TAG) != 0)
                break; /* not a tag: the walk already has it */
            int rc = git_packbuilder_insert(pb, &id, NULL);
            id = *git_tag_target_id(tag);
            git_tag_free(tag);
            if (rc != 0)
                return mcg_git_err(err, "pack");
        }
    }
    return 0;
}

int mcg_bundle_create(mcg_bundle_info *info, mcg_repo *r, const char *path,
                      const mcg_bundle_create_opts *opts, mcg_err *err)
{
    breflist refs = {0};
    oidv commits = {0}, prereqs = {0};
    git_revwalk *walk = NULL;
    git_packbuilder *pb = NULL;
    git_oid since_oid, oid;
    const git_oid *since = NULL;
    mcg_buf hdr = MCG_BUF_INIT;
    char *tmp = NULL, *dircopy = NULL;
    int fd = -1, rc = 0;
    bool to_stdout = !strcmp(path, "-");
    progress prog = {opts->flags & MCG_BUNDLE_PROGRESS, NULL, -1};
    mcg_bundle_info local = {0};

    if (to_stdout && isatty(STDOUT_FILENO))
        return mcg_err_set(err, MCG_EUSAGE, "refusing to write a bundle to a terminal");
    rc = opts->nrefs ? named_refs(&refs, r, opts->refs, opts->nrefs, err)
                     : default_refs(&refs, r, err);
    if (rc)
        goto out;
    if (opts->since) {
        char sha[MCG_SHA_HEX + 1];
        if ((rc = mcg_repo_resolve(r, opts->since, sha, err)) != 0)
            goto out;
        git_oid_fromstr(&since_oid, sha);
        since = &since_oid;
    }

    /* The new commits, and the prerequisites: their parents outside the set. */
    if ((rc = walk_new(&walk, r, &refs, since, err)) != 0)
        goto out;
    while (git_revwalk_next(&oid, walk) == 0)
        oidv_push(&commits, &oid);
    git_revwalk_free(walk);
    walk = NULL;
    oidv_sort(&commits);
    for (size_t i = 0; i < commits.n && since; i++) {
        git_commit *c = NULL;
        if (git_commit_lookup(&c, r->git, &commits.v[i]) != 0) {
            rc = mcg_git_err(err, "commit");
            goto out;
        }
        for (unsigned p = 0; p < git_commit_parentcount(c); p++)
            if (!oidv_has(&commits, git_commit_parent_id(c, p)))
                oidv_push(&prereqs, git_commit_parent_id(c, p));
        git_commit_free(c);
    }
    oidv_sort(&prereqs);
    /* In an incremental bundle, a ref whose commit is not new is left out. */
    size_t kept = 0;
    for (size_t i = 0; i < refs.n; i++) {
        if (since && !oidv_has(&commits, &refs.v[i].commit)) {
            free(refs.v[i].name);
            continue;
        }
        refs.v[kept++] = refs.v[i];
    }
    refs.n = kept;
    if (!refs.n || !commits.n) {
        rc = mcg_err_set(err, MCG_EINVAL, "nothing to bundle: no new commits%s%s",
                         since ? " since " : "", since ? opts->since : "");
        goto out;
    }
    qsort(refs.v, refs.n, sizeof(*refs.v), bref_cmp);

    /* Header. */
    mcg_buf_puts(&hdr, "# v2 git bundle\n");
    for (size_t i = 0; i < prereqs.n; i++) {
        git_commit *c = NULL;
        char sha[MCG_SHA_HEX + 1];
        git_oid_tostr(sha, sizeof(sha), &prereqs.v[i]);
        const char *subject = NULL;
        if (git_commit_lookup(&c, r->git, &prereqs.v[i]) == 0)
            subject = git_commit_summary(c);
        mcg_buf_printf(&hdr, "-%s %s\n", sha, subject ? subject : "");
        git_commit_free(c);
    }
    for (size_t i = 0; i < refs.n; i++) {
        char sha[MCG_SHA_HEX + 1];
        git_oid_tostr(sha, sizeof(sha), &refs.v[i].target);
        mcg_buf_printf(&hdr, "%s %s\n", sha, refs.v[i].name);
    }
    mcg_buf_putc(&hdr, '\n');

    /* The pack: new commits with only the trees and blobs the prerequisites lack. */
    if (git_packbuilder_new(&pb, r->git) != 0) {
        rc = mcg_git_err(err, "pack");
        goto out;
    }
    git_packbuilder_set_threads(pb, 0);
    if (prog.on)
        git_packbuilder_set_callbacks(pb, pack_progress_cb, &prog);
    if ((rc = walk_new(&walk, r, &refs, since, err)) != 0)
        goto out;
    if (git_packbuilder_insert_walk(pb, walk) != 0) {
        rc = mcg_git_err(err, "pack");
        goto out;
    }
    if ((rc = insert_tags(pb, r->git, &refs, err)) != 0)
        goto out;

    if (to_stdout) {
        fd = STDOUT_FILENO;
    } else {
        tmp = mcg_sprintf("%s.tmp-XXXXXX", path);
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0) {
            rc = mcg_err_set(err, MCG_EIO, "%s: %s", path, strerror(errno));
            free(tmp);
            tmp = NULL;
            goto out;
        }
        mode_t mask = umask(0);
        umask(mask);
        fchmod(fd, 0666 & ~mask);
    }
    if (mcg_write_all(fd, hdr.ptr, hdr.len) != 0) {
        rc = mcg_err_set(err, MCG_EIO, "%s: %s", path, strerror(errno));
        goto out;
    }
    write_ctx w = {fd, 0, hdr.len, git_packbuilder_object_count(pb), pb, &prog};
    if (git_packbuilder_foreach(pb, pack_write_cb, &w) != 0) {
        if (w.err_no)
            rc = mcg_err_set(err, MCG_EIO, "%s: %s", path, strerror(w.err_no));
        else
            rc = mcg_git_err(err, "pack");
        goto out;
    }
    progress_end(&prog);
    if (!to_stdout) {
        if (fsync(fd) != 0) {
            rc = mcg_err_set(err, MCG_EIO, "%s: fsync: %s", path, strerror(errno));
            goto out;
        }
        close(fd);
        fd = -1;
        if (rename(tmp, path) != 0) {
            rc = mcg_err_set(err, MCG_EIO, "%s: %s", path, strerror(errno));
            goto out;
        }
        free(tmp);
        tmp = NULL; /* renamed: nothing to remove */
        dircopy = mcg_strdup(path);
        mcg_fsync_dir(dirname(dircopy));
    }
    local.nrefs = refs.n;
    local.nprerequisites = prereqs.n;
    local.nobjects = git_packbuilder_object_count(pb);
    local.bytes = w.bytes;
    if (info)
        *info = local;
out:
    progress_end(&prog);
    if (fd >= 0 && fd != STDOUT_FILENO)
        close(fd);
    if (tmp) {
        unlink(tmp);
        free(tmp);
    }
    free(dircopy);
    mcg_buf_free(&hdr);
    git_packbuilder_free(pb);
    git_revwalk_free(walk);
    oidv_free(&commits);
    oidv_free(&prereqs);
    breflist_free(&refs);
    return rc;
}

/* ============================================================ read */

/* A buffered reader over a file descriptor, counting what it consumed. */
typedef struct reader {
    int fd;
    const char *name;
    char *buf;
    size_t pos, len;
    bool eof;
} reader;

static int rd_fill(reader *rd, mcg_err *err)
{
    if (rd->pos < rd->len || rd->eof)
        return 0;
    for (;;) {
        ssize_t n = read(rd->fd, rd->buf, BUNDLE_CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return mcg_err_set(err, MCG_EIO, "%s: %s", rd->name, strerror(errno));
        rd->pos = 0;
        rd->len = (size_t)n;
        rd->eof = n == 0;
        return 0;
    }
}

/*
 * One header line into line (without its LF). *complete is false when the
 * input ended first. Lines longer than BUNDLE_MAX_LINE are refused.
 */
static int rd_line(reader *rd, mcg_buf *line, bool *complete, mcg_err *err)
{
    int rc;
    line->len = 0;
    if (line->ptr)
        line->ptr[0] = '\0';
    *complete = false;
    for (;;) {
        if ((rc = rd_fill(rd, err)) != 0)
            return rc;
        if (rd->eof)
            return 0;
        const char *start = rd->buf + rd->pos;
        const char *nl = memchr(start, '\n', rd->len - rd->pos);
        size_t n = nl ? (size_t)(nl - start) : rd->len - rd->pos;
        if (line->len + n > BUNDLE_MAX_LINE)
            return mcg_err_set(err, MCG_EINVAL, "not a git bundle: header line too long");
        mcg_buf_put(line, start, n);
        rd->pos += n + (nl ? 1 : 0);
        if (nl) {
            *complete = true;
            return 0;
        }
    }
}

typedef struct hdr_ref {
    git_oid oid;
    char *name;
} hdr_ref;

typedef struct bundle_hdr {
    int version;
    oidv prereqs;
    hdr_ref *refs;
    size_t nrefs, cap;
} bundle_hdr;

static void hdr_free(bundle_hdr *h)
{
    oidv_free(&h->prereqs);
    for (size_t i = 0; i < h->nrefs; i++)
        free(h->refs[i].name);
    free(h->refs);
    memset(h, 0, sizeof(*h));
}

/* Exactly 40 hex digits at s, followed by end, space or nothing else. */
static bool parse_oid(git_oid *out, const char *s)
{
    for (int i = 0; i < MCG_SHA_HEX; i++)
        if (!s[i] || !strchr("0123456789abcdefABCDEF", s[i]))
            return false;
    return git_oid_fromstrn(out, s, MCG_SHA_HEX) == 0;
}

/* Print untrusted header text safely: at most 80 bytes, controls as '?'. */
static const char *untrusted(char out[96], const char *s)
{
    size_t j = 0;
    for (size_t i = 0; s[i] && j < 80; i++)
        out[j++] = (unsigned char)s[i] < 0x20 || (unsigned char)s[i] == 0x7f ? '?' : s[i];
    if (strlen(s) > 80) {
        memcpy(out + j, "...", 3);
        j += 3;
    }
    out[j] = '\0';
    return out;
}

static int parse_header(bundle_hdr *h, reader *rd, mcg_err *err)
{
    mcg_buf line = MCG_BUF_INIT;
    bool complete;
    char safe[96];
    int rc;
    if ((rc = rd_line(rd, &line, &complete, err)) != 0)
        goto out;
    if (complete && !strcmp(line.ptr, "# v2 git bundle"))
        h->version = 2;
    else if (complete && !strcmp(line.ptr, "# v3 git bundle"))
        h->version = 3;
    else if (complete && !strncmp(line.ptr, "# v", 3) && strstr(line.ptr, " git bundle")) {
        rc = mcg_err_set(err, MCG_EINVAL, "unsupported bundle version: %s",
                         untrusted(safe, line.ptr + 2));
        goto out;
    } else {
        rc = mcg_err_set(err, MCG_EINVAL, "not a git bundle (no '# v2 git bundle' header)");
        goto out;
    }
    for (;;) {
        if ((rc = rd_line(rd, &line, &complete, err)) != 0)
            goto out;
        if (!complete) {
            rc = mcg_err_set(err, MCG_EINVAL, "truncated bundle: the header ends early");
            goto out;
        }
        if (line.len == 0)
            break; /* the pack follows */
        if (h->prereqs.n + h->nrefs >= BUNDLE_MAX_REFS) {
            rc = mcg_err_set(err, MCG_EINVAL, "bundle header lists more than %d refs",
                             BUNDLE_MAX_REFS);
            goto out;
        }
        if (strlen(line.ptr) != line.len) {
            rc = mcg_err_set(err, MCG_EINVAL, "not a git bundle: NUL byte in the header");
            goto out;
        }
        if (line.ptr[0] == '@') {
            /* Capabilities: an allow-list of one. */
            if (h->version != 3 || h->prereqs.n || h->nrefs) {
                rc = mcg_err_set(err, MCG_EINVAL, "bad bundle header line: %s",
                                 untrusted(safe, line.ptr));
                goto out;
            }
            if (strcmp(line.ptr + 1, "object-format=sha1") != 0) {
                rc = mcg_err_set(err, MCG_EINVAL, "unsupported bundle capability '%s'",
                                 untrusted(safe, line.ptr + 1));
                goto out;
            }
            continue;
        }
        git_oid oid;
        if (line.ptr[0] == '-') {
            if (!parse_oid(&oid, line.ptr + 1) ||
                (line.ptr[1 + MCG_SHA_HEX] && line.ptr[1 + MCG_SHA_HEX] != ' ')) {
                rc = mcg_err_set(err, MCG_EINVAL, "bad prerequisite line: %s",
                                 untrusted(safe, line.ptr));
                goto out;
            }
            oidv_push(&h->prereqs, &oid);
            continue;
        }
        const char *name = line.ptr + MCG_SHA_HEX + 1;
        int valid = 0;
        if (!parse_oid(&oid, line.ptr) || line.ptr[MCG_SHA_HEX] != ' ' ||
            git_reference_name_is_valid(&valid, name) != 0 || !valid) {
            rc = mcg_err_set(err, MCG_EINVAL, "bad ref line: %s", untrusted(safe, line.ptr));
            goto out;
        }
        for (size_t i = 0; i < h->nrefs; i++)
            if (!strcmp(h->refs[i].name, name)) {
                rc = mcg_err_set(err, MCG_EINVAL, "ref %s is listed twice", untrusted(safe, name));
                goto out;
            }
        if (h->nrefs == h->cap) {
            h->cap = h->cap ? h->cap * 2 : 16;
            h->refs = mcg_realloc(h->refs, h->cap * sizeof(*h->refs));
        }
        h->refs[h->nrefs].oid = oid;
        h->refs[h->nrefs].name = mcg_strdup(name);
        h->nrefs++;
    }
    if (!h->nrefs)
        rc = mcg_err_set(err, MCG_EINVAL, "bundle lists no refs");
out:
    mcg_buf_free(&line);
    return rc;
}

/* ============================================================ quarantine */

/* Remove the quarantine: its pack/ files, pack/, itself. Only what we made. */
static void quarantine_remove(const char *q)
{
    if (!q)
        return;
    char *packdir = mcg_sprintf("%s/pack", q);
    DIR *d = opendir(packdir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char *f = mcg_sprintf("%s/%s", packdir, e->d_name);
            unlink(f);
            free(f);
        }
        closedir(d);
    }
    rmdir(packdir);
    rmdir(q);
    free(packdir);
}

static int indexer_progress_cb(const git_indexer_progress *s, void *payload)
{
    progress *p = payload;
    if (s->total_deltas && s->indexed_deltas)
        progress_draw(p, "resolving deltas", s->indexed_deltas, s->total_deltas);
    else
        progress_draw(p, "receiving objects", s->received_objects, s->total_objects);
    return 0;
}

/* Stream the rest of rd into an indexer writing into q/pack; *name = pack hash. */
static int index_pack(char **name, reader *rd, const char *q, git_odb *odb, progress *prog,
                      mcg_bundle_report *rep, mcg_err *err)
{
    git_indexer *idx = NULL;
    git_indexer_options o = GIT_INDEXER_OPTIONS_INIT;
    git_indexer_progress stats = {0};
    char *packdir = mcg_sprintf("%s/pack", q);
    int rc = 0;
    *name = NULL;
    /*
     * No o.verify: libgit2 1.5's connectivity check leaks every object the
     * repo already has. check_connected() does the same check instead.
     */
    if (prog->on) {
        o.progress_cb = indexer_progress_cb;
        o.progress_cb_payload = prog;
    }
    if (git_indexer_new(&idx, packdir, 0444, odb, &o) != 0) {
        rc = mcg_git_err(err, "indexer");
        goto out;
    }
    for (;;) {
        if ((rc = rd_fill(rd, err)) != 0)
            goto out;
        if (rd->eof)
            break;
        size_t n = rd->len - rd->pos;
        if (git_indexer_append(idx, rd->buf + rd->pos, n, &stats) != 0) {
            const git_error *e = git_error_last();
            rc = mcg_err_set(err, MCG_EINVAL, "damaged bundle: the pack does not index (%s)",
                             e && e->message ? e->message : "indexer error");
            goto out;
        }
        rd->pos = rd->len;
        rep->pack_bytes += n;
    }
    if (rep->pack_bytes == 0) {
        rc = mcg_err_set(err, MCG_EINVAL, "truncated bundle: no pack data");
        goto out;
    }
    if (git_indexer_commit(idx, &stats) != 0) {
        const git_error *e = git_error_last();
        rc = mcg_err_set(err, MCG_EINVAL, "damaged or truncated bundle: %s",
                         e && e->message ? e->message : "indexer error");
        goto out;
    }
    rep->objects = stats.total_objects;
    *name = mcg_strdup(git_indexer_name(idx));
out:
    progress_end(prog);
    git_indexer_free(idx);
    free(packdir);
    return rc;
}

/* ============================================================ check */

static void report_reset(mcg_bundle_report *rep)
{
    memset(rep, 0, sizeof(*rep));
}

void mcg_bundle_report_free(mcg_bundle_report *rep)
{
    if (!rep)
        return;
    for (size_t i = 0; i < rep->nrefs; i++) {
        free(rep->refs[i].name);
        mcg_verify_report_free(&rep->refs[i].verify);
    }
    free(rep->refs);
    mcg_strv_free(&rep->prerequisites);
    memset(rep, 0, sizeof(*rep));
}

/* Decide what happens to one ref; refusals set err and return nonzero. */
static int classify(mcg_bundle_ref *br, mcg_repo *q, const git_oid *new_oid, mcg_err *err)
{
    const char *name = br->name;
    git_oid old;
    bool is_tag = !strncmp(name, "refs/tags/", 10);
    if (!strcmp(name, "HEAD")) {
        br->note = "HEAD is not imported";
        return 0;
    }
    if (strncmp(name, "refs/heads/", 11) && !is_tag) {
        br->note = "only branches and tags are imported";
        return 0;
    }
    if (!is_tag && !strcmp(name + 11, q->rendered_branch)) {
        br->note = "the rendered branch is made locally";
        return 0;
    }
    br->action = MCG_BUNDLE_SKIP;
    if (git_reference_name_to_id(&old, q->git, name) != 0) {
        br->action = MCG_BUNDLE_CREATE;
        return 0;
    }
    git_oid_tostr(br->old_sha, sizeof(br->old_sha), &old);
    if (git_oid_equal(&old, new_oid)) {
        br->action = MCG_BUNDLE_SAME;
        return 0;
    }
    if (is_tag) {
        br->action = MCG_BUNDLE_REWRITE;
        return mcg_err_set(err, MCG_ECONFLICT,
                           "%s: the bundle moves an existing tag (%.12s -> %.12s)", name,
                           br->old_sha, br->new_sha);
    }
    if (git_graph_descendant_of(q->git, new_oid, &old) == 1) {
        br->action = MCG_BUNDLE_FORWARD;
        return 0;
    }
    if (git_graph_descendant_of(q->git, &old, new_oid) == 1) {
        br->action = MCG_BUNDLE_STALE;
        return mcg_err_set(err, MCG_ECONFLICT,
                           "stale bundle: %s %.12s is older than the repo's %.12s (rollback "
                           "refused)",
                           name, br->new_sha, br->old_sha);
    }
    br->action = MCG_BUNDLE_REWRITE;
    return mcg_err_set(err, MCG_ECONFLICT,
                       "%s: not a fast-forward (%.12s does not descend from the repo's %.12s), "
                       "refused",
                       name, br->new_sha, br->old_sha);
}

/* Peel a ref value to a commit sha within the quarantined view. */
static int peel_commit(char sha[MCG_SHA_HEX + 1], mcg_repo *q, const mcg_bundle_ref *br,
                       mcg_err *err)
{
    git_object *obj = NULL, *peeled = NULL;
    git_oid oid;
    int rc = 0;
    git_oid_fromstr(&oid, br->new_sha);
    if (git_object_lookup(&obj, q->git, &oid, GIT_OBJECT_ANY) != 0)
        rc = mcg_err_set(err, MCG_EINVAL, "incomplete bundle: %s points to missing object %s",
                         br->name, br->new_sha);
    else if (git_object_peel(&peeled, obj, GIT_OBJECT_COMMIT) != 0)
        rc = mcg_err_set(err, MCG_EINVAL, "%s does not point to a commit", br->name);
    else
        git_oid_tostr(sha, MCG_SHA_HEX + 1, git_object_id(peeled));
    git_object_free(peeled);
    git_object_free(obj);
    return rc;
}

typedef struct session {
    mcg_repo q;      /* a second handle on the repo, with the quarantine as alternate */
    char *objects;   /* the repo's objects directory (with a trailing '/') */
    char *qdir;      /* objects/incoming-XXXXXX */
    char *pack_name; /* pack-<name>.{pack,idx} inside qdir/pack */
    char source_tip[MCG_SHA_HEX + 1]; /* new source tip to render, "" none */
} session;

static void session_end(session *s)
{
    git_repository_free(s->q.git);
    s->q.git = NULL;
    quarantine_remove(s->qdir);
    free(s->qdir);
    free(s->objects);
    free(s->pack_name);
    memset(s, 0, sizeof(*s));
}

/* Is id neither in the pack (the sorted ids of its index) nor in odb? */
static bool missing(const oidv *pack, git_odb *odb, const git_oid *id, char sha[MCG_SHA_HEX + 1])
{
    if (oidv_has(pack, id) || git_odb_exists(odb, id))
        return false;
    git_oid_tostr(sha, MCG_SHA_HEX + 1, id);
    return true;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/*
 * The object ids of a pack, read from its .idx (version 2: magic, version,
 * 256 fan-out counts, then the sorted ids) — the index libgit2 just wrote.
 * Read directly so that no second packfile handle (with its own caches) is
 * opened on the quarantined pack.
 */
static int read_idx_oids(oidv *out, const char *idx, mcg_err *err)
{
    unsigned char head[8 + 256 * 4];
    int rc = 0;
    FILE *f = fopen(idx, "rbe");
    if (!f)
        return mcg_err_set(err, MCG_EIO, "%s: %s", idx, strerror(errno));
    if (fread(head, 1, sizeof(head), f) != sizeof(head) || memcmp(head, "\377tOc", 4) ||
        be32(head + 4) != 2) {
        rc = mcg_err_set(err, MCG_EIO, "%s: not a version 2 pack index", idx);
        goto out;
    }
    uint32_t n = be32(head + 8 + 255 * 4);
    for (uint32_t i = 0; i < n; i++) {
        unsigned char raw[GIT_OID_RAWSZ];
        git_oid oid;
        if (fread(raw, 1, sizeof(raw), f) != sizeof(raw)) {
            rc = mcg_err_set(err, MCG_EIO, "%s: truncated", idx);
            goto out;
        }
        git_oid_fromraw(&oid, raw);
        oidv_push(out, &oid);
    }
out:
    fclose(f);
    return rc;
}

/*
 * Every object the quarantined pack's commits, trees and tags name must be
 * in the pack or already in the repo (as git's fetch checks): a bundle that
 * is complete only in its header is refused before anything moves.
 */
static int check_connected(session *s, mcg_err *err)
{
    git_odb *all = NULL;
    oidv ids = {0};
    char *idx = mcg_sprintf("%s/pack/pack-%s.idx", s->qdir, s->pack_name);
    char sha[MCG_SHA_HEX + 1];
    int rc = 0;
    if ((rc = read_idx_oids(&ids, idx, err)) != 0)
        goto out;
    if (git_repository_odb(&all, s->q.git) != 0) {
        rc = mcg_git_err(err, "quarantine");
        goto out;
    }
    for (size_t i = 0; i < ids.n && !rc; i++) {
        size_t len;
        git_object_t type;
        git_object *obj = NULL;
        if (git_odb_read_header(&len, &type, all, &ids.v[i]) != 0) {
            rc = mcg_git_err(err, "quarantine");
            break;
        }
        if (type == GIT_OBJECT_BLOB)
            continue;
        if (git_object_lookup(&obj, s->q.git, &ids.v[i], type) != 0) {
            rc = mcg_git_err(err, "damaged bundle");
            break;
        }
        bool bad = false;
        if (type == GIT_OBJECT_COMMIT) {
            const git_commit *c = (const git_commit *)obj;
            bad = missing(&ids, all, git_commit_tree_id(c), sha);
            for (unsigned p = 0; p < git_commit_parentcount(c) && !bad; p++)
                bad = missing(&ids, all, git_commit_parent_id(c, p), sha);
        } else if (type == GIT_OBJECT_TREE) {
            const git_tree *t = (const git_tree *)obj;
            for (size_t j = 0; j < git_tree_entrycount(t) && !bad; j++) {
                const git_tree_entry *e = git_tree_entry_byindex(t, j);
                if (git_tree_entry_type(e) != GIT_OBJECT_COMMIT) /* submodules are links */
                    bad = missing(&ids, all, git_tree_entry_id(e), sha);
            }
        } else if (type == GIT_OBJECT_TAG) {
            bad = missing(&ids, all, git_tag_target_id((const git_tag *)obj), sha);
        }
        if (bad) {
            char self[MCG_SHA_HEX + 1];
            git_oid_tostr(self, sizeof(self), &ids.v[i]);
            rc = mcg_err_set(err, MCG_EINVAL,
                             "incomplete bundle: object %s needs %s, which neither the bundle "
                             "nor the repo has",
                             self, sha);
        }
        git_object_free(obj);
    }
out:
    oidv_free(&ids);
    git_odb_free(all);
    free(idx);
    return rc;
}

static int open_input(int *fd, const char *path, mcg_err *err)
{
    if (!strcmp(path, "-")) {
        *fd = STDIN_FILENO;
        return 0;
    }
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0)
        return mcg_err_set(err, errno == ENOENT ? MCG_ENOTFOUND : MCG_EIO, "%s: %s", path,
                           strerror(errno));
    struct stat st;
    if (fstat(*fd, &st) != 0 || S_ISDIR(st.st_mode)) {
        close(*fd);
        *fd = -1;
        return mcg_err_set(err, MCG_EIO, "%s: not a file", path);
    }
    return 0;
}

/* Every check of verify/import, leaving the quarantine in s on success. */
static int check_bundle(session *s, mcg_bundle_report *rep, mcg_repo *r, const char *path,
                        const mcg_signers *root, unsigned flags, mcg_err *err)
{
    bundle_hdr h = {0};
    reader rd = {-1, path, NULL, 0, 0, false};
    git_odb *odb = NULL;
    git_buf objdir = {0};
    progress prog = {(flags & MCG_BUNDLE_PROGRESS) != 0, NULL, -1};
    mcg_model *m = NULL;
    mcg_render *rd_out = NULL;
    mcg_diags diags = {0};
    int rc;

    if ((rc = open_input(&rd.fd, path, err)) != 0)
        return rc;
    rd.buf = mcg_malloc(BUNDLE_CHUNK);
    if ((rc = parse_header(&h, &rd, err)) != 0)
        goto out;
    rep->version = h.version;
    for (size_t i = 0; i < h.prereqs.n; i++) {
        char sha[MCG_SHA_HEX + 1];
        git_oid_tostr(sha, sizeof(sha), &h.prereqs.v[i]);
        mcg_strv_push(&rep->prerequisites, sha);
    }
    rep->refs = mcg_calloc(h.nrefs, sizeof(*rep->refs));
    for (size_t i = 0; i < h.nrefs; i++) {
        mcg_bundle_ref *br = &rep->refs[rep->nrefs++];
        br->name = mcg_strdup(h.refs[i].name);
        git_oid_tostr(br->new_sha, sizeof(br->new_sha), &h.refs[i].oid);
    }

    /* Prerequisites must already be here. */
    if (git_repository_odb(&odb, r->git) != 0) {
        rc = mcg_git_err(err, "odb");
        goto out;
    }
    for (size_t i = 0; i < h.prereqs.n; i++) {
        git_commit *c = NULL;
        if (git_commit_lookup(&c, r->git, &h.prereqs.v[i]) != 0) {
            rc = mcg_err_set(err, MCG_ENOTFOUND,
                             "missing prerequisite %s: import the bundle it came after first",
                             rep->prerequisites.v[i]);
            goto out;
        }
        git_commit_free(c);
    }

    /* Quarantine: objects/incoming-XXXXXX/pack. */
    if (git_repository_item_path(&objdir, r->git, GIT_REPOSITORY_ITEM_OBJECTS) != 0) {
        rc = mcg_git_err(err, "objects");
        goto out;
    }
    s->objects = mcg_strdup(objdir.ptr);
    s->qdir = mcg_sprintf("%sincoming-XXXXXX", s->objects);
    if (!mkdtemp(s->qdir)) {
        rc = mcg_err_set(err, MCG_EIO, "%s: %s", s->qdir, strerror(errno));
        free(s->qdir);
        s->qdir = NULL;
        goto out;
    }
    char *packdir = mcg_sprintf("%s/pack", s->qdir);
    int mk = mkdir(packdir, 0700);
    free(packdir);
    if (mk != 0) {
        rc = mcg_err_set(err, MCG_EIO, "quarantine: %s", strerror(errno));
        goto out;
    }
    /*
     * Bounded memory: object reads go through 8 MiB windows, at most 32 MiB
     * mapped (libgit2 1.5's indexer still maps the whole pack file for its
     * delta pass: page cache, not heap), and the parsed-object cache is kept
     * small, since a long history is read once.
     */
    git_libgit2_opts(GIT_OPT_SET_MWINDOW_SIZE, (size_t)(8 * 1024 * 1024));
    git_libgit2_opts(GIT_OPT_SET_MWINDOW_MAPPED_LIMIT, (size_t)(32 * 1024 * 1024));
    git_libgit2_opts(GIT_OPT_SET_CACHE_MAX_SIZE, (ssize_t)(2 * 1024 * 1024));
    if ((rc = index_pack(&s->pack_name, &rd, s->qdir, odb, &prog, rep, err)) != 0)
        goto out;

    /* A view of the repo that also sees the quarantine. */
    git_odb *qodb = NULL;
    if (git_repository_open_ext(&s->q.git, git_repository_path(r->git),
                                GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) != 0 ||
        git_repository_odb(&qodb, s->q.git) != 0 || git_odb_add_disk_alternate(qodb, s->qdir)) {
        git_odb_free(qodb);
        rc = mcg_git_err(err, "quarantine");
        goto out;
    }
    git_odb_free(qodb);
    s->q.source_branch = r->source_branch;
    s->q.rendered_branch = r->rendered_branch;
    if ((rc = check_connected(s, err)) != 0)
        goto out;

    /* Refs: present, and fast-forward only. */
    char *src_ref = mcg_sprintf("refs/heads/%s", r->source_branch);
    for (size_t i = 0; i < rep->nrefs && !rc; i++) {
        mcg_bundle_ref *br = &rep->refs[i];
        char sha[MCG_SHA_HEX + 1];
        git_object *obj = NULL;
        git_oid oid;
        git_oid_fromstr(&oid, br->new_sha);
        if (git_object_lookup(&obj, s->q.git, &oid, GIT_OBJECT_ANY) != 0) {
            rc = mcg_err_set(err, MCG_EINVAL, "incomplete bundle: %s points to missing object %s",
                             br->name, br->new_sha);
            break;
        }
        git_object_free(obj);
        if ((rc = classify(br, &s->q, &oid, err)) != 0)
            break;
        if (br->action != MCG_BUNDLE_CREATE && br->action != MCG_BUNDLE_FORWARD)
            continue;
        if ((rc = peel_commit(sha, &s->q, br, err)) != 0)
            break;
        /*
         * Every new commit is verified. For the source branch the range is
         * the one `mcgit render` will check (since the last verified
         * commit), so the render after the move cannot fail on trust; other
         * refs from their current value.
         */
        bool is_src = !strcmp(br->name, src_ref);
        const char *since = is_src || !br->old_sha[0] ? NULL : br->old_sha;
        if ((rc = mcg_gitops_verify(&br->verify, &s->q, sha, since, root, err)) != 0)
            break;
        if (br->verify.nbad) {
            const mcg_verdict *v = NULL;
            for (size_t j = 0; j < br->verify.n && !v; j++)
                if (!br->verify.v[j].good)
                    v = &br->verify.v[j];
            rc = mcg_err_set(err, MCG_ETRUST, "commit %s: %s (%zu of %zu new commit%s refused)",
                             v->sha, v->reason, br->verify.nbad, br->verify.n,
                             br->verify.n == 1 ? "" : "s");
            break;
        }
        if (is_src)
            memcpy(s->source_tip, sha, sizeof(sha));
    }
    free(src_ref);
    if (rc)
        goto out;

    /* The new source tip must render, as `mcgit render --repo` will. */
    if (s->source_tip[0]) {
        if (mcg_gitops_load_commit(&m, &s->q, s->source_tip, &diags, err) != 0 ||
            mcg_render_model(&rd_out, m, &diags) != 0) {
            rc = mcg_err_set(err, MCG_EINVAL, "commit %s does not render: %s", s->source_tip,
                             diags.count ? diags.msgs[0] : err->msg);
            goto out;
        }
    }
    rep->accepted = true;
out:
    mcg_render_free(rd_out);
    mcg_model_free(m);
    mcg_diags_free(&diags);
    git_buf_dispose(&objdir);
    git_odb_free(odb);
    hdr_free(&h);
    free(rd.buf);
    if (rd.fd >= 0 && rd.fd != STDIN_FILENO)
        close(rd.fd);
    return rc;
}

int mcg_bundle_verify(mcg_bundle_report *rep, mcg_repo *r, const char *path,
                      const mcg_signers *root, unsigned flags, mcg_err *err)
{
    session s = {0};
    report_reset(rep);
    git_libgit2_init();
    int rc = check_bundle(&s, rep, r, path, root, flags, err);
    session_end(&s);
    git_libgit2_shutdown();
    return rc;
}

/* fsync a file by path. */
static int fsync_path(const char *p)
{
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* Move qdir/pack/pack-N.{pack,idx} into objects/pack/ (pack first: readers look for idx). */
static int move_pack(session *s, mcg_err *err)
{
    static const char *const ext[] = {"pack", "idx"};
    char *dest_dir = mcg_sprintf("%spack", s->objects);
    int rc = 0;
    if ((rc = mcg_mkdirs(dest_dir, 0755, err)) != 0)
        goto out;
    for (size_t i = 0; i < 2 && !rc; i++) {
        char *from = mcg_sprintf("%s/pack/pack-%s.%s", s->qdir, s->pack_name, ext[i]);
        char *to = mcg_sprintf("%s/pack-%s.%s", dest_dir, s->pack_name, ext[i]);
        if (fsync_path(from) != 0 || rename(from, to) != 0)
            rc = mcg_err_set(err, MCG_EIO, "%s: %s", to, strerror(errno));
        free(from);
        free(to);
    }
    mcg_fsync_dir(dest_dir);
out:
    free(dest_dir);
    return rc;
}

/* Move every accepted ref: lock all, compare with what was checked, then set. */
static int move_refs(mcg_repo *r, const mcg_bundle_report *rep, mcg_err *err)
{
    git_transaction *tx = NULL;
    git_signature *sig = NULL;
    int rc = 0;
    if (git_transaction_new(&tx, r->git) != 0 ||
        git_signature_now(&sig, "mcgit", "mcgit@localhost") != 0) {
        rc = mcg_git_err(err, "refs");
        goto out;
    }
    for (size_t i = 0; i < rep->nrefs; i++) {
        const mcg_bundle_ref *br = &rep->refs[i];
        if (br->action != MCG_BUNDLE_CREATE && br->action != MCG_BUNDLE_FORWARD)
            continue;
        git_oid cur, want;
        if (git_transaction_lock_ref(tx, br->name) != 0) {
            rc = mcg_git_err(err, br->name);
            goto out;
        }
        int have = git_reference_name_to_id(&cur, r->git, br->name) == 0;
        char cur_sha[MCG_SHA_HEX + 1] = "";
        if (have)
            git_oid_tostr(cur_sha, sizeof(cur_sha), &cur);
        if (strcmp(cur_sha, br->old_sha) != 0) {
            rc = mcg_err_set(err, MCG_ECONFLICT, "%s changed during the import; nothing moved",
                             br->name);
            goto out;
        }
        git_oid_fromstr(&want, br->new_sha);
        if (git_transaction_set_target(tx, br->name, &want, sig, "mcgit bundle import") != 0) {
            rc = mcg_git_err(err, br->name);
            goto out;
        }
    }
    if (git_transaction_commit(tx) != 0)
        rc = mcg_git_err(err, "refs");
out:
    git_signature_free(sig);
    git_transaction_free(tx); /* unlocks anything not committed */
    return rc;
}

int mcg_bundle_import(mcg_bundle_report *rep, mcg_repo *r, const char *path,
                      const mcg_signers *root, unsigned flags, mcg_diags *diags, mcg_err *err)
{
    session s = {0};
    mcg_verify_report vr = {0};
    bool any = false;
    report_reset(rep);
    git_libgit2_init();
    int rc = check_bundle(&s, rep, r, path, root, flags, err);
    if (rc)
        goto out;
    for (size_t i = 0; i < rep->nrefs; i++)
        if (rep->refs[i].action == MCG_BUNDLE_CREATE || rep->refs[i].action == MCG_BUNDLE_FORWARD)
            any = true;
    if (!any)
        goto out; /* up to date: nothing to move */
    git_repository_free(s.q.git);
    s.q.git = NULL;
    if ((rc = move_pack(&s, err)) != 0)
        goto out;
    git_odb *odb = NULL;
    if (git_repository_odb(&odb, r->git) == 0) {
        git_odb_refresh(odb);
        git_odb_free(odb);
    }
    if ((rc = move_refs(r, rep, err)) != 0)
        goto out;
    rep->imported = true;
    if (s.source_tip[0]) {
        rc = mcg_gitops_render(&rep->render, NULL, &vr, r, s.source_tip, root, diags, err);
        if (rc)
            mcg_err_prefix(err, "imported, but the render failed");
        else
            rep->rendered = true;
    }
out:
    mcg_verify_report_free(&vr);
    session_end(&s);
    git_libgit2_shutdown();
    return rc;
}
