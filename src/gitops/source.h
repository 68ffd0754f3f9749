/*
 * gitops/source.h — the config files: a new repo from the template, a
 * config directory (a working tree) and a source commit loaded into a model.
 */
#ifndef MCG_GITOPS_SOURCE_H
#define MCG_GITOPS_SOURCE_H

#include "model/model.h"
#include "gitops/repo.h"

typedef struct mcg_template_file {
    const char *path; /* relative to the repo root */
    const unsigned char *data;
    size_t len;
} mcg_template_file;

/* repo-template/ and hooks/, compiled in (generated at build time). */
extern const mcg_template_file mcg_template_files[];
extern const mcg_template_file mcg_hook_files[];

/*
 * Create a new config repo in dir (which must not exist or be empty) from
 * the template, and `git init` it (libgit2; no commit). Fails without
 * touching an existing non-empty directory.
 */
int mcg_gitops_init(const char *dir, mcg_err *err);

#define MCG_MAX_SOURCE_FILE (16u * 1024u * 1024u)

/*
 * Load a config directory (a working tree) into a finished model: reads
 * mcgit.yaml, pools/ and machineconfigs/ YAML files in sorted order,
 * refusing symbolic links and non-regular files. Problems go to diags;
 * returns MCG_EINVAL when there were any, MCG_EIO when dir is unreadable.
 * *out is set either way (free with mcg_model_free).
 */
int mcg_source_load_dir(mcg_model **out, const char *dir, mcg_diags *diags, mcg_err *err);
/*
 * Check dir's .mcgit/policy.yaml, if any (docs/trust.md, "Two-person
 * rule"): problems go to diags (MCG_EINVAL), and one warning line per path
 * pattern that matches no file of the tree (.git left out) to warnings.
 */
int mcg_source_check_policy_dir(const char *dir, mcg_diags *diags, mcg_strv *warnings);

/*
 * `mcgit import-mco`: write a new config repo at dir (which must not exist,
 * or be empty) from data, what `oc get machineconfigs,machineconfigpools -o
 * yaml` printed (from names it in messages). MachineConfigs the cluster's
 * controllers or installer generated are marked (a comment and the
 * annotation machineconfiguration.mcgit.io/imported-generated-by),
 * MCO's rendered ones skipped, pools' status dropped; an object mcgit
 * refuses goes to not-imported/. When the export holds a pool's current
 * rendered config, mcgit's render is compared with it. The report's lines go
 * to report and to dir/import-mco-report.txt. Everything is written beside
 * dir and renamed into place at the end: on failure (MCG_EINVAL: the export
 * is refused, err names the object; MCG_EIO) nothing is left behind.
 */
int mcg_source_import_mco(const char *dir, const char *from, const char *data, size_t len,
                          mcg_strv *report, mcg_err *err);

/* Load the config files of a commit's tree into a finished model. */
int mcg_gitops_load_commit(mcg_model **out, mcg_repo *r, const char *sha, mcg_diags *diags,
                           mcg_err *err);

#endif
