#!/bin/sh
# crux's Slurm programs run by hand, with the environment slurmctld and
# slurmd give them (env -i, SLURM_* only) and no Slurm daemons: what the
# prolog registers (GPUs, hints, names that need escaping) is what
# crux-sched daemon plans; malformed input from Slurm's side is one logged
# line and exit status 0; the task prolog's exports.  tests/cli/slurm.sh
# runs them under a real Slurm.
. "$(dirname "$0")/sched_tap.sh"
hooks=${CRUX_BUILDDIR:-..}/slurm
printf 'ClusterName=x\nSlurmctldHost=localhost\n' >"$WORK/slurm.conf"
mkdir "$WORK/spool"
conf() { # conf EXTRA-LINE...: the programs' configuration
  {
    echo "spool=$WORK/spool"
    echo "priority_file=$WORK/prio"
    echo "profile_dir=$WORK/profiles"
    echo "slurm_conf=$WORK/slurm.conf"
    echo "log=$WORK/log"
    for l in "$@"; do echo "$l"; done
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

conf
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

conf
check "the epilog deregisters" sh -c "
  $(command -v env) -i CRUX_SLURM_CONF='$WORK/crux-slurm.conf' SLURM_JOB_ID=11 '$hooks/crux-slurm-epilog' &&
  test -f '$WORK/spool/11.end' && test ! -s '$WORK/spool/11.end' && test ! -s '$WORK/log'"

check "the task prolog exports the job id, the priority file and the profile directory" sh -c "
  $(command -v env) -i CRUX_SLURM_CONF='$WORK/crux-slurm.conf' SLURM_JOB_ID=11 '$hooks/crux-slurm-taskprolog' >'$WORK/out' &&
  printf 'export CRUX_JOB_ID=11\nexport CRUX_PRIORITY_FILE=$WORK/prio\nexport CRUX_PROFILE_DIR=$WORK/profiles\n' |
    cmp - '$WORK/out'"
check "... leaving what the job set itself" sh -c "
  $(command -v env) -i CRUX_SLURM_CONF='$WORK/crux-slurm.conf' SLURM_JOB_ID=11 CRUX_PRIORITY_FILE=/mine \
    '$hooks/crux-slurm-taskprolog' >'$WORK/out' && ! grep -q CRUX_PRIORITY_FILE '$WORK/out' &&
  grep -q '^export CRUX_JOB_ID=11$' '$WORK/out'"
tap_done
