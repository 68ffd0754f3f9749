/*
 * site — many air-gapped sites from one signed repository, and their
 * status back across the gap as signed git history.
 *
 * A site is declared in the config repo (sites/NAME.yaml, model.h's
 * mcg_site) with the OpenSSH key it reports with. At the site, a record of
 * the cluster's status (pools, nodes, the source and rendered ids they
 * run, the time) is a commit on refs/mcgit/status/NAME whose tree holds
 * status.json, signed in namespace mcgit-site by the site key, its parent
 * the previous record. It travels to HQ in a git bundle; HQ imports it
 * (quarantined, fast-forward only) only when every new record verifies.
 *
 *   record.c  the status document and the signed record commit
 *   check.c   what HQ checks of each record it imports
 *   view.c    the fleet: every declared site and what it last reported
 */
#ifndef MCG_SITE_H
#define MCG_SITE_H

#include "cluster/cluster.h"
#include "gitops/gitops.h"

#define MCG_SITE_NS "mcgit-site" /* the signature namespace of records */
#define MCG_SITE_REF_PREFIX "refs/mcgit/status/"
#define MCG_SITE_MAX_STATUS (16 * 1024 * 1024) /* status.json of one record, at most */

/* Whether s is a site name: what a pool name may be (DNS label-ish). */
bool mcg_site_name_ok(const char *s);

/* What mcg_site_record did. */
typedef struct mcg_site_record_result {
    char commit[MCG_SHA_HEX + 1]; /* the new record; "" when unchanged */
    bool unchanged;               /* the status is the previous record's (time aside) */
} mcg_site_record_result;

/*
 * Record cl's status for site on refs/mcgit/status/<site> in r: a commit
 * whose tree holds status.json, parent the previous
 * record. status.json is canonical JSON: {"apiVersion": "mcgit.io/v1",
 * "kind": "SiteStatus", "site", "time" (unix seconds), "reportedAt",
 * "source" (r's verified source commit, "" none), "rendered" (r's rendered
 * branch tip, "" none), "pools": [{"name", "config", "source",
 * "machineCount", "updatedMachineCount", "degradedMachineCount",
 * "attestedMachineCount"}], "nodes": [{"name", "desired", "current",
 * "state"}]}, sorted by name. The record is signed by key_file (an OpenSSH private key, `ssh-keygen
 * -Y sign -n mcgit-site`, as git signs). With force false, a status equal to the previous record's
 * (its time aside) writes nothing (res->unchanged). The ref moves by compare-and-swap. The site
 * must be declared (sites/NAME.yaml) at r's verified source commit, and key_file's public key
 * (key_file.pub) must be its statusKey there.
 */
int mcg_site_record(mcg_site_record_result *res, mcg_repo *r, mcg_cluster *cl, const char *site,
                    const char *key_file, int64_t now, bool force, mcg_err *err);

/*
 * Import a bundle of site status records into r (HQ): only refs under
 * refs/mcgit/status/ are taken, quarantined as mcg_bundle_import does, and
 * each new record is checked (mcg_site_check_records) before anything
 * moves. root: the trust root (its revocations apply to status keys). rep
 * is filled as mcg_bundle_import_only fills it.
 */
struct mcg_bundle_report;
int mcg_site_import(struct mcg_bundle_report *rep, mcg_repo *r, const char *path,
                    const mcg_signers *root, int64_t now, mcg_err *err);

/* One row of the fleet view: a site and one of its pools (pool "" when the
 * site never reported, or its report names no pool). */
typedef struct mcg_site_row {
    char *site, *pool, *config, *source; /* "" when unknown */
    long long machines, updated, attested, degraded;
    int64_t reported;       /* unix seconds of the record, 0: never */
    int64_t max_report_age; /* the site's maxReportAge */
    bool stale;             /* never reported, or reported longer ago than that */
} mcg_site_row;

typedef struct mcg_site_view {
    mcg_site_row *rows;
    size_t n;
    char source[MCG_SHA_HEX + 1]; /* the verified source commit the sites come from */
} mcg_site_view;

/*
 * Every site declared at r's verified source commit, with what its newest
 * record in r says, at time now. A repository with nothing verified is an
 * error saying so.
 */
int mcg_site_view_load(mcg_site_view *v, mcg_repo *r, int64_t now, mcg_err *err);
void mcg_site_view_free(mcg_site_view *v);

#endif
