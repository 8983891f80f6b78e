#!/usr/bin/env bash
# Another local user cannot borrow a job's level: the priority file binds
# each line to its job's owner (crux-sched daemon writes the registration's
# uid), and a job of another user that claims that job's id
# (CRUX_JOB_ID=<its id>) runs at the default level and says why.  The job
# runs as a second user the test makes.
. "$(dirname "$0")/mpi-common.sh"
. "$(dirname "$0")/../cli/other_user.sh"
prog=$builddir/tests/mpi/test_job
dir=$(mktemp -d)
cleanup() {
  other_user_remove
  rm -rf "$dir" "$last_stderr"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
if ! other_user_make crux41l; then
  echo "1..0 # SKIP $other_user_why"
  exit 0
fi
chmod 0755 "$dir"
printf 'crux-priorities 1\nlevels 8\njob high level 7 sl 7 tc 184 dscp 46 uid %d\n' "$(id -u)" >"$dir/prio"
common=(--mca coll_crux_priority_file "$dir/prio" --mca coll_crux_verbose 1 -x CRUX_JOB_ID)

CRUX_JOB_ID=high run_mpi 2 "owner" "${common[@]}" --mca coll_crux_arb_path "$dir/arb" -- $prog 1
expect_stderr "job high: level 7 of 8 (from the priority file)" \
  "[owner] the job's owner gets its level"
# the other user's job, with its own arbitration table and Open MPI's files
mine=$dir/other
mkdir "$mine" && chown "$other_uid" "$mine"
out=$(cd "$mine" && HOME=$mine TMPDIR=$mine CRUX_JOB_ID=high timeout -k 10 300 \
  "${other_prefix[@]}" mpirun -np 2 "${common[@]}" --mca coll_crux_arb_path "$mine/arb" \
  $prog 1 2>"$last_stderr" </dev/null)
rc=$?
cat "$last_stderr" >&2
[ $rc -eq 0 ] && grep -q '^ok' <<<"$out" && ! grep -q '^not ok' <<<"$out" &&
  tap_line ok "[borrower] another user's job claiming the job's id ran right" ||
  { echo "$out" | sed 's/^/# /'; tap_line "not ok" "[borrower] another user's job claiming the job's id ran right (status $rc)"; }
expect_stderr "job high: level 0 of 8 (default)" \
  "[borrower] another user claiming the job's id runs at the default level"
expect_stderr "the line of job high belongs to uid $(id -u), not to this process's uid $other_uid: not applied" \
  "[borrower] ... and says why"
finish
