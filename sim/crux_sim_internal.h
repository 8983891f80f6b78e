/* libcrux_sim internals shared by its source files (not installed).
 *
 * The run (sim_t) holds every job of the workload (sim_job_t), the GPU
 * allocator, the components and the event heap.  A component is a set of
 * running jobs that can slow each other down: jobs joined by contended
 * links, i.e. links whose users could together send more than the link
 * carries.  Components evolve independently between global events
 * (arrivals, departures), each with its own clock and its own heap of its
 * jobs' next state changes, so a state change costs the jobs it can reach,
 * not the cluster. */
#ifndef CRUX_SIM_INTERNAL_H
#define CRUX_SIM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/crux_err.h"
#include "common/crux_rng.h"
#include "sim/crux_sim.h"

/* ---- workload storage */
typedef struct {
    crux_sim_job_t job; /* its pointers point at the copies below */
    char *id, *model;
    crux_sched_place_t *place;
} sim_spec_t;

struct crux_sim_workload {
    int n, cap;
    sim_spec_t *specs;
    int *ids, id_cap; /* id -> index, open addressing */
};

/* GPUs of the whole host as a mask. */
uint64_t sim_all_gpus(int gpus);

/* ---- GPU allocation (crux_sim_place.c) */
typedef struct {
    int nhosts, ntors, host_gpus; /* host_gpus: the smallest host */
    int *tor_of;                  /* host -> ToR index */
    int *tor_off, *tor_hosts;     /* hosts of each ToR, ascending */
    uint64_t *free;               /* free GPUs of each host */
    uint64_t *full;               /* all GPUs of each host */
    int *tor_idle;                /* hosts of each ToR with every GPU free */
    int total_gpus;
    crux_rng_t rng;
} sim_alloc_t;
crux_status_t sim_alloc_init(sim_alloc_t *a, const crux_sched_cluster_t *c, uint64_t seed);
void sim_alloc_free(sim_alloc_t *a);
/* Whether a job of `gpus` GPUs could ever be placed by a policy. */
int sim_alloc_fits_ever(const sim_alloc_t *a, int gpus);
/* Places `gpus` GPUs now (out has room for gpus / host_gpus + 1 entries):
 * the number of hosts, or 0 when they are not free now. */
int sim_alloc_place(sim_alloc_t *a, crux_sim_placement_t how, int gpus, crux_sched_place_t *out);
/* Takes a given placement if all its GPUs are free (1), else 0. */
int sim_alloc_take(sim_alloc_t *a, const crux_sched_place_t *place, int n);
void sim_alloc_release(sim_alloc_t *a, const crux_sched_place_t *place, int n);

/* ---- jobs in a run */
enum { JOB_PENDING, JOB_WAITING, JOB_RUNNING, JOB_DONE };
enum { PH_COMPUTE, PH_HOLD, PH_COMM };

/* What a policy decided for a job: its links with M_{j,e}, its level. */
typedef struct {
    int nlinks, cap;
    int *links;
    double *mbytes;
    int level;
} sim_decision_t;

typedef struct {
    const crux_sim_job_t *spec;
    int state;
    crux_sched_place_t *place;
    int nplace;
    double start, end;
    double work; /* W per iteration */
    double alone_period;
    double fixed_s;      /* the part of a comm phase no link slows down */
    int net;             /* has network traffic */
    double bytes_iter;   /* into the network per iteration */
    double flow_bytes;   /* its largest flow: the ring moves at its pace */
    sim_decision_t ecmp; /* its ECMP paths (they depend on nothing else) */
    sim_decision_t dec;  /* in force */
    sim_decision_t next; /* the policy's new decision, until applied */
    double shift;        /* a new one-time delay (CASSINI), until applied */
    double hold;         /* the delay pending before the next comm phase */
    /* dynamics */
    int phase;
    double compute_left, hold_left, fixed_left, comm_left;
    double x;      /* transfer rate: fraction of bytes_iter per s */
    int xfer;      /* transferring when x was last computed */
    double t;      /* its state is as of this time (updated lazily) */
    double next_t; /* its next state change */
    int hpos;      /* position in its component's heap */
    /* its iteration ends in the averaging window of its component */
    double win_first, win_last;
    int win_count;
    double iters, busy;   /* completed iterations; GPU-busy s per GPU */
    double units;         /* comm phases delivered (integral of x) */
    double units_flushed; /* units already added to link_bytes */
    double begun;         /* comm phases begun */
    int comp;             /* its component, -1 when none */
    int shared;           /* ever in a component with another job */
} sim_job_t;

/* Remaining amounts (seconds, fractions of a transfer) this small are done. */
#define SIM_EPS 1e-12

static inline int sim_transferring(const sim_job_t *j)
{
    return j->phase == PH_COMM && j->fixed_left <= 0 && j->comm_left > 0;
}

/* ---- components (crux_sim_comp.c) */
/* A slot in the water-filling; its fields side by side, as the scans read
 * them together. */
typedef struct {
    double rem, sum; /* left of its capacity, weights rising on it */
    int cnt, mark;   /* users rising on it; collect's stamp */
    int user, job;   /* its last rising user (weight index, position) */
} sim_slot_fill_t;

/* A user of a slot rising up to `at`, with weight w (crux_sim_rates.c). */
typedef struct {
    double at, w;
} sim_freeze_t;

#define SIM_SNAPS 64 /* anchor iterations remembered */

typedef struct {
    int alive;
    int n;
    int *jobs;  /* by level, highest first, then index */
    int *level; /* rank of each job's level, 0 = highest */
    /* "slots": contended links, those carrying the same flows as one (the
     * first one's number in slot_link); each job's weights on them (CSR) */
    int nslots;
    int *slot_link;
    double *slot_bw;
    int *off, *slot;
    double *w;    /* M_{j,e} / flow bytes: flows of j on e */
    double *rcap; /* per-flow rate its private links allow */
    /* users of each slot (CSR, job positions), the transferring ones
     * first: sa[e] of them; supos[k] is where weight k's job sits in su */
    int *su_off, *su, *sa, *supos, *suk;
    /* the jobs' next events: a min-heap of positions by next_t */
    int *heap;
    /* water-filling of a set of jobs: scratch */
    sim_slot_fill_t *sf;
    double *rate;
    sim_freeze_t *brk; /* a slot's users of one level (first_change) */
    /* what the transferring jobs use of each slot at their rates (bytes/s):
     * set from each full filling, adjusted by the shortcuts (crux_sim_rates.c) */
    double *slot_used;
    int *job_mark, *set, mark;
    int *live, *touched; /* slot lists */
    int *sslot, nsslot;  /* the slots of the set (collect) */
    int *cand;           /* slots that may saturate in a round */
    int *job_full;       /* 1 while a saturated slot binds the job (else 0) */
    double *jcap;
    int *act;     /* jobs still rising in the filling */
    double now;   /* the time it has been simulated to */
    uint64_t gen; /* heap entries of older generations are stale */
    /* steady-state detection: snapshots at the anchor's iteration ends */
    int anchor; /* index into jobs, -1: the next job to finish one */
    int snaps, since_reset, catching_up, window;
    uint64_t events_since_snap, events_since_reset;
    /* SIM_SNAPS stored, the current, the window's start:
     * (SIM_SNAPS + 2) x (1 + n * values) */
    double *snap;
    int frozen, exact; /* exact: on a recurring state, else averaged */
    int last;          /* the job whose last iteration ends the jump */
    double freeze_t, period;
    double thaw_m; /* periods left until it thaws */
    double *delta; /* per job: busy, units, begun over a period */
    /* what it was built from beyond its jobs, levels, caps and decisions:
     * whether each link of each job (in order) was contended */
    char *contended;
} sim_comp_t;

/* ---- the event heap (crux_sim_heap.c) */
enum { EV_COMP, EV_THAW, EV_END };
typedef struct {
    double t;
    int kind, id; /* component or job */
    uint64_t gen;
    uint64_t seq; /* ties in insertion order: deterministic */
} sim_event_t;
typedef struct {
    sim_event_t *e;
    int n, cap;
    uint64_t seq;
} sim_heap_t;
int sim_heap_push(sim_heap_t *h, double t, int kind, int id, uint64_t gen);
int sim_heap_pop(sim_heap_t *h, sim_event_t *out); /* 0 when empty */
const sim_event_t *sim_heap_top(const sim_heap_t *h);
void sim_heap_free(sim_heap_t *h);

/* ---- the run */
typedef struct {
    const crux_sched_cluster_t *c;
    crux_sim_config_t cfg;
    int nlinks;
    double *link_bw;
    int njobs;
    sim_job_t *jobs; /* in arrival order */
    int *order;      /* workload index of jobs[i] */
    int next_arrival;
    int *waiting; /* queue, arrival order */
    int nwaiting;
    int *running;
    int nrunning;
    sim_alloc_t alloc;
    crux_sched_place_t *place_buf;
    int ncomps, cap_comps;
    sim_comp_t *comps;
    int *free_comps, nfree_comps;
    sim_heap_t heap;
    double now;        /* time of the last global event */
    double held_since; /* held GPU-seconds are credited up to here */
    int held_gpus;
    /* scratch over links */
    int *link_users, *link_stamp, *link_slot, *link_mark;
    int stamp;
    double *link_demand;
    /* results */
    double *link_bytes; /* flushed from jobs */
    double *link_check; /* integrated per link when cfg.check */
    int nbins, cap_bins;
    double *bin_busy, *bin_held;
    crux_sim_summary_t sum;
    int *departed; /* jobs that just finished their last iteration */
    int ndeparted;
    char *fresh; /* jobs started since the last policy run */
    char *err;
    size_t errlen;
    int failed; /* 1: out of memory; SIM_BROKEN: an invariant broke (cfg.check) */
    uint64_t progress_mark;
} sim_t;

#define SIM_BROKEN 2

/* ---- the links a set of jobs crosses (crux_sim_links.c) */
/* The links of jobs[0..n-1]'s next decisions that keep() accepts (all when
 * keep is NULL), numbered by first use (by job, then the job's links) in
 * s->link_slot under a new stamp; link e is link[e], its users are
 * user[off[e]..off[e+1]) (indexes into jobs, in order) sending mb[...]
 * bytes each.  sim_linkset_build: -1 when out of memory (free it anyway). */
typedef struct {
    int nlinks;
    int *link, *off, *user;
    double *mb;
} sim_linkset_t;
int sim_linkset_build(sim_t *s, const int *jobs, int n, int (*keep)(const sim_t *s, int link),
                      sim_linkset_t *ls);
void sim_linkset_free(sim_linkset_t *ls);

/* crux_sim_stats.c: utilisation over time */
int sim_bins_add(sim_t *s, double t0, double t1, double gpu_s, int held);
void sim_flush_links(sim_t *s, sim_job_t *j);

/* crux_sim_rates.c: water-filling of the given seed positions and the transferring
 * jobs of their level or below: brings each to `now` and sets its x;
 * returns how many (their positions are in c->set) */
int sim_rates(sim_t *s, sim_comp_t *c, const int *seeds, int nseeds, double now);
/* When job q alone starts or stops transferring, the lowest fill level at
 * which the progressive filling of q's level can differ from the one that
 * gave the current rates, less a relative margin of 1e-9 (rates that are
 * equal can differ in their last bits); infinite when none of q's slots can
 * fill, 0 when one is full without it.  Up to it the
 * filling makes the same saturations as before, so every job of q's level
 * with a rate below it keeps that rate and only the others are filled
 * again.  q stops: its rate (q rose with the others up to it, and without
 * it every slot only has more room).  q starts: the lowest level at which
 * one of q's slots saturates with q rising up to its cap and every other
 * transferring user of its level up to its rate (where the filling before
 * froze it); the levels above take what they use.  Reads the slots'
 * transferring users, their rates, weights and levels, and q's cap. */
double sim_rates_first_change(sim_comp_t *c, int q, int starts);
/* Why job q's rate (per flow) is not the strict priority max-min fair one,
 * given every other transferring user's rate, or NULL when it is: the
 * certificate.  No slot of q carries more than its capacity, q is not above
 * its cap, and q is at its cap or has a bottleneck: a saturated slot where
 * no job of its level gets a higher per-flow rate and the levels below get
 * nothing (each to 1e-9, relative).  Reads the slots' transferring users
 * (su[su_off[e] .. + sa[e]]) with their rates, weights, levels and caps. */
const char *sim_rates_unfair(const sim_comp_t *c, int q);

/* crux_sim_comp.c: components from the policy's decisions, at s->now */
int sim_comps_rebuild(sim_t *s);
void sim_comp_release(sim_t *s, int comp);
/* crux_sim_slots.c.  Slots: links e = 0..nraw-1 with capacity bw[e] and users
 * upos[off[e]..off[e+1]) sending mb[...] bytes each are grouped into slots
 * of links identical in all three; sets slot_of[e] (slots numbered in order
 * of their first link) and first[x] (a slot's first link); returns the number
 * of slots, -1 when out of memory. */
int sim_link_slots(const int *off, const int *upos, const double *mb, const double *bw, int nraw,
                   int *slot_of, int *first);
/* Slot b dominates slot a when b carries no more than a and every user of
 * a sends at least as much on b: whatever the rates, a carries no more of
 * its capacity than b does of b's, so a fills only when b does, with no
 * user b does not freeze, and the filling and its certificate may leave a
 * out.  Sets dominated[x] for the slots x (first links first[x] of the
 * links above) some other slot dominates; the users are 0..nusers-1, listed
 * ascending per link.  Returns their number, -1 when out of memory. */
int sim_slots_dominated(const int *off, const int *upos, const double *mb, const double *bw,
                        const int *first, int nslots, int nusers, char *dominated);
/* crux_sim_step.c */
void sim_comp_heap_init(sim_t *s, sim_comp_t *c);
void sim_comp_schedule(sim_t *s, int comp); /* push its next event */
void sim_comp_step(sim_t *s, int comp);     /* process its next event */
void sim_comp_thaw(sim_t *s, int comp);
void sim_comp_materialize(sim_t *s, int comp, double t); /* bring it to t */
int sim_comp_snapshot_vals(void);

/* crux_sim_policy.c: runs cfg.policy for the running jobs (next decisions) */
crux_status_t sim_policy_run(sim_t *s);
/* crux_sim_plan.c: libcrux_sched plans of the running jobs */
crux_sched_plan_t *sim_plan_build(sim_t *s, const int *jobs, int n);
crux_status_t sim_plan_extract(sim_t *s, const crux_sched_plan_t *plan, const int *jobs, int n);
crux_status_t sim_decision_copy(sim_decision_t *to, const sim_decision_t *from);
crux_status_t sim_job_profile(sim_t *s, sim_job_t *j);
/* group[i]: the root of job i among the jobs linked by shared links */
void sim_share_groups(sim_t *s, const int *jobs, int n, int *group);
/* the baselines (plan job i is jobs[i]) */
crux_status_t sim_sincronia_levels(sim_t *s, const int *jobs, int n);
crux_status_t sim_cassini_shifts(sim_t *s, const int *jobs, int n);

/* crux_sim_stats.c */
int sim_check_links(sim_t *s);
void sim_summarize(sim_t *s, double end);
crux_sim_result_t *sim_result_make(const sim_t *s);

#endif
