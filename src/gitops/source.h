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

/* Load the config files of a commit's tree into a finished model. */
int mcg_gitops_load_commit(mcg_model **out, mcg_repo *r, const char *sha, mcg_diags *diags,
                           mcg_err *err);

#endif
