/* Groups shared between communicators (crux_coll.h;
 * docs/design/resources.md).
 *
 * A communicator over the same processes, in the same rank order, as one
 * that already has a group of a kind takes that group instead of building
 * its own.  What a communicator costs is then a reference, and what a
 * process costs grows with the sets of peers it talks to, not with its
 * communicators.  At most CRUX_SHARE_MAX groups of each kind live in a
 * process.
 *
 * Whether to share is agreed: every member proposes the newest group of
 * the kind it holds over these processes in this order, and all take it
 * only if all proposed the same one (a member may have dropped a group the
 * others still hold; then a new one is built, which all proposed alike).
 *
 * At the limit, a group over the same set of processes (in any order) that
 * has been used least recently is released, if every member proposes that
 * same one: all of its members are then in this call, and all release it
 * here; the references that held it find it gone at their next use
 * (crux_share_use), which every member makes at the same point of its
 * sequence of calls, and acquire again.  Members that propose different
 * groups, or none, release nothing and the acquisition fails
 * (CRUX_ERR_NO_RESOURCE).  A group in use by an enclosing call is never
 * over this call's set of processes (pin it: a layout's groups are
 * pinned).
 *
 * A caller whose threads call collectives at once ('alone') proposes
 * nothing and releases nothing early: there the calls of two
 * communicators could enter a group in different orders on different
 * processes, and a group may be in use in another thread, so each
 * communicator builds its own, within the same limit. */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/crux_coll.h"

struct crux_share {
    struct crux_share *next; /* newest first */
    int kind;
    int variant;
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
    int (*broken)(void *group);
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

/* Never held across an exchange with the other processes. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static crux_share_t *groups;
static unsigned live[CRUX_SHARE_KINDS]; /* groups, and slots reserved to build one */
static uint32_t built;
static uint64_t uses;

static int compare(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The newest usable group of 'kind' and 'variant' over exactly these
 * processes. */
static crux_share_t *find(int kind, int variant, const uint64_t *names, int size)
{
    for (crux_share_t *s = groups; s != NULL; s = s->next) {
        if (s->kind == kind && s->variant == variant && !s->released && s->size == size &&
            memcmp(s->names, names, (size_t)size * sizeof(*names)) == 0 &&
            (s->broken == NULL || !s->broken(s->group))) {
            return s;
        }
    }
    return NULL;
}

/* The least recently used group of 'kind' over this set of processes, in
 * any order, that may be released early. */
static crux_share_t *idlest(int kind, const uint64_t *sorted, int size)
{
    crux_share_t *best = NULL;
    for (crux_share_t *s = groups; s != NULL; s = s->next) {
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
static void *release_early(int kind, uint64_t id, void (**destroy)(void *))
{
    for (crux_share_t *s = groups; s != NULL; s = s->next) {
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

static void drop(crux_share_t *s, int pin)
{
    pthread_mutex_lock(&lock);
    crux_share_t **link = &groups;
    while (*link != NULL && *link != s) {
        link = &(*link)->next;
    }
    s->pins -= pin != 0;
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

crux_status_t crux_share_acquire(const crux_share_request_t *req, crux_share_t **share_p,
                                 crux_share_how_t *how)
{
    const int kind = req->kind;
    int size = req->oob->size;
    *how = CRUX_SHARE_NONE;
    if (kind < 0 || kind >= CRUX_SHARE_KINDS) {
        return CRUX_ERR_INVALID; /* alike on every member: the same kind */
    }
    uint64_t *names = malloc(2 * (size_t)size * sizeof(*names));
    offer_t mine = { 0 }, *all = malloc((size_t)size * sizeof(*all));
    crux_share_t *fresh = calloc(1, sizeof(*fresh));
    if (names != NULL && req->names == NULL) {
        free(names); /* the caller had no names: take part, propose nothing */
        names = NULL;
    }
    if (names != NULL) {
        memcpy(names, req->names, (size_t)size * sizeof(*names));
        memcpy(names + size, req->names, (size_t)size * sizeof(*names));
        qsort(names + size, (size_t)size, sizeof(*names), compare);
    }
    bool ok = names != NULL && all != NULL && fresh != NULL, alone = req->alone;
    pthread_mutex_lock(&lock);
    crux_share_t *s = ok && !alone ? find(kind, req->variant, names, size) : NULL;
    if (s != NULL) {
        s->refs++; /* kept while the others decide */
        mine.proposal = s->id;
    }
    mine.fresh = (uint64_t)getpid() << 32 | ++built;
    mine.room = ok && live[kind] < CRUX_SHARE_MAX;
    live[kind] += (unsigned)mine.room; /* reserved until the outcome is known */
    crux_share_t *idle = ok && !alone ? idlest(kind, names + size, size) : NULL;
    mine.victim = idle != NULL ? idle->id : 0;
    pthread_mutex_unlock(&lock);

    /* every member takes part, whatever it found (a member without memory
     * for the offers cannot: its peers' exchange fails or waits on the
     * caller's allgather); all see the same offers */
    crux_status_t st = all == NULL ? CRUX_ERR_NO_MEMORY
                       : req->oob->allgather(&mine, all, sizeof(mine), req->oob->arg) == 0
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
        *how = CRUX_SHARE_MADE_ROOM;
    }
    void *group = NULL;
    if (same) {
        group = s->group;
        *how = CRUX_SHARE_SHARED;
    } else if (room) {
        st = req->build(req->arg, req->oob, &group); /* collective; agreed inside */
        *how = *how == CRUX_SHARE_MADE_ROOM ? CRUX_SHARE_MADE_ROOM : CRUX_SHARE_BUILT;
    } else if (st == CRUX_OK) {
        st = CRUX_ERR_NO_RESOURCE; /* a member is at its limit */
        *how = CRUX_SHARE_FULL;
    }
    pthread_mutex_lock(&lock);
    live[kind] -= (unsigned)mine.room;
    if (same) {
        s->pins += req->pin != 0;
        __atomic_store_n(&s->used, __atomic_add_fetch(&uses, 1, __ATOMIC_RELAXED),
                         __ATOMIC_RELAXED);
        *share_p = s;
        s = NULL; /* the reference kept above is the caller's */
    } else if (room && st == CRUX_OK) {
        *fresh = (crux_share_t){
            .next = groups,
            .kind = kind,
            .variant = req->variant,
            .id = all[0].fresh,
            .refs = 1,
            .pins = req->pin != 0,
            .used = __atomic_add_fetch(&uses, 1, __ATOMIC_RELAXED),
            .size = size,
            .names = names,
            .sorted = names + size,
            .group = group,
            .destroy = req->destroy,
            .broken = req->broken,
        };
        groups = fresh;
        live[kind]++;
        *share_p = fresh;
        names = NULL;
        fresh = NULL;
    }
    pthread_mutex_unlock(&lock);
    if (s != NULL) {
        drop(s, 0); /* the reference kept above */
    }
    free(fresh);
    free(names);
    free(all);
    return st;
}

/* Without the lock: every Allreduce asks, small ones too.  A group is
 * released early only by a caller whose threads do not call collectives
 * at once (above), by this thread's own earlier call, so 'released' and
 * 'group' change under no caller's feet.  The count of uses is read and
 * written atomically but not added to in one step: a locked add costs a
 * small call several percent, and two threads' uses that tie only make
 * the least recently used group a choice between equals. */
void *crux_share_use(crux_share_t *s)
{
    uint64_t used = __atomic_load_n(&uses, __ATOMIC_RELAXED) + 1;
    __atomic_store_n(&uses, used, __ATOMIC_RELAXED);
    __atomic_store_n(&s->used, used, __ATOMIC_RELAXED);
    return __atomic_load_n(&s->released, __ATOMIC_RELAXED) ? NULL : s->group;
}

void crux_share_release(crux_share_t *s, int pin)
{
    if (s != NULL) {
        drop(s, pin);
    }
}

void *crux_share_slot_get(crux_share_slot_t *slot,
                          crux_status_t (*acquire)(void *arg, crux_share_t **share), void *arg,
                          crux_status_t *status)
{
    *status = CRUX_OK;
    void *group = NULL;
    if (slot->state == CRUX_SHARE_SLOT_HELD && (group = crux_share_use(slot->share)) == NULL) {
        crux_share_slot_release(slot); /* released to make room: acquired again */
    }
    if (slot->state != CRUX_SHARE_SLOT_UNTRIED) {
        return group;
    }
    *status = acquire(arg, &slot->share);
    slot->state = *status == CRUX_OK ? CRUX_SHARE_SLOT_HELD : CRUX_SHARE_SLOT_FAILED;
    return *status == CRUX_OK ? crux_share_use(slot->share) : NULL;
}

void crux_share_slot_release(crux_share_slot_t *slot)
{
    if (slot->state == CRUX_SHARE_SLOT_HELD) {
        crux_share_release(slot->share, 0);
    }
    *slot = (crux_share_slot_t)CRUX_SHARE_SLOT_INIT;
}
