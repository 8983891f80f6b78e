/* The run: jobs arrive, wait for GPUs (first fit in arrival order), start,
 * and leave; the policy runs again on every arrival and departure; in
 * between, components advance through their own events, taken in time
 * order from one heap. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/crux_keyed.h"
#include "sim/crux_sim_internal.h"

void crux_sim_config_defaults(crux_sim_config_t *c)
{
    *c = (crux_sim_config_t){ .policy = CRUX_SIM_CRUX_FULL,
                              .placement = CRUX_SIM_PLACE_PACKED,
                              .levels = 8,
                              .orders = 10,
                              .seed = 1,
                              .alpha_s = 5e-6,
                              .intra_gbps = 2400,
                              .bin_s = 600,
                              .fast_forward = 1 };
}

static int config_ok(const crux_sim_config_t *c, char *err, size_t len)
{
    if (c->policy < 0 || c->policy >= CRUX_SIM_POLICIES || c->placement < 0 ||
        c->placement >= CRUX_SIM_PLACEMENTS || c->levels < 1 || c->levels > CRUX_SCHED_MAX_LEVELS ||
        c->orders < 1 || !(c->alpha_s >= 0) || !(c->intra_gbps > 0) || !(c->bin_s > 0) ||
        !isfinite(c->bin_s) || !isfinite(c->until_s)) {
        crux_errf(err, len,
                  "bad configuration: needs a known policy and placement, levels "
                  "1..%d, orders >= 1, alpha >= 0, intra > 0, bin > 0",
                  CRUX_SCHED_MAX_LEVELS);
        return 0;
    }
    return 1;
}

static void decision_free(sim_decision_t *d)
{
    free(d->links);
    free(d->mbytes);
}

static void sim_free(sim_t *s)
{
    for (int i = 0; i < s->njobs; i++) {
        free(s->jobs[i].place);
        decision_free(&s->jobs[i].ecmp);
        decision_free(&s->jobs[i].dec);
        decision_free(&s->jobs[i].next);
    }
    for (int ci = 0; ci < s->ncomps; ci++)
        if (s->comps[ci].alive)
            sim_comp_release(s, ci);
    free(s->comps);
    free(s->free_comps);
    free(s->jobs);
    free(s->order);
    free(s->waiting);
    free(s->running);
    free(s->departed);
    free(s->fresh);
    free(s->place_buf);
    free(s->link_bw);
    free(s->link_users);
    free(s->link_stamp);
    free(s->link_slot);
    free(s->link_mark);
    free(s->link_demand);
    free(s->link_bytes);
    free(s->link_check);
    free(s->bin_busy);
    free(s->bin_held);
    sim_alloc_free(&s->alloc);
    sim_heap_free(&s->heap);
}

static crux_status_t sim_init(sim_t *s, const crux_sched_cluster_t *c, const crux_sim_workload_t *w,
                              const crux_sim_config_t *cfg, char *err, size_t len)
{
    memset(s, 0, sizeof(*s));
    s->c = c;
    s->cfg = *cfg;
    s->err = err;
    s->errlen = len;
    if (err && len)
        err[0] = '\0';
    s->nlinks = crux_sched_cluster_links(c);
    s->njobs = w->n;
    size_t nl = (size_t)s->nlinks + 1, nj = (size_t)s->njobs + 1;
    s->link_bw = malloc(nl * sizeof(double));
    s->link_users = calloc(nl, sizeof(int));
    s->link_stamp = calloc(nl, sizeof(int));
    s->link_slot = calloc(nl, sizeof(int));
    s->link_mark = calloc(nl, sizeof(int));
    s->link_demand = calloc(nl, sizeof(double));
    s->link_bytes = calloc(nl, sizeof(double));
    s->link_check = cfg->check ? calloc(nl, sizeof(double)) : NULL;
    s->jobs = calloc(nj, sizeof(sim_job_t));
    s->waiting = malloc(nj * sizeof(int));
    s->running = malloc(nj * sizeof(int));
    s->departed = malloc(nj * sizeof(int));
    s->fresh = calloc(nj, 1);
    s->place_buf = malloc(((size_t)crux_sched_cluster_hosts(c) + 1) * sizeof(crux_sched_place_t));
    crux_keyed_t *order = malloc(nj * sizeof(*order));
    s->order = malloc(nj * sizeof(int));
    if (!s->link_bw || !s->link_users || !s->link_stamp || !s->link_slot || !s->link_mark ||
        !s->link_demand || !s->link_bytes || (cfg->check && !s->link_check) || !s->jobs ||
        !s->waiting || !s->running || !s->departed || !s->fresh || !s->place_buf || !order ||
        !s->order || sim_alloc_init(&s->alloc, c, cfg->seed) != CRUX_OK) {
        free(order);
        crux_errf(err, len, "out of memory");
        return CRUX_ERR_NO_MEMORY;
    }
    for (int l = 0; l < s->nlinks; l++) {
        crux_sched_link_info_t li;
        crux_sched_link_info(c, l, &li);
        s->link_bw[l] = li.bytes_per_s;
    }
    for (int i = 0; i < s->njobs; i++)
        order[i] = (crux_keyed_t){ w->specs[i].job.arrival_s, i };
    qsort(order, (size_t)s->njobs, sizeof(*order), crux_keyed_asc);
    crux_status_t st = CRUX_OK;
    for (int i = 0; i < s->njobs; i++) {
        sim_job_t *j = &s->jobs[i];
        s->order[i] = order[i].job;
        j->spec = &w->specs[order[i].job].job;
        j->work = j->spec->work > 0 ? j->spec->work : j->spec->gpus * j->spec->compute_s;
        j->comp = -1;
        j->state = JOB_PENDING;
        for (int k = 0; k < j->spec->nplacement && st == CRUX_OK; k++)
            if (j->spec->placement[k].host >= crux_sched_cluster_hosts(c))
                st = CRUX_ERR_INVALID;
        if (st == CRUX_OK && j->spec->nplacement == 0 &&
            !sim_alloc_fits_ever(&s->alloc, j->spec->gpus))
            st = CRUX_ERR_INVALID;
        if (st != CRUX_OK)
            crux_errf(err, len, "job %s does not fit this cluster", j->spec->id);
    }
    free(order);
    return st;
}

/* GPUs held by running jobs, credited up to t. */
static void credit_held(sim_t *s, double t)
{
    if (sim_bins_add(s, s->held_since, t, s->held_gpus * (t - s->held_since), 1) != 0)
        s->failed = 1;
    s->held_since = t;
}

/* Keep the running list in arrival order: plans, and so runs, depend on
 * the order of their jobs only through it. */
static void running_insert(sim_t *s, int jid)
{
    int k = s->nrunning++;
    while (k > 0 && s->running[k - 1] > jid) {
        s->running[k] = s->running[k - 1];
        k--;
    }
    s->running[k] = jid;
}

static void running_remove(sim_t *s, int jid)
{
    int k = 0;
    while (k < s->nrunning && s->running[k] != jid)
        k++;
    memmove(s->running + k, s->running + k + 1, (size_t)(s->nrunning - k - 1) * sizeof(int));
    s->nrunning--;
}

/* Places and starts job jid if its GPUs are free now: 1 started, 0 not
 * now, -1 on failure. */
static int try_start(sim_t *s, int jid)
{
    sim_job_t *j = &s->jobs[jid];
    const crux_sim_job_t *sp = j->spec;
    int n = sp->nplacement;
    if (n > 0) {
        if (!sim_alloc_take(&s->alloc, sp->placement, n))
            return 0;
        memcpy(s->place_buf, sp->placement, (size_t)n * sizeof(*sp->placement));
    } else {
        n = sim_alloc_place(&s->alloc, s->cfg.placement, sp->gpus, s->place_buf);
        if (n <= 0)
            return n;
    }
    j->place = malloc((size_t)n * sizeof(*j->place));
    if (j->place == NULL)
        return -1;
    memcpy(j->place, s->place_buf, (size_t)n * sizeof(*j->place));
    j->nplace = n;
    if (sim_job_profile(s, j) != CRUX_OK)
        return -1;
    j->state = JOB_RUNNING;
    j->start = j->t = s->now;
    j->phase = PH_COMPUTE;
    j->compute_left = (1 - sp->overlap) * sp->compute_s;
    credit_held(s, s->now);
    s->held_gpus += sp->gpus;
    running_insert(s, jid);
    s->fresh[jid] = 1;
    if (sp->iterations <= 0 &&
        sim_heap_push(&s->heap, s->now + sp->duration_s, EV_END, jid, 0) != 0)
        return -1;
    return 1;
}

static int start_waiting(sim_t *s)
{
    int kept = 0;
    for (int k = 0; k < s->nwaiting; k++) {
        int rc = try_start(s, s->waiting[k]);
        if (rc < 0) {
            if (s->err && s->err[0] == '\0')
                crux_errf(s->err, s->errlen, "job %s: cannot start: out of memory",
                          s->jobs[s->waiting[k]].spec->id);
            s->failed = 1;
            return -1;
        }
        if (rc == 0)
            s->waiting[kept++] = s->waiting[k];
    }
    s->nwaiting = kept;
    return 0;
}

static void depart(sim_t *s, int jid)
{
    sim_job_t *j = &s->jobs[jid];
    j->state = JOB_DONE;
    j->end = s->now;
    sim_flush_links(s, j);
    sim_alloc_release(&s->alloc, j->place, j->nplace);
    credit_held(s, s->now);
    s->held_gpus -= j->spec->gpus;
    running_remove(s, jid);
}

static int replan(sim_t *s)
{
    if (sim_policy_run(s) != CRUX_OK || sim_comps_rebuild(s) != 0) {
        if (s->err && s->err[0] == '\0')
            crux_errf(s->err, s->errlen, "out of memory");
        s->failed = 1;
        return -1;
    }
    s->sum.replans++;
    for (int k = 0; k < s->nrunning; k++) /* every fresh job is running */
        s->fresh[s->running[k]] = 0;
    return 0;
}

/* Jobs that finished their last iteration at s->now leave together. */
static int handle_departures(sim_t *s)
{
    for (int k = 0; k < s->ndeparted; k++)
        depart(s, s->departed[k]);
    s->ndeparted = 0;
    return start_waiting(s) == 0 ? replan(s) : -1;
}

static int arrivals(sim_t *s, double t)
{
    s->now = t;
    while (s->next_arrival < s->njobs && s->jobs[s->next_arrival].spec->arrival_s <= t) {
        s->jobs[s->next_arrival].state = JOB_WAITING;
        s->waiting[s->nwaiting++] = s->next_arrival++;
    }
    return start_waiting(s) == 0 ? replan(s) : -1;
}

static int duration_end(sim_t *s, int jid, double t)
{
    sim_job_t *j = &s->jobs[jid];
    if (j->state != JOB_RUNNING)
        return 0;
    s->now = t;
    if (j->comp >= 0)
        sim_comp_materialize(s, j->comp, t);
    s->departed[s->ndeparted++] = jid;
    return handle_departures(s);
}

/* The next valid event (stale ones are dropped), or NULL. */
static const sim_event_t *next_event(sim_t *s)
{
    const sim_event_t *e;
    while ((e = sim_heap_top(&s->heap)) != NULL) {
        int stale = e->kind == EV_END ? s->jobs[e->id].state != JOB_RUNNING
                                      : !s->comps[e->id].alive || s->comps[e->id].gen != e->gen;
        if (!stale)
            return e;
        sim_event_t drop;
        sim_heap_pop(&s->heap, &drop);
    }
    return NULL;
}

static void progress(sim_t *s)
{
    if (s->cfg.progress == NULL || s->sum.events - s->progress_mark < 16384)
        return;
    s->progress_mark = s->sum.events;
    int done = 0;
    for (int i = 0; i < s->njobs; i++)
        done += s->jobs[i].state == JOB_DONE;
    double last = s->njobs ? s->jobs[s->njobs - 1].spec->arrival_s : 0;
    s->cfg.progress(s->cfg.progress_arg, s->now, last, done, s->njobs);
}

static void loop(sim_t *s)
{
    double until = s->cfg.until_s > 0 ? s->cfg.until_s : INFINITY;
    while (!s->failed) {
        double ta =
            s->next_arrival < s->njobs ? s->jobs[s->next_arrival].spec->arrival_s : INFINITY;
        const sim_event_t *top = next_event(s);
        double te = top ? top->t : INFINITY;
        if (!(ta < INFINITY || te < INFINITY) || (ta > until && te > until))
            break;
        if (ta <= te) {
            arrivals(s, ta);
            continue;
        }
        sim_event_t ev;
        sim_heap_pop(&s->heap, &ev);
        if (ev.kind == EV_END) {
            duration_end(s, ev.id, ev.t);
        } else {
            /* a component's event: jobs may finish their last iteration */
            if (ev.kind == EV_THAW)
                sim_comp_thaw(s, ev.id);
            else
                sim_comp_step(s, ev.id);
            if (s->ndeparted > 0) {
                s->now = s->comps[ev.id].now;
                handle_departures(s);
            }
        }
        progress(s);
    }
}

/* The end of the run: everything brought up to `end` and totalled.  A
 * failed run is out of memory; a broken invariant (cfg.check) is
 * CRUX_ERR_INVALID. */
static crux_status_t finish(sim_t *s, double end)
{
    for (int ci = 0; ci < s->ncomps; ci++)
        if (s->comps[ci].alive)
            sim_comp_materialize(s, ci, end);
    credit_held(s, end);
    for (int i = 0; i < s->njobs; i++)
        if (s->jobs[i].state == JOB_RUNNING)
            sim_flush_links(s, &s->jobs[i]);
    if (s->failed) {
        if (s->failed == SIM_BROKEN)
            return CRUX_ERR_INVALID;
        if (s->err && s->err[0] == '\0')
            crux_errf(s->err, s->errlen, "out of memory");
        return CRUX_ERR_NO_MEMORY;
    }
    if (s->link_check && sim_check_links(s) != 0)
        return CRUX_ERR_INVALID;
    sim_summarize(s, end);
    return CRUX_OK;
}

crux_status_t crux_sim_run(const crux_sched_cluster_t *c, const crux_sim_workload_t *w,
                           const crux_sim_config_t *cfg, crux_sim_result_t **out, char *err,
                           size_t len)
{
    if (c == NULL || w == NULL || cfg == NULL || out == NULL)
        return CRUX_ERR_INVALID;
    *out = NULL;
    if (!config_ok(cfg, err, len))
        return CRUX_ERR_INVALID;
    struct timespec t0, t1, c0, c1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    sim_t s;
    crux_status_t st = sim_init(&s, c, w, cfg, err, len);
    if (st == CRUX_OK) {
        loop(&s);
        st = finish(&s, cfg->until_s > 0 ? cfg->until_s : s.now);
    }
    if (st == CRUX_OK) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
        s.sum.wall_s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        s.sum.cpu_s = (double)(c1.tv_sec - c0.tv_sec) + 1e-9 * (double)(c1.tv_nsec - c0.tv_nsec);
        *out = sim_result_make(&s);
        if (*out == NULL)
            st = CRUX_ERR_NO_MEMORY;
    }
    sim_free(&s);
    return st;
}

crux_status_t crux_sim_decide(const crux_sched_cluster_t *c, const crux_sim_workload_t *w,
                              const crux_sim_config_t *cfg, int *level_out, char *err, size_t len)
{
    if (c == NULL || w == NULL || cfg == NULL || level_out == NULL)
        return CRUX_ERR_INVALID;
    if (!config_ok(cfg, err, len))
        return CRUX_ERR_INVALID;
    sim_t s;
    crux_status_t st = sim_init(&s, c, w, cfg, err, len);
    for (int i = 0; i < s.njobs && st == CRUX_OK; i++) {
        sim_job_t *j = &s.jobs[i];
        int n = j->spec->nplacement;
        j->place = n > 0 ? malloc((size_t)n * sizeof(*j->place)) : NULL;
        if (n == 0 || j->place == NULL) {
            crux_errf(err, len, "job %s: needs a placement", j->spec->id);
            st = n == 0 ? CRUX_ERR_INVALID : CRUX_ERR_NO_MEMORY;
            break;
        }
        memcpy(j->place, j->spec->placement, (size_t)n * sizeof(*j->place));
        j->nplace = n;
        j->state = JOB_RUNNING;
        st = sim_job_profile(&s, j);
        s.running[s.nrunning++] = i;
        s.fresh[i] = 1;
    }
    if (st == CRUX_OK)
        st = sim_policy_run(&s);
    for (int i = 0; i < s.njobs && st == CRUX_OK; i++)
        level_out[s.order[i]] = s.jobs[i].net ? s.jobs[i].next.level : -1;
    sim_free(&s);
    return st;
}
