/*
 * remote.c — talking to the config repo's remote: fetch (fast-forward only),
 * credentials for private remotes, and the controller's mirror of a URL.
 */
#include "fsio/fsio.h"
#include "osenv/osenv.h"
#include "gitops/gitops_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool mcg_gitops_is_url(const char *repo)
{
    if (strstr(repo, "://"))
        return true;
    /* scp-like user@host:path (a local path never has '@' before ':'). */
    const char *colon = strchr(repo, ':'), *at = strchr(repo, '@');
    const char *slash = strchr(repo, '/');
    return colon && at && at < colon && (!slash || slash > colon);
}

/*
 * Verify (local tip, fetched tip] before anything moves: a refusal leaves
 * the branch where it was, so a remote cleaned up later is a fast-forward
 * again. A branch held already is extended, so its new commits arrive now
 * (mcg_verify_opts.now); a first fetch is judged by committer times.
 */
static int verify_fetched(mcg_repo *r, const git_oid *new_oid, const git_oid *old_oid,
                          const git_oid *notes, const mcg_signers *root, int64_t now, mcg_err *err)
{
    char tip[MCG_SHA_HEX + 1], since[MCG_SHA_HEX + 1], approvals[MCG_SHA_HEX + 1];
    mcg_verify_report rep = {0};
    git_oid_tostr(tip, sizeof(tip), new_oid);
    if (old_oid)
        git_oid_tostr(since, sizeof(since), old_oid);
    if (notes)
        git_oid_tostr(approvals, sizeof(approvals), notes);
    mcg_verify_opts o = {.since = old_oid ? since : NULL,
                         .now = old_oid ? now : 0,
                         .tip_now = old_oid ? 0 : now,
                         .approvals = notes ? approvals : NULL};
    int rc = mcg_gitops_verify(&rep, r, tip, &o, root, err);
    for (size_t i = 0; !rc && i < rep.n; i++)
        if (!rep.v[i].good)
            rc = mcg_err_set(err, MCG_ETRUST, "commit %.12s refused: %s%s", rep.v[i].sha,
                             rep.v[i].reason,
                             rep.nbad > 1 ? " (and more; `mcgit verify` lists them)" : "");
    mcg_verify_report_free(&rep);
    return rc;
}

/*
 * The fetched approvals replace the local ones only when they grow them
 * (never a forced copy: a remote whose notes were deleted or rewound is
 * refused), by compare-and-swap.
 */
static int move_approvals(mcg_repo *r, const git_oid *notes, mcg_err *err)
{
    git_oid cur;
    git_reference *nref = NULL;
    char old[MCG_SHA_HEX + 1] = "", new[MCG_SHA_HEX + 1];
    bool have = git_reference_name_to_id(&cur, r->git, MCG_APPROVALS_REF) == 0;
    if (have && git_oid_equal(&cur, notes))
        return 0;
    if (have)
        git_oid_tostr(old, sizeof(old), &cur);
    git_oid_tostr(new, sizeof(new), notes);
    int rc = mcg_gitops_approvals_grow(r, old, new, err);
    if (rc)
        return rc;
    if (have ? git_reference_create_matching(&nref, r->git, MCG_APPROVALS_REF, notes, 1, &cur,
                                             "mcgit fetch")
             : git_reference_create(&nref, r->git, MCG_APPROVALS_REF, notes, 0, "mcgit fetch"))
        rc = mcg_git_err(err, MCG_APPROVALS_REF);
    git_reference_free(nref);
    return rc;
}

/*
 * Whether the fetched approvals grow the ones held here (approvals only
 * grow). When the remote's were deleted, rewound or rewritten, the ones held
 * here stay, the branch is verified against them, and one warning says so:
 * refusing the whole fetch would freeze every controller on a forge without
 * mcgit's hook, an outage for commits that need no approval at all.
 */
static bool approvals_grow(mcg_repo *r, const git_oid *notes, const char *remote_name)
{
    git_oid cur;
    char old[MCG_SHA_HEX + 1] = "", new[MCG_SHA_HEX + 1];
    mcg_err e = {0};
    if (git_reference_name_to_id(&cur, r->git, MCG_APPROVALS_REF) == 0) {
        if (git_oid_equal(&cur, notes))
            return true;
        git_oid_tostr(old, sizeof(old), &cur);
    }
    git_oid_tostr(new, sizeof(new), notes);
    if (mcg_gitops_approvals_grow(r, old, new, &e) == 0)
        return true;
    mcg_log_line("fetch",
                 "warning: remote '%s': %s; keeping the approvals held here (commits that need "
                 "an approval only the remote has are refused until it is restored)",
                 remote_name, e.msg);
    return false;
}

/* Whether the remote, still connected after a fetch, advertised refs/heads/branch. */
static bool advertised(git_remote *remote, const char *branch)
{
    const git_remote_head **heads = NULL;
    size_t n = 0;
    if (git_remote_ls(&heads, &n, remote) != 0)
        return true; /* cannot tell: the fetched ref decides */
    for (size_t i = 0; i < n; i++)
        if (!strncmp(heads[i]->name, "refs/heads/", 11) && !strcmp(heads[i]->name + 11, branch))
            return true;
    return false;
}

/*
 * Bring the remote's source branch (and approval notes) into
 * refs/mcgit/fetched*, which only this file writes, within the deadline. A
 * remote without the branch is MCG_ENOTFOUND (a ref fetched before is stale).
 */
static int transfer(mcg_repo *r, git_remote *remote, const mcg_fetch_opts *o, mcg_err *err)
{
    char *spec =
        mcg_sprintf("+refs/heads/%s:refs/mcgit/fetched/%s", r->source_branch, r->source_branch);
    /* approvals for the two-person rule travel as notes */
    char *refs[] = {spec, "+" MCG_APPROVALS_REF ":refs/mcgit/fetched-approvals"};
    git_strarray specs = {refs, 2};
    git_fetch_options fo;
    git_fetch_options_init(&fo, GIT_FETCH_OPTIONS_VERSION);
    mcg_transport *t = NULL;
    mcg_deadline *dl = NULL;
    unsigned secs = o && o->timeout ? o->timeout : MCG_FETCH_TIMEOUT_DEFAULT;
    fo.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE;
    int rc = mcg_transport_open(&t, git_remote_url(remote), &fo, err);
    if (!rc)
        rc = mcg_deadline_start(&dl, secs, err);
    if (!rc && (rc = mcg_transport_pack_begin(r->git, mcg_transport_url(t), dl, err)) != 0)
        mcg_deadline_finish(dl);
    if (!rc)
        mcg_transport_pin(t, &fo, r->git, dl);
    if (!rc) {
        int g = git_remote_fetch(remote, &specs, &fo, "mcgit fetch");
        bool indexing = false;
        const char *refused = mcg_transport_pack_end(&indexing); /* the pack's graph check */
        if (g != 0 && *refused)
            rc = mcg_err_set(err, MCG_EINVAL, "%s: %s", mcg_transport_url(t), refused);
        else if (g != 0)
            rc = mcg_transport_error(t, false, secs, err); /* before anything resets it */
        else if (!advertised(remote, r->source_branch))
            rc =
                mcg_err_set(err, MCG_ENOTFOUND, "%s: branch missing: the remote has no branch '%s'",
                            mcg_transport_url(t), r->source_branch);
        git_remote_disconnect(remote); /* within the deadline too */
        if (mcg_deadline_finish(dl) && g != 0)
            rc = indexing ? mcg_err_set(err, MCG_EIO,
                                        "%s: timed out: the pack was still arriving or being "
                                        "checked and indexed after %u s; nothing fetched (a "
                                        "longer --timeout lets a large pack finish)",
                                        mcg_transport_url(t), secs)
                          : mcg_transport_error(t, true, secs, err);
    }
    mcg_transport_free(t);
    free(spec);
    return rc;
}

/*
 * url with git's url.<base>.insteadOf applied (the longest matching prefix
 * wins), as a new string. The config is walked entry by entry and matched
 * here: libgit2 1.5's own rewrite (inside git_remote_lookup) matches a
 * regex against every entry and leaks the match data of each entry that
 * does not match, on every fetch.
 */
static char *rewrite_url(git_config *cfg, const char *url)
{
    static const char pre[] = "url.", suf[] = ".insteadof";
    git_config_iterator *it = NULL;
    git_config_entry *e = NULL;
    char *base = NULL;
    size_t best = 0;
    if (git_config_iterator_new(&it, cfg) != 0)
        return mcg_strdup(url);
    while (git_config_next(&e, it) == 0) {
        size_t n = strlen(e->name), vl = e->value ? strlen(e->value) : 0;
        if (n <= strlen(pre) + strlen(suf) || strncmp(e->name, pre, strlen(pre)) != 0 ||
            strcmp(e->name + n - strlen(suf), suf) != 0 || vl <= best ||
            strncmp(url, e->value, vl) != 0)
            continue;
        best = vl;
        free(base);
        base = mcg_strndup(e->name + strlen(pre), n - strlen(pre) - strlen(suf));
    }
    git_config_iterator_free(it);
    char *out = base ? mcg_sprintf("%s%s", base, url + best) : mcg_strdup(url);
    free(base);
    return out;
}

/*
 * The remote called name, as an anonymous remote on its URL (rewritten by
 * url.*.insteadOf): git_remote_lookup's regex matching leaks (above).
 * GIT_ENOTFOUND when the repository has no such remote.
 */
static int remote_open(git_remote **out, git_repository *repo, const char *name)
{
    git_config *cfg = NULL;
    git_buf b = {0};
    char *key = mcg_sprintf("remote.%s.url", name), *url = NULL;
    *out = NULL;
    int rc = git_repository_config_snapshot(&cfg, repo);
    if (!rc)
        rc = git_config_get_string_buf(&b, cfg, key);
    if (!rc) {
        url = rewrite_url(cfg, b.ptr);
        git_remote_create_options ro;
        git_remote_create_options_init(&ro, GIT_REMOTE_CREATE_OPTIONS_VERSION);
        ro.repository = repo;
        ro.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF | GIT_REMOTE_CREATE_SKIP_DEFAULT_FETCHSPEC;
        rc = git_remote_create_with_opts(out, url, &ro);
    }
    git_buf_dispose(&b);
    git_config_free(cfg);
    free(url);
    free(key);
    return rc;
}

int mcg_gitops_fetch(mcg_repo *r, const char *remote_name, const mcg_signers *root,
                     const mcg_fetch_opts *o, char sha_out[MCG_SHA_HEX + 1], mcg_err *err)
{
    git_remote *remote = NULL;
    git_reference *ref = NULL;
    char *fetched = NULL, *local = NULL;
    int64_t now = o ? o->now : 0;
    int rc = 0;
    sha_out[0] = '\0';
    if (remote_open(&remote, r->git, remote_name) != 0)
        return mcg_err_set(err, MCG_ENOTFOUND, "no remote '%s'", remote_name);
    if ((rc = transfer(r, remote, o, err)) != 0)
        goto out;
    fetched = mcg_sprintf("refs/mcgit/fetched/%s", r->source_branch);
    local = mcg_sprintf("refs/heads/%s", r->source_branch);
    git_oid new_oid, old_oid, notes_oid;
    bool held = git_reference_name_to_id(&old_oid, r->git, local) == 0;
    bool has_notes =
        git_reference_name_to_id(&notes_oid, r->git, "refs/mcgit/fetched-approvals") == 0;
    if (git_reference_name_to_id(&new_oid, r->git, fetched) != 0) {
        rc = mcg_err_set(err, MCG_ENOTFOUND, "remote '%s' has no branch '%s'", remote_name,
                         r->source_branch);
        goto out;
    }
    if (held && git_oid_equal(&new_oid, &old_oid))
        goto done;
    if (held && git_graph_descendant_of(r->git, &old_oid, &new_oid) == 1) {
        /* the remote was rewound, or the local branch is ahead (an
         * emergency rollback signed here): nothing moves until the remote
         * has these commits too */
        rc = mcg_err_set(err, MCG_ECONFLICT,
                         "remote '%s' branch '%s' is behind the local one (rewound, or local "
                         "commits not pushed yet, e.g. a rollback signed here: push them): "
                         "nothing fetched",
                         remote_name, r->source_branch);
        goto out;
    }
    if (held && git_graph_descendant_of(r->git, &new_oid, &old_oid) != 1) {
        rc = mcg_err_set(err, MCG_ECONFLICT,
                         "remote '%s' branch '%s' was rewritten, rewound or diverged from "
                         "the local one: not a fast-forward, refused",
                         remote_name, r->source_branch);
        goto out;
    }
    if (has_notes && !approvals_grow(r, &notes_oid, remote_name))
        has_notes = false; /* verified against the approvals held here */
    if ((rc = verify_fetched(r, &new_oid, held ? &old_oid : NULL, has_notes ? &notes_oid : NULL,
                             root, now, err)) != 0)
        goto out;
    if (has_notes && (rc = move_approvals(r, &notes_oid, err)) != 0)
        goto out;
    if (held ? git_reference_create_matching(&ref, r->git, local, &new_oid, 1, &old_oid,
                                             "mcgit fetch")
             : git_reference_create(&ref, r->git, local, &new_oid, 0, "mcgit fetch")) {
        rc = mcg_git_err(err, local);
        goto out;
    }
done:
    git_oid_tostr(sha_out, MCG_SHA_HEX + 1, &new_oid);
out:
    free(fetched);
    free(local);
    git_reference_free(ref);
    git_remote_free(remote);
    return rc;
}

/* The URL of dir's remote 'origin' (its configuration, not rewritten), or NULL. */
static char *origin_url(git_repository *repo)
{
    git_config *cfg = NULL;
    git_buf b = {0};
    char *url = NULL;
    if (git_repository_config_snapshot(&cfg, repo) == 0 &&
        git_config_get_string_buf(&b, cfg, "remote.origin.url") == 0)
        url = mcg_strdup(b.ptr);
    git_buf_dispose(&b);
    git_config_free(cfg);
    return url;
}

/*
 * The mirror's remote, written as `git remote add origin URL` writes it.
 * Set through the configuration: git_remote_lookup and git_remote_create
 * apply url.*.insteadOf with libgit2 1.5's leaking regex walk.
 */
static int origin_add(git_repository *repo, const char *url)
{
    git_config *cfg = NULL;
    int rc = git_repository_config(&cfg, repo);
    if (!rc)
        rc = git_config_set_string(cfg, "remote.origin.url", url);
    if (!rc)
        rc = git_config_set_string(cfg, "remote.origin.fetch",
                                   "+refs/heads/*:refs/remotes/origin/*");
    git_config_free(cfg);
    return rc;
}

/*
 * Where url's password starts and ends ("scheme://user:PASSWORD@host"),
 * when it has one.
 */
static bool url_password(const char *url, size_t *from, size_t *to)
{
    const char *h = strstr(url, "://"), *at = NULL;
    if (!h)
        return false;
    h += 3;
    size_t n = strcspn(h, "/?#");
    for (const char *p = h; p < h + n; p++)
        if (*p == '@')
            at = p;
    const char *colon = at ? memchr(h, ':', (size_t)(at - h)) : NULL;
    if (!colon)
        return false;
    *from = (size_t)(colon + 1 - url);
    *to = (size_t)(at - url);
    return true;
}

int mcg_gitops_mirror(const char *url, const char *dir, mcg_err *err)
{
    git_repository *repo = NULL;
    int rc = 0;
    struct stat st;
    size_t pw_from, pw_to;
    mcg_gitops_lib_init(); /* like every gitops entry point */
    if (url_password(url, &pw_from, &pw_to))
        /* the mirror's config is readable by all: a password never goes there */
        return mcg_err_set(err, MCG_EINVAL,
                           "%.*s***%s: a password in the URL would be stored in the mirror's "
                           "config, readable by all: give the URL without it, and the password "
                           "(or a token) in $MCGIT_GIT_CREDENTIALS (files username and password, "
                           "or token)",
                           (int)pw_from, url, url + pw_to);
    if (stat(dir, &st) == 0) {
        if (git_repository_open_ext(&repo, dir, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) != 0)
            return mcg_err_set(err, MCG_EINVAL, "%s: exists and is not a git repository", dir);
        char *have = origin_url(repo);
        if (!have) {
            rc = mcg_err_set(err, MCG_EINVAL, "%s: mirror has no remote 'origin'", dir);
        } else if (strcmp(have, url) != 0) {
            rc = mcg_err_set(err, MCG_ECONFLICT,
                             "%s: mirror of %s, not of %s; refusing to mix histories", dir, have,
                             url);
        }
        free(have);
        git_repository_free(repo);
        return rc;
    }
    char *tmp = mcg_sprintf("%s.tmp.%ld", dir, (long)getpid());
    git_repository_init_options io;
    git_repository_init_options_init(&io, GIT_REPOSITORY_INIT_OPTIONS_VERSION);
    io.flags = GIT_REPOSITORY_INIT_BARE | GIT_REPOSITORY_INIT_MKPATH;
    if (git_repository_init_ext(&repo, tmp, &io) != 0) {
        rc = mcg_git_err(err, tmp);
    } else if (origin_add(repo, url) != 0) {
        rc = mcg_git_err(err, url);
    }
    git_repository_free(repo);
    if (!rc && rename(tmp, dir) != 0)
        rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", dir);
    if (rc) {
        /* Remove what we made: a bare repo skeleton only. */
        (void)mcg_remove_tree(tmp);
    } else {
        char *parent = mcg_sprintf("%s/..", dir);
        mcg_fsync_dir(parent);
        free(parent);
    }
    free(tmp);
    return rc;
}
