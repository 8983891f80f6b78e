/* The multipath planner: split a message over paths so they finish together.
 *
 * Each path's time for n bytes is convex in its chunk count k (a linear term
 * for per-chunk costs plus terms in 1/k for pipeline fill and latency), so
 * the best k is found by ternary search.  For a deadline T, the most bytes a
 * path moves in k chunks has a closed form, concave in k, maximised by a
 * binary search on its slope.  The makespan is the smallest T by which the
 * paths together can carry the message, found by regula falsi on T (the
 * bytes carried grow with T, nearly linearly for large messages).  Two
 * couplings make it more than a sum: every used path costs the driving
 * thread path_cost (so for each number m of paths, the m paths that carry
 * most are taken), and paths that share a resource (a CPU) are capped
 * together by a small linear program.  A plan costs 5 to 60 us on this
 * project's build machine; the engine caches them per message size. */
#include <math.h>
#include <string.h>

#include "ucx_tl/crux_tl.h"
#include "ucx_tl/plan/crux_tl_simplex.h"

#define KMAX         (1u << 20) /* chunks per path at most */
#define BISECT_STEPS 40         /* of the deadline search, at most */
#define PRECISION    1e-4       /* relative, of the makespan */

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

/* Chunk counts beyond this cannot help a path meet time T: each chunk
 * costs at least its chunk_cost in the pipeline. */
static double k_limit(const crux_tl_path_model_t *p, double T)
{
    double k = p->chunk_cost > 0 ? floor((T - p->latency) / p->chunk_cost) + 1 : KMAX;
    return k < 1 ? 1 : k > KMAX ? KMAX : k;
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
    /* more chunks than the fewest allowed take longer once their costs
     * alone exceed the fewest's time */
    size_t useful = lo + (size_t)k_limit(p, time_k(p, n, (double)lo));
    if (useful < hi) {
        hi = useful;
    }
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

/* The largest chunk, in bytes and not rounded, that k chunks may have for
 * the path to finish by time T. */
static double chunk_k(const crux_tl_path_model_t *p, double T, double k)
{
    double h = hops_of(p), D = depth_of(p), L = p->latency;
    double s_stream = (T - L) / (k - 1 + h);                             /* period = s */
    double s_window = (T - L - (k - 1) * L / D) / (h * (k - 1 + D) / D); /* period = flight / D */
    double chunk = (fmin(s_stream, s_window) - p->chunk_cost) * p->bandwidth;
    return p->max_chunk > 0 && chunk > (double)p->max_chunk ? (double)p->max_chunk : chunk;
}

/* The most bytes the path moves in k chunks by time T: whole-byte chunks. */
static double bytes_k(const crux_tl_path_model_t *p, double T, double k)
{
    double chunk = floor(chunk_k(p, T, k));
    return chunk >= 1 ? k * chunk : 0.0;
}

/* The most bytes the path moves by time T (its inverse of crux_tl_path_time).
 * k * chunk_k is concave in k: binary search for where it stops growing
 * (on the unrounded chunk: rounding to whole bytes makes ripples larger
 * than the slope when chunks are many), then the whole-byte values near. */
static double max_bytes(const crux_tl_path_model_t *p, double T)
{
    if (!(p->bandwidth > 0) || T <= p->latency) {
        return 0.0;
    }
    double lo = 1, hi = k_limit(p, T);
    while (hi - lo > 2) {
        double mid = floor(0.5 * (lo + hi));
        if ((mid + 1) * chunk_k(p, T, mid + 1) > mid * chunk_k(p, T, mid)) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    double best = 0.0;
    for (double k = fmax(1, lo - 2); k <= hi + 2; k++) {
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
            worst =
                fmax(worst, used * in->path_cost + crux_tl_path_time(&in->path[i], bytes[i], NULL));
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
static double carry(const crux_tl_plan_input_t *in, double T, const double *cap, const int *used,
                    double *x)
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
    memset(A, 0, sizeof(double) * (cols + CRUX_TL_MAX_RESOURCES) * cols);
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
    total = crux_tl_simplex_pack(rows, cols, A, b, y);
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
        if (x[i] > 0 &&
            (roomiest < 0 || x[i] - (double)share[i] > x[roomiest] - (double)share[roomiest])) {
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
    /* a lower bound: every path at full bandwidth from time zero */
    double x[CRUX_TL_MAX_PATHS], lo, rate = 0.0;
    for (unsigned i = 0; i < in->npaths; i++) {
        rate += in->path[i].bandwidth > 0 ? in->path[i].bandwidth : 0.0;
    }
    lo = (double)bytes / rate;
    hi *= 1.0 + 1e-9;
    double total = feasible(in, hi, x);
    if (!(total > 0)) { /* rounding at the very edge: the fastest path alone */
        memset(x, 0, sizeof(x));
        x[fastest] = (double)bytes;
        total = (double)bytes;
    }
    /* The bytes carried grow with the deadline, nearly linearly for large
     * messages: regula falsi (Illinois) finds where they reach the message
     * in a few steps. */
    double g_hi = total - (double)bytes,
           g_lo = feasible(in, lo, (double[CRUX_TL_MAX_PATHS]){ 0 }) - (double)bytes;
    int kept = 0; /* which end stayed last time: -1 lo, 1 hi */
    for (int step = 0; step < BISECT_STEPS && hi - lo > PRECISION * hi && g_lo < 0; step++) {
        double T = hi - g_hi * (hi - lo) / (g_hi - g_lo), y[CRUX_TL_MAX_PATHS];
        if (!(T > lo && T < hi)) {
            T = 0.5 * (lo + hi);
        }
        double carried = feasible(in, T, y), g = carried - (double)bytes;
        if (g >= 0) {
            hi = T;
            g_hi = g;
            total = carried;
            memcpy(x, y, sizeof(x));
            g_lo = kept == -1 ? 0.5 * g_lo : g_lo;
            kept = -1;
        } else {
            lo = T;
            g_lo = g;
            g_hi = kept == 1 ? 0.5 * g_hi : g_hi;
            kept = 1;
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
