#include "config.h"

#include "common/crux_version.h"

const char *crux_version(void)
{
    return PACKAGE_VERSION;
}

void crux_version_print(FILE *out, const char *tool)
{
    fprintf(out, "%s (crux) %s\n", tool, PACKAGE_VERSION);
#if CRUX_HAVE_CUDA
    fprintf(out, "built with CUDA support\n");
#else
    fprintf(out, "built without CUDA support\n");
#endif
}
