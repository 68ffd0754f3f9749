/*
 * approvals.c — the two-person rule of .mcgit/policy.yaml.
 *
 * A commit that changes a path an `approvals` rule names needs signatures
 * from `required` distinct trusted principals: its own commit signature
 * counts as one, the others are approvals — SSH signatures in namespace
 * mcgit-approval over "<commit id>\n", made by `mcgit approve` and kept as
 * the commit's note in refs/notes/mcgit-approvals (so they travel with
 * `git push` and in bundles). The policy and the signers are those a parent
 * puts in force, exactly as for the commit signature: the rule is checked
 * once per parent, against the paths the commit changes relative to that
 * parent, so a change to the policy obeys the policy before it.
 */
#include "fsio/fsio.h"
#include "gitops/gitops_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BEGIN_SIG "-----BEGIN SSH SIGNATURE-----"
#define END_SIG "-----END SSH SIGNATURE-----"

void mcg_policy_cache_free(mcg_policy_cache *pc)
{
    mcg_signpolicy_free(pc->policy);
    memset(pc, 0, sizeof(*pc));
}

/*
 * The policy the parent tree puts in force (NULL: none), cached by blob.
 * A policy that does not parse is an error: its commit should not have been
 * accepted, and a commit on top of it cannot be judged.
 */
static int policy_of(const mcg_signpolicy **out, mcg_policy_cache *pc, git_repository *repo,
                     const git_tree *tree, char *why, size_t whylen)
{
    git_tree_entry *ent = NULL;
    git_blob *blob = NULL;
    int rc = 0;
    *out = NULL;
    if (git_tree_entry_bypath(&ent, tree, ".mcgit/policy.yaml") != 0)
        return 0;
    if (git_tree_entry_type(ent) != GIT_OBJECT_BLOB) {
        snprintf(why, whylen, "the parent's .mcgit/policy.yaml is not a file");
        rc = MCG_ETRUST;
        goto out;
    }
    const git_oid *id = git_tree_entry_id(ent);
    if (!(pc->valid && git_oid_equal(&pc->blob, id))) {
        mcg_signpolicy_free(pc->policy);
        memset(pc, 0, sizeof(*pc));
        pc->valid = true;
        pc->blob = *id;
        mcg_diags d = {0};
        if (git_blob_lookup(&blob, repo, id) != 0)
            snprintf(pc->error, sizeof(pc->error),
                     "the parent's .mcgit/policy.yaml cannot be read");
        else if (mcg_signpolicy_parse(&pc->policy, ".mcgit/policy.yaml", git_blob_rawcontent(blob),
                                      (size_t)git_blob_rawsize(blob), &d) != 0)
            snprintf(pc->error, sizeof(pc->error), "the parent's %s",
                     d.count ? d.msgs[0] : ".mcgit/policy.yaml does not parse");
        mcg_diags_free(&d);
    }
    if (pc->error[0]) {
        snprintf(why, whylen, "%s", pc->error);
        rc = MCG_ETRUST;
    } else {
        *out = pc->policy;
    }
out:
    git_blob_free(blob);
    git_tree_entry_free(ent);
    return rc;
}

typedef struct strictest {
    const mcg_signpolicy *p;
    const mcg_signpolicy_rule *rule;
    char path[256];
} strictest;

static int on_delta(const git_diff_delta *d, float progress, void *arg)
{
    strictest *s = arg;
    (void)progress;
    const char *paths[2] = {d->old_file.path, d->new_file.path};
    for (int i = 0; i < 2; i++) {
        if (!paths[i])
            continue;
        const mcg_signpolicy_rule *r = mcg_signpolicy_rule_for(s->p, paths[i]);
        if (r && (!s->rule || r->required > s->rule->required)) {
            s->rule = r;
            snprintf(s->path, sizeof(s->path), "%s", paths[i]);
        }
    }
    return 0;
}

/* Count distinct signers (keys; a certificate by its CA and key id, see
 * mcg_sig_result) among the note's approvals that verify. */
static void count_approvals(mcg_strv *principals, mcg_strv *skipped, const char *note,
                            const mcg_signers *set, const char *sha, int64_t when, int64_t now)
{
    char msg[MCG_SHA_HEX + 2];
    snprintf(msg, sizeof(msg), "%s\n", sha);
    for (const char *p = note; (p = strstr(p, BEGIN_SIG)) != NULL;) {
        const char *end = strstr(p, END_SIG);
        if (!end)
            break;
        size_t len = (size_t)(end - p) + strlen(END_SIG);
        mcg_sig_result res = {0};
        mcg_err e = {0};
        char *why = NULL;
        if (mcg_sshsig_verify_ns(&res, set, p, len, msg, MCG_SHA_HEX + 1, when,
                                 MCG_APPROVAL_NAMESPACE, &e) != 0 ||
            (now && mcg_sshsig_verify_ns(&res, set, p, len, msg, MCG_SHA_HEX + 1, now,
                                         MCG_APPROVAL_NAMESPACE, &e) != 0))
            why = mcg_sprintf("approval not counted: %s", e.msg);
        else if (mcg_strv_contains(principals, res.signer))
            why = mcg_sprintf("approval by %s not counted: %s signed already", res.principal,
                              principals->n && !strcmp(principals->v[0], res.signer)
                                  ? "its key (the commit's own)"
                                  : "its key");
        else
            mcg_strv_push(principals, res.signer);
        if (why)
            mcg_strv_push(skipped, why);
        free(why);
        p += len;
    }
}

int mcg_approvals_check(char *why, size_t whylen, git_repository *repo, const git_commit *c,
                        const git_commit *parent, const mcg_signers *set, const char *commit_signer,
                        const git_oid *notes, int64_t now, mcg_policy_cache *pc)
{
    git_tree *ptree = NULL, *ctree = NULL;
    git_diff *diff = NULL;
    git_note *note = NULL;
    mcg_strv principals = {0}, skipped = {0};
    const mcg_signpolicy *policy = NULL;
    int rc = MCG_ETRUST;
    char sha[MCG_SHA_HEX + 1];
    git_oid_tostr(sha, sizeof(sha), git_commit_id(c));
    if (git_commit_tree(&ptree, parent) != 0 || git_commit_tree(&ctree, c) != 0) {
        snprintf(why, whylen, "cannot read the trees for the approvals policy");
        goto out;
    }
    if (policy_of(&policy, pc, repo, ptree, why, whylen) != 0)
        goto out;
    rc = 0;
    if (!policy || !policy->nrules)
        goto out;
    strictest s = {policy, NULL, ""};
    if (git_diff_tree_to_tree(&diff, repo, ptree, ctree, NULL) != 0 ||
        git_diff_foreach(diff, on_delta, NULL, NULL, NULL, &s) != 0) {
        snprintf(why, whylen, "cannot compare the commit with its parent");
        rc = MCG_ETRUST;
        goto out;
    }
    if (!s.rule || s.rule->required <= 1)
        goto out;
    mcg_strv_push(&principals, commit_signer);
    if (notes) {
        git_commit *nc = NULL;
        if (git_commit_lookup(&nc, repo, notes) == 0) {
            if (git_note_commit_read(&note, repo, nc, git_commit_id(c)) != 0)
                note = NULL;
            git_commit_free(nc);
        }
    }
    if (note && git_note_message(note))
        count_approvals(&principals, &skipped, git_note_message(note), set, sha,
                        (int64_t)git_commit_committer(c)->when.time, now);
    if ((int)principals.n < s.rule->required) {
        size_t missing = (size_t)s.rule->required - principals.n;
        mcg_buf b = MCG_BUF_INIT;
        for (size_t i = 0; i < skipped.n; i++) {
            mcg_buf_puts(&b, "; ");
            mcg_buf_puts(&b, skipped.v[i]);
        }
        mcg_bfmt(why, whylen,
                 "approvals rule %zu (%s) needs %d distinct trusted signers, has %zu: %zu "
                 "approval%s missing (mcgit approve --repo R %.12s)%.*s",
                 s.rule->index, s.path, s.rule->required, principals.n, missing,
                 missing == 1 ? "" : "s", sha, (int)b.len, b.ptr ? b.ptr : "");
        mcg_buf_free(&b);
        rc = MCG_ETRUST;
    }
out:
    mcg_strv_free(&skipped);
    mcg_strv_free(&principals);
    git_note_free(note);
    git_diff_free(diff);
    git_tree_free(ctree);
    git_tree_free(ptree);
    return rc;
}

int mcg_gitops_approve(char note_commit[MCG_SHA_HEX + 1], char approved[MCG_SHA_HEX + 1],
                       mcg_repo *r, const char *rev, mcg_commit_sign_fn sign, void *sign_ctx,
                       mcg_err *err)
{
    git_oid oid, notes_tip, out;
    git_note *old = NULL;
    git_signature *who = NULL;
    char *armored = NULL, *text = NULL;
    char msg[MCG_SHA_HEX + 2];
    int rc;
    note_commit[0] = '\0';
    if ((rc = mcg_repo_resolve(r, rev, approved, err)) != 0)
        return rc;
    git_oid_fromstr(&oid, approved);
    snprintf(msg, sizeof(msg), "%s\n", approved);
    if ((rc = sign(&armored, msg, MCG_SHA_HEX + 1, sign_ctx, err)) != 0)
        goto out;
    if (git_signature_default(&who, r->git) != 0 &&
        git_signature_now(&who, "mcgit", "mcgit@localhost") != 0) {
        rc = mcg_git_err(err, "signature");
        goto out;
    }
    /* Add to what the note holds already: one approval per signature. */
    bool had = git_reference_name_to_id(&notes_tip, r->git, MCG_APPROVALS_REF) == 0;
    if (had && git_note_read(&old, r->git, MCG_APPROVALS_REF, &oid) != 0)
        old = NULL;
    const char *prev = old ? git_note_message(old) : "";
    if (strstr(prev, armored)) {
        rc = 0; /* already there: nothing written, note_commit stays "" */
        goto out;
    }
    size_t pl = strlen(prev);
    text = mcg_sprintf("%s%s%s", prev, pl && prev[pl - 1] != '\n' ? "\n" : "", armored);
    if (git_note_create(&out, r->git, MCG_APPROVALS_REF, who, who, &oid, text, 1) != 0) {
        rc = mcg_git_err(err, MCG_APPROVALS_REF);
        goto out;
    }
    if (git_reference_name_to_id(&notes_tip, r->git, MCG_APPROVALS_REF) == 0)
        git_oid_tostr(note_commit, MCG_SHA_HEX + 1, &notes_tip);
out:
    free(text);
    free(armored);
    git_note_free(old);
    git_signature_free(who);
    return rc;
}

/* Every note of old is in new, its text kept as the start of new's. */
static int notes_kept(git_repository *repo, git_commit *oc, git_commit *nc, mcg_err *err)
{
    git_note_iterator *it = NULL;
    git_oid blob_id, annotated;
    int rc = 0, g;
    if (git_note_commit_iterator_new(&it, oc) != 0)
        return mcg_git_err(err, MCG_APPROVALS_REF);
    while (!rc && (g = git_note_next(&blob_id, &annotated, it)) == 0) {
        git_note *note = NULL;
        git_blob *ob = NULL, *nb = NULL;
        if (git_note_commit_read(&note, repo, nc, &annotated) != 0 ||
            git_blob_lookup(&ob, repo, &blob_id) != 0 ||
            git_blob_lookup(&nb, repo, git_note_id(note)) != 0 ||
            git_blob_rawsize(nb) < git_blob_rawsize(ob) ||
            memcmp(git_blob_rawcontent(nb), git_blob_rawcontent(ob),
                   (size_t)git_blob_rawsize(ob)) != 0) {
            char a[MCG_SHA_HEX + 1], b[MCG_SHA_HEX + 1];
            git_oid_tostr(a, sizeof(a), git_commit_id(nc));
            git_oid_tostr(b, sizeof(b), &annotated);
            rc = mcg_err_set(err, MCG_ECONFLICT,
                             "%s: %.12s drops or rewrites the approvals of commit %.12s "
                             "(approvals only grow)",
                             MCG_APPROVALS_REF, a, b);
        }
        git_blob_free(nb);
        git_blob_free(ob);
        git_note_free(note);
    }
    if (!rc && g != GIT_ITEROVER)
        rc = mcg_git_err(err, MCG_APPROVALS_REF);
    git_note_iterator_free(it);
    return rc;
}

int mcg_gitops_approvals_grow(mcg_repo *r, const char *old, const char *new, mcg_err *err)
{
    git_oid oid, ooid;
    git_object *obj = NULL;
    git_commit *oc = NULL;
    int rc = 0;
    if (!new || git_oid_fromstr(&oid, new) != 0 || strspn(new, "0") == strlen(new))
        return mcg_err_set(err, MCG_ECONFLICT, "%s cannot be deleted (approvals only grow)",
                           MCG_APPROVALS_REF);
    if (git_object_lookup(&obj, r->git, &oid, GIT_OBJECT_ANY) != 0)
        return mcg_err_set(err, MCG_EINVAL, "%s: %.12s is missing", MCG_APPROVALS_REF, new);
    if (git_object_type(obj) != GIT_OBJECT_COMMIT) {
        rc = mcg_err_set(err, MCG_EINVAL, "%s must point to a notes commit, not a %s (%.12s)",
                         MCG_APPROVALS_REF, git_object_type2string(git_object_type(obj)), new);
        goto out;
    }
    if (!old || !old[0] || git_oid_fromstr(&ooid, old) != 0 || git_oid_equal(&ooid, &oid) ||
        strspn(old, "0") == strlen(old))
        goto out;
    if (git_commit_lookup(&oc, r->git, &ooid) != 0) /* not a commit before: now it is */
        goto out;
    if (git_graph_descendant_of(r->git, &oid, &ooid) != 1) {
        rc = mcg_err_set(err, MCG_ECONFLICT,
                         "%s: %.12s does not descend from %.12s: a rewind or rewrite "
                         "(approvals only grow)",
                         MCG_APPROVALS_REF, new, old);
        goto out;
    }
    rc = notes_kept(r->git, oc, (git_commit *)obj, err);
out:
    git_commit_free(oc);
    git_object_free(obj);
    return rc;
}

/* One allowed_signers text checked for key: a warning when its lines hold
 * the key but none admits approvals. */
static void ns_warning(mcg_strv *out, const char *name, const char *text, size_t len,
                       const mcg_signers *key)
{
    mcg_signers *set = NULL;
    char why[768];
    if (mcg_signers_parse(&set, name, text, len, NULL) != 0)
        return;
    if (mcg_signers_key_ns(set, key, MCG_APPROVAL_NAMESPACE, why, sizeof(why)) == 0) {
        char *w = mcg_sprintf("%s: this approval will not count", why);
        mcg_strv_push(out, w);
        free(w);
    }
    mcg_signers_free(set);
}

void mcg_gitops_approve_warnings(mcg_repo *r, const char *rev, const char *pubkey, size_t len,
                                 mcg_strv *out)
{
    size_t n = strcspn(pubkey, "\n");
    char *line = mcg_sprintf("key %.*s\n", (int)(n < len ? n : len), pubkey);
    mcg_signers *key = NULL;
    git_config *cfg = NULL;
    char sha[MCG_SHA_HEX + 1];
    if (mcg_signers_parse(&key, "key", line, strlen(line), NULL) != 0)
        goto out;
    /* the files a verifier would use: git's, the server's trust root */
    static const char *const keys[] = {"gpg.ssh.allowedSignersFile", "mcgit.trust"};
    if (git_repository_config_snapshot(&cfg, r->git) == 0)
        for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++) {
            git_buf b = GIT_BUF_INIT_CONST(NULL, 0);
            memset(&b, 0, sizeof(b));
            char *text = NULL;
            size_t tl = 0;
            if (git_config_get_path(&b, cfg, keys[i]) == 0 &&
                mcg_read_file(b.ptr, MCG_SIGNERS_MAX_TEXT, &text, &tl, NULL) == 0)
                ns_warning(out, b.ptr, text, tl, key);
            free(text);
            git_buf_dispose(&b);
        }
    /* and the repo's own signers, as the approved commit's parent has them */
    git_oid oid;
    git_commit *c = NULL, *p = NULL;
    git_tree *tree = NULL;
    char *text = NULL;
    size_t tl = 0;
    if (mcg_repo_resolve(r, rev, sha, NULL) == 0 && git_oid_fromstr(&oid, sha) == 0 &&
        git_commit_lookup(&c, r->git, &oid) == 0 && git_commit_parent(&p, c, 0) == 0 &&
        git_commit_tree(&tree, p) == 0 &&
        mcg_git_read_path(&text, &tl, r->git, tree, ".mcgit/allowed_signers", NULL) == 0)
        ns_warning(out, ".mcgit/allowed_signers", text, tl, key);
    free(text);
    git_tree_free(tree);
    git_commit_free(p);
    git_commit_free(c);
out:
    git_config_free(cfg);
    mcg_signers_free(key);
    free(line);
}
