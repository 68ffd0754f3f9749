/*
 * gitops — where configs come from and where renders go: config
 * directories, git repositories (libgit2), signed-history verification,
 * rendered commits, plans, hooks, remotes and rollback. Bundles are in
 * bundle/bundle.h.
 *
 * One header per concern, as libgit2's git2/ headers; this one includes them all:
 *   gitops/repo.h      the repository handle, revisions, the tip watch
 *   gitops/source.h    config files: the template, a directory, a commit
 *   gitops/verify.h    signed history and what a trust change leaves behind
 *   gitops/receive.h   the hooks: installing them, what pre-/post-receive decide
 *   gitops/rendered.h  the rendered branch: render, log, read
 *   gitops/plan.h      the commit plan (what a source commit would change)
 *   gitops/sign.h      signing, approvals, rollbacks, heartbeats
 *   gitops/remote.h    fetch and mirror
 */
#ifndef MCG_GITOPS_H
#define MCG_GITOPS_H

#include "gitops/repo.h"
#include "gitops/source.h"
#include "gitops/verify.h"
#include "gitops/receive.h"
#include "gitops/rendered.h"
#include "gitops/plan.h"
#include "gitops/sign.h"
#include "gitops/remote.h"

#endif
