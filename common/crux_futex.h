/* Sleeping on a 32-bit word in shared memory until another process changes
 * it (Linux futexes, not process-private), and the pause instruction of a
 * spin.  Waits are bounded: callers re-check their condition and their
 * peers' liveness after each. */
#ifndef CRUX_FUTEX_H
#define CRUX_FUTEX_H

#include <stdint.h>

/* Sleep while *word == expected, at most 'ns' nanoseconds (0: return at
 * once); wakes early on crux_futex_wake or a signal. */
void crux_futex_wait(const uint32_t *word, uint32_t expected, long ns);

/* Wake every process sleeping on 'word'. */
void crux_futex_wake(const uint32_t *word);

static inline void crux_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

#endif
