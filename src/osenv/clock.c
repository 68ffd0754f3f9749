/*
 * clock.c — the clock, one way: the monotonic clock in seconds (for
 * durations measured and reported), milliseconds (for deadlines) or a
 * timespec, and the wall clock as a timespec where a timestamp needs more
 * than time()'s seconds. The only clock_gettime of src/. The wall clock is time();
 * its formatting and parsing live in util (mcg_time_iso, mcg_human_duration,
 * mcg_parse_duration).
 */
#include "osenv/osenv.h"

#include <time.h>

double mcg_mono_seconds(void)
{
    struct timespec t;
    mcg_mono_now(&t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int64_t mcg_mono_ms(void)
{
    struct timespec t;
    mcg_mono_now(&t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

void mcg_mono_now(struct timespec *ts)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
}

void mcg_wall_now(struct timespec *ts)
{
    clock_gettime(CLOCK_REALTIME, ts);
}
