# Sourced by the MPI test scripts: run an MPI test program under mpirun in a
# named configuration and pass its TAP lines on, labelled, numbered by the
# automake TAP driver; 'finish' prints the plan.  The component comes from
# the build tree's stage/ directory, ahead of any installed copy.

builddir=${CRUX_BUILDDIR:?CRUX_BUILDDIR not set (run through make check)}
export OMPI_MCA_mca_base_component_path="$builddir/stage:SYS_DEFAULT"
# crux takes part in jobs that name it (--mca coll crux) or opt in: these
# tests also run it beside the other components, selected by priority
# (tests/mpi/component.sh checks the opt-in itself)
export OMPI_MCA_coll_crux_enable=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
MPI_TIMEOUT=${CRUX_MPI_TIMEOUT:-600}
tap_count=0
last_stderr=$(mktemp)
trap 'rm -f "$last_stderr"' EXIT

tap_line() {   # tap_line ok|"not ok" DESCRIPTION
  tap_count=$((tap_count + 1))
  echo "$1 - $2"
}

# run_mpi NP LABEL [MPIRUN-ARGS...] -- PROGRAM [ARGS...]
# MPI_LAUNCHER, when set, replaces "mpirun -np NP" (e.g. scripts/fakenodes).
run_mpi() {
  local np=$1 label=$2 where
  shift 2
  where=$([ -n "${MPI_LAUNCHER:-}" ] && echo "$np" || echo "np=$np")
  local mpiargs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do mpiargs+=("$1"); shift; done
  shift
  local out rc line
  local launcher=(mpirun -np "$np") separator=()
  if [ -n "${MPI_LAUNCHER:-}" ]; then
    read -r -a launcher <<<"$MPI_LAUNCHER"
    separator=(--)
  fi
  # No retry: a failed launch fails the test (scripts/fakenodes keeps its
  # daemons apart, so that launches hold on a loaded machine).
  out=$(timeout -k 10 "$MPI_TIMEOUT" "${launcher[@]}" "${mpiargs[@]}" "${separator[@]}" "$@" \
        2>"$last_stderr" </dev/null)
  rc=$?
  cat "$last_stderr" >&2
  while IFS= read -r line; do
    case $line in
      "ok - "*) tap_line ok "[$where $label] ${line#ok - }" ;;
      "not ok - "*) tap_line "not ok" "[$where $label] ${line#not ok - }" ;;
      *) [ -n "$line" ] && echo "# $line" ;;
    esac
  done <<<"$out"
  if [ $rc -ne 0 ]; then
    tap_line "not ok" "[$where $label] mpirun exited with status $rc"
  fi
  return $rc
}

# expect_stderr PATTERN DESCRIPTION: a check on the last run's stderr
expect_stderr() {
  if grep -q -- "$1" "$last_stderr"; then tap_line ok "$2"; else tap_line "not ok" "$2"; fi
}

finish() {
  echo "1..$tap_count"
}
