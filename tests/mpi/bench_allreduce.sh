#!/usr/bin/env bash
# crux-bench-allreduce end to end: its defaults under --mca coll crux at 2
# and 3 ranks (crux against coll/tuned through crux's fallback; selections
# the job cannot run are skipped and named, never a crash), crux turned on
# by the benchmark unless the user said otherwise, every datatype and
# operation checked element by element at odd counts (0 wrong), other
# component sets, device buffers with the stand-in CUDA driver, --help,
# --version and one-line errors with exit status 2.
# Timings are not checked (this machine is shared).
. "$(dirname "$0")/mpi-common.sh"
bench=$builddir/bench/crux-bench-allreduce
work=$(mktemp -d "${TMPDIR:-/tmp}/crux-bench-allreduce-XXXXXX")
trap 'rm -rf "$work" "$last_stderr"' EXIT

# expect DESC COMMAND...: a check that COMMAND succeeds
expect() {
  local desc=$1
  shift
  if "$@"; then tap_line ok "$desc"; else tap_line "not ok" "$desc"; fi
}

# bench NAME LAUNCHER... -- ARGS...: run it, stdout to $work/NAME.out,
# stderr to $work/NAME.err, the exit status to $work/NAME.rc
bench() {
  local name=$1
  shift
  local launcher=()
  while [ "$1" != "--" ]; do launcher+=("$1"); shift; done
  shift
  timeout -k 10 "$MPI_TIMEOUT" "${launcher[@]}" "$bench" "$@" \
    >"$work/$name.out" 2>"$work/$name.err" </dev/null
  echo $? >"$work/$name.rc"
  sed "s/^/# $name: /" "$work/$name.err" | head -20
}
rc_is() { [ "$(cat "$work/$1.rc")" = "$2" ]; }
has() { grep -q -- "$2" "$work/$1.out"; }
no_crash() { ! grep -q "Segmentation\|signal 11\|Caught signal" "$work/$1.err"; }

# --help, --version and errors, as a user runs them (no mpirun)
bench help -- --help
expect "--help: exit 0, usage on stdout, nothing on stderr" \
  sh -c "rc=\$(cat '$work/help.rc'); [ \$rc = 0 ] && grep -q '^usage:' '$work/help.out' && [ ! -s '$work/help.err' ]"
bench version -- --version
expect "--version: exit 0, 'crux-bench-allreduce (crux) VERSION'" \
  sh -c "[ \$(cat '$work/version.rc') = 0 ] && grep -q '^crux-bench-allreduce (crux) [0-9]' '$work/version.out'"
bench nccl -- --compare crux,nccl
expect "--compare crux,nccl: exit 2, one line naming 'nccl'" \
  sh -c "[ \$(cat '$work/nccl.rc') = 2 ] && [ \$(wc -l <'$work/nccl.err') = 1 ] &&
    grep -q \"^crux-bench-allreduce: --compare: unknown component 'nccl'\" '$work/nccl.err' && [ ! -s '$work/nccl.out' ]"
bench baddtype -- -d half
expect "-d half: exit 2, the option named" \
  sh -c "[ \$(cat '$work/baddtype.rc') = 2 ] && grep -q \"^crux-bench-allreduce: -d: unknown datatype 'half'\" '$work/baddtype.err'"
bench badnp2 mpirun -np 2 -- -b 8M -e 4M
expect "[np=2] -b above -e: exit 2, said once" \
  sh -c "rc_badnp2=\$(cat '$work/badnp2.rc'); [ \$rc_badnp2 = 2 ] && [ \$(grep -c 'crux-bench-allreduce: -b 8388608 is above -e' '$work/badnp2.err') = 1 ]"

# The defaults under --mca coll crux: coll/tuned is not in the job, so the
# default comparison (crux,tuned) measures it as what crux fills Allreduce
# from, and says so; the header gives the iterations and warm-up per size.
for np in 2 3; do
  bench defaults$np mpirun -np $np --mca coll crux --
  expect "[np=$np --mca coll crux] defaults: exit 0, no crash" eval "rc_is defaults$np 0 && no_crash defaults$np"
  expect "[np=$np --mca coll crux] defaults: crux and tuned, tuned through crux's fallback, said" \
    eval "has defaults$np '^# selections: crux tuned$' &&
          has defaults$np \"^# tuned: measured as crux's fallback, the coll/tuned module\""
  expect "[np=$np --mca coll crux] defaults: 4 B to 64 MiB for both, checked, 0 wrong" \
    eval "has defaults$np '^ *67108864  *16777216  *float  *sum crux ' && has defaults$np '^ *4  *1  *float  *sum crux ' &&
          has defaults$np '^ *67108864  *16777216  *float  *sum tuned ' &&
          has defaults$np '^# Wrong elements       : 0 OK' && has defaults$np '^# Avg bus bandwidth    : [0-9.]* (tuned)'"
  expect "[np=$np --mca coll crux] defaults: the header gives iterations and warm-up" \
    eval "has defaults$np '^# iters: 1000 at 4 B to 5 at 67108864 B per sample' &&
          has defaults$np '^# warm-up: 102 to 2 per size, selection and place'"
done

# Other component sets: never a crash, what cannot run is named.
bench nocrux mpirun -np 2 --mca coll ^crux -- -b 1K -e 1K -r 1 --compare crux,tuned
expect "[np=2 --mca coll ^crux] crux skipped, tuned measured" \
  eval "rc_is nocrux 0 && no_crash nocrux && has nocrux '^# skipped crux: coll/crux is not among' &&
        has nocrux '^# selections: tuned$'"
bench notasked env -u OMPI_MCA_coll_crux_enable mpirun -np 2 --mca coll_crux_verbose 1 -- -b 1K -e 1K -r 1
expect "[np=2, crux not named, coll_crux_enable unset] the benchmark turns crux on: crux and tuned measured" \
  eval "rc_is notasked 0 && has notasked '^# selections: crux tuned$' &&
        grep -q 'taking part: coll_crux_enable is 1' '$work/notasked.err'"
bench refused env -u OMPI_MCA_coll_crux_enable mpirun -np 2 --mca coll_crux_enable 0 -- -b 1K -e 1K -r 1
expect "[np=2, coll_crux_enable 0 given] crux skipped (it would be tuned under its name), tuned measured" \
  eval "rc_is refused 0 && has refused '^# skipped crux: crux does not take part in this job' &&
        has refused '^# selections: tuned$'"
bench cruxtuned mpirun -np 2 --mca coll crux,tuned -- -b 1K -e 1K -r 1
expect "[np=2 --mca coll crux,tuned] tuned alone cannot fill a communicator: skipped, no crash" \
  eval "rc_is cruxtuned 0 && no_crash cruxtuned && has cruxtuned '^# skipped tuned: Open MPI refused the communicator'"
bench none mpirun -np 2 --mca coll ^crux,han -- -b 1K -e 1K -r 1 --compare crux,han
expect "[np=2 --mca coll ^crux,han] nothing to compare: exit 1, said" \
  eval "rc_is none 1 && no_crash none && grep -q 'none of the selections can run' '$work/none.err'"

# Every datatype and operation at odd counts (3 to 177147 elements, crux's
# own algorithms from 64 KiB up), crux's selections at 3 ranks.
for type in int8 uint8 int32 uint32 int64 uint64 float double; do
  case $type in *8) size=1 ;; *32 | float) size=4 ;; *) size=8 ;; esac
  name=check-$type
  bench $name mpirun -np 3 --mca coll crux -- -d $type -o all -b $((3 * size)) -e $((177147 * size)) \
    -f 9 -n 1 -w 0 -r 1 --compare crux,lanes,fallback
  expect "[np=3 --mca coll crux] -c 1 -d $type -o all, odd counts: 0 wrong" \
    eval "rc_is $name 0 && has $name '^# Wrong elements       : 0 OK' &&
          [ \$(awk '\$1 !~ /^#/ && \$3 == \"$type\" && \$9 == 0 && \$13 == 0' '$work/$name.out' | wc -l) = 72 ]"
done

# The default component set: crux, tuned and han side by side.
bench mix mpirun -np 3 -- -d all -o all -b 1 -e 4K -f 8 -n 1 -w 0 -r 1 --compare crux,tuned,han
expect "[np=3 default mix] crux, tuned, han, every type and op: 0 wrong" \
  eval "rc_is mix 0 && has mix '^# selections: crux tuned han$' && has mix '^# Wrong elements       : 0 OK'"
expect "[np=3 default mix] -n 1 -w 0: said in the header" \
  has mix '^# iters: 1 per sample (-n); warm-up: 0 per size, selection and place (-w)$'

# CSV: the columns bench/*.sh read first, then the rest.
bench csv mpirun -np 2 --mca coll crux -- -b 1K -e 4K -n 1 -w 0 -r 1 --compare crux,fallback --csv
expect "[np=2] --csv: header and 3 rows" \
  eval "rc_is csv 0 && has csv '^ranks,bytes,crux_us,fallback_us,crux_busbw,fallback_busbw,fallback_over_crux,count,type,redop,' &&
        [ \$(grep -c '^2,' '$work/csv.out') = 3 ]"
expect "[np=2] --csv: the skipped selections go to stderr, not into the CSV" \
  eval "rc_is csv 0 && ! grep -q '^#' '$work/csv.out'"

# Device buffers: the stand-in driver when no real one is present.
mock=$builddir/tests/mock/.libs/libmock_cuda.so
if ldconfig -p 2>/dev/null | grep -q libcuda.so.1 || [ -f "$mock" ]; then
  env_args=()
  if ! ldconfig -p 2>/dev/null | grep -q libcuda.so.1; then
    export CRUX_CUDA_LIBRARY=$mock MOCK_CUDA_DEVICES=2
    env_args=(-x CRUX_CUDA_LIBRARY -x MOCK_CUDA_DEVICES)
  fi
  bench cuda mpirun -np 2 "${env_args[@]}" -- -m cuda -d all -o sum -b 4K -e 256K -f 8 -n 1 -w 0 -r 1 \
    --compare crux,tuned,fallback
  expect "[np=2] -m cuda: crux and fallback on device buffers, 0 wrong" \
    eval "rc_is cuda 0 && has cuda '^# selections: crux fallback$' && has cuda '^# Wrong elements       : 0 OK'"
  expect "[np=2] -m cuda: tuned skipped (Open MPI here is not CUDA-aware)" \
    eval "rc_is cuda 0 && has cuda '^# skipped tuned: this Open MPI is not CUDA-aware'"
  unset CRUX_CUDA_LIBRARY MOCK_CUDA_DEVICES
else
  tap_line "ok" "# SKIP -m cuda: no CUDA driver and no stand-in (no CUDA toolkit)"
fi
CRUX_CUDA_LIBRARY=/nonexistent bench nocuda mpirun -np 2 -x CRUX_CUDA_LIBRARY -- -m cuda
expect "[np=2] -m cuda without a driver: exit 2, said once" \
  eval "rc_is nocuda 2 && [ \$(grep -c '^crux-bench-allreduce: rank 0: -m cuda: ' '$work/nocuda.err') = 1 ]"
finish
