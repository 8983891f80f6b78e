#!/usr/bin/env bash
# Run the OSU micro-benchmarks (an installed suite or its build tree) with crux.
#
#   bench/osu.sh validate OSU_DIR [NP...]   every blocking and nonblocking
#       collective benchmark with -c (validation, where the benchmark has it)
#       under `mpirun --mca coll crux`, for each type the benchmark knows (-T),
#       and in place (-l) where it can.
#       A run that fails is rerun without crux (--mca coll ^crux): if it fails
#       there too, the suite's own validation is at fault and the run is
#       reported as SKIP.  Prints one line per run and "N passed, N failed";
#       exits 1 on a failure.
#   bench/osu.sh compare [-k LAUNCHES] [-s SELECTIONS] [-m MIN:MAX] [-o CSV] OSU_DIR [NP...]
#       osu_allreduce (float) under each selection (default crux,tuned) in
#       turn, each a job of its own, the first to run rotating, in LAUNCHES
#       rounds (default 1); per message size the median over the rounds of
#       OSU's average latency under each, and of each ratio other / first with
#       its range [min - max] over the rounds (above 1: the first is
#       faster).  Sizes MIN to MAX bytes (default 8:67108864).  Selections:
#       crux (--mca coll crux), tuned (--mca coll ^crux: Open MPI's default),
#       han, adapt, sm
#       (that component's priority raised to 100, without crux; it then takes
#       every slot it has, the barrier OSU times around included for sm).
#       2 ranks are bound to a core each; more run unbound, oversubscribed.
#       -o CSV also writes every launch's times there
#       (ranks,launch,selection,bytes,us,rtt_ns).  With CRUX_RTT naming
#       crux-bench-rtt, each job is preceded by it and rtt_ns is the cache-line
#       round trip between CPUs 0 and 1 it measured ("-" without): a VM's vCPUs
#       move between near and far states that change the times.
#
# OSU_DIR is the suite's prefix, its libexec/osu-micro-benchmarks/mpi
# directory, or its build tree (7.x: c/mpi/collective/blocking and
# non_blocking).  NP defaults to "2 4".  CRUX_COMPONENT_DIR, when set, is put
# ahead of Open MPI's component path (e.g. a build tree's stage/ directory).
set -u -o pipefail

usage() {
  echo "usage: $0 validate OSU_DIR [NP...]" >&2
  echo "       $0 compare [-k LAUNCHES] [-s SELECTIONS] [-m MIN:MAX] [-o CSV] OSU_DIR [NP...]" >&2
  exit 2
}
bad() { echo "$0: $*" >&2; exit 2; }
[ $# -ge 1 ] || usage
mode=$1
shift
launches=1 selections=crux,tuned sizes=8:67108864 csv=
if [ "$mode" = compare ]; then
  while getopts k:s:m:o: opt; do
    case $opt in
      k) launches=$OPTARG ;;
      s) selections=$OPTARG ;;
      m) sizes=$OPTARG ;;
      o) csv=$OPTARG ;;
      *) usage ;;
    esac
  done
  shift $((OPTIND - 1))
  [[ $launches =~ ^[1-9][0-9]{0,2}$ ]] || bad "-k: '$launches' is not a launch count from 1 to 999"
  [[ $sizes =~ ^[1-9][0-9]{0,10}:[1-9][0-9]{0,10}$ ]] && [ "${sizes%%:*}" -le "${sizes##*:}" ] ||
    bad "-m: '$sizes' is not MIN:MAX bytes with MIN <= MAX"
  IFS=, read -r -a sels <<<"$selections"
  [ ${#sels[@]} -ge 1 ] && [ ${#sels[@]} -le 8 ] || bad "-s: '$selections' is not 1 to 8 selections"
  for s in "${sels[@]}"; do
    case $s in crux | tuned | han | adapt | sm) ;; *) bad "-s: unknown selection '$s' (crux, tuned, han, adapt, sm)" ;; esac
  done
fi
[ $# -ge 1 ] || usage
osu=$1
shift
nps=${*:-2 4}
for np in $nps; do
  [[ $np =~ ^[1-9][0-9]{0,3}$ ]] && [ "$np" -ge 2 ] || bad "NP: '$np' is not a rank count of 2 or more"
done
for d in "$osu/libexec/osu-micro-benchmarks/mpi/collective" "$osu/mpi/collective" "$osu/collective" \
  "$osu/c/mpi/collective/blocking" "$osu/blocking" "$osu"; do
  [ -x "$d/osu_allreduce" ] && { coll=$d; break; }
done
[ -n "${coll:-}" ] || { echo "$0: no osu_allreduce under $osu" >&2; exit 2; }
# a 7.x build tree keeps the nonblocking benchmarks beside the blocking ones
colls=("$coll")
[ "$(basename "$coll")" = blocking ] && [ -d "$coll/../non_blocking" ] && colls+=("$coll/../non_blocking")

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
    for bench in $(for d in "${colls[@]}"; do ls -d "$d"/osu_*; done); do
      name=$(basename "$bench")
      # a build tree holds the sources and objects beside the programs
      case $name in *.*) continue ;; esac
      [ -f "$bench" ] && [ -x "$bench" ] || continue
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

# sel_args SELECTION: the mpirun options that select it
sel_args() {
  case $1 in
    crux) echo "--mca coll crux" ;;
    tuned) echo "--mca coll ^crux" ;;
    *) echo "--mca coll ^crux --mca coll_$1_priority 100" ;;
  esac
}

compare() {
  local np i j n sel bind rtt
  out=$(mktemp -d "${TMPDIR:-/tmp}/crux-osu-XXXXXX") || exit 1
  trap 'rm -rf "$out"' EXIT
  n=${#sels[@]}
  [ -z "$csv" ] || echo "ranks,launch,selection,bytes,us,rtt_ns" >"$csv" || exit 1
  for np in $nps; do
    bind=(--bind-to core)
    [ "$np" -gt 2 ] && bind=(--bind-to none --oversubscribe)
    : >"$out/all"
    for i in $(seq "$launches"); do
      # the selection that runs first rotates from launch to launch
      for j in $(seq 0 $((n - 1))); do
        sel=${sels[$(((i - 1 + j) % n))]}
        rtt=-
        [ -z "${CRUX_RTT:-}" ] || rtt=$("$CRUX_RTT" | awk '$1 == "rtt_ns" { print $2 }')
        # shellcheck disable=SC2046
        if ! timeout 1200 mpirun -np "$np" "${bind[@]}" $(sel_args "$sel") "$coll/osu_allreduce" \
          -T mpi_float -m "$sizes" >"$out/run" 2>&1 </dev/null; then
          echo "$0: launch $i, $sel, $np ranks failed:" >&2
          tail -5 "$out/run" >&2
          exit 1
        fi
        awk -v l="$i" -v s="$sel" -v r="${rtt:--}" '/^[0-9]/ && NF >= 2 { print l, s, $1, $2, r; rows++ }
          END { exit rows == 0 }' "$out/run" >>"$out/all" ||
          { echo "$0: launch $i, $sel, $np ranks: no latency rows" >&2; tail -5 "$out/run" >&2; exit 1; }
      done
    done
    [ -z "$csv" ] || awk -v np="$np" -v OFS=, '{ print np, $1, $2, $3, $4, $5 }' "$out/all" >>"$csv"
    echo "# osu_allreduce -T mpi_float, $np ranks$([ "$np" -gt 2 ] && echo " unbound, oversubscribed" ||
      echo " bound to a core each"), $launches launches: median over launches of OSU's average latency (us)"
    echo "# per size; ratio = other / ${sels[0]} (above 1: ${sels[0]} is faster), [min - max] over launches"
    awk -v sels="$selections" '
    function median(list,    v, n, i, j, t) {
      n = split(list, v, " ")
      for (i = 2; i <= n; i++)        # insertion sort: a handful of launches
        for (j = i; j > 1 && v[j] + 0 < v[j - 1] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
      lo = v[1]; hi = v[n]
      return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    { t[$1, $2, $3] = $4; launch[$1] = 1; if (!($3 in seen)) { seen[$3] = 1; order[++sizes] = $3 } }
    END {
      k = split(sels, s, ",")
      printf "%12s", "bytes"
      for (c = 1; c <= k; c++) printf "%12s", s[c] "_us"
      for (c = 2; c <= k; c++) printf "%29s", s[c] "/" s[1]
      printf "\n"
      for (z = 1; z <= sizes; z++) {
        b = order[z]; printf "%12d", b
        for (c = 1; c <= k; c++) {
          list = ""
          for (l in launch) if ((l, s[c], b) in t) list = list " " t[l, s[c], b]
          m = median(list); printf (m < 10 ? "%12.2f" : "%12.1f"), m
        }
        for (c = 2; c <= k; c++) {
          list = ""
          for (l in launch) if ((l, s[c], b) in t && (l, s[1], b) in t && t[l, s[1], b] > 0)
            list = list " " t[l, s[c], b] / t[l, s[1], b]
          m = median(list); printf "%10.2fx %17s", m, sprintf("[%.2f - %.2f]", lo, hi)
        }
        printf "\n"
      }
    }' "$out/all"
  done
}

case $mode in
  validate) validate ;;
  compare) compare ;;
  *) usage ;;
esac
