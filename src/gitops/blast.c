/*
 * blast.c — the blast radius of a commit signed by a key no longer
 * trusted: which pools' current rendered configs still hold its changes.
 *
 * The rendered history says what each source commit V did to each pool:
 * R(V) against its first rendered parent (the render of V's nearest
 * rendering ancestor). A change of V (a file, unit, SSH keys, kernel
 * arguments ... by kind and key, mcg_render_diff) is still in force when
 * the same kind and key did not change between R(V) and the rendered tip.
 * Commits the rendered branch does not hold report nothing.
 */
#include "fsio/fsio.h"
#include "gitops/gitops_int.h"

#include <stdlib.h>
#include <string.h>

/* <pool>/spec.json of a rendered tree, parsed; false when absent or bad. */
static bool spec_of(mcg_ignition *out, mcg_repo *r, const git_tree *tree, const char *pool)
{
    char *path = mcg_sprintf("%s/spec.json", pool), *data = NULL;
    size_t len = 0;
    bool ok = tree && mcg_git_read_path(&data, &len, r->git, tree, path, NULL) == 0 &&
              mcg_ignition_parse_json(out, path, data, len, NULL) == 0;
    free(data);
    free(path);
    return ok;
}

/* The changes of V to pool that the tip still holds, as "kind key" lines. */
static void pool_radius(mcg_strv *out, mcg_repo *r, const char *pool, const git_tree *prev,
                        const git_tree *v, const git_tree *tip)
{
    mcg_ignition before = {0}, at = {0}, now = {0};
    bool has_before = spec_of(&before, r, prev, pool);
    if (!spec_of(&at, r, v, pool) || !spec_of(&now, r, tip, pool))
        goto out;
    mcg_diff made = {0}, since = {0};
    mcg_render_diff(&made, has_before ? &before : NULL, &at, NULL);
    mcg_render_diff(&since, &at, &now, NULL);
    mcg_buf b = MCG_BUF_INIT;
    for (size_t i = 0; i < made.n; i++) {
        bool replaced = false;
        for (size_t k = 0; k < since.n && !replaced; k++)
            replaced = since.items[k].kind == made.items[i].kind &&
                       !strcmp(since.items[k].key, made.items[i].key);
        if (replaced)
            continue;
        mcg_buf_puts(&b, b.len ? ", " : "");
        mcg_buf_puts(&b, mcg_diff_kind_name(made.items[i].kind));
        mcg_buf_puts(&b, " ");
        mcg_buf_puts(&b, made.items[i].key);
    }
    if (b.len) {
        char *line = mcg_sprintf("%s: %.*s", pool, (int)b.len, b.ptr);
        mcg_strv_push(out, line);
        free(line);
    }
    mcg_buf_free(&b);
    mcg_diff_free(&made);
    mcg_diff_free(&since);
out:
    if (has_before)
        mcg_ignition_free(&before);
    mcg_ignition_free(&at);
    mcg_ignition_free(&now);
}

int mcg_gitops_blast_radius(mcg_strv *out, mcg_repo *r, const char *commit, mcg_err *err)
{
    mcg_chain *ch = NULL;
    git_oid src, rv, tip;
    git_commit *vc = NULL, *pc = NULL, *tc = NULL;
    git_tree *vt = NULL, *pt = NULL, *tt = NULL;
    char *ref = mcg_sprintf("refs/heads/%s", r->rendered_branch);
    int rc = 0;
    if (git_oid_fromstr(&src, commit) != 0) {
        rc = mcg_err_set(err, MCG_EINVAL, "bad commit id '%s'", commit);
        goto out;
    }
    if (git_reference_name_to_id(&tip, r->git, ref) != 0)
        goto out; /* nothing rendered here */
    if ((rc = mcg_chain_new(&ch, r, NULL, err)) != 0)
        goto out;
    if (!mcg_chain_lookup(ch, &src, &rv) || git_commit_lookup(&vc, r->git, &rv) != 0 ||
        git_commit_tree(&vt, vc) != 0 || git_commit_lookup(&tc, r->git, &tip) != 0 ||
        git_commit_tree(&tt, tc) != 0)
        goto out;
    if (git_commit_parentcount(vc) > 0 && git_commit_parent(&pc, vc, 0) == 0)
        git_commit_tree(&pt, pc);
    for (size_t i = 0; i < git_tree_entrycount(vt); i++) {
        const git_tree_entry *e = git_tree_entry_byindex(vt, i);
        if (git_tree_entry_type(e) == GIT_OBJECT_TREE)
            pool_radius(out, r, git_tree_entry_name(e), pt, vt, tt);
    }
out:
    git_tree_free(tt);
    git_tree_free(pt);
    git_tree_free(vt);
    git_commit_free(tc);
    git_commit_free(pc);
    git_commit_free(vc);
    mcg_chain_free(ch);
    free(ref);
    return rc;
}

/* ------------------------------------------------------------ held commits, cached */

/*
 * mcgit/untrusted in the git directory: "<trust digest> <source tip>\n" and
 * one held commit id a line — the commits of the source history whose keys
 * the trust root no longer trusts (docs/trust.md, "Trust changes"). It is
 * recomputed from the root when the trust root changes, and extended with
 * the new commits' held ones when the tip moves on.
 */
static char *held_path(const mcg_repo *r)
{
    return mcg_sprintf("%smcgit/untrusted", git_repository_path(r->git));
}

/* The held commits of the range (since, tip] (since "": the whole history). */
static int held_in(mcg_strv *held, mcg_repo *r, const char *tip, const char *since,
                   const mcg_signers *root, mcg_err *err)
{
    mcg_verify_report rep = {0};
    mcg_verify_opts o = {.since = since[0] ? since : NULL, .from_root = !since[0]};
    int rc = mcg_gitops_verify(&rep, r, tip, &o, root, err);
    for (size_t i = 0; !rc && i < rep.n; i++)
        if (rep.v[i].held && !mcg_strv_contains(held, rep.v[i].sha))
            mcg_strv_push(held, rep.v[i].sha);
    mcg_verify_report_free(&rep);
    return rc;
}

static int held_commits(mcg_strv *held, mcg_repo *r, const char *tip, const mcg_signers *root,
                        mcg_err *err)
{
    unsigned char d[32];
    char digest[65], *path = held_path(r), *data = NULL, since[MCG_SHA_HEX + 1] = "";
    size_t len = 0;
    mcg_signers_digest(root, d);
    mcg_hex(d, sizeof(d), digest);
    if (mcg_read_file(path, 1 << 24, &data, &len, NULL) == 0 && len > 65 + MCG_SHA_HEX &&
        !strncmp(data, digest, 64) && data[64] == ' ' && data[65 + MCG_SHA_HEX] == '\n') {
        memcpy(since, data + 65, MCG_SHA_HEX);
        for (char *l = data + 66 + MCG_SHA_HEX, *nl; (nl = strchr(l, '\n')); l = nl + 1) {
            *nl = '\0';
            if (strlen(l) == MCG_SHA_HEX)
                mcg_strv_push(held, l);
        }
        if (strcmp(since, tip) && !mcg_repo_descends(r, tip, since)) {
            mcg_strv_free(held); /* history moved sideways: from the root */
            since[0] = '\0';
        }
    }
    free(data);
    int rc = strcmp(since, tip) ? held_in(held, r, tip, since, root, err) : 0;
    if (!rc && strcmp(since, tip)) {
        mcg_buf b = MCG_BUF_INIT;
        mcg_buf_puts(&b, digest);
        mcg_buf_putc(&b, ' ');
        mcg_buf_puts(&b, tip);
        mcg_buf_putc(&b, '\n');
        for (size_t i = 0; i < held->n; i++) {
            mcg_buf_puts(&b, held->v[i]);
            mcg_buf_putc(&b, '\n');
        }
        mcg_write_file_atomic(path, b.ptr, b.len, 0644, NULL); /* a cache: best effort */
        mcg_buf_free(&b);
    }
    free(path);
    return rc;
}

int mcg_gitops_untrusted_pools(mcg_strv *out, mcg_repo *r, const mcg_signers *root, mcg_err *err)
{
    char tip[MCG_SHA_HEX + 1];
    mcg_strv held = {0};
    if (!mcg_gitops_verified_mark(r, root, tip))
        return 0; /* nothing verified here yet */
    int rc = held_commits(&held, r, tip, root, err);
    for (size_t i = 0; !rc && i < held.n; i++) {
        mcg_strv lines = {0};
        if (mcg_gitops_blast_radius(&lines, r, held.v[i], NULL) == 0)
            for (size_t k = 0; k < lines.n; k++) {
                /* "<pool>: <changes>" -> "<pool>\t<commit, 12>: <changes>" */
                char *colon = strchr(lines.v[k], ':');
                if (!colon)
                    continue;
                char *l = mcg_sprintf("%.*s\t%.12s:%s", (int)(colon - lines.v[k]), lines.v[k],
                                      held.v[i], colon + 1);
                mcg_strv_push(out, l);
                free(l);
            }
        mcg_strv_free(&lines);
    }
    mcg_strv_free(&held);
    return rc;
}
