/*
 * gitops/receive.h — the git hooks of a server repo: installing them, and
 * what the pre-receive and post-receive hooks decide (the CLI only prints
 * their lines).
 */
#ifndef MCG_GITOPS_RECEIVE_H
#define MCG_GITOPS_RECEIVE_H

#include "trust/trust.h"
#include "gitops/repo.h"

typedef struct mcg_hook_install_opts {
    const char *repo;    /* the repository (bare or not) */
    const char *trust;   /* absolute path of the trust root, for mcgit.trust */
    const char *revoked; /* absolute path of a revocation list, for mcgit.revoked; NULL: keep */
    const char *source_branch; /* NULL: keep mcgit.sourceBranch (default main) */
    const char *webhook_url;   /* NULL: keep mcgit.webhookURL ("" removes it) */
    const char *webhook_token; /* absolute path, for mcgit.webhookTokenFile; NULL: keep */
} mcg_hook_install_opts;

/*
 * Install pre-receive, post-receive and (unless the repository is bare,
 * where nothing is committed) pre-commit into the repository's hooks
 * directory (atomically each; the paths of those written are pushed to
 * installed, which may be NULL: a hook already holding these bytes with mode
 * 0755 is left alone), record trust and (when given) the source branch in its
 * git config, and point HEAD at the source branch. The hooks run `mcgit` from
 * PATH, or git config mcgit.binary when set (install leaves it alone).
 * *changed (may be NULL) says whether anything changed: a hook, a setting or
 * HEAD. *binary (may be NULL) is set to mcgit.binary's value, or NULL when
 * it is not set (free it).
 */
int mcg_gitops_hook_install(const mcg_hook_install_opts *o, mcg_strv *installed, bool *changed,
                            char **binary, mcg_err *err);

/* The longest ref name an update line may carry, with its NUL. */
#define MCG_REFNAME_MAX 4096

/*
 * One line of what git's receive-pack writes to the hooks: "<old> <new>
 * <ref>\n" (len bytes, the '\n' included), two ids of 40 lower-case hex
 * digits and a ref name without spaces or control characters, shorter than
 * MCG_REFNAME_MAX. true and the three fields filled when it is one; false
 * (nothing filled) for anything else — truncated, overlong, extra fields.
 */
bool mcg_gitops_receive_parse_line(const char *line, size_t len, char old[MCG_SHA_HEX + 1],
                                   char new[MCG_SHA_HEX + 1], char ref[MCG_REFNAME_MAX]);

/*
 * The pre-receive hook: input (len bytes) is its stdin, one update line per
 * ref. Every line is parsed first; one that does not parse adds "refusing
 * push: cannot parse update line N: '<its first 80 bytes>'" and refuses the
 * push (MCG_EINVAL) — fail closed. Then each parsed update is judged by
 * mcg_gitops_receive_check at now, with the approvals note the same push
 * sets (if any). Returns 0 when the push may go ahead, else the first
 * refusal's code; out gets every line for the pusher, in order.
 */
int mcg_gitops_pre_receive(mcg_repo *r, const mcg_signers *root, const char *input, size_t len,
                           int64_t now, mcg_diags *out);

/*
 * The post-receive hook: input as for mcg_gitops_pre_receive (a line that
 * does not parse adds "ignoring push: cannot parse ..." and makes the
 * result MCG_EINVAL). When the push moved the source branch (not a
 * deletion), *source_moved is set and its new tip rendered as
 * mcg_gitops_render does: out gets the render's diagnostics, sorted, then
 * "render failed: ..." or "rendered <source> as <branch> <rendered>" (12
 * digits each; nothing when it was rendered already), and the render's code
 * is returned.
 */
int mcg_gitops_post_receive(bool *source_moved, mcg_repo *r, const mcg_signers *root,
                            const char *input, size_t len, mcg_diags *out);

#endif
