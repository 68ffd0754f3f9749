/*
 * common.c — what every command shares: messages, help, file helpers.
 */
#include "cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <getopt.h>
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
    fprintf(stderr, "mcgit %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void mcg_cli_info(const char *fmt, ...)
{
    if (mcg_verbosity < 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int mcg_cli_usage_error(const mcg_cmd *cmd, const char *fmt, ...)
{
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "mcgit %s: ", cmd->name);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
    /* getopt has already named a bad option on its own line */
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

int mcg_cli_help(const mcg_cmd *cmd)
{
    fputs(cmd->usage, stdout);
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
    int rc = mcg_read_file(path, MCG_SIGNERS_MAX_TEXT, &data, &len, err);
    if (rc == 0)
        rc = mcg_signers_parse(&s, path, data, len, err);
    free(data);
    data = NULL;
    if (rc == 0 && revoked && *revoked) {
        rc = mcg_read_file(revoked, MCG_REVOKED_MAX_SIZE, &data, &len, err);
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

int mcg_cli_signer_args(const mcg_cmd *cmd, int argc, char **argv, int npos, const char **repo,
                        const char **key)
{
    static const struct option opts[] = {{"help", no_argument, 0, 'h'},
                                         {"repo", required_argument, 0, 'r'},
                                         {"key", required_argument, 0, 'k'},
                                         {0, 0, 0, 0}};
    int c;
    *repo = *key = NULL;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'h': return mcg_cli_help(cmd);
        case 'r': *repo = optarg; break;
        case 'k': *key = optarg; break;
        default: return mcg_cli_usage_error(cmd, NULL);
        }
    }
    if (!*repo || argc - optind != npos)
        return mcg_cli_usage_error(cmd, npos ? "expected --repo R and one REV"
                                             : "--repo is required");
    return -1;
}
