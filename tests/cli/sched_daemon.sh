#!/bin/sh
# crux-sched daemon --once over a spool of registrations, profiles and
# deregistrations; a batch system's registrations (node names, no figures,
# the profile from the job's own directory); and the daemon running,
# replanning on a new file.
. "$(dirname "$0")/tap.sh"

cat >"$WORK/c.json" <<'JSON'
{"type": "clos2", "tors": 2, "aggs": 2, "hosts_per_tor": 4}
JSON
S=$WORK/spool
mkdir "$S"
cat >"$S/alpha.job" <<'JSON'
{"placement": ["h0", "h4"], "compute_s": 0.2, "overlap": 0.3, "allreduce_bytes": 5e8}
JSON
cat >"$S/beta.job" <<'JSON'
{"id": "beta", "placement": [{"host": "h1", "gpus": [0, 1, 2, 3]}, "h5"],
 "compute_s": 0.1, "allreduce_bytes": 2e8}
JSON
# gamma registered only by its profile: 8 + 8 ranks on h2, h6
cat >"$S/gamma.profile" <<'EOT'
crux-profile 1
job gamma
ranks 16
hosts h2:8,h6:8
window_s 30
collectives 3000
bytes 3e10
coll_s 6
gap_s 24
period_s 0.3
EOT
D="$CRUX_SCHED daemon --spool $S --cluster $WORK/c.json --out $WORK/prio"

check "--once plans the spool" exits 0 $D --once
check "three jobs listed" test "$(grep -c '^job ' "$WORK/prio")" -eq 3
check "the profile-only job is planned" grep -q '^job gamma level [0-7] .*paths ' "$WORK/prio"
touch "$S/beta.end"
check "--once after a deregistration" exits 0 $D --once
check "beta is gone from the file" sh -c "! grep -q '^job beta ' '$WORK/prio' &&
  test \$(grep -c '^job ' '$WORK/prio') -eq 2"
check "beta's files are removed" sh -c "! ls '$S' | grep -q beta"
echo '{"placement": ["h0", "nohost"], "compute_s": 1}' >"$S/bad.job"
# the daemon's lines start with the time, ISO 8601 in UTC
STAMP='[0-9]\{4\}-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]\.[0-9]\{3\}Z'
check "a bad registration: exit 2, one line naming it" sh -c "
  $D --once 2>'$WORK/err'; test \$? -eq 2 && grep -q '^$STAMP $S/bad.job:1: .*nohost' '$WORK/err'"
check "every daemon line is time-stamped" sh -c "
  test \$(grep -c . '$WORK/err') -ge 2 && ! grep -v '^$STAMP ' '$WORK/err'"
check "... in UTC, today" grep -q "^$(date -u +%Y-%m-%d)T" "$WORK/err"
check "the daemon's report is headed crux-sched daemon" sh -c "
  $D --once --report '$WORK/drep' 2>/dev/null; grep -q '^crux-sched daemon: 2 jobs' '$WORK/drep'"
check "the others are still planned" test "$(grep -c '^job ' "$WORK/prio")" -eq 2
rm "$S/bad.job"

# as a batch system registers jobs: its node names (mapped by the cluster
# file, or the host name with a domain), no figures (planned from the
# defaults until a profile comes), the profile from a directory the job's
# owner writes
cat >"$WORK/cn.json" <<'JSON'
{"type": "clos2", "tors": 2, "aggs": 2, "hosts_per_tor": 4, "node_names": {"slurm-n3": "h3"}}
JSON
B=$WORK/bspool P=$WORK/profiles
mkdir "$B" "$P"
me=$(id -u) other=$(($(id -u) + 1))
echo "{\"placement\": [\"slurm-n3\", \"h7.example.org\"], \"uid\": $other, \"name\": \"x\", \"account\": \"\", \"user\": \"u\"}" \
  >"$B/j1.job"
BD="$CRUX_SCHED daemon --spool $B --cluster $WORK/cn.json --out $WORK/bprio --profiles $P --report $WORK/brep"
w_of() { awk '$1 == "j1" { print $4 }' "$WORK/brep"; }
check "node names and a domain map to the cluster's hosts" exits 0 $BD --once
check "no figures: planned from the defaults (W = 16 GPUs x 1 s)" test "$(w_of)" = 16
sed 's/^job gamma$/job j1/; s/^hosts .*/hosts h3:8,h7:8/' "$S/gamma.profile" >"$P/j1.profile"
check "a profile the job's owner does not own: exit 2, one line naming it" sh -c "
  $BD --once 2>'$WORK/err'; test \$? -eq 2 && grep -q '^$STAMP $P/j1.profile: owned by uid $me, not by the job.s owner $other' '$WORK/err'"
check "... and the job is still planned from the defaults" test "$(w_of)" = 16
sed -i "s/\"uid\": $other/\"uid\": $me/" "$B/j1.job" # now the job is the profile's owner's
check "the owner's profile is used" sh -c "$BD --once && test \"\$(awk '\$1 == \"j1\" { print \$4 }' '$WORK/brep')\" != 16"
touch "$B/j1.end"
check "deregistration removes the profile too" sh -c "$BD --once && ! ls '$P' | grep -q j1"
printf '{"type": "clos2", "node_names": {"n1": "nohost"}}\n' >"$WORK/cbad.json"
check "a node name mapped to an unknown host: exit 2, one line" sh -c "
  $CRUX_SCHED daemon --once --spool $B --cluster $WORK/cbad.json --out $WORK/x 2>'$WORK/err'
  test \$? -eq 2 && grep -q 'node_names.*unknown host \"nohost\"' '$WORK/err'"

# --policy: crux-sim's policies, planned by the daemon
P2=$WORK/pspool
mkdir "$P2"
printf '{"type": "clos2", "tors": 2, "aggs": 2, "hosts_per_tor": 2, "gpus_per_nic": 8, "symmetric_paths": true}\n' >"$WORK/sym.json"
printf '{"placement": ["h0", "h2"], "compute_s": 1, "allreduce_bytes": 1e9}\n' >"$P2/9.job"
printf '{"placement": ["h1", "h3"], "compute_s": 3, "allreduce_bytes": 1e9}\n' >"$P2/10.job"
printf '{"placement": ["h0", "h1"], "compute_s": 1, "allreduce_bytes": 1e9}\n' >"$P2/11.job"
PD="$CRUX_SCHED daemon --spool $P2 --cluster $WORK/sym.json --out $WORK/pprio --levels 3 --once"
route_of() { sed -n "s/^job $1 .* route \([^ ]*\).*/\1/p" "$WORK/pprio"; }
level_of() { sed -n "s/^job $1 level \([0-9]*\) .*/\1/p" "$WORK/pprio"; }
check "--policy taccl: the jobs across the racks above the one inside" sh -c "
  $PD --policy taccl && test \"\$(sed -n 's/^job \([0-9]*\) level \([0-9]\).*/\1:\2/p' '$WORK/pprio' | xargs)\" = '9:2 10:2 11:1' &&
  grep -q '^# written by crux-sched daemon from $P2, policy taccl\$' '$WORK/pprio'"
r9=$(route_of 9) r10=$(route_of 10) r11=$(route_of 11)
check "taccl routes in id order (9 before 10): the two on different spines ($r9 $r10)" \
  test "${r9%%,*} ${r10%%,*}" = "h0>h2:0/2 h1>h3:1/2"
check "symmetric paths: each job's two directions on one spine" \
  test "${r9#*,} ${r10#*,}" = "h2>h0:0/2 h3>h1:1/2"
check "the job inside a rack has no route (one path)" sh -c "grep -q '^job 11 ' '$WORK/pprio' && test -z '$r11'"
$PD --policy none 2>/dev/null
check "--policy none: every job on level 0" test "$(level_of 9)$(level_of 10)$(level_of 11)" = 000
$PD --policy crux-pa 2>/dev/null
# levels by rank: in the order of the priorities, the three spread over the levels
ranked=$(awk '$1 == "job" { for (i = 5; i < NF; i += 2) if ($i == "priority") print $i + 0, $4 }' \
  "$WORK/pprio" | sort -g | awk '{ printf "%s", $2 }')
check "--policy crux-pa: levels by rank of priority ($ranked)" test "$ranked" = 012
check "--policy crux-full writes a plan" sh -c "$PD --policy crux-full && test \"\$(grep -c '^job ' '$WORK/pprio')\" = 3"
check "--policy sincronia (crux-sim's own): exit 2, the list in one line" sh -c "
  $PD --policy sincronia 2>'$WORK/err'; test \$? -eq 2 && test \$(wc -l <'$WORK/err') -eq 1 &&
  grep -q 'policy: \"sincronia\" is not one of none, taccl, crux-pa' '$WORK/err'"
check "--policy with --priorities: exit 2" sh -c "
  $PD --policy crux-full --priorities network 2>'$WORK/err'; test \$? -eq 2 &&
  grep -q 'priorities is part of --policy crux-full' '$WORK/err'"
printf '{"type": "clos2", "symmetric_paths": "yes"}\n' >"$WORK/symbad.json"
check "symmetric_paths not a boolean: exit 2, one line" sh -c "
  $CRUX_SCHED daemon --once --spool $P2 --cluster $WORK/symbad.json --out $WORK/x 2>'$WORK/err'
  test \$? -eq 2 && grep -q 'symbad.json:1: \"symmetric_paths\" must be true or false' '$WORK/err'"

# the daemon itself: a new registration is picked up; a refused file is
# named once, not at every replan, and again when it changes
echo '{"placement": ["h0", "nohost"], "compute_s": 1}' >"$S/bad.job"
$D --settle-ms 50 2>"$WORK/daemon.err" &
pid=$!
wait_for() {   # wait_for CMD: up to 20 s, a guard against hangs
  i=0
  while [ $i -lt 200 ]; do
    eval "$1" && return 0
    sleep 0.1
    i=$((i + 1))
  done
  return 1
}
check "the daemon writes the file at start" wait_for "grep -q '^job alpha ' '$WORK/prio'"
cat >"$S/.delta.tmp" <<'JSON'
{"placement": ["h3", "h7"], "compute_s": 0.5, "allreduce_bytes": 1e9}
JSON
mv "$S/.delta.tmp" "$S/delta.job"
check "the daemon replans on a new job" wait_for "grep -q '^job delta ' '$WORK/prio'"
touch "$S/alpha.end"
check "the daemon replans on a deregistration" wait_for "! grep -q '^job alpha ' '$WORK/prio'"
check "a refused file is named once over three plans or more, counted in each" wait_for "
  test \$(grep -c 'daemon: planned [0-9]* jobs (1 file rejected)' '$WORK/daemon.err') -ge 3 &&
  test \$(grep -c '$S/bad.job:1: .*nohost' '$WORK/daemon.err') -eq 1"
echo '{"placement": ["h0", "otherhost"], "compute_s": 1}' >"$S/.bad.tmp"
mv "$S/.bad.tmp" "$S/bad.job"
check "... and named again when it is refused for another reason" \
  wait_for "grep -q '$S/bad.job:1: .*otherhost' '$WORK/daemon.err'"
kill -TERM $pid
check "the daemon stops on SIGTERM with status 0" wait $pid
check "its log: started, planned, stopped, each line stamped" sh -c "
  grep -q '^$STAMP crux-sched daemon: version [0-9].*, watching $S, 8 levels (0 reserved), writing $WORK/prio\$' '$WORK/daemon.err' &&
  grep -q '^$STAMP crux-sched daemon: planned ' '$WORK/daemon.err' &&
  tail -1 '$WORK/daemon.err' | grep -q '^$STAMP crux-sched daemon: stopped by SIGTERM\$' &&
  ! grep -v '^$STAMP ' '$WORK/daemon.err'"
tap_done
