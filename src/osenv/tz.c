/*
 * tz.c — IANA time zones, from the host's time zone database
 * ($TZDIR, else /usr/share/zoneinfo): whether a name exists, and a UTC
 * time as local time in a named zone (maintenance windows).
 *
 * The C library converts only in the process's zone ($TZ), and changing
 * the process environment inside the threaded controller races every other
 * thread reading it (and localtime). So the zone's TZif file (RFC 8536) is read
 * here: its transitions (the 64-bit block of version 2 and later, else the
 * 32-bit one) give the offset up to the last of them, and its footer, a
 * POSIX TZ string such as "CET-1CEST,M3.5.0,M10.5.0/3", after it. Nothing
 * touches the process environment; the rest of mcgit formats times in UTC
 * (gmtime_r).
 */
#include "osenv/osenv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define TZIF_MAX (1 << 20) /* a zone file is a few KiB; refuse anything huge */

static char *zone_path(const char *tz)
{
    const char *dir = mcg_env_get("TZDIR");
    return mcg_sprintf("%s/%s", dir && *dir ? dir : "/usr/share/zoneinfo", tz);
}

bool mcg_tz_known(const char *tz)
{
    if (!tz || !*tz || tz[0] == '/' || strstr(tz, ".."))
        return false;
    if (!strcmp(tz, "UTC"))
        return true;
    char *path = zone_path(tz);
    struct stat st;
    bool ok = stat(path, &st) == 0 && S_ISREG(st.st_mode);
    free(path);
    return ok;
}

/* ------------------------------------------------------ POSIX TZ rules */

/* One end of daylight saving time: a day rule and the local time of day. */
typedef struct tz_date {
    char kind; /* 'J' (1..365, no Feb 29), 'D' (0..365), 'M' (month.week.day) */
    int n, m, w, d;
    int32_t secs; /* local time of day, default 02:00 (may be negative or > 24 h) */
} tz_date;

typedef struct tz_rule {
    int32_t std_off, dst_off; /* seconds east of UTC */
    bool has_dst;
    tz_date start, end;
} tz_rule;

static const char *rule_name(const char *p)
{
    if (*p == '<') {
        const char *e = strchr(p, '>');
        return e ? e + 1 : NULL;
    }
    const char *s = p;
    while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z'))
        p++;
    return p - s >= 3 ? p : NULL;
}

/* [+-]hh[:mm[:ss]] into *out (seconds); hours up to 167 (RFC 8536). */
static const char *rule_time(const char *p, int32_t *out)
{
    int sign = 1, part[3] = {0, 0, 0};
    if (*p == '+' || *p == '-')
        sign = *p++ == '-' ? -1 : 1;
    for (int i = 0; i < 3; i++) {
        if (i && *p != ':')
            break;
        if (i)
            p++;
        if (*p < '0' || *p > '9')
            return NULL;
        while (*p >= '0' && *p <= '9' && part[i] < 1000)
            part[i] = part[i] * 10 + (*p++ - '0');
    }
    if (part[0] > 167 || part[1] > 59 || part[2] > 59)
        return NULL;
    *out = sign * (part[0] * 3600 + part[1] * 60 + part[2]);
    return p;
}

static const char *rule_num(const char *p, int *out)
{
    if (*p < '0' || *p > '9')
        return NULL;
    int v = 0;
    while (*p >= '0' && *p <= '9' && v < 1000)
        v = v * 10 + (*p++ - '0');
    *out = v;
    return p;
}

static const char *rule_date(const char *p, tz_date *d)
{
    memset(d, 0, sizeof(*d));
    d->secs = 7200;
    if (*p == 'M') {
        d->kind = 'M';
        if (!(p = rule_num(p + 1, &d->m)) || *p != '.' || !(p = rule_num(p + 1, &d->w)) ||
            *p != '.' || !(p = rule_num(p + 1, &d->d)))
            return NULL;
        if (d->m < 1 || d->m > 12 || d->w < 1 || d->w > 5 || d->d > 6)
            return NULL;
    } else {
        d->kind = *p == 'J' ? 'J' : 'D';
        if (!(p = rule_num(p + (*p == 'J'), &d->n)) || d->n > 365 || (d->kind == 'J' && !d->n))
            return NULL;
    }
    if (*p == '/')
        p = rule_time(p + 1, &d->secs);
    return p;
}

/* A POSIX TZ string (a TZif footer) into *r; false when it is not one. */
static bool rule_parse(const char *p, tz_rule *r)
{
    memset(r, 0, sizeof(*r));
    int32_t off;
    if (!(p = rule_name(p)) || !(p = rule_time(p, &off)))
        return false;
    r->std_off = -off; /* POSIX counts west of UTC */
    if (!*p)
        return true;
    if (!(p = rule_name(p)))
        return false;
    r->has_dst = true;
    r->dst_off = r->std_off + 3600;
    if (*p && *p != ',') {
        if (!(p = rule_time(p, &off)))
            return false;
        r->dst_off = -off;
    }
    if (!*p) { /* no rule: the US rule, as glibc and tzcode take it */
        r->start = (tz_date){.kind = 'M', .m = 3, .w = 2, .d = 0, .secs = 7200};
        r->end = (tz_date){.kind = 'M', .m = 11, .w = 1, .d = 0, .secs = 7200};
        return true;
    }
    return *p == ',' && (p = rule_date(p + 1, &r->start)) && *p == ',' &&
           (p = rule_date(p + 1, &r->end)) && !*p;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; m 1..12). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static bool leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* The local time (seconds since the epoch, as if UTC) a date of year y starts its time. */
static int64_t rule_when(const tz_date *d, int64_t y)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int64_t day;
    if (d->kind == 'J')
        day = days_from_civil(y, 1, 1) + d->n - 1 + (leap(y) && d->n >= 60);
    else if (d->kind == 'D')
        day = days_from_civil(y, 1, 1) + d->n;
    else {
        int64_t first = days_from_civil(y, d->m, 1);
        int wd1 = (int)(((first + 4) % 7 + 7) % 7); /* 1970-01-01 was a Thursday */
        int dim = mdays[d->m - 1] + (d->m == 2 && leap(y));
        int mday = 1 + (d->d - wd1 + 7) % 7 + (d->w - 1) * 7;
        while (mday > dim)
            mday -= 7;
        day = first + mday - 1;
    }
    return day * 86400 + d->secs;
}

/* The offset (seconds east) and DST flag of rule r at UTC time t. */
static void rule_at(const tz_rule *r, int64_t t, int32_t *off, bool *dst)
{
    *off = r->std_off;
    *dst = false;
    if (!r->has_dst)
        return;
    time_t lt = (time_t)(t + r->std_off);
    struct tm tm;
    if (!gmtime_r(&lt, &tm))
        return;
    int64_t y = (int64_t)tm.tm_year + 1900;
    int64_t start = rule_when(&r->start, y) - r->std_off; /* given in standard time */
    int64_t end = rule_when(&r->end, y) - r->dst_off;     /* given in daylight time */
    bool in = start < end ? (t >= start && t < end) : !(t >= end && t < start);
    if (in) {
        *off = r->dst_off;
        *dst = true;
    }
}

/* ------------------------------------------------------------- TZif */

typedef struct tzif {
    const unsigned char *p;
    size_t n;
} tzif;

static int64_t be(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = v << 8 | p[i];
    if (bytes == 4)
        return (int64_t)(int32_t)(uint32_t)v;
    return (int64_t)v;
}

/* One header and data block: its counts, where it starts, how long it is. */
typedef struct tzblock {
    uint32_t isut, isstd, leap, time, type, chr;
    const unsigned char *data;
    size_t len;
} tzblock;

static bool block_read(const unsigned char *p, size_t n, int tbytes, tzblock *b)
{
    if (n < 44 || memcmp(p, "TZif", 4) != 0)
        return false;
    uint32_t c[6];
    for (int i = 0; i < 6; i++)
        c[i] = (uint32_t)be(p + 20 + 4 * i, 4);
    *b = (tzblock){c[0], c[1], c[2], c[3], c[4], c[5], p + 44, 0};
    if (b->time > 100000 || b->type == 0 || b->type > 256 || b->chr > 100000 || b->leap > 10000 ||
        b->isut > 256 || b->isstd > 256)
        return false;
    b->len = (size_t)b->time * (tbytes + 1) + (size_t)b->type * 6 + b->chr +
             (size_t)b->leap * (tbytes + 4) + b->isstd + b->isut;
    return b->len <= n - 44;
}

/* The local time type of block b at t: offset, DST; false past the last transition. */
static bool block_at(const tzblock *b, int tbytes, int64_t t, int32_t *off, bool *dst)
{
    const unsigned char *times = b->data, *idx = times + (size_t)b->time * tbytes;
    const unsigned char *types = idx + b->time;
    size_t lo = 0, hi = b->time; /* the first transition after t */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (be(times + mid * tbytes, tbytes) <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (b->time && lo == b->time)
        return false;
    unsigned ty = lo ? idx[lo - 1] : 0;
    if (ty >= b->type)
        return false;
    *off = (int32_t)be(types + ty * 6, 4);
    *dst = types[ty * 6 + 4] != 0;
    return true;
}

/* The offset and DST flag of a TZif file's zone at UTC time t; false if not TZif. */
static bool tzif_at(const unsigned char *p, size_t n, int64_t t, int32_t *off, bool *dst)
{
    tzblock b;
    if (!block_read(p, n, 4, &b))
        return false;
    int tbytes = 4;
    const unsigned char *end = b.data + b.len;
    if (p[4] >= '2') { /* skip the 32-bit block: the 64-bit one follows */
        if (!block_read(end, n - (size_t)(end - p), 8, &b))
            return false;
        tbytes = 8;
        end = b.data + b.len;
    }
    if (block_at(&b, tbytes, t, off, dst))
        return true;
    /* after the last transition: the footer's rule ("\nTZ\n"), else the last type */
    size_t left = n - (size_t)(end - p);
    const unsigned char *nl = left > 1 && end[0] == '\n' ? memchr(end + 1, '\n', left - 1) : NULL;
    char foot[128];
    tz_rule r;
    size_t flen = nl ? (size_t)(nl - end - 1) : 0;
    if (flen && flen < sizeof(foot)) {
        memcpy(foot, end + 1, flen);
        foot[flen] = '\0';
        if (rule_parse(foot, &r)) {
            rule_at(&r, t, off, dst);
            return true;
        }
    }
    const unsigned char *types = b.data + (size_t)b.time * (tbytes + 1);
    unsigned ty = b.data[(size_t)b.time * tbytes + b.time - 1];
    if (ty >= b.type)
        return false;
    *off = (int32_t)be(types + ty * 6, 4);
    *dst = types[ty * 6 + 4] != 0;
    return true;
}

static unsigned char *read_zone(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rbe");
    if (!f)
        return NULL;
    unsigned char *buf = mcg_malloc(TZIF_MAX);
    *n = fread(buf, 1, TZIF_MAX, f);
    bool ok = !ferror(f) && *n < TZIF_MAX;
    fclose(f);
    if (!ok) {
        free(buf);
        return NULL;
    }
    return buf;
}

int mcg_tz_local(const char *tz, int64_t t, struct tm *out)
{
    if (!mcg_tz_known(tz))
        return MCG_ENOTFOUND;
    int32_t off = 0;
    bool dst = false;
    if (strcmp(tz, "UTC") != 0) {
        char *path = zone_path(tz);
        size_t n = 0;
        unsigned char *buf = read_zone(path, &n);
        free(path);
        bool ok = buf && tzif_at(buf, n, t, &off, &dst);
        free(buf);
        if (!ok)
            return MCG_EINVAL;
    }
    time_t lt = (time_t)(t + off);
    if (!gmtime_r(&lt, out))
        return MCG_EINVAL;
    out->tm_isdst = dst;
    out->tm_gmtoff = off;
    out->tm_zone = NULL;
    return 0;
}
