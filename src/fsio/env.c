/*
 * env.c — numeric settings read from the environment, one way: a whole
 * number in range, or an error naming the variable (junk is never taken
 * for the default).
 */
#include "fsio/fsio.h"

#include <stdlib.h>

int mcg_env_u64(const char *name, uint64_t def, uint64_t min, uint64_t max, uint64_t *out,
                mcg_err *err)
{
    const char *v = getenv(name);
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
