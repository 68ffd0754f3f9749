/*
 * gitops/rendered.h — the rendered branch: making the rendered commit of a
 * source commit, its log, and reading files from its tip.
 */
#ifndef MCG_GITOPS_RENDERED_H
#define MCG_GITOPS_RENDERED_H

#include "render/render.h"
#include "gitops/verify.h"

typedef struct mcg_render_result {
    bool created;                   /* false: this source was already rendered */
    char rendered[MCG_SHA_HEX + 1]; /* the rendered commit for the source */
    char source[MCG_SHA_HEX + 1];
} mcg_render_result;

/*
 * Verify (every new commit up to rev), then make the rendered commit of rev
 * and move the rendered branch to it. The rendered commit R(S) of a source
 * commit S is a pure function of S's history (docs/concepts.md, "Rendered
 * history"): its tree holds per pool spec.json, name, files/<path>,
 * units/<unit> (+ <unit>.d/); author and committer are mcgit
 * <mcgit@localhost> at S's committer time; the message ends in the
 * trailers Render-Rule: 2 (Rollback-To copied from S) and Source-Commit: S;
 * its parents are R of the nearest rendering ancestors along each of S's
 * parents. So every clone computes the same ids, whatever it rendered
 * before; R of every commit below rev not rendered yet is made too (only
 * rev's render problems are reported). The branch moves when rev descends
 * from the last rendered source, stays when rev was rendered already, and
 * nothing moves if verification or the render fails (bad verdicts in *rep
 * when rep is given) or rev went sideways (MCG_ECONFLICT). A rendered
 * branch made by an older mcgit is replaced; its old tip stays as
 * refs/mcgit/rendered-legacy/<sha>. *out_render (optional) receives the
 * render.
 */
int mcg_gitops_render(mcg_render_result *res, mcg_render **out_render, mcg_verify_report *rep,
                      mcg_repo *r, const char *rev, const mcg_signers *root, mcg_diags *diags,
                      mcg_err *err);

/* One rendered commit, newest first in a log. */
typedef struct mcg_rendered_log_entry {
    char rendered[MCG_SHA_HEX + 1];
    char source[MCG_SHA_HEX + 1];   /* Source-Commit trailer, "" if none */
    char rollback[MCG_SHA_HEX + 1]; /* Rollback-To trailer, "" if none: the target source
                                       commit (rule 2), or rendered commit (older mcgit) */
    bool rule2;                     /* made by the pure rule (Render-Rule: 2) */
    int64_t time;
    int offset;     /* minutes east of UTC */
    mcg_strv pools; /* "pool rendered-pool-hash" */
    /* filled by mcg_gitops_log_sources when the source commit is held: */
    char *subject, *author; /* NULL when not */
    char signer[64];        /* fingerprint of the key whose signature holds, or "" */
    char principal[256];    /* who that key is under the trust root, or "" */
} mcg_rendered_log_entry;

typedef struct mcg_rendered_log {
    mcg_rendered_log_entry *e;
    size_t n;
} mcg_rendered_log;

/* Every commit of the rendered branch, newest first (children before parents). */
int mcg_gitops_log(mcg_rendered_log *out, mcg_repo *r, mcg_err *err);
/*
 * Add what each entry's source commit says: subject, author, the
 * fingerprint of the key whose signature over it holds, and with root (may
 * be NULL) the principal trusting that key (root plus .mcgit/allowed_signers
 * of its first parent, at its committer time).
 */
int mcg_gitops_log_sources(mcg_rendered_log *l, mcg_repo *r, const mcg_signers *root, mcg_err *err);
void mcg_rendered_log_free(mcg_rendered_log *l);

/*
 * Read a file from the tree of the rendered branch's tip: e.g.
 * "worker/spec.json". ENOTFOUND when there is no such file or branch.
 */
int mcg_gitops_read_rendered(char **data, size_t *len, mcg_repo *r, const char *path,
                             char tip_out[MCG_SHA_HEX + 1], mcg_err *err);

/* A pool's current rendered config, as `mcgit serve-config` serves it. */
typedef struct mcg_served_config {
    char *name; /* rendered-<pool>-<hash>: the spec's bytes hash to it */
    char *spec; /* spec.json, canonical */
    size_t spec_len;
    char rendered[MCG_SHA_HEX + 1]; /* the rendered branch's tip it was read from */
    char source[MCG_SHA_HEX + 1];   /* that commit's Source-Commit: the signed source */
} mcg_served_config;

/*
 * Verify and render the source branch of repo under the trust root (as
 * `mcgit render --repo`), then read pool's name and spec.json from the
 * rendered branch's tip. A source that does not verify or render moves
 * nothing and is no failure: the last good render is read, and
 * *render_problem (else NULL; the caller frees it) says why. MCG_ENOTFOUND:
 * no such pool (or not a pool name); free *out with mcg_gitops_served_free.
 */
int mcg_gitops_served_config(mcg_served_config *out, const char *repo, const char *trust,
                             const char *revoked, const char *pool, char **render_problem,
                             mcg_err *err);
void mcg_gitops_served_free(mcg_served_config *c);

#endif
