/* Slots: the contended links of a component as the water-filling sees
 * them.  Links identical in capacity, users and weights are one slot, and
 * a slot that another slot always fills before it is left out. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/crux_sim_internal.h"

/* Contended links that carry the same flows, the same capacity and the
 * same users (in position order) with the same weights, are one slot: a
 * host's NIC links to its ToR, a ToR's parallel cables to its pod switch.
 * Every sum, comparison and subtraction the filling makes on one of them it
 * makes on the others with the same operands, so one stands for all
 * (Lingjun random: about eight links a slot).  The one difference: when two
 * slots' fill levels tie within rounding, the scan for the lowest may keep
 * the other of the two (an ulp).  Linear in the weights. */
int sim_link_slots(const int *off, const int *upos, const double *mb, const double *bw, int nraw,
                   int *slot_of, int *first)
{
    int size = 1;
    while (size < 2 * nraw)
        size *= 2;
    int *table = malloc((size_t)size * sizeof(int));
    if (table == NULL)
        return -1;
    for (int b = 0; b < size; b++)
        table[b] = -1;
    int nslots = 0;
    for (int e = 0; e < nraw; e++) {
        uint64_t h;
        memcpy(&h, &bw[e], sizeof(h));
        for (int u = off[e]; u < off[e + 1]; u++) {
            uint64_t m;
            memcpy(&m, &mb[u], sizeof(m));
            h = (h ^ (uint64_t)upos[u]) * 0x100000001b3ULL;
            h = (h ^ m) * 0x9e3779b97f4a7c15ULL;
            h ^= h >> 29;
        }
        for (int b = (int)(h & (uint64_t)(size - 1));; b = (b + 1) & (size - 1)) {
            int f = table[b];
            if (f < 0) {
                table[b] = e;
                first[nslots] = e;
                slot_of[e] = nslots++;
                break;
            }
            size_t len = (size_t)(off[e + 1] - off[e]);
            if (len == (size_t)(off[f + 1] - off[f]) &&
                memcmp(&bw[e], &bw[f], sizeof(double)) == 0 &&
                memcmp(upos + off[e], upos + off[f], len * sizeof(int)) == 0 &&
                memcmp(mb + off[e], mb + off[f], len * sizeof(double)) == 0) {
                slot_of[e] = slot_of[f];
                break;
            }
        }
    }
    free(table);
    return nslots;
}

/* Whether slot b's users include all of slot a's, each sending at least
 * as much on b as on a (user lists ascending). */
static int covers(const int *off, const int *upos, const double *mb, int a, int b)
{
    int i = off[a], k = off[b];
    if (off[b + 1] - k < off[a + 1] - i)
        return 0;
    for (; i < off[a + 1]; i++) {
        while (k < off[b + 1] && upos[k] < upos[i])
            k++;
        if (k == off[b + 1] || upos[k] != upos[i] || mb[k] < mb[i])
            return 0;
        k++;
    }
    return 1;
}

int sim_slots_dominated(const int *off, const int *upos, const double *mb, const double *bw,
                        const int *first, int nslots, int nusers, char *dominated)
{
    /* the slots of each user (CSR), to find the candidates of a slot among
     * the slots of its first user */
    size_t total = 0;
    for (int x = 0; x < nslots; x++)
        total += (size_t)(off[first[x] + 1] - off[first[x]]);
    int *uoff = calloc((size_t)nusers + 1, sizeof(int));
    int *cur = malloc(((size_t)nusers + 1) * sizeof(int));
    int *us = malloc((total + 1) * sizeof(int));
    if (uoff == NULL || cur == NULL || us == NULL) {
        free(uoff);
        free(cur);
        free(us);
        return -1;
    }
    for (int x = 0; x < nslots; x++)
        for (int u = off[first[x]]; u < off[first[x] + 1]; u++)
            uoff[upos[u] + 1]++;
    for (int v = 0; v < nusers; v++)
        uoff[v + 1] += uoff[v];
    memcpy(cur, uoff, (size_t)nusers * sizeof(int));
    for (int x = 0; x < nslots; x++)
        for (int u = off[first[x]]; u < off[first[x] + 1]; u++)
            us[cur[upos[u]]++] = x;
    int ndom = 0;
    for (int x = 0; x < nslots; x++) {
        int a = first[x];
        dominated[x] = 0;
        if (off[a] == off[a + 1])
            continue;
        int v0 = upos[off[a]];
        for (int k = uoff[v0]; k < uoff[v0 + 1] && !dominated[x]; k++) {
            int y = us[k], b = first[y];
            /* two slots that cover each other are equal (sim_link_slots
             * makes them one): the first stays */
            if (y == x || !(bw[b] <= bw[a]) || !covers(off, upos, mb, a, b) ||
                (y > x && bw[a] <= bw[b] && covers(off, upos, mb, b, a)))
                continue;
            dominated[x] = 1;
            ndom++;
        }
    }
    free(uoff);
    free(cur);
    free(us);
    return ndom;
}
