#!/bin/sh
# crux-sched plan for any number of jobs against the cluster's links (more
# jobs than links overflowed the contention DAG), and the bounds on what a
# job list may say: numbers that would make intensities infinite, ids too
# long for the priority file, integers json-c saturates.
. "$(dirname "$0")/tap.sh"

printf '{"type": "clos2", "tors": 2, "hosts_per_tor": 8}\n' >"$WORK/small.json"
printf '{"type": "clos2", "tors": 16, "aggs": 8, "hosts_per_tor": 32}\n' >"$WORK/large.json"

# plan_n CLUSTER N [PLAN-ARGS...]: gen-jobs N jobs, plan them, one line each
plan_n() {
  c=$1 n=$2
  shift 2
  "$CRUX_SCHED" gen-jobs --cluster "$WORK/$c.json" --count "$n" --seed 7 \
    --out "$WORK/j.json" 2>/dev/null &&
    "$CRUX_SCHED" plan --cluster "$WORK/$c.json" --jobs "$WORK/j.json" --out "$WORK/p" "$@" &&
    test "$(grep -c '^job ' "$WORK/p")" -eq "$n" &&
    ! grep -Eqi 'inf|nan' "$WORK/p"
}
for n in 1 2 17 200 2000; do
  check "small cluster (16 hosts): $n jobs planned" plan_n small "$n"
done
# the compression is quadratic in the jobs that share links: one order
check "small cluster (16 hosts): 20000 jobs planned" plan_n small 20000 --orders 1
for n in 1 200 20000; do
  check "large cluster (512 hosts): $n jobs planned" plan_n large "$n"
done

# bad JOB: the job list with that one job is refused (exit 2) with WHY
bad() {
  why=$1
  printf '{"jobs": [%s]}\n' "$2" >"$WORK/bad.json"
  exits 2 "$CRUX_SCHED" plan --cluster "$WORK/small.json" --jobs "$WORK/bad.json" \
    --out "$WORK/pbad" || return 1
  grep -q "^$WORK/bad.json:1: job [^:]*: .*$why" "$WORK/err" || { cat "$WORK/err"; return 1; }
  test ! -e "$WORK/pbad"
}
J='"placement": ["h0", "h1"]'
check "work 1e308 refused, no intensity inf" bad "work 1e+308 not finite or above 1e+30" \
  "{\"id\": \"a\", $J, \"compute_s\": 0.1, \"work\": 1e308, \"allreduce_bytes\": 1e9}"
check "compute_s 1e-300 refused" bad "compute_s 1e-300 not in" \
  "{\"id\": \"a\", $J, \"compute_s\": 1e-300}"
check "allreduce_bytes 1e300 refused" bad "allreduce_bytes 1e+300" \
  "{\"id\": \"a\", $J, \"compute_s\": 0.1, \"allreduce_bytes\": 1e300}"
check "flow bytes 1e-300 refused" bad "bytes in \[1, 1e+18\]" \
  "{\"id\": \"a\", $J, \"compute_s\": 0.1, \"flows\": [{\"src\": \"h0\", \"src_nic\": 0,
    \"dst\": \"h1\", \"dst_nic\": 0, \"bytes\": 1e-300}]}"
check "integer id 2^64-1 refused, not saturated" bad "integer job id out of range" \
  "{\"id\": 18446744073709551615, $J, \"compute_s\": 0.1}"
check "integer id beyond 2^64 refused" bad "id" \
  "{\"id\": 99999999999999999999999, $J, \"compute_s\": 0.1}"
long=$(head -c 10485760 /dev/zero | tr '\0' x)
check "10 MB job id refused, not cut" bad "job id of 10485760 bytes, longer than 255" \
  "{\"id\": \"$long\", $J, \"compute_s\": 0.1}"
unset long
printf '{"jobs": [{"id": "%s", "placement": ["h0"], "compute_s": 0.1}]}\n' \
  "$(head -c 255 /dev/zero | tr '\0' y)" >"$WORK/ok.json"
check "a 255-byte id is fine" sh -c "'$CRUX_SCHED' plan --cluster '$WORK/small.json' \
  --jobs '$WORK/ok.json' --out '$WORK/pok' && grep -q '^job y\{255\} level' '$WORK/pok'"
printf '{"type": "explicit", "hosts": [{"name": "%s", "gpus": 8}], "switches": [], "links": []}\n' \
  "$(head -c 300 /dev/zero | tr '\0' h)" >"$WORK/longhost.json"
check "a 300-byte host name refused" sh -c "! '$CRUX_SCHED' plan --cluster '$WORK/longhost.json' \
  --jobs '$WORK/ok.json' 2>'$WORK/e' && grep -q 'name of 300 bytes, longer than 255' '$WORK/e'"
tap_done
