/* Recording a job's collective calls into profile windows, and the
 * iteration period (crux_profile.h). */
#include <string.h>

#include "sched/crux_profile.h"

#define HISTORY CRUX_RECORDER_HISTORY

void crux_recorder_init(crux_recorder_t *r)
{
    memset(r, 0, sizeof(*r));
}

unsigned crux_recorder_period_calls(const crux_recorder_t *r)
{
    unsigned n = r->recorded < HISTORY ? (unsigned)r->recorded : HISTORY;
    for (unsigned lag = 1; 3 * lag <= n; lag++) {
        int repeats = 1;
        for (unsigned i = 0; i + lag < n && repeats; i++) {
            uint64_t a = r->recorded - 1 - i, b = a - lag;
            repeats = r->sizes[a % HISTORY] == r->sizes[b % HISTORY];
        }
        if (repeats) {
            return lag;
        }
    }
    return 0;
}

int crux_recorder_add(crux_recorder_t *r, size_t bytes, double start, double end, double interval_s)
{
    if (r->calls == 0 && r->recorded == 0) {
        r->window_start = start; /* the first window starts with the first call */
        r->last_write = start;
    } else {
        if (r->calls == 0) {
            r->window_start = r->last_exit; /* a later one where the last ended */
            r->last_write = start;
        }
        r->between += start > r->last_exit ? start - r->last_exit : 0;
    }
    r->last_exit = end;
    r->calls++;
    r->bytes += (double)bytes;
    r->inside += end - start;
    r->sizes[r->recorded % HISTORY] = bytes;
    r->starts[r->recorded % HISTORY] = start;
    r->recorded++;
    return end - r->last_write >= interval_s;
}

void crux_recorder_close(crux_recorder_t *r, double now, crux_profile_t *p)
{
    /* the time the last k whole periods of L calls took, over k */
    unsigned lag = crux_recorder_period_calls(r);
    uint64_t remembered = r->recorded < HISTORY ? r->recorded : HISTORY;
    uint64_t k = lag > 0 && remembered > 0 ? (remembered - 1) / lag : 0, last = r->recorded - 1;
    double period =
        k > 0 ? (r->starts[last % HISTORY] - r->starts[(last - k * lag) % HISTORY]) / (double)k : 0;
    if (period <= 0) {
        period = (now - r->window_start) / (double)(r->calls > 0 ? r->calls : 1);
    }
    p->window_s = now - r->window_start;
    p->bytes = r->bytes;
    p->coll_s = r->inside;
    p->gap_s = r->between;
    p->period_s = period;
    p->collectives = r->calls;
    r->last_write = now;
    r->calls = 0; /* a fresh window */
    r->bytes = r->inside = r->between = 0;
}
