/*
 * import.c — mcg_bundle_verify and mcg_bundle_import: a bundle checked in
 * a quarantine, step by step, and only then moved in.
 *
 * The steps, each a function below, each refusing with one line:
 *
 *   read_header            the header (format.c), into the report
 *   check_prereqs          every prerequisite already in the repo
 *   index_into_quarantine  the pack indexed into objects/mcgit-incoming-XXXXXX
 *                          (quarantine.c, index.c) and scanned meanwhile
 *   open_views             two repository handles that see the quarantine
 *                          (view.c), given what the scan learnt
 *   plan_refs              each ref's tip present, its update a fast-forward
 *                          (classify.c), and the range of commits to verify
 *   verify_all             connectivity and signatures on two threads
 *                          (connect.c, verify.c); refuse_verdicts names the
 *                          first bad commit
 *   check_render           the new source tip renders
 *
 * Import then renames the pack and its index into objects/pack/, moves the
 * refs (locked, compared, then swapped), records the new source tip as
 * verified and renders it. Every other path removes the quarantine — and so
 * does a signal, or the next run after a kill -9 — so a refused bundle
 * leaves the refs and object files exactly as they were.
 */
#include "bundle/bundle_int.h"
#include "fsio/fsio.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct session {
    mcg_repo *q;           /* a view of the repo that also sees the quarantine (main thread) */
    mcg_repo *q2;          /* the same view for the second thread */
    mcg_verify_opts hints; /* what the pack scan learnt (memo, scan): saves work only */
    char approvals[MCG_SHA_HEX + 1];  /* the bundle's refs/notes/mcgit-approvals, "" none */
    char *objects;                    /* the repo's objects directory (with a trailing '/') */
    char *qdir;                       /* objects/mcgit-incoming-XXXXXX */
    char *pack_name;                  /* pack-<name>.{pack,idx} inside qdir/pack */
    int lockfd;                       /* the objects directory, flock()ed shared; -1 none */
    mcg_packscan *scan;               /* what was learnt reading the pack as it was indexed */
    char source_tip[MCG_SHA_HEX + 1]; /* new source tip to render, "" none */
    char rep_newest[MCG_SHA_HEX + 1]; /* for the report: the source tip and its time */
    int64_t rep_newest_time;
    const mcg_bundle_refs_only *only; /* mcg_bundle_import_only: its refs, its check */
} session;

/* Close the views, remove the quarantine, then drop the lock. */
static void session_end(session *s)
{
    mcg_repo_free(s->q);
    mcg_repo_free(s->q2);
    s->q = s->q2 = NULL;
    if (s->qdir)
        mcg_bundle_quarantine_drop(s->qdir);
    if (s->lockfd >= 0)
        close(s->lockfd); /* drops the lock, once the quarantine is gone */
    free(s->qdir);
    free(s->objects);
    free(s->pack_name);
    mcg_packscan_free(s->scan);
    memset(s, 0, sizeof(*s));
    s->lockfd = -1;
}

void mcg_bundle_report_free(mcg_bundle_report *rep)
{
    if (!rep)
        return;
    for (size_t i = 0; i < rep->nrefs; i++) {
        free(rep->refs[i].name);
        mcg_verify_report_free(&rep->refs[i].verify);
    }
    free(rep->refs);
    mcg_strv_free(&rep->prerequisites);
    mcg_strv_free(&rep->plan);
    free(rep->plan_error);
    memset(rep, 0, sizeof(*rep));
}

/* Open the bundle at path ("-": standard input); a directory is refused. */
static int open_input(int *fd, const char *path, mcg_err *err)
{
    if (!strcmp(path, "-")) {
        *fd = STDIN_FILENO;
        return 0;
    }
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0)
        return mcg_err_set_os(err, errno == ENOENT ? MCG_ENOTFOUND : MCG_EIO, errno, "%s", path);
    struct stat st;
    if (fstat(*fd, &st) != 0 || S_ISDIR(st.st_mode)) {
        close(*fd);
        *fd = -1;
        return mcg_err_set(err, MCG_EIO, "%s: not a file", path);
    }
    return 0;
}

/* Step: parse the header from rd; the report gets its version, prerequisites and refs. */
static int read_header(mcg_bundle_hdr *h, mcg_bundle_reader *rd, mcg_bundle_report *rep,
                       mcg_err *err)
{
    int rc = mcg_bundle_hdr_parse(h, rd, err);
    if (rc)
        return rc;
    rep->version = h->version;
    for (size_t i = 0; i < h->prereqs.n; i++) {
        char sha[MCG_SHA_HEX + 1];
        git_oid_tostr(sha, sizeof(sha), &h->prereqs.v[i]);
        mcg_strv_push(&rep->prerequisites, sha);
    }
    rep->refs = mcg_calloc(h->nrefs ? h->nrefs : 1, sizeof(*rep->refs));
    for (size_t i = 0; i < h->nrefs; i++) {
        mcg_bundle_ref *br = &rep->refs[rep->nrefs++];
        br->name = mcg_strdup(h->refs[i].name);
        git_oid_tostr(br->new_sha, sizeof(br->new_sha), &h->refs[i].oid);
    }
    return 0;
}

/* Step: prerequisites must already be here. */
static int check_prereqs(mcg_repo *r, const mcg_bundle_hdr *h, const mcg_bundle_report *rep,
                         mcg_err *err)
{
    for (size_t i = 0; i < h->prereqs.n; i++) {
        git_commit *c = NULL;
        if (git_commit_lookup(&c, mcg_repo_git(r), &h->prereqs.v[i]) != 0)
            return mcg_err_set(err, MCG_ENOTFOUND,
                               "missing prerequisite %s: import the bundle it came after first",
                               rep->prerequisites.v[i]);
        git_commit_free(c);
    }
    return 0;
}

/* Step: the quarantine objects/mcgit-incoming-XXXXXX/pack, the pack indexed into it. */
static int index_into_quarantine(session *s, mcg_repo *r, mcg_bundle_reader *rd,
                                 const mcg_bundle_progress *prog, mcg_bundle_report *rep,
                                 mcg_err *err)
{
    git_odb *odb = NULL;
    git_buf objdir = {0};
    int rc = 0;
    if (git_repository_odb(&odb, mcg_repo_git(r)) != 0)
        return mcg_git_err(err, "odb");
    if (git_repository_item_path(&objdir, mcg_repo_git(r), GIT_REPOSITORY_ITEM_OBJECTS) != 0) {
        rc = mcg_git_err(err, "objects");
        goto out;
    }
    s->objects = mcg_strdup(objdir.ptr);
    mcg_bundle_quarantine_lock(&s->lockfd, s->objects);
    if ((rc = mcg_bundle_quarantine_create(&s->qdir, s->objects, err)) != 0)
        goto out;
    /*
     * Bounded memory: object reads go through 8 MiB windows, at most 32 MiB
     * mapped (libgit2 1.5's indexer still maps the whole pack file for its
     * delta pass: page cache, not heap), and the parsed-object cache is kept
     * small, since a long history is read once.
     */
    git_libgit2_opts(GIT_OPT_SET_MWINDOW_SIZE, (size_t)(8 * 1024 * 1024));
    git_libgit2_opts(GIT_OPT_SET_MWINDOW_MAPPED_LIMIT, (size_t)(32 * 1024 * 1024));
    git_libgit2_opts(GIT_OPT_SET_CACHE_MAX_SIZE, (ssize_t)(2 * 1024 * 1024));
    rc = mcg_bundle_index_pack(&s->pack_name, &s->scan, rd, s->qdir, s->objects, odb, prog, rep,
                               err);
out:
    git_buf_dispose(&objdir);
    git_odb_free(odb);
    return rc;
}

/*
 * Step: the two views of the quarantine, the pack's ids (from the index
 * libgit2 just wrote) into pack, and what the scan learnt given to the views.
 */
static int open_views(session *s, mcg_repo *r, mcg_oidmap *pack, mcg_err *err)
{
    int rc;
    if ((rc = mcg_bundle_view_open(&s->q, r, s->qdir, s->objects, err)) != 0 ||
        (rc = mcg_bundle_view_open(&s->q2, r, s->qdir, s->objects, err)) != 0)
        return rc;
    mcg_repo *views[] = {s->q, s->q2};
    char *idx = mcg_sprintf("%s/pack/pack-%s.idx", s->qdir, s->pack_name);
    rc = mcg_bundle_read_idx_oids(pack, idx, err);
    free(idx);
    if (rc)
        return rc;
    return mcg_bundle_views_attach_scan(views, 2, s->scan, pack, &s->hints, err);
}

/*
 * Step: each ref's tip present in the view, its update classified (a
 * refusal stops here), and for each ref to create or move the range of
 * commits to verify: want[i] and the tips for the connectivity check.
 */
static int plan_refs(session *s, mcg_bundle_report *rep, mcg_repo *r, mcg_bundle_vref *want,
                     git_oid *tips, const mcg_signers *root, mcg_err *err)
{
    char *src_ref = mcg_sprintf("refs/heads/%s", mcg_repo_source_branch(r));
    int rc = 0;
    for (size_t i = 0; i < rep->nrefs; i++) {
        mcg_bundle_ref *br = &rep->refs[i];
        git_object *obj = NULL;
        want[i].with = -1;
        git_oid_fromstr(&tips[i], br->new_sha);
        if (git_object_lookup(&obj, mcg_repo_git(s->q), &tips[i], GIT_OBJECT_ANY) != 0) {
            rc = mcg_err_set(err, MCG_EINVAL, "incomplete bundle: %s points to missing object %s",
                             br->name, br->new_sha);
            goto out;
        }
        git_object_free(obj);
        if ((rc = mcg_bundle_classify(br, s->q, &tips[i], err)) != 0)
            goto out;
        if (br->action != MCG_BUNDLE_CREATE && br->action != MCG_BUNDLE_FORWARD)
            continue;
        /* Approvals are notes commits (unsigned): each approval in them is
         * verified where it counts, with the commit it approves. */
        if (!strcmp(br->name, "refs/notes/mcgit-approvals")) {
            /* approvals only grow: a commit, extending what the repo holds */
            if ((rc = mcg_gitops_approvals_grow(s->q, br->old_sha, br->new_sha, err)) != 0)
                goto out;
            memcpy(s->approvals, br->new_sha, sizeof(s->approvals));
            continue;
        }
        if ((rc = mcg_bundle_peel_commit(want[i].tip, s->q, br, err)) != 0)
            goto out;
        /*
         * Every new commit is verified. For the source branch the range is
         * the one `mcgit render` will check (since the last verified
         * commit), so the render after the move cannot fail on trust; other
         * refs from their current value.
         */
        bool is_src = !strcmp(br->name, src_ref);
        if (!is_src && br->old_sha[0])
            memcpy(want[i].since, br->old_sha, sizeof(want[i].since));
        mcg_gitops_effective_since(want[i].eff, s->q, want[i].tip,
                                   want[i].since[0] ? want[i].since : NULL, root);
        if (is_src)
            memcpy(s->source_tip, want[i].tip, sizeof(s->source_tip));
        /* A ref inside the range of an earlier one (a tag on the branch) is verified with it. */
        for (size_t j = 0; j < i && want[i].with < 0; j++)
            if (want[j].tip[0] && want[j].with < 0 && !strcmp(want[j].eff, want[i].eff) &&
                mcg_repo_descends(s->q, want[j].tip, want[i].tip))
                want[i].with = (ssize_t)j;
        if (want[i].with >= 0)
            br->verified_with = rep->refs[want[i].with].name;
    }
    /* the bundle's approvals count for the commits it brings */
    s->hints.approvals = s->approvals[0] ? s->approvals : NULL;
out:
    free(src_ref);
    return rc;
}

/* Step: a ref with a bad commit refuses the bundle, naming the first. */
static int refuse_verdicts(const mcg_bundle_report *rep, mcg_err *err)
{
    for (size_t i = 0; i < rep->nrefs; i++) {
        const mcg_verify_report *vr = &rep->refs[i].verify;
        if (!vr->nbad)
            continue;
        const mcg_verdict *v = NULL;
        for (size_t j = 0; j < vr->n && !v; j++)
            if (!vr->v[j].good)
                v = &vr->v[j];
        return mcg_err_set(err, MCG_ETRUST, "commit %s: %s (%zu of %zu new commit%s refused)",
                           v->sha, v->reason, vr->nbad, vr->n, vr->n == 1 ? "" : "s");
    }
    return 0;
}

/*
 * Step: the new source tip must render, as `mcgit render --repo` will; its
 * plan (against the rendered branch as it is now) goes to rep->plan.
 */
static int check_render(session *s, mcg_bundle_report *rep, mcg_err *err)
{
    mcg_err perr = {0};
    mcg_commit_plan *plan = NULL;
    mcg_model *m = NULL;
    mcg_render *out = NULL;
    mcg_diags diags = {0};
    int rc = 0;
    if (!s->source_tip[0])
        return 0;
    if (mcg_gitops_commit_time(&s->rep_newest_time, s->q, s->source_tip) == 0)
        memcpy(s->rep_newest, s->source_tip, sizeof(s->rep_newest));
    if (mcg_gitops_load_commit(&m, s->q, s->source_tip, &diags, err) != 0 ||
        mcg_render_model(&out, m, &diags) != 0)
        rc = mcg_err_set(err, MCG_EINVAL, "commit %s does not render: %s", s->source_tip,
                         diags.count ? diags.msgs[0] : err->msg);
    else if (mcg_gitops_commit_plan_make(&plan, s->q, s->source_tip, m, out, &perr) == 0) {
        m = NULL, out = NULL; /* transferred */
        /* kept as text: the model and render are not held through the import */
        char *head = mcg_commit_plan_title(plan);
        mcg_strv_push(&rep->plan, head);
        free(head);
        mcg_commit_plan_lines(plan, &rep->plan);
    } else { /* the plan only informs: the bundle is judged without it */
        rep->plan_error = mcg_strdup(perr.msg);
    }
    mcg_commit_plan_free(plan);
    mcg_render_free(out);
    mcg_model_free(m);
    mcg_diags_free(&diags);
    return rc;
}

/*
 * Steps of mcg_bundle_import_only, in place of plan_refs to check_render:
 * refs outside the prefix skipped, the rest classified, connectivity from
 * every tip, then the owner's check of each new value.
 */
static int check_only(session *s, mcg_bundle_report *rep, git_oid *tips, const mcg_oidmap *pack,
                      mcg_err *err)
{
    const mcg_bundle_refs_only *o = s->only;
    size_t ntips = 0;
    int rc = 0;
    for (size_t i = 0; i < rep->nrefs && !rc; i++) {
        mcg_bundle_ref *br = &rep->refs[i];
        git_object *obj = NULL;
        if (strncmp(br->name, o->prefix, strlen(o->prefix)) != 0) {
            br->note = "not a ref this import takes";
            continue;
        }
        git_oid_fromstr(&tips[ntips], br->new_sha);
        if (git_object_lookup(&obj, mcg_repo_git(s->q), &tips[ntips], GIT_OBJECT_COMMIT) != 0)
            rc = mcg_err_set(err, MCG_EINVAL, "incomplete bundle: %s points to missing commit %s",
                             br->name, br->new_sha);
        git_object_free(obj);
        if (!rc)
            rc = mcg_bundle_classify_any(br, s->q, &tips[ntips++], false, err);
    }
    mcg_bundle_conn conn = {.view = s->q, .scan = NULL, .pack = pack, .tips = tips, .ntips = ntips};
    if (!rc && (rc = mcg_bundle_check_connected(&conn)) != 0)
        *err = conn.err;
    for (size_t i = 0; i < rep->nrefs && !rc; i++) {
        const mcg_bundle_ref *br = &rep->refs[i];
        if (br->action == MCG_BUNDLE_CREATE || br->action == MCG_BUNDLE_FORWARD)
            rc = o->check(o->ctx, s->q, br, err);
    }
    return rc;
}

/* Every check of verify/import, leaving the quarantine in s on success. */
static int check_bundle(session *s, mcg_bundle_report *rep, mcg_repo *r, const char *path,
                        const mcg_signers *root, const mcg_bundle_progress *prog, mcg_err *err)
{
    mcg_bundle_hdr h = {0};
    mcg_bundle_reader rd = {.fd = -1, .name = path};
    mcg_oidmap pack = {0};
    mcg_bundle_vref *want = NULL;
    git_oid *tips = NULL;
    bool strict_off = false;
    int rc;

    if ((rc = open_input(&rd.fd, path, err)) != 0)
        return rc;
    rd.buf = mcg_malloc(MCG_BUNDLE_CHUNK);
    if ((rc = read_header(&h, &rd, rep, err)) != 0 || (rc = check_prereqs(r, &h, rep, err)) != 0 ||
        (rc = index_into_quarantine(s, r, &rd, prog, rep, err)) != 0)
        goto out;
    /*
     * The indexer has just computed every quarantined object's id from its
     * content: reading them back need not hash each one again (libgit2's
     * strict verification, a third of the cost of reading a tree; git's own
     * fetch does not re-hash what it reads for its connectivity check
     * either). The repo's own objects read meanwhile are few (prerequisites,
     * the signer file below the first new commit). Back on before anything
     * is written.
     */
    git_libgit2_opts(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, 0);
    strict_off = true;
    want = mcg_calloc(rep->nrefs ? rep->nrefs : 1, sizeof(*want));
    tips = mcg_calloc(rep->nrefs ? rep->nrefs : 1, sizeof(*tips));
    if (s->only) {
        if ((rc = open_views(s, r, &pack, err)) != 0 ||
            (rc = check_only(s, rep, tips, &pack, err)) != 0)
            goto out;
    } else if ((rc = open_views(s, r, &pack, err)) != 0 ||
               (rc = plan_refs(s, rep, r, want, tips, root, err)) != 0 ||
               (rc = mcg_bundle_verify_all(s->q, s->q2, rep, want, tips, rep->nrefs, &pack, root,
                                           &s->hints, prog, err)) != 0 ||
               (rc = refuse_verdicts(rep, err)) != 0 || (rc = check_render(s, rep, err)) != 0)
        goto out;
    rep->accepted = true;
    memcpy(rep->newest, s->rep_newest, sizeof(rep->newest));
    rep->newest_time = s->rep_newest_time;
out:
    if (strict_off)
        git_libgit2_opts(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, 1);
    mcg_oidmap_free(&pack);
    free(want);
    free(tips);
    mcg_bundle_hdr_free(&h);
    free(rd.buf);
    if (rd.fd >= 0 && rd.fd != STDIN_FILENO)
        close(rd.fd);
    return rc;
}

int mcg_bundle_verify(mcg_bundle_report *rep, mcg_repo *r, const char *path,
                      const mcg_signers *root, const mcg_bundle_progress *progress, mcg_err *err)
{
    session s = {.lockfd = -1};
    memset(rep, 0, sizeof(*rep));
    mcg_gitops_lib_init();
    int rc = check_bundle(&s, rep, r, path, root, progress, err);
    session_end(&s);
    git_libgit2_shutdown();
    return rc;
}

/* fsync a file by path. */
static int fsync_path(const char *p)
{
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/*
 * Move qdir/pack/pack-N.{pack,idx} into objects/pack/ (pack first: readers
 * look for the idx). An import killed (-9) between this and move_refs
 * leaves a complete, unreferenced pack: harmless, as after an interrupted
 * git fetch, and gone at the next git gc.
 */
static int move_pack(session *s, mcg_err *err)
{
    static const char *const ext[] = {"pack", "idx"};
    char *dest_dir = mcg_sprintf("%spack", s->objects);
    int rc = 0;
    if ((rc = mcg_mkdirs(dest_dir, 0755, err)) != 0)
        goto out;
    for (size_t i = 0; i < 2 && !rc; i++) {
        char *from = mcg_sprintf("%s/pack/pack-%s.%s", s->qdir, s->pack_name, ext[i]);
        char *to = mcg_sprintf("%s/pack-%s.%s", dest_dir, s->pack_name, ext[i]);
        if (fsync_path(from) != 0 || rename(from, to) != 0)
            rc = mcg_err_set_os(err, MCG_EIO, errno, "%s", to);
        free(from);
        free(to);
    }
    mcg_fsync_dir(dest_dir);
out:
    free(dest_dir);
    return rc;
}

/*
 * Move every accepted ref: lock all, compare with what was checked, then
 * set. Many refs go through packed-refs instead (packrefs.c): a
 * transaction holds one open lock file per ref.
 */
static int move_refs(mcg_repo *r, const mcg_bundle_report *rep, mcg_err *err)
{
    git_transaction *tx = NULL;
    git_signature *sig = NULL;
    size_t moving = 0;
    int rc = 0;
    for (size_t i = 0; i < rep->nrefs; i++)
        moving +=
            rep->refs[i].action == MCG_BUNDLE_CREATE || rep->refs[i].action == MCG_BUNDLE_FORWARD;
    if (moving > MCG_BUNDLE_PACKED_REFS)
        return mcg_bundle_move_packed(r, rep, err);
    if (git_transaction_new(&tx, mcg_repo_git(r)) != 0 ||
        git_signature_now(&sig, "mcgit", "mcgit@localhost") != 0) {
        rc = mcg_git_err(err, "refs");
        goto out;
    }
    for (size_t i = 0; i < rep->nrefs; i++) {
        const mcg_bundle_ref *br = &rep->refs[i];
        if (br->action != MCG_BUNDLE_CREATE && br->action != MCG_BUNDLE_FORWARD)
            continue;
        git_oid cur, want;
        if (git_transaction_lock_ref(tx, br->name) != 0) {
            rc = mcg_git_err(err, br->name);
            goto out;
        }
        int have = git_reference_name_to_id(&cur, mcg_repo_git(r), br->name) == 0;
        char cur_sha[MCG_SHA_HEX + 1] = "";
        if (have)
            git_oid_tostr(cur_sha, sizeof(cur_sha), &cur);
        if (strcmp(cur_sha, br->old_sha) != 0) {
            rc = mcg_err_set(err, MCG_ECONFLICT, "%s changed during the import; nothing moved",
                             br->name);
            goto out;
        }
        git_oid_fromstr(&want, br->new_sha);
        if (git_transaction_set_target(tx, br->name, &want, sig, "mcgit bundle import") != 0) {
            rc = mcg_git_err(err, br->name);
            goto out;
        }
    }
    if (git_transaction_commit(tx) != 0)
        rc = mcg_git_err(err, "refs");
out:
    git_signature_free(sig);
    git_transaction_free(tx); /* unlocks anything not committed */
    return rc;
}

static int import_run(session *s, mcg_bundle_report *rep, mcg_repo *r, const char *path,
                      const mcg_signers *root, const mcg_bundle_progress *progress,
                      mcg_diags *diags, mcg_err *err);

int mcg_bundle_import(mcg_bundle_report *rep, mcg_repo *r, const char *path,
                      const mcg_signers *root, const mcg_bundle_progress *progress,
                      mcg_diags *diags, mcg_err *err)
{
    session s = {.lockfd = -1};
    return import_run(&s, rep, r, path, root, progress, diags, err);
}

int mcg_bundle_import_only(mcg_bundle_report *rep, mcg_repo *r, const char *path,
                           const mcg_bundle_refs_only *only, mcg_err *err)
{
    session s = {.lockfd = -1, .only = only};
    return import_run(&s, rep, r, path, NULL, NULL, NULL, err);
}

/* mcg_bundle_import, or with s->only mcg_bundle_import_only. */
static int import_run(session *s0, mcg_bundle_report *rep, mcg_repo *r, const char *path,
                      const mcg_signers *root, const mcg_bundle_progress *progress,
                      mcg_diags *diags, mcg_err *err)
{
    session s = *s0;
    mcg_verify_report vr = {0};
    bool any = false, blocked = false;
    sigset_t stop, old;
    memset(rep, 0, sizeof(*rep));
    mcg_gitops_lib_init();
    int rc = check_bundle(&s, rep, r, path, root, progress, err);
    if (rc)
        goto out;
    for (size_t i = 0; i < rep->nrefs; i++)
        if (rep->refs[i].action == MCG_BUNDLE_CREATE || rep->refs[i].action == MCG_BUNDLE_FORWARD)
            any = true;
    if (!any)
        goto out; /* up to date: nothing to move */
    mcg_repo_free(s.q);
    mcg_repo_free(s.q2);
    s.q = s.q2 = NULL;
    /*
     * From here the import completes, whatever signal comes: pack, refs,
     * verified mark and render, then the signal is delivered.
     */
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGHUP);
    sigaddset(&stop, SIGQUIT);
    blocked = pthread_sigmask(SIG_BLOCK, &stop, &old) == 0;
    if ((rc = move_pack(&s, err)) != 0)
        goto out;
    git_odb *odb = NULL;
    if (git_repository_odb(&odb, mcg_repo_git(r)) == 0) {
        git_odb_refresh(odb);
        git_odb_free(odb);
    }
    if ((rc = move_refs(r, rep, err)) != 0)
        goto out;
    rep->imported = true;
    if (s.source_tip[0]) {
        /*
         * Every commit up to the new tip was verified above, in the range
         * mcg_gitops_render checks: record it, so the render does not verify
         * the same commits again.
         */
        if ((rc = mcg_gitops_mark_verified(r, s.source_tip, root, err)) == 0)
            rc = mcg_gitops_render(&rep->render, NULL, &vr, r, s.source_tip, root, diags, err);
        if (rc)
            mcg_err_prefix(err, "imported, but the render failed");
        else
            rep->rendered = true;
    }
out:
    if (rep->accepted && (rc == 0 || rep->imported) && !s.only) {
        /* counted for monitoring (mcgit_bundle_imports_total): an accepted
         * import, moved or up to date; a failure to count is not the import's */
        mcg_err cerr = {0};
        if (mcg_gitops_note_import(r, (int64_t)time(NULL), &cerr) != 0 && diags)
            mcg_diags_add(diags, "warning: bundle import not counted: %s", cerr.msg);
    }
    mcg_verify_report_free(&vr);
    session_end(&s);
    if (blocked)
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    git_libgit2_shutdown();
    return rc;
}
