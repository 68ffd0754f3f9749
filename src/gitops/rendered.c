/*
 * rendered.c — the rendered branch: one commit per rollout target.
 *
 * Each commit's tree holds, per pool, spec.json (the canonical rendered
 * spec), name, files/<path> with each file's decoded contents (symbolic
 * links as git symlinks) and units/<unit> (+ <unit>.d/<drop-in>), so
 * `git log -p rendered -- worker/files/etc/chrony.conf` is that file's
 * history on worker nodes. Commits are made by mcgit <mcgit@localhost> at
 * the source commit's committer time: the same source history renders to
 * the same commit ids in any clone.
 */
#include "gitops/gitops_int.h"

#include <stdlib.h>
#include <string.h>

typedef struct tree_entry_in {
    char *path;
    git_oid oid;
    git_filemode_t mode;
} tree_entry_in;

typedef struct tree_list {
    tree_entry_in *e;
    size_t n, cap;
} tree_list;

static int tl_add(tree_list *tl, git_repository *repo, const char *path, const void *data,
                  size_t len, git_filemode_t mode, mcg_err *err)
{
    if (tl->n == tl->cap) {
        tl->cap = tl->cap ? tl->cap * 2 : 64;
        tl->e = mcg_realloc(tl->e, tl->cap * sizeof(*tl->e));
    }
    tree_entry_in *e = &tl->e[tl->n];
    if (git_blob_create_from_buffer(&e->oid, repo, data, len) != 0)
        return mcg_git_err(err, path);
    e->path = mcg_strdup(path);
    e->mode = mode;
    tl->n++;
    return 0;
}

static void tl_free(tree_list *tl)
{
    for (size_t i = 0; i < tl->n; i++)
        free(tl->e[i].path);
    free(tl->e);
}

static int add_pool(tree_list *tl, git_repository *repo, const mcg_rendered_pool *rp,
                    mcg_err *err)
{
    int rc;
    char *p = mcg_sprintf("%s/spec.json", rp->pool);
    rc = tl_add(tl, repo, p, rp->spec, rp->spec_len, GIT_FILEMODE_BLOB, err);
    free(p);
    if (rc)
        return rc;
    char *name = mcg_sprintf("%s\n", rp->name);
    p = mcg_sprintf("%s/name", rp->pool);
    rc = tl_add(tl, repo, p, name, strlen(name), GIT_FILEMODE_BLOB, err);
    free(p);
    free(name);
    if (rc)
        return rc;
    const mcg_ignition *ign = &rp->merged;
    for (size_t i = 0; i < ign->nstorage && !rc; i++) {
        const mcg_storage *s = &ign->storage[i];
        p = mcg_sprintf("%s/files%s", rp->pool, s->path);
        if (s->kind == MCG_NODE_FILE)
            rc = tl_add(tl, repo, p, s->data, s->data_len,
                        (s->mode & 0111) ? GIT_FILEMODE_BLOB_EXECUTABLE : GIT_FILEMODE_BLOB, err);
        else if (s->kind == MCG_NODE_LINK && s->hard != MCG_TRUE && s->target)
            rc = tl_add(tl, repo, p, s->target, strlen(s->target), GIT_FILEMODE_LINK, err);
        free(p);
    }
    for (size_t i = 0; i < ign->nunits && !rc; i++) {
        const mcg_unit *u = &ign->units[i];
        if (u->contents) {
            p = mcg_sprintf("%s/units/%s", rp->pool, u->name);
            rc = tl_add(tl, repo, p, u->contents, strlen(u->contents), GIT_FILEMODE_BLOB, err);
            free(p);
        }
        for (size_t j = 0; j < u->ndropins && !rc; j++) {
            if (!u->dropins[j].contents)
                continue;
            p = mcg_sprintf("%s/units/%s.d/%s", rp->pool, u->name, u->dropins[j].name);
            rc = tl_add(tl, repo, p, u->dropins[j].contents, strlen(u->dropins[j].contents),
                        GIT_FILEMODE_BLOB, err);
            free(p);
        }
    }
    return rc;
}

/* Write a tree of the listed entries (paths are unique, no prefix clashes). */
static int write_tree(git_oid *out, git_repository *repo, const tree_list *tl, mcg_err *err)
{
    git_index *idx = NULL;
    int rc = 0;
    if (git_index_new(&idx) != 0)
        return mcg_git_err(err, "index");
    for (size_t i = 0; i < tl->n && !rc; i++) {
        git_index_entry e;
        memset(&e, 0, sizeof(e));
        e.path = tl->e[i].path;
        e.mode = tl->e[i].mode;
        e.id = tl->e[i].oid;
        if (git_index_add(idx, &e) != 0)
            rc = mcg_git_err(err, tl->e[i].path);
    }
    if (!rc && git_index_write_tree_to(out, idx, repo) != 0)
        rc = mcg_git_err(err, "write tree");
    git_index_free(idx);
    return rc;
}

static int branch_tip(git_commit **out, mcg_repo *r, const char *branch)
{
    char *ref = mcg_sprintf("refs/heads/%s", branch);
    git_oid oid;
    int rc = git_reference_name_to_id(&oid, r->git, ref);
    free(ref);
    *out = NULL;
    if (rc != 0)
        return MCG_ENOTFOUND;
    return git_commit_lookup(out, r->git, &oid) == 0 ? 0 : MCG_EIO;
}

/*
 * Find, walking the rendered branch from its tip, the newest commit whose
 * Source-Commit is `source` (when source is given) and the newest non-rollback
 * commit's source (last_source).
 */
static void scan_rendered(mcg_repo *r, const char *source, char found[MCG_SHA_HEX + 1],
                          char last_source[MCG_SHA_HEX + 1])
{
    found[0] = last_source[0] = '\0';
    git_commit *c = NULL;
    if (branch_tip(&c, r, r->rendered_branch) != 0)
        return;
    while (c) {
        const char *msg = git_commit_message(c);
        char src[MCG_SHA_HEX + 1], rb[MCG_SHA_HEX + 1];
        bool has_src = mcg_git_trailer(msg, "Source-Commit", src);
        bool is_rb = mcg_git_trailer(msg, "Rollback-To", rb);
        if (has_src && !is_rb && !last_source[0])
            memcpy(last_source, src, sizeof(src));
        if (source && has_src && !is_rb && !found[0] && !strcmp(src, source))
            git_oid_tostr(found, MCG_SHA_HEX + 1, git_commit_id(c));
        if (found[0] && last_source[0])
            break;
        if (!source && last_source[0])
            break;
        git_commit *parent = NULL;
        if (git_commit_parentcount(c) == 0 || git_commit_parent(&parent, c, 0) != 0)
            parent = NULL;
        git_commit_free(c);
        c = parent;
    }
    git_commit_free(c);
}

static int update_branch(mcg_repo *r, const git_oid *new_tip, const git_commit *old_tip,
                         const char *logmsg, mcg_err *err)
{
    char *refname = mcg_sprintf("refs/heads/%s", r->rendered_branch);
    git_reference *ref = NULL;
    int rc = 0;
    if (old_tip) {
        /* Compare-and-swap: a concurrent writer makes this fail, not lose. */
        if (git_reference_create_matching(&ref, r->git, refname, new_tip, 1,
                                          git_commit_id(old_tip), logmsg) != 0)
            rc = mcg_git_err(err, refname);
    } else if (git_reference_create(&ref, r->git, refname, new_tip, 0, logmsg) != 0) {
        rc = mcg_git_err(err, refname);
    }
    git_reference_free(ref);
    free(refname);
    return rc;
}

int mcg_gitops_render(mcg_render_result *res, mcg_render **out_render, mcg_verify_report *rep,
                      mcg_repo *r, const char *rev, const mcg_signers *root, mcg_diags *diags,
                      mcg_err *err)
{
    memset(res, 0, sizeof(*res));
    if (out_render)
        *out_render = NULL;
    mcg_verify_report local = {0};
    mcg_verify_report *vr = rep ? rep : &local;
    mcg_model *m = NULL;
    mcg_render *rd = NULL;
    git_commit *src = NULL, *old_tip = NULL;
    tree_list tl = {0};
    char *msg = NULL;
    git_signature *sig = NULL;
    int rc;

    if ((rc = mcg_repo_resolve(r, rev ? rev : r->source_branch, res->source, err)) != 0)
        goto out;
    if ((rc = mcg_gitops_verify(vr, r, res->source, NULL, root, err)) != 0)
        goto out;
    if (vr->nbad) {
        rc = mcg_err_set(err, MCG_ETRUST, "%zu of %zu commit%s failed verification", vr->nbad,
                         vr->n, vr->n == 1 ? "" : "s");
        goto out;
    }
    char found[MCG_SHA_HEX + 1], last[MCG_SHA_HEX + 1];
    scan_rendered(r, res->source, found, last);
    if (found[0]) {
        memcpy(res->rendered, found, sizeof(found));
        rc = mcg_gitops_mark_verified(r, res->source, root, err);
        goto out; /* already rendered: nothing to add */
    }
    if (last[0] && !mcg_repo_descends(r, res->source, last)) {
        rc = mcg_err_set(err, MCG_ECONFLICT,
                         "%.12s does not descend from the last rendered source %.12s (use mcgit "
                         "rollback to return to an earlier render)",
                         res->source, last);
        goto out;
    }
    if ((rc = mcg_gitops_load_commit(&m, r, res->source, diags, err)) != 0)
        goto out;
    if (mcg_render_model(&rd, m, diags) != 0) {
        rc = mcg_err_set(err, MCG_EINVAL, "commit %.12s does not render", res->source);
        goto out;
    }
    for (size_t i = 0; i < rd->n; i++)
        if ((rc = add_pool(&tl, r->git, &rd->pools[i], err)) != 0)
            goto out;
    git_oid tree_oid, commit_oid, src_oid;
    git_tree *tree = NULL;
    if ((rc = write_tree(&tree_oid, r->git, &tl, err)) != 0)
        goto out;
    git_oid_fromstr(&src_oid, res->source);
    if (git_commit_lookup(&src, r->git, &src_oid) != 0) {
        rc = mcg_git_err(err, res->source);
        goto out;
    }
    const git_signature *sc = git_commit_committer(src);
    if (git_signature_new(&sig, "mcgit", "mcgit@localhost", sc->when.time, sc->when.offset) != 0) {
        rc = mcg_git_err(err, "signature");
        goto out;
    }
    mcg_buf mb = MCG_BUF_INIT;
    mcg_buf_printf(&mb, "Render %.12s: %s\n\n", res->source, git_commit_summary(src));
    for (size_t i = 0; i < rd->n; i++)
        mcg_buf_printf(&mb, "%s: %s\n", rd->pools[i].pool, rd->pools[i].name);
    mcg_buf_printf(&mb, "\nSource-Commit: %s\n", res->source);
    msg = mcg_buf_detach(&mb, NULL);
    int tip_rc = branch_tip(&old_tip, r, r->rendered_branch);
    if (tip_rc == MCG_EIO) {
        rc = mcg_git_err(err, r->rendered_branch);
        goto out;
    }
    if (git_tree_lookup(&tree, r->git, &tree_oid) != 0) {
        rc = mcg_git_err(err, "tree");
        goto out;
    }
    const git_commit *parents[1] = {old_tip};
    int crc = git_commit_create(&commit_oid, r->git, NULL, sig, sig, NULL, msg, tree,
                                old_tip ? 1 : 0, parents);
    git_tree_free(tree);
    if (crc != 0) {
        rc = mcg_git_err(err, "commit");
        goto out;
    }
    if ((rc = update_branch(r, &commit_oid, old_tip, "mcgit render", err)) != 0)
        goto out;
    git_oid_tostr(res->rendered, sizeof(res->rendered), &commit_oid);
    res->created = true;
    rc = mcg_gitops_mark_verified(r, res->source, root, err);
out:
    if (out_render && rc == 0) {
        *out_render = rd;
        rd = NULL;
    }
    mcg_render_free(rd);
    mcg_model_free(m);
    tl_free(&tl);
    free(msg);
    git_signature_free(sig);
    git_commit_free(src);
    git_commit_free(old_tip);
    mcg_verify_report_free(&local);
    return rc;
}

/* ------------------------------------------------------------ rollback */

/* Is commit `sha` on the rendered branch (reachable from its tip)? */
static bool on_rendered(mcg_repo *r, const char *sha)
{
    git_commit *tip = NULL;
    if (branch_tip(&tip, r, r->rendered_branch) != 0)
        return false;
    char tsha[MCG_SHA_HEX + 1];
    git_oid_tostr(tsha, sizeof(tsha), git_commit_id(tip));
    git_commit_free(tip);
    return mcg_repo_descends(r, tsha, sha);
}

int mcg_gitops_rollback(char out[MCG_SHA_HEX + 1], mcg_repo *r, const char *rev, const char *pool,
                        int64_t now, mcg_err *err)
{
    char sha[MCG_SHA_HEX + 1], target[MCG_SHA_HEX + 1] = "", last[MCG_SHA_HEX + 1];
    git_commit *tc = NULL, *tip = NULL;
    git_tree *ttree = NULL, *tiptree = NULL, *newtree = NULL;
    git_treebuilder *tb = NULL;
    git_signature *sig = NULL;
    char *msg = NULL;
    int rc;
    out[0] = '\0';
    if ((rc = mcg_repo_resolve(r, rev, sha, err)) != 0)
        return rc;
    if (on_rendered(r, sha))
        memcpy(target, sha, sizeof(sha));
    else
        scan_rendered(r, sha, target, last);
    if (!target[0])
        return mcg_err_set(err, MCG_ENOTFOUND,
                           "%.12s is neither a rendered commit nor a rendered source commit", sha);
    git_oid toid, new_tree_oid, commit_oid;
    git_oid_fromstr(&toid, target);
    if (git_commit_lookup(&tc, r->git, &toid) != 0 || git_commit_tree(&ttree, tc) != 0 ||
        branch_tip(&tip, r, r->rendered_branch) != 0 || git_commit_tree(&tiptree, tip) != 0) {
        rc = mcg_git_err(err, "rendered branch");
        goto out;
    }
    char tsrc[MCG_SHA_HEX + 1] = "";
    mcg_git_trailer(git_commit_message(tc), "Source-Commit", tsrc);
    if (pool) {
        const git_tree_entry *pe = git_tree_entry_byname(ttree, pool);
        if (!pe || git_tree_entry_type(pe) != GIT_OBJECT_TREE) {
            rc = mcg_err_set(err, MCG_ENOTFOUND, "pool '%s' is not in rendered commit %.12s", pool,
                             target);
            goto out;
        }
        if (git_treebuilder_new(&tb, r->git, tiptree) != 0 ||
            git_treebuilder_insert(NULL, tb, pool, git_tree_entry_id(pe), GIT_FILEMODE_TREE) != 0 ||
            git_treebuilder_write(&new_tree_oid, tb) != 0) {
            rc = mcg_git_err(err, "tree");
            goto out;
        }
    } else {
        new_tree_oid = *git_tree_id(ttree);
    }
    if (git_oid_equal(&new_tree_oid, git_tree_id(tiptree))) {
        rc = mcg_err_set(err, MCG_EINVAL, "the rendered branch already holds that config%s%s",
                         pool ? " for pool " : "", pool ? pool : "");
        goto out;
    }
    if (git_tree_lookup(&newtree, r->git, &new_tree_oid) != 0 ||
        git_signature_new(&sig, "mcgit", "mcgit@localhost", (git_time_t)now, 0) != 0) {
        rc = mcg_git_err(err, "rollback");
        goto out;
    }
    mcg_buf mb = MCG_BUF_INIT;
    mcg_buf_printf(&mb, "Rollback%s%s to %.12s\n\n", pool ? " pool " : "", pool ? pool : "",
                   target);
    for (size_t i = 0; i < git_tree_entrycount(newtree); i++) {
        const git_tree_entry *e = git_tree_entry_byindex(newtree, i);
        if (git_tree_entry_type(e) != GIT_OBJECT_TREE)
            continue;
        char *np = mcg_sprintf("%s/name", git_tree_entry_name(e));
        char *data = NULL;
        size_t len = 0;
        if (mcg_git_read_path(&data, &len, r->git, newtree, np, NULL) == 0)
            mcg_buf_printf(&mb, "%s: %.*s\n", git_tree_entry_name(e),
                           (int)strcspn(data, "\n"), data);
        free(data);
        free(np);
    }
    mcg_buf_printf(&mb, "\n");
    if (tsrc[0])
        mcg_buf_printf(&mb, "Source-Commit: %s\n", tsrc);
    mcg_buf_printf(&mb, "Rollback-To: %s\n", target);
    msg = mcg_buf_detach(&mb, NULL);
    const git_commit *parents[1] = {tip};
    if (git_commit_create(&commit_oid, r->git, NULL, sig, sig, NULL, msg, newtree, 1, parents) !=
        0) {
        rc = mcg_git_err(err, "commit");
        goto out;
    }
    if ((rc = update_branch(r, &commit_oid, tip, "mcgit rollback", err)) != 0)
        goto out;
    git_oid_tostr(out, MCG_SHA_HEX + 1, &commit_oid);
out:
    free(msg);
    git_signature_free(sig);
    git_treebuilder_free(tb);
    git_tree_free(newtree);
    git_tree_free(tiptree);
    git_tree_free(ttree);
    git_commit_free(tip);
    git_commit_free(tc);
    return rc;
}

/* ------------------------------------------------------------ log */

void mcg_log_free(mcg_log *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        mcg_strv_free(&l->e[i].pools);
    free(l->e);
    memset(l, 0, sizeof(*l));
}

int mcg_gitops_log(mcg_log *out, mcg_repo *r, mcg_err *err)
{
    memset(out, 0, sizeof(*out));
    git_commit *c = NULL;
    int trc = branch_tip(&c, r, r->rendered_branch);
    if (trc == MCG_ENOTFOUND)
        return 0;
    if (trc)
        return mcg_git_err(err, r->rendered_branch);
    size_t cap = 0;
    while (c) {
        if (out->n == cap) {
            cap = cap ? cap * 2 : 32;
            out->e = mcg_realloc(out->e, cap * sizeof(*out->e));
        }
        mcg_log_entry *e = &out->e[out->n++];
        memset(e, 0, sizeof(*e));
        git_oid_tostr(e->rendered, sizeof(e->rendered), git_commit_id(c));
        const char *msg = git_commit_message(c);
        mcg_git_trailer(msg, "Source-Commit", e->source);
        mcg_git_trailer(msg, "Rollback-To", e->rollback);
        e->time = (int64_t)git_commit_time(c);
        e->offset = git_commit_time_offset(c);
        /* "pool: rendered-pool-hash" lines of the message body (the subject
         * quotes the source commit's, which may look like one) */
        const char *body = strstr(msg, "\n\n");
        for (const char *p = body; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
            size_t ll = strcspn(p, "\n");
            const char *colon = memchr(p, ':', ll);
            if (colon && colon[1] == ' ' && !strncmp(colon + 2, "rendered-", 9)) {
                char *line = mcg_strndup(p, ll);
                line[colon - p] = ' ';
                memmove(line + (colon - p) + 1, line + (colon - p) + 2, strlen(line + (colon - p) + 2) + 1);
                mcg_strv_push(&e->pools, line);
                free(line);
            }
        }
        git_commit *parent = NULL;
        if (git_commit_parentcount(c) == 0 || git_commit_parent(&parent, c, 0) != 0)
            parent = NULL;
        git_commit_free(c);
        c = parent;
    }
    return 0;
}

int mcg_gitops_read_rendered(char **data, size_t *len, mcg_repo *r, const char *path,
                             char tip_out[MCG_SHA_HEX + 1], mcg_err *err)
{
    git_commit *tip = NULL;
    git_tree *tree = NULL;
    int rc = branch_tip(&tip, r, r->rendered_branch);
    *data = NULL;
    *len = 0;
    if (rc)
        return mcg_err_set(err, MCG_ENOTFOUND, "no rendered branch '%s'", r->rendered_branch);
    if (tip_out)
        git_oid_tostr(tip_out, MCG_SHA_HEX + 1, git_commit_id(tip));
    if (git_commit_tree(&tree, tip) != 0)
        rc = mcg_git_err(err, "tree");
    else
        rc = mcg_git_read_path(data, len, r->git, tree, path, err);
    git_tree_free(tree);
    git_commit_free(tip);
    return rc;
}
