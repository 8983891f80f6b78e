/* The workload CSV format (docs/usage/crux-sim-files.md): '#' comments and
 * blank lines are skipped; the first other line names the columns, in any
 * order; every later line is one job with exactly that many fields.
 *
 *   id,arrival_s,model,gpus,compute_s,overlap,bytes,work,iterations,duration_s,level,placement
 *   job-1,0,bert-large,16,0.22,0.5,1.34e9,,5000,,,h0;h1
 *
 * Required columns: id, arrival_s, gpus, compute_s, bytes, and iterations
 * or duration_s (one of them > 0 per job).  An empty field takes the
 * default (model none, overlap 0, work gpus x compute_s, level 0, no
 * placement).  placement lists hosts in ring order separated by ';', each
 * HOST (all its GPUs) or HOST:RANGES with RANGES like 0-3+6 (GPU indices). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/crux_sim_internal.h"

enum {
    C_ID,
    C_ARRIVAL,
    C_MODEL,
    C_GPUS,
    C_COMPUTE,
    C_OVERLAP,
    C_BYTES,
    C_WORK,
    C_ITERS,
    C_DURATION,
    C_LEVEL,
    C_PLACEMENT,
    NCOLS
};
static const char *const col_names[NCOLS] = { "id",         "arrival_s",  "model", "gpus",
                                              "compute_s",  "overlap",    "bytes", "work",
                                              "iterations", "duration_s", "level", "placement" };

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n'))
        *--e = '\0';
    return s;
}

/* Split on ',' into at most max fields; returns the count (max + 1 when
 * there are more). */
static int split(char *line, char **f, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (n < max)
            f[n] = trim(p);
        n++;
        if (!comma)
            break;
        p = comma + 1;
    }
    return n > max ? max + 1 : n;
}

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*s == '\0' || *end != '\0' || errno == ERANGE || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

static int parse_long(const char *s, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || errno == ERANGE)
        return -1;
    *out = v;
    return 0;
}

/* "0-3+6" -> mask; -1 on a bad range or an index past 63. */
static int parse_gpus(char *s, uint64_t *mask)
{
    *mask = 0;
    for (char *save = NULL, *r = strtok_r(s, "+", &save); r; r = strtok_r(NULL, "+", &save)) {
        long a, b;
        char *dash = strchr(r, '-');
        if (dash) {
            *dash = '\0';
            if (parse_long(r, &a) || parse_long(dash + 1, &b))
                return -1;
        } else if (parse_long(r, &a)) {
            return -1;
        } else {
            b = a;
        }
        if (a < 0 || b < a || b >= CRUX_SCHED_MAX_GPUS)
            return -1;
        for (long g = a; g <= b; g++)
            *mask |= 1ULL << g;
    }
    return *mask ? 0 : -1;
}

/* Parses a placement field into place (room for max entries). */
static int parse_placement(char *s, const crux_sched_cluster_t *c, crux_sched_place_t *place,
                           int max, char *why, size_t len)
{
    int n = 0;
    for (char *save = NULL, *e = strtok_r(s, ";", &save); e; e = strtok_r(NULL, ";", &save)) {
        e = trim(e);
        char *colon = strchr(e, ':');
        if (colon)
            *colon = '\0';
        if (n == max) {
            snprintf(why, len, "placement: more hosts than the cluster has");
            return -1;
        }
        int h = crux_sched_cluster_find_host(c, e);
        if (h < 0) {
            snprintf(why, len, "placement: unknown host \"%s\"", e);
            return -1;
        }
        place[n] = (crux_sched_place_t){ h, 0 };
        if (colon && parse_gpus(colon + 1, &place[n].gpus) != 0) {
            snprintf(why, len, "placement: bad GPU list for host %s (want e.g. 0-3+6)", e);
            return -1;
        }
        n++;
    }
    if (n == 0)
        snprintf(why, len, "placement: no host");
    return n > 0 ? n : -1;
}

/* The header: column index per known column (-1 when absent). */
static int parse_header(char *line, int *col, int *ncols, char *why, size_t len)
{
    char *f[NCOLS + 1];
    int n = split(line, f, NCOLS);
    if (n > NCOLS) {
        snprintf(why, len, "header: more than %d columns", NCOLS);
        return -1;
    }
    for (int k = 0; k < NCOLS; k++)
        col[k] = -1;
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < NCOLS && strcmp(f[i], col_names[k]) != 0)
            k++;
        if (k == NCOLS) {
            snprintf(why, len, "header: unknown column \"%s\"", f[i]);
            return -1;
        }
        if (col[k] >= 0) {
            snprintf(why, len, "header: column \"%s\" twice", f[i]);
            return -1;
        }
        col[k] = i;
    }
    static const int required[] = { C_ID, C_ARRIVAL, C_GPUS, C_COMPUTE, C_BYTES };
    for (size_t r = 0; r < sizeof(required) / sizeof(required[0]); r++)
        if (col[required[r]] < 0) {
            snprintf(why, len, "header: missing column \"%s\"", col_names[required[r]]);
            return -1;
        }
    if (col[C_ITERS] < 0 && col[C_DURATION] < 0) {
        snprintf(why, len, "header: needs an iterations or a duration_s column");
        return -1;
    }
    *ncols = n;
    return 0;
}

typedef struct {
    const crux_sched_cluster_t *c;
    const int *col;
    int ncols;
    crux_sched_place_t *place;
    int maxplace;
} row_ctx_t;

/* One job line into w; why says what is wrong. */
static int parse_row(const row_ctx_t *x, char *line, crux_sim_workload_t *w, char *why, size_t len)
{
    char *f[NCOLS + 1];
    int n = split(line, f, NCOLS);
    if (n != x->ncols) {
        snprintf(why, len, "expected %d fields, found %d", x->ncols, n);
        return -1;
    }
    const char *v[NCOLS];
    for (int k = 0; k < NCOLS; k++)
        v[k] = x->col[k] >= 0 ? f[x->col[k]] : "";
    static const int required[] = { C_ID, C_ARRIVAL, C_GPUS, C_COMPUTE, C_BYTES };
    for (size_t r = 0; r < sizeof(required) / sizeof(required[0]); r++)
        if (*v[required[r]] == '\0') {
            snprintf(why, len, "empty %s", col_names[required[r]]);
            return -1;
        }
    crux_sim_job_t j = { .id = v[C_ID], .model = *v[C_MODEL] ? v[C_MODEL] : NULL };
    long gpus = 0, iters = 0, level = 0;
    static const int doubles[] = { C_ARRIVAL, C_COMPUTE, C_OVERLAP, C_BYTES, C_WORK, C_DURATION };
    double *dst[] = { &j.arrival_s, &j.compute_s, &j.overlap, &j.bytes, &j.work, &j.duration_s };
    for (int k = 0; k < 6; k++)
        if (*v[doubles[k]] && parse_double(v[doubles[k]], dst[k]) != 0) {
            snprintf(why, len, "%s: not a number: \"%s\"", col_names[doubles[k]], v[doubles[k]]);
            return -1;
        }
    if (parse_long(v[C_GPUS], &gpus) != 0 || gpus < 1 || gpus > 1000000 ||
        (*v[C_ITERS] && parse_long(v[C_ITERS], &iters) != 0) ||
        (*v[C_LEVEL] && parse_long(v[C_LEVEL], &level) != 0) || level < 0 || level > 1000) {
        snprintf(why, len, "gpus, iterations and level must be whole numbers");
        return -1;
    }
    j.gpus = (int)gpus;
    j.iterations = iters;
    j.level = (int)level;
    if (*v[C_PLACEMENT]) {
        j.nplacement =
            parse_placement(f[x->col[C_PLACEMENT]], x->c, x->place, x->maxplace, why, len);
        if (j.nplacement < 0)
            return -1;
        j.placement = x->place;
    }
    return crux_sim_workload_add(w, x->c, &j, why, len) == CRUX_OK ? 0 : -1;
}

crux_status_t crux_sim_workload_read(crux_sim_workload_t *w, const crux_sched_cluster_t *c,
                                     const char *path, char *err, size_t len)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        crux_errf(err, len, "%s: cannot read: %s", path, strerror(errno));
        return CRUX_ERR_IO;
    }
    int col[NCOLS], have_header = 0, lineno = 0;
    row_ctx_t x = { c, col, 0, NULL, crux_sched_cluster_hosts(c) };
    x.place = malloc((size_t)(x.maxplace ? x.maxplace : 1) * sizeof(*x.place));
    char *line = NULL, why[512];
    size_t cap = 0;
    crux_status_t st = x.place ? CRUX_OK : CRUX_ERR_NO_MEMORY;
    while (st == CRUX_OK && getline(&line, &cap, f) >= 0) {
        lineno++;
        char *s = trim(line);
        if (*s == '\0' || *s == '#')
            continue;
        int bad;
        if (have_header) {
            bad = parse_row(&x, s, w, why, sizeof(why));
        } else {
            bad = parse_header(s, col, &x.ncols, why, sizeof(why));
            have_header = 1;
        }
        if (bad) {
            crux_errf(err, len, "%s:%d: %s", path, lineno, why);
            st = CRUX_ERR_INVALID;
        }
    }
    if (st == CRUX_OK && ferror(f)) {
        crux_errf(err, len, "%s:%d: read error", path, lineno);
        st = CRUX_ERR_IO;
    } else if (st == CRUX_OK && !have_header) {
        crux_errf(err, len, "%s:%d: no header line", path, lineno);
        st = CRUX_ERR_INVALID;
    }
    free(line);
    free(x.place);
    fclose(f);
    return st;
}

/* The shortest decimal form that reads back as the same double. */
static void put_double(FILE *out, double v)
{
    char buf[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof(buf), "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    fputs(buf, out);
}

/* Appends to buf at *at, truncating but counting the length needed. */
static void put(char *buf, size_t len, size_t *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t len, size_t *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(*at < len ? buf + *at : NULL, *at < len ? len - *at : 0, fmt, ap);
    va_end(ap);
    if (n > 0)
        *at += (size_t)n;
}

int crux_sim_placement_format(const crux_sched_cluster_t *c, const crux_sched_place_t *p, int n,
                              char *buf, size_t len)
{
    size_t at = 0;
    if (len > 0)
        buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        crux_sched_host_info_t hi;
        crux_sched_host_info(c, p[i].host, &hi);
        put(buf, len, &at, "%s%s", i ? ";" : "", hi.name);
        uint64_t m = p[i].gpus;
        if (m == 0 || m == sim_all_gpus(hi.gpus))
            continue;
        put(buf, len, &at, ":");
        for (int g = 0, first = 1; g < 64; g++) {
            if (!(m >> g & 1))
                continue;
            int e = g;
            while (e + 1 < 64 && (m >> (e + 1) & 1))
                e++;
            put(buf, len, &at, e > g ? "%s%d-%d" : "%s%d", first ? "" : "+", g, e);
            first = 0;
            g = e;
        }
    }
    return (int)at;
}

static void put_placement(FILE *out, const crux_sched_cluster_t *c, const crux_sim_job_t *j)
{
    char small[512];
    int need = crux_sim_placement_format(c, j->placement, j->nplacement, small, sizeof(small));
    if ((size_t)need < sizeof(small)) {
        fputs(small, out);
        return;
    }
    char *big = malloc((size_t)need + 1);
    if (big != NULL) {
        crux_sim_placement_format(c, j->placement, j->nplacement, big, (size_t)need + 1);
        fputs(big, out);
        free(big);
    }
}

crux_status_t crux_sim_workload_write(const crux_sim_workload_t *w, const crux_sched_cluster_t *c,
                                      FILE *out)
{
    fputs("# crux-sim workload: one job a line (docs/usage/crux-sim-files.md)\n", out);
    for (int k = 0; k < NCOLS; k++)
        fprintf(out, "%s%s", k ? "," : "", col_names[k]);
    fputc('\n', out);
    for (int i = 0; i < w->n; i++) {
        const crux_sim_job_t *j = &w->specs[i].job;
        fprintf(out, "%s,", j->id);
        put_double(out, j->arrival_s);
        fprintf(out, ",%s,%d,", j->model ? j->model : "", j->gpus);
        put_double(out, j->compute_s);
        fputc(',', out);
        put_double(out, j->overlap);
        fputc(',', out);
        put_double(out, j->bytes);
        fputc(',', out);
        if (j->work > 0)
            put_double(out, j->work);
        fputc(',', out);
        if (j->iterations > 0)
            fprintf(out, "%ld", j->iterations);
        fputc(',', out);
        if (j->duration_s > 0)
            put_double(out, j->duration_s);
        fprintf(out, ",%d,", j->level);
        put_placement(out, c, j);
        fputc('\n', out);
    }
    return ferror(out) ? CRUX_ERR_IO : CRUX_OK;
}
