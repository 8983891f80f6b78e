/* Sorting jobs by a key (priorities, ratios, arrival times, periods): ties
 * go to the lower job index, so every sort is deterministic. */
#ifndef CRUX_KEYED_H
#define CRUX_KEYED_H

typedef struct {
    double key;
    int job;
} crux_keyed_t;

/* qsort comparator: descending key, then ascending job index. */
static inline int crux_keyed_desc(const void *a, const void *b)
{
    const crux_keyed_t *x = a, *y = b;
    if (x->key != y->key)
        return x->key > y->key ? -1 : 1;
    return x->job - y->job;
}

/* qsort comparator: ascending key, then ascending job index. */
static inline int crux_keyed_asc(const void *a, const void *b)
{
    const crux_keyed_t *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->job - y->job;
}

/* qsort comparator for plain doubles, ascending. */
static inline int crux_double_asc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#endif
