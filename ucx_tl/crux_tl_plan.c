/* The multipath planner: split a message over paths so they finish together.
 *
 * Each path's time for n bytes is convex in its chunk count k (a linear term
 * for per-chunk costs plus terms in 1/k for pipeline fill and latency), so
 * the best k is found by ternary search.  For a deadline T, the most bytes a
 * path moves is, for each k, k times the largest chunk whose time fits (a
 * closed form), maximised over k (concave in k, ternary search again).  The
 * makespan is then minimised by bisection on T: T is feasible when the paths
 * can carry the message by T.  Two couplings make it more than a sum: every
 * used path costs the driving thread path_cost (so for each number m of
 * paths, the m paths that carry most are taken), and paths that share a
 * resource are capped together (a small linear program). */
#include <math.h>
#include <string.h>

#include "ucx_tl/crux_tl.h"
#include "ucx_tl/crux_tl_lp.h"

#define KMAX (1u << 20)      /* chunks per path at most */
#define BISECT_STEPS 48

static unsigned depth_of(const crux_tl_path_model_t *p)
{
    return p->max_depth > 0 ? p->max_depth : 1;
}

static unsigned hops_of(const crux_tl_path_model_t *p)
{
    return p->hops > 0 ? p->hops : 1;
}

/* Time of n bytes in k chunks of ceil(n / k) bytes. */
static double time_k(const crux_tl_path_model_t *p, double n, double k)
{
    double s = p->chunk_cost + ceil(n / k) / p->bandwidth;
    double flight = p->latency + hops_of(p) * s;
    double period = fmax(s, flight / depth_of(p));
    return p->latency + (k - 1) * period + hops_of(p) * s;
}

double crux_tl_path_time(const crux_tl_path_model_t *p, size_t bytes, size_t *chunks)
{
    if (bytes == 0) {
        if (chunks != NULL) {
            *chunks = 0;
        }
        return 0.0;
    }
    if (!(p->bandwidth > 0)) {
        return INFINITY;
    }
    double n = (double)bytes;
    size_t lo = p->max_chunk > 0 ? (bytes + p->max_chunk - 1) / p->max_chunk : 1;
    size_t hi = bytes < KMAX ? bytes : KMAX;
    if (hi < lo) {
        hi = lo;
    }
    while (hi - lo > 4) {
        size_t m1 = lo + (hi - lo) / 3, m2 = hi - (hi - lo) / 3;
        if (time_k(p, n, (double)m1) <= time_k(p, n, (double)m2)) {
            hi = m2;
        } else {
            lo = m1;
        }
    }
    size_t best = lo;
    double best_t = time_k(p, n, (double)lo);
    for (size_t k = lo + 1; k <= hi; k++) {
        double t = time_k(p, n, (double)k);
        if (t < best_t) {
            best_t = t;
            best = k;
        }
    }
    if (chunks != NULL) {
        *chunks = best;
    }
    return best_t;
}

/* The most bytes the path moves in k chunks by time T. */
static double bytes_k(const crux_tl_path_model_t *p, double T, double k)
{
    double h = hops_of(p), D = depth_of(p), L = p->latency;
    double s_stream = (T - L) / (k - 1 + h);                            /* period = s */
    double s_window = (T - L - (k - 1) * L / D) / (h * (k - 1 + D) / D); /* period = flight / D */
    double chunk = floor((fmin(s_stream, s_window) - p->chunk_cost) * p->bandwidth);
    if (p->max_chunk > 0 && chunk > (double)p->max_chunk) {
        chunk = (double)p->max_chunk;
    }
    return chunk >= 1 ? k * chunk : 0.0;
}

/* The most bytes the path moves by time T (its inverse of crux_tl_path_time). */
static double max_bytes(const crux_tl_path_model_t *p, double T)
{
    if (!(p->bandwidth > 0) || T <= p->latency) {
        return 0.0;
    }
    double lo = 1, hi = KMAX;
    while (hi - lo > 4) {
        double m1 = floor(lo + (hi - lo) / 3), m2 = ceil(hi - (hi - lo) / 3);
        if (bytes_k(p, T, m1) >= bytes_k(p, T, m2)) {
            hi = m2;
        } else {
            lo = m1;
        }
    }
    double best = 0.0;
    for (double k = lo; k <= hi; k++) {
        best = fmax(best, bytes_k(p, T, k));
    }
    return best;
}

double crux_tl_plan_makespan(const crux_tl_plan_input_t *in, const size_t *bytes)
{
    unsigned used = 0;
    double load[CRUX_TL_MAX_RESOURCES] = { 0 };
    for (unsigned i = 0; i < in->npaths; i++) {
        if (bytes[i] > 0) {
            used++;
            for (unsigned r = 0; r < CRUX_TL_MAX_RESOURCES; r++) {
                if (in->path[i].resources & (1u << r)) {
                    load[r] += (double)bytes[i];
                }
            }
        }
    }
    double worst = 0.0;
    for (unsigned i = 0; i < in->npaths; i++) {
        if (bytes[i] > 0) {
            worst = fmax(worst, used * in->path_cost + crux_tl_path_time(&in->path[i], bytes[i], NULL));
        }
    }
    for (unsigned r = 0; r < CRUX_TL_MAX_RESOURCES; r++) {
        if (load[r] > 0 && in->resource_rate[r] > 0) {
            worst = fmax(worst, load[r] / in->resource_rate[r]);
        }
    }
    return worst;
}

/* Bytes the chosen paths (used[i]) carry by T within the resource caps:
 * stored per path in x, summed in the return value. */
static double carry(const crux_tl_plan_input_t *in, double T, const double *cap,
                    const int *used, double *x)
{
    unsigned cols = 0, idx[CRUX_TL_MAX_PATHS];
    for (unsigned i = 0; i < in->npaths; i++) {
        x[i] = 0.0;
        if (used[i]) {
            idx[cols++] = i;
        }
    }
    double A[(CRUX_TL_MAX_PATHS + CRUX_TL_MAX_RESOURCES) * CRUX_TL_MAX_PATHS];
    double b[CRUX_TL_MAX_PATHS + CRUX_TL_MAX_RESOURCES], y[CRUX_TL_MAX_PATHS];
    unsigned rows = 0, shared = 0;
    memset(A, 0, sizeof(A));
    for (unsigned j = 0; j < cols; j++) {
        A[rows * cols + j] = 1.0;
        b[rows++] = cap[idx[j]];
    }
    for (unsigned r = 0; r < CRUX_TL_MAX_RESOURCES; r++) {
        if (!(in->resource_rate[r] > 0)) {
            continue;
        }
        unsigned members = 0;
        for (unsigned j = 0; j < cols; j++) {
            if (in->path[idx[j]].resources & (1u << r)) {
                A[rows * cols + j] = 1.0;
                members++;
            }
        }
        if (members > 0) {
            b[rows++] = in->resource_rate[r] * T;
            shared++;
        }
    }
    double total = 0.0;
    if (shared == 0) {
        for (unsigned j = 0; j < cols; j++) {
            x[idx[j]] = cap[idx[j]];
            total += cap[idx[j]];
        }
        return total;
    }
    total = crux_tl_lp_pack(rows, cols, A, b, y);
    for (unsigned j = 0; j < cols; j++) {
        x[idx[j]] = y[j];
    }
    return total;
}

/* The most bytes all paths carry by T, over every number m of used paths;
 * the best m's per-path amounts go to x. */
static double feasible(const crux_tl_plan_input_t *in, double T, double *x)
{
    double best = 0.0, cap[CRUX_TL_MAX_PATHS], y[CRUX_TL_MAX_PATHS];
    unsigned most = in->max_paths > 0 && in->max_paths < in->npaths ? in->max_paths : in->npaths;
    memset(x, 0, sizeof(double) * in->npaths);
    for (unsigned m = 1; m <= most; m++) {
        double budget = T - m * in->path_cost;
        if (budget <= 0) {
            break;
        }
        for (unsigned i = 0; i < in->npaths; i++) {
            cap[i] = max_bytes(&in->path[i], budget);
        }
        /* the m paths that carry most on their own */
        int used[CRUX_TL_MAX_PATHS] = { 0 };
        for (unsigned taken = 0; taken < m; taken++) {
            int pick = -1;
            for (unsigned i = 0; i < in->npaths; i++) {
                if (!used[i] && cap[i] > 0 && (pick < 0 || cap[i] > cap[pick])) {
                    pick = (int)i;
                }
            }
            if (pick < 0) {
                break;
            }
            used[pick] = 1;
        }
        double total = carry(in, T, cap, used, y);
        if (total > best) {
            best = total;
            memcpy(x, y, sizeof(double) * in->npaths);
        }
    }
    return best;
}

/* Round each path's share of the deadline's capacity down to the granule and
 * give what is left to the path with the most room. */
static void split(const crux_tl_plan_input_t *in, size_t bytes, const double *x, double total,
                  size_t *share)
{
    size_t granule = in->granule > 0 ? in->granule : 1, given = 0;
    int roomiest = -1;
    for (unsigned i = 0; i < in->npaths; i++) {
        double want = x[i] * ((double)bytes / total);
        share[i] = (size_t)(want / (double)granule) * granule;
        if (share[i] > bytes - given) {
            share[i] = bytes - given;
        }
        given += share[i];
        if (x[i] > 0 && (roomiest < 0 || x[i] - (double)share[i] > x[roomiest] - (double)share[roomiest])) {
            roomiest = (int)i;
        }
    }
    share[roomiest] += bytes - given;
}

static void chunking(const crux_tl_plan_input_t *in, const crux_tl_path_model_t *p,
                     crux_tl_stripe_t *st)
{
    size_t granule = in->granule > 0 ? in->granule : 1, k;
    crux_tl_path_time(p, st->bytes, &k);
    size_t chunk = (st->bytes + k - 1) / k;
    chunk = (chunk + granule - 1) / granule * granule;
    if (p->max_chunk > 0 && chunk > p->max_chunk) {
        chunk = p->max_chunk / granule * granule;
        if (chunk == 0) {
            chunk = p->max_chunk;
        }
    }
    st->chunk = chunk;
    double s = p->chunk_cost + (double)chunk / p->bandwidth;
    double needed = ceil((p->latency + hops_of(p) * s) / s);
    size_t chunks = (st->bytes + chunk - 1) / chunk;
    st->depth = (unsigned)fmin(fmin(needed, (double)depth_of(p)), (double)chunks);
    if (st->depth == 0) {
        st->depth = 1;
    }
}

crux_status_t crux_tl_plan(const crux_tl_plan_input_t *in, size_t bytes, crux_tl_plan_t *plan)
{
    memset(plan, 0, sizeof(*plan));
    if (in->npaths > CRUX_TL_MAX_PATHS) {
        return CRUX_ERR_INVALID;
    }
    /* an upper bound: the whole message over the path fastest on its own */
    double hi = INFINITY;
    unsigned fastest = 0;
    for (unsigned i = 0; i < in->npaths; i++) {
        size_t one[CRUX_TL_MAX_PATHS] = { 0 };
        one[i] = bytes > 0 ? bytes : 1;
        double t = crux_tl_plan_makespan(in, one);
        if (t < hi) {
            hi = t;
            fastest = i;
        }
    }
    if (!isfinite(hi)) {
        return CRUX_ERR_NO_RESOURCE;
    }
    if (bytes == 0) {
        return CRUX_OK;
    }
    double x[CRUX_TL_MAX_PATHS], lo = 0.0;
    hi *= 1.0 + 1e-9;
    double total = feasible(in, hi, x);
    if (!(total > 0)) {   /* rounding at the very edge: the fastest path alone */
        memset(x, 0, sizeof(x));
        x[fastest] = (double)bytes;
        total = (double)bytes;
    }
    for (int step = 0; step < BISECT_STEPS && hi - lo > 1e-6 * hi; step++) {
        double mid = 0.5 * (lo + hi), y[CRUX_TL_MAX_PATHS];
        double carried = feasible(in, mid, y);
        if (carried >= (double)bytes) {
            hi = mid;
            total = carried;
            memcpy(x, y, sizeof(x));
        } else {
            lo = mid;
        }
    }
    size_t share[CRUX_TL_MAX_PATHS];
    split(in, bytes, x, total, share);
    size_t offset = 0;
    for (unsigned i = 0; i < in->npaths; i++) {
        crux_tl_stripe_t *st = &plan->stripe[i];
        st->offset = offset;
        st->bytes = share[i];
        offset += share[i];
        if (share[i] > 0) {
            plan->used++;
            chunking(in, &in->path[i], st);
        }
    }
    plan->makespan = crux_tl_plan_makespan(in, share);
    return CRUX_OK;
}
