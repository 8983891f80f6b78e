/* Internal to libcrux_tl: calibration's figures, apart from the engine.
 * The planner itself is public (crux_tl_plan); its simplex is crux_tl_simplex.h. */
#ifndef CRUX_TL_PLAN_INTERNAL_H
#define CRUX_TL_PLAN_INTERNAL_H

#include <stddef.h>

#include "ucx_tl/crux_tl.h"

/* crux_tl_calib_cache.c: the cache file, one line of figures per channel signature */
/* a channel's calibration key: its kind and up to four device names */
#define CRUX_TL_SIGNATURE_SIZE 192
/* The file: 'path' itself, or when NULL the default place
 * ($XDG_CACHE_HOME/crux/calibration-<host>, else /tmp/crux-<uid>/...). */
void crux_tl_calib_default_path(char *out, size_t size, const char *path);
/* 1 when the file holds the signature's figures: they go to attr, which is
 * marked calibrated; 0 otherwise (no file, not ours, no such line). */
int crux_tl_calib_read(const char *path, const char *signature, crux_tl_chan_attr_t *attr);
/* Add or replace the figures of 'count' signatures (best effort; nothing
 * for an empty path). */
void crux_tl_calib_write(const char *path, const char *const *signatures,
                         const crux_tl_chan_attr_t *const *attrs, unsigned count);
/* The figures of a channel from three timed transfers: t[i] seconds for
 * n[i] bytes in k[i] chunks, through attr->hops copies. */
void crux_tl_calib_fit(crux_tl_chan_attr_t *attr, const double *t, const double *k,
                       const double *n);

#endif
