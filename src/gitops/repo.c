/*
 * repo.c — opening a config repo, reading trees, and verifying signed
 * history.
 *
 * Trust is decided commit by commit, parents before children: a commit is
 * good when its gpgsig header holds an SSH signature (namespace git) by a key
 * of the trust root, or of .mcgit/allowed_signers as that file stands in the
 * commit's first parent — and only if that parent is itself good. So a
 * signer is added or removed only by a commit an already-trusted key signed.
 */
#include "gitops/gitops_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int mcg_git_err(mcg_err *err, const char *what)
{
    const git_error *e = git_error_last();
    return mcg_err_set(err, MCG_EIO, "%s: %s", what, e && e->message ? e->message : "git error");
}

static void load_settings(mcg_repo *r)
{
    r->source_branch = mcg_strdup("main");
    r->rendered_branch = mcg_strdup("rendered");
    git_object *obj = NULL;
    git_tree *tree = NULL;
    char *data = NULL;
    size_t len = 0;
    if (git_revparse_single(&obj, r->git, "HEAD^{tree}") != 0)
        goto out;
    tree = (git_tree *)obj;
    if (mcg_git_read_path(&data, &len, r->git, tree, "mcgit.yaml", NULL) != 0)
        goto out;
    mcg_model *m = mcg_model_new();
    mcg_diags d = {0};
    mcg_model_add_file(m, "mcgit.yaml", data, len, &d);
    if (!d.count) {
        free(r->source_branch);
        free(r->rendered_branch);
        r->source_branch = mcg_strdup(m->settings.source_branch);
        r->rendered_branch = mcg_strdup(m->settings.rendered_branch);
    }
    mcg_diags_free(&d);
    mcg_model_free(m);
out:
    free(data);
    git_object_free(obj);
}

int mcg_repo_open(mcg_repo **out, const char *path, mcg_err *err)
{
    *out = NULL;
    git_libgit2_init();
    mcg_repo *r = mcg_calloc(1, sizeof(*r));
    if (git_repository_open_ext(&r->git, path, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) != 0) {
        struct stat st;
        if (stat(path, &st) != 0)
            mcg_err_set(err, MCG_ENOTFOUND,
                        "%s: no such repository (`git init --bare %s` makes an empty one)", path,
                        path);
        else
            mcg_git_err(err, path);
        mcg_repo_free(r);
        return MCG_EIO;
    }
    /* Inside a pre-receive hook, pushed objects wait in a quarantine. */
    const char *q = getenv("GIT_QUARANTINE_PATH");
    if (q && *q) {
        git_odb *odb = NULL;
        if (git_repository_odb(&odb, r->git) != 0 || git_odb_add_disk_alternate(odb, q) != 0) {
            git_odb_free(odb);
            mcg_git_err(err, "quarantine");
            mcg_repo_free(r);
            return MCG_EIO;
        }
        git_odb_free(odb);
    }
    load_settings(r);
    *out = r;
    return 0;
}

void mcg_repo_free(mcg_repo *r)
{
    if (!r)
        return;
    git_repository_free(r->git);
    free(r->source_branch);
    free(r->rendered_branch);
    free(r);
    git_libgit2_shutdown();
}

const char *mcg_repo_source_branch(const mcg_repo *r)
{
    return r->source_branch;
}

const char *mcg_repo_rendered_branch(const mcg_repo *r)
{
    return r->rendered_branch;
}

int mcg_repo_resolve(const mcg_repo *r, const char *rev, char sha[MCG_SHA_HEX + 1], mcg_err *err)
{
    git_object *obj = NULL;
    char *spec = mcg_sprintf("%s^{commit}", rev);
    int rc = 0;
    if (git_revparse_single(&obj, r->git, spec) != 0)
        rc = mcg_err_set(err, MCG_ENOTFOUND, "unknown revision '%s'", rev);
    else
        git_oid_tostr(sha, MCG_SHA_HEX + 1, git_object_id(obj));
    git_object_free(obj);
    free(spec);
    return rc;
}

bool mcg_repo_descends(const mcg_repo *r, const char *a, const char *b)
{
    git_oid oa, ob;
    if (git_oid_fromstr(&oa, a) || git_oid_fromstr(&ob, b))
        return false;
    return git_oid_equal(&oa, &ob) || git_graph_descendant_of(r->git, &oa, &ob) == 1;
}

int mcg_git_read_path(char **data, size_t *len, git_repository *repo, const git_tree *tree,
                      const char *path, mcg_err *err)
{
    git_tree_entry *ent = NULL;
    git_blob *blob = NULL;
    int rc = 0;
    *data = NULL;
    *len = 0;
    if (git_tree_entry_bypath(&ent, tree, path) != 0)
        return mcg_err_set(err, MCG_ENOTFOUND, "%s: not found", path);
    if (git_tree_entry_type(ent) != GIT_OBJECT_BLOB ||
        git_tree_entry_filemode(ent) == GIT_FILEMODE_LINK) {
        rc = mcg_err_set(err, MCG_EINVAL, "%s: not a regular file", path);
        goto out;
    }
    if (git_blob_lookup(&blob, repo, git_tree_entry_id(ent)) != 0) {
        rc = mcg_git_err(err, path);
        goto out;
    }
    size_t n = (size_t)git_blob_rawsize(blob);
    if (n > MCG_MAX_SOURCE_FILE) {
        rc = mcg_err_set(err, MCG_EINVAL, "%s: larger than %u bytes", path, MCG_MAX_SOURCE_FILE);
        goto out;
    }
    *data = mcg_strndup(git_blob_rawcontent(blob), n);
    *len = n;
out:
    git_blob_free(blob);
    git_tree_entry_free(ent);
    return rc;
}

bool mcg_git_trailer(const char *msg, const char *key, char out[MCG_SHA_HEX + 1])
{
    size_t kl = strlen(key);
    for (const char *p = msg; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (!strncmp(p, key, kl) && p[kl] == ':' && p[kl + 1] == ' ') {
            const char *v = p + kl + 2;
            size_t n = strspn(v, "0123456789abcdef");
            if (n == MCG_SHA_HEX) {
                memcpy(out, v, MCG_SHA_HEX);
                out[MCG_SHA_HEX] = '\0';
                return true;
            }
        }
    }
    return false;
}

/* ------------------------------------------------------------ load */

static void load_tree_dir(mcg_model *m, git_repository *repo, const git_tree *root,
                          const char *dir, mcg_diags *diags)
{
    git_tree_entry *ent = NULL;
    git_tree *sub = NULL;
    if (git_tree_entry_bypath(&ent, root, dir) != 0)
        return;
    if (git_tree_entry_type(ent) != GIT_OBJECT_TREE) {
        mcg_diags_add(diags, "%s/: not a directory", dir);
        goto out;
    }
    if (git_tree_lookup(&sub, repo, git_tree_entry_id(ent)) != 0)
        goto out;
    /* Tree entries are sorted by name already. */
    for (size_t i = 0; i < git_tree_entrycount(sub); i++) {
        const git_tree_entry *e = git_tree_entry_byindex(sub, i);
        const char *name = git_tree_entry_name(e);
        if (name[0] == '.')
            continue;
        char *rel = mcg_sprintf("%s/%s", dir, name);
        if (mcg_model_wants_file(rel)) {
            if (git_tree_entry_filemode(e) == GIT_FILEMODE_LINK)
                mcg_diags_add(diags, "%s: symbolic links are not allowed in a config repo", rel);
            else if (git_tree_entry_type(e) == GIT_OBJECT_BLOB) {
                char *data = NULL;
                size_t len = 0;
                mcg_err err = {0};
                if (mcg_git_read_path(&data, &len, repo, root, rel, &err) == 0)
                    mcg_model_add_file(m, rel, data, len, diags);
                else
                    mcg_diags_add(diags, "%s", err.msg);
                free(data);
            }
        }
        free(rel);
    }
out:
    git_tree_free(sub);
    git_tree_entry_free(ent);
}

int mcg_gitops_load_commit(mcg_model **out, mcg_repo *r, const char *sha, mcg_diags *diags,
                           mcg_err *err)
{
    *out = mcg_model_new();
    git_oid oid;
    git_commit *c = NULL;
    git_tree *tree = NULL;
    int rc = 0;
    if (git_oid_fromstr(&oid, sha) || git_commit_lookup(&c, r->git, &oid) ||
        git_commit_tree(&tree, c)) {
        rc = mcg_git_err(err, sha);
        goto out;
    }
    size_t before = diags->count;
    char *data = NULL;
    size_t len = 0;
    mcg_err e2 = {0};
    int rr = mcg_git_read_path(&data, &len, r->git, tree, "mcgit.yaml", &e2);
    if (rr == 0)
        mcg_model_add_file(*out, "mcgit.yaml", data, len, diags);
    else if (rr != MCG_ENOTFOUND)
        mcg_diags_add(diags, "%s", e2.msg);
    free(data);
    load_tree_dir(*out, r->git, tree, "pools", diags);
    load_tree_dir(*out, r->git, tree, "machineconfigs", diags);
    if ((*out)->npools == 0 && diags->count == before)
        mcg_diags_add(diags, "%.12s: no pools found (expected pools/*.yaml)", sha);
    mcg_model_finish(*out, diags);
    if (diags->count != before)
        rc = mcg_err_set(err, MCG_EINVAL, "commit %.12s does not validate", sha);
out:
    git_tree_free(tree);
    git_commit_free(c);
    return rc;
}

/* ------------------------------------------------------------ verify */

void mcg_verify_report_free(mcg_verify_report *rep)
{
    if (!rep)
        return;
    free(rep->v);
    memset(rep, 0, sizeof(*rep));
}

/* Sets of commit ids (ids come from untrusted history: mcg_oidmap resists chosen collisions). */
typedef mcg_oidmap oidset;

static void oidset_add(oidset *s, const git_oid *o)
{
    mcg_oidmap_put(s, o, 0);
}

static bool oidset_has(const oidset *s, const git_oid *o)
{
    return mcg_oidmap_get(s, o, NULL);
}

static void oidset_free(oidset *s)
{
    mcg_oidmap_free(s);
}

/* The trust set for children of one parent: root + the parent's repo file. */
typedef struct signer_cache {
    git_oid blob;      /* .mcgit/allowed_signers blob the set was made from */
    bool has_blob;
    bool valid;
    mcg_signers *set;  /* root ∪ repo file */
    char error[512];   /* the repo file did not parse */
} signer_cache;

static const mcg_signers *signers_for(signer_cache *cache, mcg_repo *r, const git_commit *parent,
                                      const mcg_signers *root, char *why, size_t whylen)
{
    git_tree *tree = NULL;
    git_tree_entry *ent = NULL;
    const mcg_signers *res = root;
    const git_oid *id;
    git_oid hinted;
    bool present;
    if (r->scan && mcg_packscan_signers(r->scan, git_commit_tree_id(parent), &present, &hinted)) {
        /* a bundle's scan read these trees as they were indexed */
        if (!present)
            goto out;
        id = &hinted;
    } else {
        if (git_commit_tree(&tree, parent) != 0)
            return root;
        if (git_tree_entry_bypath(&ent, tree, ".mcgit/allowed_signers") != 0 ||
            git_tree_entry_type(ent) != GIT_OBJECT_BLOB)
            goto out; /* no repo file: the root alone */
        id = git_tree_entry_id(ent);
    }
    if (!(cache->valid && cache->has_blob && git_oid_equal(&cache->blob, id))) {
        mcg_signers_free(cache->set);
        memset(cache, 0, sizeof(*cache));
        cache->valid = true;
        cache->has_blob = true;
        cache->blob = *id;
        git_blob *blob = NULL;
        if (git_blob_lookup(&blob, r->git, id) == 0) {
            mcg_signers *repo_set = NULL;
            mcg_err e = {0};
            if (mcg_signers_parse(&repo_set, ".mcgit/allowed_signers", git_blob_rawcontent(blob),
                                  (size_t)git_blob_rawsize(blob), &e) == 0) {
                cache->set = mcg_signers_union(root, repo_set);
                mcg_signers_free(repo_set);
            } else {
                snprintf(cache->error, sizeof(cache->error), "%s", e.msg);
            }
            git_blob_free(blob);
        }
    }
    if (cache->set)
        res = cache->set;
    else if (cache->error[0] && why)
        snprintf(why, whylen, " (parent's %s)", cache->error);
out:
    git_tree_entry_free(ent);
    git_tree_free(tree);
    return res;
}

static void verify_one(mcg_verdict *v, mcg_repo *r, git_commit *c, const oidset *good,
                       const oidset *range, signer_cache *cache, const mcg_signers *root)
{
    git_buf sig = GIT_BUF_INIT_CONST(NULL, 0), data = GIT_BUF_INIT_CONST(NULL, 0);
    memset(&sig, 0, sizeof(sig));
    memset(&data, 0, sizeof(data));
    const git_oid *id = git_commit_id(c);
    git_oid_tostr(v->sha, sizeof(v->sha), id);
    if (git_commit_extract_signature(&sig, &data, r->git, (git_oid *)id, NULL) != 0) {
        snprintf(v->reason, sizeof(v->reason), "commit is not signed");
        goto out;
    }
    const mcg_signers *set = root;
    char why[600] = "";
    if (git_commit_parentcount(c) > 0) {
        const git_oid *pid = git_commit_parent_id(c, 0);
        /* A parent outside the range is below the last verified commit. */
        bool parent_ok = oidset_has(good, pid) || !oidset_has(range, pid);
        git_commit *parent = NULL;
        if (parent_ok && git_commit_parent(&parent, c, 0) == 0)
            set = signers_for(cache, r, parent, root, why, sizeof(why));
        git_commit_free(parent);
    }
    mcg_sig_result res = {0};
    mcg_err e = {0};
    const git_signature *committer = git_commit_committer(c);
    if (mcg_sshsig_verify_memo(&res, set, r->memo, sig.ptr, sig.size, data.ptr, data.size,
                               (int64_t)committer->when.time, &e) != 0) {
        snprintf(v->reason, sizeof(v->reason), "%s%s", e.msg, why);
        snprintf(v->fingerprint, sizeof(v->fingerprint), "%s", res.fingerprint);
        goto out;
    }
    v->good = true;
    snprintf(v->principal, sizeof(v->principal), "%s", res.principal);
    snprintf(v->fingerprint, sizeof(v->fingerprint), "%s", res.fingerprint);
out:
    git_buf_dispose(&sig);
    git_buf_dispose(&data);
}

int mcg_gitops_verify(mcg_verify_report *rep, mcg_repo *r, const char *tip, const char *since,
                      const mcg_signers *root, mcg_err *err)
{
    memset(rep, 0, sizeof(*rep));
    git_revwalk *walk = NULL;
    git_oid tip_oid, since_oid, oid;
    oidset range = {0}, good = {0};
    signer_cache cache = {0};
    size_t cap = 0;
    int rc = 0;
    char since_sha[MCG_SHA_HEX + 1] = "";
    char tip_sha[MCG_SHA_HEX + 1];
    if ((rc = mcg_repo_resolve(r, tip, tip_sha, err)) != 0)
        return rc;
    git_oid_fromstr(&tip_oid, tip_sha);
    if (since) {
        if ((rc = mcg_repo_resolve(r, since, since_sha, err)) != 0)
            return rc;
    } else {
        git_reference *ref = NULL;
        if (git_reference_lookup(&ref, r->git, "refs/mcgit/verified") == 0 &&
            git_reference_target(ref)) {
            git_oid_tostr(since_sha, sizeof(since_sha), git_reference_target(ref));
            if (!mcg_repo_descends(r, tip_sha, since_sha))
                since_sha[0] = '\0'; /* not an ancestor: verify everything */
        }
        git_reference_free(ref);
    }
    if (git_revwalk_new(&walk, r->git) != 0 ||
        git_revwalk_sorting(walk, GIT_SORT_TOPOLOGICAL | GIT_SORT_REVERSE) != 0 ||
        git_revwalk_push(walk, &tip_oid) != 0) {
        rc = mcg_git_err(err, "revwalk");
        goto out;
    }
    if (since_sha[0]) {
        git_oid_fromstr(&since_oid, since_sha);
        if (git_revwalk_hide(walk, &since_oid) != 0) {
            rc = mcg_git_err(err, "revwalk");
            goto out;
        }
    }
    /* First collect the range so parents outside it can be told apart. */
    git_oid *order = NULL;
    size_t n = 0;
    while (git_revwalk_next(&oid, walk) == 0) {
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            order = mcg_realloc(order, cap * sizeof(*order));
        }
        order[n++] = oid;
        oidset_add(&range, &oid);
    }
    rep->v = mcg_calloc(n ? n : 1, sizeof(*rep->v));
    for (size_t i = 0; i < n; i++) {
        git_commit *c = NULL;
        mcg_verdict *v = &rep->v[rep->n++];
        if (git_commit_lookup(&c, r->git, &order[i]) != 0) {
            git_oid_tostr(v->sha, sizeof(v->sha), &order[i]);
            snprintf(v->reason, sizeof(v->reason), "cannot read commit");
        } else {
            verify_one(v, r, c, &good, &range, &cache, root);
        }
        git_commit_free(c);
        if (v->good)
            oidset_add(&good, &order[i]);
        else
            rep->nbad++;
    }
    free(order);
out:
    mcg_signers_free(cache.set);
    oidset_free(&range);
    oidset_free(&good);
    git_revwalk_free(walk);
    return rc;
}

int mcg_gitops_mark_verified(mcg_repo *r, const char *tip, mcg_err *err)
{
    git_oid oid, cur;
    git_reference *ref = NULL;
    if (git_oid_fromstr(&oid, tip) != 0)
        return mcg_err_set(err, MCG_EINVAL, "bad commit id '%s'", tip);
    /* Never move back: re-rendering an older source leaves the mark alone. */
    if (git_reference_name_to_id(&cur, r->git, "refs/mcgit/verified") == 0 &&
        (git_oid_equal(&cur, &oid) || git_graph_descendant_of(r->git, &cur, &oid) == 1))
        return 0;
    if (git_reference_create(&ref, r->git, "refs/mcgit/verified", &oid, 1, "mcgit: verified") != 0)
        return mcg_git_err(err, "refs/mcgit/verified");
    git_reference_free(ref);
    return 0;
}
