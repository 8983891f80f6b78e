/* The links a set of jobs crosses and who crosses each: the lists the
 * water-filling's components and Sincronia's ordering are built from. */
#include <stdlib.h>

#include "sim/crux_sim_internal.h"

void sim_linkset_free(sim_linkset_t *ls)
{
    free(ls->link);
    free(ls->off);
    free(ls->user);
    free(ls->mb);
}

/* A counting sort: the (link, user, bytes) entries gathered in job order,
 * counted per link, then placed. */
int sim_linkset_build(sim_t *s, const int *jobs, int n, int (*keep)(const sim_t *s, int link),
                      sim_linkset_t *ls)
{
    size_t cap = 1;
    for (int i = 0; i < n; i++)
        cap += (size_t)s->jobs[jobs[i]].next.nlinks;
    int *ent_link = malloc(cap * sizeof(int)), *ent_user = malloc(cap * sizeof(int));
    double *ent_mb = malloc(cap * sizeof(double));
    int *cursor = malloc(cap * sizeof(int));
    *ls = (sim_linkset_t){ 0, malloc(cap * sizeof(int)), calloc(cap + 1, sizeof(int)),
                           malloc(cap * sizeof(int)), malloc(cap * sizeof(double)) };
    int nent = 0, rc = -1;
    if (!ent_link || !ent_user || !ent_mb || !cursor || !ls->link || !ls->off || !ls->user ||
        !ls->mb)
        goto out;
    s->stamp++;
    for (int i = 0; i < n; i++) {
        const sim_decision_t *d = &s->jobs[jobs[i]].next;
        for (int k = 0; k < d->nlinks; k++) {
            int l = d->links[k];
            if (keep != NULL && !keep(s, l))
                continue;
            if (s->link_stamp[l] != s->stamp) {
                s->link_stamp[l] = s->stamp;
                s->link_slot[l] = ls->nlinks;
                ls->link[ls->nlinks++] = l;
            }
            ent_link[nent] = s->link_slot[l];
            ent_user[nent] = i;
            ent_mb[nent++] = d->mbytes[k];
            ls->off[s->link_slot[l] + 1]++;
        }
    }
    for (int e = 0; e < ls->nlinks; e++) {
        ls->off[e + 1] += ls->off[e];
        cursor[e] = ls->off[e];
    }
    for (int x = 0; x < nent; x++) {
        int at = cursor[ent_link[x]]++;
        ls->user[at] = ent_user[x];
        ls->mb[at] = ent_mb[x];
    }
    rc = 0;
out:
    free(ent_link);
    free(ent_user);
    free(ent_mb);
    free(cursor);
    return rc;
}
