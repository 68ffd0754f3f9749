/*
 * record.c — a site's status as a signed record: the status document from
 * the cluster and the repository, and the commit on refs/mcgit/status/NAME
 * that carries it, signed by the site key as git signs (ssh-keygen -Y sign,
 * here in namespace mcgit-site).
 *
 * A record says what the site runs, not what it was told: each pool's
 * config is its status.configuration (the config its nodes have), with the
 * source commit that rendered it found in the site's rendered history.
 */
#include "fsio/fsio.h"
#include "site/site_int.h"

#include <git2.h>
#include <stdlib.h>
#include <string.h>

bool mcg_site_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
        return false;
    return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == n;
}

/* The source commit that rendered config for pool: the newest rendered commit naming it. */
static const char *source_of(const mcg_rendered_log *log, const char *pool, const char *config)
{
    char *want = mcg_sprintf("%s %s", pool, config);
    const char *src = "";
    for (size_t i = 0; i < log->n && !*src; i++)
        if (mcg_strv_contains(&log->e[i].pools, want))
            src = log->e[i].source;
    free(want);
    return src;
}

static long long count_of(const json_t *status, const char *key)
{
    return (long long)json_integer_value(json_object_get(status, key));
}

/* The pools of cl as the record lists them (sorted by name). */
static int pools_json(json_t *out, mcg_cluster *cl, const mcg_rendered_log *log, mcg_err *err)
{
    json_t *items = NULL, *p;
    size_t i;
    int rc = mcg_cluster_list_pools(cl, &items, err);
    json_array_foreach(items, i, p) {
        const char *name =
            json_string_value(json_object_get(json_object_get(p, "metadata"), "name"));
        json_t *st = json_object_get(p, "status");
        const char *cfg =
            json_string_value(json_object_get(json_object_get(st, "configuration"), "name"));
        if (!name)
            continue;
        json_array_append_new(
            out, json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:I}", "name", name, "config", cfg ? cfg : "",
                           "source", cfg ? source_of(log, name, cfg) : "", "machineCount",
                           (json_int_t)count_of(st, "machineCount"), "updatedMachineCount",
                           (json_int_t)count_of(st, "updatedMachineCount"), "degradedMachineCount",
                           (json_int_t)count_of(st, "degradedMachineCount"), "attestedMachineCount",
                           (json_int_t)count_of(st, "attestedMachineCount")));
    }
    json_decref(items);
    return rc;
}

/* The nodes of cl as the record lists them. */
static int nodes_json(json_t *out, mcg_cluster *cl, mcg_err *err)
{
    mcg_node *nodes = NULL;
    size_t n = 0;
    int rc = mcg_cluster_list_nodes(cl, &nodes, &n, err);
    for (size_t i = 0; !rc && i < n; i++) {
        json_t *o = json_pack("{s:s,s:s,s:s,s:s}", "name", nodes[i].name, "desired",
                              nodes[i].desired ? nodes[i].desired : "", "current",
                              nodes[i].current ? nodes[i].current : "", "state",
                              nodes[i].state ? nodes[i].state : "");
        /* so that HQ verifies each node's statement itself */
        if (nodes[i].node_key && *nodes[i].node_key && nodes[i].attestation) {
            json_object_set_new(o, "nodeKey", json_string(nodes[i].node_key));
            json_object_set_new(o, "attestation", json_string(nodes[i].attestation));
        }
        json_array_append_new(out, o);
    }
    mcg_nodes_free(nodes, n);
    return rc;
}

/* The status document as an object (a new reference), or NULL with err. */
static json_t *status_obj(mcg_repo *r, mcg_cluster *cl, const char *site, int64_t now, mcg_err *err)
{
    char source[MCG_SHA_HEX + 1] = "", rendered[MCG_SHA_HEX + 1] = "", when[32];
    mcg_rendered_log log = {0};
    git_oid oid;
    char *ref = mcg_sprintf("refs/heads/%s", mcg_repo_rendered_branch(r));
    mcg_gitops_verified_mark(r, NULL, source);
    if (git_reference_name_to_id(&oid, mcg_repo_git(r), ref) == 0) {
        git_oid_tostr(rendered, sizeof(rendered), &oid);
        mcg_gitops_log(&log, r, NULL);
    }
    free(ref);
    json_t *pools = json_array(), *nodes = json_array();
    int rc = pools_json(pools, cl, &log, err);
    if (!rc)
        rc = nodes_json(nodes, cl, err);
    mcg_rendered_log_free(&log);
    if (rc) {
        json_decref(pools);
        json_decref(nodes);
        return NULL;
    }
    return json_pack("{s:s,s:s,s:s,s:I,s:s,s:s,s:s,s:o,s:o}", "apiVersion", MCG_API_SITE, "kind",
                     "SiteStatus", "site", site, "time", (json_int_t)now, "reportedAt",
                     mcg_time_iso(when, now), "source", source, "rendered", rendered, "pools",
                     pools, "nodes", nodes);
}

json_t *mcg_site_record_read(git_repository *g, const git_oid *id)
{
    git_commit *commit = NULL;
    git_tree *tree = NULL;
    git_tree_entry *ent = NULL;
    git_blob *blob = NULL;
    json_t *doc = NULL;
    if (git_commit_lookup(&commit, g, id) == 0 && git_commit_tree(&tree, commit) == 0 &&
        git_tree_entry_bypath(&ent, tree, "status.json") == 0 &&
        git_blob_lookup(&blob, g, git_tree_entry_id(ent)) == 0 &&
        git_blob_rawsize(blob) <= MCG_SITE_MAX_STATUS)
        mcg_json_parse(&doc, "status.json", git_blob_rawcontent(blob),
                       (size_t)git_blob_rawsize(blob), NULL);
    git_blob_free(blob);
    git_tree_entry_free(ent);
    git_tree_free(tree);
    git_commit_free(commit);
    return doc;
}

/* Equal status, the time aside. */
static bool same_status(const json_t *a, const json_t *b)
{
    json_t *x = json_deep_copy(a), *y = json_deep_copy(b);
    json_object_del(x, "time");
    json_object_del(x, "reportedAt");
    json_object_del(y, "time");
    json_object_del(y, "reportedAt");
    bool eq = json_equal(x, y);
    json_decref(x);
    json_decref(y);
    return eq;
}

/* The site must be declared at r's verified commit, with key_file's public key. */
static int check_declared(mcg_repo *r, const char *site, const char *key_file, mcg_err *err)
{
    char mark[MCG_SHA_HEX + 1], *pub = NULL, *pubpath = mcg_sprintf("%s.pub", key_file);
    mcg_model *m = NULL;
    mcg_diags d = {0};
    size_t len = 0;
    int rc = 0;
    if (!mcg_gitops_verified_mark(r, NULL, mark))
        rc = mcg_err_set(err, MCG_ENOTFOUND,
                         "nothing verified in this repository yet (render or import first)");
    else if ((rc = mcg_gitops_load_commit(&m, r, mark, &d, err)) == 0) {
        const mcg_site *s = mcg_model_find_site(m, site);
        if (!s)
            rc =
                mcg_err_set(err, MCG_ENOTFOUND,
                            "site '%s' is not declared at %.12s (sites/%s.yaml)", site, mark, site);
        else if ((rc = mcg_read_file(pubpath, 64 * 1024, &pub, &len, err)) == 0) {
            size_t a = strcspn(s->status_key, " "), b = strcspn(s->status_key + a + 1, " ");
            if (strncmp(pub, s->status_key, a + 1 + b) != 0 ||
                (pub[a + 1 + b] != ' ' && pub[a + 1 + b] != '\n' && pub[a + 1 + b]))
                rc = mcg_err_set(err, MCG_ETRUST,
                                 "%s is not site '%s''s statusKey at %.12s (sites/%s.yaml)",
                                 pubpath, site, mark, site);
        }
    }
    mcg_model_free(m);
    mcg_diags_free(&d);
    free(pub);
    free(pubpath);
    return rc;
}

/* A signed commit of the tree holding status.json = doc on parent (may be NULL). */
static int commit_record(git_oid *out, mcg_repo *r, const mcg_buf *doc, const git_commit *parent,
                         const char *site, int64_t now, const char *key_file, mcg_err *err)
{
    git_repository *g = mcg_repo_git(r);
    git_oid blob, tree_id;
    git_treebuilder *tb = NULL;
    git_tree *tree = NULL;
    git_signature *who = NULL;
    git_buf buf = {0};
    char *armored = NULL, *msg = NULL, when[32];
    mcg_ssh_signer signer = {0};
    int rc = 0;
    if (git_blob_create_from_buffer(&blob, g, doc->ptr, doc->len) != 0 ||
        git_treebuilder_new(&tb, g, NULL) != 0 ||
        git_treebuilder_insert(NULL, tb, "status.json", &blob, GIT_FILEMODE_BLOB) != 0 ||
        git_treebuilder_write(&tree_id, tb) != 0 || git_tree_lookup(&tree, g, &tree_id) != 0 ||
        git_signature_new(&who, "mcgit site", "mcgit-site@localhost", (git_time_t)now, 0) != 0) {
        rc = mcg_git_err(err, "status record");
        goto out;
    }
    msg = mcg_sprintf("Status of site %s at %s\n", site, mcg_time_iso(when, now));
    const git_commit *parents[1] = {parent};
    if (git_commit_create_buffer(&buf, g, who, who, NULL, msg, tree, parent ? 1 : 0, parents) !=
        0) {
        rc = mcg_git_err(err, "status record");
        goto out;
    }
    if ((rc = mcg_ssh_signer_init(&signer, r, key_file, err)) != 0)
        goto out;
    signer.ns = MCG_SITE_NS;
    if ((rc = mcg_ssh_signer_sign(&armored, buf.ptr, buf.size, &signer, err)) != 0)
        goto out;
    if (git_commit_create_with_signature(out, g, buf.ptr, armored, "gpgsig") != 0)
        rc = mcg_git_err(err, "status record");
out:
    mcg_ssh_signer_free(&signer);
    free(armored);
    free(msg);
    git_buf_dispose(&buf);
    git_signature_free(who);
    git_tree_free(tree);
    git_treebuilder_free(tb);
    return rc;
}

int mcg_site_record(mcg_site_record_result *res, mcg_repo *r, mcg_cluster *cl, const char *site,
                    const char *key_file, int64_t now, bool force, mcg_err *err)
{
    git_repository *g = mcg_repo_git(r);
    char *ref = mcg_sprintf(MCG_SITE_REF_PREFIX "%s", site);
    git_oid prev, id;
    git_commit *parent = NULL;
    git_reference *moved = NULL;
    json_t *doc = NULL, *old = NULL;
    mcg_buf text = MCG_BUF_INIT;
    int rc = 0;
    memset(res, 0, sizeof(*res));
    if (!mcg_site_name_ok(site)) {
        rc = mcg_err_set(err, MCG_EINVAL, "'%s' is not a site name", site);
        goto out;
    }
    if ((rc = check_declared(r, site, key_file, err)) != 0)
        goto out;
    bool have = git_reference_name_to_id(&prev, g, ref) == 0;
    if (have && git_commit_lookup(&parent, g, &prev) != 0) {
        rc = mcg_git_err(err, ref);
        goto out;
    }
    if (!(doc = status_obj(r, cl, site, now, err))) {
        rc = err && err->code ? err->code : MCG_EIO;
        goto out;
    }
    if (have && !force && (old = mcg_site_record_read(g, &prev)) && same_status(old, doc)) {
        res->unchanged = true;
        goto out;
    }
    if ((rc = mcg_json_canonical(doc, &text, err)) != 0 ||
        (rc = commit_record(&id, r, &text, parent, site, now, key_file, err)) != 0)
        goto out;
    if ((have ? git_reference_create_matching(&moved, g, ref, &id, 1, &prev, "mcgit site record")
              : git_reference_create(&moved, g, ref, &id, 0, "mcgit site record")) != 0) {
        rc = mcg_git_err(err, ref);
        goto out;
    }
    git_oid_tostr(res->commit, sizeof(res->commit), &id);
out:
    git_reference_free(moved);
    git_commit_free(parent);
    json_decref(doc);
    json_decref(old);
    mcg_buf_free(&text);
    free(ref);
    return rc;
}
