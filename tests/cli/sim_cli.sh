#!/bin/sh
# crux-sim end to end on a small cluster: gen, run under every policy,
# output files, reproducibility, and errors (exit 2, one line naming the
# file and line; exit 1 for an unwritable output).
. "$(dirname "$0")/tap.sh"
SIM=${CRUX_SIM:-../sim/crux-sim}

cat >"$WORK/c.json" <<'JSON'
{"type": "clos2", "tors": 4, "aggs": 2, "hosts_per_tor": 4, "uplink_gbps": 400}
JSON
C="--cluster $WORK/c.json"

check "--help: exit 0" exits 0 "$SIM" --help
for cmd in run gen models; do
  check "$cmd --help: exit 0" exits 0 "$SIM" $cmd --help
done
check "models lists 11 models" sh -c "test \$('$SIM' models | tail -n +2 | wc -l) -eq 11"
# crux-sim gen and crux-sched gen-jobs draw from one model mix: each model
# with the same Allreduce bytes and overlap in both, all eleven in both
"$SIM" gen $C --jobs 400 --days 0.02 --seed 5 | grep -v '^#' |
  awk -F, 'NR > 1 { printf "%s %.0f %.2f\n", $3, $7, $6 }' | sort -u >"$WORK/mix-sim"
"$CRUX_SCHED" gen-jobs $C --count 400 --seed 5 2>/dev/null |
  sed -n 's/.*"model": "\([^"]*\)".*"overlap": \([0-9.]*\), "allreduce_bytes": \([0-9]*\).*/\1 \3 \2/p' |
  awk '{ printf "%s %.0f %.2f\n", $1, $2, $3 }' | sort -u >"$WORK/mix-sched"
check "gen and gen-jobs: the same models, bytes and overlaps" cmp "$WORK/mix-sim" "$WORK/mix-sched"
check "... all eleven models" test "$(wc -l <"$WORK/mix-sim")" -eq 11
check "... bert-large Allreduces fp32 gradients (335M x 4 B)" grep -qx "bert-large 1340000000 0.50" "$WORK/mix-sched"
check "gen writes a workload" "$SIM" gen $C --jobs 40 --days 0.02 --seed 5 --out "$WORK/w.csv"
check "gen: header and 40 jobs" sh -c "
  grep -q '^id,arrival_s,model,gpus,compute_s,overlap,bytes,work,iterations,duration_s,level,placement\$' '$WORK/w.csv' &&
  test \$(grep -vc '^#' '$WORK/w.csv') -eq 41"
check "gen is reproducible" sh -c "
  '$SIM' gen $C --jobs 40 --days 0.02 --seed 5 | cmp -s - '$WORK/w.csv'"
check "run all policies" "$SIM" run $C --workload "$WORK/w.csv" --policy all --placement random \
  --check --out "$WORK/res"
check "summary: 8 policies" sh -c "test \$(wc -l <'$WORK/res/summary.csv') -eq 9"
for p in none sincronia taccl cassini crux-pa crux-ps-pa crux-full crux-full-paper; do
  check "$p: jobs, util and links files" sh -c "
    test \$(wc -l <'$WORK/res/jobs-$p.csv') -eq 41 && test -s '$WORK/res/util-$p.csv' &&
    test -s '$WORK/res/links-$p.csv'"
done
check "every job done, sent = delivered" awk -F, 'NR > 1 && ($4 != 40 || $14 != $15) { bad = 1 }
  END { exit bad }' "$WORK/res/summary.csv"
# the same run again: identical results (the timing columns aside)
"$SIM" run $C --workload "$WORK/w.csv" --policy all --placement random --out "$WORK/again" \
  --quiet >/dev/null 2>&1
check "a fixed seed reproduces the run" sh -c "
  cut -d, -f1-19 '$WORK/res/summary.csv' >'$WORK/a' && cut -d, -f1-19 '$WORK/again/summary.csv' >'$WORK/b' &&
  cmp -s '$WORK/a' '$WORK/b' && cmp -s '$WORK/res/jobs-crux-full.csv' '$WORK/again/jobs-crux-full.csv'"
# the placements a run chose replay as explicit placements, with the same
# figures (durations: each job held its GPUs as long as it did)
awk -F, 'BEGIN { print "id,arrival_s,gpus,compute_s,overlap,bytes,duration_s,placement" }
  NR == FNR && FNR > 2 && $1 !~ /^#/ { c[$1] = $5; o[$1] = $6; b[$1] = $7; next }
  FNR > 1 && NR != FNR { printf "%s,%s,%s,%s,%s,%s,%s,%s\n", $1, $6, $3, c[$1], o[$1], b[$1], $7 - $6, $15 }' \
  "$WORK/w.csv" "$WORK/res/jobs-none.csv" >"$WORK/replay.csv"
check "a run's placements replay" "$SIM" run $C --workload "$WORK/replay.csv" --policy none \
  --out "$WORK/replay" --quiet

printf 'id,arrival_s,gpus,compute_s,bytes,iterations\na,0,8,1,1e9,10\nb,0,8,one,1e9,10\n' >"$WORK/bad.csv"
check "malformed workload: exit 2" exits 2 "$SIM" run $C --workload "$WORK/bad.csv"
check "malformed workload: names file and line 3" one_line_names "$WORK/bad.csv:3: compute_s"
printf 'id,arrival_s,gpus,compute_s,bytes,iterations,colour\n' >"$WORK/col.csv"
check "unknown column: exit 2" exits 2 "$SIM" run $C --workload "$WORK/col.csv"
check "unknown column: named at line 1" one_line_names "$WORK/col.csv:1: header: unknown column"
check "missing workload: exit 1" exits 1 "$SIM" run $C --workload "$WORK/none.csv"
check "missing workload: named, no line number" one_line_names "$WORK/none.csv: cannot read"
check "missing cluster file: exit 1" exits 1 "$SIM" run --cluster "$WORK/none.json" --workload "$WORK/w.csv"
check "missing cluster file: named, no line number" one_line_names "$WORK/none.json: "
check "run --levels 17: exit 2" exits 2 "$SIM" run $C --jobs 5 --levels 17
check "... one line naming option, value and range" one_line_names "crux-sim run: --levels: \"17\" is not an integer 1-16"
check "gen --frob: exit 2" exits 2 "$SIM" gen $C --frob
check "... one line naming the option" one_line_names "crux-sim gen: unknown option \"--frob\""
check "gen --seed without a value: exit 2" exits 2 "$SIM" gen $C --seed
check "... one line naming the option" one_line_names "crux-sim gen: --seed needs a value"
check "--version: exit 0" exits 0 "$SIM" --version
check "--version names crux-sim and the version" grep -q "^crux-sim (crux) [0-9]" "$WORK/out"
check "unknown policy: exit 2" exits 2 "$SIM" run $C --workload "$WORK/w.csv" --policy varys
check "needs a workload: exit 2" exits 2 "$SIM" run $C
check "bad cluster: exit 2" exits 2 "$SIM" run --cluster "$WORK/w.csv" --jobs 5
check "unwritable output: exit 1" exits 1 "$SIM" run $C --workload "$WORK/w.csv" --policy none \
  --out "$WORK/no/such/dir"
check "unknown command: exit 2" exits 2 "$SIM" simulate
tap_done
