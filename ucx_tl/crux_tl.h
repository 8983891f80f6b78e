/* libcrux_tl: crux's intranode transport, built on UCX's public UCT API.
 *
 * This header is the library's whole public API, in two halves:
 *   - crux_tl_uct.h, the UCT wrapper: a context, cma endpoints to peers,
 *     shared segments, and the memory query (host or CUDA memory);
 *   - crux_tl_multipath.h, the multipath transport: channels, the planner,
 *     the engine and its transfers, shared buffers, lanes, calibration.
 * The library's layout is described in docs/design/transport.md.
 */
#ifndef CRUX_TL_H
#define CRUX_TL_H

#include "ucx_tl/crux_tl_uct.h"
#include "ucx_tl/crux_tl_multipath.h"

#endif
