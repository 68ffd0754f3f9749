/*
 * env.c — the environment, read one way: mcg_env_get is the only getenv of
 * src/, and numeric settings are a whole number in range or an error naming
 * the variable (junk is never taken for the default). Nothing in src/ sets
 * the environment.
 */
#include "osenv/osenv.h"

#include <stdlib.h>

const char *mcg_env_get(const char *name)
{
    return getenv(name);
}

int mcg_env_u64(const char *name, uint64_t def, uint64_t min, uint64_t max, uint64_t *out,
                mcg_err *err)
{
    const char *v = mcg_env_get(name);
    uint64_t x = 0;
    *out = def;
    if (!v || !*v)
        return 0;
    if (!mcg_parse_u64(v, &x) || x < min || x > max)
        return mcg_err_set(err, MCG_EINVAL, "%s='%.40s': not a whole number from %llu to %llu",
                           name, v, (unsigned long long)min, (unsigned long long)max);
    *out = x;
    return 0;
}
