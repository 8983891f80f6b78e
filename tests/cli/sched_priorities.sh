#!/bin/sh
# crux-sched plan --priorities: the paper's model against the network model
# on two rings that cross one 8 Gbps cable, each 1 s of compute then 1 s of
# transfer.  P = k I ranks them and Algorithm 1 puts them on two levels; the
# network model finds that they lose less sharing the cable than when one
# waits through the other's transfer, and puts them on one level.
. "$(dirname "$0")/sched_tap.sh"

cat >"$WORK/cable.json" <<'JSON'
{"type": "explicit",
 "hosts": [{"name": "a0", "gpus": 8, "nics": 1}, {"name": "a1", "gpus": 8, "nics": 1},
           {"name": "b0", "gpus": 8, "nics": 1}, {"name": "b1", "gpus": 8, "nics": 1}],
 "switches": [{"name": "t0", "layer": 0}, {"name": "t1", "layer": 0}],
 "links": [{"host": "a0", "switch": "t0", "gbps": 800}, {"host": "b0", "switch": "t0", "gbps": 800},
           {"host": "a1", "switch": "t1", "gbps": 800}, {"host": "b1", "switch": "t1", "gbps": 800},
           {"a": "t0", "b": "t1", "gbps": 8}]}
JSON
cat >"$WORK/jobs.json" <<'JSON'
{"jobs": [
 {"id": "a", "placement": ["a0", "a1"], "compute_s": 1, "allreduce_bytes": 533333333},
 {"id": "b", "placement": ["b0", "b1"], "compute_s": 1, "allreduce_bytes": 533333333}]}
JSON
# levels FILE: the jobs' levels in the priority file, in job order
levels() { awk '/^job /{printf "%s%s", sep, $4; sep = ","}' "$1"; }

plan() {
  "$CRUX_SCHED" plan --cluster "$WORK/cable.json" --jobs "$WORK/jobs.json" "$@"
}
check "paper priorities (the default)" exits 0 plan --out "$WORK/default"
check "--priorities paper is the default" sh -c "'$CRUX_SCHED' plan --cluster '$WORK/cable.json' \
  --jobs '$WORK/jobs.json' --priorities paper --out '$WORK/paper' && cmp '$WORK/paper' '$WORK/default'"
check "paper: two levels" test "$(levels "$WORK/paper")" = "7,6"
check "--priorities network" exits 0 plan --priorities network --out "$WORK/network"
check "network: one level, the top" test "$(levels "$WORK/network")" = "7,7"
check "an unknown model is a usage error" exits 2 plan --priorities fair
check "the message names the option and the value" sh -c \
  "grep -q -- '--priorities: \"fair\" is not one of paper, network' '$WORK/err'"
mkdir "$WORK/spool"
for j in a b; do
  printf '{"placement": ["%s0", "%s1"], "compute_s": 1, "allreduce_bytes": 533333333}\n' "$j" "$j" \
    >"$WORK/spool/$j.job"
done
check "daemon --priorities network" exits 0 "$CRUX_SCHED" daemon --spool "$WORK/spool" \
  --cluster "$WORK/cable.json" --out "$WORK/daemon" --priorities network --once
check "daemon: one level, the top" test "$(levels "$WORK/daemon")" = "7,7"
check "daemon: an unknown model is a usage error" exits 2 "$CRUX_SCHED" daemon --spool \
  "$WORK/spool" --cluster "$WORK/cable.json" --out "$WORK/daemon" --priorities fair --once
tap_done
