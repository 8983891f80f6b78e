/* The simulator's event heap: a binary min-heap on (time, insertion
 * order), so events at equal times come out in a fixed order and a run is
 * reproducible.  Entries are never removed early: each carries the
 * generation of its component, and stale ones are skipped when popped. */
#include <stdlib.h>

#include "sim/crux_sim_internal.h"

static int before(const sim_event_t *a, const sim_event_t *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

int sim_heap_push(sim_heap_t *h, double t, int kind, int id, uint64_t gen)
{
    if (h->n == h->cap) {
        int ncap = h->cap ? 2 * h->cap : 256;
        sim_event_t *e = realloc(h->e, (size_t)ncap * sizeof(*e));
        if (e == NULL)
            return -1;
        h->e = e;
        h->cap = ncap;
    }
    sim_event_t ev = { t, kind, id, gen, h->seq++ };
    int i = h->n++;
    while (i > 0 && before(&ev, &h->e[(i - 1) / 2])) {
        h->e[i] = h->e[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->e[i] = ev;
    return 0;
}

const sim_event_t *sim_heap_top(const sim_heap_t *h)
{
    return h->n > 0 ? &h->e[0] : NULL;
}

int sim_heap_pop(sim_heap_t *h, sim_event_t *out)
{
    if (h->n == 0)
        return 0;
    *out = h->e[0];
    sim_event_t last = h->e[--h->n];
    int i = 0;
    for (;;) {
        int k = 2 * i + 1;
        if (k >= h->n)
            break;
        if (k + 1 < h->n && before(&h->e[k + 1], &h->e[k]))
            k++;
        if (!before(&h->e[k], &last))
            break;
        h->e[i] = h->e[k];
        i = k;
    }
    if (h->n > 0)
        h->e[i] = last;
    return 1;
}

void sim_heap_free(sim_heap_t *h)
{
    free(h->e);
    h->e = NULL;
    h->n = h->cap = 0;
}
