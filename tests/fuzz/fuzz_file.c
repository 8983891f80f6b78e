/* The temporary file of harnesses whose parser reads a path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"

static char path[256];
static int fd = -1;

static void remove_file(void)
{
    unlink(path);
}

const char *fuzz_input_file(const uint8_t *data, size_t size, const char *suffix)
{
    if (fd < 0) {
        const char *tmp = getenv("TMPDIR");
        snprintf(path, sizeof(path), "%s/crux-fuzz-XXXXXX%s", tmp && *tmp ? tmp : "/tmp", suffix);
        fd = mkstemps(path, (int)strlen(suffix));
        if (fd < 0) {
            perror("fuzz: mkstemps");
            abort();
        }
        atexit(remove_file);
    }
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size) {
        perror("fuzz: writing the input");
        abort();
    }
    return path;
}
