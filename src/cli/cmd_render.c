/*
 * cmd_render.c — `mcgit render [DIR] [-o names|json]`: each pool's rendered
 * config name (or the whole rendered documents) for a config directory.
 */
#include "cli/cli.h"
#include "gitops/gitops.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static int run(int argc, char **argv);

const mcg_cmd mcg_cmd_render = {
    "render",
    "render each pool's MachineConfigs into one config",
    "usage: mcgit render [DIR] [-o names|json]\n"
    "\n"
    "Render the config directory DIR (default: the current directory) without\n"
    "touching git. For each pool: select its MachineConfigs (custom pools inherit\n"
    "worker's), merge them in name order, and name the result\n"
    "rendered-<pool>-<hash>, hash = first 32 hex digits of the SHA-256 of the\n"
    "canonical spec. The same input gives the same bytes on any machine.\n"
    "\n"
    "  -o names   one line per pool: `<pool> rendered-<pool>-<hash>` (default)\n"
    "  -o json    one JSON document: {\"pools\": {\"<pool>\": {\"name\", \n"
    "             \"machineConfigs\": [...], \"spec\": {\"config\": <Ignition 3.4.0>}}}}\n"
    "\n"
    "Invalid input: every problem as `file:line: message` on stderr, exit 1.\n",
    run,
};

static int run(int argc, char **argv)
{
    static const struct option opts[] = {
        {"help", no_argument, 0, 'h'}, {"output", required_argument, 0, 'o'}, {0, 0, 0, 0}};
    const char *format = "names";
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        switch (c) {
        case 'h':
            return mcg_cli_help(&mcg_cmd_render);
        case 'o':
            format = optarg;
            break;
        default:
            return mcg_cli_usage_error(&mcg_cmd_render, NULL);
        }
    }
    if (strcmp(format, "names") && strcmp(format, "json"))
        return mcg_cli_usage_error(&mcg_cmd_render, "unknown output format '%s'", format);
    if (argc - optind > 1)
        return mcg_cli_usage_error(&mcg_cmd_render, "expected at most one DIR");
    const char *dir = optind < argc ? argv[optind] : ".";
    mcg_diags diags = {0};
    mcg_err err = {0};
    mcg_model *m = NULL;
    mcg_render *r = NULL;
    int rc = mcg_source_load_dir(&m, dir, &diags, &err);
    if (rc == 0)
        rc = mcg_render_model(&r, m, &diags);
    if (rc) {
        if (rc == MCG_EIO)
            mcg_cli_error("render", "%s", err.msg);
        mcg_cli_diags("render", &diags);
        goto out;
    }
    if (!strcmp(format, "names")) {
        for (size_t i = 0; i < r->n; i++)
            printf("%s %s\n", r->pools[i].pool, r->pools[i].name);
    } else {
        json_t *pools = json_object();
        for (size_t i = 0; i < r->n; i++) {
            const mcg_rendered_pool *rp = &r->pools[i];
            json_t *mcs = json_array();
            for (size_t j = 0; j < rp->mcs.n; j++)
                json_array_append_new(mcs, json_string(rp->mcs.v[j]));
            json_t *spec = json_loadb(rp->spec, rp->spec_len, 0, NULL);
            json_object_set_new(pools, rp->pool,
                                json_pack("{s:s,s:o,s:o}", "name", rp->name, "machineConfigs",
                                          mcs, "spec", spec));
        }
        json_t *doc = json_pack("{s:o}", "pools", pools);
        mcg_buf b = MCG_BUF_INIT;
        mcg_json_canonical(doc, &b, &err);
        fwrite(b.ptr, 1, b.len, stdout);
        mcg_buf_free(&b);
        json_decref(doc);
    }
out:
    mcg_render_free(r);
    mcg_model_free(m);
    mcg_diags_free(&diags);
    return rc ? MCG_EXIT_FAIL : MCG_EXIT_OK;
}
