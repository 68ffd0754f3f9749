/*
 * bench_render.c — how fast `mcgit render DIR` is, against a floor.
 *
 *     bench_render DIR [--repeat N]
 *     bench_render DIR --once render|floor|read     (one in-process run, to profile)
 *
 * Times three workloads over the config directory DIR (see gen_configs.py),
 * each run N times (default 5) in a fresh child process so that every run
 * starts cold in memory and its peak RSS can be read from wait4():
 *
 *   render  mcg_source_load_dir + mcg_render_model: read, parse and validate
 *           every file, select, merge, serialise canonically and hash each
 *           pool — everything `mcgit render` does but print.
 *   floor   read the same files and, for each, json_loadb + json_dumps
 *           (JSON_SORT_KEYS): the least any parse-and-reserialise of these
 *           bytes could cost with jansson.
 *   read    only read the files (the I/O both of the above include).
 *
 * Render and floor run in interleaved pairs (the order alternating). Prints
 * one "name value" line per figure: median CPU and wall times in seconds,
 * peak RSS in KiB, and the median of the per-pair CPU ratios render / floor
 * with their min and max.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gitops/gitops.h"
#include "render/render.h"

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
    fprintf(stderr, "bench_render: %s\n", what);
    exit(1);
}

/* ------------------------------------------------------------ workloads */

static void run_render(const char *dir)
{
    mcg_diags diags = {0};
    mcg_err err = {0};
    mcg_model *m = NULL;
    mcg_render *r = NULL;
    int rc = mcg_source_load_dir(&m, dir, &diags, &err);
    if (rc == 0)
        rc = mcg_render_model(&r, m, &diags);
    if (rc) {
        for (size_t i = 0; i < diags.count && i < 5; i++)
            fprintf(stderr, "bench_render: %s\n", diags.msgs[i]);
        die(err.msg[0] ? err.msg : "render failed");
    }
    /* Not freed: the process exits, as `mcgit render` effectively does. */
}

/* Call fn for the bytes of every pools/ and machineconfigs/ file. */
static size_t each_file(const char *dir, void (*fn)(const char *data, size_t len))
{
    static const char *const subs[] = {"pools", "machineconfigs"};
    size_t total = 0;
    for (int s = 0; s < 2; s++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, subs[s]);
        DIR *d = opendir(path);
        if (!d)
            die("cannot open the config directory");
        int dfd = dirfd(d);
        struct dirent *de;
        mcg_buf b = MCG_BUF_INIT;
        while ((de = readdir(d))) {
            if (de->d_name[0] == '.')
                continue;
            int fd = openat(dfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
            struct stat st;
            if (fd < 0 || fstat(fd, &st) != 0)
                die("cannot read a file");
            b.len = 0;
            char chunk[65536];
            ssize_t n;
            while ((n = read(fd, chunk, sizeof(chunk))) > 0)
                mcg_buf_put(&b, chunk, (size_t)n);
            close(fd);
            total += b.len;
            if (fn)
                fn(b.ptr ? b.ptr : "", b.len);
        }
        mcg_buf_free(&b);
        closedir(d);
    }
    return total;
}

static void floor_one(const char *data, size_t len)
{
    json_error_t je;
    json_t *j = json_loadb(data, len, 0, &je);
    if (!j)
        die("floor: a file is not JSON (generate the directory with gen_configs.py)");
    char *out = json_dumps(j, JSON_SORT_KEYS);
    if (!out)
        die("floor: json_dumps failed");
    free(out);
    json_decref(j);
}

static void run_floor(const char *dir)
{
    each_file(dir, floor_one);
}

static void run_read(const char *dir)
{
    each_file(dir, NULL);
}

/* ------------------------------------------------------------ harness */

typedef struct result {
    double cpu, wall; /* medians, seconds */
    double cpu_min;
    long max_rss_kib;
} result;

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof(*t), dbl_cmp);
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

/*
 * One run of fn(dir) in a fresh child, timed inside the child: CPU time
 * (user + system, the figure that other load on the machine disturbs least)
 * and wall-clock time; *rss raised to the child's peak RSS.
 */
static void run_once(void (*fn)(const char *), const char *dir, double *cpu, double *wall,
                     long *rss)
{
    int p[2];
    if (pipe(p) != 0)
        die("pipe failed");
    pid_t pid = fork();
    if (pid < 0)
        die("fork failed");
    if (pid == 0) {
        close(p[0]);
        double w0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        fn(dir);
        double dt[2] = {clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0, clock_s(CLOCK_MONOTONIC) - w0};
        if (write(p[1], dt, sizeof(dt)) != (ssize_t)sizeof(dt))
            _exit(1);
        _exit(0);
    }
    close(p[1]);
    double dt[2] = {-1, -1};
    ssize_t got = read(p[0], dt, sizeof(dt));
    close(p[0]);
    int status = 0;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
        got != (ssize_t)sizeof(dt))
        die("a benchmark run failed");
    *cpu = dt[0];
    *wall = dt[1];
    if (ru.ru_maxrss > *rss)
        *rss = ru.ru_maxrss;
}

/* Medians (and the least CPU time) of repeat runs' figures, sorting them. */
static result summarise(double *cpu, double *wall, int repeat, long rss)
{
    result res = {0, 0, 0, rss};
    res.cpu = median(cpu, repeat);
    res.cpu_min = cpu[0]; /* sorted by median() */
    res.wall = median(wall, repeat);
    return res;
}

/*
 * repeat interleaved pairs of runs of a and b (the order alternating, each
 * in a fresh child): *ra and *rb, and the per-pair CPU ratios a/b in
 * ratio[0..repeat) (sorted).
 */
static void measure_pairs(void (*a)(const char *), void (*b)(const char *), const char *dir,
                          int repeat, result *ra, result *rb, double *ratio)
{
    double *ca = calloc((size_t)repeat, sizeof(double)), *wa = calloc((size_t)repeat, sizeof(double));
    double *cb = calloc((size_t)repeat, sizeof(double)), *wb = calloc((size_t)repeat, sizeof(double));
    long sa = 0, sb = 0;
    if (!ca || !wa || !cb || !wb)
        die("out of memory");
    for (int i = 0; i < repeat; i++) {
        if (i % 2 == 0) {
            run_once(a, dir, &ca[i], &wa[i], &sa);
            run_once(b, dir, &cb[i], &wb[i], &sb);
        } else {
            run_once(b, dir, &cb[i], &wb[i], &sb);
            run_once(a, dir, &ca[i], &wa[i], &sa);
        }
        ratio[i] = ca[i] / cb[i];
    }
    qsort(ratio, (size_t)repeat, sizeof(*ratio), dbl_cmp);
    *ra = summarise(ca, wa, repeat, sa);
    *rb = summarise(cb, wb, repeat, sb);
    free(ca);
    free(wa);
    free(cb);
    free(wb);
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *once = NULL;
    int repeat = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
            repeat = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--once") && i + 1 < argc)
            once = argv[++i];
        else if (argv[i][0] != '-' && !dir)
            dir = argv[i];
        else {
            fprintf(stderr, "usage: bench_render DIR [--repeat N | --once render|floor|read]\n");
            return 2;
        }
    }
    if (!dir || repeat < 1) {
        fprintf(stderr, "usage: bench_render DIR [--repeat N | --once render|floor|read]\n");
        return 2;
    }
    if (once) {
        /* One run in this process, for a profiler (perf, callgrind). */
        void (*fn)(const char *) = !strcmp(once, "render")  ? run_render
                                   : !strcmp(once, "floor") ? run_floor
                                   : !strcmp(once, "read")  ? run_read
                                                            : NULL;
        if (!fn) {
            fprintf(stderr, "bench_render: --once takes render, floor or read\n");
            return 2;
        }
        double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        fn(dir);
        printf("%s_cpu_s %.4f\n", once, clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0);
        return 0;
    }
    size_t bytes = each_file(dir, NULL); /* also warms the page cache */
    result rd, fl, rn, unused;
    double *ratio = calloc((size_t)repeat, sizeof(double)), *rr = calloc((size_t)repeat, sizeof(double));
    if (!ratio || !rr)
        die("out of memory");
    measure_pairs(run_read, run_read, dir, repeat, &rd, &unused, rr);
    measure_pairs(run_render, run_floor, dir, repeat, &rn, &fl, ratio);
    printf("dir %s\n", dir);
    printf("input_bytes %zu\n", bytes);
    printf("repeat %d\n", repeat);
    printf("read_cpu_s %.4f\n", rd.cpu);
    printf("floor_cpu_s %.4f\n", fl.cpu);
    printf("render_cpu_s %.4f\n", rn.cpu);
    printf("floor_cpu_min_s %.4f\n", fl.cpu_min);
    printf("render_cpu_min_s %.4f\n", rn.cpu_min);
    printf("floor_wall_s %.4f\n", fl.wall);
    printf("render_wall_s %.4f\n", rn.wall);
    printf("ratio %.2f\n", median(ratio, repeat));
    printf("ratio_min %.2f\n", ratio[0]);
    printf("ratio_max %.2f\n", ratio[repeat - 1]);
    printf("read_rss_kib %ld\n", rd.max_rss_kib);
    printf("floor_rss_kib %ld\n", fl.max_rss_kib);
    printf("render_rss_kib %ld\n", rn.max_rss_kib);
    free(ratio);
    free(rr);
    return 0;
}
