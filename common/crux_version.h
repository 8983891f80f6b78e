/*
 * crux's version, as every tool's --version and the component's
 * verbosity-1 line print it.
 */
#ifndef CRUX_VERSION_H
#define CRUX_VERSION_H

#include <stdio.h>

/* The package version from configure.ac (e.g. "0.1.0"). */
const char *crux_version(void);

/* Prints "TOOL (crux) VERSION" and a build line to OUT, as GNU tools do. */
void crux_version_print(FILE *out, const char *tool);

#endif
