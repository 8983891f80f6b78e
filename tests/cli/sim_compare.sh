#!/bin/sh
# bench/sim_compare.sh on a tiny workload (40 jobs over half an hour, one
# two-layer Clos, random placement): the policies simulated one at a time
# and three at a time give the same files and the same table (the runs are
# independent processes); policies whose crux-sim fails make the script
# fail and are each named; several topologies and placements share one
# queue; a bad PARALLEL is refused.
. "$(dirname "$0")/tap.sh"
COMPARE=$(cd "$(dirname "$0")/../../bench" && pwd)/sim_compare.sh
BUILD=$(cd .. && pwd)

# compare PARALLEL OUT [BUILD]: the tiny comparison into OUT
compare() {
  PARALLEL=$1 JOBS=40 DAYS=0.02 TOPOLOGIES=clos2 PLACEMENTS=random SHORT= \
    bash "$COMPARE" "$2" "${3:-$BUILD}"
}

check "one policy at a time" compare 1 "$WORK/one"
check "three at a time" compare 3 "$WORK/three"
check "the same table (but for its CPU seconds)" sh -c "
  [ \"\$(cut -d, -f1-11,13- '$WORK/one/table.csv')\" = \"\$(cut -d, -f1-11,13- '$WORK/three/table.csv')\" ]"
check "a row for each of the 8 policies" sh -c "[ \$(grep -c '^clos2,random,' '$WORK/three/table.csv') -eq 8 ]"
check "the same per-policy files" sh -c "
  cd '$WORK/one/clos2-random' && [ \$(ls *-*.csv | wc -l) -eq 24 ] &&
  for f in *-*.csv; do cmp \"\$f\" '$WORK/three/clos2-random/'\"\$f\" || exit 1; done"
check "the same summary, policies in order" sh -c "
  [ \"\$(cut -d, -f1-19,23- '$WORK/one/clos2-random/summary.csv')\" = \
    \"\$(cut -d, -f1-19,23- '$WORK/three/clos2-random/summary.csv')\" ] &&
  [ \"\$(cut -d, -f1 '$WORK/three/clos2-random/summary.csv' | tr '\n' ' ')\" = \
    'policy none sincronia taccl cassini crux-pa crux-ps-pa crux-full crux-full-paper ' ]"

# Two topologies and two placements share one queue of runs: each
# directory gets its eight policies, the files its run alone gave.
check "two topologies and placements in one queue" sh -c "
  PARALLEL=3 JOBS=40 DAYS=0.02 TOPOLOGIES='clos2 double-sided' PLACEMENTS='random first-fit' SHORT= \
    bash '$COMPARE' '$WORK/four' '$BUILD' >'$WORK/four.out' 2>&1 &&
  for d in clos2-random clos2-first-fit double-sided-random double-sided-first-fit; do
    [ \$(awk -F, 'NR > 1' '$WORK/four/'\$d/summary.csv | wc -l) -eq 8 ] || exit 1
  done &&
  [ \$(awk -F, 'NR > 1' '$WORK/four/table.csv' | wc -l) -eq 32 ] &&
  cd '$WORK/one/clos2-random' && for f in *-*.csv; do cmp \"\$f\" '$WORK/four/clos2-random/'\"\$f\" || exit 1; done"

# a crux-sim that fails for TACCL* and CASSINI and runs every other policy
mkdir -p "$WORK/fake/sim"
cat >"$WORK/fake/sim/crux-sim" <<EOF
#!/bin/sh
for a in "\$@"; do case "\$a" in taccl | cassini) echo "\$a: simulated failure" >&2; exit 1 ;; esac; done
exec '$BUILD/sim/crux-sim' "\$@"
EOF
chmod +x "$WORK/fake/sim/crux-sim"
check "failing policies fail the script and are named" sh -c "
  PARALLEL=2 JOBS=40 DAYS=0.02 TOPOLOGIES=clos2 PLACEMENTS=random SHORT= \
    bash '$COMPARE' '$WORK/bad' '$WORK/fake' >'$WORK/bad.out' 2>'$WORK/bad.err'
  [ \$? -ne 0 ] && grep -q '^crux-sim failed for taccl:' '$WORK/bad.err' &&
  grep -q '^crux-sim failed for cassini:' '$WORK/bad.err' &&
  grep -q 'taccl: simulated failure' '$WORK/bad.err' && [ ! -f '$WORK/bad/table.csv' ]"
check "PARALLEL=0 refused, named" sh -c "
  PARALLEL=0 bash '$COMPARE' '$WORK/zero' '$BUILD' 2>'$WORK/zero.err'
  [ \$? -eq 1 ] && grep -q \"^PARALLEL must be 1-99, not '0'\" '$WORK/zero.err'"
tap_done
