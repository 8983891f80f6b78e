#!/bin/sh
# crux-sched's error handling: exit 2 and one stderr line naming file and line.
. "$(dirname "$0")/tap.sh"

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
printf '{"jobs": [{"id": "x", "placement": ["h0", "h2"], "compute_s": -1}]}\n' >"$WORK/neg.json"
check "a value out of range: exit 2" exits 2 $P --jobs "$WORK/neg.json"
check "... one line naming the job once, by its id" sh -c "
  grep -q '^$WORK/neg.json:1: job x: compute_s -1 not in' '$WORK/err' && test \$(wc -l <'$WORK/err') -eq 1"
check "a cluster file given for the jobs: exit 2" exits 2 $P --jobs "$WORK/c.json"
check "... one line, naming the first unknown key" one_line_names "$WORK/c.json:1: unknown key \"type\" (expected \"jobs\")"
check "missing job file: exit 1" exits 1 $P --jobs "$WORK/none.json"
check "missing job file: named, no line number" one_line_names "$WORK/none.json: No such file"
check "missing cluster file: exit 1" exits 1 "$CRUX_SCHED" plan --cluster "$WORK/none.json" --jobs "$WORK/good.json"
check "missing cluster file: named, no line number" one_line_names "$WORK/none.json: No such file"
echo '{"type": "torus"}' >"$WORK/bad-cluster.json"
check "unknown cluster type: exit 2" exits 2 "$CRUX_SCHED" plan --cluster "$WORK/bad-cluster.json" --jobs "$WORK/good.json"
check "unknown cluster type: named" one_line_names "$WORK/bad-cluster.json:1: unknown cluster type"
printf '{"type": "lingjun", "topo_csv": "topo.csv"}\n' >"$WORK/lj.json"
printf 'ip,DSW,PSW,ASW\nh1,G1,P1,S1\nh2,G1\n' >"$WORK/topo.csv"
check "bad topo.csv: exit 2" exits 2 "$CRUX_SCHED" plan --cluster "$WORK/lj.json" --jobs "$WORK/good.json"
check "bad topo.csv: names the CSV line" one_line_names "$WORK/topo.csv:3:"
check "usage error: exit 2" exits 2 "$CRUX_SCHED" plan --jobs "$WORK/good.json"
check "... names what is missing" one_line_names "crux-sched plan: --cluster FILE is missing"
# each option error is one line naming the option and the value
opt_error() { # SUBCOMMAND-ARGS... -- EXPECTED-MESSAGE
  local want=$1
  shift
  exits 2 "$@" && one_line_names "$want"
}
G="$CRUX_SCHED gen-jobs --cluster $WORK/c.json"
D="$CRUX_SCHED daemon --spool $WORK --cluster $WORK/c.json --out $WORK/prio --once"
check "plan --levels 17" opt_error "crux-sched plan: --levels: 17 is out of range 1-16" $P --jobs "$WORK/good.json" --levels 17
check "plan --levels x" opt_error "crux-sched plan: --levels: \"x\" is not an integer" $P --jobs "$WORK/good.json" --levels x
check "plan --reserve 8" opt_error "crux-sched plan: --reserve 8 leaves no level for jobs with --levels 8" $P --jobs "$WORK/good.json" --reserve 8
check "plan --reserve 3 --levels 3" opt_error "crux-sched plan: --reserve 3 leaves no level for jobs with --levels 3" $P --jobs "$WORK/good.json" --levels 3 --reserve 3
check "plan --orders 0" opt_error "crux-sched plan: --orders: 0 is out of range 1-1000" $P --jobs "$WORK/good.json" --orders 0
check "plan --seed -1" opt_error "crux-sched plan: --seed: \"-1\" is not an integer" $P --jobs "$WORK/good.json" --seed -1
check "plan --paths shortest" opt_error "crux-sched plan: --paths: \"shortest\" is not one of crux, ecmp, random" $P --jobs "$WORK/good.json" --paths shortest
check "plan --colour" opt_error "crux-sched plan: unknown option \"--colour\"" $P --jobs "$WORK/good.json" --colour
check "plan --levels without a value" opt_error "crux-sched plan: --levels needs a value" $P --jobs "$WORK/good.json" --levels
check "plan: a stray argument" opt_error "crux-sched plan: unexpected argument \"extra\"" $P --jobs "$WORK/good.json" extra
check "daemon --levels 0" opt_error "crux-sched daemon: --levels: 0 is out of range 1-16" $D --levels 0
check "daemon --reserve 8" opt_error "crux-sched daemon: --reserve 8 leaves no level for jobs with --levels 8" $D --reserve 8
check "daemon --settle-ms 70000" opt_error "crux-sched daemon: --settle-ms: 70000 is out of range 0-60000" $D --settle-ms 70000
check "daemon --default-compute-s 0" opt_error "crux-sched daemon: --default-compute-s: 0 is out of range" $D --default-compute-s 0
check "daemon --default-bytes lots" opt_error "crux-sched daemon: --default-bytes: \"lots\" is not a number" $D --default-bytes lots
check "daemon without --out" opt_error "crux-sched daemon: --out PRIOFILE is missing" "$CRUX_SCHED" daemon --spool "$WORK" --cluster "$WORK/c.json"
check "gen-jobs --count 0" opt_error "crux-sched gen-jobs: --count: 0 is out of range 1-10000000" $G --count 0
check "gen-jobs --count 1e3" opt_error "crux-sched gen-jobs: --count: \"1e3\" is not an integer" $G --count 1e3
check "gen-jobs --placement spread" opt_error "crux-sched gen-jobs: --placement: \"spread\" is not one of packed, random" $G --count 3 --placement spread
check "gen-jobs without --count" opt_error "crux-sched gen-jobs: --count N is missing" $G
check "status --json x" opt_error "crux-sched status: unexpected argument \"x\"" "$CRUX_SCHED" status --json x
check "unwritable report: exit 1, named without a line" sh -c "
  $P --jobs '$WORK/good.json' --report '$WORK/no/dir/report' 2>'$WORK/err'; test \$? -eq 1 &&
  grep -q '^$WORK/no/dir/report: cannot write the report' '$WORK/err'"
check "--version: exit 0" exits 0 "$CRUX_SCHED" --version
check "--version names crux-sched and the version" grep -q "^crux-sched (crux) [0-9]" "$WORK/out"
check "--help on stdout" sh -c "'$CRUX_SCHED' --help 2>/dev/null | grep -q '^usage: crux-sched'"
check "unknown command: exit 2" exits 2 "$CRUX_SCHED" frobnicate
check "--help: exit 0" exits 0 "$CRUX_SCHED" --help
for cmd in plan daemon status gen-jobs; do
  check "$cmd --help: exit 0" exits 0 "$CRUX_SCHED" $cmd --help
done
check "unwritable priority file: exit 1" exits 1 $P --jobs "$WORK/good.json" --out "$WORK/no/such/dir/prio"
check "status of a missing table: exit 1" exits 1 "$CRUX_SCHED" status --arb "$WORK/arb"
check "... said in one line" one_line_names "$WORK/arb: no arbitration table"
check "status never creates the table" test ! -e "$WORK/arb"
check "status in a missing directory: exit 1" exits 1 "$CRUX_SCHED" status --arb "$WORK/nodir/arb"
check "... names the directory" one_line_names "$WORK/nodir/arb: no such directory $WORK/nodir"
check "... and creates nothing" test ! -e "$WORK/nodir"
: >"$WORK/arb0"
chmod 600 "$WORK/arb0"
check "status of an empty table file: exit 1" exits 1 "$CRUX_SCHED" status --arb "$WORK/arb0"
check "... said in one line" one_line_names "$WORK/arb0: empty, never initialised"
check "... leaves it empty (status writes nothing)" test ! -s "$WORK/arb0"
echo garbage >"$WORK/arb2"
check "status of a foreign file: exit 2" exits 2 "$CRUX_SCHED" status --arb "$WORK/arb2"
tap_done
