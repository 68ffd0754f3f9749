/*
 * log.c — mcgit's one logger: a line "mcgit WHO: message" on stderr, written
 * with one write so that lines from threads (the metrics listener beside a
 * controller's pass) never interleave. The agent, the controller, the
 * listener and the commands all log through it.
 */
#include "osenv/osenv.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#define LINE_MAX_BYTES 4096

/* All of s to stderr in as few writes as it takes (one, for a line). */
static void put(const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(STDERR_FILENO, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

void mcg_log_vline(const char *who, const char *fmt, va_list ap)
{
    char msg[LINE_MAX_BYTES], line[LINE_MAX_BYTES + 64];
    mcg_vbfmt(msg, sizeof(msg), fmt, ap);
    if (who && *who)
        mcg_bfmt(line, sizeof(line), "mcgit %s: %s\n", who, msg);
    else
        mcg_bfmt(line, sizeof(line), "%s\n", msg);
    size_t n = strlen(line);
    if (n && line[n - 1] != '\n') /* cut: still one line */
        line[n - 1] = '\n';
    put(line, n);
}

void mcg_log_line(const char *who, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mcg_log_vline(who, fmt, ap);
    va_end(ap);
}

void mcg_log_partial(const char *fmt, ...)
{
    char msg[LINE_MAX_BYTES];
    va_list ap;
    va_start(ap, fmt);
    mcg_vbfmt(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    put(msg, strlen(msg));
}
