#!/usr/bin/env bash
# Faults (tests/mpi/test_faults.c):
#  1. a rank SIGKILLed inside a large crux Allreduce (over the engine, as
#     auto chooses on one node, flags, hierarchical), or inside one of a
#     stream of small ones (the small Allreduce): the job ends non-zero
#     within 60 s, no process of it is left, and no crux shared-memory
#     segment is left in /dev/shm (crux's segments come from UCX's posix
#     memory domain, /dev/shm/ucx_shm_posix_*, unlinked once mapped; its
#     arbitration table, crux-arb-*, is the host's and outlives jobs by
#     design, so the job here gets a private one) nor a System V one (sysv
#     memory domain).  Each job runs in a private /dev/shm and System V IPC
#     namespace (tests/mpi/with-private-shm, unshare -i), looked at as the
#     job ends: other jobs on the machine neither hide a leak nor fake one;
#  2. communicators freed in one thread while another thread uses its own;
#  3. the job's priority file deleted, truncated, filled with garbage,
#     replaced by a directory and by a good file again, every few
#     milliseconds while the job runs: the job goes on, exact.
. "$(dirname "$0")/mpi-common.sh"
prog=$builddir/tests/mpi/test_faults
fakenodes=$(cd "$(dirname "$0")/../.." && pwd)/scripts/fakenodes
dir=$(mktemp -d)
trap 'rm -rf "$dir" "$last_stderr"' EXIT
mib=${CRUX_FAULTS_MIB:-64}

private_shm=$(cd "$(dirname "$0")" && pwd)/with-private-shm
procs() { pgrep -f "$prog kill" || true; }

# Inside the job's namespaces: run it, then list what it left there.
# Arguments: NP MPIRUN-ARGS...; environment: prog mib dir last_stderr.
job_in_private_shm='
  np=$1; shift
  start=$(date +%s)
  timeout -k 5 90 mpirun -np "$np" "$@" "$prog" kill "$mib" >"$dir/kill.out" 2>"$last_stderr" </dev/null
  rc=$?
  echo $(($(date +%s) - start)) >"$dir/elapsed"
  sleep 1
  ls /dev/shm | grep -E "^(ucx_shm_posix_|crux)" >"$dir/shm.left"
  ipcs -m | awk "\$1 ~ /^0x/ {print \$2}" >"$dir/sysv.left"
  exit $rc'

# 1. SIGKILL in the middle of a large Allreduce
kill_case() {   # kill_case NP LABEL ALGORITHM [MPIRUN-ARGS...]
  local np=$1 label=$2 alg=$3 rc elapsed left
  shift 3
  rm -f "$dir/shm.left" "$dir/sysv.left" "$dir/elapsed"
  prog=$prog mib=$mib dir=$dir last_stderr=$last_stderr unshare -i "$private_shm" 1g \
    bash -c "$job_in_private_shm" kill-case "$np" --mca coll crux --mca coll_crux_verbose 2 \
    --mca coll_crux_arb_path "$dir/arb" "$@"
  rc=$?
  elapsed=$(cat "$dir/elapsed" 2>/dev/null || echo "no time")
  sed 's/^/# /' "$last_stderr" | grep -E 'SIGKILL|inside|allreduce on|exited|signal|Killed' | head -8
  grep -q "not ok" "$dir/kill.out" && tap_line "not ok" "[$label] the job went on past the killed rank"
  expect_stderr "allreduce on faults-kill: $alg from" "[$label] crux's $alg Allreduce was running"
  expect_stderr "SIGKILL inside Allreduce" "[$label] a rank was killed inside an Allreduce"
  # mpirun passes the victim's signal on (137); timeout's own kill would
  # come after 90 s
  [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 77 ] && [ "$elapsed" -le 60 ] 2>/dev/null &&
    tap_line ok "[$label] the job ended with status $rc in $elapsed s (limit 60)" ||
    tap_line "not ok" "[$label] the job ended non-zero within 60 s (status $rc after $elapsed s)"
  left=$(procs)
  [ -z "$left" ] && tap_line ok "[$label] no process left behind" ||
    { tap_line "not ok" "[$label] no process left behind: $left"; ps -o pid,stat,etime,args -p $left >&2; }
  if [ -f "$dir/shm.left" ] && [ ! -s "$dir/shm.left" ]; then
    tap_line ok "[$label] no crux segment left in /dev/shm"
  else
    tap_line "not ok" "[$label] no crux segment left in /dev/shm: $(cat "$dir/shm.left" 2>/dev/null || echo 'not looked at')"
  fi
  if [ -f "$dir/sysv.left" ] && [ ! -s "$dir/sysv.left" ]; then
    tap_line ok "[$label] no System V segment left"
  else
    tap_line "not ok" "[$label] no System V segment left: ids $(cat "$dir/sysv.left" 2>/dev/null || echo 'not looked at')"
  fi
}
if ! unshare -i "$private_shm" 1m true; then
  echo "1..0 # SKIP no private /dev/shm and IPC namespace here (needs root and unshare)"
  exit 0
fi
kill_case 3 "kill posix" lanes
kill_case 3 "kill sysv" lanes --mca coll_crux_shm_mds sysv
kill_case 4 "kill hier" hier --mca coll_crux_group_size 2 --mca coll_crux_allreduce_algorithm hier
kill_case 3 "kill flags" flags --mca coll_crux_allreduce_algorithm flat
mib=0 kill_case 3 "kill small" small

# 2. a communicator freed while another thread uses a different one
run_mpi 2 "comm free" --mca coll crux --mca coll_crux_verbose 2 -- $prog commfree 40
expect_stderr "allreduce on faults-other: lanes from" "[np=2 comm free] the other thread ran crux's Allreduce"
run_mpi 3 "comm free" --mca coll crux --mca coll_crux_verbose 2 -- $prog commfree 30
MPI_LAUNCHER="$fakenodes 2x2" run_mpi 2x2 "comm free" --mca coll_crux_verbose 2 -- $prog commfree 20
expect_stderr "allreduce on faults-other: hier from" "[2x2 comm free] ... and across fake nodes"

# 3. the priority file mistreated while the job runs
prio=$dir/prio
good() { printf 'crux-priorities 1\nlevels 8\njob faults level %d sl %d tc %d\n' $1 $1 $(($1 * 32)); }
good 5 >"$prio"
( i=0
  while [ ! -e "$dir/stop" ]; do
    i=$((i + 1))
    case $((i % 9)) in
      0) rm -f "$prio" ;;
      1) good $((i % 8)) >"$prio" ;;                       # rewritten in place, not renamed
      2) : >"$prio" ;;                                     # truncated to nothing
      3) good 6 | head -c 30 >"$prio" ;;                   # cut in the middle of a line
      4) head -c 4096 /dev/urandom >"$prio" ;;             # garbage
      5) rm -f "$prio"; mkdir "$prio" ;;                   # a directory
      6) rmdir "$prio"; ln -s /nonexistent "$prio" ;;      # a dangling link
      7) rm -f "$prio"; good 2 >"$prio.tmp"; mv "$prio.tmp" "$prio" ;;   # replaced
      8) truncate -s 1G "$prio" ;;                         # huge, sparse
    esac
    sleep 0.05
  done ) &
writer=$!
CRUX_JOB_ID=faults run_mpi 2 "priority file" -x CRUX_JOB_ID --mca coll crux --mca coll_crux_priority_file "$prio" \
  --mca coll_crux_priority_poll_ms 1 --mca coll_crux_arb_path "$dir/arb" --mca coll_crux_verbose 1 \
  -- $prog run "${CRUX_FAULTS_SECONDS:-8}"
touch "$dir/stop"
wait $writer
expect_stderr "job faults: level [0-7] of 8 (from the priority file)" "[priority file] the job took levels from the file"
expect_stderr "keeping the last good priorities" "[priority file] bad files kept the last good state"
expect_stderr "more than the [0-9]* read at most; keeping" "[priority file] a huge file was refused unread"
expect_stderr "not a regular file; keeping" "[priority file] a directory was refused"
finish
