#!/bin/sh
# crux-bench-p2p end to end on a few small sizes: every host mode runs and
# reports a row per size; in shared mode the shared buffer goes over
# shm-direct (channel 3) in one stripe; bad options exit 2 with one line
# naming them; --help, --version.  Timings are
# only checked to be positive (this machine is shared).
. "$(dirname "$0")/tap.sh"
P2P=${CRUX_P2P:-../bench/crux-bench-p2p}

check "--help: exit 0" exits 0 "$P2P" --help
check "an unknown mode: exit 2" exits 2 "$P2P" --mode nvlink
check "an odd process count: exit 2" exits 2 "$P2P" --procs 3
check "a bad value: exit 2, one line naming the option and value" sh -c "
  '$P2P' --min 4X 2>'$WORK/e'; [ \$? -eq 2 ] && [ \$(wc -l <'$WORK/e') -eq 1 ] &&
  grep -q \"^crux-bench-p2p: --min: bad value '4X'\" '$WORK/e'"
check "an unknown option: exit 2, named" sh -c "
  '$P2P' --bogus 2>'$WORK/e'; [ \$? -eq 2 ] && grep -q \"^crux-bench-p2p: unknown option '--bogus'\" '$WORK/e'"
check "--help on stdout" sh -c "'$P2P' --help | grep -q '^usage: crux-bench-p2p'"
check "--version: exit 0" sh -c "'$P2P' --version | grep -q '^crux-bench-p2p (crux) [0-9]'"
check "shared mode runs" sh -c "'$P2P' --mode shared --min 4K --max 64K --rounds 1 --no-calibrate --csv >'$WORK/shared.csv'"
# mode,pair,bytes,one_gbps,one_n,all_gbps,all_n,ratio: all_n is the shared send's channel
check "shared: 4K, 16K, 64K over shm-direct, positive rates" awk -F, '
  NR == 1 { next }
  { rows++; if ($1 != "shared" || $7 != 3 || !($4 > 0) || !($6 > 0)) bad = 1 }
  END { exit bad || rows != 3 }' "$WORK/shared.csv"
check "host mode runs, a row per size" sh -c "
  '$P2P' --mode host --min 4K --max 16K --rounds 1 --no-calibrate --csv >'$WORK/host.csv' &&
  test \$(grep -c '^host,0,' '$WORK/host.csv') -eq 2"
check "model mode runs" sh -c "
  '$P2P' --mode model --min 64K --max 256K --rounds 1 --csv >'$WORK/model.csv' &&
  test \$(grep -c '^model,0,' '$WORK/model.csv') -eq 2"
tap_done
