/*
 * check.c — what HQ checks of a site's status records before it takes
 * them: who signed each one, and that what it claims is something HQ's own
 * verified history knows. A record is untrusted input until then: its
 * size is bounded before it is parsed, its text is never steering anything
 * but the check, and the first problem refuses the whole import.
 */
#include "bundle/bundle.h"
#include "site/site_int.h"

#include <git2.h>
#include <stdlib.h>
#include <string.h>

#define CLOCK_SKEW 3600 /* a record's time may be this far ahead of HQ's clock */

/* What the records of one import are checked against. */
typedef struct checker {
    mcg_repo *q;
    const char *site;
    const mcg_signers *root;
    int64_t now;
    char mark[MCG_SHA_HEX + 1];    /* HQ's verified source commit */
    mcg_rendered_log log;          /* HQ's rendered history */
    char key_src[MCG_SHA_HEX + 1]; /* the source commit key was read at */
    mcg_signers *key;              /* the site's statusKey there, as a signer set */
    /* the previous record's claims */
    int64_t prev_time;
    char prev_source[MCG_SHA_HEX + 1];
} checker;

/* The site's statusKey as declared at source commit src, into ck->key. */
static int key_at(checker *ck, const char *src, const char *rec, mcg_err *err)
{
    mcg_model *m = NULL;
    mcg_diags d = {0};
    int rc = 0;
    if (ck->key && !strcmp(ck->key_src, src))
        return 0;
    mcg_signers_free(ck->key);
    ck->key = NULL;
    if (mcg_gitops_load_commit(&m, ck->q, src, &d, NULL) != 0 && !m) {
        rc = mcg_err_set(err, MCG_EINVAL, "record %.12s: source %.12s does not load", rec, src);
        goto out;
    }
    const mcg_site *s = mcg_model_find_site(m, ck->site);
    if (!s) {
        rc = mcg_err_set(err, MCG_ETRUST,
                         "record %.12s: site '%s' is not declared at its source commit %.12s", rec,
                         ck->site, src);
        goto out;
    }
    char *line = mcg_sprintf("site-%s namespaces=\"" MCG_SITE_NS "\" %s\n", s->name, s->status_key);
    mcg_err e = {0};
    if (mcg_signers_parse(&ck->key, "statusKey", line, strlen(line), &e) != 0)
        rc = mcg_err_set(err, MCG_EINVAL, "record %.12s: sites/%s.yaml at %.12s: %s", rec, ck->site,
                         src, e.msg);
    else
        mcg_signers_inherit_revoked(ck->key, ck->root);
    free(line);
    snprintf(ck->key_src, sizeof(ck->key_src), "%s", src);
out:
    mcg_model_free(m);
    mcg_diags_free(&d);
    return rc;
}

/* The record's signature: namespace mcgit-site, by the site's key at src. */
static int check_signature(checker *ck, const git_oid *id, const char *rec, const char *src,
                           int64_t when, mcg_err *err)
{
    git_odb *odb = NULL;
    git_odb_object *raw = NULL;
    mcg_buf sig = MCG_BUF_INIT, data = MCG_BUF_INIT;
    int rc = key_at(ck, src, rec, err);
    if (rc)
        return rc;
    if (git_repository_odb(&odb, mcg_repo_git(ck->q)) != 0 || git_odb_read(&raw, odb, id) != 0) {
        rc = mcg_git_err(err, rec);
        goto out;
    }
    if (mcg_commit_split_signature(&sig, &data, git_odb_object_data(raw),
                                   git_odb_object_size(raw)) != 0) {
        rc = mcg_err_set(err, MCG_ETRUST, "record %.12s is not signed", rec);
        goto out;
    }
    mcg_sig_result res = {0};
    mcg_err e = {0};
    if (mcg_sshsig_verify_ns(&res, ck->key, sig.ptr, sig.len, data.ptr, data.len, when, MCG_SITE_NS,
                             &e) != 0)
        rc = mcg_err_set(err, MCG_ETRUST,
                         "record %.12s: not signed by site '%s''s statusKey (sites/%s.yaml at "
                         "%.12s): %s",
                         rec, ck->site, ck->site, src, e.msg);
out:
    mcg_buf_free(&sig);
    mcg_buf_free(&data);
    git_odb_object_free(raw);
    git_odb_free(odb);
    return rc;
}

/* Whether HQ's rendered history holds config for pool. */
static bool rendered_here(const checker *ck, const char *pool, const char *config)
{
    char *want = mcg_sprintf("%s %s", pool, config);
    bool found = false;
    for (size_t i = 0; i < ck->log.n && !found; i++)
        found = mcg_strv_contains(&ck->log.e[i].pools, want);
    free(want);
    return found;
}

/*
 * Nodes of the record whose attestation verifies here (against the key the
 * record carries for them, which the site key signed) on config, whose
 * digest is the config's own (its name is the start of its SHA-256).
 */
static long long attested_on(const json_t *doc, const char *config)
{
    const char *dash = strrchr(config, '-');
    long long n = 0;
    size_t i;
    json_t *node;
    json_array_foreach(json_object_get(doc, "nodes"), i, node) {
        mcg_attestation at;
        const char *name = json_string_value(json_object_get(node, "name"));
        const char *cur = json_string_value(json_object_get(node, "current"));
        if (!name || !cur || strcmp(cur, config) || !dash ||
            mcg_trust_attestation_verify(
                &at, json_string_value(json_object_get(node, "attestation")),
                json_string_value(json_object_get(node, "nodeKey")), NULL) != 0)
            continue;
        if (!strcmp(at.node, name) && !strcmp(at.config, config) &&
            !strncmp(at.digest, "sha256:", 7) && strlen(at.digest) == 7 + 64 &&
            !strncmp(at.digest + 7, dash + 1, strlen(dash + 1)))
            n++;
    }
    return n;
}

/* Each pool the record lists runs a config HQ rendered for it. */
static int check_pools(const checker *ck, const json_t *doc, const char *rec, mcg_err *err)
{
    size_t i;
    json_t *p;
    json_t *pools = json_object_get(doc, "pools");
    if (!json_is_array(pools))
        return mcg_err_set(err, MCG_EINVAL, "record %.12s: status.json has no pools list", rec);
    json_array_foreach(pools, i, p) {
        const char *name = json_string_value(json_object_get(p, "name"));
        const char *cfg = json_string_value(json_object_get(p, "config"));
        if (!name || !cfg)
            return mcg_err_set(err, MCG_EINVAL, "record %.12s: pools[%zu] has no name or config",
                               rec, i);
        if (*cfg && !rendered_here(ck, name, cfg))
            return mcg_err_set(err, MCG_ETRUST,
                               "record %.12s: pool %s runs %s, a config this repository never "
                               "rendered for it",
                               rec, name, cfg);
        long long claimed = json_integer_value(json_object_get(p, "attestedMachineCount"));
        long long verified = *cfg ? attested_on(doc, cfg) : 0;
        if (claimed > verified)
            return mcg_err_set(err, MCG_ETRUST,
                               "record %.12s: pool %s claims %lld attested machines, %lld "
                               "attestations in the record verify",
                               rec, name, claimed, verified);
    }
    return 0;
}

/* What the record claims: its site, its time, its source commit, its pools. */
static int check_claims(checker *ck, const json_t *doc, const char *rec, int64_t *when,
                        const char **src, mcg_err *err)
{
    const char *site = json_string_value(json_object_get(doc, "site"));
    json_t *t = json_object_get(doc, "time");
    *src = json_string_value(json_object_get(doc, "source"));
    *when = json_integer_value(t);
    if (!site || strcmp(site, ck->site))
        return mcg_err_set(err, MCG_ETRUST, "record %.12s names site '%s', not '%s'", rec,
                           site ? site : "", ck->site);
    if (!json_is_integer(t) || *when < ck->prev_time || *when > ck->now + CLOCK_SKEW)
        return mcg_err_set(err, MCG_EINVAL,
                           "record %.12s: its time %lld is before the previous record's or more "
                           "than an hour ahead of this host's clock",
                           rec, (long long)*when);
    if (!*src || strlen(*src) != MCG_SHA_HEX || !mcg_repo_descends(ck->q, ck->mark, *src))
        return mcg_err_set(err, MCG_ETRUST,
                           "record %.12s: its source commit %.12s is not in this repository's "
                           "verified history",
                           rec, *src ? *src : "");
    if (ck->prev_source[0] && !mcg_repo_descends(ck->q, *src, ck->prev_source))
        return mcg_err_set(err, MCG_ETRUST,
                           "record %.12s: its source %.12s is older than the previous record's "
                           "%.12s (a replayed record)",
                           rec, *src, ck->prev_source);
    return check_pools(ck, doc, rec, err);
}

/* One record: its shape, its claims, its signature; then it is the previous one. */
static int check_one(checker *ck, const git_oid *id, mcg_err *err)
{
    char rec[MCG_SHA_HEX + 1];
    git_commit *c = NULL;
    git_tree *tree = NULL;
    git_tree_entry *ent = NULL;
    git_blob *blob = NULL;
    json_t *doc = NULL;
    int64_t when = 0;
    const char *src = NULL;
    int rc = 0;
    git_oid_tostr(rec, sizeof(rec), id);
    if (git_commit_lookup(&c, mcg_repo_git(ck->q), id) != 0 || git_commit_parentcount(c) > 1 ||
        git_commit_tree(&tree, c) != 0 || git_tree_entrycount(tree) != 1 ||
        git_tree_entry_bypath(&ent, tree, "status.json") != 0 ||
        git_tree_entry_type(ent) != GIT_OBJECT_BLOB ||
        git_blob_lookup(&blob, mcg_repo_git(ck->q), git_tree_entry_id(ent)) != 0) {
        rc = mcg_err_set(err, MCG_EINVAL,
                         "record %.12s is not a status record (one parent at most, a tree of "
                         "status.json alone)",
                         rec);
        goto out;
    }
    if (git_blob_rawsize(blob) > MCG_SITE_MAX_STATUS) {
        rc = mcg_err_set(err, MCG_EINVAL, "record %.12s: status.json is larger than %d bytes", rec,
                         MCG_SITE_MAX_STATUS);
        goto out;
    }
    if ((rc = mcg_json_parse(&doc, "status.json", git_blob_rawcontent(blob),
                             (size_t)git_blob_rawsize(blob), err)) != 0) {
        mcg_err_prefix(err, "record");
        goto out;
    }
    if ((rc = check_claims(ck, doc, rec, &when, &src, err)) != 0 ||
        (rc = check_signature(ck, id, rec, src, when, err)) != 0)
        goto out;
    ck->prev_time = when;
    snprintf(ck->prev_source, sizeof(ck->prev_source), "%s", src);
out:
    json_decref(doc);
    git_blob_free(blob);
    git_tree_entry_free(ent);
    git_tree_free(tree);
    git_commit_free(c);
    return rc;
}

/* The previous record's time and source, from the record old ("" none). */
static void previous(checker *ck, const char *old)
{
    git_oid id;
    json_t *doc = *old && git_oid_fromstr(&id, old) == 0
                      ? mcg_site_record_read(mcg_repo_git(ck->q), &id)
                      : NULL;
    if (!doc)
        return;
    ck->prev_time = json_integer_value(json_object_get(doc, "time"));
    const char *s = json_string_value(json_object_get(doc, "source"));
    snprintf(ck->prev_source, sizeof(ck->prev_source), "%s", s ? s : "");
    json_decref(doc);
}

/* The new records (old, new], oldest first, into ids; false when not a line. */
static bool line_of_records(mcg_repo *q, const char *old, const char *new, git_oid **ids, size_t *n)
{
    git_oid cur, stop;
    bool has_stop = *old && git_oid_fromstr(&stop, old) == 0;
    git_oid_fromstr(&cur, new);
    *ids = NULL;
    *n = 0;
    for (size_t guard = 0; guard < 1000000; guard++) {
        if (has_stop && git_oid_equal(&cur, &stop))
            break;
        git_commit *c = NULL;
        if (git_commit_lookup(&c, mcg_repo_git(q), &cur) != 0)
            return false;
        *ids = mcg_realloc(*ids, (*n + 1) * sizeof(**ids));
        (*ids)[(*n)++] = cur;
        unsigned np = git_commit_parentcount(c);
        if (np == 1)
            cur = *git_commit_parent_id(c, 0);
        git_commit_free(c);
        if (np > 1 || (np == 0 && has_stop))
            return false;
        if (np == 0)
            break; /* the first record: a first import holds none */
    }
    for (size_t a = 0, b = *n; a + 1 < b; a++, b--) { /* oldest first */
        git_oid t = (*ids)[a];
        (*ids)[a] = (*ids)[b - 1];
        (*ids)[b - 1] = t;
    }
    return true;
}

/*
 * The checks HQ makes of the records (old, new] of refs/mcgit/status/<site>
 * in q (old "" for a first import): a line of records, each parent the one
 * before; the site declared at r's verified source commit; each record
 * signed in namespace mcgit-site by the site's statusKey as declared at the
 * source commit the record reports (so a rotated key counts for records
 * after the change), under root's revocations; status.json well formed,
 * naming this site, its time not before the previous record's nor more
 * than an hour ahead of now; its source commit in r's verified history and
 * not older than the previous record's; every pool's config one r's
 * rendered branch holds for that pool. MCG_ETRUST or MCG_EINVAL with one
 * line naming the record otherwise.
 */
static int mcg_site_check_records(mcg_repo *q, const char *site, const char *old, const char *new,
                                  const mcg_signers *root, int64_t now, mcg_err *err)
{
    checker ck = {.q = q, .site = site, .root = root, .now = now};
    git_oid *ids = NULL;
    size_t n = 0;
    int rc = 0;
    if (!mcg_gitops_verified_mark(q, root, ck.mark))
        return mcg_err_set(err, MCG_ENOTFOUND,
                           "nothing verified in this repository yet: render or fetch the source "
                           "first");
    mcg_model *m = NULL;
    mcg_diags d = {0};
    if (mcg_gitops_load_commit(&m, q, ck.mark, &d, NULL) == 0 && !mcg_model_find_site(m, site))
        rc = mcg_err_set(err, MCG_ETRUST, "site '%s' is not declared at %.12s (sites/%s.yaml)",
                         site, ck.mark, site);
    mcg_model_free(m);
    mcg_diags_free(&d);
    if (rc)
        return rc;
    if (!line_of_records(q, old, new, &ids, &n))
        rc = mcg_err_set(err, MCG_EINVAL,
                         "%s%s: its records are not a line of commits from the one held",
                         MCG_SITE_REF_PREFIX, site);
    if (!rc)
        rc = mcg_gitops_log(&ck.log, q, err);
    previous(&ck, old);
    for (size_t i = 0; !rc && i < n; i++)
        rc = check_one(&ck, &ids[i], err);
    free(ids);
    mcg_rendered_log_free(&ck.log);
    mcg_signers_free(ck.key);
    return rc;
}

/* What site import hands mcg_bundle_import_only. */
typedef struct import_ctx {
    const mcg_signers *root;
    int64_t now;
} import_ctx;

static int check_ref(void *ctx, mcg_repo *q, const mcg_bundle_ref *br, mcg_err *err)
{
    const import_ctx *ic = ctx;
    const char *site = br->name + strlen(MCG_SITE_REF_PREFIX);
    if (!mcg_site_name_ok(site))
        return mcg_err_set(err, MCG_EINVAL, "%s: '%s' is not a site name", br->name, site);
    return mcg_site_check_records(q, site, br->old_sha, br->new_sha, ic->root, ic->now, err);
}

int mcg_site_import(mcg_bundle_report *rep, mcg_repo *r, const char *path, const mcg_signers *root,
                    int64_t now, mcg_err *err)
{
    import_ctx ic = {root, now};
    mcg_bundle_refs_only only = {MCG_SITE_REF_PREFIX, check_ref, &ic};
    return mcg_bundle_import_only(rep, r, path, &only, err);
}
