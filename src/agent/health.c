/*
 * health.c — the command lines of a pool's health checks (the rendered
 * spec's mcgitHealth): a unit is active when `systemctl is-active UNIT`
 * exits 0, and has failed for good when `systemctl is-failed UNIT` does; a
 * command passes when it exits 0. Units go through the agent's --systemctl,
 * commands through its --host-exec prefix (how a simulated node runs them);
 * on a node that is neither live nor given those, a check cannot run and is
 * skipped. The agent's health phase (agent.c) runs them until all pass or
 * the timeout ends.
 */
#include "agent/agent_int.h"

#include <stdlib.h>
#include <string.h>

char *mcg_health_cmd(const json_t *check, const mcg_health_env *env, bool failed_probe)
{
    const char *unit = json_string_value(json_object_get(check, "unit"));
    const json_t *cmd = json_object_get(check, "command");
    mcg_buf b = MCG_BUF_INIT;
    if (unit && mcg_name_is_unit(unit)) {
        if (!env->live && !env->systemctl)
            return NULL;
        mcg_buf_printf(&b, "%s %s ", env->systemctl ? env->systemctl : "systemctl",
                       failed_probe ? "is-failed --quiet" : "is-active --quiet");
        mcg_sh_quote(&b, unit);
    } else if (json_is_array(cmd) && json_array_size(cmd) && !failed_probe) {
        if (!env->live && !env->host_exec)
            return NULL;
        if (env->host_exec)
            mcg_buf_printf(&b, "%s ", env->host_exec);
        size_t i;
        json_t *w;
        json_array_foreach(cmd, i, w) {
            if (i)
                mcg_buf_putc(&b, ' ');
            mcg_sh_quote(&b, json_string_value(w) ? json_string_value(w) : "");
        }
    } else {
        return NULL;
    }
    size_t n;
    return mcg_buf_detach(&b, &n);
}

const char *mcg_health_name(const json_t *check)
{
    const char *n = json_string_value(json_object_get(check, "name"));
    return n ? n : "?";
}
