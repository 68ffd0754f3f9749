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
#include "fsio/fsio.h"
#include "osenv/osenv.h"
#include "gitops/gitops_int.h"

#include <git2/sys/repository.h>

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int mcg_git_err(mcg_err *err, const char *what)
{
    const git_error *e = git_error_last();
    return mcg_err_set(err, MCG_EIO, "%s: %s", what, e && e->message ? e->message : "git error");
}

/*
 * The branch names come from the repository's own git configuration
 * (mcgit.sourceBranch, mcgit.renderedBranch; defaults main and rendered),
 * never from a tree: HEAD and every unverified ref are written by pushers,
 * and nothing a pusher writes may steer which history is verified or where
 * renders go. A committed mcgit.yaml that names other branches is refused
 * when its commit is loaded (mcg_gitops_load_commit).
 */
static int load_settings(mcg_repo *r, mcg_err *err)
{
    static const struct {
        const char *key, *def;
        size_t off;
    } keys[] = {{"mcgit.sourceBranch", "main", offsetof(mcg_repo, source_branch)},
                {"mcgit.renderedBranch", "rendered", offsetof(mcg_repo, rendered_branch)}};
    git_config *cfg = NULL;
    int rc = 0;
    if (git_repository_config_snapshot(&cfg, r->git) != 0)
        return mcg_git_err(err, "git config");
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]) && !rc; i++) {
        git_buf b = GIT_BUF_INIT_CONST(NULL, 0);
        memset(&b, 0, sizeof(b));
        char **slot = (char **)((char *)r + keys[i].off);
        int g = git_config_get_string_buf(&b, cfg, keys[i].key);
        if (g == GIT_ENOTFOUND)
            *slot = mcg_strdup(keys[i].def);
        else if (g != 0)
            rc = mcg_git_err(err, keys[i].key);
        else if (!mcg_model_branch_name_ok(b.ptr))
            rc = mcg_err_set(err, MCG_EINVAL, "git config %s: '%s' is not a valid branch name",
                             keys[i].key, b.ptr);
        else
            *slot = mcg_strdup(b.ptr);
        git_buf_dispose(&b);
    }
    if (!rc && !strcmp(r->source_branch, r->rendered_branch))
        rc = mcg_err_set(err, MCG_EINVAL,
                         "git config: mcgit.sourceBranch and mcgit.renderedBranch must differ");
    git_config_free(cfg);
    return rc;
}

int mcg_gitops_lib_init(void)
{
    int n = git_libgit2_init();
    if (n == 1) /* the first initialisation (again after a full shutdown) */
        git_libgit2_opts(GIT_OPT_ENABLE_FSYNC_GITDIR, 1);
    return n;
}

int mcg_repo_open(mcg_repo **out, const char *path, mcg_err *err)
{
    *out = NULL;
    mcg_gitops_lib_init();
    mcg_repo *r = mcg_calloc(1, sizeof(*r));
    if (git_repository_open_ext(&r->git, path, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) != 0) {
        struct stat st;
        if (stat(path, &st) != 0)
            mcg_err_set(err, MCG_ENOTFOUND,
                        "%s: no such repository (`git clone --bare URL %s` makes a clone of "
                        "the config repo to read, `git init --bare %s` an empty one to push to)",
                        path, path, path);
        else
            mcg_git_err(err, path);
        mcg_repo_free(r);
        return MCG_EIO;
    }
    /* Inside a pre-receive hook, pushed objects wait in a quarantine. */
    const char *q = mcg_env_get("GIT_QUARANTINE_PATH");
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
    int rc = load_settings(r, err);
    if (rc != 0) {
        mcg_repo_free(r);
        return rc;
    }
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

struct git_repository *mcg_repo_git(const mcg_repo *r)
{
    return r->git;
}

int mcg_repo_open_view(mcg_repo **out, const mcg_repo *r, git_odb *odb, mcg_err *err)
{
    mcg_repo *v = mcg_calloc(1, sizeof(*v));
    *out = NULL;
    mcg_gitops_lib_init(); /* balanced by mcg_repo_free */
    v->source_branch = mcg_strdup(r->source_branch);
    v->rendered_branch = mcg_strdup(r->rendered_branch);
    if (git_repository_open_ext(&v->git, git_repository_path(r->git), GIT_REPOSITORY_OPEN_NO_SEARCH,
                                NULL) != 0) {
        int rc = mcg_git_err(err, "quarantine");
        mcg_repo_free(v);
        return rc;
    }
    git_repository_set_odb(v->git, odb);
    *out = v;
    return 0;
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

struct mcg_tip_watch {
    mcg_repo *r;
    char *ref; /* refs/heads/<source branch> */
};

/* Does the configuration name a remote (remote.<name>.url)? Walked entry by
 * entry: git_remote_list matches a regex, and libgit2 1.5 leaks the match
 * data of every entry it does not match. */
static bool has_remote(git_repository *g)
{
    git_config *cfg = NULL;
    git_config_iterator *it = NULL;
    git_config_entry *e = NULL;
    bool found = false;
    if (git_repository_config_snapshot(&cfg, g) != 0)
        return true; /* cannot tell: do not watch */
    if (git_config_iterator_new(&it, cfg) != 0) {
        git_config_free(cfg);
        return true;
    }
    while (!found && git_config_next(&e, it) == 0) {
        size_t n = strlen(e->name);
        found = !strncmp(e->name, "remote.", 7) && n > 11 && !strcmp(e->name + n - 4, ".url");
    }
    git_config_iterator_free(it);
    git_config_free(cfg);
    return found;
}

int mcg_gitops_tip_watch_open(mcg_tip_watch **out, const char *path)
{
    mcg_repo *r = NULL;
    *out = NULL;
    if (!path || mcg_repo_open(&r, path, NULL) != 0)
        return MCG_EIO;
    mcg_tip_watch *w = mcg_calloc(1, sizeof(*w));
    w->r = r;
    if (!has_remote(r->git))
        w->ref = mcg_sprintf("refs/heads/%s", r->source_branch);
    *out = w;
    return 0;
}

bool mcg_gitops_tip_watch_read(mcg_tip_watch *w, char sha[MCG_SHA_HEX + 1])
{
    git_oid oid;
    sha[0] = '\0';
    if (!w || !w->ref || git_reference_name_to_id(&oid, w->r->git, w->ref) != 0)
        return false;
    git_oid_tostr(sha, MCG_SHA_HEX + 1, &oid);
    return true;
}

void mcg_gitops_tip_watch_free(mcg_tip_watch *w)
{
    if (!w)
        return;
    mcg_repo_free(w->r);
    free(w->ref);
    free(w);
}

int mcg_gitops_reset_hard(const char *path, const char *rev, mcg_err *err)
{
    git_repository *g = NULL;
    git_object *target = NULL;
    int rc = 0;
    mcg_gitops_lib_init();
    if (git_repository_open_ext(&g, path, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) != 0 ||
        git_revparse_single(&target, g, rev) != 0 ||
        git_reset(g, target, GIT_RESET_HARD, NULL) != 0)
        rc = mcg_git_err(err, path);
    git_object_free(target);
    git_repository_free(g);
    git_libgit2_shutdown();
    return rc;
}

int mcg_gitops_commit_time(int64_t *t, mcg_repo *r, const char *sha)
{
    git_oid oid;
    git_commit *c = NULL;
    *t = 0;
    if (git_oid_fromstr(&oid, sha) != 0 || git_commit_lookup(&c, r->git, &oid) != 0)
        return MCG_ENOTFOUND;
    *t = (int64_t)git_commit_committer(c)->when.time;
    git_commit_free(c);
    return 0;
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

static void load_tree_dir(mcg_model *m, git_repository *repo, const git_tree *root, const char *dir,
                          mcg_diags *diags)
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

int mcg_git_load_tree(mcg_model **out, mcg_repo *r, const git_tree *tree, const char *label,
                      mcg_diags *diags, mcg_err *err)
{
    *out = mcg_model_new();
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
    /* The repository's configuration names the branches (load_settings). */
    if ((*out)->settings.source_set && strcmp((*out)->settings.source_branch, r->source_branch))
        mcg_diags_add(diags,
                      "mcgit.yaml: sourceBranch '%s' is not this repository's source branch '%s' "
                      "(set by git config mcgit.sourceBranch)",
                      (*out)->settings.source_branch, r->source_branch);
    if ((*out)->settings.rendered_set &&
        strcmp((*out)->settings.rendered_branch, r->rendered_branch))
        mcg_diags_add(diags,
                      "mcgit.yaml: renderedBranch '%s' is not this repository's rendered branch "
                      "'%s' (set by git config mcgit.renderedBranch)",
                      (*out)->settings.rendered_branch, r->rendered_branch);
    load_tree_dir(*out, r->git, tree, "pools", diags);
    load_tree_dir(*out, r->git, tree, "machineconfigs", diags);
    load_tree_dir(*out, r->git, tree, "sites", diags);
    if ((*out)->npools == 0 && diags->count == before)
        mcg_diags_add(diags, "%s: no pools found (expected pools/*.yaml)", label);
    mcg_model_finish(*out, diags);
    mcg_model_check_zones(*out, mcg_tz_known, diags);
    if (diags->count != before)
        return mcg_err_set(err, MCG_EINVAL, "commit %s does not validate", label);
    return 0;
}

int mcg_gitops_load_commit(mcg_model **out, mcg_repo *r, const char *sha, mcg_diags *diags,
                           mcg_err *err)
{
    git_oid oid;
    git_commit *c = NULL;
    git_tree *tree = NULL;
    int rc;
    *out = NULL;
    if (git_oid_fromstr(&oid, sha) || git_commit_lookup(&c, r->git, &oid) ||
        git_commit_tree(&tree, c)) {
        *out = mcg_model_new();
        rc = mcg_git_err(err, sha);
    } else {
        char label[16];
        snprintf(label, sizeof(label), "%.12s", sha);
        rc = mcg_git_load_tree(out, r, tree, label, diags, err);
    }
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
    git_oid blob; /* .mcgit/allowed_signers blob the set was made from */
    bool has_blob;
    bool valid;
    mcg_signers *set; /* root ∪ repo file */
    char error[512];  /* the repo file did not parse */
} signer_cache;

static const mcg_signers *signers_for(signer_cache *cache, mcg_repo *r,
                                      const struct mcg_packscan *scan, const git_commit *parent,
                                      const mcg_signers *root, char *why, size_t whylen)
{
    git_tree *tree = NULL;
    git_tree_entry *ent = NULL;
    const mcg_signers *res = root;
    const git_oid *id;
    git_oid hinted;
    bool present;
    if (scan && mcg_packscan_signers(scan, git_commit_tree_id(parent), &present, &hinted)) {
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
                mcg_bfmt(cache->error, sizeof(cache->error), "%s", e.msg);
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

/* Committer time of a commit (unix seconds). */
static int64_t commit_time(const git_commit *c)
{
    return (int64_t)git_commit_committer(c)->when.time;
}

/* What one verification needs besides the commit. */
typedef struct verify_ctx {
    mcg_repo *r;
    git_odb *odb;
    const mcg_signers *root;
    const mcg_verify_opts *o;
    const oidset *bad; /* the commits of this run verified bad so far */
    signer_cache *cache;
    const git_oid *notes; /* the approvals notes commit, or NULL */
    mcg_policy_cache *policy;
} verify_ctx;

/*
 * Whether some .mcgit/allowed_signers of c's history (c's ancestors) admits
 * the signature at time when: the repo managed this key, and a removal in
 * history is final. Each distinct file is read once.
 */
static bool repo_ever_admitted(const verify_ctx *vc, const git_commit *c, const mcg_buf *sig,
                               const mcg_buf *data, int64_t when)
{
    git_revwalk *walk = NULL;
    mcg_oidmap seen = {0};
    git_oid id;
    bool found = false;
    if (git_revwalk_new(&walk, vc->r->git) != 0)
        return false;
    for (unsigned i = 0; i < git_commit_parentcount(c); i++)
        git_revwalk_push(walk, git_commit_parent_id(c, i));
    while (!found && git_revwalk_next(&id, walk) == 0) {
        git_commit *a = NULL;
        git_tree *tree = NULL;
        git_tree_entry *ent = NULL;
        git_blob *blob = NULL;
        if (git_commit_lookup(&a, vc->r->git, &id) == 0 && git_commit_tree(&tree, a) == 0 &&
            git_tree_entry_bypath(&ent, tree, ".mcgit/allowed_signers") == 0 &&
            mcg_oidmap_put(&seen, git_tree_entry_id(ent), 0) &&
            git_blob_lookup(&blob, vc->r->git, git_tree_entry_id(ent)) == 0) {
            mcg_signers *set = NULL;
            mcg_sig_result res = {0};
            if (mcg_signers_parse(&set, "repo", git_blob_rawcontent(blob),
                                  (size_t)git_blob_rawsize(blob), NULL) == 0)
                found = mcg_sshsig_verify(&res, set, sig->ptr, sig->len, data->ptr, data->len, when,
                                          NULL) == 0;
            mcg_signers_free(set);
        }
        git_blob_free(blob);
        git_tree_entry_free(ent);
        git_tree_free(tree);
        git_commit_free(a);
    }
    mcg_oidmap_free(&seen);
    git_revwalk_free(walk);
    return found;
}

/*
 * A commit refused for who signed it is held (docs/trust.md, "Trust
 * changes") when its signature itself is valid and the refusal comes from
 * the trust root given out of band: the key is revoked, or no line admits
 * it and no .mcgit/allowed_signers of its history ever did (a signer the
 * repo removed in signed history stays removed).
 */
static bool held_signature(const verify_ctx *vc, const git_commit *c, const mcg_buf *sig,
                           const mcg_buf *data, const mcg_sig_result *res, int64_t when)
{
    unsigned char d[MCG_SIGMEMO_DIGEST];
    if (!sig->ptr || !data->ptr ||
        mcg_sshsig_check(d, sig->ptr, sig->len, data->ptr, data->len) != 0)
        return false;
    return res->revoked || !repo_ever_admitted(vc, c, sig, data, when);
}

/*
 * The committer time of a commit: no more than MCG_CLOCK_SKEW before its
 * first parent's, and for history arriving now, no more than that ahead of
 * this host's clock. False with the reason in v.
 */
static bool times_ok(mcg_verdict *v, const verify_ctx *vc, git_commit *const *parents, unsigned np,
                     int64_t when)
{
    char a[32], b[32];
    if (np > 0) {
        if (!parents[0]) {
            snprintf(v->reason, sizeof(v->reason), "cannot read its parent");
            return false;
        }
        int64_t pt = commit_time(parents[0]);
        if (when + MCG_CLOCK_SKEW < pt) {
            snprintf(v->reason, sizeof(v->reason),
                     "committer time %s is more than %d s before its parent's (%s)",
                     mcg_time_iso(a, when), MCG_CLOCK_SKEW, mcg_time_iso(b, pt));
            return false;
        }
    }
    if (vc->o->now && when > vc->o->now + MCG_CLOCK_SKEW) {
        snprintf(v->reason, sizeof(v->reason),
                 "committer time %s is more than %d s ahead of this host's clock (%s)",
                 mcg_time_iso(a, when), MCG_CLOCK_SKEW, mcg_time_iso(b, vc->o->now));
        return false;
    }
    return true;
}

/*
 * One check of verify_one, against parent i of c (of np; none: the root
 * alone): the signature sig over data under the signers that parent puts in
 * force, at the committer time when (pass 0) or at o->now (pass 1, history
 * arriving), and on pass 0 the two-person rule of that parent's policy.
 * False when it fails, with the reason in v.
 */
static bool verify_parent(mcg_verdict *v, const verify_ctx *vc, git_commit *c, git_commit **parents,
                          unsigned np, unsigned i, unsigned pass, int64_t when, const mcg_buf *sig,
                          const mcg_buf *data)
{
    mcg_repo *r = vc->r;
    int64_t t = pass ? vc->o->now : when;
    const mcg_signers *set = vc->root;
    char why[600] = "";
    if (np) {
        const git_oid *pid = git_commit_parent_id(c, i);
        /* A parent outside this run is below the last verified commit or
         * before the run, taken as good (mcg_verify_chunk); one inside it
         * came first, parents before children. */
        bool parent_ok = !oidset_has(vc->bad, pid);
        if (parent_ok && parents[i])
            set = signers_for(vc->cache, r, vc->o->scan, parents[i], vc->root, why, sizeof(why));
        if (!parent_ok)
            snprintf(why, sizeof(why), " (parent %.12s failed verification)", git_oid_tostr_s(pid));
    }
    mcg_sig_result res = {0};
    mcg_err e = {0};
    char pfx[48] = ""; /* "[on arrival: ][parent I of N: ]" */
    snprintf(pfx, sizeof(pfx), "%s", pass ? "on arrival: " : "");
    if (np > 1)
        snprintf(pfx + strlen(pfx), sizeof(pfx) - strlen(pfx), "parent %u of %u: ", i + 1, np);
    if (mcg_sshsig_verify_memo(&res, set, vc->o->memo, sig->ptr ? sig->ptr : "", sig->len,
                               data->ptr ? data->ptr : "", data->len, t, &e) != 0) {
        mcg_bfmt(v->reason, sizeof(v->reason), "%s%s%s", pfx, e.msg, why);
        snprintf(v->fingerprint, sizeof(v->fingerprint), "%s", res.fingerprint);
        v->principal[0] = '\0';
        /* held: refused at its own time for who signed it — a key the trust
         * root no longer trusts; reported, never accepted (on arrival, a
         * key expired now is no trust change) */
        v->held = pass == 0 && held_signature(vc, c, sig, data, &res, when);
        return false;
    }
    if (!v->principal[0]) {
        snprintf(v->principal, sizeof(v->principal), "%s", res.principal);
        snprintf(v->fingerprint, sizeof(v->fingerprint), "%s", res.fingerprint);
    }
    /* The two-person rule of the policy this parent puts in force. */
    if (pass == 0 && np && parents[i]) {
        char awhy[600];
        int arc = mcg_approvals_check(awhy, sizeof(awhy), r->git, c, parents[i], set, res.signer,
                                      vc->notes, vc->o->now, vc->policy);
        if (arc != 0) {
            /* approvals that do not count now never counted: never held */
            mcg_bfmt(v->reason, sizeof(v->reason), "%s%s", pfx, awhy);
            return false;
        }
    }
    return true;
}

/*
 * The rule (docs/concepts.md, "Which keys may sign a commit"): a commit is
 * good when its signature verifies under the signers of EVERY parent — the
 * trust root plus .mcgit/allowed_signers as it stands in that parent — at
 * the commit's committer time; a parentless commit, under the root alone.
 * A parent that failed verification contributes the root alone. So a
 * signer removed on any line of history the commit extends cannot sign it,
 * whatever the merge's shape or parent order. The committer time may not
 * fall more than MCG_CLOCK_SKEW before the first parent's. When history is
 * arriving (o->now), the key must also be valid at o->now and the time may
 * not lie more than MCG_CLOCK_SKEW past it, so a backdated commit by an
 * expired key is refused where it first enters.
 *
 * The commit's object is read once (its raw text, then parsed from the
 * object cache) and each parent looked up once.
 */
static void verify_one(mcg_verdict *v, const verify_ctx *vc, const git_oid *id)
{
    mcg_buf sig = MCG_BUF_INIT, data = MCG_BUF_INIT;
    git_odb_object *raw = NULL;
    git_commit *c = NULL;
    git_commit *pbuf[2] = {NULL, NULL}, **parents = pbuf;
    unsigned np = 0;
    mcg_repo *r = vc->r;
    git_oid_tostr(v->sha, sizeof(v->sha), id);
    /* The raw text first: the lookup then parses it from the object cache. */
    bool have_raw = git_odb_read(&raw, vc->odb, id) == 0;
    if (git_commit_lookup(&c, r->git, id) != 0) {
        snprintf(v->reason, sizeof(v->reason), "cannot read commit");
        goto out;
    }
    int64_t when = commit_time(c);
    if (!have_raw || git_odb_object_type(raw) != GIT_OBJECT_COMMIT ||
        mcg_commit_split_signature(&sig, &data, git_odb_object_data(raw),
                                   git_odb_object_size(raw)) != 0) {
        snprintf(v->reason, sizeof(v->reason), "%s", MCG_REASON_UNSIGNED);
        goto out;
    }
    git_odb_object_free(raw);
    raw = NULL;
    np = git_commit_parentcount(c);
    if (np > 2)
        parents = mcg_calloc(np, sizeof(*parents));
    for (unsigned i = 0; i < np; i++)
        if (git_commit_parent(&parents[i], c, i) != 0)
            parents[i] = NULL;
    /* One check per parent (a parentless commit: the root), then, for
     * history arriving now, the same against this host's clock. */
    unsigned nsets = np ? np : 1;
    for (unsigned pass = 0; pass < (vc->o->now ? 2u : 1u); pass++) {
        for (unsigned i = 0; i < nsets; i++) {
            if (!verify_parent(v, vc, c, parents, np, i, pass, when, &sig, &data))
                goto out;
        }
    }
    /* Times last: a key outside its window is the better reason. */
    v->good = times_ok(v, vc, parents, np, when);
out:
    if (!v->good)
        v->principal[0] = '\0';
    for (unsigned i = 0; i < np; i++)
        git_commit_free(parents[i]);
    if (parents != pbuf)
        free(parents);
    git_commit_free(c);
    git_odb_object_free(raw);
    mcg_buf_free(&sig);
    mcg_buf_free(&data);
}

/* ------------------------------------------------------------ the mark */

/*
 * "Verified up to X" is a file in the repository's git directory,
 * mcgit/verified: "<commit> <source branch> <trust digest>\n". No push,
 * fetch or bundle writes there (a ref would be writable by a pusher). The
 * digest records the trust root it was made under; it is not compared: a
 * trust change (a key revoked, a signer removed or added) applies to
 * history that arrives after it, so history verified before it stays
 * verified (docs/trust.md, "Trust changes").
 */
static char *mark_path(const mcg_repo *r)
{
    return mcg_sprintf("%smcgit/verified", git_repository_path(r->git));
}

static void trust_digest_hex(const mcg_signers *root, char hex[65])
{
    unsigned char d[32];
    mcg_signers_digest(root, d);
    mcg_hex(d, sizeof(d), hex);
}

bool mcg_gitops_verified_mark(mcg_repo *r, const mcg_signers *root, char sha[MCG_SHA_HEX + 1])
{
    (void)root; /* kept across trust changes: see above */
    char *path = mark_path(r), *data = NULL;
    size_t len = 0;
    bool ok = false;
    sha[0] = '\0';
    if (mcg_read_file(path, 4096, &data, &len, NULL) == 0) {
        /* "<commit> <branch> <digest>\n": the digest of the root it was
         * made under is kept for the record, not compared */
        char want[MCG_SHA_HEX + 1 + 256 + 2];
        snprintf(want, sizeof(want), " %s ", r->source_branch);
        size_t wl = strlen(want);
        git_oid oid;
        if (len > MCG_SHA_HEX + wl && !strncmp(data + MCG_SHA_HEX, want, wl) &&
            data[len - 1] == '\n' && git_oid_fromstrn(&oid, data, MCG_SHA_HEX) == 0) {
            git_oid_tostr(sha, MCG_SHA_HEX + 1, &oid);
            ok = true;
        }
    }
    free(data);
    free(path);
    return ok;
}

int mcg_gitops_mark_verified(mcg_repo *r, const char *tip, const mcg_signers *root, mcg_err *err)
{
    git_oid oid, cur;
    char cur_sha[MCG_SHA_HEX + 1], digest[65];
    int rc = 0;
    if (git_oid_fromstr(&oid, tip) != 0)
        return mcg_err_set(err, MCG_EINVAL, "bad commit id '%s'", tip);
    /* Never move back: re-rendering an older source leaves the mark alone. */
    if (mcg_gitops_verified_mark(r, root, cur_sha) && git_oid_fromstr(&cur, cur_sha) == 0 &&
        (git_oid_equal(&cur, &oid) || git_graph_descendant_of(r->git, &cur, &oid) == 1))
        return 0;
    char *dir = mcg_sprintf("%smcgit", git_repository_path(r->git));
    char *path = mark_path(r);
    trust_digest_hex(root, digest);
    char *line = mcg_sprintf("%s %s %s\n", tip, r->source_branch, digest);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", dir);
    else
        rc = mcg_write_file_atomic(path, line, strlen(line), 0644, err);
    free(line);
    free(path);
    free(dir);
    return rc;
}

/* ------------------------------------------------------------ verify */

/*
 * The trust root's checkpoints (mcg_signers_checkpoints) that tip descends
 * from, hidden from the walk: history up to each counts as verified. One
 * the repository does not hold, or that tip does not descend from, hides
 * nothing.
 */
static void hide_checkpoints(git_revwalk *walk, mcg_repo *r, const char *tip,
                             const mcg_signers *root)
{
    for (size_t i = 0; i < mcg_signers_checkpoint_count(root); i++) {
        const char *cp = mcg_signers_checkpoint(root, i);
        git_oid oid;
        if (git_oid_fromstr(&oid, cp) == 0 && mcg_repo_descends(r, tip, cp))
            git_revwalk_hide(walk, &oid);
    }
}

void mcg_vrange_free(mcg_vrange *vr)
{
    free(vr->order);
    memset(vr, 0, sizeof(*vr));
}

int mcg_verify_walk(mcg_vrange *vr, mcg_repo *r, const char *tip, const mcg_verify_opts *o,
                    const mcg_signers *root, mcg_err *err)
{
    git_revwalk *walk = NULL;
    git_oid tip_oid, since_oid, oid;
    size_t cap = 0;
    int rc = 0;
    char since_sha[MCG_SHA_HEX + 1] = "";
    char tip_sha[MCG_SHA_HEX + 1];
    memset(vr, 0, sizeof(*vr));
    if ((rc = mcg_repo_resolve(r, tip, tip_sha, err)) != 0)
        return rc;
    git_oid_fromstr(&tip_oid, tip_sha);
    if (o->since) {
        if ((rc = mcg_repo_resolve(r, o->since, since_sha, err)) != 0)
            return rc;
    } else if (o->from_root) {
        since_sha[0] = '\0';
    } else if (mcg_gitops_verified_mark(r, root, since_sha) &&
               !mcg_repo_descends(r, tip_sha, since_sha)) {
        since_sha[0] = '\0'; /* not an ancestor: verify everything */
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
    if (!o->since && !o->from_root)
        hide_checkpoints(walk, r, tip_sha, root);
    /* The whole range first: libgit2 sorts before it hands out the first commit. */
    while (git_revwalk_next(&oid, walk) == 0) {
        if (vr->n == cap) {
            cap = cap ? cap * 2 : 256;
            vr->order = mcg_realloc(vr->order, cap * sizeof(*vr->order));
        }
        vr->order[vr->n++] = oid;
    }
    /* Approvals: the notes commit given, else the repository's notes ref. */
    if (o->approvals)
        vr->has_notes = git_oid_fromstr(&vr->notes, o->approvals) == 0;
    else
        vr->has_notes = git_reference_name_to_id(&vr->notes, r->git, MCG_APPROVALS_REF) == 0;
out:
    if (rc)
        mcg_vrange_free(vr);
    git_revwalk_free(walk);
    return rc;
}

size_t mcg_verify_list(mcg_verdict *out, const size_t *pos, size_t *nbad, mcg_repo *r,
                       const git_oid *ids, size_t n, const git_oid *notes, const mcg_verify_opts *o,
                       const mcg_signers *root, const atomic_bool *stop)
{
    oidset bad = {0};
    signer_cache cache = {0};
    mcg_policy_cache policy = {0};
    git_odb *odb = NULL;
    size_t i;
    verify_ctx vc = {r, NULL, root, o, &bad, &cache, notes, &policy};
    if (git_repository_odb(&odb, r->git) != 0)
        odb = NULL;
    vc.odb = odb;
    *nbad = 0;
    for (i = 0; i < n && !(stop && atomic_load(stop)); i++) {
        mcg_verdict *v = &out[pos ? pos[i] : i];
        memset(v, 0, sizeof(*v));
        if (!odb) {
            git_oid_tostr(v->sha, sizeof(v->sha), &ids[i]);
            snprintf(v->reason, sizeof(v->reason), "cannot read commit");
        } else {
            verify_one(v, &vc, &ids[i]);
        }
        if (!v->good) {
            oidset_add(&bad, &ids[i]);
            (*nbad)++;
        }
    }
    mcg_policy_cache_free(&policy);
    mcg_signers_free(cache.set);
    oidset_free(&bad);
    git_odb_free(odb);
    return i;
}

size_t mcg_verify_chunk(mcg_verdict *out, mcg_repo *r, const mcg_vrange *vr, size_t from, size_t to,
                        const mcg_verify_opts *o, const mcg_signers *root)
{
    size_t nbad;
    mcg_verify_list(out, NULL, &nbad, r, vr->order + from, to - from,
                    vr->has_notes ? &vr->notes : NULL, o, root, NULL);
    return nbad;
}

void mcg_verify_tip_now(mcg_verify_report *rep, mcg_repo *r, const mcg_vrange *vr,
                        const mcg_verify_opts *o, const mcg_signers *root)
{
    if (o->now || !o->tip_now || !rep->n || !rep->v[rep->n - 1].good)
        return;
    mcg_verdict v;
    size_t nbad = 0;
    mcg_verify_opts at = *o;
    at.now = o->tip_now;
    mcg_verify_list(&v, NULL, &nbad, r, &vr->order[vr->n - 1], 1, vr->has_notes ? &vr->notes : NULL,
                    &at, root, NULL);
    if (!nbad)
        return;
    /* the newest commit must be valid now, whatever the history below */
    v.held = false;
    rep->v[rep->n - 1] = v;
    rep->nbad++;
}

int mcg_gitops_verify(mcg_verify_report *rep, mcg_repo *r, const char *tip,
                      const mcg_verify_opts *opts, const mcg_signers *root, mcg_err *err)
{
    static const mcg_verify_opts none = {0};
    const mcg_verify_opts *o = opts ? opts : &none;
    mcg_vrange vr;
    memset(rep, 0, sizeof(*rep));
    int rc = mcg_verify_walk(&vr, r, tip, o, root, err);
    if (rc)
        return rc;
    rep->v = mcg_calloc(vr.n ? vr.n : 1, sizeof(*rep->v));
    rep->n = vr.n;
    rep->nbad = mcg_verify_chunk(rep->v, r, &vr, 0, vr.n, o, root);
    mcg_verify_tip_now(rep, r, &vr, o, root);
    mcg_vrange_free(&vr);
    return 0;
}
