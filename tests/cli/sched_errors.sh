#!/bin/sh
# crux-sched's error handling: exit 2 and one stderr line naming file and line.
. "$(dirname "$0")/sched_tap.sh"

cat >"$WORK/c.json" <<'JSON'
{"type": "clos2", "tors": 2, "aggs": 2, "hosts_per_tor": 2}
JSON
printf '{"jobs": [\n  {"id": "a", "placement": ["h0", "h2"], "compute_s": 1},\n  {"id": "b" "placement": []}\n]}\n' >"$WORK/broken.json"
cat >"$WORK/unknown.json" <<'JSON'
{"jobs": [
  {"id": "a", "placement": ["h0", "h2"], "compute_s": 1, "allreduce_bytes": 1e9},
  {"id": "b", "placement": ["h1", "h9"], "compute_s": 1, "allreduce_bytes": 1e9}
]}
JSON
cat >"$WORK/good.json" <<'JSON'
{"jobs": [{"id": "a", "placement": ["h0", "h2"], "compute_s": 1, "allreduce_bytes": 1e9}]}
JSON
P="$CRUX_SCHED plan --cluster $WORK/c.json"

check "malformed JSON: exit 2" exits 2 $P --jobs "$WORK/broken.json"
check "malformed JSON: names file and line 3" one_line_names "$WORK/broken.json:3: malformed JSON"
check "unknown host: exit 2" exits 2 $P --jobs "$WORK/unknown.json"
check "unknown host: names file, line 3 and the host" sh -c "
  grep -q '^$WORK/unknown.json:3: job 1: placement 1: unknown host \"h9\"' '$WORK/err' &&
  test \$(wc -l <'$WORK/err') -eq 1"
sed 's/"compute_s": 1,/"compute_s": 1, "colour": "red",/' "$WORK/good.json" >"$WORK/key.json"
check "unknown job key: exit 2" exits 2 $P --jobs "$WORK/key.json"
check "unknown job key: named" one_line_names "$WORK/key.json:1: job 0: unknown key \"colour\""
check "missing job file: exit 2" exits 2 $P --jobs "$WORK/none.json"
check "missing job file: named" one_line_names "$WORK/none.json:0:"
echo '{"type": "torus"}' >"$WORK/bad-cluster.json"
check "unknown cluster type: exit 2" exits 2 "$CRUX_SCHED" plan --cluster "$WORK/bad-cluster.json" --jobs "$WORK/good.json"
check "unknown cluster type: named" one_line_names "$WORK/bad-cluster.json:1: unknown cluster type"
printf '{"type": "lingjun", "topo_csv": "topo.csv"}\n' >"$WORK/lj.json"
printf 'ip,DSW,PSW,ASW\nh1,G1,P1,S1\nh2,G1\n' >"$WORK/topo.csv"
check "bad topo.csv: exit 2" exits 2 "$CRUX_SCHED" plan --cluster "$WORK/lj.json" --jobs "$WORK/good.json"
check "bad topo.csv: names the CSV line" one_line_names "$WORK/topo.csv:3:"
check "usage error: exit 2" exits 2 "$CRUX_SCHED" plan --jobs "$WORK/good.json"
check "bad --levels: exit 2" exits 2 $P --jobs "$WORK/good.json" --levels 99
check "unknown command: exit 2" exits 2 "$CRUX_SCHED" frobnicate
check "--help: exit 0" exits 0 "$CRUX_SCHED" --help
for cmd in plan daemon status gen-jobs; do
  check "$cmd --help: exit 0" exits 0 "$CRUX_SCHED" $cmd --help
done
check "unwritable priority file: exit 1" exits 1 $P --jobs "$WORK/good.json" --out "$WORK/no/such/dir/prio"
check "status of a missing table: exit 1" exits 1 "$CRUX_SCHED" status --arb "$WORK/arb"
check "... said in one line" one_line_names "$WORK/arb: no arbitration table"
check "status never creates the table" test ! -e "$WORK/arb"
echo garbage >"$WORK/arb2"
check "status of a foreign file: exit 2" exits 2 "$CRUX_SCHED" status --arb "$WORK/arb2"
tap_done
