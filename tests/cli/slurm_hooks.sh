#!/bin/sh
# crux's Slurm programs run by hand, with the environment slurmctld and
# slurmd give them (env -i, SLURM_* only) and no Slurm daemons: what the
# prolog registers (GPUs, hints, names that need escaping) is what
# crux-sched daemon plans; malformed input from Slurm's side is one logged
# line and exit status 0; a user's hints are taken only within the
# operator's bounds, and one out of range is dropped, not the job; job ids
# as Slurm writes them only; the configuration's last line without a
# newline and CRLF endings; the task prolog's exports, printed exactly; the
# prolog's time linear in the node count.  tests/cli/slurm.sh runs them
# under a real Slurm.
. "$(dirname "$0")/tap.sh"
hooks=${CRUX_BUILDDIR:-..}/slurm
printf 'ClusterName=x\nSlurmctldHost=localhost\n' >"$WORK/slurm.conf"
mkdir "$WORK/spool"
conf() { # conf EXTRA-LINE...: the programs' configuration
  {
    printf '%s\n' "spool=$WORK/spool" "priority_file=$WORK/prio" "profile_dir=$WORK/profiles" \
      "slurm_conf=$WORK/slurm.conf" "log=$WORK/log"
    for l in "$@"; do printf '%s\n' "$l"; done
  } >"$WORK/crux-slurm.conf"
  : >"$WORK/log"
}
# as slurmctld runs its prolog: only Slurm's variables
run() { # run PROGRAM VAR=VALUE...
  p=$1
  shift
  env -i CRUX_SLURM_CONF="$WORK/crux-slurm.conf" SLURM_JOB_UID=1000 SLURM_JOB_USER=ana \
    SLURM_JOB_ACCOUNT='(null)' "$@" "$hooks/crux-slurm-$p"
}
logged() { [ "$(wc -l <"$WORK/log")" -eq 1 ] && grep -q -- "$1" "$WORK/log" || { cat "$WORK/log"; return 1; }; }

conf hint_compute_s_max=10 hint_allreduce_bytes_min=1e6
check "the prolog registers a job" exits 0 run prolog SLURM_JOB_ID=11 SLURM_JOB_NODELIST='n[1-2]' \
  SLURM_JOB_NAME='say "hi" \ there' SLURM_JOB_GPUS=0,1 \
  SLURM_JOB_COMMENT='train; crux.allreduce_bytes=2.5e9,crux.compute_s=0.25'
check "... atomically: no temporary file left" sh -c "! ls -a '$WORK/spool' | grep -q tmp"
check "... nodes with their GPUs, owner, escaped name, no account, hints" grep -qF \
  '{"id": "11", "placement": [{"host": "n1", "gpus": [0,1]}, {"host": "n2", "gpus": [0,1]}], "uid": 1000, "name": "say \"hi\" \\ there", "account": "", "user": "ana", "allreduce_bytes": 2.5e9, "compute_s": 0.25}' \
  "$WORK/spool/11.job"
check "... and nothing logged" test ! -s "$WORK/log"
check "the prolog with a malformed hint and GPU list: registered, one line each" sh -c "
  $(command -v env) -i CRUX_SLURM_CONF='$WORK/crux-slurm.conf' SLURM_JOB_ID=12 SLURM_JOB_NODELIST=n3 \
    SLURM_JOB_GPUS=0-3 SLURM_JOB_COMMENT='crux.allreduce_bytes=1e9x' '$hooks/crux-slurm-prolog' &&
  test \$(wc -l <'$WORK/log') -eq 2 && grep -q 'job 12: SLURM_JOB_GPUS \"0-3\"' '$WORK/log' &&
  grep -q 'job 12: comment word \"crux.allreduce_bytes=1e9x\" is not a number' '$WORK/log' &&
  grep -qF '\"placement\": [\"n3\"]' '$WORK/spool/12.job' && ! grep -q allreduce_bytes '$WORK/spool/12.job'"
cat >"$WORK/cluster.json" <<'JSON'
{"type": "clos2", "tors": 2, "aggs": 2, "hosts_per_tor": 4,
 "node_names": {"n1": "h0", "n2": "h4", "n3": "h1"}}
JSON
check "crux-sched daemon plans what the prolog wrote" exits 0 $CRUX_SCHED daemon --once \
  --spool "$WORK/spool" --cluster "$WORK/cluster.json" --out "$WORK/prio"
check "... both jobs" test "$(grep -c '^job 1[12] level ' "$WORK/prio")" -eq 2

: >"$WORK/log"
check "an empty node list: exit 0, one line" sh -c "
  $(command -v env) -i CRUX_SLURM_CONF='$WORK/crux-slurm.conf' SLURM_JOB_ID=13 '$hooks/crux-slurm-prolog' &&
  test ! -e '$WORK/spool/13.job'"
check "... saying so" logged "crux-slurm-prolog: job 13: empty node list"
conf scontrol=/bin/false
check "scontrol failing: exit 0, not registered" sh -c "
  $(command -v env) -i CRUX_SLURM_CONF='$WORK/crux-slurm.conf' SLURM_JOB_ID=14 SLURM_JOB_NODELIST=n1 \
    '$hooks/crux-slurm-prolog' && test ! -e '$WORK/spool/14.job'"
check "... one line naming the command" logged 'job 14: "/bin/false show hostnames n1" failed (status 1)'
conf
check "a job id that is not one: exit 0, one line" sh -c "
  $(command -v env) -i CRUX_SLURM_CONF='$WORK/crux-slurm.conf' SLURM_JOB_ID='../x' SLURM_JOB_NODELIST=n1 \
    '$hooks/crux-slurm-prolog' && ! ls '$WORK/spool' | grep -q x"
check "... saying so" logged 'no valid SLURM_JOB_ID ("../x")'
conf "color=blue"
check "an unknown configuration key: logged, the job registered" sh -c "
  $(command -v env) -i CRUX_SLURM_CONF='$WORK/crux-slurm.conf' SLURM_JOB_ID=15 SLURM_JOB_NODELIST=n1 \
    '$hooks/crux-slurm-prolog' && test -f '$WORK/spool/15.job'"
check "... in one line naming the file and line" logged "crux-slurm.conf:6: unknown key \"color\""
check "no configuration file: exit 0, one line" sh -c "
  $(command -v env) -i CRUX_SLURM_CONF='$WORK/none.conf' SLURM_JOB_ID=16 SLURM_JOB_NODELIST=n1 \
    '$hooks/crux-slurm-prolog' 2>'$WORK/err' && test \$(wc -l <'$WORK/err') -le 1 && test ! -e '$WORK/spool/16.job'"

# the user's hints: bounded by the operator, dropped when out of range or
# not a JSON number, the job registered all the same
conf
check "hints without the operator's bounds: not taken, one line" sh -c "
  $(command -v env) -i CRUX_SLURM_CONF='$WORK/crux-slurm.conf' SLURM_JOB_ID=21 SLURM_JOB_NODELIST=n1 \
    SLURM_JOB_COMMENT='crux.compute_s=1000000' '$hooks/crux-slurm-prolog' &&
  ! grep -q compute_s '$WORK/spool/21.job'"
check "... naming the missing bound" logged 'job 21: comment word "crux.compute_s=1000000" ignored: crux-slurm.conf sets no hint_compute_s_max bound'
conf hint_compute_s_max=2 hint_allreduce_bytes_min=1e8
check "a hint beyond the operator's bound is brought to it" sh -c "
  $(command -v env) -i CRUX_SLURM_CONF='$WORK/crux-slurm.conf' SLURM_JOB_ID=22 SLURM_JOB_NODELIST=n1 \
    SLURM_JOB_COMMENT='crux.compute_s=1000000 crux.allreduce_bytes=1' '$hooks/crux-slurm-prolog' &&
  grep -qF '\"allreduce_bytes\": 1e8, \"compute_s\": 2}' '$WORK/spool/22.job' &&
  test \$(grep -c 'job 22: comment word .* is beyond hint_' '$WORK/log') -eq 2"
for bad in 1e999 0 1. 007 -1 1e-10; do
  conf hint_compute_s_max=1e6
  check "compute_s hint $bad: dropped, the job registered without it, one line" sh -c "
    $(command -v env) -i CRUX_SLURM_CONF='$WORK/crux-slurm.conf' SLURM_JOB_ID=23 SLURM_JOB_NODELIST=n1 \
      SLURM_JOB_COMMENT='crux.compute_s=$bad' '$hooks/crux-slurm-prolog' &&
    ! grep -q compute_s '$WORK/spool/23.job' && test \$(wc -l <'$WORK/log') -eq 1 &&
    grep -q 'is not a number in 1e-9..1e6: ignored' '$WORK/log'"
done
check "crux-sched daemon plans every registration the prolog wrote" exits 0 $CRUX_SCHED daemon --once \
  --spool "$WORK/spool" --cluster "$WORK/cluster.json" --out "$WORK/prio"
check "... the hinted jobs among them" test "$(grep -c '^job 2[123] level ' "$WORK/prio")" -eq 3
for bad in 007 1. 0 12345678901; do
  check "job id \"$bad\": not registered, one line" sh -c "
    $(command -v env) -i CRUX_SLURM_CONF='$WORK/crux-slurm.conf' SLURM_JOB_ID='$bad' SLURM_JOB_NODELIST=n1 \
      '$hooks/crux-slurm-prolog' && ! ls '$WORK/spool' | grep -qxF '$bad.job' &&
    grep -q 'no valid SLURM_JOB_ID (\"$bad\")' '$WORK/log'"
done

# the configuration: a last line without a newline, CRLF line endings
printf 'spool=%s\r\nslurm_conf=%s\r\nlog=%s/log2' "$WORK/spool" "$WORK/slurm.conf" "$WORK" \
  >"$WORK/crux-slurm.conf"
rm -f "$WORK/log2"
check "a CRLF configuration whose last line has no newline: both lines taken" sh -c "
  $(command -v env) -i CRUX_SLURM_CONF='$WORK/crux-slurm.conf' SLURM_JOB_ID=24 SLURM_JOB_NODELIST=n1 \
    SLURM_JOB_COMMENT='crux.compute_s=1' '$hooks/crux-slurm-prolog' &&
  test -f '$WORK/spool/24.job' && grep -q 'job 24: comment word' '$WORK/log2'"

# the prolog's time grows linearly with the node count: 60,000 nodes cost
# far less than 20 times 6,000 (appending to a shell variable, they cost
# 100 times as much)
printf '#!/bin/sh\nseq -f "node%%g" 1 "$3"\n' >"$WORK/scontrol"
chmod +x "$WORK/scontrol"
conf "scontrol=$WORK/scontrol"
prolog_s() { # prolog_s NODES: the prolog's seconds for a job of NODES nodes
  local t0 t1
  t0=$(date +%s%N)
  env -i CRUX_SLURM_CONF="$WORK/crux-slurm.conf" SLURM_JOB_ID="$1" SLURM_JOB_NODELIST="$1" \
    "$hooks/crux-slurm-prolog"
  t1=$(date +%s%N)
  echo $(((t1 - t0) / 1000000))
}
small=$(prolog_s 6000) large=$(prolog_s 60000)
echo "# the prolog: 6,000 nodes $small ms, 60,000 nodes $large ms"
check "60,000 nodes registered" sh -c "grep -o '\"node[0-9]*\"' '$WORK/spool/60000.job' | wc -l | grep -qx 60000"
check "... in linear time (60,000 nodes $large ms, 6,000 nodes $small ms)" \
  test "$large" -le $((20 * small + 10000))

conf
check "the epilog deregisters" sh -c "
  $(command -v env) -i CRUX_SLURM_CONF='$WORK/crux-slurm.conf' SLURM_JOB_ID=11 '$hooks/crux-slurm-epilog' &&
  test -f '$WORK/spool/11.end' && test ! -s '$WORK/spool/11.end' && test ! -s '$WORK/log'"

check "the task prolog exports the job id, the priority file and the profile directory" sh -c "
  $(command -v env) -i CRUX_SLURM_CONF='$WORK/crux-slurm.conf' SLURM_JOB_ID=11 '$hooks/crux-slurm-taskprolog' >'$WORK/out' &&
  printf 'export CRUX_JOB_ID=11\nexport CRUX_PRIORITY_FILE=$WORK/prio\nexport CRUX_PROFILE_DIR=$WORK/profiles\n' |
    cmp - '$WORK/out'"
conf 'priority_file=/p\nexport LD_PRELOAD=/x.so' 'profile_dir=/d\'
check "the task prolog prints values exactly, backslashes and all" sh -c "
  $(command -v env) -i CRUX_SLURM_CONF='$WORK/crux-slurm.conf' SLURM_JOB_ID=11 '$hooks/crux-slurm-taskprolog' >'$WORK/out' &&
  test \$(wc -l <'$WORK/out') -eq 3 && grep -qxF 'export CRUX_PRIORITY_FILE=/p\\nexport LD_PRELOAD=/x.so' '$WORK/out' &&
  grep -qxF 'export CRUX_PROFILE_DIR=/d\\' '$WORK/out'"
conf
check "... leaving what the job set itself" sh -c "
  $(command -v env) -i CRUX_SLURM_CONF='$WORK/crux-slurm.conf' SLURM_JOB_ID=11 CRUX_PRIORITY_FILE=/mine \
    '$hooks/crux-slurm-taskprolog' >'$WORK/out' && ! grep -q CRUX_PRIORITY_FILE '$WORK/out' &&
  grep -q '^export CRUX_JOB_ID=11$' '$WORK/out'"
tap_done
