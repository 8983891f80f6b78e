#!/bin/sh
# crux-sched gen-jobs and plan end to end on the Lingjun cluster.
. "$(dirname "$0")/tap.sh"

lingjun_cluster "$WORK/lj.json"
check "gen-jobs writes 400 jobs" exits 0 "$CRUX_SCHED" gen-jobs --cluster "$WORK/lj.json" \
  --count 400 --seed 3 --out "$WORK/jobs.json"
check "gen-jobs is reproducible" sh -c "'$CRUX_SCHED' gen-jobs --cluster '$WORK/lj.json' \
  --count 400 --seed 3 | cmp - '$WORK/jobs.json'"
check "another seed gives another list" sh -c "! '$CRUX_SCHED' gen-jobs --cluster \
  '$WORK/lj.json' --count 400 --seed 4 | cmp -s - '$WORK/jobs.json'"
check "plan succeeds" exits 0 "$CRUX_SCHED" plan --cluster "$WORK/lj.json" \
  --jobs "$WORK/jobs.json" --out "$WORK/prio" --report "$WORK/report.txt"
check "priority file header" sh -c "head -1 '$WORK/prio' | grep -qx 'crux-priorities 1' &&
  grep -qx 'levels 8' '$WORK/prio'"
check "one line per job" test "$(grep -c '^job job-' "$WORK/prio")" -eq 400
check "levels within 0..7, network keys present" awk '
  /^job / { if ($4 < 0 || $4 > 7 || $3 != "level") bad = 1;
            if ($0 !~ / sl [0-9]+ tc [0-9]+ dscp [0-9]+/) bad = 1; n++ }
  END { exit bad || n != 400 }' "$WORK/prio"
check "multi-host jobs carry their paths" grep -q ' paths [0-9]*,[0-9]' "$WORK/prio"
check "more than one level used" test "$(awk '/^job /{print $4}' "$WORK/prio" | sort -u | wc -l)" -gt 1
check "report lists every job and the reference" sh -c "grep -c '^job-' '$WORK/report.txt' |
  grep -qx 400 && grep -q '(reference)' '$WORK/report.txt'"
check "planning is reproducible" sh -c "'$CRUX_SCHED' plan --cluster '$WORK/lj.json' \
  --jobs '$WORK/jobs.json' --out '$WORK/prio2' && cmp '$WORK/prio' '$WORK/prio2'"
check "JSON report" sh -c "'$CRUX_SCHED' plan --cluster '$WORK/lj.json' --jobs \
  '$WORK/jobs.json' --json --levels 4 --reserve 1 >'$WORK/r.json' &&
  grep -Eq '\"jobs_planned\": ?400' '$WORK/r.json' && grep -Eq '\"reserved\": ?1' '$WORK/r.json'"
check "reserved levels stay free" sh -c "'$CRUX_SCHED' plan --cluster '$WORK/lj.json' --jobs \
  '$WORK/jobs.json' --levels 4 --reserve 1 --out '$WORK/p3' &&
  ! awk '/^job /{print \$4}' '$WORK/p3' | grep -qx 3"
check "ECMP baseline paths" exits 0 "$CRUX_SCHED" plan --cluster "$WORK/lj.json" \
  --jobs "$WORK/jobs.json" --paths ecmp --out "$WORK/p4"
for type in clos2 double-sided; do
  printf '{"type": "%s"}\n' "$type" >"$WORK/$type.json"
  check "gen-jobs and plan on $type" sh -c "'$CRUX_SCHED' gen-jobs --cluster \
    '$WORK/$type.json' --count 50 --placement random >'$WORK/j-$type.json' &&
    '$CRUX_SCHED' plan --cluster '$WORK/$type.json' --jobs '$WORK/j-$type.json' \
    --out '$WORK/p-$type' && test \$(grep -c '^job ' '$WORK/p-$type') -eq 50"
done
tap_done
