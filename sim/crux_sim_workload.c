/* Workloads: the job list a run replays, each job checked against the
 * cluster when it is added. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/crux_sim_internal.h"

crux_sim_workload_t *crux_sim_workload_new(void)
{
    return calloc(1, sizeof(crux_sim_workload_t));
}

void crux_sim_workload_free(crux_sim_workload_t *w)
{
    if (w == NULL)
        return;
    for (int i = 0; i < w->n; i++) {
        free(w->specs[i].id);
        free(w->specs[i].model);
        free(w->specs[i].place);
    }
    free(w->specs);
    free(w->ids);
    free(w);
}

int crux_sim_workload_jobs(const crux_sim_workload_t *w)
{
    return w->n;
}

crux_status_t crux_sim_workload_job(const crux_sim_workload_t *w, int index, crux_sim_job_t *out)
{
    if (index < 0 || index >= w->n)
        return CRUX_ERR_INVALID;
    *out = w->specs[index].job;
    return CRUX_OK;
}

/* Ids and model names travel through CSV files and priority files. */
static int token_ok(const char *s, size_t max)
{
    if (s == NULL || *s == '\0' || strlen(s) > max)
        return 0;
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || *s == ',' || *s == '#' || *s == ';' ||
            (unsigned char)*s == 0x7f)
            return 0;
    return 1;
}

/* Ids in an open-addressing table of job indices (-1 empty), kept under
 * half full, so a long trace is checked for duplicates in linear time. */
static uint64_t id_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static int id_find(const crux_sim_workload_t *w, const char *id)
{
    if (w->id_cap == 0)
        return -1;
    uint64_t m = (uint64_t)(w->id_cap - 1);
    for (uint64_t k = id_hash(id) & m;; k = (k + 1) & m) {
        int i = w->ids[k];
        if (i < 0 || strcmp(w->specs[i].id, id) == 0)
            return i;
    }
}

static int id_insert(crux_sim_workload_t *w, int index)
{
    if (2 * (w->n + 1) > w->id_cap) {
        int ncap = w->id_cap ? 2 * w->id_cap : 128;
        int *t = malloc((size_t)ncap * sizeof(int));
        if (t == NULL)
            return -1;
        for (int k = 0; k < ncap; k++)
            t[k] = -1;
        free(w->ids);
        w->ids = t;
        w->id_cap = ncap;
        for (int i = 0; i < w->n; i++)
            if (i != index)
                id_insert(w, i);
    }
    uint64_t k = id_hash(w->specs[index].id) & (uint64_t)(w->id_cap - 1);
    while (w->ids[k] >= 0)
        k = (k + 1) & (uint64_t)(w->id_cap - 1);
    w->ids[k] = index;
    return 0;
}

static int finite_nonneg(double x)
{
    return isfinite(x) && x >= 0;
}

static crux_status_t check_placement(const crux_sched_cluster_t *c, const crux_sim_job_t *j,
                                     char *err, size_t len)
{
    int total = 0;
    for (int i = 0; i < j->nplacement; i++) {
        crux_sched_host_info_t hi;
        int h = j->placement[i].host;
        if (crux_sched_host_info(c, h, &hi) != CRUX_OK) {
            crux_errf(err, len, "job %s: placement %d: no such host", j->id, i);
            return CRUX_ERR_INVALID;
        }
        uint64_t all = sim_all_gpus(hi.gpus), mask = j->placement[i].gpus;
        if (mask & ~all) {
            crux_errf(err, len, "job %s: host %s has only %d GPUs", j->id, hi.name, hi.gpus);
            return CRUX_ERR_INVALID;
        }
        for (int k = 0; k < i; k++)
            if (j->placement[k].host == h) {
                crux_errf(err, len, "job %s: host %s placed twice", j->id, hi.name);
                return CRUX_ERR_INVALID;
            }
        total += __builtin_popcountll(mask ? mask : all);
    }
    if (total != j->gpus) {
        crux_errf(err, len, "job %s: placement has %d GPUs, gpus says %d", j->id, total, j->gpus);
        return CRUX_ERR_INVALID;
    }
    return CRUX_OK;
}

/* What a placement policy can do: up to one host's GPUs on one host,
 * more on whole hosts. */
static crux_status_t check_shape(const crux_sched_cluster_t *c, const crux_sim_job_t *j, char *err,
                                 size_t len)
{
    int host_gpus = 0, total = 0;
    for (int h = 0; h < crux_sched_cluster_hosts(c); h++) {
        crux_sched_host_info_t hi;
        crux_sched_host_info(c, h, &hi);
        if (host_gpus == 0 || hi.gpus < host_gpus)
            host_gpus = hi.gpus;
        total += hi.gpus;
    }
    if (j->gpus > host_gpus && j->gpus % host_gpus != 0) {
        crux_errf(err, len, "job %s: %d GPUs: more than a host (%d) must be whole hosts", j->id,
                  j->gpus, host_gpus);
        return CRUX_ERR_INVALID;
    }
    if (j->gpus > host_gpus * crux_sched_cluster_hosts(c) || j->gpus > total) {
        crux_errf(err, len, "job %s: %d GPUs do not fit in the cluster", j->id, j->gpus);
        return CRUX_ERR_INVALID;
    }
    return CRUX_OK;
}

static crux_status_t check_job(const crux_sim_workload_t *w, const crux_sched_cluster_t *c,
                               const crux_sim_job_t *j, char *err, size_t len)
{
    if (!token_ok(j->id, 63)) {
        crux_errf(err, len,
                  "job id must be a token of at most 63 characters without blanks, "
                  "',', ';' or '#'");
        return CRUX_ERR_INVALID;
    }
    if (id_find(w, j->id) >= 0) {
        crux_errf(err, len, "job %s: duplicate id", j->id);
        return CRUX_ERR_INVALID;
    }
    if (j->model != NULL && !token_ok(j->model, 63)) {
        crux_errf(err, len, "job %s: model must be a token", j->id);
        return CRUX_ERR_INVALID;
    }
    if (!finite_nonneg(j->arrival_s) || j->gpus < 1 || !(j->compute_s > 0) ||
        !isfinite(j->compute_s) || !(j->overlap >= 0 && j->overlap <= 1) ||
        !finite_nonneg(j->bytes) || !isfinite(j->work)) {
        crux_errf(err, len,
                  "job %s: needs arrival >= 0, gpus >= 1, compute > 0, overlap in "
                  "[0,1], bytes >= 0",
                  j->id);
        return CRUX_ERR_INVALID;
    }
    int by_iters = j->iterations > 0, by_time = j->duration_s > 0 && isfinite(j->duration_s);
    if (by_iters == by_time || j->iterations < 0 || j->duration_s < 0) {
        crux_errf(err, len, "job %s: needs exactly one of iterations > 0 and duration > 0", j->id);
        return CRUX_ERR_INVALID;
    }
    if (j->level < 0 || j->level >= CRUX_SCHED_MAX_LEVELS) {
        crux_errf(err, len, "job %s: level must be 0..%d", j->id, CRUX_SCHED_MAX_LEVELS - 1);
        return CRUX_ERR_INVALID;
    }
    if (j->nplacement > 0 && j->placement != NULL)
        return check_placement(c, j, err, len);
    return check_shape(c, j, err, len);
}

crux_status_t crux_sim_workload_add(crux_sim_workload_t *w, const crux_sched_cluster_t *c,
                                    const crux_sim_job_t *job, char *err, size_t len)
{
    if (w == NULL || c == NULL || job == NULL)
        return CRUX_ERR_INVALID;
    crux_status_t st = check_job(w, c, job, err, len);
    if (st != CRUX_OK)
        return st;
    if (w->n == w->cap) {
        int ncap = w->cap ? 2 * w->cap : 64;
        sim_spec_t *s = realloc(w->specs, (size_t)ncap * sizeof(*s));
        if (s == NULL)
            return CRUX_ERR_NO_MEMORY;
        w->specs = s;
        w->cap = ncap;
    }
    sim_spec_t *s = &w->specs[w->n];
    memset(s, 0, sizeof(*s));
    s->job = *job;
    s->id = strdup(job->id);
    s->model = job->model ? strdup(job->model) : NULL;
    int np = job->placement ? job->nplacement : 0;
    if (np > 0) {
        s->place = malloc((size_t)np * sizeof(*s->place));
        if (s->place != NULL)
            memcpy(s->place, job->placement, (size_t)np * sizeof(*s->place));
    }
    if (s->id == NULL || (job->model && s->model == NULL) || (np > 0 && s->place == NULL) ||
        id_insert(w, w->n) != 0) {
        free(s->id);
        free(s->model);
        free(s->place);
        crux_errf(err, len, "out of memory");
        return CRUX_ERR_NO_MEMORY;
    }
    s->job.id = s->id;
    s->job.model = s->model;
    s->job.placement = s->place;
    s->job.nplacement = np;
    w->n++;
    return CRUX_OK;
}
