/*
 * format.c — the bundle header (git's Documentation/gitformat-bundle.txt):
 * "# v2 git bundle" (or v3 with "@capability" lines), "-<oid> <comment>"
 * prerequisites, "<oid> <refname>" refs, a blank line — then a packfile.
 * libgit2 1.5 knows nothing of bundles, so the header is written and parsed
 * here.
 *
 * A header comes from an untrusted file and is parsed before any trust
 * check, so its cost must stay linear in its size: lines are bounded, the
 * number of lines is bounded, and a ref named twice is found through a hash
 * set keyed with a per-process random key (SipHash, libsodium's
 * crypto_shorthash), so that names chosen to collide cannot make it slow.
 */
#include "bundle/bundle_int.h"

#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void mcg_bundle_reader_mem(mcg_bundle_reader *rd, const char *name, const void *data, size_t len)
{
    memset(rd, 0, sizeof(*rd));
    rd->fd = -1;
    rd->name = name;
    rd->buf = (char *)data;
    rd->len = len;
    rd->mem = true;
}

int mcg_bundle_reader_fill(mcg_bundle_reader *rd, mcg_err *err)
{
    if (rd->pos < rd->len || rd->eof)
        return 0;
    if (rd->mem) {
        rd->pos = rd->len = 0;
        rd->eof = true;
        return 0;
    }
    for (;;) {
        ssize_t n = read(rd->fd, rd->buf, MCG_BUNDLE_CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return mcg_err_set_os(err, MCG_EIO, errno, "%s", rd->name);
        rd->pos = 0;
        rd->len = (size_t)n;
        rd->eof = n == 0;
        return 0;
    }
}

/*
 * One header line into line (without its LF). *complete is false when the
 * input ended first. Lines longer than MCG_BUNDLE_MAX_LINE are refused.
 */
static int rd_line(mcg_bundle_reader *rd, mcg_buf *line, bool *complete, mcg_err *err)
{
    int rc;
    line->len = 0;
    if (line->ptr)
        line->ptr[0] = '\0';
    *complete = false;
    for (;;) {
        if ((rc = mcg_bundle_reader_fill(rd, err)) != 0)
            return rc;
        if (rd->eof)
            return 0;
        const char *start = rd->buf + rd->pos;
        const char *nl = memchr(start, '\n', rd->len - rd->pos);
        size_t n = nl ? (size_t)(nl - start) : rd->len - rd->pos;
        if (line->len + n > MCG_BUNDLE_MAX_LINE)
            return mcg_err_set(err, MCG_EINVAL, "not a git bundle: header line too long");
        mcg_buf_put(line, start, n);
        rd->pos += n + (nl ? 1 : 0);
        if (nl) {
            *complete = true;
            return 0;
        }
    }
}

/*
 * A set of ref names: the header's own strings (not copied), in an open
 * addressing table at most half full, probed from a keyed hash.
 */
typedef struct nameset {
    const char **slot;
    size_t cap, n;
} nameset;

/* The first slot to probe for name. */
static size_t nameset_slot(const nameset *s, const char *name)
{
    return (size_t)mcg_keyed_hash(name, strlen(name)) & (s->cap - 1);
}

/* Add name (kept by pointer: it must outlive s); false when it was there already. */
static bool nameset_add(nameset *s, const char *name)
{
    if ((s->n + 1) * 2 > s->cap) {
        nameset bigger = *s;
        bigger.cap = s->cap ? s->cap * 2 : 64;
        bigger.slot = mcg_calloc(bigger.cap, sizeof(*bigger.slot));
        bigger.n = 0;
        for (size_t i = 0; i < s->cap; i++)
            if (s->slot[i]) {
                size_t j = nameset_slot(&bigger, s->slot[i]);
                while (bigger.slot[j])
                    j = (j + 1) & (bigger.cap - 1);
                bigger.slot[j] = s->slot[i];
                bigger.n++;
            }
        free(s->slot);
        *s = bigger;
    }
    size_t j = nameset_slot(s, name);
    while (s->slot[j]) {
        if (!strcmp(s->slot[j], name))
            return false;
        j = (j + 1) & (s->cap - 1);
    }
    s->slot[j] = name;
    s->n++;
    return true;
}

/* Free the table (not the names). */
static void nameset_free(nameset *s)
{
    free(s->slot);
    memset(s, 0, sizeof(*s));
}

void mcg_bundle_hdr_free(mcg_bundle_hdr *h)
{
    mcg_oidv_free(&h->prereqs);
    for (size_t i = 0; i < h->nrefs; i++)
        free(h->refs[i].name);
    free(h->refs);
    memset(h, 0, sizeof(*h));
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

/* The first line (complete: it ended with a newline): "# v2 git bundle" or "# v3 git bundle". */
static int hdr_version(mcg_bundle_hdr *h, const char *line, bool complete, mcg_err *err)
{
    char safe[96];
    if (complete && !strcmp(line, "# v2 git bundle"))
        h->version = 2;
    else if (complete && !strcmp(line, "# v3 git bundle"))
        h->version = 3;
    else if (complete && !strncmp(line, "# v", 3) && strstr(line, " git bundle"))
        return mcg_err_set(err, MCG_EINVAL, "unsupported bundle version: %s",
                           untrusted(safe, line + 2));
    else
        return mcg_err_set(err, MCG_EINVAL, "not a git bundle (no '# v2 git bundle' header)");
    return 0;
}

/* A ref line: 40 hex digits, a space, a ref name listed once (names: those so far). */
static int hdr_ref(mcg_bundle_hdr *h, nameset *names, const char *line, mcg_err *err)
{
    char safe[96];
    git_oid oid;
    /* the name is looked at only past the space */
    int valid = 0;
    const char *name = NULL;
    if (!mcg_pack_parse_oid(&oid, line) || line[MCG_SHA_HEX] != ' ' ||
        git_reference_name_is_valid(&valid, name = line + MCG_SHA_HEX + 1) != 0 || !valid)
        return mcg_err_set(err, MCG_EINVAL, "bad ref line: %s", untrusted(safe, line));
    char *copy = mcg_strdup(name);
    if (!nameset_add(names, copy)) {
        free(copy);
        return mcg_err_set(err, MCG_EINVAL, "ref %s is listed twice", untrusted(safe, name));
    }
    if (h->nrefs == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 16;
        h->refs = mcg_realloc(h->refs, h->cap * sizeof(*h->refs));
    }
    h->refs[h->nrefs].oid = oid;
    h->refs[h->nrefs].name = copy; /* transferred */
    h->nrefs++;
    return 0;
}

int mcg_bundle_hdr_parse(mcg_bundle_hdr *h, mcg_bundle_reader *rd, mcg_err *err)
{
    mcg_buf line = MCG_BUF_INIT;
    nameset names = {0};
    bool complete;
    char safe[96];
    int rc;
    if ((rc = rd_line(rd, &line, &complete, err)) != 0 ||
        (rc = hdr_version(h, line.ptr, complete, err)) != 0)
        goto out;
    for (;;) {
        if ((rc = rd_line(rd, &line, &complete, err)) != 0)
            goto out;
        if (!complete) {
            rc = mcg_err_set(err, MCG_EINVAL, "truncated bundle: the header ends early");
            goto out;
        }
        if (line.len == 0)
            break; /* the pack follows */
        if (h->prereqs.n + h->nrefs >= MCG_BUNDLE_MAX_REFS) {
            rc = mcg_err_set(err, MCG_EINVAL, "bundle header lists more than %d refs",
                             MCG_BUNDLE_MAX_REFS);
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
            if (!mcg_pack_parse_oid(&oid, line.ptr + 1) ||
                (line.ptr[1 + MCG_SHA_HEX] && line.ptr[1 + MCG_SHA_HEX] != ' ')) {
                rc = mcg_err_set(err, MCG_EINVAL, "bad prerequisite line: %s",
                                 untrusted(safe, line.ptr));
                goto out;
            }
            mcg_oidv_push(&h->prereqs, &oid);
            continue;
        }
        if ((rc = hdr_ref(h, &names, line.ptr, err)) != 0)
            goto out;
    }
    if (!h->nrefs)
        rc = mcg_err_set(err, MCG_EINVAL, "bundle lists no refs");
out:
    nameset_free(&names);
    mcg_buf_free(&line);
    return rc;
}

void mcg_bundle_hdr_put_start(mcg_buf *out)
{
    mcg_buf_puts(out, "# v2 git bundle\n");
}

void mcg_bundle_hdr_put_prereq(mcg_buf *out, const git_oid *id, const char *subject)
{
    char sha[GIT_OID_HEXSZ + 1];
    git_oid_tostr(sha, sizeof(sha), id);
    mcg_buf_printf(out, "-%s %s\n", sha, subject ? subject : "");
}

void mcg_bundle_hdr_put_ref(mcg_buf *out, const git_oid *id, const char *name)
{
    char sha[GIT_OID_HEXSZ + 1];
    git_oid_tostr(sha, sizeof(sha), id);
    mcg_buf_printf(out, "%s %s\n", sha, name);
}

void mcg_bundle_hdr_put_end(mcg_buf *out)
{
    mcg_buf_putc(out, '\n');
}
