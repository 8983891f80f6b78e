#!/usr/bin/env bash
# Junk MCA parameters under mpirun --mca coll crux: every value crux refuses
# leaves MPI_Init working, the Allreduce exact (from the stock components,
# crux's own algorithms off), and one message that names the parameter and
# the value; a junk fill list falls back to the default one with crux still
# on; a stage that does not fit in /dev/shm's free space is refused (inside
# a private, small /dev/shm: tests/mpi/with-private-shm); an unwritable
# profile directory is said once.  Open MPI's help aggregation stays on (its
# default), as users run.
. "$(dirname "$0")/mpi-common.sh"
prog=$builddir/tests/mpi/test_allreduce
faults=$builddir/tests/mpi/test_faults
private_shm=$(cd "$(dirname "$0")" && pwd)/with-private-shm
dir=$(mktemp -d)
trap 'rm -rf "$dir" "$last_stderr"' EXIT
crux=(--mca coll crux --mca coll_crux_verbose 2)

# expect_no_stderr PATTERN DESCRIPTION: the last run's stderr lacks PATTERN
expect_no_stderr() {
  if grep -q -- "$1" "$last_stderr"; then tap_line "not ok" "$2"; else tap_line ok "$2"; fi
}

# refused LABEL NAME=VALUE...: crux off, the job exact, the first parameter named
refused() {
  local label=$1 first=${2%%=*} value=${2#*=} args=() p
  shift
  for p in "$@"; do args+=(--mca "coll_crux_${p%%=*}" "${p#*=}"); done
  run_mpi 2 "$label" "${crux[@]}" "${args[@]}" -- $prog comms
  expect_stderr "coll_crux_$first has a value crux refuses" "[np=2 $label] the message names coll_crux_$first"
  [ "$value" = "-1" ] ||
    expect_stderr "refuses ($value)" "[np=2 $label] ... and the value $value"
  expect_no_stderr "coll:crux: allreduce on" "[np=2 $label] crux's own Allreduce is off"
}

refused "chunk 0" chunk_size=0
refused "chunk above the stage" chunk_size=131072 stage_size=65536
refused "stage too small" stage_size=100
expect_no_stderr "coll_crux_chunk_size" "[np=2 stage too small] ... the default chunk size not blamed for it"
refused "stage -1" stage_size=-1
refused "stage 2^64-1" stage_size=18446744073709551615
refused "depth -1" hier_depth=-1
refused "depth 65" hier_depth=65
refused "group -1" group_size=-1
refused "far latency -5" far_latency_ns=-5
refused "poll -1" priority_poll_ms=-1
refused "arbitration wait -1" arb_max_wait_us=-1
refused "profile interval 0" profile_interval_s=0
refused "tcp set-up deadline 0" net_setup_timeout_ms=0
refused "tcp set-up deadline 3600001" net_setup_timeout_ms=3600001
# said once per node, not once per process (aggregated or not)
run_mpi 3 "said once" "${crux[@]}" --mca coll_crux_chunk_size 0 --mca orte_base_help_aggregate 0 -- $prog comms
[ "$(grep -c "has a value crux refuses" "$last_stderr")" = 1 ] &&
  tap_line ok "[np=3 said once] one message for the node's three processes" ||
  tap_line "not ok" "[np=3 said once] one message for the node's three processes"

# a junk fill list: the default list fills, crux's Allreduce still runs
for list in "" nosuch crux "basic,no/such" "../../tmp/x"; do
  run_mpi 2 "fill '$list'" "${crux[@]}" --mca coll_crux_fill_components "$list" -- $prog comms
  expect_stderr "coll_crux_fill_components has a value crux cannot use" \
    "[np=2 fill '$list'] the message names coll_crux_fill_components"
  expect_stderr "coll:crux: allreduce on " "[np=2 fill '$list'] crux's own Allreduce still ran"
done
run_mpi 2 "fill 'self'" "${crux[@]}" --mca coll_crux_fill_components self -- $prog comms
expect_no_stderr "coll_crux_fill_components has a value" "[np=2 fill 'self'] a usable list is not refused"

# the stage against /dev/shm's free space: 2 processes x 32 MiB in 48 MiB
if "$private_shm" 1m true; then
  for stage in 33554432 17179869184; do
    MPI_LAUNCHER="$private_shm 48m mpirun -np 2" run_mpi 2 "stage $stage in 48 MiB" "${crux[@]}" \
      --mca coll_crux_stage_size $stage -- $prog comms
    expect_stderr "coll_crux_stage_size has a value crux refuses ($stage): 2 processes on this node" \
      "[stage $stage] refused against /dev/shm's free space, the message says why"
    expect_no_stderr "coll:crux: allreduce on" "[stage $stage] crux's own Allreduce is off"
  done
  MPI_LAUNCHER="$private_shm 48m mpirun -np 2" run_mpi 2 "stage 4 MiB in 48 MiB" "${crux[@]}" \
    --mca coll_crux_stage_size 4194304 --mca coll_crux_allreduce_algorithm flat -- $prog comms
  expect_stderr "coll:crux: allreduce on .*: flags" "[stage 4 MiB] a stage that fits is used"
else
  tap_line ok "[stage in a small /dev/shm] # SKIP no private mount namespace here (needs root and unshare)"
fi

# an unwritable profile directory: said once, the job goes on
: >"$dir/file"
CRUX_JOB_ID=params run_mpi 2 "profile dir" -x CRUX_JOB_ID "${crux[@]}" \
  --mca coll_crux_profile_dir "$dir/file/sub" --mca coll_crux_profile_interval_s 1 -- $faults run 3
[ "$(grep -c "cannot write the job's communication profile" "$last_stderr")" = 1 ] &&
  tap_line ok "[profile dir] an unwritable directory is said once" ||
  tap_line "not ok" "[profile dir] an unwritable directory is said once"
finish
