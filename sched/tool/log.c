/* crux-sched's messages on stderr: one line each, "path:line: why" for a
 * file at fault; the daemon, which runs for weeks, stamps each line with
 * the time (ISO 8601, UTC, milliseconds) so that its log can be read
 * against the jobs' own. */
#include <stdarg.h>
#include <time.h>

#include "sched/tool/tool.h"

static int stamps;

void tool_log_timestamps(int on)
{
    stamps = on;
}

static void stamp(void)
{
    if (!stamps)
        return;
    struct timespec ts;
    struct tm tm;
    char buf[32];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
    fprintf(stderr, "%s.%03ldZ ", buf, ts.tv_nsec / 1000000);
}

void tool_log(const char *fmt, ...)
{
    va_list ap;
    stamp();
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void tool_error(const char *path, int line, const char *fmt, ...)
{
    va_list ap;
    stamp();
    if (line > 0)
        fprintf(stderr, "%s:%d: ", path, line);
    else
        fprintf(stderr, "%s: ", path);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}
