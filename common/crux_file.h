/* Files in places other local users can write (/tmp, /dev/shm, a shared
 * spool): what crux creates or reads there is never reached through a
 * symbolic link, never another user's file, and never a FIFO or device. */
#ifndef CRUX_FILE_H
#define CRUX_FILE_H

#include <stddef.h>
#include <sys/types.h>

/* 0 when dir is a directory (not a link) owned by the effective user or
 * root and not writable by group or others, or sticky (/tmp: others cannot
 * replace what is ours there); else -1 and why says which. */
int crux_dir_safe(const char *dir, char *why, size_t len);

/* The directory part of a file's path is safe (crux_dir_safe); "." for a
 * bare name. */
int crux_parent_safe(const char *path, char *why, size_t len);

/* open(2) with O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK added, then refused
 * (closed, -1) unless a regular file of the effective user with one link
 * and no write permission for group or others; errno: ELOOP for a link,
 * EPERM otherwise.  mode is used with O_CREAT. */
int crux_open_own(const char *path, int flags, mode_t mode);

#endif
