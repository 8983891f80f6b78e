#!/bin/sh
# crux-bench-rtt: a positive round trip between CPUs 0 and 1; bad arguments
# exit 2 with one line naming them, a CPU the machine lacks exits 1 (it must
# not wait forever for a thread that never ran); --help and --version.
. "$(dirname "$0")/tap.sh"
RTT=${CRUX_RTT:-../bench/crux-bench-rtt}

check "CPUs 0 and 1: a positive round trip" sh -c "'$RTT' | awk '\$1 == \"rtt_ns\" && \$2 > 0 { ok = 1 } END { exit !ok }'"
check "one argument: exit 2" exits 2 "$RTT" 0
check "a CPU the machine lacks: exit 1" exits 1 timeout 20 "$RTT" 0 1023
check "a CPU past CPU_SETSIZE: exit 2, named" sh -c "
  '$RTT' 0 4095 2>'$WORK/e'; [ \$? -eq 2 ] && grep -q \"^crux-bench-rtt: bad CPU '4095'\" '$WORK/e'"
check "an unknown option: exit 2, named" sh -c "
  '$RTT' --bogus 2>'$WORK/e'; [ \$? -eq 2 ] && grep -q \"^crux-bench-rtt: unknown option '--bogus'\" '$WORK/e'"
check "--help: usage on stdout, exit 0" sh -c "'$RTT' --help | grep -q '^usage: crux-bench-rtt'"
check "--version: exit 0" sh -c "'$RTT' --version | grep -q '^crux-bench-rtt (crux) [0-9]'"
tap_done
