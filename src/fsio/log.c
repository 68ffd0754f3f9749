/*
 * log.c — mcgit's one logger: a line "mcgit WHO: message" on stderr, written
 * with one write so that lines from threads (the metrics listener beside a
 * controller's pass) never interleave. The agent, the controller, the
 * listener and the commands all log through it.
 */
#include "fsio/fsio.h"

#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#define LINE_MAX_BYTES 4096

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
    (void)mcg_write_all(STDERR_FILENO, line, n);
}

void mcg_log_line(const char *who, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mcg_log_vline(who, fmt, ap);
    va_end(ap);
}
