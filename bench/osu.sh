#!/usr/bin/env bash
# Run an installed OSU micro-benchmarks suite with crux.
#
#   bench/osu.sh validate OSU_DIR [NP...]   every blocking and nonblocking
#       collective benchmark with -c (validation, where the benchmark has it)
#       under `mpirun --mca coll crux`, for each type the benchmark knows (-T),
#       and in place (-l) where it can.
#       A run that fails is rerun without crux (--mca coll ^crux): if it fails
#       there too, the suite's own validation is at fault and the run is
#       reported as SKIP.  Prints one line per run and "N passed, N failed";
#       exits 1 on a failure.
#   bench/osu.sh compare OSU_DIR [NP...]    osu_allreduce (float) with crux and
#       with Open MPI alone (--mca coll ^crux), side by side, with the ratio.
#
# OSU_DIR is the suite's prefix or its libexec/osu-micro-benchmarks/mpi
# directory.  NP defaults to "2 4".  CRUX_COMPONENT_DIR, when set, is put
# ahead of Open MPI's component path (e.g. a build tree's stage/ directory).
set -u -o pipefail

usage() { echo "usage: $0 validate|compare OSU_DIR [NP...]" >&2; exit 2; }
[ $# -ge 2 ] || usage
mode=$1 osu=$2
shift 2
nps=${*:-2 4}
for d in "$osu/libexec/osu-micro-benchmarks/mpi/collective" "$osu/mpi/collective" "$osu/collective" "$osu"; do
  [ -x "$d/osu_allreduce" ] && { coll=$d; break; }
done
[ -n "${coll:-}" ] || { echo "$0: no osu_allreduce under $osu" >&2; exit 2; }

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
[ -n "${CRUX_COMPONENT_DIR:-}" ] &&
  export OMPI_MCA_mca_base_component_path="$CRUX_COMPONENT_DIR:SYS_DEFAULT"

# The argument sets to validate a benchmark with, one per line, from its help
# text: each type it knows for -T (7.x: mpi_char, mpi_int, mpi_float), each
# also in place when it has -l.  Not mpi_char: OSU 7.4 computes the expected
# sums of chars without their wrap-around, so its check fails with Open MPI
# alone (see the README).
osu_variants() {
  local help types t
  help=$("$1" -h 2>&1)
  types=$(sed -n 's/.*-T, --type *\[\([^]]*\)\].*/\1/p' <<<"$help" | tr ',' ' ' |
          sed 's/\ball\b//; s/\bmpi_char\b//')
  [ -n "$types" ] || { echo "-"; return; }
  for t in $types; do
    echo "-T $t"
    grep -q -- "--in-place" <<<"$help" && echo "-T $t -l"
  done
}

# validated_run NP COLL-SELECTION BENCH ARGS...: 0 when every size passed
validated_run() {
  local np=$1 sel=$2 bench=$3 out help opts=(-i 20 -x 5)
  shift 3
  help=$("$bench" -h 2>&1)
  # osu_barrier has no data: its help lists -c among the common options, but
  # it refuses it
  case $(basename "$bench") in
    osu_barrier) ;;
    *) grep -q -- "--validation" <<<"$help" && opts+=(-c) ;;
  esac
  grep -q -- "--message-size" <<<"$help" && opts+=(-m 1:4194304)
  out=$(timeout 600 mpirun -np "$np" --mca coll "$sel" "$bench" "$@" "${opts[@]}" 2>&1 </dev/null)
  [ $? -eq 0 ] || return 1
  # benchmarks without data (barriers) print no validation column
  grep -q "Validation" <<<"$out" || return 0
  ! grep -q -i "fail" <<<"$out" && grep -q -i "pass" <<<"$out"
}

validate() {
  local pass=0 fail=0 skip=0 np bench args
  for np in $nps; do
    for bench in "$coll"/osu_*; do
      name=$(basename "$bench")
      case $name in *neighbor*) continue ;; esac   # need a process topology
      while read -r args; do
        [ "$args" = "-" ] && args=""
        if validated_run "$np" crux "$bench" $args; then
          pass=$((pass + 1)); echo "PASS: np=$np $name $args"
        elif ! validated_run "$np" ^crux "$bench" $args; then
          skip=$((skip + 1)); echo "SKIP: np=$np $name $args (fails without crux too)"
        else
          fail=$((fail + 1)); echo "FAIL: np=$np $name $args"
        fi
      done < <(osu_variants "$bench")
    done
  done
  echo "$skip skipped (the suite's validation fails with Open MPI alone)"
  echo "$pass passed, $fail failed"
  [ $fail -eq 0 ]
}

compare() {
  local np
  for np in $nps; do
    echo "# osu_allreduce -T mpi_float, $np ranks: average latency (us), crux vs Open MPI without it"
    mpirun -np "$np" --mca coll crux "$coll/osu_allreduce" -T mpi_float -m 4:67108864 >/tmp/osu-crux.$$ 2>&1
    mpirun -np "$np" --mca coll ^crux "$coll/osu_allreduce" -T mpi_float -m 4:67108864 >/tmp/osu-base.$$ 2>&1
    join <(awk '/^[0-9]/ {print $1, $2}' /tmp/osu-crux.$$) <(awk '/^[0-9]/ {print $1, $2}' /tmp/osu-base.$$) |
      awk 'BEGIN { printf "%12s %12s %12s %8s\n", "bytes", "crux", "no crux", "ratio" }
           { printf "%12d %12.2f %12.2f %7.2fx\n", $1, $2, $3, $3 / $2 }'
    rm -f /tmp/osu-crux.$$ /tmp/osu-base.$$
  done
}

case $mode in
  validate) validate ;;
  compare) compare ;;
  *) usage ;;
esac
