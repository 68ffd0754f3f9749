/*
 * tz.c — IANA time zones, from the host's time zone database
 * ($TZDIR, else /usr/share/zoneinfo): whether a name exists, and a UTC
 * time as local time in a named zone (maintenance windows).
 *
 * The C library converts only in the process's zone ($TZ), so a conversion
 * sets TZ, converts and puts it back, under a lock; the rest of mcgit
 * formats times in UTC only (gmtime_r), which TZ does not touch.
 */
#include "fsio/fsio.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static pthread_mutex_t tz_lock = PTHREAD_MUTEX_INITIALIZER;

bool mcg_tz_known(const char *tz)
{
    if (!tz || !*tz || tz[0] == '/' || strstr(tz, ".."))
        return false;
    if (!strcmp(tz, "UTC"))
        return true;
    const char *dir = getenv("TZDIR");
    char *path = mcg_sprintf("%s/%s", dir && *dir ? dir : "/usr/share/zoneinfo", tz);
    struct stat st;
    bool ok = stat(path, &st) == 0 && S_ISREG(st.st_mode);
    free(path);
    return ok;
}

int mcg_tz_local(const char *tz, int64_t t, struct tm *out)
{
    if (!mcg_tz_known(tz))
        return MCG_ENOTFOUND;
    pthread_mutex_lock(&tz_lock);
    const char *old = getenv("TZ");
    char *saved = old ? mcg_strdup(old) : NULL;
    char *want = mcg_sprintf(":%s", tz);
    setenv("TZ", want, 1);
    tzset();
    time_t tt = (time_t)t;
    bool ok = localtime_r(&tt, out) != NULL;
    if (saved)
        setenv("TZ", saved, 1);
    else
        unsetenv("TZ");
    tzset();
    pthread_mutex_unlock(&tz_lock);
    free(want);
    free(saved);
    return ok ? 0 : MCG_EINVAL;
}
