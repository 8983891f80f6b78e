/* Plans: jobs (placement, compute, traffic) turned into flows between NICs,
 * and the per-job results of planning. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched/plan/crux_sched_plan.h"

crux_sched_plan_t *crux_sched_plan_new(const crux_sched_cluster_t *c)
{
    if (c == NULL || !c->sealed)
        return NULL;
    crux_sched_plan_t *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return NULL;
    p->c = c;
    p->load = calloc((size_t)(c->nlinks ? c->nlinks : 1), sizeof(double));
    if (p->load == NULL) {
        free(p);
        return NULL;
    }
    p->reference = -1;
    return p;
}

void crux_sched_plan_free(crux_sched_plan_t *p)
{
    if (p == NULL)
        return;
    for (int i = 0; i < p->njobs; i++) {
        free(p->jobs[i].id);
        free(p->jobs[i].host);
        free(p->jobs[i].gpus);
    }
    free(p->jobs);
    free(p->flows);
    free(p->path_links);
    free(p->jl_link);
    free(p->jl_bytes);
    free(p->load);
    plan_dag_free(&p->dag);
    free(p);
}

const crux_sched_cluster_t *crux_sched_plan_cluster(const crux_sched_plan_t *p)
{
    return p->c;
}

int crux_sched_plan_jobs(const crux_sched_plan_t *p)
{
    return p->njobs;
}

static int add_flow(crux_sched_plan_t *p, int src, int dst, double bytes)
{
    if (p->nflows == p->cap_flows) {
        int ncap = p->cap_flows ? 2 * p->cap_flows : 256;
        plan_flow_t *f = realloc(p->flows, (size_t)ncap * sizeof(*f));
        if (f == NULL)
            return -1;
        p->flows = f;
        p->cap_flows = ncap;
    }
    p->flows[p->nflows++] = (plan_flow_t){ src, dst, bytes, 0, 0, 0, 0 };
    return 0;
}

/* The NICs (host-local numbers, ascending) serving the GPUs in mask. */
static int job_nics(const sched_host_t *h, uint64_t mask, int *nics)
{
    int n = 0;
    for (int k = 0; k < h->nics; k++) {
        uint64_t serve = (h->gpus_per_nic >= 64 ? ~0ULL : ((1ULL << h->gpus_per_nic) - 1))
                         << (k * h->gpus_per_nic);
        if (mask & serve)
            nics[n++] = k;
    }
    return n;
}

/* Ring Allreduce of B bytes over the job's hosts: each host sends
 * 2(G-1)/G * B to the next, striped over min(nics here, nics there). */
static int ring_flows(crux_sched_plan_t *p, const plan_job_t *j, double B)
{
    const crux_sched_cluster_t *c = p->c;
    if (j->nplace < 2 || !(B > 0))
        return 0;
    double per_hop = 2.0 * (j->gpus_total - 1) / j->gpus_total * B;
    for (int i = 0; i < j->nplace; i++) {
        const sched_host_t *a = &c->hosts[j->host[i]];
        const sched_host_t *b = &c->hosts[j->host[(i + 1) % j->nplace]];
        int na[CRUX_SCHED_MAX_GPUS], nb[CRUX_SCHED_MAX_GPUS];
        int ka = job_nics(a, j->gpus[i], na);
        int kb = job_nics(b, j->gpus[(i + 1) % j->nplace], nb);
        int r = ka < kb ? ka : kb;
        for (int k = 0; k < r; k++)
            if (add_flow(p, a->first_nic + na[k], b->first_nic + nb[k], per_hop / r) != 0)
                return -1;
    }
    return 0;
}

static int valid_token(const char *s)
{
    if (s == NULL || *s == '\0' || strlen(s) > 255)
        return 0;
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || *s == '#' || (unsigned char)*s == 0x7f)
            return 0;
    return 1;
}

static crux_status_t check_job(const crux_sched_plan_t *p, const crux_sched_job_t *job, char *err,
                               size_t len)
{
    const crux_sched_cluster_t *c = p->c;
    if (job->id != NULL && strlen(job->id) > CRUX_SCHED_MAX_ID) {
        crux_errf(err, len, "job id of %zu bytes, longer than %d", strlen(job->id),
                  CRUX_SCHED_MAX_ID);
        return CRUX_ERR_INVALID;
    }
    if (!valid_token(job->id)) {
        crux_errf(err, len, "job id must be a non-empty token without blanks or '#'");
        return CRUX_ERR_INVALID;
    }
    for (int i = 0; i < p->njobs; i++)
        if (strcmp(p->jobs[i].id, job->id) == 0) {
            crux_errf(err, len, "job %s: duplicate id", job->id);
            return CRUX_ERR_INVALID;
        }
    if (job->nplacement < 1 || job->placement == NULL) {
        crux_errf(err, len, "job %s: empty placement", job->id);
        return CRUX_ERR_INVALID;
    }
    if (!(job->compute_s >= CRUX_SCHED_MIN_SECONDS && job->compute_s <= CRUX_SCHED_MAX_SECONDS)) {
        crux_errf(err, len, "job %s: compute_s %g not in [%g, %g]", job->id, job->compute_s,
                  CRUX_SCHED_MIN_SECONDS, CRUX_SCHED_MAX_SECONDS);
        return CRUX_ERR_INVALID;
    }
    if (!(job->overlap >= 0 && job->overlap <= 1)) {
        crux_errf(err, len, "job %s: overlap %g not in [0, 1]", job->id, job->overlap);
        return CRUX_ERR_INVALID;
    }
    /* work <= 0 means "GPUs * compute_s"; NaN and huge values are refused */
    if (!(job->work <= CRUX_SCHED_MAX_WORK) || !(job->work > -CRUX_SCHED_MAX_WORK)) {
        crux_errf(err, len, "job %s: work %g not finite or above %g", job->id, job->work,
                  CRUX_SCHED_MAX_WORK);
        return CRUX_ERR_INVALID;
    }
    if (!(job->allreduce_bytes == 0 ||
          (job->allreduce_bytes >= 1 && job->allreduce_bytes <= CRUX_SCHED_MAX_BYTES))) {
        crux_errf(err, len, "job %s: allreduce_bytes %g: 0 or in [1, %g]", job->id,
                  job->allreduce_bytes, CRUX_SCHED_MAX_BYTES);
        return CRUX_ERR_INVALID;
    }
    for (int i = 0; i < job->nplacement; i++) {
        int h = job->placement[i].host;
        if (h < 0 || h >= c->nhosts) {
            crux_errf(err, len, "job %s: placement %d: no such host", job->id, i);
            return CRUX_ERR_INVALID;
        }
        uint64_t all = c->hosts[h].gpus >= 64 ? ~0ULL : (1ULL << c->hosts[h].gpus) - 1;
        if (job->placement[i].gpus & ~all) {
            crux_errf(err, len, "job %s: host %s has only %d GPUs", job->id, c->hosts[h].name,
                      c->hosts[h].gpus);
            return CRUX_ERR_INVALID;
        }
        for (int k = 0; k < i; k++)
            if (job->placement[k].host == h) {
                crux_errf(err, len, "job %s: host %s placed twice", job->id, c->hosts[h].name);
                return CRUX_ERR_INVALID;
            }
    }
    for (int f = 0; f < job->nflows; f++) {
        const crux_sched_flow_spec_t *s = &job->flows[f];
        int on_a = 0, on_b = 0;
        for (int i = 0; i < job->nplacement; i++) {
            on_a |= job->placement[i].host == s->src_host;
            on_b |= job->placement[i].host == s->dst_host;
        }
        if (!on_a || !on_b || s->src_nic < 0 || s->src_nic >= c->hosts[s->src_host].nics ||
            s->dst_nic < 0 || s->dst_nic >= c->hosts[s->dst_host].nics ||
            (s->src_host == s->dst_host && s->src_nic == s->dst_nic) || !(s->bytes >= 1) ||
            !(s->bytes <= CRUX_SCHED_MAX_BYTES)) {
            crux_errf(err, len,
                      "job %s: flow %d: needs two distinct NICs of placed hosts and "
                      "bytes in [1, %g]",
                      job->id, f, CRUX_SCHED_MAX_BYTES);
            return CRUX_ERR_INVALID;
        }
    }
    return CRUX_OK;
}

crux_status_t crux_sched_plan_add_job(crux_sched_plan_t *p, const crux_sched_job_t *job,
                                      int *index_out, char *err, size_t len)
{
    if (p == NULL || job == NULL)
        return CRUX_ERR_INVALID;
    crux_status_t st = check_job(p, job, err, len);
    if (st != CRUX_OK)
        return st;
    if (p->njobs == p->cap_jobs) {
        int ncap = p->cap_jobs ? 2 * p->cap_jobs : 64;
        plan_job_t *nj = realloc(p->jobs, (size_t)ncap * sizeof(*nj));
        if (nj == NULL)
            return CRUX_ERR_NO_MEMORY;
        p->jobs = nj;
        p->cap_jobs = ncap;
    }
    plan_job_t *j = &p->jobs[p->njobs];
    memset(j, 0, sizeof(*j));
    j->id = strdup(job->id);
    j->host = malloc((size_t)job->nplacement * sizeof(int));
    j->gpus = malloc((size_t)job->nplacement * sizeof(uint64_t));
    if (j->id == NULL || j->host == NULL || j->gpus == NULL)
        goto oom;
    j->nplace = job->nplacement;
    for (int i = 0; i < j->nplace; i++) {
        const sched_host_t *h = &p->c->hosts[job->placement[i].host];
        j->host[i] = job->placement[i].host;
        j->gpus[i] = job->placement[i].gpus ? job->placement[i].gpus
                                            : (h->gpus >= 64 ? ~0ULL : (1ULL << h->gpus) - 1);
        j->gpus_total += __builtin_popcountll(j->gpus[i]);
    }
    j->compute_s = job->compute_s;
    j->overlap = job->overlap;
    j->work = job->work > 0 ? job->work : j->gpus_total * job->compute_s;
    j->level = -1;
    j->flow_off = p->nflows;
    if (ring_flows(p, j, job->allreduce_bytes) != 0)
        goto oom;
    for (int f = 0; f < job->nflows; f++) {
        const crux_sched_flow_spec_t *s = &job->flows[f];
        if (add_flow(p, p->c->hosts[s->src_host].first_nic + s->src_nic,
                     p->c->hosts[s->dst_host].first_nic + s->dst_nic, s->bytes) != 0)
            goto oom;
    }
    j->nflows = p->nflows - j->flow_off;
    for (int f = j->flow_off; f < p->nflows; f++)
        j->bytes += p->flows[f].bytes;
    if (index_out)
        *index_out = p->njobs;
    p->njobs++;
    p->stage = PLAN_ADDED;
    return CRUX_OK;
oom:
    p->nflows = j->flow_off;
    free(j->id);
    free(j->host);
    free(j->gpus);
    crux_errf(err, len, "out of memory");
    return CRUX_ERR_NO_MEMORY;
}

void crux_sched_options_defaults(crux_sched_options_t *o)
{
    *o = (crux_sched_options_t){ .levels = 8,
                                 .reserve = 0,
                                 .orders = 10,
                                 .seed = 1,
                                 .horizon_iters = 3.0,
                                 .paths = CRUX_SCHED_PATHS_CRUX,
                                 .priorities = CRUX_SCHED_PRIORITIES_PAPER };
}

crux_status_t crux_sched_plan_run(crux_sched_plan_t *p, const crux_sched_options_t *o)
{
    crux_sched_options_t d;
    if (o == NULL) {
        crux_sched_options_defaults(&d);
        o = &d;
    }
    crux_status_t st = crux_sched_plan_select_paths(p, o->paths, o->seed);
    if (st == CRUX_OK)
        st = crux_sched_plan_order(p, o);
    if (st == CRUX_OK)
        st = crux_sched_plan_levels(p, o);
    return st;
}

crux_status_t crux_sched_plan_order(crux_sched_plan_t *p, const crux_sched_options_t *o)
{
    if (p == NULL || o == NULL)
        return CRUX_ERR_INVALID;
    crux_status_t st = crux_sched_plan_assign_priorities(p, o->horizon_iters);
    if (st == CRUX_OK && o->priorities == CRUX_SCHED_PRIORITIES_NETWORK)
        st = crux_sched_plan_network_priorities(p);
    if (st == CRUX_OK && o->priorities == CRUX_SCHED_PRIORITIES_NETWORK)
        st = crux_sched_plan_carry_priorities(p);
    return st;
}

crux_status_t crux_sched_plan_levels(crux_sched_plan_t *p, const crux_sched_options_t *o)
{
    if (p == NULL || o == NULL)
        return CRUX_ERR_INVALID;
    crux_status_t st = crux_sched_plan_compress(p, o->levels, o->reserve, o->orders, o->seed);
    if (st == CRUX_OK && o->priorities == CRUX_SCHED_PRIORITIES_NETWORK)
        st = crux_sched_plan_merge_levels(p);
    if (st == CRUX_OK && o->priorities == CRUX_SCHED_PRIORITIES_NETWORK)
        st = crux_sched_plan_carry_levels(p, o->levels - o->reserve);
    return st;
}

crux_status_t crux_sched_plan_job(const crux_sched_plan_t *p, int job, crux_sched_job_result_t *out)
{
    if (job < 0 || job >= p->njobs)
        return CRUX_ERR_INVALID;
    const plan_job_t *j = &p->jobs[job];
    *out = (crux_sched_job_result_t){ .id = j->id,
                                      .gpus = j->gpus_total,
                                      .hosts = j->nplace,
                                      .nflows = j->nflows,
                                      .nlinks = j->nlinks,
                                      .work = j->work,
                                      .compute_s = j->compute_s,
                                      .overlap = j->overlap,
                                      .bytes = j->bytes,
                                      .comm_s = j->comm_s,
                                      .period_s = j->period,
                                      .intensity = j->intensity,
                                      .correction = j->correction,
                                      .priority = j->priority,
                                      .level = p->stage >= PLAN_LEVELS ? j->level : -1,
                                      .reference = job == p->reference,
                                      .bottleneck_util = j->bottleneck };
    return CRUX_OK;
}

int crux_sched_plan_flows(const crux_sched_plan_t *p, int job)
{
    return job >= 0 && job < p->njobs ? p->jobs[job].nflows : 0;
}

crux_status_t crux_sched_plan_flow(const crux_sched_plan_t *p, int job, int flow,
                                   crux_sched_flow_t *out)
{
    if (job < 0 || job >= p->njobs || flow < 0 || flow >= p->jobs[job].nflows)
        return CRUX_ERR_INVALID;
    const plan_flow_t *f = &p->flows[p->jobs[job].flow_off + flow];
    const crux_sched_cluster_t *c = p->c;
    int ha = c->nics[f->src].host, hb = c->nics[f->dst].host;
    *out =
        (crux_sched_flow_t){ .src_host = ha,
                             .src_nic = f->src - c->hosts[ha].first_nic,
                             .dst_host = hb,
                             .dst_nic = f->dst - c->hosts[hb].first_nic,
                             .bytes = f->bytes,
                             .path_index = f->index,
                             .path_count = f->count,
                             .links = p->stage >= PLAN_PATHS ? p->path_links + f->path_off : NULL,
                             .nlinks = p->stage >= PLAN_PATHS ? f->path_len : 0 };
    return CRUX_OK;
}

int crux_sched_plan_job_links(const crux_sched_plan_t *p, int job, const int **links,
                              const double **bytes)
{
    if (job < 0 || job >= p->njobs || p->stage < PLAN_PATHS) {
        *links = NULL;
        *bytes = NULL;
        return 0;
    }
    *links = p->jl_link + p->jobs[job].link_off;
    *bytes = p->jl_bytes + p->jobs[job].link_off;
    return p->jobs[job].nlinks;
}

double crux_sched_plan_link_util(const crux_sched_plan_t *p, int link)
{
    if (link < 0 || link >= p->c->nlinks)
        return 0.0;
    return p->load[link] / p->c->links[link].bw;
}

int crux_sched_plan_reference(const crux_sched_plan_t *p)
{
    return p->stage >= PLAN_PRIORITIES ? p->reference : -1;
}
