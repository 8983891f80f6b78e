/* Futex wait and wake on shared (not process-private) words. */
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/crux_futex.h"

void crux_futex_wait(const uint32_t *word, uint32_t expected, long ns)
{
    if (ns <= 0) {
        return;
    }
    struct timespec timeout = { ns / 1000000000L, ns % 1000000000L };
    syscall(SYS_futex, word, FUTEX_WAIT, expected, &timeout, NULL, 0);
}

void crux_futex_wake(const uint32_t *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}
