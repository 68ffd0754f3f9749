/*
 * cmd_validate.c — `mcgit validate [DIR]`: every problem, or silence.
 */
#include "cli/cli.h"
#include "gitops/gitops.h"

#include <getopt.h>
#include <stdio.h>

static int run(int argc, char **argv);

static const mcg_opt validate_opts[] = {
    MCG_OPT_HELP,
    MCG_OPT_END,
};

const mcg_cmd mcg_cmd_validate = {
    .name = "validate",
    .summary = "check a config directory and report every problem",
    .usage = "usage: mcgit validate [DIR]\n"
             "\n"
             "Parse and check DIR (default: the current directory) as a config repo:\n"
             "mcgit.yaml, pools/*.yaml and machineconfigs/*.yaml, and that every pool\n"
             "renders. Valid: exit 0, nothing printed. Otherwise every problem found is\n"
             "printed to stderr as `file:line: message` and the exit status is 1.\n"
             "What Ignition only warns about (a key it does not know, such as `networkd: {}`\n"
             "or a misspelt `mdoe`), and a MachineConfig that no pool's\n"
             "machineConfigSelector selects, are printed as `warning: file:line: message`\n"
             "and leave the exit status alone, unless mcgit.yaml says `warnings: error`.\n",
    .run = run,
    .opts = validate_opts,
};

static int run(int argc, char **argv)
{
    int ex = mcg_cli_parse(&mcg_cmd_validate, argc, argv, NULL); /* --help only */
    if (ex >= 0)
        return ex;
    if (argc - optind > 1)
        return mcg_cli_usage_error(&mcg_cmd_validate, "expected at most one DIR");
    const char *dir = optind < argc ? argv[optind] : ".";
    mcg_diags diags = {0};
    mcg_err err = {0};
    mcg_model *m = NULL;
    mcg_render *r = NULL;
    mcg_strv pwarn = {0};
    int rc = mcg_source_load_dir(&m, dir, &diags, &err);
    if (rc == 0)
        rc = mcg_render_model(&r, m, &diags);
    if (rc != MCG_EIO) {
        int prc = mcg_source_check_policy_dir(dir, &diags, &pwarn);
        if (!rc)
            rc = prc;
    }
    for (size_t i = 0; i < pwarn.n; i++) {
        if (m && m->settings.warnings_as_errors) {
            mcg_diags_add(&diags, "%s", pwarn.v[i]);
            rc = rc ? rc : MCG_EINVAL;
        } else {
            mcg_cli_error("validate", "warning: %s", pwarn.v[i]);
        }
    }
    mcg_strv_free(&pwarn);
    if (rc == MCG_EIO)
        mcg_cli_error("validate", "%s", err.msg);
    if (m && !m->settings.warnings_as_errors)
        for (size_t i = 0; i < m->warnings.count; i++)
            mcg_cli_error("validate", "warning: %s", m->warnings.msgs[i]);
    mcg_cli_diags("validate", &diags);
    mcg_render_free(r);
    mcg_model_free(m);
    mcg_diags_free(&diags);
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}
