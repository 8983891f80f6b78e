#!/usr/bin/env bash
# crux on a real Slurm (Debian's slurm-wlm and munge, one host): munged,
# slurmctld and slurmd started under a temporary directory with crux's
# PrologSlurmctld, EpilogSlurmctld and TaskProlog, and crux-sched daemon on a
# one-host cluster whose node_names map Slurm's node name to it.  Jobs
# register, read their level from the priority file without any setting of
# their own, write their profile, and are deregistered however they end
# (completed, cancelled, over their time limit); the daemon stopped and
# started again; Slurm's side going wrong (an empty node list, a node the
# cluster file lacks, a spool the prolog cannot write) never fails a job.
# Everything started here is stopped by PID at the end.  When Slurm cannot
# start, the test says why and fails.
set -u
builddir=${CRUX_BUILDDIR:?CRUX_BUILDDIR not set (run through make check)}
sched=$builddir/sched/crux-sched
hooks=$builddir/slurm
prog=$builddir/tests/mpi/test_job
. "$(dirname "$0")/../../scripts/mini-slurm.sh"

tap_n=0
ok() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $1"; }
not_ok() { tap_n=$((tap_n + 1)); echo "not ok $tap_n - $1"; }
check() { # check DESC COMMAND...
  local desc=$1
  shift
  if "$@"; then ok "$desc"; else not_ok "$desc"; fi
}
# wait_for SECONDS COMMAND...: until COMMAND succeeds; a guard, not a measure
wait_for() {
  local end=$((SECONDS + $1))
  shift
  until "$@"; do
    [ $SECONDS -ge $end ] && return 1
    sleep 0.5
  done
}

T=$(mktemp -d /tmp/crux-slurm-XXXXXX)
chmod 755 "$T" # munged wants its socket's directories searchable by all
daemon_pid=
stop_pid() { # stop_pid PID: TERM, then KILL after 10 s
  local pid=$1 i=0
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null
  while kill -0 "$pid" 2>/dev/null && [ $i -lt 20 ]; do sleep 0.5; i=$((i + 1)); done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  return 0
}
cleanup() {
  if [ -f "$T/slurmctld.pid" ] && [ -f "$T/slurm.conf" ]; then
    SLURM_CONF=$T/slurm.conf timeout 20 scancel --partition=crux >/dev/null 2>&1
    # the jobs' steps end before slurmd does
    local i=0
    while [ $i -lt 40 ] && [ -n "$(SLURM_CONF=$T/slurm.conf timeout 10 squeue -h 2>/dev/null)" ]; do
      sleep 0.5
      i=$((i + 1))
    done
  fi
  stop_pid "$daemon_pid"
  local f
  for f in slurmd.pid slurmctld.pid munge/pid; do
    [ -f "$T/$f" ] && stop_pid "$(cat "$T/$f")"
  done
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# cannot_start WHY: Slurm did not start here; that fails the test
cannot_start() {
  not_ok "a single-host Slurm starts: $1"
  local f
  for f in "$T"/munge/log "$T"/log/slurmctld.log "$T"/log/slurmd.log; do
    [ -f "$f" ] && tail -n 15 "$f" | sed "s|^|# ${f##*/}: |"
  done
  echo "1..$tap_n"
  exit 1
}

# 1. munged, slurmctld and slurmd
[ "$(id -u)" -eq 0 ] || cannot_start "slurmd must run as root (this runs as uid $(id -u))"
for p in munged slurmctld slurmd sbatch scontrol squeue scancel setpriv; do
  command -v $p >/dev/null || cannot_start "no $p (Debian packages slurm-wlm and munge)"
done
getent passwd munge >/dev/null || cannot_start "no munge user (Debian package munge creates it)"
mkdir -p "$T/state" "$T/slurmd" "$T/log" "$T/out" "$T/spool" "$T/profiles"
chmod 700 "$T/spool"
chmod 1733 "$T/profiles"
mini_slurm_munged "$T" || cannot_start "munged failed"

# two free TCP ports for slurmctld and slurmd
free_port() {
  local p=$1
  while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
  echo $p
}
ctld_port=$(free_port $((20000 + $$ % 20000)))
slurmd_port=$(free_port $((ctld_port + 1)))
host=$(hostname -s) # slurmd knows its host by the short name
# the programs Slurm runs: crux's, pointed at this test's configuration;
# jobs with these names get Slurm's side wrong on purpose
cat >"$T/crux-slurm.conf" <<EOF
# crux's Slurm programs, for this test
spool=$T/spool
priority_file=$T/prio
profile_dir=$T/profiles
slurm_conf=$T/slurm.conf
log=$T/crux-slurm.log
hint_allreduce_bytes_min=1e6
EOF
touch "$T/crux-slurm.log"
chown nobody "$T/crux-slurm.log"
for which in prolog epilog; do
  cat >"$T/$which" <<EOF
#!/bin/sh
export CRUX_SLURM_CONF=$T/crux-slurm.conf
case \$SLURM_JOB_NAME in
  crux-empty-nodes) [ $which = prolog ] && SLURM_JOB_NODELIST= ;;
  crux-unknown-node) [ $which = prolog ] && SLURM_JOB_NODELIST=crux-nowhere ;;
  crux-ro-spool) exec setpriv --reuid=nobody --regid=nogroup --clear-groups $hooks/crux-slurm-$which ;;
esac
exec $hooks/crux-slurm-$which
EOF
done
printf '#!/bin/sh\nexport CRUX_SLURM_CONF=%s\nexec %s\n' "$T/crux-slurm.conf" \
  "$hooks/crux-slurm-taskprolog" >"$T/taskprolog"
chmod 755 "$T/prolog" "$T/epilog" "$T/taskprolog"
{
  mini_slurm_conf "$T"
  cat <<EOF
ClusterName=cruxtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmdSpoolDir=$T/slurmd
SlurmdPidFile=$T/slurmd.pid
SlurmdLogFile=$T/log/slurmd.log
SlurmdParameters=config_overrides
NodeName=crux-n1 NodeHostname=$host NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=crux Nodes=crux-n1 Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
EOF
} >"$T/slurm.conf"
export SLURM_CONF=$T/slurm.conf
slurmctld -c -f "$T/slurm.conf" || cannot_start "slurmctld failed"
slurmd -c -f "$T/slurm.conf" || cannot_start "slurmd failed"
node_idle() { [ "$(sinfo -h -n crux-n1 -o %t 2>/dev/null)" = idle ]; }
wait_for 60 node_idle || cannot_start "node crux-n1 not idle after 60 s ($(sinfo -h -o %t 2>&1))"
ok "a single-host Slurm starts (slurmctld on port $ctld_port, node crux-n1)"

# 2. crux-sched daemon: one host, known to Slurm as crux-n1 and to MPI as
# this machine's name
cat >"$T/cluster.json" <<EOF
{"type": "explicit", "hosts": [{"name": "gpu-a", "gpus": 8, "nics": 4}],
 "switches": [{"name": "tor0", "layer": 0}], "links": [{"host": "gpu-a", "switch": "tor0", "gbps": 200}],
 "node_names": {"crux-n1": "gpu-a", "$host": "gpu-a"}}
EOF
start_daemon() {
  "$sched" daemon --spool "$T/spool" --cluster "$T/cluster.json" --out "$T/prio" \
    --profiles "$T/profiles" --report "$T/report" --settle-ms 100 2>>"$T/daemon.err" &
  daemon_pid=$!
}
start_daemon
wait_for 20 test -f "$T/prio" || not_ok "crux-sched daemon wrote its priority file"

# what Slurm and crux show of a job
state() { scontrol -o show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
running() { [ "$(state "$1")" = RUNNING ]; }
ended() {
  case $(state "$1") in
    COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | DEADLINE) return 0 ;;
  esac
  return 1
}
listed() { grep -q "^job $1 level " "$T/prio" 2>/dev/null; }
level_of() { sed -n "s/^job $1 level \([0-9]*\) .*/\1/p" "$T/prio"; }
levels() { sed -n 's/^levels \([0-9]*\)$/\1/p' "$T/prio"; }
gone() { ! ls -a "$T/spool" "$T/profiles" | grep -q "^$1\." && ! grep -q "^job $1 " "$T/prio"; }
says() { grep -q -- "$2" "$T/out/$1.err"; } # says JOB TEXT: in the job's stderr
prolog_lines() { grep -c "crux-slurm-$2: job $1:" "$T/crux-slurm.log"; }

export OMPI_MCA_mca_base_component_path="$builddir/stage:SYS_DEFAULT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_coll_crux_profile_interval_s=1
unset CRUX_JOB_ID CRUX_PRIORITY_FILE CRUX_PROFILE_DIR CRUX_SLURM_CONF
mpi="mpirun -np 2 --mca coll crux --mca coll_crux_verbose 1 --mca coll_crux_priority_poll_ms 200"
submit() { # submit NAME SBATCH-ARGS...: prints the job id
  local name=$1
  shift
  sbatch --parsable -J "$name" -o "$T/out/%j.out" -e "$T/out/%j.err" "$@"
}

# a job over its time limit (Slurm's smallest, a minute): checked at the end
overtime=$(submit crux-overtime -t 1 --wrap "sleep 600")

# 3. two jobs at once
a=$(submit crux-a --comment "run, crux.allreduce_bytes=2e9" --wrap "$mpi $prog 10 1")
b=$(submit crux-b --wrap "$mpi $prog 10 1")
check "two sbatch jobs start ($a, $b)" wait_for 90 eval "running $a && running $b"
check "both are registered in the spool" test -f "$T/spool/$a.job" -a -f "$T/spool/$b.job"
check "the registration names the Slurm node, the owner, the job and the comment's hint" \
  grep -qF "{\"id\": \"$a\", \"placement\": [\"crux-n1\"], \"uid\": 0, \"name\": \"crux-a\", \"account\": \"\", \"user\": \"root\", \"allreduce_bytes\": 2e9}" "$T/spool/$a.job"
check "both are in the priority file with a level" wait_for 30 eval "listed $a && listed $b"
la=$(level_of "$a") lb=$(level_of "$b") k=$(levels)
check "each job's rank 0 writes its profile where the task prolog said" \
  wait_for 30 eval "test -f '$T/profiles/$a.profile' -a -f '$T/profiles/$b.profile'"
# W of a job in the daemon's report: 8 GPUs x 1 s until a profile replaces
# the default compute time
work_of() { awk -v j="$1" '$1 == j { print $4 }' "$T/report" 2>/dev/null; }
check "the daemon replans a job from its profile" \
  wait_for 30 eval "[ -n \"\$(work_of $a)\" ] && [ \"\$(work_of $a)\" != 8 ]"
check "both jobs complete" wait_for 120 eval "ended $a && ended $b"
check "both ran their Allreduces correctly" \
  eval "[ \"\$(state $a)\$(state $b)\" = COMPLETEDCOMPLETED ] && grep -q '^ok ' '$T/out/$a.out' && grep -q '^ok ' '$T/out/$b.out'"
check "job $a ran at level $la of $k, as the file gives it" \
  says "$a" "job $a: level $la of $k (from the priority file)"
check "job $b ran at level $lb of $k, as the file gives it" \
  says "$b" "job $b: level $lb of $k (from the priority file)"
check "both are gone from the spool, the profiles and the file after they end" \
  wait_for 30 eval "gone $a && gone $b"

# 4. cancelled while running
c=$(submit crux-cancel --wrap "sleep 600")
check "a job to cancel is registered" wait_for 60 eval "running $c && listed $c"
scancel "$c"
check "scancel: the job is deregistered" wait_for 60 eval "ended $c && gone $c"

# 5. the daemon stopped while a job runs, a job submitted meanwhile
e=$(submit crux-daemon-down --wrap "$mpi $prog 15 1")
check "a job runs and is listed" wait_for 90 eval "running $e && listed $e"
le=$(level_of "$e")
stop_pid "$daemon_pid"
daemon_pid=
f=$(submit crux-meanwhile --wrap "sleep 600")
check "a job submitted while the daemon is down waits in the spool" \
  wait_for 60 eval "running $f && test -f '$T/spool/$f.job' && ! listed $f"
check "the running job finishes with its last level" \
  eval "wait_for 120 ended $e && grep -q '^ok ' '$T/out/$e.out' &&
    [ \"\$(grep \"job $e: level\" '$T/out/$e.err' | tail -1 | sed 's/.*\\(job $e: level [0-9]* of [0-9]* ([a-z ]*)\\).*/\\1/')\" = 'job $e: level $le of $k (from the priority file)' ]"
check "its deregistration waits in the spool" test -f "$T/spool/$e.end"
start_daemon
check "the daemon back: the waiting job is planned" wait_for 30 listed "$f"
check "... and the ended one is gone" wait_for 30 gone "$e"
scancel "$f"
wait_for 60 eval "ended $f && gone $f"

# 6. Slurm's side going wrong: the jobs run all the same, at the default level
g=$(submit crux-empty-nodes --wrap "$mpi $prog 2 1")
h=$(submit crux-unknown-node --wrap "$mpi $prog 2 1")
i=$(submit crux-ro-spool --wrap "$mpi $prog 2 1")
check "the three jobs complete" wait_for 180 eval "ended $g && ended $h && ended $i"
for j in $g $h $i; do
  check "job $j ($(scontrol -o show job "$j" | sed -n 's/.*JobName=\([^ ]*\).*/\1/p')) ran correctly at the default level" \
    eval "[ \"\$(state $j)\" = COMPLETED ] && grep -q '^ok ' '$T/out/$j.out' && says $j 'job $j: level 0 of $k (default)'"
done
check "an empty node list: the prolog says so in one line" \
  eval "[ \$(prolog_lines $g prolog) -eq 1 ] && grep -q 'prolog: job $g: empty node list' '$T/crux-slurm.log'"
check "a node the cluster file lacks: registered, and the daemon names it" \
  eval "[ \$(prolog_lines $h prolog) -eq 0 ] && grep -q '^[-0-9T:.]*Z $T/spool/$h.job:1: .*unknown host \"crux-nowhere\"' '$T/daemon.err'"
check "a spool the prolog cannot write: one line from the prolog, one from the epilog" \
  eval "[ \$(prolog_lines $i prolog) -eq 1 ] && [ \$(prolog_lines $i epilog) -eq 1 ] &&
    grep -q 'prolog: job $i: cannot write $T/spool/$i.job (Permission denied)' '$T/crux-slurm.log'"
check "no job failed or was held by a prolog or epilog" \
  eval "! scontrol -o show job | grep -q -e 'JobState=FAILED' -e 'Reason=\\(Prolog\\|Epilog\\|launch failed\\)'"

# 7. over the time limit
check "a job over its time limit is deregistered" \
  wait_for 150 eval "[ \"\$(state $overtime)\" = TIMEOUT ] && gone $overtime"
check "crux-sched daemon still runs" kill -0 "$daemon_pid"
sed 's/^/# log: /' "$T/crux-slurm.log"
echo "1..$tap_n"
