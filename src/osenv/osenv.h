/*
 * osenv — what mcgit takes from the process's environment, one way each:
 * the clock, environment variables, the logger (every message to stderr)
 * and time zones. Nothing else in src/ reads the clock or the environment
 * or writes to stderr itself, and nothing changes the process environment
 * (the controller is threaded: a change would race every reader).
 */
#ifndef MCG_OSENV_H
#define MCG_OSENV_H

#include <stdarg.h>
#include <time.h>

#include "util/util.h"

/* ------------------------------------------------------------- clock */

/* The monotonic clock: seconds (durations), milliseconds (deadlines). */
double mcg_mono_seconds(void);
int64_t mcg_mono_ms(void);
/* The monotonic clock as a timespec (deadlines computed field by field). */
void mcg_mono_now(struct timespec *ts);
/* The wall clock (CLOCK_REALTIME) as a timespec: sub-second timestamps. */
void mcg_wall_now(struct timespec *ts);

/* ------------------------------------------------------- environment */

/* The environment variable name, or NULL when unset: the one reader. */
const char *mcg_env_get(const char *name);

/*
 * The environment variable name as a whole number from min to max into
 * *out: def when unset or empty; MCG_EINVAL, naming the variable, the value
 * and the range, when it is anything else (junk is refused, never taken as
 * the default). The one reader of numeric settings from the environment.
 */
int mcg_env_u64(const char *name, uint64_t def, uint64_t min, uint64_t max, uint64_t *out,
                mcg_err *err);

/* ------------------------------------------------------------ logger */

/*
 * The one logger: "mcgit WHO: message" (WHO NULL or "": the message alone)
 * on stderr, one write per line, so that lines from threads never
 * interleave.
 */
void mcg_log_line(const char *who, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mcg_log_vline(const char *who, const char *fmt, va_list ap);
/* Text on stderr as it is, no newline added: a progress meter's "\r..." redraw. */
void mcg_log_partial(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* --------------------------------------------------------- time zones */

/* Whether tz names a zone of the host's time zone database ("UTC" always does). */
bool mcg_tz_known(const char *tz);
/*
 * UTC time t as local time in zone tz into *out (tm_gmtoff and tm_isdst
 * set), read from the zone's TZif file ($TZDIR, else /usr/share/zoneinfo)
 * without touching the process's TZ; MCG_ENOTFOUND for an unknown zone,
 * MCG_EINVAL for a file that is not TZif.
 */
int mcg_tz_local(const char *tz, int64_t t, struct tm *out);

#endif
