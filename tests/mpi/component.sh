#!/usr/bin/env bash
# The component's conduct in a job: it takes part only when asked (the coll
# selection names crux, or coll_crux_enable 1), verbosity 1 names the file
# loaded and crux's version once per process, verbosity 2 says each choice
# once per communicator and algorithm however many sizes run, and a job
# shorter than coll_crux_profile_interval_s still leaves its profile.
. "$(dirname "$0")/mpi-common.sh"
prog=$builddir/tests/mpi/test_allreduce
dir=$(mktemp -d)
trap 'rm -rf "$dir" "$last_stderr"' EXIT
np=2

# expect_no_stderr PATTERN DESCRIPTION: the last run's stderr lacks PATTERN
expect_no_stderr() {
  if grep -q -- "$1" "$last_stderr"; then tap_line "not ok" "$2"; else tap_line ok "$2"; fi
}
# expect_count N PATTERN DESCRIPTION: N lines of the last run's stderr match
expect_count() {
  local n
  n=$(grep -c -- "$2" "$last_stderr")
  if [ "$n" -eq "$1" ]; then tap_line ok "$3"; else tap_line "not ok" "$3 ($n lines, not $1)"; fi
}

# 1. Opt-in.  mpi-common.sh opts every other test in; here nothing does.
unset OMPI_MCA_coll_crux_enable
v2=(--mca coll_crux_verbose 2)
run_mpi $np "no opt-in" "${v2[@]}" -- $prog counts
expect_count $np "coll:crux: not taking part: the coll selection (none) does not name crux" \
  "[no opt-in] each process says crux does not take part"
expect_no_stderr "allreduce on" "[no opt-in] crux took no Allreduce"
run_mpi $np "exclusions" --mca coll ^han "${v2[@]}" -- $prog counts
expect_stderr 'not taking part: the coll selection "^han" does not name crux' \
  "[coll ^han] a list of exclusions does not opt in"
expect_no_stderr "allreduce on" "[coll ^han] crux took no Allreduce"
run_mpi $np "crux alone" --mca coll crux "${v2[@]}" -- $prog counts
expect_count $np 'coll:crux: taking part: the coll selection "crux" names crux' \
  "[coll crux] named alone, crux takes part"
expect_stderr "allreduce on MPI_COMM_WORLD" "[coll crux] crux took the Allreduce"
run_mpi $np "crux in a list" --mca coll self,basic,crux,libnbc,tuned "${v2[@]}" -- $prog counts
expect_stderr 'taking part: the coll selection "self,basic,crux,libnbc,tuned" names crux' \
  "[coll self,basic,crux,...] named in a list, crux takes part"
expect_stderr "allreduce on MPI_COMM_WORLD" "[coll self,basic,crux,...] crux took the Allreduce"
run_mpi $np "enable" --mca coll_crux_enable 1 "${v2[@]}" -- $prog counts
expect_count $np "coll:crux: taking part: coll_crux_enable is 1" "[coll_crux_enable 1] crux takes part"
expect_stderr "allreduce on MPI_COMM_WORLD" "[coll_crux_enable 1] crux took the Allreduce"
export OMPI_MCA_coll_crux_enable=1

# 2. Verbosity 1: the file and the version, once per process.
version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$builddir/config.h")
run_mpi $np "verbose 1" --mca coll crux --mca coll_crux_verbose 1 -- $prog counts
expect_count $np "coll:crux: loaded $builddir/stage/mca_coll_crux.so, crux $version\$" \
  "[verbose 1] each process names the loaded file and crux $version once"
expect_no_stderr "allreduce on" "[verbose 1] no algorithm choices at verbosity 1"

# 3. Verbosity 2: sizes from 4 bytes to 16 MiB on MPI_COMM_WORLD, one line
# per process and algorithm (forced: one algorithm; auto: each it chose).
for alg in flat auto; do
  run_mpi $np "verbose 2, $alg" --mca coll crux "${v2[@]}" --mca coll_crux_allreduce_algorithm $alg -- \
    $prog counts
  algs=$(sed -n 's/.*coll:crux: allreduce on MPI_COMM_WORLD: \([a-z-]*\) from .*/\1/p' "$last_stderr" | sort -u)
  if [ -z "$algs" ]; then
    tap_line "not ok" "[verbose 2, $alg] some algorithm was said"
  fi
  for a in $algs; do
    expect_count $np "coll:crux: allreduce on MPI_COMM_WORLD: $a from" \
      "[verbose 2, $alg] $a said once per process over 17 sizes"
  done
done

# 4. A job far shorter than the profile interval: the profile is written
# when crux closes, in MPI_Finalize.
CRUX_JOB_ID=short run_mpi $np "final profile" -x CRUX_JOB_ID --mca coll crux \
  --mca coll_crux_profile_dir "$dir" --mca coll_crux_profile_interval_s 3600 -- $prog counts
profile=$dir/short.profile
if [ -f "$profile" ] && grep -q "^ranks $np$" "$profile" && grep -q "^hosts $(hostname):$np$" "$profile" &&
   grep -Eq "^collectives [1-9][0-9]*$" "$profile"; then
  tap_line ok "[final profile] a job shorter than the interval wrote its profile"
else
  tap_line "not ok" "[final profile] a job shorter than the interval wrote its profile"
  cat "$profile" >&2 2>/dev/null
fi
finish
