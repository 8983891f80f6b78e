/* Calibration's figures: the fit of a channel's bandwidth, latency and
 * per-chunk cost to a few timed transfers (engine/crux_tl_calibrate.c makes them),
 * and the cache file that keeps them per node so that later runs start
 * with them.
 *
 * Each channel is timed (best of three) on a tiny transfer, on a large one in
 * a few chunks and on the same in many chunks.  The planner's model gives,
 * for n bytes in k chunks through h hops with enough depth,
 *     t = latency + (k + h - 1) * chunk_cost + n (k + h - 1) / (k bandwidth)
 * so the three times give three linear equations in (latency, chunk_cost,
 * 1 / bandwidth).
 *
 * Cache file: "crux-calibration 1", then one line per channel signature:
 * "<signature> <bytes per second> <latency s> <chunk cost s>"; '#' starts a
 * comment.  It is rewritten whole under a lock file and replaced by rename,
 * so readers never see half of it.  Its directory must be the user's (or
 * root's and sticky, like /tmp) and the files regular files of the user:
 * anything else is not read nor written (see common/crux_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crux_file.h"
#include "ucx_tl/plan/crux_tl_plan_internal.h"

#define CACHE_HEADER "crux-calibration 1"
#define CACHE_LINES  256

void crux_tl_calib_default_path(char *out, size_t size, const char *path)
{
    char host[64] = "localhost";
    gethostname(host, sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    const char *xdg = getenv("XDG_CACHE_HOME");
    if (path != NULL) {
        snprintf(out, size, "%s", path);
    } else if (xdg != NULL && xdg[0] == '/') {
        snprintf(out, size, "%s/crux/calibration-%s", xdg, host);
    } else {
        snprintf(out, size, "/tmp/crux-%u/calibration-%s", (unsigned)geteuid(), host);
    }
}

/* --- the cache file ------------------------------------------------------------ */

_Static_assert(CRUX_TL_SIGNATURE_SIZE == 192, "cache_read's %191s");

typedef struct {
    char signature[CRUX_TL_SIGNATURE_SIZE];
    double bandwidth, latency, chunk_cost;
} cache_line_t;

/* The cache is read only from a safe directory and only if it is a
 * regular file of ours (the default place is in /tmp, where another user
 * may have made the directory or put a link or their own file). */
static unsigned cache_read(const char *path, cache_line_t *lines, unsigned max)
{
    int fd = crux_parent_safe(path, NULL, 0) == 0 ? crux_open_own(path, O_RDONLY, 0) : -1;
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (f == NULL) {
        if (fd >= 0) {
            close(fd);
        }
        return 0;
    }
    char text[CRUX_TL_SIGNATURE_SIZE + 128];
    unsigned n = 0;
    int header = fgets(text, sizeof(text), f) != NULL &&
                 strncmp(text, CACHE_HEADER, strlen(CACHE_HEADER)) == 0;
    while (header && n < max && fgets(text, sizeof(text), f) != NULL) {
        cache_line_t *l = &lines[n];
        if (text[0] != '#' &&
            sscanf(text, "%191s %lf %lf %lf", l->signature, &l->bandwidth, &l->latency,
                   &l->chunk_cost) == 4 &&
            l->bandwidth > 0 && isfinite(l->bandwidth) && l->latency >= 0 && isfinite(l->latency) &&
            l->chunk_cost >= 0 && isfinite(l->chunk_cost)) { /* 1e405 is inf: fuzz_calib */
            n++;
        }
    }
    fclose(f);
    return n;
}

int crux_tl_calib_read(const char *path, const char *signature, crux_tl_chan_attr_t *attr)
{
    cache_line_t lines[CACHE_LINES];
    unsigned n = cache_read(path, lines, CACHE_LINES);
    for (unsigned i = 0; i < n; i++) {
        if (strcmp(lines[i].signature, signature) == 0) {
            attr->bandwidth = lines[i].bandwidth;
            attr->latency = lines[i].latency;
            attr->chunk_cost = lines[i].chunk_cost;
            attr->calibrated = 1;
            return 1;
        }
    }
    return 0;
}

static int make_dirs(char *path)
{
    for (char *p = path + 1; *p != '\0'; p++) {
        if (*p == '/') {
            *p = '\0';
            int bad = mkdir(path, 0700) != 0 && errno != EEXIST;
            *p = '/';
            if (bad) {
                return -1;
            }
        }
    }
    return 0;
}

/* Best effort: a node without a writable cache directory calibrates anew. */
void crux_tl_calib_write(const char *path, const char *const *signatures,
                         const crux_tl_chan_attr_t *const *attrs, unsigned count)
{
    if (path[0] == '\0' || count == 0) {
        return;
    }
    char lock_path[540], tmp_path[560];
    snprintf(lock_path, sizeof(lock_path), "%s.lock", path);
    snprintf(tmp_path, sizeof(tmp_path), "%s.XXXXXX", path);
    /* a directory another user made or can write is not used: calibrate
     * anew next time rather than write through their links */
    if (make_dirs(lock_path) != 0 || crux_parent_safe(lock_path, NULL, 0) != 0) {
        return;
    }
    int lock = crux_open_own(lock_path, O_RDWR | O_CREAT, 0600);
    if (lock < 0) {
        return;
    }
    flock(lock, LOCK_EX);
    cache_line_t lines[CACHE_LINES];
    unsigned n = cache_read(path, lines, CACHE_LINES);
    for (unsigned c = 0; c < count; c++) {
        unsigned i = 0;
        while (i < n && strcmp(lines[i].signature, signatures[c]) != 0) {
            i++;
        }
        if (i == n && n == CACHE_LINES) {
            continue;
        }
        n += i == n;
        snprintf(lines[i].signature, sizeof(lines[i].signature), "%s", signatures[c]);
        lines[i].bandwidth = attrs[c]->bandwidth;
        lines[i].latency = attrs[c]->latency;
        lines[i].chunk_cost = attrs[c]->chunk_cost;
    }
    int fd = mkstemp(tmp_path); /* O_EXCL, mode 0600: never through a link */
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f == NULL && fd >= 0) {
        close(fd);
        unlink(tmp_path);
    }
    if (f != NULL) {
        fprintf(f, "%s\n# signature  bytes/s  latency_s  chunk_cost_s\n", CACHE_HEADER);
        for (unsigned i = 0; i < n; i++) {
            fprintf(f, "%s %.6g %.6g %.6g\n", lines[i].signature, lines[i].bandwidth,
                    lines[i].latency, lines[i].chunk_cost);
        }
        if (fclose(f) != 0 || rename(tmp_path, path) != 0) {
            unlink(tmp_path);
        }
    }
    flock(lock, LOCK_UN);
    close(lock);
}

/* --- fitting ----------------------------------------------------------------------- */

void crux_tl_calib_fit(crux_tl_chan_attr_t *attr, const double *t, const double *k, const double *n)
{
    double h = attr->hops > 0 ? attr->hops : 1;
    double m[3][4];
    for (int i = 0; i < 3; i++) {
        m[i][0] = 1.0;
        m[i][1] = k[i] + h - 1;
        m[i][2] = n[i] * (k[i] + h - 1) / k[i];
        m[i][3] = t[i];
    }
    for (int c = 0; c < 3; c++) { /* Gaussian elimination, partial pivoting */
        int p = c;
        for (int i = c + 1; i < 3; i++) {
            if (fabs(m[i][c]) > fabs(m[p][c])) {
                p = i;
            }
        }
        for (int j = 0; j < 4; j++) {
            double tmp = m[c][j];
            m[c][j] = m[p][j];
            m[p][j] = tmp;
        }
        for (int i = 0; i < 3; i++) {
            if (i != c && m[c][c] != 0.0) {
                double f = m[i][c] / m[c][c];
                for (int j = c; j < 4; j++) {
                    m[i][j] -= f * m[c][j];
                }
            }
        }
    }
    double latency = m[0][3] / m[0][0], cost = m[1][3] / m[1][1], inv_bw = m[2][3] / m[2][2];
    /* Noise can push a small term below zero; then fall back on the large
     * transfer in few chunks alone for the bandwidth. */
    if (!(inv_bw > 0) || !isfinite(inv_bw)) {
        inv_bw = t[1] / n[1];
    }
    attr->bandwidth = 1.0 / inv_bw;
    attr->latency = isfinite(latency) && latency > 0 ? latency : 0.0;
    attr->chunk_cost = isfinite(cost) && cost > 0 ? cost : 0.0;
    attr->calibrated = 1;
}
