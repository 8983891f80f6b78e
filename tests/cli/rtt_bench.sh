#!/bin/sh
# crux-bench-rtt: a positive round trip between CPUs 0 and 1; bad arguments
# exit 2, a CPU the machine lacks exits 1 (it must not wait forever for a
# thread that never ran).
. "$(dirname "$0")/sched_tap.sh"
RTT=${CRUX_RTT:-../bench/crux-bench-rtt}

check "CPUs 0 and 1: a positive round trip" sh -c "'$RTT' | awk '\$1 == \"rtt_ns\" && \$2 > 0 { ok = 1 } END { exit !ok }'"
check "one argument: exit 2" exits 2 "$RTT" 0
check "a CPU the machine lacks: exit 1" exits 1 timeout 20 "$RTT" 0 4095
tap_done
