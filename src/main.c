/*
 * main.c — the command table. Everything else lives in src/cli/.
 */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

extern const mcg_cmd mcg_cmd_help, mcg_cmd_version, mcg_cmd_init, mcg_cmd_validate, mcg_cmd_render,
    mcg_cmd_plan, mcg_cmd_verify, mcg_cmd_log, mcg_cmd_rollback, mcg_cmd_approve, mcg_cmd_heartbeat,
    mcg_cmd_fetch, mcg_cmd_hook, mcg_cmd_node, mcg_cmd_controller, mcg_cmd_status, mcg_cmd_demo,
    mcg_cmd_pool, mcg_cmd_sync, mcg_cmd_site, mcg_cmd_import_mco, mcg_cmd_serve_config;
extern const mcg_cmd mcg_cmd_bundle;
extern const mcg_cmd mcg_cmd_agent;

const mcg_cmd *const mcg_commands[] = {
    &mcg_cmd_init,
    &mcg_cmd_import_mco,
    &mcg_cmd_validate,
    &mcg_cmd_render,
    &mcg_cmd_plan,
    &mcg_cmd_verify,
    &mcg_cmd_log,
    &mcg_cmd_rollback,
    &mcg_cmd_approve,
    &mcg_cmd_heartbeat,
    &mcg_cmd_fetch,
    &mcg_cmd_bundle,
    &mcg_cmd_hook,
    &mcg_cmd_controller,
    &mcg_cmd_serve_config,
    &mcg_cmd_node,
    &mcg_cmd_agent,
    &mcg_cmd_status,
    &mcg_cmd_pool,
    &mcg_cmd_sync,
    &mcg_cmd_site,
    &mcg_cmd_demo,
    &mcg_cmd_help,
    &mcg_cmd_version,
    NULL,
};

int main(int argc, char **argv)
{
    int rc = mcg_cli_init_libraries();
    if (rc)
        return rc;
    if (argc < 2) {
        mcg_cmd_help.run(1, argv);
        return MCG_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h"))
        name = "help";
    if (!strcmp(name, "--version"))
        name = "version";
    const mcg_cmd *cmd = mcg_cmd_find(name);
    if (!cmd)
        return mcg_cli_unknown_command(name);
    return cmd->run(argc - 1, argv + 1);
}
