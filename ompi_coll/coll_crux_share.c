/* Groups shared between communicators (docs/design/resources.md).
 *
 * A communicator over the same processes, in the same rank order, as one
 * that already has a group of a kind (the shared-memory group, the engine
 * group, the hierarchical algorithm's layout) takes that group instead of
 * building its own: its transport, segments, stage and engine, or its
 * subcommunicators.  What a communicator costs is then a reference, and
 * what a process costs grows with the sets of peers it talks to, not with
 * its communicators.  At most CRUX_SHARED_MAX groups of each kind live in
 * a process.
 *
 * Whether to share is agreed: every member proposes the newest group of
 * the kind it holds over these processes in this order, and all take it
 * only if all proposed the same one (a member may have dropped a group the
 * others still hold; then a new one is built, which all proposed alike).
 *
 * At the limit, a group over the same set of processes (in any order) that
 * has been used least recently is released, if every member proposes that
 * same one: all of its members are then in this call, and all release it
 * here; the communicators that held it find it gone at their next call
 * (coll_crux_share_use), which every member makes at the same point of its
 * sequence of calls, and acquire again.  Members that propose different
 * groups, or none, release nothing and the communicator does without
 * crux's Allreduce (its previous module's), said at verbosity 1.  A group
 * in use by an enclosing call is never over this call's set of processes
 * (a layout's groups are pinned; its cross communicator's set is another).
 *
 * The calls of the communicators sharing a group go through it one after
 * the other, in each process's order; MPI has every process call the
 * blocking collectives of communicators over the same processes in one
 * order (else they may deadlock).  A process whose threads call
 * collectives at once (MPI_THREAD_MULTIPLE) proposes nothing and releases
 * nothing early: there the calls of two communicators could enter a group
 * in different orders on different processes, and a group may be in use in
 * another thread, so each communicator builds its own, within the same
 * limit. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ompi_config.h"

#include "ompi/proc/proc.h"
#include "ompi/runtime/mpiruntime.h"

#include "ompi_coll/coll_crux.h"

struct coll_crux_shared {
    struct coll_crux_shared *next; /* newest first */
    coll_crux_kind_t kind;
    int variant; /* coll_crux_share_request_t's */
    uint64_t id; /* the same on every member: member 0's pid and count */
    int refs;
    int pins;      /* references that keep it from being released early */
    bool released; /* to make room: 'group' is gone, the references remain */
    uint64_t used; /* this process's count of uses at the last one */
    int size;
    uint64_t *names;  /* the members' process names, in rank order */
    uint64_t *sorted; /* the same, sorted: the set of members */
    void *group;
    void (*destroy)(void *group); /* the builder's: this file knows no kind's insides */
};

/* What each member sends: its proposal, a fresh id should a group be
 * built (member 0's is taken), whether it has room for one more, and the
 * group it would release to make room. */
typedef struct {
    uint64_t proposal; /* 0: none */
    uint64_t fresh;
    uint64_t victim; /* 0: none */
    int32_t room;
    int32_t pad;
} offer_t;

static const char *const kind_names[COLL_CRUX_KINDS] = { "shared-memory", "engine",
                                                         "hierarchical" };

/* Never held across an exchange with the other processes. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static coll_crux_shared_t *groups;
static unsigned live[COLL_CRUX_KINDS]; /* groups, and slots reserved to build one */
static uint32_t built;
static uint64_t uses;

static uint64_t name_of(ompi_communicator_t *comm, int rank)
{
    const ompi_proc_t *proc = ompi_comm_peer_lookup(comm, rank);
    uint64_t name = 0;
    memcpy(&name, &proc->super.proc_name,
           sizeof(name) < sizeof(proc->super.proc_name) ? sizeof(name)
                                                        : sizeof(proc->super.proc_name));
    return name;
}

static int compare(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int broken(coll_crux_kind_t kind, void *group)
{
    switch (kind) {
    case COLL_CRUX_HOST: return crux_coll_group_broken(group);
    case COLL_CRUX_ENGINE: return crux_engine_group_broken(group);
    default: {
        const crux_layout_t *l = group;
        return (l->group != NULL && crux_coll_group_broken(l->group)) ||
               (l->lanes != NULL && crux_engine_group_broken(l->lanes));
    }
    }
}

/* The newest usable group of 'kind' and 'variant' over exactly these
 * processes. */
static coll_crux_shared_t *find(coll_crux_kind_t kind, int variant, const uint64_t *names, int size)
{
    for (coll_crux_shared_t *s = groups; s != NULL; s = s->next) {
        if (s->kind == kind && s->variant == variant && !s->released && s->size == size &&
            memcmp(s->names, names, (size_t)size * sizeof(*names)) == 0 &&
            !broken(kind, s->group)) {
            return s;
        }
    }
    return NULL;
}

/* The least recently used group of 'kind' over this set of processes, in
 * any order, that may be released early. */
static coll_crux_shared_t *idlest(coll_crux_kind_t kind, const uint64_t *sorted, int size)
{
    coll_crux_shared_t *best = NULL;
    for (coll_crux_shared_t *s = groups; s != NULL; s = s->next) {
        if (s->kind == kind && !s->released && s->pins == 0 && s->size == size &&
            memcmp(s->sorted, sorted, (size_t)size * sizeof(*sorted)) == 0 &&
            (best == NULL || __atomic_load_n(&s->used, __ATOMIC_RELAXED) <
                                 __atomic_load_n(&best->used, __ATOMIC_RELAXED))) {
            best = s;
        }
    }
    return best;
}

/* Release the group 'id' of 'kind' to make room (under the lock); what to
 * destroy once the lock is dropped, and how (*destroy). */
static void *release_early(coll_crux_kind_t kind, uint64_t id, void (**destroy)(void *))
{
    for (coll_crux_shared_t *s = groups; s != NULL; s = s->next) {
        if (s->kind == kind && s->id == id && !s->released) {
            void *group = s->group;
            __atomic_store_n(&s->released, true, __ATOMIC_RELAXED);
            s->group = NULL;
            live[kind]--;
            *destroy = s->destroy;
            return group;
        }
    }
    return NULL;
}

static void drop(coll_crux_shared_t *s, bool pin)
{
    pthread_mutex_lock(&lock);
    coll_crux_shared_t **link = &groups;
    while (*link != NULL && *link != s) {
        link = &(*link)->next;
    }
    s->pins -= pin;
    void *group = NULL;
    if (--s->refs == 0) {
        *link = s->next;
        if (!s->released) {
            live[s->kind]--;
            group = s->group;
        }
    } else {
        s = NULL;
    }
    pthread_mutex_unlock(&lock);
    if (s != NULL) {
        if (group != NULL) {
            s->destroy(group);
        }
        free(s->names);
        free(s);
    }
}

crux_status_t coll_crux_share_acquire(const coll_crux_share_request_t *req,
                                      coll_crux_shared_t **share_p)
{
    const coll_crux_kind_t kind = req->kind;
    int size = ompi_comm_size(req->comm);
    uint64_t *names = malloc(2 * (size_t)size * sizeof(*names));
    offer_t mine = { 0 }, *all = malloc((size_t)size * sizeof(*all)), dummy;
    coll_crux_shared_t *fresh = calloc(1, sizeof(*fresh));
    for (int r = 0; names != NULL && r < size; r++) {
        names[r] = names[size + r] = name_of(req->comm, r);
    }
    if (names != NULL) {
        qsort(names + size, (size_t)size, sizeof(*names), compare);
    }
    bool ok = names != NULL && all != NULL && fresh != NULL, alone = ompi_mpi_thread_multiple;
    pthread_mutex_lock(&lock);
    coll_crux_shared_t *s = ok && !alone ? find(kind, req->variant, names, size) : NULL;
    if (s != NULL) {
        s->refs++; /* kept while the others decide */
        mine.proposal = s->id;
    }
    mine.fresh = (uint64_t)getpid() << 32 | ++built;
    mine.room = ok && live[kind] < CRUX_SHARED_MAX;
    live[kind] += (unsigned)mine.room; /* reserved until the outcome is known */
    coll_crux_shared_t *idle = ok && !alone ? idlest(kind, names + size, size) : NULL;
    mine.victim = idle != NULL ? idle->id : 0;
    pthread_mutex_unlock(&lock);

    /* every member takes part, whatever it found; all see the same offers */
    crux_status_t st =
        req->oob->allgather(&mine, all != NULL ? all : &dummy, sizeof(mine), req->oob->arg) == 0 &&
                all != NULL
            ? CRUX_OK
            : CRUX_ERR_IO;
    int same = st == CRUX_OK && all[0].proposal != 0, room = st == CRUX_OK;
    int evict = st == CRUX_OK && all[0].victim != 0;
    for (int r = 0; st == CRUX_OK && r < size; r++) {
        same &= all[r].proposal == all[0].proposal;
        room &= all[r].room;
        evict &= all[r].victim == all[0].victim;
    }
    if (!same && !room && evict) {
        /* every member holds the group proposed and releases it here */
        pthread_mutex_lock(&lock);
        void (*destroy)(void *) = NULL;
        void *gone = release_early(kind, all[0].victim, &destroy);
        if (!mine.room) {
            live[kind]++;
            mine.room = 1;
        }
        pthread_mutex_unlock(&lock);
        if (gone != NULL) {
            destroy(gone);
        }
        room = 1;
        CRUX_VERBOSE(2,
                     "communicator %s: the least recently used %s group over its processes "
                     "released to make room (crux's limit of %d)",
                     req->comm->c_name, kind_names[kind], CRUX_SHARED_MAX);
    }
    void *group = NULL;
    if (same) {
        group = s->group;
    } else if (room) {
        st = req->build(req->arg, req->oob, &group); /* collective; agreed inside */
    } else if (st == CRUX_OK) {
        st = CRUX_ERR_NO_RESOURCE; /* a member is at its limit */
        CRUX_VERBOSE(1,
                     "communicator %s: a process holds %d %s groups already (crux's limit, "
                     "docs/design/resources.md)",
                     req->comm->c_name, CRUX_SHARED_MAX, kind_names[kind]);
    }
    pthread_mutex_lock(&lock);
    live[kind] -= (unsigned)mine.room;
    if (same) {
        s->pins += req->pin;
        __atomic_store_n(&s->used, __atomic_add_fetch(&uses, 1, __ATOMIC_RELAXED),
                         __ATOMIC_RELAXED);
        *share_p = s;
        s = NULL; /* the reference kept above is the caller's */
    } else if (room && st == CRUX_OK) {
        *fresh = (coll_crux_shared_t){
            .next = groups,
            .kind = kind,
            .variant = req->variant,
            .id = all[0].fresh,
            .refs = 1,
            .pins = req->pin,
            .used = __atomic_add_fetch(&uses, 1, __ATOMIC_RELAXED),
            .size = size,
            .names = names,
            .sorted = names + size,
            .group = group,
            .destroy = req->destroy,
        };
        groups = fresh;
        live[kind]++;
        *share_p = fresh;
        names = NULL;
        fresh = NULL;
    }
    pthread_mutex_unlock(&lock);
    if (s != NULL) {
        drop(s, false); /* the reference kept above */
    }
    free(fresh);
    free(names);
    free(all);
    return st;
}

/* Without the lock: every Allreduce asks, small ones too.  A group is
 * released early only in a process whose threads do not call collectives
 * at once (above), by this thread's own earlier call, so 'released' and
 * 'group' change under no caller's feet; the counts of uses are atomic. */
void *coll_crux_share_use(coll_crux_shared_t *s)
{
    __atomic_store_n(&s->used, __atomic_add_fetch(&uses, 1, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
    return __atomic_load_n(&s->released, __ATOMIC_RELAXED) ? NULL : s->group;
}

void coll_crux_share_release(coll_crux_shared_t *s, bool pin)
{
    if (s != NULL) {
        drop(s, pin);
    }
}
