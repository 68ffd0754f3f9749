/*
 * view.c — repository handles that see the quarantine: the same repository
 * opened again, its object database the quarantined pack first (during an
 * import nearly every read is of a new object), then the repository's own
 * objects. Every check of an import runs against such a view; nothing
 * writes through one.
 *
 * What the pack scan learnt is returned here as verification hints, which
 * the import passes to mcg_gitops_verify explicitly (mcg_verify_opts):
 * `memo`, the signatures the scan already verified, and `scan`, its
 * signer-file hints. They save work and never change a verdict.
 */
#include "bundle/bundle_int.h"

#include <git2/sys/repository.h>

#include <string.h>

int mcg_bundle_view_open(mcg_repo **v, mcg_repo *r, const char *qdir, const char *objects,
                         mcg_err *err)
{
    git_odb *odb = NULL;
    git_odb_backend *qpack = NULL;
    int rc = 0;
    *v = NULL;
    if (git_odb_new(&odb) != 0 || git_odb_backend_pack(&qpack, qdir) != 0) {
        rc = mcg_git_err(err, "quarantine");
        goto out;
    }
    if (git_odb_add_backend(odb, qpack, 2) != 0) {
        qpack->free(qpack);
        rc = mcg_git_err(err, "quarantine");
        goto out;
    }
    /* qpack: transferred to odb */
    if (git_odb_add_disk_alternate(odb, objects) != 0) {
        rc = mcg_git_err(err, "quarantine");
        goto out;
    }
    rc = mcg_repo_open_view(v, r, odb, err);
out:
    git_odb_free(odb);
    return rc;
}

bool mcg_bundle_in_pack(const git_oid *id, void *pack)
{
    return mcg_oidmap_get(pack, id, NULL);
}

int mcg_bundle_views_attach_scan(mcg_repo *const *views, size_t n, mcg_packscan *scan,
                                 const mcg_oidmap *pack, mcg_verify_opts *hints, mcg_err *err)
{
    git_odb *odb = NULL;
    hints->memo = NULL;
    hints->scan = NULL;
    if (!n)
        return 0;
    if (git_repository_odb(&odb, mcg_repo_git(views[0])) != 0)
        return mcg_git_err(err, "quarantine");
    mcg_packscan_confirm(scan, mcg_bundle_in_pack, (void *)pack, odb);
    git_odb_free(odb);
    for (size_t i = 0; i < n; i++) {
        mcg_repo *v = views[i];
        git_odb_backend *be = NULL;
        hints->memo = mcg_packscan_memo(scan);
        if (!mcg_packscan_complete(scan))
            continue;
        hints->scan = scan;
        if (mcg_packscan_backend(&be, scan) != 0 ||
            git_repository_odb(&odb, mcg_repo_git(v)) != 0) {
            if (be)
                be->free(be);
            return mcg_git_err(err, "quarantine");
        }
        if (be && git_odb_add_backend(odb, be, 3) != 0) {
            be->free(be);
            git_odb_free(odb);
            return mcg_git_err(err, "quarantine");
        }
        git_odb_free(odb);
    }
    return 0;
}
