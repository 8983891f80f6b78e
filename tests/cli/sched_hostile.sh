#!/bin/bash
# crux-sched daemon against another local user (made by the test) who can
# write the profile directory (mode 1733), as every user of a Slurm cluster
# can: a user churning files there does not hold a new registration's plan
# nor cause replans; a registered job's own profile is still planned from;
# a symbolic link planted there under a job's name is refused, never
# followed.
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/other_user.sh"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  other_user_remove
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
if ! other_user_make crux41d; then
  echo "1..0 # SKIP $other_user_why"
  exit 0
fi
chmod 0755 "$WORK"

cat >"$WORK/c.json" <<'JSON'
{"type": "clos2", "tors": 2, "aggs": 2, "hosts_per_tor": 4}
JSON
S=$WORK/spool P=$WORK/profiles
mkdir "$S" "$P"
chmod 1733 "$P"
# register ID UID: a batch system's registration of two full hosts
register() {
  printf '{"placement": ["h0", "h4"], "uid": %s}\n' "$2" >"$S/.$1.tmp" && mv "$S/.$1.tmp" "$S/$1.job"
}
wait_for() {   # wait_for CMD: up to 20 s, a guard against hangs
  local i=0
  while [ $i -lt 200 ]; do
    eval "$1" && return 0
    sleep 0.1
    i=$((i + 1))
  done
  return 1
}
planned() { grep -c 'crux-sched daemon: planned' "$WORK/daemon.err"; }
w_of() { awk -v j="$1" '$1 == j { print $4 }' "$WORK/rep"; }

"$CRUX_SCHED" daemon --spool "$S" --cluster "$WORK/c.json" --out "$WORK/prio" --profiles "$P" \
  --report "$WORK/rep" 2>"$WORK/daemon.err" &
pids+=($!)
check "the daemon starts" wait_for "test -f '$WORK/prio'"

# the other user creates and deletes files in the profile directory, on
# and on, as fast as a shell can
"${other_prefix[@]}" sh -c 'i=0; while :; do : >"$1/c$i"; rm -f "$1/c$i"; i=$(((i + 1) % 64)); done' \
  churn "$P" &
churn=$!
pids+=($churn)
sleep 1
register j1 0
check "a job registered while another user churns the profile directory is planned" \
  wait_for "grep -q '^job j1 ' '$WORK/prio'"
check "... while the churn goes on" kill -0 "$churn"
# the registration's own events planned (the count still for a second),
# then two seconds of churn alone
before=$(planned)
for _ in $(seq 20); do
  sleep 1
  [ "$(planned)" -eq "$before" ] && break
  before=$(planned)
done
sleep 2
check "the churn alone causes no replan" test "$(planned)" -eq "$before"

# a job of the other user's, and its profile written by it meanwhile
register j2 "$other_uid"
check "the other user's job is planned from the defaults (W = 16 GPUs x 1 s)" \
  wait_for "test \"\$(w_of j2)\" = 16"
check "... its line bound to its owner's uid" grep -q "^job j2 level .* uid $other_uid\( \|\$\)" "$WORK/prio"
cat >"$WORK/j2.profile" <<'EOT'
crux-profile 1
job j2
ranks 16
hosts h0:8,h4:8
window_s 30
collectives 3000
bytes 3e10
coll_s 6
gap_s 24
period_s 0.3
EOT
"${other_prefix[@]}" sh -c 'cat >"$1/.j2.tmp" && mv "$1/.j2.tmp" "$1/j2.profile"' w "$P" <"$WORK/j2.profile"
check "its own profile is planned from, churn or not" wait_for "test \"\$(w_of j2)\" != 16"
kill "$churn"

# a link planted under a job's name, to a file of the job's owner: refused
register j3 0
printf 'crux-profile 1\njob j3\nranks 1\nhosts h0:1\nwindow_s 30\ncollectives 1\nbytes 1\ncoll_s 1\ngap_s 1\nperiod_s 1\n' \
  >"$WORK/root-secret"
"${other_prefix[@]}" ln -s "$WORK/root-secret" "$P/j3.profile"
check "a symbolic link in the profile directory is refused, not followed" \
  wait_for "grep -q '$P/j3.profile: .*symbolic link' '$WORK/daemon.err'"
check "... and the job stays planned from its registration" test "$(w_of j3)" = 16
tap_done
