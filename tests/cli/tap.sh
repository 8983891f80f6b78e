# TAP helpers for the command-line tests (sourced): crux-sched's, crux-sim's, the
# benches', the docs' and the others.  Each check prints
# "ok N - desc" or "not ok N - desc"; tap_done prints the plan.  The tests
# run from the build's tests/ directory.
CRUX_SCHED=${CRUX_SCHED:-../sched/crux-sched}
CRUX_TEST_DATA=$(cd "$(dirname "$0")/../data" && pwd)
tap_n=0
tap_failed=0
WORK=$(mktemp -d "${TMPDIR:-/tmp}/crux-cli-XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# check DESC COMMAND...: ok when COMMAND succeeds
check() {
  local desc=$1
  shift
  tap_n=$((tap_n + 1))
  if "$@" >"$WORK/.out" 2>&1; then
    echo "ok $tap_n - $desc"
  else
    echo "not ok $tap_n - $desc"
    sed 's/^/# /' "$WORK/.out" | head -20
    tap_failed=$((tap_failed + 1))
  fi
}

# exits CODE COMMAND...: runs COMMAND, stderr to $WORK/err, succeeds when
# its exit status is CODE
exits() {
  local want=$1
  shift
  "$@" >"$WORK/out" 2>"$WORK/err"
  local got=$?
  [ "$got" -eq "$want" ] || { echo "exit $got, wanted $want"; cat "$WORK/err"; return 1; }
}

# one_line_names FILE:LINE: stderr is one line starting with it
one_line_names() {
  [ "$(wc -l <"$WORK/err")" -eq 1 ] && grep -q "^$1" "$WORK/err" || { cat "$WORK/err"; return 1; }
}

tap_done() {
  echo "1..$tap_n"
  exit 0
}

lingjun_cluster() {
  printf '{"type": "lingjun", "topo_csv": "%s/traces/lingjun-2023-topo.csv"}\n' \
    "$CRUX_TEST_DATA" >"$1"
}
