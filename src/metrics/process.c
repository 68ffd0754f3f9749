/*
 * process.c — the standard Prometheus process metrics (the names every
 * client library exports: process_resident_memory_bytes, process_open_fds,
 * ...), read from /proc/self when /metrics is scraped. They are how an
 * operator sees a daemon leak memory or descriptors over weeks.
 *
 * /proc/self/stat gives CPU time, start time (clock ticks since boot, with
 * btime from /proc/stat), virtual and resident size; the descriptors are
 * the entries of /proc/self/fd, less the one that lists them. A value that
 * cannot be read is left as it was (0 at first), never a failed scrape.
 */
#include "metrics/metrics.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static const struct {
    const char *name, *help;
    mcg_metric_type type;
} families[] = {
    {"process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
     MCG_METRIC_COUNTER},
    {"process_open_fds", "Number of open file descriptors.", MCG_METRIC_GAUGE},
    {"process_max_fds", "Maximum number of open file descriptors.", MCG_METRIC_GAUGE},
    {"process_resident_memory_bytes", "Resident memory size in bytes.", MCG_METRIC_GAUGE},
    {"process_virtual_memory_bytes", "Virtual memory size in bytes.", MCG_METRIC_GAUGE},
    {"process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
     MCG_METRIC_GAUGE},
};

int mcg_metrics_process_declare(mcg_metrics *m, mcg_err *err)
{
    for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
        double v;
        if (mcg_metrics_get(m, families[i].name, NULL, &v))
            continue; /* declared (and set) by an earlier server on this registry */
        int rc = mcg_metrics_declare(m, families[i].name, families[i].type, families[i].help, NULL,
                                     NULL, 0, err);
        if (rc)
            return rc;
        /* the series exists from the start */
        if (families[i].type == MCG_METRIC_COUNTER)
            mcg_metrics_add(m, families[i].name, NULL, 0);
        else
            mcg_metrics_set(m, families[i].name, NULL, 0);
    }
    return 0;
}

/* The first line of a small /proc file into buf; false when unreadable. */
static bool read_line(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    bool ok = fgets(buf, (int)n, f) != NULL;
    fclose(f);
    return ok;
}

/* btime (boot time, seconds since the epoch) from /proc/stat; 0 unknown. */
static unsigned long long boot_time(void)
{
    char line[256];
    unsigned long long bt = 0;
    FILE *f = fopen("/proc/stat", "re");
    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "btime %llu", &bt) == 1)
            break;
    fclose(f);
    return bt;
}

/* Entries of /proc/self/fd, less the one open to read it; -1 unknown. */
static long open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    long n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n > 0 ? n - 1 : 0;
}

void mcg_metrics_process_update(mcg_metrics *m)
{
    char stat[1024];
    long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    const char *p = NULL;
    if (read_line("/proc/self/stat", stat, sizeof(stat)))
        p = strrchr(stat, ')'); /* the command name may hold spaces and ')' */
    unsigned long utime, stime;
    unsigned long long start, vsize;
    long rss;
    /* after ')': state(3) ... utime(14) stime(15) ... starttime(22) vsize(23) rss(24) */
    if (p && tick > 0 && page > 0 &&
        sscanf(p + 1,
               " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %*d %*d %*d %*d %*d %*d "
               "%llu %llu %ld",
               &utime, &stime, &start, &vsize, &rss) == 5) {
        double cpu = (double)(utime + stime) / (double)tick, seen = 0;
        /* a counter only grows: add what was used since the last scrape */
        if (mcg_metrics_get(m, "process_cpu_seconds_total", NULL, &seen) && cpu > seen)
            mcg_metrics_add(m, "process_cpu_seconds_total", NULL, cpu - seen);
        mcg_metrics_set(m, "process_virtual_memory_bytes", NULL, (double)vsize);
        mcg_metrics_set(m, "process_resident_memory_bytes", NULL, (double)rss * (double)page);
        unsigned long long bt = boot_time();
        if (bt)
            mcg_metrics_set(m, "process_start_time_seconds", NULL,
                            (double)bt + (double)start / (double)tick);
    }
    long fds = open_fds();
    if (fds >= 0)
        mcg_metrics_set(m, "process_open_fds", NULL, (double)fds);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        mcg_metrics_set(m, "process_max_fds", NULL,
                        rl.rlim_cur == RLIM_INFINITY ? -1 : (double)rl.rlim_cur);
}
