#!/bin/sh
# scripts/include-graph: libcrux_tl (ucx_tl/) has no circle of files and
# keeps its areas' order (ucx_tl/layers.txt), libcrux_coll (coll/) and the
# component (ompi_coll/) have no circle of files, and the check fails on
# each kind of fault planted in a copy of a folder: a circle of two files,
# a circle of headers, an area that uses one above it, a file outside the
# library that includes an internal header, a circle in the component.
. "$(dirname "$0")/tap.sh"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
GRAPH="$SRC/scripts/include-graph"

# fault NAME [LIB]: a fresh copy of LIB/ (default ucx_tl) under $WORK/NAME
fault() {
  rm -rf "$WORK/$1"
  mkdir -p "$WORK/$1"
  cp -R "$SRC/${2:-ucx_tl}" "$WORK/$1/${2:-ucx_tl}"
  echo "$WORK/$1"
}

# fails_with ROOT TEXT [LIB]: the check of ROOT's LIB (default ucx_tl)
# exits 1 and says TEXT
fails_with() {
  exits 1 python3 "$GRAPH" --root "$1" "${3:-ucx_tl}" || return 1
  grep -q "$2" "$WORK/out" || { cat "$WORK/out"; return 1; }
}

check "ucx_tl/: no cycle, no broken rule" python3 "$GRAPH" ucx_tl
check "coll/: no cycle" python3 "$GRAPH" coll
check "ompi_coll/: no cycle" python3 "$GRAPH" ompi_coll

root=$(fault calls)
cat >"$root/ucx_tl/plan/one.c" <<'EOT'
void crux_tl_two(void);
void crux_tl_one(void)
{
    crux_tl_two();
}
EOT
cat >"$root/ucx_tl/plan/two.c" <<'EOT'
void crux_tl_one(void);
void crux_tl_two(void)
{
    crux_tl_one();
}
EOT
check "two files that use each other's functions are a cycle" \
  fails_with "$root" 'cycle of 2 files: ucx_tl/plan/one.c ucx_tl/plan/two.c'

root=$(fault headers)
printf '#include "ucx_tl/chan/b.h"\n' >"$root/ucx_tl/chan/a.h"
printf '#include "ucx_tl/chan/a.h"\n' >"$root/ucx_tl/chan/b.h"
check "two headers that include each other are a cycle" \
  fails_with "$root" 'cycle of 2 files: ucx_tl/chan/a.h ucx_tl/chan/b.h'

root=$(fault upward)
sed -i 's|#include "ucx_tl/chan/chan_internal.h"|#include "ucx_tl/engine/engine_internal.h"|' \
  "$root/ucx_tl/chan/chan.c"
check "a channel file that includes the engine's header breaks the order" \
  fails_with "$root" 'chan.c (area chan) includes ucx_tl/engine/engine_internal.h (area engine'

root=$(fault upcall)
printf 'int crux_tl_pair_channel(const void *pair, int kind);\nint f(void)\n{\n    return crux_tl_pair_channel(0, 0);\n}\n' \
  >"$root/ucx_tl/chan/upcall.c"
check "a channel file that calls an engine function breaks the order" \
  fails_with "$root" 'upcall.c (area chan) uses crux_tl_pair_channel of ucx_tl/engine/pair.c'

root=$(fault outside)
mkdir -p "$root/tests"
printf '#include "ucx_tl/core/core_internal.h"\n' >"$root/tests/t.c"
check "a test that includes an internal header without a white-box line" \
  fails_with "$root" 'tests/t.c includes ucx_tl/core/core_internal.h, internal'

# coll/ and ompi_coll/ have no areas: a cycle alone fails them.
# coll_crux_group.c calling back into coll_crux_hier.c, which uses it,
# closes a circle like the one the component had.
root=$(fault component ompi_coll)
printf 'void *coll_crux_get_layout(void *m);\nvoid *again(void *m)\n{\n    return coll_crux_get_layout(m);\n}\n' \
  >>"$root/ompi_coll/coll_crux_group.c"
check "a component file that calls back a file that uses it is a cycle" \
  fails_with "$root" 'cycle of 2 files: ompi_coll/coll_crux_group.c ompi_coll/coll_crux_hier.c' ompi_coll
tap_done
