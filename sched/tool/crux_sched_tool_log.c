/* crux-sched's messages on stderr: one line each, "path:line: why" for a
 * file at fault; the daemon, which runs for weeks, stamps each line with
 * the time (ISO 8601, UTC, milliseconds) so that its log can be read
 * against the jobs' own, and says a refused file once, not at every
 * replan that finds it unchanged. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "sched/tool/crux_sched_tool.h"

static int stamps;

/* Rounds (tool_round_begin/end): the hashes of the lines said in this
 * round and in the one before, at most ROUND_MAX each (past that, lines
 * are said again: never more memory). */
#define ROUND_MAX 4096
static uint64_t said[2][ROUND_MAX];
static int nsaid[2], cur, in_round;

void tool_round_begin(void)
{
    cur = !cur;
    nsaid[cur] = 0;
    in_round = 1;
}

void tool_round_end(void)
{
    in_round = 0;
}

static uint64_t hash(const char *s)
{
    uint64_t h = 14695981039346656037ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* Whether a line of this round was said in the round before; remembered
 * for the next round either way. */
static int repeated(const char *line)
{
    if (!in_round)
        return 0;
    uint64_t h = hash(line);
    int seen = 0;
    for (int i = 0; i < nsaid[!cur] && !seen; i++)
        seen = said[!cur][i] == h;
    if (nsaid[cur] < ROUND_MAX)
        said[cur][nsaid[cur]++] = h;
    return seen;
}

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

static void say(const char *line)
{
    if (repeated(line))
        return;
    stamp();
    fprintf(stderr, "%s\n", line);
}

void tool_log(const char *fmt, ...)
{
    char line[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    say(line);
}

void tool_error(const char *path, int line, const char *fmt, ...)
{
    char text[8192];
    int n = line > 0 ? snprintf(text, sizeof(text), "%s:%d: ", path, line)
                     : snprintf(text, sizeof(text), "%s: ", path);
    if (n < 0 || (size_t)n >= sizeof(text))
        n = (int)strlen(text);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text + n, sizeof(text) - (size_t)n, fmt, ap);
    va_end(ap);
    say(text);
}
