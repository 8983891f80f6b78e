/* Checks for files in shared places (see crux_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crux_file.h"

int crux_dir_safe(const char *dir, char *why, size_t len)
{
    struct stat sb;
    const char *bad = NULL;
    if (lstat(dir, &sb) != 0)
        bad = strerror(errno);
    else if (S_ISLNK(sb.st_mode))
        bad = "a symbolic link";
    else if (!S_ISDIR(sb.st_mode))
        bad = "not a directory";
    else if (sb.st_uid != geteuid() && sb.st_uid != 0)
        bad = "owned by another user";
    else if ((sb.st_mode & 022) && !(sb.st_mode & S_ISVTX))
        bad = "writable by other users";
    if (bad == NULL)
        return 0;
    if (why != NULL && len > 0)
        snprintf(why, len, "%s: %s", dir, bad);
    return -1;
}

int crux_parent_safe(const char *path, char *why, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        return crux_dir_safe(".", why, len);
    char dir[4096];
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    if (n >= sizeof(dir)) {
        if (why != NULL && len > 0)
            snprintf(why, len, "%.64s...: path too long", path);
        return -1;
    }
    memcpy(dir, path, n);
    dir[n] = '\0';
    return crux_dir_safe(dir, why, len);
}

int crux_open_own(const char *path, int flags, mode_t mode)
{
    int fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, mode);
    if (fd < 0)
        return -1;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_uid != geteuid() || sb.st_nlink != 1 ||
        (sb.st_mode & 022)) {
        close(fd);
        errno = EPERM;
        return -1;
    }
    return fd;
}
