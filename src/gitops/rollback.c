/*
 * rollback.c — a rollback is signed source history.
 *
 * `mcgit rollback REV` writes a commit on the source branch that puts back
 * the machineconfigs/ and pools/ of an earlier source commit, keeping
 * .mcgit/ (trust) and mcgit.yaml as they are, signed like any change. It is
 * pushed, bundled and verified like any change; content addressing brings
 * back the earlier rendered names, so nodes see the config they ran before.
 *
 * REV may name the target by its source commit, by a rendered commit from
 * any clone (rendered history is a pure function of source history, so a
 * rendered id made elsewhere is recomputed here, in memory), or by a
 * rendered config name. Signing is git's: `ssh-keygen -Y sign -n git -f KEY`
 * over the commit buffer, so every key type ssh-keygen knows, encrypted
 * keys and ssh-agent work.
 */
#include "gitops/gitops_int.h"
#include "osenv/osenv.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ------------------------------------------------------------ signing */

void mcg_ssh_signer_free(mcg_ssh_signer *s)
{
    if (!s)
        return;
    free(s->program);
    free(s->key);
    memset(s, 0, sizeof(*s));
}

/* A git config string, or NULL when unset (or unreadable). */
static char *config_string(git_config *cfg, const char *key)
{
    git_buf b = GIT_BUF_INIT_CONST(NULL, 0);
    memset(&b, 0, sizeof(b));
    char *v = NULL;
    if (git_config_get_string_buf(&b, cfg, key) == 0)
        v = mcg_strdup(b.ptr);
    git_buf_dispose(&b);
    return v;
}

int mcg_ssh_signer_init(mcg_ssh_signer *out, mcg_repo *r, const char *key_file, mcg_err *err)
{
    git_config *cfg = NULL;
    char *format = NULL, *key = NULL;
    int rc = 0;
    memset(out, 0, sizeof(*out));
    if (git_repository_config_snapshot(&cfg, r->git) != 0)
        return mcg_git_err(err, "git config");
    out->program = config_string(cfg, "gpg.ssh.program");
    if (!out->program || !*out->program) {
        free(out->program);
        out->program = mcg_strdup("ssh-keygen");
    }
    if (key_file) {
        out->key = mcg_strdup(key_file);
        goto out;
    }
    key = config_string(cfg, "user.signingkey");
    format = config_string(cfg, "gpg.format");
    if (!key || !*key) {
        rc = mcg_err_set(err, MCG_EINVAL,
                         "no signing key: pass --key FILE, or set git config gpg.format ssh and "
                         "user.signingkey FILE");
        goto out;
    }
    if (!format || strcmp(format, "ssh") != 0) {
        rc = mcg_err_set(err, MCG_EINVAL,
                         "git config gpg.format is '%s', not ssh: set gpg.format ssh, or pass "
                         "--key FILE",
                         format ? format : "openpgp");
        goto out;
    }
    if (!strncmp(key, "key::", 5) || !strncmp(key, "ssh-", 4)) {
        rc = mcg_err_set(err, MCG_EINVAL,
                         "git config user.signingkey holds a literal key: mcgit needs a key file "
                         "(pass --key FILE)");
        goto out;
    }
    if (key[0] == '~' && key[1] == '/') {
        const char *home = mcg_env_get("HOME");
        if (!home || !*home) {
            rc = mcg_err_set(err, MCG_EINVAL, "user.signingkey %s: HOME is not set", key);
            goto out;
        }
        out->key = mcg_sprintf("%s%s", home, key + 1);
    } else {
        out->key = key;
        key = NULL;
    }
out:
    free(key);
    free(format);
    git_config_free(cfg);
    if (rc)
        mcg_ssh_signer_free(out);
    return rc;
}

#define MAX_SIGNATURE (64 * 1024) /* an armored signature longer than this is refused */

/* What ssh-keygen writes on fd, up to MAX_SIGNATURE bytes (the rest is read and dropped). */
static void read_signature(int fd, mcg_buf *out)
{
    char chunk[4096];
    ssize_t n;
    while ((n = read(fd, chunk, sizeof(chunk))) > 0 || (n < 0 && errno == EINTR))
        if (n > 0 && out->len + (size_t)n <= MAX_SIGNATURE)
            mcg_buf_put(out, chunk, (size_t)n);
}

/* The SSH signature armor in out, as git stores it (without the final newline). */
static int take_armor(char **armored, mcg_buf *out, const char *program, mcg_err *err)
{
    mcg_buf_put(out, "", 1);
    if (strncmp(out->ptr, "-----BEGIN SSH SIGNATURE-----\n", 30) != 0 ||
        !strstr(out->ptr, "-----END SSH SIGNATURE-----"))
        return mcg_err_set(err, MCG_EINVAL, "signing: %s -Y sign wrote no SSH signature", program);
    size_t l = strlen(out->ptr);
    while (l && out->ptr[l - 1] == '\n')
        out->ptr[--l] = '\0';
    *armored = mcg_buf_detach(out, NULL);
    return 0;
}

/* The last non-empty line the signer wrote on its standard error (f), at most n-1 bytes. */
static void last_line(FILE *f, char *out, size_t n)
{
    char line[512];
    out[0] = '\0';
    if (!f || fflush(f) != 0 || fseek(f, 0, SEEK_SET) != 0)
        return;
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0])
            mcg_bfmt(out, n, "%s", line);
    }
}

int mcg_ssh_signer_sign(char **armored, const char *buf, size_t len, void *ctx, mcg_err *err)
{
    const mcg_ssh_signer *s = ctx;
    posix_spawn_file_actions_t fa;
    bool fa_init = false;
    FILE *in = NULL, *errf = NULL;
    char why[256];
    int pfd[2] = {-1, -1};
    pid_t pid = -1;
    mcg_buf out = MCG_BUF_INIT;
    int rc = 0;
    *armored = NULL;
    /* the buffer in an unnamed temp file as standard input: no pipe to deadlock on */
    if (!(in = tmpfile()) || fwrite(buf, 1, len, in) != len || fflush(in) != 0 ||
        lseek(fileno(in), 0, SEEK_SET) != 0) {
        rc = mcg_err_set_os(err, MCG_EIO, errno, "signing: temp file");
        goto out;
    }
    /* ssh-keygen's chatter ("Signing data on standard input") is kept out of
     * mcgit's output, as git keeps it; its last line explains a failure */
    if (!(errf = tmpfile()) || pipe2(pfd, O_CLOEXEC) != 0 ||
        posix_spawn_file_actions_init(&fa) != 0) {
        rc = mcg_err_set_os(err, MCG_EIO, errno, "signing");
        goto out;
    }
    fa_init = true;
    posix_spawn_file_actions_adddup2(&fa, fileno(in), 0);
    posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fileno(errf), 2);
    char *argv[] = {s->program, "-Y",   "sign", "-n", (char *)(s->ns ? s->ns : "git"),
                    "-f",       s->key, NULL};
    int src = posix_spawnp(&pid, s->program, &fa, NULL, argv, environ);
    close(pfd[1]);
    pfd[1] = -1;
    if (src != 0) {
        pid = -1;
        rc = mcg_err_set_os(err, MCG_EIO, src, "signing: cannot run %s", s->program);
        goto out;
    }
    read_signature(pfd[0], &out);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    pid = -1;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        last_line(errf, why, sizeof(why));
        rc = mcg_err_set(err, MCG_EINVAL, "signing with %s failed: %s -Y sign exited %d%s%s",
                         s->key, s->program, WIFEXITED(status) ? WEXITSTATUS(status) : 128,
                         why[0] ? ": " : "", why);
        goto out;
    }
    rc = take_armor(armored, &out, s->program, err);
out:
    if (pid > 0)
        waitpid(pid, NULL, 0);
    if (fa_init)
        posix_spawn_file_actions_destroy(&fa);
    if (pfd[0] >= 0)
        close(pfd[0]);
    if (pfd[1] >= 0)
        close(pfd[1]);
    if (in)
        fclose(in);
    if (errf)
        fclose(errf);
    mcg_buf_free(&out);
    return rc;
}

/* ------------------------------------------------------------ the target */

/* The source branch's tip; ENOTFOUND (with the branch's name) without one. */
static int source_tip(git_oid *tip, mcg_repo *r, mcg_err *err)
{
    char *ref = mcg_sprintf("refs/heads/%s", r->source_branch);
    int g = git_reference_name_to_id(tip, r->git, ref);
    free(ref);
    if (g != 0)
        return mcg_err_set(err, MCG_ENOTFOUND, "no source branch '%s'", r->source_branch);
    return 0;
}

/* Whether s has the shape of a rendered config name: rendered-<pool>-<32 hex>. */
static bool is_config_name(const char *s)
{
    size_t n = strlen(s);
    return n > 9 + 2 + 32 && !strncmp(s, "rendered-", 9) && s[n - 33] == '-' &&
           strspn(s + n - 32, "0123456789abcdef") == 32;
}

/* Whether s could abbreviate an object id: 4 to 40 lower-case hex digits. */
static bool is_hex_prefix(const char *s)
{
    size_t n = strlen(s);
    return n >= 4 && n <= MCG_SHA_HEX && strspn(s, "0123456789abcdef") == n;
}

/* Does rendered commit `rid`'s message list config name `name`? */
static bool renders_to(git_repository *g, const git_oid *rid, const char *name)
{
    git_commit *c = NULL;
    bool yes = false;
    if (git_commit_lookup(&c, g, rid) != 0)
        return false;
    const char *msg = git_commit_message(c), *body = strstr(msg, "\n\n");
    size_t nl = strlen(name);
    for (const char *p = body; p && *p && !yes; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        size_t ll = strcspn(p, "\n");
        const char *colon = memchr(p, ':', ll);
        yes = colon && (size_t)(p + ll - (colon + 2)) == nl && !strncmp(colon + 2, name, nl);
    }
    git_commit_free(c);
    return yes;
}

/*
 * Compute the pure rendered history of the source branch in memory and find
 * REV in it: a config name (newest source commit rendering to it) or a
 * rendered id or unique prefix.
 */
static int target_by_history(git_oid *target, mcg_repo *r, const git_oid *tip, const char *rev,
                             mcg_err *err)
{
    mcg_repo *s = NULL;
    mcg_chain *ch = NULL;
    int rc;
    bool name = is_config_name(rev);
    if ((rc = mcg_repo_scratch(&s, NULL, r, err)) != 0)
        return rc;
    if ((rc = mcg_chain_new(&ch, s, NULL, err)) != 0 ||
        (rc = mcg_chain_render(NULL, ch, tip, NULL, NULL, err)) != 0)
        goto out;
    size_t found = 0;
    for (size_t i = mcg_chain_count(ch); i-- > 0;) {
        git_oid so, ro;
        mcg_chain_at(ch, i, &so, &ro);
        if (name) {
            if (renders_to(s->git, &ro, rev)) {
                *target = so;
                found = 1;
                break; /* the newest */
            }
        } else if (!strncmp(git_oid_tostr_s(&ro), rev, strlen(rev))) {
            if (found && !git_oid_equal(target, &so)) {
                rc = mcg_err_set(err, MCG_EINVAL, "rendered commit prefix '%s' is ambiguous", rev);
                goto out;
            }
            *target = so;
            found++;
        }
    }
    if (!found)
        rc = name ? mcg_err_set(err, MCG_ENOTFOUND, "no commit of source branch '%s' renders to %s",
                                r->source_branch, rev)
                  : MCG_ENOTFOUND;
out:
    mcg_chain_free(ch);
    mcg_repo_free(s);
    return rc;
}

int mcg_gitops_rollback_target(char target[MCG_SHA_HEX + 1], mcg_repo *r, const char *rev,
                               mcg_err *err)
{
    git_oid tip, t;
    char sha[MCG_SHA_HEX + 1], tipsha[MCG_SHA_HEX + 1];
    mcg_err lerr = {0};
    int rc;
    target[0] = '\0';
    if ((rc = source_tip(&tip, r, err)) != 0)
        return rc;
    git_oid_tostr(tipsha, sizeof(tipsha), &tip);
    if (is_config_name(rev)) {
        if ((rc = target_by_history(&t, r, &tip, rev, err)) != 0)
            return rc;
        git_oid_tostr(target, MCG_SHA_HEX + 1, &t);
        return 0;
    }
    if (mcg_repo_resolve(r, rev, sha, &lerr) == 0) {
        if (mcg_repo_descends(r, tipsha, sha)) {
            memcpy(target, sha, sizeof(sha));
            return 0;
        }
        /* a rendered commit held here (this rule or an older mcgit's) */
        git_commit *c = NULL;
        char src[MCG_SHA_HEX + 1] = "";
        git_oid_fromstr(&t, sha);
        if (git_commit_lookup(&c, r->git, &t) == 0)
            mcg_git_trailer(git_commit_message(c), "Source-Commit", src);
        git_commit_free(c);
        if (src[0] && mcg_repo_descends(r, tipsha, src)) {
            memcpy(target, src, sizeof(src));
            return 0;
        }
        return mcg_err_set(err, MCG_ENOTFOUND,
                           "%.12s is neither a commit of source branch '%s' nor a rendered "
                           "commit of one",
                           sha, r->source_branch);
    }
    if (is_hex_prefix(rev)) {
        rc = target_by_history(&t, r, &tip, rev, err);
        if (rc == 0) {
            git_oid_tostr(target, MCG_SHA_HEX + 1, &t);
            return 0;
        }
        if (rc != MCG_ENOTFOUND)
            return rc;
    }
    return mcg_err_set(err, MCG_ENOTFOUND,
                       "unknown revision '%s': not a source commit, a rendered commit of this "
                       "history or a rendered config name",
                       rev);
}

/* ------------------------------------------------------------ rollback */

static void rollback_pools_free(mcg_rollback_result *res)
{
    for (size_t i = 0; i < res->npools; i++) {
        free(res->pools[i].pool);
        free(res->pools[i].from);
        free(res->pools[i].to);
    }
    free(res->pools);
    res->pools = NULL;
    res->npools = 0;
}

void mcg_rollback_result_free(mcg_rollback_result *res)
{
    if (!res)
        return;
    rollback_pools_free(res);
    memset(res, 0, sizeof(*res));
}

/* The render of a tree, or NULL (problems to diags). */
static mcg_render *render_tree(mcg_repo *r, const git_tree *tree, const char *label,
                               mcg_diags *diags)
{
    mcg_model *m = NULL;
    mcg_render *rd = NULL;
    mcg_err e = {0};
    if (mcg_git_load_tree(&m, r, tree, label, diags, &e) != 0 ||
        mcg_render_model(&rd, m, diags) != 0) {
        mcg_render_free(rd);
        rd = NULL;
    }
    mcg_model_free(m);
    return rd;
}

/* "pool old new" for every pool of either render, sorted. */
static void pool_changes(mcg_rollback_result *res, const mcg_render *old, const mcg_render *new)
{
    mcg_strv names = {0};
    for (size_t i = 0; old && i < old->n; i++)
        mcg_strv_push(&names, old->pools[i].pool);
    for (size_t i = 0; new &&i < new->n; i++)
        if (!mcg_strv_contains(&names, new->pools[i].pool))
            mcg_strv_push(&names, new->pools[i].pool);
    mcg_strv_sort(&names);
    for (size_t i = 0; i < names.n; i++) {
        const mcg_rendered_pool *a = old ? mcg_render_pool(old, names.v[i]) : NULL;
        const mcg_rendered_pool *b = new ? mcg_render_pool(new, names.v[i]) : NULL;
        res->pools = mcg_realloc(res->pools, (res->npools + 1) * sizeof(*res->pools));
        res->pools[res->npools++] = (mcg_rollback_pool){
            mcg_strdup(names.v[i]), a ? mcg_strdup(a->name) : NULL, b ? mcg_strdup(b->name) : NULL};
    }
    mcg_strv_free(&names);
}

typedef struct conflict_ctx {
    char path[256];
    size_t n;
} conflict_ctx;

/* Checkout notification: count conflicts and remember the first path. */
static int on_conflict(git_checkout_notify_t why, const char *path, const git_diff_file *baseline,
                       const git_diff_file *target, const git_diff_file *workdir, void *payload)
{
    (void)why;
    (void)baseline;
    (void)target;
    (void)workdir;
    conflict_ctx *c = payload;
    if (!c->n++)
        snprintf(c->path, sizeof(c->path), "%s", path);
    return 0;
}

/* A safe checkout of tree into the work tree (dry: only check for conflicts). */
static int checkout(git_repository *g, const git_tree *tree, bool dry, mcg_err *err)
{
    git_checkout_options co;
    git_checkout_options_init(&co, GIT_CHECKOUT_OPTIONS_VERSION);
    conflict_ctx cc = {"", 0};
    co.checkout_strategy = GIT_CHECKOUT_SAFE | (dry ? GIT_CHECKOUT_DRY_RUN : 0);
    co.notify_flags = GIT_CHECKOUT_NOTIFY_CONFLICT;
    co.notify_cb = on_conflict;
    co.notify_payload = &cc;
    int g2 = git_checkout_tree(g, (const git_object *)tree, &co);
    if (cc.n)
        return mcg_err_set(err, MCG_ECONFLICT,
                           "local changes to %s%s would be overwritten (nothing was changed): "
                           "they are not part of the rollback; set them aside (git stash) or "
                           "make the rollback in a clean clone",
                           cc.path, cc.n > 1 ? " and other files" : "");
    if (g2 != 0)
        return mcg_git_err(err, "checkout");
    return 0;
}

/* The tip's tree with the target's machineconfigs/ and pools/ (*newtree: the caller's). */
static int rollback_tree(git_oid *tree_oid, git_tree **newtree, mcg_repo *r, git_tree *tiptree,
                         const git_tree *ttree, mcg_err *err)
{
    static const char *const restored[] = {"machineconfigs", "pools"};
    git_treebuilder *tb = NULL;
    int rc = 0;
    if (git_treebuilder_new(&tb, r->git, tiptree) != 0)
        return mcg_git_err(err, "tree");
    for (size_t i = 0; i < sizeof(restored) / sizeof(restored[0]); i++) {
        const git_tree_entry *e = git_tree_entry_byname(ttree, restored[i]);
        int g = e ? git_treebuilder_insert(NULL, tb, restored[i], git_tree_entry_id(e),
                                           git_tree_entry_filemode(e))
                  : (git_treebuilder_get(tb, restored[i]) ? git_treebuilder_remove(tb, restored[i])
                                                          : 0);
        if (g != 0) {
            rc = mcg_git_err(err, restored[i]);
            goto out;
        }
    }
    if (git_treebuilder_write(tree_oid, tb) != 0 || git_tree_lookup(newtree, r->git, tree_oid) != 0)
        rc = mcg_git_err(err, "tree");
out:
    git_treebuilder_free(tb);
    return rc;
}

/*
 * What the nodes get, old -> new (pure: renders of the two trees), into
 * res->pools; a rollback that does not render is refused.
 */
static int rollback_changes(mcg_rollback_result *res, mcg_repo *r, git_tree *tiptree,
                            git_tree *newtree, mcg_err *err)
{
    mcg_render *oldr = NULL, *newr = NULL;
    mcg_diags diags = {0}, quiet = {0};
    int rc = 0;
    oldr = render_tree(r, tiptree, "the source tip", &quiet);
    mcg_diags_free(&quiet);
    char label[64];
    snprintf(label, sizeof(label), "the rollback to %.12s", res->target);
    if (!(newr = render_tree(r, newtree, label, &diags)))
        rc = mcg_err_set(err, MCG_EINVAL, "the rollback to %.12s does not render: %s", res->target,
                         diags.count ? diags.msgs[0] : "invalid");
    else
        pool_changes(res, oldr, newr);
    mcg_render_free(oldr);
    mcg_render_free(newr);
    mcg_diags_free(&diags);
    return rc;
}

/* Whether the index holds exactly tree's content. */
static bool index_is(git_repository *g, git_index *idx, git_tree *tree)
{
    git_diff *diff = NULL;
    bool same =
        git_diff_tree_to_index(&diff, g, tree, idx, NULL) == 0 && git_diff_num_deltas(diff) == 0;
    git_diff_free(diff);
    return same;
}

#define MOVED_DEPTH 200 /* first-parent ancestors searched for the work tree's commit */

/*
 * A branch that moved under its work tree: the index is not the tip's but an
 * earlier commit's on the branch, as a fetch into a checked-out branch (a
 * controller's clone) leaves it. That is no local change of anyone's, and
 * checking out over it would look like one: refused, saying what it is.
 */
static int moved_under_worktree(mcg_repo *r, git_commit *tip, mcg_err *err)
{
    git_index *idx = NULL;
    git_tree *t = NULL;
    git_commit *c = NULL, *next = NULL;
    int rc = 0;
    if (git_repository_index(&idx, r->git) != 0 || git_index_read(idx, 0) != 0 ||
        git_commit_tree(&t, tip) != 0 || index_is(r->git, idx, t))
        goto out;
    if (git_commit_dup(&c, tip) != 0)
        goto out;
    for (int i = 0; i < MOVED_DEPTH && git_commit_parent(&next, c, 0) == 0; i++) {
        git_commit_free(c);
        c = next;
        git_tree_free(t);
        t = NULL;
        if (git_commit_tree(&t, c) == 0 && index_is(r->git, idx, t)) {
            char at[MCG_SHA_HEX + 1], tipid[MCG_SHA_HEX + 1];
            git_oid_tostr(at, sizeof(at), git_commit_id(c));
            git_oid_tostr(tipid, sizeof(tipid), git_commit_id(tip));
            const char *wd = git_repository_workdir(r->git);
            int wl = wd ? (int)strlen(wd) - (wd[0] && wd[strlen(wd) - 1] == '/') : 1;
            rc = mcg_err_set(err, MCG_ECONFLICT,
                             "%.*s: the work tree is at %.12s but branch %s is at %.12s: the "
                             "branch moved without its work tree (a fetch into a checked-out "
                             "branch, as the controller's does), so git shows the difference "
                             "as changes nobody made; nothing was changed. Make the rollback in "
                             "your own clone of the config repo (mcgit rollback --repo . REV) "
                             "and push it",
                             wl, wd ? wd : ".", at, r->source_branch, tipid);
            break;
        }
    }
out:
    git_commit_free(c);
    git_tree_free(t);
    git_index_free(idx);
    return rc;
}

/* Whether the repository has a work tree whose HEAD is branch_ref (*head: the caller's). */
static bool head_is(git_reference **head, mcg_repo *r, const char *branch_ref)
{
    return !git_repository_is_bare(r->git) && git_reference_lookup(head, r->git, "HEAD") == 0 &&
           git_reference_type(*head) == GIT_REFERENCE_SYMBOLIC &&
           !strcmp(git_reference_symbolic_target(*head), branch_ref);
}

/* o->verify: the history under the tip, and the target's, verify under the trust root. */
static int verify_before_signing(mcg_repo *r, const mcg_rollback_opts *o, const git_oid *tip,
                                 const char *target, mcg_err *err)
{
    char tip_sha[MCG_SHA_HEX + 1];
    mcg_signers *root = NULL;
    if (!o->verify)
        return 0;
    git_oid_tostr(tip_sha, sizeof(tip_sha), tip);
    int rc = mcg_gitops_signing_trust(&root, r, o->trust, o->revoked, err);
    if (!rc)
        rc = mcg_gitops_verify_base(r, tip_sha, false, root, err);
    if (!rc && !mcg_repo_descends(r, tip_sha, target))
        rc = mcg_gitops_verify_base(r, target, false, root, err);
    mcg_signers_free(root);
    return rc;
}

int mcg_gitops_rollback(mcg_rollback_result *res, mcg_repo *r, const char *rev,
                        const mcg_rollback_opts *o, mcg_err *err)
{
    git_oid tip_oid, target_oid, tree_oid, commit_oid;
    git_commit *tip = NULL, *tc = NULL;
    git_tree *tiptree = NULL, *ttree = NULL, *newtree = NULL;
    git_signature *sig = NULL;
    git_reference *head = NULL, *moved = NULL;
    char *msg = NULL, *branch_ref = NULL;
    bool worktree = false;
    int rc;
    memset(res, 0, sizeof(*res));

    if ((rc = mcg_gitops_rollback_target(res->target, r, rev, err)) != 0)
        goto out;
    if ((rc = source_tip(&tip_oid, r, err)) != 0)
        goto out;
    git_oid_fromstr(&target_oid, res->target);
    if (git_commit_lookup(&tip, r->git, &tip_oid) != 0 || git_commit_tree(&tiptree, tip) != 0 ||
        git_commit_lookup(&tc, r->git, &target_oid) != 0 || git_commit_tree(&ttree, tc) != 0) {
        rc = mcg_git_err(err, "source branch");
        goto out;
    }
    if ((rc = rollback_tree(&tree_oid, &newtree, r, tiptree, ttree, err)) != 0)
        goto out;
    if (git_oid_equal(&tree_oid, git_tree_id(tiptree))) {
        res->unchanged = true; /* nothing to roll back: nothing written */
        rc = 0;
        goto out;
    }
    if ((rc = rollback_changes(res, r, tiptree, newtree, err)) != 0)
        goto out;
    /* a work tree on the source branch is updated; check it can be, first */
    branch_ref = mcg_sprintf("refs/heads/%s", r->source_branch);
    if (head_is(&head, r, branch_ref)) {
        worktree = true;
        if ((rc = moved_under_worktree(r, tip, err)) != 0 ||
            (rc = checkout(r->git, newtree, true, err)) != 0)
            goto out;
    }
    if ((rc = verify_before_signing(r, o, &tip_oid, res->target, err)) != 0 ||
        (rc = mcg_git_signature_for(&sig, r, o, "rolling back", err)) != 0)
        goto out;
    const char *summary = git_commit_summary(tc);
    msg = mcg_sprintf("Rollback to %.12s (%s)\n\nRollback-To: %s\n", res->target,
                      summary ? summary : "", res->target);
    if ((rc = mcg_git_commit_signed(&commit_oid, r, newtree, tip, msg, sig, o, err)) != 0)
        goto out;
    if (worktree) {
        if ((rc = checkout(r->git, newtree, false, err)) != 0)
            goto out;
        res->checked_out = true;
    }
    if (git_reference_create_matching(&moved, r->git, branch_ref, &commit_oid, 1, &tip_oid,
                                      "mcgit rollback") != 0) {
        rc = mcg_git_err(err, branch_ref);
        if (worktree)
            (void)checkout(r->git, tiptree, false, NULL); /* put the work tree back */
        res->checked_out = false;
        goto out;
    }
    git_oid_tostr(res->commit, sizeof(res->commit), &commit_oid);
out:
    if (rc) {
        rollback_pools_free(res);
        res->commit[0] = '\0';
    }
    free(branch_ref);
    free(msg);
    git_reference_free(moved);
    git_reference_free(head);
    git_signature_free(sig);
    git_tree_free(newtree);
    git_tree_free(ttree);
    git_tree_free(tiptree);
    git_commit_free(tc);
    git_commit_free(tip);
    return rc;
}
