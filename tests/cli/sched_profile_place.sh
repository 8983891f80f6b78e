#!/bin/sh
# crux-sched daemon: a job's profile gives its placement, replacing the
# registration's approximate one (a batch system registers whole nodes,
# the profile counts the ranks on each), and two names of one machine in a
# profile (its host name and the batch system's node name) are one host.
. "$(dirname "$0")/tap.sh"

cat >"$WORK/c.json" <<'JSON'
{"type": "clos2", "tors": 2, "aggs": 2, "hosts_per_tor": 4, "node_names": {"slurm-n1": "h1"}}
JSON
S=$WORK/spool P=$WORK/profiles
mkdir "$S" "$P"
me=$(id -u)
# profile HOSTS: the profile of job j1 with ranks on HOSTS ("h1:1,...")
profile() {
  ranks=0
  for h in $(printf '%s' "$1" | tr ',' ' '); do ranks=$((ranks + ${h##*:})); done
  printf 'crux-profile 1\njob j1\nranks %d\nhosts %s\nwindow_s 30\ncollectives 300\nbytes 3e9\ncoll_s 6\ngap_s 24\nperiod_s 0.3\n' \
    "$ranks" "$1" >"$P/j1.profile"
}
D="$CRUX_SCHED daemon --once --spool $S --cluster $WORK/c.json --out $WORK/prio --profiles $P --report $WORK/rep"
# planned_as "GPUS HOSTS": the daemon plans j1 on that many GPUs and hosts
planned_as() {
  $D 2>"$WORK/err" || { cat "$WORK/err"; return 1; }
  got=$(awk '$1 == "j1" { print $2, $3 }' "$WORK/rep")
  [ "$got" = "$1" ] || { echo "planned as $got"; return 1; }
}
echo "{\"placement\": [\"slurm-n1\"], \"uid\": $me}" >"$S/j1.job"

check "registered on one node, no profile: its 8 GPUs" planned_as "8 1"
profile h1:2
check "a profile of 2 ranks there: 2 GPUs" planned_as "2 1"
profile h1:1,slurm-n1:1
check "the machine named twice (host name, node name): one host, 2 ranks" planned_as "2 1"
profile h1:2,h5:3
check "ranks on two hosts: 5 GPUs on 2 hosts" planned_as "5 2"
profile h1:6,slurm-n1:3
check "more ranks than GPUs on the machine named twice: refused in one line, exit 2" sh -c "
  $D 2>'$WORK/err'; test \$? -eq 2 && grep -q 'j1.profile: unknown host \"slurm-n1\" or more ranks than it has GPUs' '$WORK/err'"
profile h1:1,nohost:1
check "a profile naming an unknown host: refused in one line, exit 2" sh -c "
  $D 2>'$WORK/err'; test \$? -eq 2 && grep -q 'j1.profile: unknown host \"nohost\"' '$WORK/err'"
check "... and the registration's placement kept" test "$(awk '$1 == "j1" { print $2 }' "$WORK/rep")" = 8
tap_done
