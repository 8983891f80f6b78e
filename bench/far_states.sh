#!/usr/bin/env bash
# Flags and lanes Allreduce with the far-peer streaming off and on, at 2
# ranks, K times, each launch labelled with the cache-line round trip
# between CPUs 0 and 1 before it (crux-bench-rtt): on a machine whose CPUs
# share one last-level cache the two agree; across chiplets or sockets
# (or a VM whose vCPUs move there) "on" is what crux does by default.
#
#   bench/far_states.sh K [crux-bench-allreduce options...]
#
# CRUX_BUILD (default ./build) is the build directory.  Example:
#   bench/far_states.sh 4 --min 16K --max 4M --reps 7
set -u -o pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${CRUX_BUILD:-$src/build}
bench=$build/bench/crux-bench-allreduce
rtt=$build/bench/crux-bench-rtt
[ $# -ge 1 ] || { sed -n '2,12s/^# \{0,1\}//p' "$0" >&2; exit 2; }
[ -x "$bench" ] && [ -x "$rtt" ] || { echo "$0: build crux first" >&2; exit 2; }
rounds=$1
shift
export OMPI_MCA_mca_base_component_path="$build/stage:SYS_DEFAULT"
# crux beside the other components, as an operator who opted in runs it
export OMPI_MCA_coll_crux_enable=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

echo "# launch, rtt_ns before it, streaming for far peers, then per size: bytes:flags_us/lanes_us"
for i in $(seq "$rounds"); do
  for far in off on; do
    ns=0
    [ "$far" = off ] && ns=1000000000   # no peer is that slow
    before=$("$rtt" | awk '{ print $2 }')
    row=$(mpirun -np 2 --bind-to core -x OMPI_MCA_coll_crux_far_latency_ns="$ns" "$bench" --csv \
            --compare flags,lanes "$@" | awk -F, 'NR > 1 { printf " %s:%s/%s", $2, $3, $4 }') ||
      { echo "$0: launch $i failed" >&2; exit 1; }
    echo "$i rtt_ns=$before far=$far$row"
  done
done
