/*
 * gitops/remote.h — fetching the source branch from a remote (verified
 * before it moves), and the controller's mirror of a remote repo.
 */
#ifndef MCG_GITOPS_REMOTE_H
#define MCG_GITOPS_REMOTE_H

#include "trust/trust.h"
#include "gitops/repo.h"

/* How long a fetch may talk to its remote unless told otherwise, in seconds. */
#define MCG_FETCH_TIMEOUT_DEFAULT 300

typedef struct mcg_fetch_opts {
    int64_t now;      /* this host's clock: when the branch is held, new commits arrive now */
    unsigned timeout; /* seconds for the whole transfer; 0: MCG_FETCH_TIMEOUT_DEFAULT */
} mcg_fetch_opts;

/*
 * Fetch the source branch from a remote, fast-forward only, and move the
 * local branch only after every new commit verified under root (see
 * mcg_gitops_verify; when the branch is held already, its new commits
 * arrive at o->now). A refusal ("commit <id> refused: <why>", MCG_ETRUST)
 * moves nothing, so a remote cleaned up later fetches cleanly. Tags are not
 * fetched. o may be NULL (now 0, the default timeout).
 *
 * The transfer ends by o->timeout, however the server behaves. Credentials
 * and pins come from the directory named by $MCGIT_GIT_CREDENTIALS (Flux's
 * and Kubernetes' Secret key names): `identity` or `ssh-privatekey` (ssh; user
 * from the URL, else `username`, else git) with `known_hosts`, required for
 * ssh and the only source of trusted host keys; `username` + `password`, or
 * `token` (basic auth as `username`, else x-access-token), or `bearerToken`
 * (an Authorization: Bearer header), and `ca.crt` (https, the CAs trusted in
 * place of the system's). Each is offered once: a rejected credential fails
 * the fetch instead of looping. A transport failure is one line, MCG_EIO,
 * "URL: CAUSE: detail" (the URL without a password; causes: cannot resolve
 * host, connection refused, timed out, authentication failed, host key
 * refused, TLS certificate refused, not a git repository); nothing moves.
 */
int mcg_gitops_fetch(mcg_repo *r, const char *remote, const mcg_signers *root,
                     const mcg_fetch_opts *o, char sha_out[MCG_SHA_HEX + 1], mcg_err *err);

/* Whether REPO names a remote repository (scheme://... or user@host:path). */
bool mcg_gitops_is_url(const char *repo);

/*
 * The controller's mirror of a remote config repo: a bare repository at dir
 * whose remote `origin` is url, created if missing (atomically: built under
 * a temporary name, then renamed). An existing dir whose origin differs is
 * refused, so one mirror never mixes two histories.
 */
int mcg_gitops_mirror(const char *url, const char *dir, mcg_err *err);

#endif
