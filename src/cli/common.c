/*
 * common.c — what every command shares: messages, help, file helpers.
 */
#include "cli/cli.h"
#include "fsio/fsio.h"
#include "cluster/cluster.h"
#include "gitops/gitops.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <getopt.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int mcg_verbosity = 1;

const mcg_cmd *mcg_cmd_find(const char *name)
{
    for (const mcg_cmd *const *c = mcg_commands; *c; c++)
        if (!strcmp((*c)->name, name))
            return *c;
    return NULL;
}

void mcg_cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mcg_log_vline(cmd, fmt, ap);
    va_end(ap);
}

void mcg_cli_info(const char *fmt, ...)
{
    if (mcg_verbosity < 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    mcg_log_vline(NULL, fmt, ap);
    va_end(ap);
}

/* The long option arg ("--name" or "--name=value") names, as getopt reads
 * it (exactly, or a unique abbreviation), or NULL. */
static const struct option *long_named(const struct option *opts, const char *arg)
{
    size_t n = strcspn(arg + 2, "=");
    const struct option *found = NULL;
    int prefixed = 0;
    for (const struct option *o = opts; o->name; o++) {
        if (strlen(o->name) == n && !strncmp(o->name, arg + 2, n))
            return o;
        if (n && !strncmp(o->name, arg + 2, n) && !prefixed++)
            found = o;
    }
    return prefixed == 1 ? found : NULL;
}

/* An unknown or ambiguous long option arg ("--name[=value]"). */
static void bad_long(const mcg_cmd *cmd, const struct option *opts, const char *arg)
{
    char *name = mcg_strndup(arg + 2, strcspn(arg + 2, "="));
    const char *names[64];
    size_t n = 0, prefixed = 0;
    mcg_buf which = MCG_BUF_INIT;
    for (const struct option *o = opts; o->name && n < 63; o++) {
        names[n++] = o->name;
        if (*name && !strncmp(o->name, name, strlen(name)))
            mcg_buf_printf(&which, "%s--%s", prefixed++ ? ", " : "", o->name);
    }
    names[n] = NULL;
    const char *near = mcg_did_you_mean(name, names);
    if (prefixed > 1)
        fprintf(stderr, "mcgit %s: option '--%s' is ambiguous: %s\n", cmd->name, name, which.ptr);
    else if (near)
        fprintf(stderr, "mcgit %s: unrecognized option '--%s' (did you mean '--%s'?)\n", cmd->name,
                name, near);
    else
        fprintf(stderr, "mcgit %s: unrecognized option '--%s'\n", cmd->name, name);
    mcg_buf_free(&which);
    free(name);
}

/* getopt_long(argc, argv, shortopts, longopts, NULL), saying itself what
 * is wrong (next_sub). */
static int next_opt(const mcg_cmd *cmd, int argc, char **argv, const char *shortopts,
                    const struct option *longopts)
{
    char spec[64];
    if (!mcg_bfmt(spec, sizeof(spec), ":%s", shortopts))
        abort(); /* a command's option string: short */
    opterr = 0;
    int c = getopt_long(argc, argv, spec, longopts, NULL);
    if (c != '?' && c != ':')
        return c;
    /* getopt has stepped past the element it complains about */
    const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";
    const struct option *o = !strncmp(arg, "--", 2) ? long_named(longopts, arg) : NULL;
    if (c == ':' && o)
        fprintf(stderr, "mcgit %s: option '--%s' requires an argument\n", cmd->name, o->name);
    else if (c == ':')
        fprintf(stderr, "mcgit %s: option '-%c' requires an argument\n", cmd->name, optopt);
    else if (optopt && o && o->has_arg == no_argument && strchr(arg, '='))
        fprintf(stderr, "mcgit %s: option '--%s' takes no argument\n", cmd->name, o->name);
    else if (optopt)
        fprintf(stderr, "mcgit %s: unrecognized option '-%c'\n", cmd->name, optopt);
    else if (!strncmp(arg, "--", 2))
        bad_long(cmd, longopts, arg);
    else
        fprintf(stderr, "mcgit %s: unrecognized option '%s'\n", cmd->name, arg);
    return '?';
}

/* The most options a command may have (a fixed table: no allocation per call). */
#define MAX_OPTS 32

/* The next option's key of those sub takes, -1 after the last, or '?' after a bad one (said). */
static int next_sub(const mcg_cmd *cmd, unsigned sub, int argc, char **argv)
{
    struct option longopts[MAX_OPTS + 1];
    char shortopts[2 * MAX_OPTS + 1];
    size_t n = 0, s = 0;
    for (const mcg_opt *o = cmd->opts; o->key; o++) {
        if (o - cmd->opts >= MAX_OPTS)
            abort(); /* a command's table: small */
        if (o->only && !(o->only & sub))
            continue;
        if (o->name)
            longopts[n++] = (struct option){.name = o->name,
                                            .has_arg = o->arg ? required_argument : no_argument,
                                            .val = o->key};
        if (o->shortname) {
            shortopts[s++] = o->shortname;
            if (o->arg)
                shortopts[s++] = ':';
        }
    }
    longopts[n] = (struct option){0};
    shortopts[s] = '\0';
    return next_opt(cmd, argc, argv, shortopts, longopts);
}

int mcg_cli_parse_next(const mcg_cmd *cmd, unsigned sub, int argc, char **argv,
                       const mcg_optbind *binds, int *ex)
{
    int c;
    while ((c = next_sub(cmd, sub, argc, argv)) != -1) {
        if (c == 'h') {
            *ex = mcg_cli_help(cmd);
            return -1;
        }
        if (c == '?') {
            *ex = mcg_cli_usage_error(cmd, NULL);
            return -1;
        }
        const mcg_optbind *b = binds;
        while (b && b->key && b->key != c)
            b++;
        if (!b || !b->key)
            return c;
        if (b->str)
            *b->str = optarg;
        else
            *b->flag = true;
    }
    return 0;
}

int mcg_cli_parse(const mcg_cmd *cmd, int argc, char **argv, const mcg_optbind *binds)
{
    int ex;
    optind = 1;
    int c = mcg_cli_parse_next(cmd, ~0u, argc, argv, binds, &ex);
    if (c > 0)
        abort(); /* an option of cmd's table with no binding: a bug of the command */
    return c < 0 ? ex : -1;
}

int mcg_cli_unknown_command(const char *name)
{
    const char *names[64];
    size_t n = 0;
    for (const mcg_cmd *const *c = mcg_commands; *c && n < 63; c++)
        names[n++] = (*c)->name;
    names[n] = NULL;
    const char *near = mcg_did_you_mean(name, names);
    if (near)
        fprintf(stderr, "mcgit: '%s' is not a command (did you mean '%s'?); see 'mcgit help'\n",
                name, near);
    else
        fprintf(stderr, "mcgit: '%s' is not a command; see 'mcgit help'\n", name);
    return MCG_EXIT_USAGE;
}

int mcg_cli_usage_error(const mcg_cmd *cmd, const char *fmt, ...)
{
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        mcg_log_vline(cmd->name, fmt, ap);
        va_end(ap);
    }
    /* mcg_cli_parse_next has already named a bad option on its own line */
    fprintf(stderr, "see 'mcgit help %s'\n", cmd->name);
    return MCG_EXIT_USAGE;
}

const char *mcg_cli_cluster(const char *opt)
{
    if (opt)
        return opt;
    const char *env = getenv("MCGIT_CLUSTER");
    return env && *env ? env : NULL;
}

/* An option's term in the option list: "-c, --name ARG", "--name ARG", "-c ARG". */
static void opt_term(const mcg_opt *o, char *out, size_t size)
{
    char s[8] = "";
    if (o->shortname)
        mcg_bfmt(s, sizeof(s), "-%c%s", o->shortname, o->name ? ", " : "");
    if (!mcg_bfmt(out, size, "%s%s%s%s%s", s, o->name ? "--" : "", o->name ? o->name : "",
                  o->arg ? " " : "", o->arg ? o->arg : ""))
        abort(); /* a command's option: short */
}

/* A term longer than this puts its text on the next line. */
#define TERM_WIDTH 24

/*
 * The option list, as git's parse-options prints it: "  TERM   text", the
 * text's further lines indented to the same column; only options with help.
 */
static void print_opts(const mcg_opt *opts)
{
    char term[128];
    size_t width = 0;
    for (const mcg_opt *o = opts; o->key; o++) {
        opt_term(o, term, sizeof(term));
        if (o->help && strlen(term) <= TERM_WIDTH && strlen(term) > width)
            width = strlen(term);
    }
    if (!width)
        return;
    fputs("\noptions:\n", stdout);
    for (const mcg_opt *o = opts; o->key; o++) {
        if (!o->help)
            continue;
        opt_term(o, term, sizeof(term));
        int col = (int)width + 3;
        if (strlen(term) > width)
            printf("  %s\n%*s", term, col + 2, "");
        else
            printf("  %-*s", col, term);
        for (const char *p = o->help; *p;) {
            size_t len = strcspn(p, "\n");
            printf("%.*s\n", (int)len, p);
            p += len;
            if (*p && *++p)
                printf("%*s", col + 2, "");
        }
    }
}

int mcg_cli_help(const mcg_cmd *cmd)
{
    fputs(cmd->usage, stdout);
    if (cmd->opts)
        print_opts(cmd->opts);
    return MCG_EXIT_OK;
}

void mcg_cli_diags(const char *cmd, const mcg_diags *d)
{
    /* by file, then line, then message, whatever order the checks ran in */
    mcg_diags sorted = {0};
    for (size_t i = 0; i < d->count; i++)
        mcg_diags_add(&sorted, "%s", d->msgs[i]);
    mcg_diags_sort(&sorted);
    for (size_t i = 0; i < sorted.count; i++)
        fprintf(stderr, "mcgit %s: %s\n", cmd, sorted.msgs[i]);
    mcg_diags_free(&sorted);
}

#include "trust/trust.h"

int mcg_cli_load_trust(mcg_signers **out, const char *path, const char *revoked, mcg_err *err)
{
    char *data = NULL;
    size_t len = 0;
    mcg_signers *s = NULL;
    *out = NULL;
    int rc = mcg_read_file_named(path, MCG_SIGNERS_MAX_TEXT, &data, &len, err);
    if (rc == 0)
        rc = mcg_signers_parse(&s, path, data, len, err);
    if (rc)
        mcg_err_prefix(err, "trust root (an allowed_signers file)");
    free(data);
    data = NULL;
    if (rc == 0 && revoked && *revoked) {
        rc = mcg_read_file_named(revoked, MCG_REVOKED_MAX_SIZE, &data, &len, err);
        if (rc == 0)
            rc = mcg_signers_revoke(s, revoked, data, len, err);
        free(data);
    }
    if (rc == 0) {
        *out = s; /* transferred */
        s = NULL;
    }
    mcg_signers_free(s);
    return rc;
}

const mcg_opt mcg_cli_signer_opts[] = {
    MCG_OPT_HELP,
    MCG_OPT_VALUE('r', "repo", "R", "the config repo"),
    MCG_OPT_VALUE('k', "key", "FILE",
                  "the private key to sign with (default: git config\n"
                  "user.signingkey)"),
    MCG_OPT_END,
};

int mcg_cli_signer_args(const mcg_cmd *cmd, int argc, char **argv, int npos, const char **repo,
                        const char **key)
{
    *repo = *key = NULL;
    const mcg_optbind binds[] = {{'r', repo, NULL}, {'k', key, NULL}, MCG_BIND_END};
    int ex = mcg_cli_parse(cmd, argc, argv, binds);
    if (ex >= 0)
        return ex;
    if (!*repo || argc - optind != npos)
        return mcg_cli_usage_error(cmd,
                                   npos ? "expected --repo R and one REV" : "--repo is required");
    return -1;
}

/*
 * The libraries, initialised once, before any thread starts (libcurl's
 * global initialisation is not thread-safe): libgit2 with fsync of every
 * repository write, libsodium, libcurl. Modules call the same idempotent
 * initialisers for entry points that are not this program (unit tests,
 * fuzzers, benchmarks); after this they do nothing.
 */
int mcg_cli_init_libraries(void)
{
    if (mcg_gitops_lib_init() < 0 || sodium_init() < 0 || mcg_cluster_lib_init() != 0) {
        fprintf(stderr, "mcgit: a library (libgit2, libsodium or libcurl) failed to initialise\n");
        return MCG_EXIT_FAIL;
    }
    return 0;
}
