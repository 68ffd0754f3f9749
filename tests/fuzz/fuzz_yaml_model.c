/*
 * fuzz_yaml_model.c — the config repo's parsers (model/) on untrusted bytes:
 * YAML → MachineConfigs, pools, mcgit.yaml settings and the MachineConfiguration,
 * with Ignition validation inside; and a rendered spec or a disruption policy
 * given as JSON, as an agent reads them from the cluster.
 *
 * The first byte picks what the rest is: a file of the repo (by its path,
 * which decides what may be in it), a rendered spec, or a policy. A model
 * fed a file is finished (the cross-object checks) and freed; every problem
 * must come back as a diagnostic, never a crash, a leak or a hang.
 *
 * fuzz-sources: src/model/[a-z]*.c src/util/[a-z]*.c
 * fuzz-pkgs: yaml-0.1 jansson zlib libcrypto libsodium
 * fuzz-options: -max_len=65536
 */
#include "model/model.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    static const char *const paths[] = {"machineconfigs/fuzz.yaml", "pools/worker.yaml",
                                        "mcgit.yaml", "machineconfigs/cluster.yaml"};
    if (size < 1)
        return 0;
    unsigned sel = data[0] % 6;
    const char *body = (const char *)data + 1;
    size_t len = size - 1;
    if (sel < 4) {
        mcg_model *m = mcg_model_new();
        mcg_diags d = {0};
        mcg_model_add_file(m, paths[sel], body, len, &d);
        mcg_model_finish(m, &d);
        mcg_diags_free(&d);
        mcg_model_free(m);
    } else if (sel == 4) {
        mcg_ignition ign;
        memset(&ign, 0, sizeof(ign));
        mcg_err err = {0};
        if (mcg_ignition_parse_json(&ign, "fuzz", body, len, &err) != 0 && !err.msg[0])
            abort(); /* a refusal always says why */
        mcg_ignition_free(&ign);
    } else {
        mcg_disruption_policy p;
        memset(&p, 0, sizeof(p));
        mcg_err err = {0};
        if (mcg_policy_parse_json(&p, "fuzz", body, len, &err) == 0) {
            json_t *j = mcg_policy_to_json(&p);
            json_decref(j);
        } else if (!err.msg[0]) {
            abort();
        }
        mcg_policy_free(&p);
    }
    return 0;
}
