/*
 * receive.c — what a push may do to a config repo (the pre-receive hook).
 *
 * The source branch moves only forward, onto history whose every new commit
 * verifies (mcg_gitops_verify, with this host's clock as the arrival time)
 * and whose new tree renders. Refs mcgit owns — everything under refs/mcgit/ and the
 * rendered branch — cannot be created, moved or deleted by a push. A tag
 * reaches history that bundles carry, so its history is verified the same
 * way and it never moves. An accepted source push is answered with its plan
 * (gitops/plan.c), one "plan: ..." line each. Any other ref (a feature branch) is accepted and
 * read by nothing: not by rendering, not by the controller, not by
 * `bundle create` unless named; a push to another branch is answered with a
 * "note: ..." line naming the source branch.
 *
 * The hooks hand over what git's receive-pack writes to them, one
 * "<old> <new> <ref>" line per updated ref; a line that does not parse fails
 * the pre-receive hook closed. The post-receive hook renders the source
 * branch's new tip. Both answer in lines for the pusher (mcg_diags): the CLI
 * only prints them.
 */
#include "gitops/gitops_int.h"

#include <stdlib.h>
#include <string.h>

static bool is_zero(const char *sha)
{
    return strspn(sha, "0") == strlen(sha);
}

/* One refusal line per bad commit of a verified range. */
static int verify_range(mcg_repo *r, const mcg_signers *root, const char *ref, const char *tip,
                        const char *since, int64_t now, int64_t tip_now, const char *approvals,
                        mcg_diags *out)
{
    mcg_verify_report rep = {0};
    mcg_err err = {0};
    mcg_verify_opts o = {
        .since = since, .now = now, .tip_now = now ? 0 : tip_now, .approvals = approvals};
    int rc = 0;
    if (mcg_gitops_verify(&rep, r, tip, &o, root, &err) != 0) {
        mcg_diags_add(out, "refusing %s: %s", ref, err.msg);
        return MCG_EIO;
    }
    for (size_t i = 0; i < rep.n; i++) {
        const mcg_verdict *v = &rep.v[i];
        if (!v->good)
            mcg_diags_add(out, "refusing %s: commit %.12s: %s", ref, v->sha, v->reason);
    }
    if (rep.nbad)
        rc = MCG_ETRUST;
    for (size_t i = 0; i < rep.n; i++)
        if (!rep.v[i].good && !strcmp(rep.v[i].reason, MCG_REASON_UNSIGNED)) {
            mcg_diags_add(out, "hint: sign the tip with `git commit --amend -S --no-edit` (older "
                               "commits: `git rebase --exec 'git commit --amend -S --no-edit' "
                               "BASE`) and push again");
            break;
        }
    mcg_verify_report_free(&rep);
    return rc;
}

/* git_tree_walk callback: every blob's path into the strv. */
static int add_blob_path(const char *root, const git_tree_entry *e, void *arg)
{
    if (git_tree_entry_type(e) == GIT_OBJECT_BLOB) {
        char *p = mcg_sprintf("%s%s", root, git_tree_entry_name(e));
        mcg_strv_push(arg, p);
        free(p);
    }
    return 0;
}

/*
 * The pushed tree's .mcgit/policy.yaml, if any: it must parse (paths
 * normalised as git does; pathspec magic and paths leaving the tree
 * refused) — it is the policy every later commit is judged by — and each
 * path pattern matching no file is a warning.
 */
static int check_policy(mcg_repo *r, const char *sha, const char *ref, mcg_diags *out)
{
    git_oid oid;
    git_commit *c = NULL;
    git_tree *tree = NULL;
    char *data = NULL;
    size_t len = 0;
    int rc = 0;
    if (git_oid_fromstr(&oid, sha) != 0 || git_commit_lookup(&c, r->git, &oid) != 0 ||
        git_commit_tree(&tree, c) != 0 ||
        mcg_git_read_path(&data, &len, r->git, tree, ".mcgit/policy.yaml", NULL) != 0)
        goto out;
    mcg_signpolicy *p = NULL;
    mcg_diags d = {0};
    if (mcg_signpolicy_parse(&p, ".mcgit/policy.yaml", data, len, &d) != 0) {
        for (size_t i = 0; i < d.count; i++)
            mcg_diags_add(out, "refusing %s: %s", ref, d.msgs[i]);
        rc = MCG_EINVAL;
    } else {
        mcg_strv files = {0}, lines = {0};
        git_tree_walk(tree, GIT_TREEWALK_PRE, add_blob_path, &files);
        mcg_signpolicy_unmatched(p, &files, &lines);
        for (size_t i = 0; i < lines.n; i++)
            mcg_diags_add(out, "%.12s: warning: .mcgit/policy.yaml: %s", sha, lines.v[i]);
        mcg_strv_free(&lines);
        mcg_strv_free(&files);
    }
    mcg_diags_free(&d);
    mcg_signpolicy_free(p);
out:
    free(data);
    git_tree_free(tree);
    git_commit_free(c);
    return rc;
}

static int check_source(mcg_repo *r, const mcg_signers *root, const char *old, const char *new,
                        const char *ref, int64_t now, const char *approvals, mcg_diags *out)
{
    if (is_zero(new)) {
        mcg_diags_add(out, "refusing %s: the source branch cannot be deleted", ref);
        return MCG_ETRUST;
    }
    bool first = is_zero(old);
    if (!first && !mcg_repo_descends(r, new, old)) {
        mcg_diags_add(out, "refusing %s: %.12s is not a fast-forward of %.12s", ref, new, old);
        return MCG_ECONFLICT;
    }
    /* The branch's current tip passed this check when it was pushed. */
    /* A first push: judged by its own times, but its newest commit must be
     * valid now (tip_now). */
    int rc =
        verify_range(r, root, ref, new, first ? NULL : old, first ? 0 : now, now, approvals, out);
    if (rc)
        return rc;
    mcg_model *m = NULL;
    mcg_render *rd = NULL;
    mcg_diags d = {0};
    mcg_err err = {0};
    if (mcg_gitops_load_commit(&m, r, new, &d, &err) == 0)
        mcg_render_model(&rd, m, &d);
    /* what Ignition only warns about is shown, not refused (unless the repo
     * asks for warnings: error, when they are in d already) */
    if (m && !m->settings.warnings_as_errors)
        for (size_t i = 0; i < m->warnings.count; i++)
            mcg_diags_add(out, "%.12s: warning: %s", new, m->warnings.msgs[i]);
    if (check_policy(r, new, ref, out) != 0)
        rc = MCG_EINVAL;
    mcg_diags_sort(&d); /* by file, then line: as `mcgit validate` prints them */
    for (size_t i = 0; i < d.count; i++)
        mcg_diags_add(out, "refusing %s: %s", ref, d.msgs[i]);
    if (d.count)
        rc = MCG_EINVAL;
    /* accepted: what it will do, as `mcgit plan` prints it (no cluster here) */
    mcg_commit_plan *p = NULL;
    if (rc == 0 && mcg_gitops_commit_plan_make(&p, r, new, m, rd, &err) == 0) {
        m = NULL; /* transferred */
        rd = NULL;
        mcg_strv lines = {0};
        mcg_commit_plan_unreconcilable(p, &lines);
        for (size_t i = 0; i < lines.n; i++)
            mcg_diags_add(out, "refusing %s: %s", ref, lines.v[i]);
        if (lines.n)
            rc = MCG_EINVAL;
        mcg_strv_free(&lines);
        mcg_commit_plan_lines(p, &lines);
        for (size_t i = 0; i < lines.n; i++)
            mcg_diags_add(out, "plan: %s", lines.v[i]);
        mcg_strv_free(&lines);
    } else if (rc == 0) {
        mcg_diags_add(out, "plan: not available: %s", err.msg);
    }
    mcg_commit_plan_free(p);
    mcg_diags_free(&d);
    mcg_render_free(rd);
    mcg_model_free(m);
    return rc;
}

static int check_tag(mcg_repo *r, const mcg_signers *root, const char *old, const char *new,
                     const char *ref, int64_t now, const char *approvals, mcg_diags *out)
{
    char sha[MCG_SHA_HEX + 1], cur[MCG_SHA_HEX + 1];
    mcg_err err = {0};
    if (is_zero(new))
        return 0; /* deleting a tag: nothing reads tags */
    if (!is_zero(old)) {
        mcg_diags_add(out, "refusing %s: tags never move (%.12s -> %.12s)", ref, old, new);
        return MCG_ECONFLICT;
    }
    if (mcg_repo_resolve(r, new, sha, &err) != 0) {
        mcg_diags_add(out, "refusing %s: %.12s is not a commit or a tag of one", ref, new);
        return MCG_EINVAL;
    }
    char *src = mcg_sprintf("refs/heads/%s", r->source_branch);
    bool held = mcg_repo_resolve(r, src, cur, NULL) == 0;
    free(src);
    return verify_range(r, root, ref, sha, NULL, held ? now : 0, 0, approvals, out);
}

/*
 * Check one ref update of a push ("<old> <new> <ref>" as git's pre-receive
 * hook reads them; all-zero ids for a create or delete) at time now. Returns
 * 0 when it may go ahead, else the first refusal's code with one line per
 * reason ("refusing <ref>: ...") added to out:
 *   - refs under refs/mcgit/ and the rendered branch: never by a push;
 *   - the source branch: not deleted, fast-forward only, every new commit
 *     verified (arrival checks at now unless the branch is new), and the
 *     new tree loads and renders; when accepted, its plan (mcg_commit_plan_lines)
 *     follows as "plan: ..." lines;
 *   - tags (under refs/tags/): created only, their history verified likewise;
 *   - refs/notes/mcgit-approvals: only grows (mcg_gitops_approvals_grow);
 *   - anything else: accepted and read by nothing; another branch (not
 *     deleted) gets one "note: <branch> is not the source branch (<source>):
 *     ..." line.
 * approvals: the value the same push gives refs/notes/mcgit-approvals
 * (approvals for the two-person rule pushed with the branch), or NULL for
 * the ref's current value.
 */
static int mcg_gitops_receive_check(mcg_repo *r, const mcg_signers *root, const char *old,
                                    const char *new, const char *ref, int64_t now,
                                    const char *approvals, mcg_diags *out)
{
    char *src = mcg_sprintf("refs/heads/%s", r->source_branch);
    char *ren = mcg_sprintf("refs/heads/%s", r->rendered_branch);
    int rc = 0;
    if (!strncmp(ref, "refs/mcgit/", 11)) {
        mcg_diags_add(out, "refusing %s: refs/mcgit/ is written by mcgit only", ref);
        rc = MCG_ETRUST;
    } else if (!strcmp(ref, ren)) {
        mcg_diags_add(out, "refusing %s: the rendered branch is written by mcgit only", ref);
        rc = MCG_ETRUST;
    } else if (!strcmp(ref, src)) {
        rc = check_source(r, root, old, new, ref, now, approvals, out);
    } else if (!strncmp(ref, "refs/tags/", 10)) {
        rc = check_tag(r, root, old, new, ref, now, approvals, out);
    } else if (!strcmp(ref, MCG_APPROVALS_REF)) {
        mcg_err err = {0};
        if ((rc = mcg_gitops_approvals_grow(r, is_zero(old) ? NULL : old, new, &err)) != 0)
            mcg_diags_add(out, "refusing %s", err.msg);
    } else if (!strncmp(ref, "refs/heads/", 11) && !is_zero(new)) {
        /* accepted, but say so: a push to the wrong branch is a common slip */
        mcg_diags_add(out,
                      "note: %s is not the source branch (%s): accepted, nothing will be "
                      "rendered or rolled out",
                      ref + 11, r->source_branch);
    }
    free(src);
    free(ren);
    return rc;
}

/*
 * One update line as git's receive-pack writes it to the hooks: "<old>
 * <new> <ref>\n", ids of 40 hex digits, a ref name without spaces or
 * control characters. Anything else — a truncated or overlong line, extra
 * fields, other ids — is not parsed at all (the hook then fails closed).
 */
bool mcg_gitops_receive_parse_line(const char *line, size_t len, char old[MCG_SHA_HEX + 1],
                                   char new[MCG_SHA_HEX + 1], char ref[MCG_REFNAME_MAX])
{
    static const char hex[] = "0123456789abcdef";
    if (len < 2 * MCG_SHA_HEX + 4 || line[len - 1] != '\n' ||
        len - 2 * MCG_SHA_HEX - 3 >= MCG_REFNAME_MAX)
        return false;
    for (size_t i = 0; i < 2 * MCG_SHA_HEX + 1; i++) {
        bool sep = i == MCG_SHA_HEX;
        if (sep ? line[i] != ' ' : !line[i] || !strchr(hex, line[i]))
            return false;
    }
    if (line[2 * MCG_SHA_HEX + 1] != ' ')
        return false;
    const char *r = line + 2 * MCG_SHA_HEX + 2;
    size_t rl = len - 2 * MCG_SHA_HEX - 3;
    for (size_t i = 0; i < rl; i++)
        if ((unsigned char)r[i] <= ' ' || r[i] == 0x7f)
            return false;
    memcpy(old, line, MCG_SHA_HEX);
    old[MCG_SHA_HEX] = '\0';
    memcpy(new, line + MCG_SHA_HEX + 1, MCG_SHA_HEX);
    new[MCG_SHA_HEX] = '\0';
    memcpy(ref, r, rl);
    ref[rl] = '\0';
    return true;
}

/*
 * Split input into lines as getline(3) does (each with its '\n', the last
 * one perhaps without), keep those that parse in lines and add "<verb>
 * push: cannot parse update line N: '...'" to out for each other one.
 * Returns 0, or MCG_EINVAL when a line did not parse.
 */
static int parse_updates(mcg_strv *lines, const char *input, size_t len, const char *verb,
                         mcg_diags *out)
{
    char old[MCG_SHA_HEX + 1], new[MCG_SHA_HEX + 1], ref[MCG_REFNAME_MAX];
    unsigned lineno = 0;
    int rc = 0;
    for (size_t pos = 0; pos < len;) {
        const char *nl = memchr(input + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - input - pos) + 1 : len - pos;
        char *line = mcg_malloc(n + 1);
        memcpy(line, input + pos, n);
        line[n] = '\0';
        pos += n;
        lineno++;
        if (mcg_gitops_receive_parse_line(line, n, old, new, ref)) {
            mcg_strv_push(lines, line);
        } else {
            /* fail closed: an update not understood is not let through */
            mcg_diags_add(out, "%s push: cannot parse update line %u: '%.80s'", verb, lineno,
                          strtok(line, "\n") ? line : "");
            rc = MCG_EINVAL;
        }
        free(line);
    }
    return rc;
}

int mcg_gitops_pre_receive(mcg_repo *r, const mcg_signers *root, const char *input, size_t len,
                           int64_t now, mcg_diags *out)
{
    char old[MCG_SHA_HEX + 1], new[MCG_SHA_HEX + 1], ref[MCG_REFNAME_MAX];
    mcg_strv lines = {0};
    char approvals[MCG_SHA_HEX + 1] = "";
    int rc = parse_updates(&lines, input, len, "refusing", out);
    /* All updates first: approvals pushed with the branch count for it. */
    for (size_t i = 0; i < lines.n; i++) {
        mcg_gitops_receive_parse_line(lines.v[i], strlen(lines.v[i]), old, new, ref);
        if (!strcmp(ref, MCG_APPROVALS_REF) && !is_zero(new))
            snprintf(approvals, sizeof(approvals), "%s", new);
    }
    for (size_t i = 0; i < lines.n; i++) {
        mcg_gitops_receive_parse_line(lines.v[i], strlen(lines.v[i]), old, new, ref);
        int one = mcg_gitops_receive_check(r, root, old, new, ref, now,
                                           approvals[0] ? approvals : NULL, out);
        if (one && !rc)
            rc = one;
    }
    mcg_strv_free(&lines);
    return rc;
}

int mcg_gitops_post_receive(bool *source_moved, mcg_repo *r, const mcg_signers *root,
                            const char *input, size_t len, mcg_diags *out)
{
    char old[MCG_SHA_HEX + 1], new[MCG_SHA_HEX + 1], ref[MCG_REFNAME_MAX];
    mcg_strv lines = {0};
    char *src = mcg_sprintf("refs/heads/%s", r->source_branch);
    int rc = parse_updates(&lines, input, len, "ignoring", out);
    *source_moved = false;
    for (size_t i = 0; i < lines.n; i++) {
        mcg_gitops_receive_parse_line(lines.v[i], strlen(lines.v[i]), old, new, ref);
        if (!strcmp(ref, src) && !is_zero(new))
            *source_moved = true;
    }
    mcg_strv_free(&lines);
    free(src);
    if (!*source_moved)
        return rc;
    mcg_render_result res;
    mcg_diags d = {0};
    mcg_err err = {0};
    rc = mcg_gitops_render(&res, NULL, NULL, r, NULL, root, &d, &err);
    mcg_diags_sort(&d);
    for (size_t i = 0; i < d.count; i++)
        mcg_diags_add(out, "%s", d.msgs[i]);
    if (rc)
        mcg_diags_add(out, "render failed: %s", err.msg);
    else if (res.created)
        mcg_diags_add(out, "rendered source commit %.12s: branch %s is now %.12s", res.source,
                      r->rendered_branch, res.rendered);
    mcg_diags_free(&d);
    return rc;
}
