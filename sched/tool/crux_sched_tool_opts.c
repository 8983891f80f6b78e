/* Option values of crux-sched's subcommands.  Each error is one stderr
 * line that names the subcommand, the option and the value, and says what
 * is allowed: "crux-sched plan: --levels: 17 is out of range 1-16". */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sched/tool/crux_sched_tool.h"

void tool_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "crux-sched %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (crux-sched %s --help)\n", cmd);
}

int tool_bad_option(const char *cmd, int opt, char **argv)
{
    const char *arg = optind > 0 ? argv[optind - 1] : "?";
    if (opt == ':')
        tool_usage_error(cmd, "%s needs a value", arg);
    else
        tool_usage_error(cmd, "unknown option \"%s\"", arg);
    return TOOL_INPUT;
}

int tool_int_opt(const char *cmd, const char *name, const char *s, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || errno != 0) {
        tool_usage_error(cmd, "%s: \"%s\" is not an integer", name, s);
        return -1;
    }
    if (v < lo || v > hi) {
        tool_usage_error(cmd, "%s: %s is out of range %ld-%ld", name, s, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int tool_double_opt(const char *cmd, const char *name, const char *s, double lo, double hi,
                    double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (*s == '\0' || *end != '\0') {
        tool_usage_error(cmd, "%s: \"%s\" is not a number", name, s);
        return -1;
    }
    if (!(v >= lo && v <= hi)) {
        tool_usage_error(cmd, "%s: %s is out of range %g-%g", name, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int tool_seed_opt(const char *cmd, const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    /* strtoull takes "-1" as 2^64-1: a seed is written without a sign */
    if (*s < '0' || *s > '9' || *end != '\0' || errno != 0) {
        tool_usage_error(cmd, "--seed: \"%s\" is not an integer 0-%llu", s,
                         (unsigned long long)UINT64_MAX);
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

int tool_choice_opt(const char *cmd, const char *name, const char *s, const char *const *choices,
                    int *out)
{
    char list[256] = "";
    size_t len = 0;
    for (int i = 0; choices[i]; i++) {
        if (strcmp(s, choices[i]) == 0) {
            *out = i;
            return 0;
        }
        len += (size_t)snprintf(list + len, len < sizeof(list) ? sizeof(list) - len : 0, "%s%s",
                                i ? ", " : "", choices[i]);
        if (len >= sizeof(list))
            len = sizeof(list) - 1;
    }
    tool_usage_error(cmd, "%s: \"%s\" is not one of %s", name, s, list);
    return -1;
}

int tool_priorities_opt(const char *cmd, const char *s, crux_sched_priorities_t *out)
{
    static const char *const models[] = { "paper", "network", NULL };
    static const crux_sched_priorities_t value[] = { CRUX_SCHED_PRIORITIES_PAPER,
                                                     CRUX_SCHED_PRIORITIES_NETWORK };
    int m;
    if (tool_choice_opt(cmd, "--priorities", s, models, &m) != 0)
        return -1;
    *out = value[m];
    return 0;
}

int tool_policy_opt(const char *cmd, const char *s, int *out)
{
    static const char *names[CRUX_SCHED_POLICIES + 1];
    for (int p = 0; p < CRUX_SCHED_POLICIES; p++)
        names[p] = crux_sched_policy_name((crux_sched_policy_t)p);
    return tool_choice_opt(cmd, "--policy", s, names, out);
}
