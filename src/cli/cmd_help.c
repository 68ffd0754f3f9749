/*
 * cmd_help.c — `mcgit help [CMD]` and `mcgit version`.
 */
#include "cli/cli.h"
#include "osenv/osenv.h"

#include <stdio.h>
#include <string.h>

static int run_help(int argc, char **argv);
static int run_version(int argc, char **argv);

const mcg_cmd mcg_cmd_help = {
    .name = "help",
    .summary = "show help for mcgit or one command",
    .usage = "usage: mcgit help [CMD]\n"
             "\n"
             "Without CMD, list the commands. With CMD, print its usage (the same text\n"
             "as `mcgit CMD --help`).\n",
    .run = run_help,
};

const mcg_cmd mcg_cmd_version = {
    .name = "version",
    .summary = "print mcgit's version",
    .usage = "usage: mcgit version\n"
             "\n"
             "Print mcgit's version, then one line with the versions of libgit2, libyaml,\n"
             "jansson, OpenSSL and libsodium: libgit2's, libyaml's and libsodium's as\n"
             "loaded when it runs, jansson's and OpenSSL's as it was compiled against.\n"
             "(It links libcurl and libmicrohttpd too; their versions are not printed.)\n",
    .run = run_version,
};

static int run_help(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "--help") && strcmp(argv[1], "-h")) {
        const mcg_cmd *c = mcg_cmd_find(argv[1]);
        if (!c) {
            mcg_log_line("help", "'%s' is not a command", argv[1]);
            return MCG_EXIT_USAGE;
        }
        return mcg_cli_help(c);
    }
    if (argc >= 2)
        return mcg_cli_help(&mcg_cmd_help);
    puts("usage: mcgit CMD [OPTIONS]\n"
         "\n"
         "mcgit keeps node configuration (files, systemd units, SSH keys) in a signed\n"
         "git repository, renders each pool's MachineConfigs into one content-hashed\n"
         "config and rolls it out to the nodes.\n"
         "\n"
         "commands:");
    for (const mcg_cmd *const *c = mcg_commands; *c; c++)
        printf("  %-12s %s\n", (*c)->name, (*c)->summary);
    puts("\nRun `mcgit help CMD` for one command's options. Exit status: 0 success,\n"
         "1 refused or failed, 2 usage error.");
    return MCG_EXIT_OK;
}

#include <git2.h>
#include <jansson.h>
#include <openssl/opensslv.h>
#include <sodium.h>
#include <yaml.h>

static int run_version(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
        return mcg_cli_help(&mcg_cmd_version);
    if (argc >= 2)
        return mcg_cli_usage_error(&mcg_cmd_version, "unexpected argument '%s'", argv[1]);
    int maj, min, rev;
    git_libgit2_version(&maj, &min, &rev);
    printf("mcgit %s\n", MCGIT_VERSION);
    printf("libgit2 %d.%d.%d, libyaml %s, jansson %s, %s, libsodium %s\n", maj, min, rev,
           yaml_get_version_string(), JANSSON_VERSION, OPENSSL_VERSION_TEXT,
           sodium_version_string());
    return MCG_EXIT_OK;
}
