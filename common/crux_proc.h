/* Whether another process of this host still lives, as crux's waits need
 * it: a peer that exited but was not reaped yet (a zombie) counts as gone,
 * and a pid reused by a new process is told apart by its start time. */
#ifndef CRUX_PROC_H
#define CRUX_PROC_H

#include <stdint.h>
#include <sys/types.h>

/* 0 when 'pid' is gone or a zombie; 1 when it lives, or when /proc cannot
 * say (then kill(pid, 0) alone decides). */
int crux_proc_alive(pid_t pid);

/* Field 22 of /proc/PID/stat (start time in clock ticks since boot); 0 when
 * the process is gone, a zombie, or /proc cannot be read. */
uint64_t crux_proc_start_time(pid_t pid);

/* 1 when 'pid' lives and is the process that started at 'start_time' (as
 * crux_proc_start_time gave it), 0 when it is gone or the pid was reused;
 * a start time of 0 (unknown when recorded) leaves it to crux_proc_alive. */
int crux_proc_alive_since(pid_t pid, uint64_t start_time);

/* 1 when 'pid' (a process or a thread id) is stopped (SIGSTOP, a job
 * control stop, or a debugger's stop), 0 otherwise or when /proc cannot
 * say. */
int crux_proc_stopped(pid_t pid);

#endif
