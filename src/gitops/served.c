/*
 * served.c — a pool's current rendered config for `mcgit serve-config`:
 * the source branch verified and rendered first (as `mcgit render --repo`),
 * then the pool's name and spec.json read from the rendered branch's tip,
 * checked against each other, with the rendered commit and the signed
 * source commit it was made from.
 */
#include "gitops/gitops_int.h"

#include <string.h>

void mcg_gitops_served_free(mcg_served_config *c)
{
    free(c->name);
    free(c->spec);
    memset(c, 0, sizeof(*c));
}

/* name and spec.json of pool at the rendered tip, one tip for both. */
static int read_pool(mcg_served_config *out, mcg_repo *r, const char *pool, mcg_err *err)
{
    char *p1 = mcg_sprintf("%s/name", pool), *p2 = mcg_sprintf("%s/spec.json", pool);
    char tip2[MCG_SHA_HEX + 1] = "";
    size_t nlen = 0;
    int rc = mcg_gitops_read_rendered(&out->name, &nlen, r, p1, out->rendered, err);
    if (!rc)
        rc = mcg_gitops_read_rendered(&out->spec, &out->spec_len, r, p2, tip2, err);
    free(p1);
    free(p2);
    if (rc == MCG_ENOTFOUND)
        return mcg_err_set(err, MCG_ENOTFOUND, "no pool %s on the rendered branch", pool);
    if (rc)
        return rc;
    while (nlen && (out->name[nlen - 1] == '\n' || out->name[nlen - 1] == ' '))
        out->name[--nlen] = '\0';
    if (strcmp(out->rendered, tip2) != 0)
        return mcg_err_set(err, MCG_ECONFLICT, "the rendered branch moved while reading");
    if (!mcg_render_name_matches(out->name, out->spec, out->spec_len))
        return mcg_err_set(err, MCG_EINVAL, "rendered commit %s: %s/spec.json does not hash to %s",
                           out->rendered, pool, out->name);
    return 0;
}

int mcg_gitops_served_config(mcg_served_config *out, const char *repo, const char *trust,
                             const char *revoked, const char *pool, char **render_problem,
                             mcg_err *err)
{
    memset(out, 0, sizeof(*out));
    *render_problem = NULL;
    if (!mcg_name_is_dns_label(pool))
        return mcg_err_set(err, MCG_ENOTFOUND, "no pool %s", pool);
    mcg_signers *root = NULL;
    mcg_repo *r = NULL;
    mcg_diags diags = {0};
    mcg_render_result res;
    int rc = mcg_gitops_load_trust(&root, trust, revoked, err);
    if (!rc)
        rc = mcg_repo_open(&r, repo, err);
    if (!rc) {
        /* A source that does not verify or render moves nothing: the last
         * good render stays what is served, and the caller says why. */
        mcg_err rerr = {0};
        if (mcg_gitops_render(&res, NULL, NULL, r, NULL, root, &diags, &rerr) != 0)
            *render_problem = mcg_strdup(diags.count ? diags.msgs[0] : rerr.msg);
        rc = read_pool(out, r, pool, err);
    }
    mcg_rendered_log log = {0};
    if (!rc && (rc = mcg_gitops_log(&log, r, err)) == 0) {
        if (log.n && !strcmp(log.e[0].rendered, out->rendered))
            snprintf(out->source, sizeof(out->source), "%s", log.e[0].source);
        else
            rc = mcg_err_set(err, MCG_ECONFLICT, "the rendered branch moved while reading");
    }
    mcg_rendered_log_free(&log);
    if (rc)
        mcg_gitops_served_free(out);
    mcg_diags_free(&diags);
    mcg_repo_free(r);
    mcg_signers_free(root);
    return rc;
}
