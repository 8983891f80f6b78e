#!/bin/sh
# scripts/include-graph: every library of the tree (ucx_tl/, coll/, topo/,
# sched/, sim/, ompi_coll/, common/) has no circle of files, keeps its
# areas' order (LIB/layers.txt) and is seen from outside through its public
# headers only; no two C files of the sources share a name; and the check
# fails on each kind of fault planted in a copy of a folder: a circle of two
# files, a circle of headers, an area that uses one above it, a file outside
# the library that includes an internal header (of an area, or at the top of
# a library without areas), a public header that includes an internal one,
# a circle in the component.
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

for lib in ucx_tl coll topo sched sim ompi_coll common; do
  check "$lib/: no cycle, no broken rule" python3 "$GRAPH" "$lib"
done

# one name, one file: the basenames of the sources' C files are unique
dups() {
  (cd "$SRC" && find common topo ucx_tl coll ompi_coll sched sim bench slurm scripts examples \
    -name '*.c' | xargs -n1 basename | sort | uniq -d) >"$WORK/out"
  [ ! -s "$WORK/out" ] || { cat "$WORK/out"; return 1; }
}
check "no two C files of the sources share a name" dups

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
sed -i 's|#include "ucx_tl/chan/crux_tl_chan_internal.h"|#include "ucx_tl/engine/crux_tl_engine_internal.h"|' \
  "$root/ucx_tl/chan/crux_tl_chan.c"
check "a channel file that includes the engine's header breaks the order" \
  fails_with "$root" 'crux_tl_chan.c (area chan) includes ucx_tl/engine/crux_tl_engine_internal.h (area engine'

root=$(fault upcall)
printf 'int crux_tl_pair_channel(const void *pair, int kind);\nint f(void)\n{\n    return crux_tl_pair_channel(0, 0);\n}\n' \
  >"$root/ucx_tl/chan/upcall.c"
check "a channel file that calls an engine function breaks the order" \
  fails_with "$root" 'upcall.c (area chan) uses crux_tl_pair_channel of ucx_tl/engine/crux_tl_pair.c'

root=$(fault outside)
mkdir -p "$root/tests"
printf '#include "ucx_tl/core/crux_tl_core_internal.h"\n' >"$root/tests/t.c"
check "a test that includes an internal header without a white-box line" \
  fails_with "$root" 'tests/t.c includes ucx_tl/core/crux_tl_core_internal.h, internal'

root=$(fault coll-upward coll)
printf '#include "coll/net/crux_net_internal.h"\n' >>"$root/coll/group/crux_group_wait.c"
check "a group file that includes the channel's header breaks coll/'s order" \
  fails_with "$root" 'crux_group_wait.c (area group) includes coll/net/crux_net_internal.h (area net' coll

root=$(fault public-header coll)
printf '#include "coll/group/crux_group_internal.h"\n' >>"$root/coll/crux_net.h"
check "a public header that includes an internal one" \
  fails_with "$root" 'public header coll/crux_net.h includes coll/group/crux_group_internal.h' coll

# topo/ has no areas: its internal header at the top is still its own
root=$(fault flat topo)
mkdir -p "$root/bench"
printf '#include "topo/crux_topo_internal.h"\n' >"$root/bench/b.c"
check "a file outside a library without areas that includes its internal header" \
  fails_with "$root" 'bench/b.c includes topo/crux_topo_internal.h, internal to topo' topo

# ompi_coll/ has no areas: a cycle alone fails it.
# coll_crux_group.c calling back into coll_crux_hier.c, which uses it,
# closes a circle like the one the component had.
root=$(fault component ompi_coll)
printf 'void *coll_crux_get_layout(void *m);\nvoid *again(void *m)\n{\n    return coll_crux_get_layout(m);\n}\n' \
  >>"$root/ompi_coll/coll_crux_group.c"
check "a component file that calls back a file that uses it is a cycle" \
  fails_with "$root" 'cycle of 2 files: ompi_coll/coll_crux_group.c ompi_coll/coll_crux_hier.c' ompi_coll
tap_done
