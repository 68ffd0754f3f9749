/*
 * gitops — where configs come from and where renders go: config
 * directories, git repositories (libgit2), signed-history verification,
 * rendered commits, rollback and bundles.
 */
#ifndef MCG_GITOPS_H
#define MCG_GITOPS_H

#include "model/model.h"
#include "render/render.h"

/* ------------------------------------------------------------ template */

typedef struct mcg_template_file {
    const char *path; /* relative to the repo root */
    const unsigned char *data;
    size_t len;
} mcg_template_file;

/* repo-template/, compiled in (generated at build time). */
extern const mcg_template_file mcg_template_files[];

/*
 * Create a new config repo in dir (which must not exist or be empty) from
 * the template, and `git init` it (libgit2; no commit). Fails without
 * touching an existing non-empty directory.
 */
int mcg_gitops_init(const char *dir, mcg_err *err);

/* ------------------------------------------------------------ sources */

#define MCG_MAX_SOURCE_FILE (16u * 1024u * 1024u)

/*
 * Load a config directory (a working tree) into a finished model: reads
 * mcgit.yaml, pools/ and machineconfigs/ YAML files in sorted order,
 * refusing symbolic links and non-regular files. Problems go to diags;
 * returns MCG_EINVAL when there were any, MCG_EIO when dir is unreadable.
 * *out is set either way (free with mcg_model_free).
 */
int mcg_source_load_dir(mcg_model **out, const char *dir, mcg_diags *diags, mcg_err *err);

#endif
