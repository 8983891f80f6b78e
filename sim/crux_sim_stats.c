/* What a run measures: utilisation over time (bins of busy and held
 * GPU-seconds), bytes per link, and the results handed to the caller. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/crux_sim_internal.h"

struct crux_sim_result {
    crux_sim_summary_t sum;
    int njobs;
    crux_sim_job_result_t *jobs;
    crux_sched_place_t *places; /* every job's placement, in order */
    int nbins;
    crux_sim_bin_t *bins;
    int nlinks;
    double *link_bytes;
};

static int bins_grow(sim_t *s, int need)
{
    if (need <= s->cap_bins)
        return 0;
    int ncap = s->cap_bins ? s->cap_bins : 256;
    while (ncap < need)
        ncap *= 2;
    double *b = realloc(s->bin_busy, (size_t)ncap * sizeof(double));
    if (b != NULL)
        s->bin_busy = b;
    double *h = realloc(s->bin_held, (size_t)ncap * sizeof(double));
    if (h != NULL)
        s->bin_held = h;
    if (b == NULL || h == NULL)
        return -1;
    memset(s->bin_busy + s->cap_bins, 0, (size_t)(ncap - s->cap_bins) * sizeof(double));
    memset(s->bin_held + s->cap_bins, 0, (size_t)(ncap - s->cap_bins) * sizeof(double));
    s->cap_bins = ncap;
    return 0;
}

/* gpu_s spread evenly over [t0, t1) (busy, or held when `held`). */
int sim_bins_add(sim_t *s, double t0, double t1, double gpu_s, int held)
{
    double w = s->cfg.bin_s;
    if (!(t1 > t0) || gpu_s == 0)
        return 0;
    int first = (int)floor(t0 / w), last = (int)floor(t1 / w);
    if (last * w >= t1)
        last--; /* ends on a boundary */
    if (last < first)
        last = first;
    if (bins_grow(s, last + 1) != 0)
        return -1;
    if (last + 1 > s->nbins)
        s->nbins = last + 1;
    double *bin = held ? s->bin_held : s->bin_busy, rate = gpu_s / (t1 - t0);
    for (int k = first; k <= last; k++) {
        double a = k * w > t0 ? k * w : t0, b = (k + 1) * w < t1 ? (k + 1) * w : t1;
        bin[k] += first == last ? gpu_s : rate * (b - a);
    }
    return 0;
}

void sim_flush_links(sim_t *s, sim_job_t *j)
{
    double du = j->units - j->units_flushed;
    for (int k = 0; k < j->dec.nlinks; k++)
        s->link_bytes[j->dec.links[k]] += du * j->dec.mbytes[k];
    j->units_flushed = j->units;
}

/* With cfg.check: the bytes each link carried by integrating the rates
 * must equal what the jobs' delivered traffic put on it. */
int sim_check_links(sim_t *s)
{
    for (int l = 0; l < s->nlinks; l++) {
        double a = s->link_bytes[l], b = s->link_check[l];
        if (fabs(a - b) > 1e-6 * (1 + fabs(a))) {
            char name[128];
            crux_errf(s->err, s->errlen,
                      "check: link %s: %.9g bytes from the jobs, %.9g from "
                      "the rates",
                      crux_sched_link_name(s->c, l, name, sizeof(name)), a, b);
            return -1;
        }
    }
    return 0;
}

void sim_summarize(sim_t *s, double end)
{
    crux_sim_summary_t *m = &s->sum;
    m->end_s = end;
    m->jobs = s->njobs;
    m->jobs_done = 0;
    m->busy_gpu_s = m->work = m->iterations = 0;
    m->bytes_sent = m->bytes_delivered = m->bytes_in_flight = 0;
    for (int i = 0; i < s->njobs; i++) {
        const sim_job_t *j = &s->jobs[i];
        m->jobs_done += j->state == JOB_DONE;
        m->busy_gpu_s += j->busy * j->spec->gpus;
        m->work += j->busy / j->spec->compute_s * j->work;
        m->iterations += j->iters;
        m->bytes_sent += j->begun * j->bytes_iter;
        m->bytes_delivered += j->units * j->bytes_iter;
    }
    m->bytes_in_flight = m->bytes_sent - m->bytes_delivered;
    m->held_gpu_s = 0;
    for (int k = 0; k < s->nbins; k++)
        m->held_gpu_s += s->bin_held[k];
    m->cluster_gpu_s = (double)s->alloc.total_gpus * end;
    m->utilization = m->held_gpu_s > 0 ? m->busy_gpu_s / m->held_gpu_s : 0;
    m->cluster_utilization = m->cluster_gpu_s > 0 ? m->busy_gpu_s / m->cluster_gpu_s : 0;
}

crux_sim_result_t *sim_result_make(const sim_t *s)
{
    crux_sim_result_t *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return NULL;
    r->sum = s->sum;
    r->njobs = s->njobs;
    r->nbins = s->nbins;
    r->nlinks = s->nlinks;
    r->jobs = calloc((size_t)(s->njobs ? s->njobs : 1), sizeof(*r->jobs));
    r->bins = calloc((size_t)(s->nbins ? s->nbins : 1), sizeof(*r->bins));
    r->link_bytes = malloc((size_t)(s->nlinks ? s->nlinks : 1) * sizeof(double));
    size_t nplace = 1;
    for (int i = 0; i < s->njobs; i++)
        nplace += (size_t)s->jobs[i].nplace;
    r->places = malloc(nplace * sizeof(*r->places));
    if (!r->jobs || !r->bins || !r->link_bytes || !r->places) {
        crux_sim_result_free(r);
        return NULL;
    }
    memcpy(r->link_bytes, s->link_bytes, (size_t)s->nlinks * sizeof(double));
    for (int k = 0; k < s->nbins; k++)
        r->bins[k] = (crux_sim_bin_t){ k * s->cfg.bin_s, (k + 1) * s->cfg.bin_s, s->bin_busy[k],
                                       s->bin_held[k] };
    if (s->nbins > 0 && r->bins[s->nbins - 1].end_s > s->sum.end_s)
        r->bins[s->nbins - 1].end_s = s->sum.end_s;
    crux_sched_place_t *pl = r->places;
    for (int i = 0; i < s->njobs; i++) {
        const sim_job_t *j = &s->jobs[i];
        crux_sim_job_result_t *o = &r->jobs[s->order[i]]; /* workload order */
        int started = j->state == JOB_RUNNING || j->state == JOB_DONE;
        double end = j->state == JOB_DONE ? j->end : s->sum.end_s;
        *o = (crux_sim_job_result_t){
            .id = j->spec->id,
            .model = j->spec->model,
            .gpus = j->spec->gpus,
            .hosts = started ? j->nplace : 0,
            .arrival_s = j->spec->arrival_s,
            .start_s = started ? j->start : -1,
            .end_s = j->state == JOB_DONE ? j->end : -1,
            .iterations = j->iters,
            .busy_s = j->busy,
            .alone_period_s = j->alone_period,
            .jct_s = j->state == JOB_DONE ? j->end - j->spec->arrival_s : -1,
            .slowdown =
                started && j->iters > 0 ? (end - j->start) / (j->iters * j->alone_period) : 0,
            .level = started ? j->dec.level : -1,
            .shared = j->shared,
            .placement = j->nplace > 0 ? pl : NULL,
            .nplacement = j->nplace
        };
        if (j->nplace > 0)
            memcpy(pl, j->place, (size_t)j->nplace * sizeof(*pl));
        pl += j->nplace;
    }
    return r;
}

void crux_sim_result_free(crux_sim_result_t *r)
{
    if (r == NULL)
        return;
    free(r->jobs);
    free(r->places);
    free(r->bins);
    free(r->link_bytes);
    free(r);
}

void crux_sim_summary(const crux_sim_result_t *r, crux_sim_summary_t *out)
{
    *out = r->sum;
}

int crux_sim_result_jobs(const crux_sim_result_t *r)
{
    return r->njobs;
}

crux_status_t crux_sim_result_job(const crux_sim_result_t *r, int index, crux_sim_job_result_t *out)
{
    if (index < 0 || index >= r->njobs)
        return CRUX_ERR_INVALID;
    *out = r->jobs[index];
    return CRUX_OK;
}

int crux_sim_result_bins(const crux_sim_result_t *r)
{
    return r->nbins;
}

crux_status_t crux_sim_result_bin(const crux_sim_result_t *r, int index, crux_sim_bin_t *out)
{
    if (index < 0 || index >= r->nbins)
        return CRUX_ERR_INVALID;
    *out = r->bins[index];
    return CRUX_OK;
}

double crux_sim_result_link_bytes(const crux_sim_result_t *r, int link)
{
    return link >= 0 && link < r->nlinks ? r->link_bytes[link] : 0;
}
