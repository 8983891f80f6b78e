/* Job communication profiles: writer, parser, per-iteration figures. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sched/crux_prio.h"
#include "sched/crux_profile.h"
#include "sched/runtime/crux_prio_util.h"

void crux_profile_clear(crux_profile_t *p)
{
    if (p == NULL)
        return;
    free(p->job);
    for (int i = 0; i < p->nhosts; i++)
        free(p->hosts[i]);
    free(p->hosts);
    free(p->host_ranks);
    memset(p, 0, sizeof(*p));
}

static int host_name_ok(const char *s)
{
    return crux_prio_token_ok(s) && strchr(s, ':') == NULL && strchr(s, ',') == NULL;
}

static int figures_ok(const crux_profile_t *p)
{
    return p->window_s > 0 && p->period_s > 0 && p->bytes >= 0 && p->coll_s >= 0 && p->gap_s >= 0 &&
           isfinite(p->window_s) && isfinite(p->period_s) && isfinite(p->bytes) &&
           isfinite(p->coll_s) && isfinite(p->gap_s);
}

/* A profile tells how a job runs: readable by its owner only (0600), or
 * also by the group of a set-group-ID directory (0640), whose group the
 * file then takes (the scheduler's, where the directory is set up so). */
static mode_t profile_mode(const char *path)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    struct stat sb;
    snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) + 1 : 1, slash ? path : ".");
    return stat(dir, &sb) == 0 && (sb.st_mode & S_ISGID) ? 0640 : 0600;
}

crux_status_t crux_profile_write(const char *path, const crux_profile_t *p, char *err,
                                 size_t errlen)
{
    int ok = p && crux_prio_token_ok(p->job) && p->ranks > 0 && p->nhosts > 0 && figures_ok(p);
    int sum = 0;
    for (int i = 0; ok && i < p->nhosts; i++) {
        ok = host_name_ok(p->hosts[i]) && p->host_ranks[i] > 0;
        sum += ok ? p->host_ranks[i] : 0;
    }
    if (!ok || sum != p->ranks) {
        crux_errf(err, errlen, "%s: invalid profile (job, hosts, ranks or figures)", path);
        return CRUX_ERR_INVALID;
    }
    char *data = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&data, &len);
    if (m == NULL)
        return CRUX_ERR_NO_MEMORY;
    fprintf(m, "crux-profile 1\njob %s\nranks %d\nhosts ", p->job, p->ranks);
    for (int i = 0; i < p->nhosts; i++)
        fprintf(m, "%s%s:%d", i ? "," : "", p->hosts[i], p->host_ranks[i]);
    fprintf(m,
            "\nwindow_s %.9g\ncollectives %llu\nbytes %.17g\ncoll_s %.9g\ngap_s %.9g\n"
            "period_s %.9g\n",
            p->window_s, (unsigned long long)p->collectives, p->bytes, p->coll_s, p->gap_s,
            p->period_s);
    if (fclose(m) != 0) {
        free(data);
        return CRUX_ERR_NO_MEMORY;
    }
    crux_status_t st = crux_prio_atomic_write(path, data, len, profile_mode(path), err, errlen);
    free(data);
    return st;
}

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end != '\0' || !isfinite(v) || v < 0)
        return -1;
    *out = v;
    return 0;
}

/* "h1:8,h2:8" into p->hosts / p->host_ranks. */
static int parse_hosts(crux_profile_t *p, char *list)
{
    int n = 1;
    for (char *c = list; *c; c++)
        n += *c == ',';
    p->hosts = calloc((size_t)n, sizeof(char *));
    p->host_ranks = calloc((size_t)n, sizeof(int));
    if (p->hosts == NULL || p->host_ranks == NULL)
        return -1;
    char *save = NULL;
    for (char *item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *colon = strrchr(item, ':'), *end;
        if (colon == NULL)
            return -1;
        *colon = '\0';
        long r = strtol(colon + 1, &end, 10);
        if (*end != '\0' || end == colon + 1 || r < 1 || r > 1 << 20 || !host_name_ok(item))
            return -1;
        for (int i = 0; i < p->nhosts; i++)
            if (strcmp(p->hosts[i], item) == 0)
                return -1;
        p->hosts[p->nhosts] = strdup(item);
        if (p->hosts[p->nhosts] == NULL)
            return -1;
        p->host_ranks[p->nhosts++] = (int)r;
    }
    return p->nhosts == n ? 0 : -1;
}

enum { K_JOB, K_RANKS, K_HOSTS, K_WINDOW, K_COLLS, K_BYTES, K_COLL_S, K_GAP_S, K_PERIOD, K_N };
static const char *const keys[K_N] = { "job",   "ranks",  "hosts", "window_s", "collectives",
                                       "bytes", "coll_s", "gap_s", "period_s" };

crux_status_t crux_profile_parse(const char *text, size_t len, const char *name, crux_profile_t *p,
                                 char *err, size_t errlen)
{
    memset(p, 0, sizeof(*p));
    char *buf = malloc(len + 1);
    if (buf == NULL)
        return CRUX_ERR_NO_MEMORY;
    memcpy(buf, text, len);
    buf[len] = '\0';
    int lineno = 0, header = 0, have[K_N] = { 0 };
    crux_status_t st = CRUX_ERR_INVALID;
    char *save_line = NULL;
    if (len == 0 || buf[len - 1] != '\n' || memchr(buf, '\0', len)) {
        crux_errf(err, errlen, "%s: empty, truncated or binary file", name);
        goto out;
    }
    for (char *line = buf, *next; *line; line = next) {
        next = strchr(line, '\n');
        *next++ = '\0';
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *key = strtok_r(line, " \t\r", &save_line);
        if (key == NULL)
            continue;
        char *val = strtok_r(NULL, " \t\r", &save_line);
        if (val == NULL || strtok_r(NULL, " \t\r", &save_line) != NULL) {
            crux_errf(err, errlen, "%s:%d: expected 'key value'", name, lineno);
            goto out;
        }
        if (!header) {
            if (strcmp(key, "crux-profile") != 0 || strcmp(val, "1") != 0) {
                crux_errf(err, errlen, "%s:%d: expected 'crux-profile 1'", name, lineno);
                goto out;
            }
            header = 1;
            continue;
        }
        int k = 0;
        while (k < K_N && strcmp(key, keys[k]) != 0)
            k++;
        if (k == K_N)
            continue; /* unknown keys are for newer readers */
        if (have[k]) {
            crux_errf(err, errlen, "%s:%d: %s given twice", name, lineno, key);
            goto out;
        }
        have[k] = 1;
        double v = 0;
        int bad = 0;
        switch (k) {
        case K_JOB: bad = !crux_prio_token_ok(val) || (p->job = strdup(val)) == NULL; break;
        case K_HOSTS: bad = parse_hosts(p, val) != 0; break;
        default:
            bad = parse_double(val, &v) != 0;
            if (k == K_RANKS) {
                bad |= !(v >= 1 && v <= 1 << 24) || v != floor(v);
                /* converting a double outside int's range is undefined:
                 * only a checked one (found by fuzz_profile) */
                p->ranks = bad ? 0 : (int)v;
            } else if (k == K_COLLS) {
                /* a count: converting anything outside uint64_t is undefined */
                bad |= v != floor(v) || v < 0 || v >= 18446744073709551616.0;
                p->collectives = bad ? 0 : (uint64_t)v;
            } else {
                double *f[] = { [K_WINDOW] = &p->window_s,
                                [K_BYTES] = &p->bytes,
                                [K_COLL_S] = &p->coll_s,
                                [K_GAP_S] = &p->gap_s,
                                [K_PERIOD] = &p->period_s };
                *f[k] = v;
            }
        }
        if (bad) {
            crux_errf(err, errlen, "%s:%d: bad value for %s", name, lineno, key);
            goto out;
        }
    }
    for (int k = 0; k < K_N; k++)
        if (!have[k]) {
            crux_errf(err, errlen, "%s:%d: missing %s", name, lineno, keys[k]);
            goto out;
        }
    int sum = 0;
    for (int i = 0; i < p->nhosts; i++)
        sum += p->host_ranks[i];
    if (sum != p->ranks || !figures_ok(p)) {
        crux_errf(err, errlen,
                  "%s: ranks per host do not add up to ranks, or window_s or "
                  "period_s is 0",
                  name);
        goto out;
    }
    st = CRUX_OK;
out:
    free(buf);
    if (st != CRUX_OK)
        crux_profile_clear(p);
    return st;
}

crux_status_t crux_profile_load(const char *path, crux_profile_t *p, char *err, size_t errlen)
{
    char *text;
    size_t len;
    crux_status_t st = prio_read_all(path, PRIO_READ_NOFOLLOW, &text, &len, NULL, err, errlen);
    if (st != CRUX_OK)
        return st;
    st = crux_profile_parse(text, len, path, p, err, errlen);
    free(text);
    return st;
}

crux_status_t crux_profile_per_iteration(const crux_profile_t *p, crux_profile_iter_t *out)
{
    if (p == NULL || !figures_ok(p))
        return CRUX_ERR_INVALID;
    double it = p->window_s / p->period_s;
    out->iterations = it;
    out->bytes = p->bytes / it;
    out->compute_s = p->gap_s / it;
    out->comm_s = p->coll_s / it;
    out->bytes_per_collective = p->collectives ? p->bytes / (double)p->collectives : 0.0;
    double excess = out->compute_s + out->comm_s - p->period_s;
    out->overlap = out->compute_s > 0 && excess > 0 ? excess / out->compute_s : 0.0;
    if (out->overlap > 1)
        out->overlap = 1;
    return CRUX_OK;
}
