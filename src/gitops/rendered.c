/*
 * rendered.c — the rendered branch: a pure function of the source history.
 *
 * Each commit's tree holds, per pool, spec.json (the canonical rendered
 * spec), name, files/<path> with each file's decoded contents (symbolic
 * links as git symlinks) and units/<unit> (+ <unit>.d/<drop-in>), so
 * `git log -p rendered -- worker/files/etc/chrony.conf` is that file's
 * history on worker nodes.
 *
 * The rendered commit R(S) of a source commit S that renders depends on
 * nothing but S's history (rule 2, trailer `Render-Rule: 2`):
 *   - tree: the render of S's tree;
 *   - author and committer mcgit <mcgit@localhost> at S's committer time;
 *   - message: "Render <S>: <subject>", the pools' rendered names, the
 *     trailers Render-Rule: 2, Rollback-To (copied from S, when S has one)
 *     and Source-Commit: S;
 *   - parents: for each parent P of S in order, R of the nearest ancestors
 *     of P that render (P itself when it renders; else, through P's own
 *     parents, the same again), each once. A root (or nothing below renders):
 *     no parent.
 * So the rendered history has the shape of the source history with the
 * commits that do not render (no pools yet, invalid) left out: it moves
 * forward exactly when the source does, and any clone, whatever it rendered
 * before, computes the same ids — a reproducible build anyone can redo.
 *
 * Rendering a tip renders every commit below it that has no R yet, oldest
 * first. That is cheap: a render depends only on mcgit.yaml, pools/ and
 * machineconfigs/, so renders are memoised by those three entries (mode and
 * id) and a commit that changes other files only costs one commit object.
 * R(S) already made are found by walking the rendered branch once; commits
 * without the rule-2 trailer (older mcgit, rollbacks written by it) are
 * never reused, and a rendered branch made by an older mcgit is replaced
 * (its old tip kept as refs/mcgit/rendered-legacy/<sha>).
 */
#include "gitops/gitops_int.h"
#include "fsio/fsio.h"
#include "osenv/osenv.h"

#include <git2/sys/commit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static int add_pool(tree_list *tl, git_repository *repo, const mcg_rendered_pool *rp, mcg_err *err)
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

/* The tip commit of refs/heads/<branch>: ENOTFOUND without one, EIO when unreadable. */
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

/* Whether a commit message carries the rule-2 trailer. */
static bool is_rule2(const char *msg)
{
    for (const char *p = msg; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (!strncmp(p, MCG_RENDER_RULE_TRAILER "\n", sizeof(MCG_RENDER_RULE_TRAILER)) ||
            !strcmp(p, MCG_RENDER_RULE_TRAILER))
            return true;
    return false;
}

/* ------------------------------------------------------------ the chain */

typedef struct oidvec {
    git_oid *v;
    size_t n, cap;
} oidvec;

/* Append id (growing the vector). */
static void ov_push(oidvec *o, const git_oid *id)
{
    if (o->n == o->cap) {
        o->cap = o->cap ? o->cap * 2 : 8;
        o->v = mcg_realloc(o->v, o->cap * sizeof(*o->v));
    }
    o->v[o->n++] = *id;
}

/* Push id unless present (the lists are short: the parents of one commit). */
static void ov_push_once(oidvec *o, const git_oid *id)
{
    for (size_t i = 0; i < o->n; i++)
        if (git_oid_equal(&o->v[i], id))
            return;
    ov_push(o, id);
}

/* One render, by config key: its tree and "pool: name" lines, or that it fails. */
typedef struct memo_entry {
    bool ok;
    git_oid tree;
    char *names;
} memo_entry;

struct mcg_chain {
    mcg_repo *r;
    mcg_oidmap rmap; /* source commit -> index in src/ren */
    oidvec src, ren; /* a source commit and its rendered commit */
    mcg_oidmap memo; /* config key -> index in me */
    memo_entry *me;
    size_t nme, capme;
    mcg_oidmap skipmap; /* source commit that does not render -> index in skips */
    oidvec *skips;      /* its nearest ancestors that render */
    size_t nskips, capskips;
    oidvec order;   /* rendering source commits reachable from the last tip, oldest first */
    size_t made;    /* rendered commits written */
    size_t renders; /* trees actually rendered (memo misses) */
};

/* Record R(s) = rid, unless s is known already (the first record stands). */
static void add_known(mcg_chain *ch, const git_oid *s, const git_oid *rid)
{
    if (mcg_oidmap_put(&ch->rmap, s, ch->src.n)) {
        ov_push(&ch->src, s);
        ov_push(&ch->ren, rid);
    }
}

int mcg_chain_new(mcg_chain **out, mcg_repo *r, bool *rule2_tip, mcg_err *err)
{
    mcg_chain *ch = mcg_calloc(1, sizeof(*ch));
    git_commit *tip = NULL;
    git_revwalk *walk = NULL;
    git_oid oid;
    int rc = 0;
    ch->r = r;
    *out = NULL;
    if (rule2_tip)
        *rule2_tip = false;
    int trc = branch_tip(&tip, r, r->rendered_branch);
    if (trc == MCG_EIO) {
        rc = mcg_git_err(err, r->rendered_branch);
        goto out;
    }
    if (trc || !is_rule2(git_commit_message(tip)))
        goto out; /* nothing made by this rule yet */
    if (rule2_tip)
        *rule2_tip = true;
    if (git_revwalk_new(&walk, r->git) != 0 || git_revwalk_push(walk, git_commit_id(tip)) != 0) {
        rc = mcg_git_err(err, "revwalk");
        goto out;
    }
    while (git_revwalk_next(&oid, walk) == 0) {
        git_commit *c = NULL;
        char src[MCG_SHA_HEX + 1];
        git_oid soid;
        if (git_commit_lookup(&c, r->git, &oid) != 0) {
            rc = mcg_git_err(err, git_oid_tostr_s(&oid));
            goto out;
        }
        const char *msg = git_commit_message(c);
        if (is_rule2(msg) && mcg_git_trailer(msg, "Source-Commit", src) &&
            git_oid_fromstr(&soid, src) == 0)
            add_known(ch, &soid, &oid);
        git_commit_free(c);
    }
out:
    git_revwalk_free(walk);
    git_commit_free(tip);
    if (rc) {
        mcg_chain_free(ch);
        return rc;
    }
    *out = ch;
    return 0;
}

void mcg_chain_free(mcg_chain *ch)
{
    if (!ch)
        return;
    for (size_t i = 0; i < ch->nme; i++)
        free(ch->me[i].names);
    free(ch->me);
    for (size_t i = 0; i < ch->nskips; i++)
        free(ch->skips[i].v);
    free(ch->skips);
    free(ch->src.v);
    free(ch->ren.v);
    free(ch->order.v);
    mcg_oidmap_free(&ch->rmap);
    mcg_oidmap_free(&ch->memo);
    mcg_oidmap_free(&ch->skipmap);
    free(ch);
}

/*
 * The memo key of a tree: what a render reads of it, the entries
 * mcgit.yaml, pools and machineconfigs (mode and id; absent ones too).
 */
static int config_key(git_oid *key, const git_tree *tree)
{
    static const char *const parts[] = {"mcgit.yaml", "pools", "machineconfigs"};
    char line[128];
    mcg_buf b = MCG_BUF_INIT;
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        const git_tree_entry *e = git_tree_entry_byname(tree, parts[i]);
        if (e)
            snprintf(line, sizeof(line), "%s %o %s\n", parts[i],
                     (unsigned)git_tree_entry_filemode(e), git_oid_tostr_s(git_tree_entry_id(e)));
        else
            snprintf(line, sizeof(line), "%s -\n", parts[i]);
        mcg_buf_puts(&b, line);
    }
    int rc = git_odb_hash(key, b.ptr, b.len, GIT_OBJECT_BLOB);
    mcg_buf_free(&b);
    return rc;
}

/*
 * The memo entry for tree (index in *idx), rendering it on a miss. With
 * out_rd, always render (problems to diags, the render to *out_rd) so a
 * tip's problems are reported and its render handed out. A tree that does
 * not render is an entry with ok false; only writing objects fails.
 */
static int memo_render(size_t *idx, mcg_chain *ch, const git_tree *tree, const char *label,
                       mcg_diags *diags, mcg_render **out_rd, mcg_err *err)
{
    git_oid key;
    uint64_t v;
    mcg_diags local = {0};
    mcg_model *m = NULL;
    mcg_render *rd = NULL;
    tree_list tl = {0};
    memo_entry e = {0};
    mcg_err lerr = {0};
    int rc = 0;
    if (config_key(&key, tree) != 0)
        return mcg_git_err(err, "config key");
    bool have = mcg_oidmap_get(&ch->memo, &key, &v);
    if (have && !out_rd) {
        *idx = (size_t)v;
        return 0;
    }
    ch->renders++;
    if (mcg_git_load_tree(&m, ch->r, tree, label, diags ? diags : &local, &lerr) == 0 &&
        mcg_render_model(&rd, m, diags ? diags : &local) == 0) {
        for (size_t i = 0; i < rd->n && !rc; i++)
            rc = add_pool(&tl, ch->r->git, &rd->pools[i], err);
        if (!rc)
            rc = write_tree(&e.tree, ch->r->git, &tl, err);
        if (rc)
            goto out;
        mcg_buf b = MCG_BUF_INIT;
        for (size_t i = 0; i < rd->n; i++)
            mcg_buf_printf(&b, "%s: %s\n", rd->pools[i].pool, rd->pools[i].name);
        e.names = mcg_buf_detach(&b, NULL);
        e.ok = true;
    }
    if (have) {
        *idx = (size_t)v;
        free(e.names);
    } else {
        if (ch->nme == ch->capme) {
            ch->capme = ch->capme ? ch->capme * 2 : 16;
            ch->me = mcg_realloc(ch->me, ch->capme * sizeof(*ch->me));
        }
        ch->me[ch->nme] = e;
        mcg_oidmap_put(&ch->memo, &key, ch->nme);
        *idx = ch->nme++;
    }
    if (out_rd) {
        *out_rd = rd;
        rd = NULL;
    }
out:
    tl_free(&tl);
    mcg_render_free(rd);
    mcg_model_free(m);
    mcg_diags_free(&local);
    return rc;
}

/* Append R of each nearest rendering ancestor-or-self of source commit p. */
static void nearest_rendered(oidvec *out, const mcg_chain *ch, const git_oid *p, bool sources)
{
    uint64_t v;
    if (mcg_oidmap_get(&ch->rmap, p, &v)) {
        ov_push_once(out, sources ? p : &ch->ren.v[v]);
        return;
    }
    if (!mcg_oidmap_get(&ch->skipmap, p, &v))
        return;
    const oidvec *s = &ch->skips[v];
    for (size_t i = 0; i < s->n; i++) {
        uint64_t w;
        if (sources)
            ov_push_once(out, &s->v[i]);
        else if (mcg_oidmap_get(&ch->rmap, &s->v[i], &w))
            ov_push_once(out, &ch->ren.v[w]);
    }
}

/* Make R(c), its parents' renders being known (see the top of the file). */
static int render_one(mcg_chain *ch, git_commit *c, mcg_err *err)
{
    const git_oid *id = git_commit_id(c);
    git_tree *tree = NULL;
    git_signature *sig = NULL;
    oidvec parents = {0};
    char *msg = NULL;
    char label[16];
    size_t idx;
    int rc;
    if (mcg_oidmap_get(&ch->rmap, id, NULL)) {
        ov_push(&ch->order, id);
        return 0;
    }
    if (git_commit_tree(&tree, c) != 0)
        return mcg_git_err(err, git_oid_tostr_s(id));
    git_oid_tostr(label, sizeof(label) - 3, id);
    if ((rc = memo_render(&idx, ch, tree, label, NULL, NULL, err)) != 0)
        goto out;
    unsigned np = git_commit_parentcount(c);
    if (!ch->me[idx].ok) {
        /* left out: children look through it to what renders below */
        oidvec below = {0};
        for (unsigned i = 0; i < np; i++)
            nearest_rendered(&below, ch, git_commit_parent_id(c, i), true);
        if (ch->nskips == ch->capskips) {
            ch->capskips = ch->capskips ? ch->capskips * 2 : 8;
            ch->skips = mcg_realloc(ch->skips, ch->capskips * sizeof(*ch->skips));
        }
        ch->skips[ch->nskips] = below;
        mcg_oidmap_put(&ch->skipmap, id, ch->nskips++);
        goto out;
    }
    for (unsigned i = 0; i < np; i++)
        nearest_rendered(&parents, ch, git_commit_parent_id(c, i), false);
    const git_signature *sc = git_commit_committer(c);
    if (git_signature_new(&sig, "mcgit", "mcgit@localhost", sc->when.time, sc->when.offset) != 0) {
        rc = mcg_git_err(err, "signature");
        goto out;
    }
    char sha[MCG_SHA_HEX + 1], rb[MCG_SHA_HEX + 1];
    git_oid_tostr(sha, sizeof(sha), id);
    const char *summary = git_commit_summary(c);
    mcg_buf mb = MCG_BUF_INIT;
    mcg_buf_printf(&mb, "Render %.12s: %s\n\n%s\n" MCG_RENDER_RULE_TRAILER "\n", sha,
                   summary ? summary : "", ch->me[idx].names);
    if (mcg_git_trailer(git_commit_message(c), "Rollback-To", rb))
        mcg_buf_printf(&mb, "Rollback-To: %s\n", rb);
    mcg_buf_printf(&mb, "Source-Commit: %s\n", sha);
    msg = mcg_buf_detach(&mb, NULL);
    const git_oid **pp = mcg_calloc(parents.n ? parents.n : 1, sizeof(*pp));
    for (size_t i = 0; i < parents.n; i++)
        pp[i] = &parents.v[i];
    git_oid rid;
    int crc = git_commit_create_from_ids(&rid, ch->r->git, NULL, sig, sig, NULL, msg,
                                         &ch->me[idx].tree, parents.n, pp);
    free(pp);
    if (crc != 0) {
        rc = mcg_git_err(err, "rendered commit");
        goto out;
    }
    add_known(ch, id, &rid);
    ov_push(&ch->order, id);
    ch->made++;
out:
    free(msg);
    free(parents.v);
    git_signature_free(sig);
    git_tree_free(tree);
    return rc;
}

int mcg_chain_render(git_oid *out, mcg_chain *ch, const git_oid *tip, mcg_diags *diags,
                     mcg_render **out_rd, mcg_err *err)
{
    git_commit *c = NULL;
    git_tree *tree = NULL;
    git_revwalk *walk = NULL;
    git_oid oid;
    size_t idx;
    int rc;
    char label[16];
    if (out_rd)
        *out_rd = NULL;
    ch->order.n = 0;
    if (git_commit_lookup(&c, ch->r->git, tip) != 0 || git_commit_tree(&tree, c) != 0) {
        rc = mcg_git_err(err, git_oid_tostr_s(tip));
        goto out;
    }
    /* The tip first, its problems reported, before anything is written. */
    git_oid_tostr(label, sizeof(label) - 3, tip);
    if (out && (rc = memo_render(&idx, ch, tree, label, diags, out_rd, err)) != 0)
        goto out;
    if (out && !ch->me[idx].ok) {
        rc = mcg_err_set(err, MCG_EINVAL, "commit %s does not render", label);
        goto out;
    }
    if (git_revwalk_new(&walk, ch->r->git) != 0 ||
        git_revwalk_sorting(walk, GIT_SORT_TOPOLOGICAL | GIT_SORT_REVERSE) != 0 ||
        git_revwalk_push(walk, tip) != 0) {
        rc = mcg_git_err(err, "revwalk");
        goto out;
    }
    while ((rc = git_revwalk_next(&oid, walk)) == 0) {
        git_commit *cc = NULL;
        if (mcg_oidmap_get(&ch->rmap, &oid, NULL)) {
            ov_push(&ch->order, &oid); /* made before: no need to read it */
            continue;
        }
        if (git_commit_lookup(&cc, ch->r->git, &oid) != 0) {
            rc = mcg_git_err(err, git_oid_tostr_s(&oid));
            goto out;
        }
        rc = render_one(ch, cc, err);
        git_commit_free(cc);
        if (rc)
            goto out;
    }
    if (rc != GIT_ITEROVER) {
        rc = mcg_git_err(err, "revwalk");
        goto out;
    }
    uint64_t v;
    if (!out) {
        rc = 0;
        goto out;
    }
    if (!mcg_oidmap_get(&ch->rmap, tip, &v)) {
        rc = mcg_err_set(err, MCG_EIO, "commit %s: no rendered commit was made", label);
        goto out;
    }
    *out = ch->ren.v[v];
    rc = 0;
out:
    if (rc && out_rd) {
        mcg_render_free(*out_rd);
        *out_rd = NULL;
    }
    git_revwalk_free(walk);
    git_tree_free(tree);
    git_commit_free(c);
    return rc;
}

size_t mcg_chain_count(const mcg_chain *ch)
{
    return ch->order.n;
}

void mcg_chain_at(const mcg_chain *ch, size_t i, git_oid *source, git_oid *rendered)
{
    uint64_t v = 0;
    *source = ch->order.v[i];
    mcg_oidmap_get(&ch->rmap, source, &v);
    *rendered = ch->ren.v[v];
}

bool mcg_chain_lookup(const mcg_chain *ch, const git_oid *source, git_oid *rendered)
{
    uint64_t v;
    if (!mcg_oidmap_get(&ch->rmap, source, &v))
        return false;
    if (rendered)
        *rendered = ch->ren.v[v];
    return true;
}

void mcg_chain_stats(const mcg_chain *ch, size_t *made, size_t *renders)
{
    *made = ch->made;
    *renders = ch->renders;
}

/* ------------------------------------------------------------ render */

/*
 * The newest source commit the legacy (pre-rule-2) rendered branch was
 * rendered from: the first commit, walking first parents from the tip,
 * with a Source-Commit and no Rollback-To trailer.
 */
static void legacy_last_source(git_commit *tip, char last[MCG_SHA_HEX + 1])
{
    git_commit *c = NULL;
    last[0] = '\0';
    if (git_commit_dup(&c, tip) != 0)
        return;
    while (c) {
        const char *msg = git_commit_message(c);
        char src[MCG_SHA_HEX + 1], rb[MCG_SHA_HEX + 1];
        if (mcg_git_trailer(msg, "Source-Commit", src) &&
            !mcg_git_trailer(msg, "Rollback-To", rb)) {
            memcpy(last, src, sizeof(src));
            break;
        }
        git_commit *parent = NULL;
        if (git_commit_parentcount(c) == 0 || git_commit_parent(&parent, c, 0) != 0)
            parent = NULL;
        git_commit_free(c);
        c = parent;
    }
    git_commit_free(c);
}

/* Move the rendered branch to new_tip: compare-and-swap from old_tip, or create it. */
static int update_branch(mcg_repo *r, const git_oid *new_tip, const git_commit *old_tip,
                         const char *logmsg, mcg_err *err)
{
    char *refname = mcg_sprintf("refs/heads/%s", r->rendered_branch);
    git_reference *ref = NULL;
    int rc = 0;
    if (old_tip) {
        /* Compare-and-swap: a concurrent writer makes this fail, not lose. */
        if (git_reference_create_matching(&ref, r->git, refname, new_tip, 1, git_commit_id(old_tip),
                                          logmsg) != 0)
            rc = mcg_git_err(err, refname);
    } else if (git_reference_create(&ref, r->git, refname, new_tip, 0, logmsg) != 0) {
        rc = mcg_git_err(err, refname);
    }
    git_reference_free(ref);
    free(refname);
    return rc;
}

/* Whether the rendered tip old_tip (NULL: none) is the render of source. */
static bool tip_renders(git_commit *old_tip, const char *source)
{
    char tip_src[MCG_SHA_HEX + 1];
    return old_tip && is_rule2(git_commit_message(old_tip)) &&
           mcg_git_trailer(git_commit_message(old_tip), "Source-Commit", tip_src) &&
           !strcmp(tip_src, source);
}

/*
 * Verify every new commit up to source into vr (timed); a bad one refuses
 * the render.
 */
static int render_verify(mcg_verify_report *vr, mcg_repo *r, const char *source,
                         const mcg_signers *root, mcg_err *err)
{
    double t0 = mcg_mono_seconds();
    int rc = mcg_gitops_verify(vr, r, source, NULL, root, err);
    vr->seconds = mcg_mono_seconds() - t0;
    if (rc)
        return rc;
    if (vr->nbad)
        return mcg_err_set(err, MCG_ETRUST, "%zu of %zu commit%s failed verification", vr->nbad,
                           vr->n, vr->n == 1 ? "" : "s");
    return 0;
}

/* The render of source, rendered already, made again for the caller (*rd NULL on failure). */
static void render_again(mcg_render **rd, mcg_repo *r, const char *source, mcg_err *err)
{
    mcg_model *m = NULL;
    mcg_diags quiet = {0};
    if (mcg_gitops_load_commit(&m, r, source, &quiet, err) == 0)
        mcg_render_model(rd, m, &quiet);
    mcg_model_free(m);
    mcg_diags_free(&quiet);
}

/*
 * source must descend from the last source rendered at old_tip (none: no
 * rendered branch yet); rule2: old_tip was made by this mcgit.
 */
static int check_descends(mcg_repo *r, git_commit *old_tip, bool rule2, const char *source,
                          mcg_err *err)
{
    char last[MCG_SHA_HEX + 1] = "";
    if (old_tip) {
        char src[MCG_SHA_HEX + 1];
        if (rule2 && mcg_git_trailer(git_commit_message(old_tip), "Source-Commit", src))
            memcpy(last, src, sizeof(src));
        else if (!rule2)
            legacy_last_source(old_tip, last);
    }
    if (last[0] && !mcg_repo_descends(r, source, last))
        return mcg_err_set(err, MCG_ECONFLICT,
                           "%.12s does not descend from the last rendered source %.12s (use mcgit "
                           "rollback to return to an earlier config)",
                           source, last);
    return 0;
}

/*
 * The render of source must not change, in any pool that has a target (the
 * rendered tip old_tip, NULL: none), a
 * section an installed node cannot take (mcg_commit_plan_unreconcilable): refused
 * here, before anything is written, so that no node is ever given it.
 */
static int check_reconcilable(mcg_repo *r, const git_commit *old_tip, const char *source,
                              mcg_err *err)
{
    if (!old_tip)
        return 0; /* the first render: nothing to change from */
    mcg_commit_plan *p = NULL;
    mcg_diags quiet = {0};
    int rc = mcg_gitops_commit_plan(&p, r, source, &quiet, err);
    mcg_diags_free(&quiet);
    if (rc)
        return rc == MCG_EINVAL ? 0 : rc; /* does not render: the render says why */
    mcg_strv lines = {0};
    mcg_commit_plan_unreconcilable(p, &lines);
    if (lines.n)
        rc = mcg_err_set(err, MCG_EINVAL, "%s%s", lines.v[0],
                         lines.n > 1 ? " (and more unreconcilable changes)" : "");
    mcg_strv_free(&lines);
    mcg_commit_plan_free(p);
    return rc;
}

/* A rendered branch of an older mcgit kept reachable under refs/mcgit/rendered-legacy/. */
static int keep_legacy(git_reference **saved, mcg_repo *r, git_commit *old_tip, mcg_err *err)
{
    char *name =
        mcg_sprintf("refs/mcgit/rendered-legacy/%s", git_oid_tostr_s(git_commit_id(old_tip)));
    int src = git_reference_create(saved, r->git, name, git_commit_id(old_tip), 1,
                                   "mcgit render: rendered branch of an older mcgit");
    free(name);
    if (src != 0)
        return mcg_git_err(err, "refs/mcgit/rendered-legacy");
    return 0;
}

/* The source commit rev resolved into res and verified, and the rendered tip (NULL: none). */
static int render_start(mcg_render_result *res, mcg_verify_report *vr, git_commit **old_tip,
                        mcg_repo *r, const char *rev, const mcg_signers *root, mcg_err *err)
{
    int rc;
    if ((rc = mcg_repo_resolve(r, rev ? rev : r->source_branch, res->source, err)) != 0 ||
        (rc = render_verify(vr, r, res->source, root, err)) != 0)
        return rc;
    if (branch_tip(old_tip, r, r->rendered_branch) == MCG_EIO)
        return mcg_git_err(err, r->rendered_branch);
    return 0;
}

/* A rendered branch made by an older mcgit: the chain rendered again from the start. */
static int chain_restart(mcg_chain **ch, mcg_repo *scratch, mcg_err *err)
{
    mcg_chain_free(*ch);
    *ch = NULL;
    return mcg_chain_new(ch, scratch, NULL, err);
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
    mcg_render *rd = NULL;
    mcg_chain *ch = NULL;
    mcg_repo *scratch = NULL;
    git_odb_backend *mem = NULL;
    git_commit *old_tip = NULL;
    git_reference *saved = NULL;
    bool rule2 = false;
    git_oid src_oid, rid;
    int rc;

    if ((rc = render_start(res, vr, &old_tip, r, rev, root, err)) != 0)
        goto out;
    git_oid_fromstr(&src_oid, res->source);
    bool at_tip = tip_renders(old_tip, res->source);
    if (at_tip)
        rid = *git_commit_id(old_tip); /* the common case: nothing new, no walk */
    else if ((rc = mcg_repo_scratch(&scratch, &mem, r, err)) != 0 ||
             (rc = mcg_chain_new(&ch, scratch, &rule2, err)) != 0)
        goto out;
    if (at_tip || mcg_chain_lookup(ch, &src_oid, &rid)) {
        /* rendered already: the branch stays where it is */
        git_oid_tostr(res->rendered, sizeof(res->rendered), &rid);
        if (out_render)
            render_again(&rd, r, res->source, err);
        rc = mcg_gitops_mark_verified(r, res->source, root, err);
        goto out;
    }
    if ((rc = check_descends(r, old_tip, rule2, res->source, err)) != 0 ||
        (rc = check_reconcilable(r, old_tip, res->source, err)) != 0 ||
        (!rule2 && (rc = chain_restart(&ch, scratch, err)) != 0))
        goto out;
    if ((rc = mcg_chain_render(&rid, ch, &src_oid, diags, out_render ? &rd : NULL, err)) != 0)
        goto out;
    size_t made = 0, renders = 0;
    mcg_chain_stats(ch, &made, &renders);
    /* Made in memory (scratch.c): written out together, before any ref names them. */
    if (made && (rc = mcg_repo_scratch_persist(r, scratch, mem, err)) != 0)
        goto out;
    /* made by an older mcgit: keep it reachable, then replace it */
    if (old_tip && !rule2 && (rc = keep_legacy(&saved, r, old_tip, err)) != 0)
        goto out;
    if ((rc = update_branch(r, &rid, old_tip, "mcgit render", err)) != 0)
        goto out;
    git_oid_tostr(res->rendered, sizeof(res->rendered), &rid);
    res->created = true;
    rc = mcg_gitops_mark_verified(r, res->source, root, err);
out:
    if (out_render && rc == 0) {
        *out_render = rd;
        rd = NULL;
    }
    mcg_render_free(rd);
    mcg_chain_free(ch);
    mcg_repo_free(scratch);
    git_reference_free(saved);
    git_commit_free(old_tip);
    mcg_verify_report_free(&local);
    return rc;
}

/* ------------------------------------------------------------ log */

void mcg_rendered_log_free(mcg_rendered_log *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++) {
        mcg_strv_free(&l->e[i].pools);
        free(l->e[i].subject);
        free(l->e[i].author);
    }
    free(l->e);
    memset(l, 0, sizeof(*l));
}

/* The "pool: rendered-pool-hash" lines of a rendered commit's body, as "pool name". */
static void pool_lines(mcg_strv *out, const char *msg)
{
    /* the body only: the subject quotes the source commit's, which may look like one */
    const char *body = strstr(msg, "\n\n");
    for (const char *p = body; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        size_t ll = strcspn(p, "\n");
        const char *colon = memchr(p, ':', ll);
        if (colon && colon > p && colon[1] == ' ' && !strncmp(colon + 2, "rendered-", 9)) {
            char *line = mcg_sprintf("%.*s %.*s", (int)(colon - p), p,
                                     (int)(ll - (size_t)(colon + 2 - p)), colon + 2);
            mcg_strv_push(out, line);
            free(line);
        }
    }
}

int mcg_gitops_log(mcg_rendered_log *out, mcg_repo *r, mcg_err *err)
{
    memset(out, 0, sizeof(*out));
    git_commit *tip = NULL;
    git_revwalk *walk = NULL;
    git_oid oid;
    int rc = 0;
    int trc = branch_tip(&tip, r, r->rendered_branch);
    if (trc == MCG_ENOTFOUND)
        return 0;
    if (trc)
        return mcg_git_err(err, r->rendered_branch);
    /* newest first, children before parents (as git log --topo-order) */
    if (git_revwalk_new(&walk, r->git) != 0 ||
        git_revwalk_sorting(walk, GIT_SORT_TOPOLOGICAL | GIT_SORT_TIME) != 0 ||
        git_revwalk_push(walk, git_commit_id(tip)) != 0) {
        rc = mcg_git_err(err, "revwalk");
        goto out;
    }
    size_t cap = 0;
    while (git_revwalk_next(&oid, walk) == 0) {
        git_commit *c = NULL;
        if (git_commit_lookup(&c, r->git, &oid) != 0) {
            rc = mcg_git_err(err, git_oid_tostr_s(&oid));
            goto out;
        }
        if (out->n == cap) {
            cap = cap ? cap * 2 : 32;
            out->e = mcg_realloc(out->e, cap * sizeof(*out->e));
        }
        mcg_rendered_log_entry *e = &out->e[out->n++];
        memset(e, 0, sizeof(*e));
        git_oid_tostr(e->rendered, sizeof(e->rendered), &oid);
        const char *msg = git_commit_message(c);
        e->rule2 = is_rule2(msg);
        mcg_git_trailer(msg, "Source-Commit", e->source);
        mcg_git_trailer(msg, "Rollback-To", e->rollback);
        e->time = (int64_t)git_commit_time(c);
        e->offset = git_commit_time_offset(c);
        pool_lines(&e->pools, msg);
        git_commit_free(c);
    }
out:
    git_revwalk_free(walk);
    git_commit_free(tip);
    if (rc)
        mcg_rendered_log_free(out);
    return rc;
}

/*
 * Who signed source commit c: the fingerprint of the key in its gpgsig
 * header when that signature verifies over the commit (whoever the key
 * belongs to), and with root, the principal that trusts it: root plus
 * .mcgit/allowed_signers of its first parent, at its committer time (the
 * display of `mcgit log`; mcg_gitops_verify is the verdict). Empty when
 * unknown.
 */
static void commit_signer(char fp[64], char principal[256], mcg_repo *r, git_commit *c,
                          const mcg_signers *root)
{
    mcg_buf sig = MCG_BUF_INIT, data = MCG_BUF_INIT;
    git_odb *odb = NULL;
    git_odb_object *raw = NULL;
    mcg_sig_result res = {0};
    mcg_err e = {0};
    unsigned char digest[MCG_SIGMEMO_DIGEST];
    fp[0] = principal[0] = '\0';
    if (git_repository_odb(&odb, r->git) != 0 || git_odb_read(&raw, odb, git_commit_id(c)) != 0 ||
        mcg_commit_split_signature(&sig, &data, git_odb_object_data(raw),
                                   git_odb_object_size(raw)) != 0)
        goto out;
    if (mcg_sshsig_check(digest, sig.ptr, sig.len, data.ptr, data.len) != 0)
        goto out; /* no valid signature at all */
    /* parsed strictly by the verifier; an empty set only refuses the key */
    mcg_sshsig_verify(&res, NULL, sig.ptr, sig.len, data.ptr, data.len, 0, &e);
    snprintf(fp, 64, "%s", res.fingerprint);
    if (!root)
        goto out;
    mcg_signers *set = NULL, *repo_set = NULL;
    git_commit *parent = NULL;
    git_tree *tree = NULL;
    char *text = NULL;
    size_t len = 0;
    if (git_commit_parentcount(c) > 0 && git_commit_parent(&parent, c, 0) == 0 &&
        git_commit_tree(&tree, parent) == 0 &&
        mcg_git_read_path(&text, &len, r->git, tree, ".mcgit/allowed_signers", NULL) == 0 &&
        mcg_signers_parse(&repo_set, ".mcgit/allowed_signers", text, len, NULL) == 0)
        set = mcg_signers_union(root, repo_set);
    if (mcg_sshsig_verify(&res, set ? set : root, sig.ptr, sig.len, data.ptr, data.len,
                          (int64_t)git_commit_committer(c)->when.time, &e) == 0)
        snprintf(principal, 256, "%s", res.principal);
    free(text);
    mcg_signers_free(repo_set);
    mcg_signers_free(set);
    git_tree_free(tree);
    git_commit_free(parent);
out:
    mcg_buf_free(&sig);
    mcg_buf_free(&data);
    git_odb_object_free(raw);
    git_odb_free(odb);
}

int mcg_gitops_log_sources(mcg_rendered_log *l, mcg_repo *r, const mcg_signers *root, mcg_err *err)
{
    (void)err;
    for (size_t i = 0; i < l->n; i++) {
        mcg_rendered_log_entry *e = &l->e[i];
        git_oid soid;
        git_commit *c = NULL;
        if (!e->source[0] || git_oid_fromstr(&soid, e->source) != 0 ||
            git_commit_lookup(&c, r->git, &soid) != 0)
            continue; /* not held here: the rendered commit alone speaks */
        const char *summary = git_commit_summary(c);
        e->subject = mcg_strdup(summary ? summary : "");
        const git_signature *a = git_commit_author(c);
        e->author = mcg_sprintf("%s <%s>", a->name, a->email);
        commit_signer(e->signer, e->principal, r, c, root);
        git_commit_free(c);
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
