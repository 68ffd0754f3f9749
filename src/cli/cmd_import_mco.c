/*
 * cmd_import_mco.c — `mcgit import-mco --from FILE|- DIR`: a config repo
 * from a running OpenShift cluster's MachineConfigs and pools.
 */
#include "cli/cli.h"
#include "fsio/fsio.h"
#include "gitops/gitops.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#define EXPORT_LIMIT (256u * 1024u * 1024u)

static int run(int argc, char **argv);

static const mcg_opt import_opts[] = {
    MCG_OPT_VALUE('f', "from", "FILE", "the export: a file, or - for standard input (required)"),
    MCG_OPT_HELP,
    MCG_OPT_END,
};

const mcg_cmd mcg_cmd_import_mco = {
    .name = "import-mco",
    .summary = "write a config repo from a running OpenShift cluster's MachineConfigs",
    .usage = "usage: mcgit import-mco --from FILE|- DIR\n"
             "\n"
             "Read what `oc get machineconfigs,machineconfigpools -o yaml` prints (a List,\n"
             "or a YAML stream of objects and lists, or either as JSON) and write a new\n"
             "config repo in DIR (which must not exist, or be empty), laid out as\n"
             "`mcgit init` lays one out, with `git init` done and nothing committed:\n"
             "\n"
             "  pools/NAME.yaml            each MachineConfigPool, its status and\n"
             "                             spec.configuration (MCO's target) left out\n"
             "  machineconfigs/NAME.yaml   each MachineConfig, the user's as they are;\n"
             "                             those the cluster's controllers generated\n"
             "                             (00-/01- templates, KubeletConfig and\n"
             "                             ContainerRuntimeConfig renders, registries:\n"
             "                             the generated-by-controller-version annotation\n"
             "                             or an ownerReference) and the installer's\n"
             "                             99-POOL-ssh carried over, marked by a comment\n"
             "                             and the annotation\n"
             "                             machineconfiguration.mcgit.io/imported-generated-by\n"
             "  not-imported/              what mcgit refuses, as it was exported\n"
             "  import-mco-report.txt      the report below\n"
             "\n"
             "MCO's own renders (rendered-*) are skipped: mcgit renders its own. The\n"
             "report, on stdout too, lists every object and its file, what could not be\n"
             "carried over and why (a field mcgit refuses, a remote source, a pool field\n"
             "mcgit has no use for), warnings, and for each pool whose current rendered\n"
             "config is in the export, mcgit's render of the new repo compared with it:\n"
             "\"no change\" with what was compared, or each file, unit, key or field that\n"
             "differs and why. Export the rendered configs too (the command above does)\n"
             "to get the comparison.\n"
             "\n"
             "Exit 0 once DIR is written, also when things were left out (see the report).\n"
             "An export that is not one (bad YAML, another kind, a bad or repeated name):\n"
             "one line naming the object, exit 1, nothing written. DIR is written beside\n"
             "itself and renamed into place at the end.\n",
    .run = run,
    .opts = import_opts,
};

static int read_export(const char *from, char **data, size_t *len, mcg_err *err)
{
    if (strcmp(from, "-") != 0)
        return mcg_read_file(from, EXPORT_LIMIT, data, len, err);
    mcg_buf b = MCG_BUF_INIT;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), stdin)) > 0 && b.len <= EXPORT_LIMIT)
        mcg_buf_put(&b, chunk, n);
    if (ferror(stdin) || b.len > EXPORT_LIMIT) {
        mcg_buf_free(&b);
        return mcg_err_set(err, MCG_EIO, "standard input: %s",
                           ferror(stdin) ? "read error" : "over 256 MiB");
    }
    *data = mcg_buf_detach(&b, len);
    return 0;
}

static int run(int argc, char **argv)
{
    const char *from = NULL;
    const mcg_optbind binds[] = {{'f', &from, NULL}, MCG_BIND_END};
    int ex = mcg_cli_parse(&mcg_cmd_import_mco, argc, argv, binds);
    if (ex >= 0)
        return ex;
    if (!from)
        return mcg_cli_usage_error(&mcg_cmd_import_mco, "--from FILE (or -) is required");
    if (argc - optind != 1)
        return mcg_cli_usage_error(&mcg_cmd_import_mco, "expected exactly one DIR");
    mcg_err err = {0};
    char *data = NULL;
    size_t len = 0;
    mcg_strv report = {0};
    int rc = read_export(from, &data, &len, &err);
    if (!rc)
        rc = mcg_source_import_mco(argv[optind], strcmp(from, "-") ? from : "<stdin>", data, len,
                                   &report, &err);
    if (rc)
        mcg_cli_error("import-mco", "%s", err.msg);
    for (size_t i = 0; !rc && i < report.n; i++)
        printf("%s\n", report.v[i]);
    mcg_strv_free(&report);
    free(data);
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}
