/*
 * remote_pack.c — the pack a fetch brings, checked and indexed within the
 * fetch's deadline.
 *
 * libgit2 writes a fetched pack (http, https, ssh and local transports
 * alike) through the first object database backend that offers to write
 * packs. mcgit's backend outranks the packed one: it keeps a copy of the
 * stream for the delta graph check (pack/graph.c) and feeds libgit2's own
 * indexer, and before the indexer resolves a single delta the graph is
 * resolved: a delta on its own result, a cycle, a chain deeper than
 * MCG_PACK_MAX_CHAIN, an object over the size limits or a base neither the
 * pack nor the repository has is refused (libgit2 1.5.1 loops for ever on
 * the first two, its memory growing). The deadline of the fetch running
 * on this thread (netstream.c) is checked while the pack arrives, during
 * the check, and in the indexer's progress callback while it resolves
 * deltas, so --timeout covers the indexing as well as the transfer.
 */
#include "gitops/gitops_int.h"

#include <git2/sys/odb_backend.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The limits of bundle/index.c: one object, and all of them against the pack's size. */
#define MAX_OBJECT ((uint64_t)MCG_MAX_SOURCE_FILE)
#define INFLATE_RATIO 1024u
#define INFLATE_FLOOR ((uint64_t)256 * 1024 * 1024)

typedef struct armed {
    bool on;
    bool indexing; /* the pack began to arrive: receiving, checking, indexing it */
    const char *url;
    mcg_deadline *dl;
    char refusal[MCG_ERR_MSG];
} armed;

/* The fetch running on this thread. */
static _Thread_local armed cur;

typedef struct rp_backend {
    git_odb_backend parent;
    char *packdir;
} rp_backend;

typedef struct rp_writepack {
    git_odb_writepack parent;
    git_indexer *idx;
    mcg_pack_graph *graph;
    git_odb *odb;
    mcg_deadline *dl;
    git_indexer_progress_cb cb;
    void *payload;
} rp_writepack;

static bool rp_expired(void *ctx)
{
    return mcg_deadline_passed(ctx);
}

/* The indexer's progress: stop once the deadline has passed, else pass it on. */
static int rp_progress(const git_indexer_progress *s, void *payload)
{
    rp_writepack *w = payload;
    if (mcg_deadline_passed(w->dl)) {
        git_error_set_str(GIT_ERROR_NET, "timed out");
        return -1;
    }
    return w->cb ? w->cb(s, w->payload) : 0;
}

static int rp_append(git_odb_writepack *wp, const void *data, size_t size,
                     git_indexer_progress *stats)
{
    rp_writepack *w = (rp_writepack *)wp;
    if (cur.on)
        cur.indexing = true;
    if (mcg_deadline_passed(w->dl)) {
        git_error_set_str(GIT_ERROR_NET, "timed out");
        return -1;
    }
    mcg_pack_graph_feed(w->graph, data, size);
    return git_indexer_append(w->idx, data, size, stats);
}

static int rp_commit(git_odb_writepack *wp, git_indexer_progress *stats)
{
    rp_writepack *w = (rp_writepack *)wp;
    mcg_pack_limits lim = {.max_object = MAX_OBJECT,
                           .ratio = INFLATE_RATIO,
                           .floor = INFLATE_FLOOR,
                           .max_depth = MCG_PACK_MAX_CHAIN,
                           .expired = rp_expired,
                           .ctx = w->dl};
    mcg_err e = {0};
    if (mcg_pack_graph_check(w->graph, w->odb, &lim, "the fetched pack", NULL, &e) != 0) {
        if (cur.on && !mcg_deadline_passed(w->dl))
            snprintf(cur.refusal, sizeof(cur.refusal), "%s", e.msg);
        git_error_set_str(GIT_ERROR_INDEXER, e.msg);
        return -1;
    }
    return git_indexer_commit(w->idx, stats);
}

static void rp_free_writepack(git_odb_writepack *wp)
{
    rp_writepack *w = (rp_writepack *)wp;
    git_indexer_free(w->idx);
    mcg_pack_graph_free(w->graph);
    free(w);
}

static int rp_writepack_new(git_odb_writepack **out, git_odb_backend *b, git_odb *odb,
                            git_indexer_progress_cb cb, void *payload)
{
    rp_backend *be = (rp_backend *)b;
    rp_writepack *w = calloc(1, sizeof(*w));
    mcg_err e = {0};
    git_indexer_options o;
    if (!w) {
        git_error_set_oom();
        return -1;
    }
    w->parent.backend = b;
    w->parent.append = rp_append;
    w->parent.commit = rp_commit;
    w->parent.free = rp_free_writepack;
    w->odb = odb;
    w->dl = cur.on ? cur.dl : NULL;
    w->cb = cb;
    w->payload = payload;
    git_indexer_options_init(&o, GIT_INDEXER_OPTIONS_VERSION);
    o.progress_cb = rp_progress;
    o.progress_cb_payload = w;
    if (mcg_pack_graph_new(&w->graph, be->packdir, &e) != 0) {
        git_error_set_str(GIT_ERROR_OS, e.msg);
        free(w);
        return -1;
    }
    if (git_indexer_new(&w->idx, be->packdir, 0, odb, &o) != 0) {
        mcg_pack_graph_free(w->graph);
        free(w);
        return -1;
    }
    *out = &w->parent;
    return 0;
}

static void rp_backend_free(git_odb_backend *b)
{
    rp_backend *be = (rp_backend *)b;
    free(be->packdir);
    free(be);
}

/* Our backend in repo's object database, added unless it is there. */
static int rp_install(git_repository *repo, mcg_err *err)
{
    git_odb *odb = NULL;
    git_buf objects = {0};
    git_odb_backend *b = NULL;
    int rc = 0;
    if (git_repository_odb(&odb, repo) != 0)
        return mcg_git_err(err, "object database");
    for (size_t i = 0; i < git_odb_num_backends(odb); i++)
        if (git_odb_get_backend(&b, odb, i) == 0 && b->writepack == rp_writepack_new)
            goto out;
    if (git_repository_item_path(&objects, repo, GIT_REPOSITORY_ITEM_OBJECTS) != 0) {
        rc = mcg_git_err(err, "objects");
        goto out;
    }
    rp_backend *be = mcg_calloc(1, sizeof(*be));
    git_odb_init_backend(&be->parent, GIT_ODB_BACKEND_VERSION);
    be->parent.writepack = rp_writepack_new;
    be->parent.free = rp_backend_free;
    size_t n = strlen(objects.ptr);
    be->packdir = mcg_sprintf("%s%spack", objects.ptr, n && objects.ptr[n - 1] == '/' ? "" : "/");
    if (git_odb_add_backend(odb, &be->parent, 1000) != 0) {
        rc = mcg_git_err(err, "object database backend");
        rp_backend_free(&be->parent);
    }
out:
    git_buf_dispose(&objects);
    git_odb_free(odb);
    return rc;
}

int mcg_transport_pack_begin(git_repository *repo, const char *url, mcg_deadline *dl, mcg_err *err)
{
    int rc = rp_install(repo, err);
    cur = (armed){.on = rc == 0, .url = url, .dl = dl};
    return rc;
}

const char *mcg_transport_pack_end(bool *indexing)
{
    *indexing = cur.indexing;
    cur.on = false;
    cur.dl = NULL;
    return cur.refusal;
}
