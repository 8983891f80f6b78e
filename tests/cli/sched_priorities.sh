#!/bin/sh
# crux-sched plan --priorities: the paper's model against the network model.
# A ring across 4 ToRs (4 s of compute that hides 1.2 s, 1 s on each ToR
# uplink) and a small exposed job on each of its hops (1 s of compute, 1 s
# of transfer).  P = k I ranks the ring lowest: each two-job comparison
# says it loses little.  Below all four it is free only when none of them
# transfers; the network model puts it on top.
. "$(dirname "$0")/tap.sh"

printf '%s\n' '{"type": "clos2", "tors": 4, "aggs": 1, "hosts_per_tor": 4, "gpus_per_host": 8,' \
  ' "gpus_per_nic": 8, "uplink_gbps": 8, "nic_gbps": 80}' >"$WORK/cluster.json"
mkdir "$WORK/spool"
printf '{"id": "wide", "placement": ["h0", "h4", "h8", "h12"], "compute_s": 4, "overlap": 0.3, %s}\n' \
  '"allreduce_bytes": 516129032' >"$WORK/spool/wide.job"
for k in 0 1 2 3; do
  a=h$((4 * k + 1)) b=h$(((4 * k + 5) % 16))
  printf '{"id": "s%d", "placement": ["%s", "%s"], "compute_s": 1, "work": 40, %s%s%s}\n' \
    "$k" "$a" "$b" '"flows": [{"src": "' "$a\", \"src_nic\": 0, \"dst\": \"$b" \
    '", "dst_nic": 0, "bytes": 1e9}]' >"$WORK/spool/s$k.job"
done
{ printf '{"jobs": [\n'; cat "$WORK/spool/wide.job"; for k in 0 1 2 3; do printf ','; cat "$WORK/spool/s$k.job"; done
  printf ']}\n'; } >"$WORK/jobs.json"

# wide_is TOP|BOTTOM FILE: the ring's level is above (below) every other job's
wide_is() {
  awk -v want="$1" '/^job / { if ($2 == "wide") w = $4; else { if ($4 > hi || n == 0) hi = $4;
      if ($4 < lo || n == 0) lo = $4; n++ } }
    END { exit !(n == 4 && (want == "top" ? w > hi : w < lo)) }' "$2" || { cat "$2"; return 1; }
}

plan() {
  "$CRUX_SCHED" plan --cluster "$WORK/cluster.json" --jobs "$WORK/jobs.json" "$@"
}
check "paper priorities (the default)" exits 0 plan --out "$WORK/default"
check "--priorities paper is the default" sh -c "'$CRUX_SCHED' plan --cluster '$WORK/cluster.json' \
  --jobs '$WORK/jobs.json' --priorities paper --out '$WORK/paper' && cmp '$WORK/paper' '$WORK/default'"
check "paper: the ring below every small job" wide_is bottom "$WORK/paper"
check "--priorities network" exits 0 plan --priorities network --out "$WORK/network"
check "network: the ring above every small job" wide_is top "$WORK/network"
check "an unknown model is a usage error" exits 2 plan --priorities fair
check "the message names the option and the value" sh -c \
  "grep -q -- '--priorities: \"fair\" is not one of paper, network' '$WORK/err'"
check "daemon --priorities network" exits 0 "$CRUX_SCHED" daemon --spool "$WORK/spool" \
  --cluster "$WORK/cluster.json" --out "$WORK/daemon" --priorities network --once
check "daemon: the ring above every small job" wide_is top "$WORK/daemon"
check "daemon: an unknown model is a usage error" exits 2 "$CRUX_SCHED" daemon --spool \
  "$WORK/spool" --cluster "$WORK/cluster.json" --out "$WORK/daemon" --priorities fair --once
tap_done
