/* Process liveness from kill(pid, 0) and /proc/PID/stat. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/crux_proc.h"

/* /proc/PID/stat read whole into 'buf'; the pointer to the blank after the
 * command name's closing parenthesis (the command may hold blanks and
 * parentheses), or NULL.  *missing is set when the file does not exist. */
static const char *read_stat(pid_t pid, char *buf, size_t size, int *missing)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    *missing = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        *missing = errno == ENOENT;
        return NULL;
    }
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    if (n <= 0) {
        return NULL;
    }
    buf[n] = '\0';
    const char *end = strrchr(buf, ')');
    return end != NULL && end[1] == ' ' && end[2] != '\0' ? end + 1 : NULL;
}

static int zombie(char state)
{
    return state == 'Z' || state == 'X' || state == 'x';
}

int crux_proc_alive(pid_t pid)
{
    if (kill(pid, 0) != 0 && errno == ESRCH) {
        return 0;
    }
    char buf[1024];
    int missing;
    const char *p = read_stat(pid, buf, sizeof(buf), &missing);
    if (p == NULL) {
        return !missing;
    }
    return !zombie(p[1]);
}

uint64_t crux_proc_start_time(pid_t pid)
{
    char buf[1024];
    int missing;
    const char *p = read_stat(pid, buf, sizeof(buf), &missing);
    if (p == NULL || zombie(p[1])) {
        return 0;
    }
    p += 1; /* field 3, the state */
    for (int field = 3; field < 22 && p != NULL; field++) {
        p = strchr(p, ' ');
        if (p != NULL) {
            p++;
        }
    }
    return p != NULL ? strtoull(p, NULL, 10) : 0;
}

int crux_proc_alive_since(pid_t pid, uint64_t start_time)
{
    if (start_time == 0) {
        return crux_proc_alive(pid);
    }
    if (kill(pid, 0) != 0 && errno == ESRCH) {
        return 0;
    }
    return crux_proc_start_time(pid) == start_time;
}

int crux_proc_stopped(pid_t pid)
{
    char buf[1024];
    int missing;
    const char *p = pid > 0 ? read_stat(pid, buf, sizeof(buf), &missing) : NULL;
    return p != NULL && (p[1] == 'T' || p[1] == 't');
}
