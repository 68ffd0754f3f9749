/*
 * fuzz_kubeconfig.c — kubeconfig files (YAML or JSON) on untrusted bytes,
 * as `--cluster kube:FILE` reads them: mcg_kube_config_parse (pure: the
 * files it names are not read).
 *
 * A config that parses must name a server; a refusal always says why and
 * names the file; either way the result frees cleanly.
 *
 * fuzz-sources: src/cluster/kube_config.c src/model/yaml.c src/util/[a-z]*.c
 * fuzz-pkgs: yaml-0.1 jansson zlib libcrypto libsodium
 * fuzz-options: -max_len=65536
 */
#include "cluster/kube_int.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    mcg_kube_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    mcg_err err = {0};
    if (mcg_kube_config_parse(&cfg, "/etc/mcgit/kubeconfig", (const char *)data, size, &err) == 0) {
        if (!cfg.server || !*cfg.server)
            abort();
    } else if (!strstr(err.msg, "kubeconfig")) {
        abort();
    }
    mcg_kube_config_free(&cfg);
    return 0;
}
