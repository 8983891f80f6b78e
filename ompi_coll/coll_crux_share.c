/* Groups shared between communicators (docs/design/resources.md).
 *
 * A communicator over the same processes, in the same rank order, as one
 * that already has a group of a kind (the shared-memory group, the engine
 * group) takes that group instead of building its own: its transport,
 * segments, stage and engine.  What a communicator costs is then a
 * reference, and what a process costs grows with the sets of peers it
 * talks to, not with its communicators.  At most CRUX_SHARED_MAX groups of
 * each kind live in a process; a communicator that would need another does
 * without crux's Allreduce (its previous module's), said at verbosity 1.
 *
 * Whether to share is agreed: every member proposes the newest group of
 * the kind it holds over these processes in this order, and all take it
 * only if all proposed the same one (a member may have dropped a group the
 * others still hold; then a new one is built, which all proposed alike).
 *
 * The calls of the communicators sharing a group go through it one after
 * the other, in each process's order; MPI has every process call the
 * blocking collectives of communicators over the same processes in one
 * order (else they may deadlock).  A process whose threads call
 * collectives at once (MPI_THREAD_MULTIPLE) proposes nothing: there the
 * calls of two communicators could enter a group in different orders on
 * different processes, so each communicator builds its own, within the
 * same limit. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ompi_config.h"

#include "ompi/proc/proc.h"
#include "ompi/runtime/mpiruntime.h"

#include "ompi_coll/coll_crux.h"
#include "coll/crux_dev.h"

typedef struct shared {
    struct shared *next; /* newest first */
    coll_crux_kind_t kind;
    uint64_t id; /* the same on every member: member 0's pid and count */
    int refs;
    int size;
    uint64_t *names; /* the members' process names, in rank order */
    void *group;
} shared_t;

/* What each member sends: its proposal, a fresh id should a group be
 * built (member 0's is taken), and whether it has room for one more. */
typedef struct {
    uint64_t proposal; /* 0: none */
    uint64_t fresh;
    int32_t room;
    int32_t pad;
} offer_t;

/* Never held across an exchange with the other processes. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static shared_t *groups;
static unsigned live[COLL_CRUX_KINDS]; /* groups, and slots reserved to build one */
static uint32_t built;

static uint64_t name_of(ompi_communicator_t *comm, int rank)
{
    const ompi_proc_t *proc = ompi_comm_peer_lookup(comm, rank);
    uint64_t name = 0;
    memcpy(&name, &proc->super.proc_name,
           sizeof(name) < sizeof(proc->super.proc_name) ? sizeof(name)
                                                        : sizeof(proc->super.proc_name));
    return name;
}

static int broken(coll_crux_kind_t kind, void *group)
{
    return kind == COLL_CRUX_HOST ? crux_coll_group_broken(group) : crux_dev_group_broken(group);
}

static void destroy(coll_crux_kind_t kind, void *group)
{
    if (kind == COLL_CRUX_HOST) {
        crux_coll_group_destroy(group);
    } else {
        crux_dev_group_destroy(group);
    }
}

/* The newest usable group of 'kind' over exactly these processes. */
static shared_t *find(coll_crux_kind_t kind, const uint64_t *names, int size)
{
    for (shared_t *s = groups; s != NULL; s = s->next) {
        if (s->kind == kind && s->size == size &&
            memcmp(s->names, names, (size_t)size * sizeof(*names)) == 0 &&
            !broken(kind, s->group)) {
            return s;
        }
    }
    return NULL;
}

static int exchange(mca_coll_crux_module_t *m, const offer_t *mine, offer_t *all)
{
    int rc = m->previous_allgather(mine, (int)sizeof(*mine), MPI_BYTE, all, (int)sizeof(*mine),
                                   MPI_BYTE, m->comm, m->previous_allgather_module);
    return rc == OMPI_SUCCESS ? 0 : -1;
}

static crux_status_t build(mca_coll_crux_module_t *m, coll_crux_kind_t kind, void **group)
{
    return kind == COLL_CRUX_HOST ? coll_crux_host_group_build(m, (crux_coll_group_t **)group)
                                  : coll_crux_engine_group_build(m, (crux_dev_group_t **)group);
}

crux_status_t coll_crux_share_acquire(mca_coll_crux_module_t *m, coll_crux_kind_t kind,
                                      void **group_p)
{
    int size = ompi_comm_size(m->comm);
    uint64_t *names = malloc((size_t)size * sizeof(*names));
    offer_t mine = { 0 }, *all = malloc((size_t)size * sizeof(*all)), dummy;
    shared_t *fresh = calloc(1, sizeof(*fresh));
    for (int r = 0; names != NULL && r < size; r++) {
        names[r] = name_of(m->comm, r);
    }
    pthread_mutex_lock(&lock);
    shared_t *s = names != NULL && !ompi_mpi_thread_multiple ? find(kind, names, size) : NULL;
    if (s != NULL) {
        s->refs++; /* kept while the others decide */
        mine.proposal = s->id;
    }
    mine.fresh = (uint64_t)getpid() << 32 | ++built;
    mine.room = names != NULL && all != NULL && fresh != NULL && live[kind] < CRUX_SHARED_MAX;
    live[kind] += (unsigned)mine.room; /* reserved until the outcome is known */
    pthread_mutex_unlock(&lock);

    /* every member takes part, whatever it found; all see the same offers */
    crux_status_t st =
        exchange(m, &mine, all != NULL ? all : &dummy) == 0 && all != NULL ? CRUX_OK : CRUX_ERR_IO;
    int same = st == CRUX_OK && all[0].proposal != 0, room = st == CRUX_OK;
    for (int r = 0; st == CRUX_OK && r < size; r++) {
        same &= all[r].proposal == all[0].proposal;
        room &= all[r].room;
    }
    if (same) {
        *group_p = s->group;
    } else if (room) {
        st = build(m, kind, group_p); /* collective; agreed inside */
    } else if (st == CRUX_OK) {
        st = CRUX_ERR_NO_RESOURCE; /* a member is at its limit */
        CRUX_VERBOSE(1,
                     "communicator %s: a process holds %d %s groups already (crux's limit, "
                     "docs/design/resources.md)",
                     m->comm->c_name, CRUX_SHARED_MAX,
                     kind == COLL_CRUX_HOST ? "shared-memory" : "engine");
    }
    pthread_mutex_lock(&lock);
    live[kind] -= (unsigned)mine.room;
    if (!same && room && st == CRUX_OK) {
        *fresh = (shared_t){
            .next = groups,
            .kind = kind,
            .id = all[0].fresh,
            .refs = 1,
            .size = size,
            .names = names,
            .group = *group_p,
        };
        groups = fresh;
        live[kind]++;
        names = NULL;
        fresh = NULL;
    }
    pthread_mutex_unlock(&lock);
    if (s != NULL && !same) {
        coll_crux_share_release(kind, s->group); /* the reference kept above */
    }
    free(fresh);
    free(names);
    free(all);
    return st;
}

void coll_crux_share_release(coll_crux_kind_t kind, void *group)
{
    if (group == NULL) {
        return;
    }
    pthread_mutex_lock(&lock);
    shared_t **link = &groups;
    while (*link != NULL && (*link)->group != group) {
        link = &(*link)->next;
    }
    shared_t *s = *link;
    if (s != NULL && --s->refs == 0) {
        *link = s->next;
        live[kind]--;
    } else {
        s = NULL;
    }
    pthread_mutex_unlock(&lock);
    if (s != NULL) {
        destroy(kind, s->group);
        free(s->names);
        free(s);
    }
}
