/* The one policy of crux's wait loops: what a poll that found nothing to do
 * does next.  It spins (a pause) while the process has a core of its own,
 * then yields the core a few times, then asks its caller to sleep (on a
 * futex or a doorbell, CRUX_IDLE_SLEEP_NS at most): a sleeping waiter leaves
 * its core to the process it waits for, which matters on oversubscribed
 * nodes.  It also says when the peers' liveness is due a check (a look at
 * /proc costs a system call or more, so not on every poll).
 *
 * A sleep is dear: the peer's wake is a system call, and the sleeper runs
 * again only once the scheduler gets to it (on a 2-core VM a futex hand-off
 * there and back took 58 us, against 1 us polling with yields).  So a
 * process with a core of its own spins through a peer's chunk of work (tens
 * to hundreds of microseconds) and sleeps only in a longer wait. */
#ifndef CRUX_IDLE_H
#define CRUX_IDLE_H

#define CRUX_IDLE_SPINS        4096u    /* idle polls that spin, with a core of our own */
#define CRUX_IDLE_LOOKS        256u     /* ... of which the first only look again */
#define CRUX_IDLE_YIELDS       8u       /* idle polls that yield before sleeping */
#define CRUX_IDLE_SLEEP_NS     1000000L /* a sleep ends after this long at most */
#define CRUX_IDLE_CHECK_POLLS  4096u    /* idle polls between liveness checks ... */
#define CRUX_IDLE_CHECK_SLEEPS 32u      /* ... and sleeps between them */

typedef struct {
    unsigned spins;  /* idle polls that spin before yielding (0: a peer may share our core) */
    unsigned polls;  /* idle polls since something moved */
    unsigned sleeps; /* sleeps since then */
    int check;       /* liveness is due a check */
} crux_idle_t;

/* The spins of a wait among 'local' processes of the node:
 * CRUX_IDLE_SPINS when each can have a core, else 0 (a peer may need ours).
 * 'shared_cores' says the processes share cores whatever their count (the
 * MPI runtime was told so, or found the machine oversubscribed: it yields
 * when idle itself); then 0 too.  A spin on a shared core holds the core
 * the awaited peer needs for a whole time slice. */
unsigned crux_idle_spins(unsigned local, int shared_cores);

static inline crux_idle_t crux_idle_start(unsigned spins)
{
    return (crux_idle_t){ .spins = spins };
}

/* Something moved: the next idle poll starts spinning again. */
static inline void crux_idle_reset(crux_idle_t *idle)
{
    idle->polls = 0;
    idle->sleeps = 0;
    idle->check = 0;
}

/* The phase an idle poll was in: what it did, or asks of its caller. */
typedef enum {
    CRUX_IDLE_SPIN,  /* it paused the core (spin) */
    CRUX_IDLE_YIELD, /* it yielded the core */
    CRUX_IDLE_SLEEP  /* it did nothing: the caller should sleep now */
} crux_idle_phase_t;

/* One poll found nothing: pause or yield the core (CRUX_IDLE_SPIN,
 * CRUX_IDLE_YIELD), or return CRUX_IDLE_SLEEP when the caller should sleep
 * now.  With 'may_sleep' 0 (what the caller waits for moves only while it
 * polls, or nothing would wake a sleep) it yields instead of sleeping. */
crux_idle_phase_t crux_idle_poll(crux_idle_t *idle, int may_sleep);

/* The caller slept (after crux_idle_poll returned CRUX_IDLE_SLEEP). */
static inline void crux_idle_slept(crux_idle_t *idle)
{
    idle->check |= ++idle->sleeps % CRUX_IDLE_CHECK_SLEEPS == 0;
}

/* 1, once, when the peers' liveness is due a check: every
 * CRUX_IDLE_CHECK_POLLS idle polls, and every CRUX_IDLE_CHECK_SLEEPS sleeps. */
static inline int crux_idle_check_due(crux_idle_t *idle)
{
    int due = idle->check;
    idle->check = 0;
    return due;
}

#endif
