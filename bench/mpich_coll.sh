#!/usr/bin/env bash
# Validate crux alone against MPICH's collective tests (test/mpi/coll of an
# MPICH source tree the user provides; nothing is downloaded).
#
#   bench/mpich_coll.sh MPICH_SRC [WORKDIR]
#
# Copies MPICH_SRC/test/mpi into WORKDIR (default: a new directory under
# ${TMPDIR:-/tmp}; an existing WORKDIR is reused, already built), builds the
# coll/ programs against Open MPI (mpicc), then runs every line of
# coll/testlist, with its process count and arguments, under
# `mpirun --mca coll crux` (crux alone) and under Open MPI without crux
# (`--mca coll ^crux`, stock).  A run passes when it exits 0 and prints
# MPICH's "No Errors".  One line per test-list line:
#   PASS       passes with crux alone and with stock
#   PASS*      passes with crux alone, fails with stock
#   FAIL       fails with crux alone, passes with stock
#   BOTH-FAIL  fails both ways (the test or Open MPI, not crux): counted apart
#   NOT-BUILT  the program did not compile against Open MPI: counted apart
# then the counts and "N passed, N failed" (PASS* counted as passed); exits
# 1 on a FAIL.  Every run's output is added to WORKDIR/runs.log.  A run that
# printed "No Errors" but that Open MPI reports as "exiting improperly" (a
# known race of its runtime) is run once more.
#
# Environment: CRUX_COMPONENT_DIR is put ahead of Open MPI's component path
# (e.g. a build tree's stage/); CRUX_MPICH_LIST names a testlist of one's
# own in the same format ("icscatter 6" per line) to run instead of
# coll/testlist; CRUX_MPICH_TIMEOUT is the limit of one run in seconds
# (default 300, or the line's timeLimit=); CRUX_MPICH_JOBS is make's -j.
set -u -o pipefail

usage() { echo "usage: $0 MPICH_SRC [WORKDIR]" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || usage
src=$1
[ -f "$src/test/mpi/configure" ] && [ -f "$src/test/mpi/coll/testlist.in" ] ||
  { echo "$0: $src is not an MPICH source tree (no test/mpi/configure, coll/testlist.in)" >&2; exit 2; }
work=${2:-$(mktemp -d "${TMPDIR:-/tmp}/crux-mpich.XXXXXX")} || exit 1
timeout_s=${CRUX_MPICH_TIMEOUT:-300}
case $timeout_s in '' | *[!0-9]*) echo "$0: CRUX_MPICH_TIMEOUT must be a number of seconds" >&2; exit 2 ;; esac
list=${CRUX_MPICH_LIST:-}
[ -z "$list" ] || [ -r "$list" ] || { echo "$0: cannot read CRUX_MPICH_LIST $list" >&2; exit 2; }

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
[ -n "${CRUX_COMPONENT_DIR:-}" ] &&
  export OMPI_MCA_mca_base_component_path="$CRUX_COMPONENT_DIR:SYS_DEFAULT"

# Build.  cp -a keeps the timestamps, or make would regenerate the
# Makefile.in files with whatever automake is installed.  The helper
# library dtpools calls MPI-1 functions Open MPI still exports but hides
# from C11 compilers unless OMPI_OMIT_MPI1_COMPAT_DECLS is 0.
tests=$work/mpi
if [ ! -f "$tests/coll/Makefile" ]; then
  mkdir -p "$work" && cp -a "$src/test/mpi" "$work/" || exit 1
  echo "# configuring MPICH's test suite in $tests (log: $work/configure.log)"
  (cd "$tests" && ./configure CC=mpicc MPICC=mpicc CPPFLAGS=-DOMPI_OMIT_MPI1_COMPAT_DECLS=0 \
     --disable-fortran --disable-cxx --disable-spawn --disable-romio --disable-ft-tests \
     >"$work/configure.log" 2>&1) ||
    { echo "$0: configure failed, see $work/configure.log" >&2; exit 1; }
fi
echo "# building coll/ (log: $work/make.log)"
# -k: a program Open MPI cannot compile (MPI-4 names) is reported, not fatal
make -k -j"${CRUX_MPICH_JOBS:-1}" -C "$tests/coll" >"$work/make.log" 2>&1

# run_one SELECTION NP TIMEOUT PROGRAM ARGS... (ENV=VALUE words in ENVS):
# 0 when the run passed.  Open MPI 4.1's runtime sometimes reports a
# process that finished as "exiting improperly" (a race between its exit
# and its last message, frequent on a loaded machine): a run that printed
# "No Errors" and failed only so is run once more, and counted in RETRIED.
run_one() {
  local sel=$1 np=$2 limit=$3 out rc attempt
  shift 3
  for attempt in 1 2; do
    out=$(cd "$tests/coll" && timeout -k 10 "$limit" env "${envs[@]}" \
            mpirun -np "$np" --mca coll "$sel" "$@" 2>&1 </dev/null)
    rc=$?
    printf '%s\n' "$out" >>"$work/runs.log"
    [ $rc -eq 0 ] && grep -q '^ *No Errors *$' <<<"$out" && return 0
    [ $attempt -eq 1 ] && grep -q '^ *No Errors *$' <<<"$out" &&
      grep -q 'exiting improperly' <<<"$out" || return 1
    retried=$((retried + 1))
    echo "## (Open MPI's exit race: once more)" >>"$work/runs.log"
  done
  return 1
}

pass=0 fail=0 both=0 notbuilt=0 stockfail=0 retried=0
echo "### $(date -u '+%F %T UTC'): ${list:-coll/testlist}" >>"$work/runs.log"
while read -r name np rest; do
  case $name in '' | '#'*) continue ;; esac
  case $np in '' | *[!0-9]*) continue ;; esac
  args=() envs=() limit=$timeout_s
  for word in $rest; do
    case $word in
      arg=*) args+=("${word#arg=}") ;;
      env=*) envs+=("${word#env=}") ;;
      timeLimit=*) limit=${word#timeLimit=} ;;
    esac
  done
  what="np=$np $name${args[*]:+ ${args[*]}}"
  if [ ! -x "$tests/coll/$name" ]; then
    notbuilt=$((notbuilt + 1)); echo "NOT-BUILT: $what"
    continue
  fi
  echo "## crux: $what" >>"$work/runs.log"
  run_one crux "$np" "$limit" "./$name" "${args[@]}"; crux_rc=$?
  echo "## ^crux: $what" >>"$work/runs.log"
  run_one ^crux "$np" "$limit" "./$name" "${args[@]}"; stock_rc=$?
  case $crux_rc$stock_rc in
    00) pass=$((pass + 1)); echo "PASS: $what" ;;
    01) pass=$((pass + 1)) stockfail=$((stockfail + 1)); echo "PASS*: $what (fails with stock)" ;;
    10) fail=$((fail + 1)); echo "FAIL: $what" ;;
    *) both=$((both + 1)); echo "BOTH-FAIL: $what (fails with stock too)" ;;
  esac
done <"${list:-$tests/coll/testlist}"
echo "# outputs: $work/runs.log"
echo "$both failed with stock too, $notbuilt not built against Open MPI (not counted);" \
  "$stockfail passed with crux alone only; $retried runs retried after Open MPI's exit race"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
