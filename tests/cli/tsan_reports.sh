#!/bin/sh
# scripts/tsan-reports, the filter scripts/hardening fails its thread step
# on: made-up TSan logs of two processes; only a data race whose earlier
# stack was lost is left out.
. "$(dirname "$0")/tap.sh"
FILTER="$(dirname "$0")/../../scripts/tsan-reports"
report() {   # report KIND PREVIOUS-STACK-LINE [no-summary]
  printf '==================\nWARNING: ThreadSanitizer: %s (pid=1)\n' "$1"
  printf '  Read of size 8 at 0x7b10 by thread T6:\n    #0 crux_reader x.c:10\n'
  printf '  Previous write of size 8 at 0x7b10 by thread T2:\n    %s\n' "$2"
  [ "${3:-}" = no-summary ] || printf 'SUMMARY: ThreadSanitizer: %s x.c:10 in crux_reader\n==================\n' "$1"
}
report "data race" "[failed to restore the stack]" >"$WORK/log.1"
report "data race" "#0 crux_writer y.c:20" >>"$WORK/log.1"
report "heap-use-after-free" "[failed to restore the stack]" >"$WORK/log.2"
report "data race" "#0 crux_cut z.c:30" no-summary >>"$WORK/log.2"
: >"$WORK/log.3"
"$FILTER" "$WORK/log.1" "$WORK/log.2" "$WORK/log.3" >"$WORK/kept"
check "three reports kept of four" sh -c "grep -c 'WARNING: ThreadSanitizer' '$WORK/kept' | grep -qx 3"
check "a race with both stacks is kept, whole" sh -c "grep -q 'crux_writer y.c:20' '$WORK/kept' &&
  grep -q 'SUMMARY: ThreadSanitizer: data race x.c:10' '$WORK/kept'"
check "another kind with a lost stack is kept" grep -q 'heap-use-after-free' "$WORK/kept"
check "a report cut off before its summary is kept" grep -q 'crux_cut z.c:30' "$WORK/kept"
check "a race whose earlier stack is lost is left out" sh -c "[ \$(grep -c 'failed to restore' '$WORK/kept') -eq 1 ]"
"$FILTER" "$WORK/log.3" >"$WORK/none"
check "an empty log: nothing" test ! -s "$WORK/none"
tap_done
