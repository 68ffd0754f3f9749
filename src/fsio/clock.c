/*
 * clock.c — the monotonic clock, one way: seconds (for durations measured
 * and reported) and milliseconds (for deadlines). The wall clock is time();
 * its formatting and parsing live in util (mcg_time_iso, mcg_human_duration,
 * mcg_parse_duration).
 */
#include "fsio/fsio.h"

#include <time.h>

double mcg_mono_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int64_t mcg_mono_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}
