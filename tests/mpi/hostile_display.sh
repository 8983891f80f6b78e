#!/usr/bin/env bash
# Another local user who listens on 127.0.0.1:6000-6009, where X clients
# look for displays :0 to :9 over TCP, and never answers, cannot hold a crux
# job: crux's topology discovery (crux-topo, and a job's first Allreduce)
# opens no display, so the listener sees no connection and the job takes
# as long as without it.  The listener runs as a user the test makes; all
# of it in a network namespace of its own, so that other jobs on this
# machine never meet the listener.
if [ -z "${CRUX_TEST_NETNS:-}" ] && [ "$(id -u)" -eq 0 ] && unshare -n true 2>/dev/null; then
  CRUX_TEST_NETNS=1 exec unshare -n bash "$0" "$@"
fi
if [ -z "${CRUX_TEST_NETNS:-}" ]; then
  echo "1..0 # SKIP needs root and network namespaces (unshare -n)"
  exit 0
fi
ip link set lo up
. "$(dirname "$0")/mpi-common.sh"
. "$(dirname "$0")/../cli/other_user.sh"
dir=$(mktemp -d)
listener=
cleanup() {
  stop_listener
  other_user_remove
  rm -rf "$dir" "$last_stderr"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
if ! other_user_make crux41x; then
  echo "1..0 # SKIP $other_user_why"
  exit 0
fi

now() { date +%s.%N; }
# run_timed NAME CMD...: run CMD (at most 300 s), its seconds into $dir/NAME.s
run_timed() {
  local name=$1 start rc
  shift
  start=$(now)
  timeout -k 5 300 "$@" >"$dir/$name.out" 2>&1 </dev/null
  rc=$?
  awk -v a="$start" -v b="$(now)" 'BEGIN { printf "%.2f\n", b - a }' >"$dir/$name.s"
  return $rc
}
# start_listener NAME: the other user listens on 6000-6009 for at most 40 s,
# holding what connects; 1 when it could bind none of them
start_listener() {
  "${other_prefix[@]}" /usr/bin/python3 "$(dirname "$0")/../cli/hold_listener.py" --life 40 \
    6000 6001 6002 6003 6004 6005 6006 6007 6008 6009 >"$dir/$1.listener" 2>&1 &
  listener=$!
  for _ in $(seq 100); do grep -qs '^listening' "$dir/$1.listener" && break; sleep 0.1; done
  local ports
  ports=$(sed -n 's/^listening //p' "$dir/$1.listener")
  [ -n "$ports" ] && [ "$ports" -gt 0 ] || return 1
  echo "# $other_user listens on $ports of 127.0.0.1:6000-6009"
}
stop_listener() {
  [ -n "$listener" ] && kill "$listener" 2>/dev/null
  [ -n "$listener" ] && wait "$listener" 2>/dev/null
  listener=
}
topo=(env "$builddir/topo/crux-topo")
# mpirun itself (Open MPI's own hwloc, at its start) probes the displays:
# told not to, so that only the ranks are watched (hwloc reads an empty
# HWLOC_COMPONENTS as unset)
job=(env HWLOC_COMPONENTS=-gl mpirun -x HWLOC_COMPONENTS= -np 2 --mca coll crux
     "$builddir/bench/crux-bench-allreduce" -b 1M -e 1M -n 5 -r 1 --compare crux)

# the same commands without the listener, for their usual time
run_timed topo-alone "${topo[@]}"
run_timed job-alone "${job[@]}"

start_listener topo || { echo "1..0 # SKIP no port of 6000-6009 free for the listener"; exit 0; }
run_timed topo "${topo[@]}" && tap_line ok "crux-topo ran beside the listener" ||
  { cat "$dir/topo.out" >&2; tap_line "not ok" "crux-topo ran beside the listener"; }
stop_listener
start_listener job || { echo "1..0 # SKIP no port of 6000-6009 free for the listener"; exit 0; }
run_timed job "${job[@]}" && grep -q 'Wrong elements *: 0 OK' "$dir/job.out" &&
  tap_line ok "a crux job's Allreduce ran right beside the listener" ||
  { cat "$dir/job.out" >&2; tap_line "not ok" "a crux job's Allreduce ran right beside the listener"; }
stop_listener
for name in topo job; do
  conns=$(grep -c '^connection' "$dir/$name.listener")
  [ "$conns" -eq 0 ] && tap_line ok "$name: the listener saw no connection" ||
    tap_line "not ok" "$name: the listener saw $conns connections ($(grep '^connection' \
      "$dir/$name.listener" | sort | uniq -c | tr -s ' \n' ' '))"
  # held connections stretch a run to the listener's 40 s; a bound far
  # above the usual time, so that load cannot trip it
  alone=$(cat "$dir/$name-alone.s") beside=$(cat "$dir/$name.s")
  if awk -v a="$alone" -v b="$beside" 'BEGIN { exit !(b <= 4 * a + 20) }'; then
    tap_line ok "$name: ${beside} s beside the listener, ${alone} s alone"
  else
    tap_line "not ok" "$name: ${beside} s beside the listener, ${alone} s alone (more than 4 x + 20 s)"
  fi
done
finish
