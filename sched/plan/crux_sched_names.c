/* A string -> index hash table (open addressing) for host and switch names. */
#include <stdlib.h>
#include <string.h>

#include "sched/plan/crux_sched_internal.h"

struct sched_names {
    size_t cap, used;  /* cap is a power of two */
    const char **keys; /* borrowed: the cluster owns the names */
    int *vals;
};

static uint64_t names_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

sched_names_t *sched_names_new(void)
{
    sched_names_t *n = calloc(1, sizeof(*n));
    if (n == NULL)
        return NULL;
    n->cap = 64;
    n->keys = calloc(n->cap, sizeof(*n->keys));
    n->vals = calloc(n->cap, sizeof(*n->vals));
    if (n->keys == NULL || n->vals == NULL) {
        sched_names_free(n);
        return NULL;
    }
    return n;
}

void sched_names_free(sched_names_t *n)
{
    if (n == NULL)
        return;
    free(n->keys);
    free(n->vals);
    free(n);
}

int sched_names_get(const sched_names_t *n, const char *name)
{
    size_t mask = n->cap - 1;
    for (size_t i = names_hash(name) & mask;; i = (i + 1) & mask) {
        if (n->keys[i] == NULL)
            return -1;
        if (strcmp(n->keys[i], name) == 0)
            return n->vals[i];
    }
}

static void names_insert(sched_names_t *n, const char *name, int index)
{
    size_t mask = n->cap - 1;
    size_t i = names_hash(name) & mask;
    while (n->keys[i] != NULL)
        i = (i + 1) & mask;
    n->keys[i] = name;
    n->vals[i] = index;
    n->used++;
}

int sched_names_put(sched_names_t *n, const char *name, int index)
{
    if (sched_names_get(n, name) >= 0)
        return -1;
    if (2 * (n->used + 1) > n->cap) { /* keep the load under 1/2 */
        sched_names_t bigger = { n->cap * 2, 0, NULL, NULL };
        bigger.keys = calloc(bigger.cap, sizeof(*bigger.keys));
        bigger.vals = calloc(bigger.cap, sizeof(*bigger.vals));
        if (bigger.keys == NULL || bigger.vals == NULL) {
            free(bigger.keys);
            free(bigger.vals);
            return -1;
        }
        for (size_t i = 0; i < n->cap; i++)
            if (n->keys[i] != NULL)
                names_insert(&bigger, n->keys[i], n->vals[i]);
        free(n->keys);
        free(n->vals);
        *n = bigger;
    }
    names_insert(n, name, index);
    return 0;
}
