#!/usr/bin/env bash
# Jobs obey crux-sched: a job reads its level (and the level's network
# settings) from the priority file, notices when the file changes, keeps its
# last good state when the file is malformed and goes on when it is deleted;
# two jobs on this host at different levels: the lower one waits while the
# higher one transfers, the higher one never; a killed job's entries in the
# arbitration table are reclaimed; a job's leader writes a profile that
# crux-sched daemon plans from.
. "$(dirname "$0")/mpi-common.sh"
prog=$builddir/tests/mpi/test_job
sched=$builddir/sched/crux-sched
dir=$(mktemp -d)
trap 'rm -rf "$dir" "$last_stderr"' EXIT
prio=$dir/crux.prio
arb=$dir/arb
common=(--mca coll_crux_priority_file "$prio" --mca coll_crux_arb_path "$arb"
        --mca coll_crux_priority_poll_ms 100 --mca coll_crux_verbose 1 -x CRUX_JOB_ID)

write_prio() {   # write_prio HIGH-LEVEL: jobs "high" at that level, "low" at 0
  printf 'crux-priorities 1\nlevels 8\njob high level %d sl %d tc %d\njob low level 0 sl 0 tc 0\n' \
    "$1" "$1" $(($1 * 32)) >"$prio.tmp" && mv "$prio.tmp" "$prio"
}

# 1. the level, its network settings; not listed: the default level
write_prio 7
CRUX_JOB_ID=high run_mpi 2 "level" "${common[@]}" -- $prog 1
expect_stderr "job high: level 7 of 8 (from the priority file), service level 7, traffic class 224" \
  "[level] the job took level 7 and its network settings from the file"
CRUX_JOB_ID=other run_mpi 2 "not listed" "${common[@]}" -- $prog 1
expect_stderr "job other: level 0 of 8 (default)" "[not listed] a job the file omits runs at the default level"

# 2. changed, malformed, then deleted while the job runs
write_prio 7
( sleep 1.5; write_prio 3; sleep 1.5; printf 'crux-priorities 1\nlevels x\n' >"$prio.tmp" &&
  mv "$prio.tmp" "$prio"; sleep 1.5; rm -f "$prio" ) &
CRUX_JOB_ID=high run_mpi 2 "file changes" "${common[@]}" -- $prog 6
wait
expect_stderr "job high: level 3 of 8" "[file changes] the job noticed its new level"
expect_stderr "keeping the last good priorities" "[file changes] a malformed file keeps the last good state"
[ "$(grep -c "keeping the last good priorities" "$last_stderr")" -le 2 ] &&
  tap_line ok "[file changes] ... and says so once per process" ||
  tap_line "not ok" "[file changes] ... and says so once per process"
expect_stderr "job high: level 0 of 0 (default)" "[file changes] a deleted file means the default level"

# 3. two jobs at different levels share this host
write_prio 7
CRUX_JOB_ID=high timeout 300 mpirun -np 2 "${common[@]}" $prog 4 >"$dir/high.out" 2>"$dir/high.err" </dev/null &
high=$!
CRUX_JOB_ID=low timeout 300 mpirun -np 2 "${common[@]}" $prog 4 >"$dir/low.out" 2>"$dir/low.err" </dev/null
low_rc=$?
wait $high
high_rc=$?
[ $low_rc -eq 0 ] && [ $high_rc -eq 0 ] && grep -q "^ok" "$dir/low.out" && grep -q "^ok" "$dir/high.out" &&
  tap_line ok "[two jobs] both ran correctly" || tap_line "not ok" "[two jobs] both ran correctly"
waited() { sed -n "s/.*job $1 at level [0-9]*: [0-9]* transfers, \([0-9]*\) waited.*/\1/p" "$dir/$1.err" | sort -n | tail -1; }
w_low=$(waited low) w_high=$(waited high)
[ -n "$w_low" ] && [ "$w_low" -gt 0 ] && tap_line ok "[two jobs] the lower level waited ($w_low transfers)" ||
  tap_line "not ok" "[two jobs] the lower level waited (${w_low:-no summary})"
[ "$w_high" = 0 ] && tap_line ok "[two jobs] the higher level never waited" ||
  tap_line "not ok" "[two jobs] the higher level never waited (${w_high:-no summary})"

# 4. a job killed in the middle leaves no entry behind
CRUX_JOB_ID=high timeout 300 mpirun -np 2 "${common[@]}" $prog 60 >/dev/null 2>&1 </dev/null &
killed=$!
sleep 3
pkill -9 -f "$prog 60"
wait $killed
CRUX_JOB_ID=low run_mpi 2 "after a kill" "${common[@]}" -- $prog 1
"$sched" status --arb "$arb" --json >"$dir/status.json" 2>&1 &&
  ! grep -q '"high"' "$dir/status.json" &&
  tap_line ok "[after a kill] the killed job's entries were reclaimed" ||
  tap_line "not ok" "[after a kill] the killed job's entries were reclaimed"

# 5. a refused arbitration table (here: mode 0644) leaves the job running
#    without arbitration, said once; another job's bad line costs nothing
write_prio 7
printf 'job other level 99\n' >>"$prio"
printf 'not a table' >"$dir/arb-0644" && chmod 0644 "$dir/arb-0644"
CRUX_JOB_ID=high run_mpi 2 "refused table" --mca coll_crux_priority_file "$prio" \
  --mca coll_crux_arb_path "$dir/arb-0644" --mca coll_crux_verbose 1 -x CRUX_JOB_ID -- $prog 2
expect_stderr "no intra-host arbitration table: $dir/arb-0644: mode 0644, not 0600: refused" \
  "[refused table] a table with another mode: the job runs without arbitration and says why"
expect_stderr "job high: level 7 of 8 (from the priority file)" \
  "[refused table] another job's malformed line does not cost this job its level"
expect_stderr "1 malformed line of other jobs ignored" "[refused table] ... and is said"
CRUX_JOB_ID="my job" run_mpi 2 "job id with a blank" "${common[@]}" -- $prog 1
expect_stderr "CRUX_JOB_ID has a blank at byte 3" \
  "[job id with a blank] the skipped id is named with the reason"

# 6. a job of the same user stopped (SIGSTOP) while it holds the table's
#    lock: the next job waits for it at most coll_crux_arb_max_wait_us, then
#    goes on without arbitration and says so once (a bound far above the
#    job's time: it hung until the stopped job was killed)
"$builddir/tests/unit/sched/arb_hold" "$arb" >"$dir/hold.out" 2>&1 &
holder=$!
for _ in $(seq 100); do grep -qs '^held' "$dir/hold.out" && break; sleep 0.1; done
write_prio 7
MPI_TIMEOUT=120 CRUX_JOB_ID=low run_mpi 2 "stopped holder" "${common[@]}" -- $prog 2
kill -KILL "$holder"
wait "$holder" 2>/dev/null
expect_stderr "job low: the arbitration table's lock was held past coll_crux_arb_max_wait_us (20000 us) by pid $holder, a stopped process" \
  "[stopped holder] the job went on without arbitration and said why"
[ "$(grep -c "the arbitration table's lock was held past" "$last_stderr")" -le 2 ] &&
  tap_line ok "[stopped holder] ... once per process" ||
  tap_line "not ok" "[stopped holder] ... once per process"
CRUX_JOB_ID=low run_mpi 2 "holder gone" "${common[@]}" -- $prog 1
grep -q "the arbitration table's lock was held past" "$last_stderr" &&
  tap_line "not ok" "[holder gone] arbitration is back once the holder is gone" ||
  tap_line ok "[holder gone] arbitration is back once the holder is gone"

# 7. the leader's profile, planned by crux-sched daemon
mkdir -p "$dir/spool"
printf '{"type": "explicit", "hosts": [{"name": "%s", "gpus": 8, "nics": 4}], "switches": [{"name": "t0", "layer": 0}], "links": [{"host": "%s", "switch": "t0", "gbps": 200}]}\n' \
  "$(hostname)" "$(hostname)" >"$dir/cluster.json"
CRUX_JOB_ID=profiled run_mpi 2 "profile" "${common[@]}" --mca coll_crux_profile_dir "$dir/spool" \
  --mca coll_crux_profile_interval_s 1 -- $prog 3
if [ -f "$dir/spool/profiled.profile" ] && grep -q "^period_s " "$dir/spool/profiled.profile" &&
   grep -q "^hosts $(hostname):2$" "$dir/spool/profiled.profile"; then
  tap_line ok "[profile] the leader wrote the job's profile"
else
  tap_line "not ok" "[profile] the leader wrote the job's profile"
fi
"$sched" daemon --once --spool "$dir/spool" --cluster "$dir/cluster.json" --out "$dir/planned.prio" \
  >"$dir/daemon.out" 2>&1 && grep -q "^job profiled level" "$dir/planned.prio" &&
  tap_line ok "[profile] crux-sched daemon planned the job from its profile" ||
  { tap_line "not ok" "[profile] crux-sched daemon planned the job from its profile"; cat "$dir/daemon.out" >&2; }
finish
