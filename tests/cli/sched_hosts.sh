#!/bin/sh
# Host names as jobs report them (short names, names with a domain, the
# batch system's node names) mapped onto the cluster file's hosts: a
# host_pattern, per-host aliases, node_names; and the errors for each.
. "$(dirname "$0")/tap.sh"

# clos2 hosts h0..h7 are also node001..node008
cat >"$WORK/pat.json" <<'JSON'
{"type": "clos2", "tors": 2, "aggs": 2, "hosts_per_tor": 4, "host_pattern": "node{001}"}
JSON
cat >"$WORK/jobs.json" <<'JSON'
{"jobs": [{"id": "a", "placement": ["node001", "node005.cluster.example"], "compute_s": 1,
           "allreduce_bytes": 1e9},
          {"id": "b", "placement": ["h1", "node006"], "compute_s": 1, "allreduce_bytes": 1e9}]}
JSON
P="$CRUX_SCHED plan --cluster $WORK/pat.json --json"
check "host_pattern: short names and names with a domain plan" exits 0 $P --jobs "$WORK/jobs.json"
check "... onto the pattern's hosts (node001 = h0, node005 = h4)" sh -c "
  '$CRUX_SCHED' plan --cluster '$WORK/pat.json' --jobs '$WORK/jobs.json' --out '$WORK/prio' &&
  grep -q '^job a level' '$WORK/prio' && grep -q '^job b level' '$WORK/prio'"
sed 's/node005.cluster.example/node009/' "$WORK/jobs.json" >"$WORK/jobs9.json"
check "a name past the pattern's hosts: exit 2" exits 2 $P --jobs "$WORK/jobs9.json"
check "... named with file and line" one_line_names "$WORK/jobs9.json:1: job 0: placement 1: unknown host \"node009\""

# the daemon: a profile that reports short host names
S=$WORK/spool
mkdir "$S"
cat >"$S/p1.profile" <<'EOT'
crux-profile 1
job p1
ranks 16
hosts node003:8,node007.cluster.example:8
window_s 30
collectives 3000
bytes 3e10
coll_s 6
gap_s 24
period_s 0.3
EOT
check "a profile's short host names resolve" exits 0 "$CRUX_SCHED" daemon --once --spool "$S" \
  --cluster "$WORK/pat.json" --out "$WORK/dprio" --report "$WORK/drep"
check "... and the job spans those two hosts" awk '$1 == "p1" && $3 == 2 { ok = 1 } END { exit !ok }' "$WORK/drep"

# an explicit cluster whose names carry the domain; jobs report short ones
cat >"$WORK/ex.json" <<'JSON'
{"type": "explicit",
 "hosts": [{"name": "gpu1.cluster", "aliases": ["gpu1"]}, {"name": "gpu2.cluster", "aliases": ["gpu2", "n2"]}],
 "switches": [{"name": "t0", "layer": 0}],
 "links": [{"host": "gpu1.cluster", "switch": "t0", "gbps": 200}, {"host": "gpu2.cluster", "switch": "t0", "gbps": 200}]}
JSON
printf '{"jobs": [{"id": "x", "placement": ["gpu1", "n2"], "compute_s": 1, "allreduce_bytes": 1e9}]}\n' >"$WORK/jx.json"
check "per-host aliases resolve" exits 0 "$CRUX_SCHED" plan --cluster "$WORK/ex.json" --jobs "$WORK/jx.json" --out "$WORK/xprio"
check "... the job is planned" grep -q '^job x level' "$WORK/xprio"

# errors
printf '{"type": "clos2", "host_pattern": "node001"}\n' >"$WORK/p1.json"
check "a pattern without {DIGITS}: exit 2" exits 2 "$CRUX_SCHED" plan --cluster "$WORK/p1.json" --jobs "$WORK/jx.json"
check "... named" one_line_names "$WORK/p1.json:1: \"host_pattern\" must hold one {DIGITS} group"
printf '{"type": "clos2", "host_pattern": "h{0}"}\n' >"$WORK/p2.json"
check "a pattern that gives an existing name: exit 2" exits 2 "$CRUX_SCHED" plan --cluster "$WORK/p2.json" --jobs "$WORK/jx.json"
check "... named" one_line_names "$WORK/p2.json:1: \"host_pattern\": \"h0\" (host 0)"
sed 's/"aliases": \["gpu2", "n2"\]/"aliases": ["gpu2", "gpu1"]/' "$WORK/ex.json" >"$WORK/ex2.json"
check "an alias two hosts claim: exit 2" exits 2 "$CRUX_SCHED" plan --cluster "$WORK/ex2.json" --jobs "$WORK/jx.json"
check "... named with the host's line" one_line_names "$WORK/ex2.json:2: host 1: alias 1"
tap_done
