#!/usr/bin/env bash
# The Crux paper's testbed on one machine: training jobs (crux-bench-train)
# submitted with sbatch to a Slurm whose nodes are the hosts of an emulated
# two-layer Clos (scripts/testbed), with crux's prolog, epilog and task
# prolog; crux-sched daemon plans them from the spool and from the profiles
# the jobs' component writes, under each policy in turn; crux's TCP
# channel carries their gradients between hosts on the planned paths
# (source ports) and levels (DSCP bands).  Per policy it records each job's
# iterations, what the spines forwarded (per host pair and DSCP) and every
# version of the priority file.  Needs root.
#
#   bench/testbed.sh run OUT [OPTIONS]      one repetition: OUT/<policy>/ for each policy
#   bench/testbed.sh report DIR... [--build DIR]  the comparison over repetitions (bench/testbed_report.py)
#   bench/testbed.sh all OUT [OPTIONS]      --reps repetitions (OUT/rep1, ...), then the report
#     --policies LIST   comma-separated crux-sched daemon policies (none,crux-full,taccl,crux-pa)
#     --workload FILE   the jobs (default: bench/testbed-jobs.txt): one a line,
#                       "NAME MODEL ARRIVAL_S SECONDS HOST HOST", '#' comments
#     --hosts H         hosts per rack (4)  --rate R  spine cables (50mbit); host cables twice that
#     --queue N         packets each band of a cable end queues (100)
#     --reps N          repetitions for "all" (3)
#     --first-id N      the jobs' ids from N under every policy (1; "all": 1, 101, 201, ...)
#     --build DIR       the build tree (./build): crux-bench-train, crux-sched, crux-sim
#
# Slurm's nodes are the emulated hosts: each slurmd runs in its host's
# network namespace, with its own host name (UTS namespace) and its own
# /dev/shm (a mount namespace), so a job's ranks run on the hosts Slurm
# gave it and see one another as a cluster's would.  Everything is stopped
# and removed at the end, also on failure or interruption.
set -u -o pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
. "$src/scripts/mini-slurm.sh"
usage() { sed -n '/^#   bench/,/^#     --build/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 2 ] || usage
cmd=$1 out=$2
shift 2
reports=("$out") # report: every directory before the options
while [ "$cmd" = report ] && [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; do
  reports+=("$1")
  shift
done
policies=none,crux-full,taccl,crux-pa workload=$src/bench/testbed-jobs.txt hosts=4 rate=50mbit
reps=3 build=$src/build first_id=1 queue=100
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || usage
  case $1 in
    --policies) policies=$2 ;;
    --workload) workload=$2 ;;
    --hosts) hosts=$2 ;;
    --rate) rate=$2 ;;
    --reps) reps=$2 ;;
    --first-id) first_id=$2 ;;
    --queue) queue=$2 ;;
    --build) build=$2 ;;
    *) usage ;;
  esac
  shift 2
done
report() { python3 "$src/bench/testbed_report.py" report "$@" --sim "$build/sim/crux-sim"; }
case $cmd in
  report) report "${reports[@]}"; exit $? ;;
  all)
    [[ $reps =~ ^[1-9][0-9]?$ ]] || usage
    for ((r = 1; r <= reps; r++)); do
      "$0" run "$out/rep$r" --policies "$policies" --workload "$workload" --hosts "$hosts" \
        --rate "$rate" --build "$build" --first-id $((100 * r - 99)) --queue "$queue" || exit 1
    done
    report "$out"/rep*
    exit $? ;;
  run) ;;
  *) usage ;;
esac

[ "$(id -u)" = 0 ] || { echo "$0: needs root (network namespaces, Slurm's daemons)" >&2; exit 2; }
for p in munged slurmctld slurmd sbatch squeue scontrol nsenter unshare nft python3; do
  command -v $p >/dev/null || { echo "$0: needs $p (Debian: slurm-wlm munge nftables util-linux python3)" >&2; exit 2; }
done
train=$build/bench/crux-bench-train sched=$build/sched/crux-sched hooks=$build/slurm
[ -x "$train" ] && [ -x "$sched" ] && [ -x "$hooks/crux-slurm-prolog" ] ||
  { echo "$0: build crux first ($build)" >&2; exit 2; }
[ -f "$workload" ] || { echo "$0: no workload $workload" >&2; exit 2; }
[[ $hosts =~ ^[1-9][0-9]?$ ]] || usage
[[ $first_id =~ ^[1-9][0-9]{0,6}$ ]] || usage
[[ $rate =~ ^([1-9][0-9]*)mbit$ ]] || { echo "$0: --rate like 50mbit" >&2; exit 2; }
host_rate=$((2 * ${rate%mbit}))mbit
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)

T=$(mktemp -d /tmp/crux-testbed-XXXXXX)
chmod 755 "$T" # munged wants its socket's directories searchable by all
net= daemon= monitor=
stop_pid() { # TERM, then KILL after 10 s
  local pid=$1 i=0
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null
  while kill -0 "$pid" 2>/dev/null && [ $i -lt 20 ]; do sleep 0.5; i=$((i + 1)); done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  return 0
}
cleanup() {
  stop_pid "$monitor"
  stop_pid "$daemon"
  [ -f "$T/slurmctld.pid" ] && stop_pid "$(cat "$T/slurmctld.pid")"
  # slurmd, slurmstepd and the jobs live in the hosts' namespaces
  [ -z "$net" ] || "$src/scripts/testbed" down "$net"
  [ -f "$T/munge/pid" ] && stop_pid "$(cat "$T/munge/pid")"
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
say() { echo "# $(date -u +%H:%M:%S) $*"; }

net=$("$src/scripts/testbed" up auto --hosts "$hosts" --uplink-rate "$rate" --host-rate "$host_rate" \
  --queue "$queue") ||
  { net=; exit 1; }
say "testbed $net: 2 racks of $hosts hosts, 2 spines, spine cables $rate, host cables $host_rate, queues of $queue packets, in $T"
in_ns() { local n=$1; shift; nsenter --net="/run/netns/cxtb$net-$n" "$@"; }
"$src/scripts/testbed" cluster "$net" >"$T/cluster.json" || exit 1
cp "$T/cluster.json" "$out/cluster.json"

# munged, slurmctld (namespace mgmt), a slurmd per host
mkdir -p "$T/state" "$T/log" "$T/spool" "$T/profiles"
chmod 700 "$T/spool"
chmod 1733 "$T/profiles"
mini_slurm_munged "$T" || { echo "$0: munged failed" >&2; exit 1; }
cat >"$T/crux-slurm.conf" <<EOF
spool=$T/spool
priority_file=$T/prio
profile_dir=$T/profiles
slurm_conf=$T/slurm.conf
log=$T/crux-slurm.log
EOF
for which in prolog epilog taskprolog; do
  printf '#!/bin/sh\nexport CRUX_SLURM_CONF=%s\nexec %s\n' "$T/crux-slurm.conf" \
    "$hooks/crux-slurm-$which" >"$T/$which"
  chmod 755 "$T/$which"
done
nodes=$("$src/scripts/testbed" hosts "$net" | awk '{print $1}' | paste -sd,)
{
  mini_slurm_conf "$T"
  cat <<EOF
ClusterName=cruxtb
SlurmctldHost=ctl(10.40.0.254)
SlurmdSpoolDir=$T/slurmd-%n
SlurmdPidFile=$T/slurmd-%n.pid
SlurmdLogFile=$T/log/slurmd-%n.log
FirstJobId=$first_id
EOF
  "$src/scripts/testbed" hosts "$net" | while read -r name _ mgmt _ _; do
    echo "NodeName=$name NodeAddr=$mgmt CPUs=2 State=UNKNOWN"
  done
  echo "PartitionName=crux Nodes=$nodes Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO"
} >"$T/slurm.conf"
export SLURM_CONF=$T/slurm.conf
# slurmctld afresh, its state forgotten: the jobs' ids start at --first-id
# again, so every policy hashes the same ids onto the same ECMP paths
start_ctld() {
  [ -f "$T/slurmctld.pid" ] && stop_pid "$(cat "$T/slurmctld.pid")"
  rm -rf "$T/state" && mkdir "$T/state" || return 1
  in_ns mgmt unshare --uts sh -c "hostname ctl && exec slurmctld -c -f $T/slurm.conf"
}
start_ctld || { echo "$0: slurmctld failed" >&2; exit 1; }
"$src/scripts/testbed" hosts "$net" | while read -r name _ _ _ _; do
  mkdir -p "$T/slurmd-$name"
  in_ns "$name" unshare --uts --mount --propagation private sh -c \
    "hostname $name && mount -t tmpfs -o size=256m,mode=1777 tmpfs /dev/shm &&
     exec slurmd -c -f $T/slurm.conf -N $name" || exit 1
done || { echo "$0: slurmd failed" >&2; exit 1; }
slurm() { in_ns mgmt "$@"; }
nodes_idle() {
  for ((i = 0; i < 60; i++)); do
    [ "$(slurm sinfo -h -o %t 2>/dev/null | sort -u)" = idle ] && return 0
    sleep 1
  done
  echo "$0: the Slurm nodes are not idle after 60 s: $(slurm sinfo -h 2>&1)" >&2
  tail -5 "$T"/log/*
  return 1
}
nodes_idle || exit 1
say "Slurm: nodes $nodes idle"

# what every job runs (sbatch passes this environment on)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
export OMPI_MCA_mca_base_component_path="$build/stage:SYS_DEFAULT"
unset CRUX_JOB_ID CRUX_PRIORITY_FILE CRUX_PROFILE_DIR
mpi="mpirun --mca coll crux --mca coll_crux_net tcp --mca coll_crux_net_if 10.41.0.0/16 \
  --mca coll_crux_allreduce_algorithm hier --mca btl self,tcp \
  --mca btl_tcp_if_include 10.40.0.0/24 --mca oob_tcp_if_include 10.40.0.0/24 \
  --mca coll_crux_priority_poll_ms 500 --mca coll_crux_profile_interval_s 5 --mca coll_crux_verbose 2"

# The spines' counters and each version of the priority file (named by
# the time the daemon wrote it, with the report of the same plan), every
# second.
monitor_loop() {
  local dir=$1 last= sum t
  mkdir -p "$dir/prio"
  while :; do
    echo "t $(date +%s.%N)"
    "$src/scripts/testbed" flows "$net"
    sum=$(cksum <"$T/prio" 2>/dev/null)
    if [ -n "$sum" ] && [ "$sum" != "$last" ]; then
      t=$(stat -c %.9Y "$T/prio") # when the daemon wrote it
      cp "$T/prio" "$dir/prio/$t.prio" 2>/dev/null
      cp "$T/report" "$dir/prio/$t.report" 2>/dev/null
      last=$sum
    fi
    sleep 1
  done >"$dir/flows.txt"
}

# TCP's losses on every host: "HOST COUNTER VALUE", cumulative
tcp_counters() {
  local name
  "$src/scripts/testbed" hosts "$net" | while read -r name _ _ _ _; do
    in_ns "$name" nstat -az TcpRetransSegs TcpExtTCPTimeouts TcpOutSegs 2>/dev/null |
      awk -v h="$name" 'NF >= 2 && $1 !~ /^#/ {print h, $1, $2}'
  done
}

run_policy() {
  local policy=$1 dir=$out/$1
  rm -rf "$dir" && mkdir -p "$dir/logs" || return 1
  if [ -n "${ran_one:-}" ]; then
    start_ctld && nodes_idle || return 1
  fi
  ran_one=1
  rm -f "$T"/spool/* "$T"/profiles/* "$T/prio"
  "$sched" daemon --spool "$T/spool" --profiles "$T/profiles" --cluster "$T/cluster.json" \
    --out "$T/prio" --levels 3 --policy "$policy" --settle-ms 200 --report "$T/report" \
    2>"$dir/daemon.err" &
  daemon=$!
  monitor_loop "$dir" &
  monitor=$!
  local t0 name model arrival seconds ha hb ids=() now
  tcp_counters >"$dir/tcp-before.txt"
  t0=$(date +%s.%N)
  echo "$t0" >"$dir/epoch"
  say "$policy: daemon $daemon, jobs from $workload"
  while read -r name model arrival seconds ha hb; do
    case $name in '' | '#'*) continue ;; esac
    now=$(date +%s.%N)
    # in the background, so that a signal is not held until the sleep ends
    sleep "$(awk -v a="$arrival" -v t0="$t0" -v n="$now" 'BEGIN {d = t0 + a - n; print (d > 0 ? d : 0)}')" &
    wait $!
    local id
    id=$(slurm sbatch --parsable -J "$name" -N 2 --ntasks-per-node=2 -w "$ha,$hb" \
      -o "$dir/logs/$name.out" -e "$dir/logs/$name.err" \
      --wrap "$mpi $train --model $model --seconds $seconds --log $dir/logs/$name.log") || return 1
    echo "$name $id $model $arrival $seconds $ha $hb" >>"$dir/jobs.txt"
    ids+=("$id")
    say "$policy: submitted $name ($model, $ha $hb, ${seconds}s) as job $id"
  done <"$workload"
  # all ended, within an hour
  local left
  for ((i = 0; i < 3600; i++)); do
    left=$(slurm squeue -h -o %i 2>/dev/null | wc -l)
    [ "$left" -eq 0 ] && break
    sleep 1
  done
  sleep 2 # the epilog's deregistration replanned
  stop_pid "$monitor"
  monitor=
  stop_pid "$daemon"
  daemon=
  cp "$T/report" "$dir/report.txt" 2>/dev/null
  tcp_counters >"$dir/tcp-after.txt"
  for id in "${ids[@]}"; do
    slurm scontrol -o show job "$id" | sed -n 's/.*JobId=\([0-9]*\) JobName=\([^ ]*\).*JobState=\([A-Z]*\).*/\1 \2 \3/p'
  done >"$dir/states.txt"
  [ "$left" -eq 0 ] || { echo "$0: jobs still running after an hour" >&2; return 1; }
  say "$policy: done ($(awk '{print $3}' "$dir/states.txt" | sort | uniq -c | xargs))"
}

for policy in ${policies//,/ }; do
  run_policy "$policy" || exit 1
done
cp "$T/crux-slurm.log" "$out/crux-slurm.log" 2>/dev/null
say "done: $out"
