/*
 * cli — one file per subcommand, each exporting an mcg_cmd.
 *
 * A command parses its own options with getopt_long, prints results to
 * stdout and reasons to stderr as "mcgit CMD: message", and returns the exit
 * status: 0 success, 1 refused or failed, 2 usage.
 */
#ifndef MCG_CLI_H
#define MCG_CLI_H

#include "util/util.h"
#include "fsio/fsio.h"

enum { MCG_EXIT_OK = 0, MCG_EXIT_FAIL = 1, MCG_EXIT_USAGE = 2 };

/*
 * One option of a command, as git's parse-options has them: getopt_long's
 * table, the short option string and the option list of the command's help
 * are all made from one array of these, so what a command accepts and what
 * its help, man page and shell completion say (all generated from the help)
 * cannot drift apart. Fill them with the MCG_OPT_* macros; MCG_OPT_END
 * ends the array.
 */
typedef struct mcg_opt {
    int key;          /* its binding's key, or what mcg_cli_parse_next returns (> 0) */
    char shortname;   /* accepted as -c too; 0: long only */
    const char *name; /* accepted as --name; NULL: short only */
    const char *arg;  /* its value as the help names it ("R", "text|json"); NULL: a flag */
    const char *help; /* its entry in the option list, lines split by '\n'; NULL: not listed */
    unsigned only;    /* the subcommands that take it, a bit each (mcg_cli_parse_next); 0: all */
} mcg_opt;

#define MCG_OPT_FLAG(k, n, h)                                                                      \
    {                                                                                              \
        .key = (k), .name = (n), .help = (h)                                                       \
    }
#define MCG_OPT_VALUE(k, n, a, h)                                                                  \
    {                                                                                              \
        .key = (k), .name = (n), .arg = (a), .help = (h)                                           \
    }
#define MCG_OPT_SHORT_FLAG(c, n, h)                                                                \
    {                                                                                              \
        .key = (c), .shortname = (c), .name = (n), .help = (h)                                     \
    }
/* An option of some subcommands only (s: their bits). */
#define MCG_OPT_SUB_FLAG(s, k, n, h)                                                               \
    {                                                                                              \
        .key = (k), .name = (n), .help = (h), .only = (s)                                          \
    }
#define MCG_OPT_SUB_VALUE(s, k, n, a, h)                                                           \
    {                                                                                              \
        .key = (k), .name = (n), .arg = (a), .help = (h), .only = (s)                              \
    }
#define MCG_OPT_SHORT_VALUE(c, n, a, h)                                                            \
    {                                                                                              \
        .key = (c), .shortname = (c), .name = (n), .arg = (a), .help = (h)                         \
    }
/* The options most commands share, with one help text each. */
#define MCG_OPT_CLUSTER MCG_OPT_VALUE('c', "cluster", "C", "the cluster (default: $MCGIT_CLUSTER)")
#define MCG_OPT_TRUST MCG_OPT_VALUE('t', "trust", "F", "the trust root, an allowed_signers file")
#define MCG_OPT_REVOKED                                                                            \
    MCG_OPT_VALUE('K', "revoked", "K",                                                             \
                  "the revocation list, an OpenSSH KRL or a list\nof public keys")
/* -h, --help: every command has it; the help does not list it. */
#define MCG_OPT_HELP MCG_OPT_SHORT_FLAG('h', "help", NULL)
#define MCG_OPT_END                                                                                \
    {                                                                                              \
        .key = 0                                                                                   \
    }

typedef struct mcg_cmd {
    const char *name;
    const char *summary; /* one line for `mcgit help` */
    /* `mcgit help CMD`: this text, then "options:" and the list made from opts */
    const char *usage;
    int (*run)(int argc, char **argv);
    const mcg_opt *opts; /* its options, MCG_OPT_END last; NULL: none, not even --help */
} mcg_cmd;

/* The command table, defined in main.c. */
extern const mcg_cmd *const mcg_commands[];
const mcg_cmd *mcg_cmd_find(const char *name);

/* Log verbosity: 0 quiet, 1 normal, 2 verbose (-q / -v). */
extern int mcg_verbosity;

/* "mcgit CMD: message" on stderr. */
void mcg_cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same with the operating system's reason for errnum appended (mcg_err_set_os). */
void mcg_cli_error_os(const char *cmd, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void mcg_cli_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* After a bad option or argument: the reason (fmt, when given) and a hint
 * "see 'mcgit help CMD'" on stderr, one line each; returns 2. */
int mcg_cli_usage_error(const mcg_cmd *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/*
 * Where an option's value goes, for mcg_cli_parse: a value option's
 * argument is stored in *str, a flag sets *flag (exactly one of the two is
 * set). The array ends with MCG_BIND_END; NULL binds nothing. As git's parse-options binds an
 * option to its variable, so a command's run() holds no switch of
 * "case 'r': repo = optarg".
 */
typedef struct mcg_optbind {
    int key;
    const char **str;
    bool *flag;
} mcg_optbind;
#define MCG_BIND_END                                                                               \
    {                                                                                              \
        0, NULL, NULL                                                                              \
    }
/*
 * getopt_long over the options of cmd that subcommand sub (one bit; ~0u:
 * every one) takes — those whose .only has it or is 0 — from argv[optind],
 * storing each one binds holds, until one it does not hold: its key (> 0;
 * optarg its value) for the caller to handle (a number, a list). 0 after
 * the last option (the operands from argv[optind]); -1 when the command is
 * to return *ex at once: 0 after its help (-h, --help), or 2 after a usage
 * error. A bad option is said on its own line "mcgit CMD: ..." (getopt's
 * own messages are off): an unknown option, with a did-you-mean for a
 * misspelt long one, an ambiguous abbreviation, a missing argument, an
 * argument to a flag; then the hint. Set optind = 1 before the first call.
 */
int mcg_cli_parse_next(const mcg_cmd *cmd, unsigned sub, int argc, char **argv,
                       const mcg_optbind *binds, int *ex);
/*
 * Every option of cmd bound in binds: parse them all (optind from 1).
 * Returns -1 when done (the operands from argv[optind]), or the exit status
 * to return: 0 after the help, 2 after a usage error.
 */
int mcg_cli_parse(const mcg_cmd *cmd, int argc, char **argv, const mcg_optbind *binds);
/* "mcgit: 'NAME' is not a command" (with a did-you-mean for a misspelt
 * one) and the hint on stderr; returns 2. */
int mcg_cli_unknown_command(const char *name);
/* Print cmd's help to stdout (its usage text, then the option list made
 * from cmd->opts) and return 0. */
int mcg_cli_help(const mcg_cmd *cmd);
/* Print every diagnostic to stderr, one per line, sorted (mcg_diags_sort). */
void mcg_cli_diags(const char *cmd, const mcg_diags *d);

/*
 * The cluster to use: opt (--cluster C) when given, else $MCGIT_CLUSTER when
 * set and non-empty, else NULL.
 */
const char *mcg_cli_cluster(const char *opt);

/* The tables (or -o json) of `mcgit status pools|nodes`, into out. */
struct mcg_cluster;
int mcg_cli_status_pools(struct mcg_cluster *cl, const char *format, mcg_buf *out, mcg_err *err);
int mcg_cli_status_nodes(struct mcg_cluster *cl, const char *format, mcg_buf *out, mcg_err *err);
/* `mcgit status --sites --repo R`: a table, -o json (a List) or -o metrics (Prometheus text). */
int mcg_cli_status_sites(const char *repo, const char *format, int64_t now, mcg_buf *out,
                         mcg_err *err);

/*
 * Wait up to timeout seconds for a controller to answer sync request gen
 * (cluster.h): print the answer on stdout and return 0, or say on stderr
 * (as "mcgit CMD: ...") that the pass failed or nobody answered, and return 1.
 */
int mcg_cli_sync_wait(const char *cmd, struct mcg_cluster *cl, uint64_t gen, double timeout);
/*
 * Options of the commands that ask the controller for a pass (sync, pool):
 * --cluster C (default $MCGIT_CLUSTER; NULL when neither: the caller says
 * so after checking its positional arguments), --wait, --timeout SECONDS
 * (default 60). Returns -1 when parsed (positional arguments from
 * argv[optind]), else the exit status to return (help, or a usage error).
 */
typedef struct mcg_cli_wait_args {
    const char *cluster;
    bool wait;
    double timeout;
    const char *now; /* sync --now POOL (sync's table only) */
} mcg_cli_wait_args;
int mcg_cli_wait_args_parse(const mcg_cmd *cmd, int argc, char **argv, mcg_cli_wait_args *out);
/* Their option table: the .opts of every command that parses with it. */
extern const mcg_opt mcg_cli_wait_opts[];

/*
 * The commands that sign (approve, heartbeat, rollback): --repo R (required),
 * --key FILE, --trust F and --revoked K (the trust root they verify what
 * they build on with; default git config mcgit.trust or
 * gpg.ssh.allowedSignersFile, mcgit.revoked or gpg.ssh.revocationFile) and
 * npos positional arguments (at argv[optind]). Returns -1 when parsed, else
 * the exit status to return (help, or a usage error).
 */
typedef struct mcg_cli_signer {
    const char *repo, *key, *trust, *revoked;
} mcg_cli_signer;
int mcg_cli_signer_args(const mcg_cmd *cmd, int argc, char **argv, int npos, mcg_cli_signer *a);
/*
 * Before such a command signs on top of rev (parents_only: of rev's
 * parents): load its trust root (above) and verify that history
 * (mcg_gitops_verify_base). 0, or an error in err.
 */
struct mcg_repo;
int mcg_cli_signer_check(struct mcg_repo *r, const mcg_cli_signer *a, const char *rev,
                         bool parents_only, mcg_err *err);
/* Their option table: the .opts of every command that parses with it. */
extern const mcg_opt mcg_cli_signer_opts[];

/* libgit2, libsodium and libcurl, once, from main before anything else; 0 or an exit status. */
int mcg_cli_init_libraries(void);

#endif
