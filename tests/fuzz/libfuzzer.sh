#!/usr/bin/env bash
# Each libFuzzer harness for CRUX_FUZZ_SECONDS seconds (default 20) with a
# fixed seed, starting from its corpus in the tree (new inputs go to a
# scratch directory, never into the tree).  One TAP line per harness with the
# executions done; a crash, leak, timeout or sanitizer report fails it and
# leaves the input as crash-<parser>-* in this directory.  CRUX_FUZZ_SKIP:
# parsers (e.g. "topo_xml") left out, for a quick run of the others.
secs=${CRUX_FUZZ_SECONDS:-20}
corpus=${CRUX_FUZZ_CORPUS:?CRUX_FUZZ_CORPUS not set (run through make check)}
export LSAN_OPTIONS="suppressions=$(cd "$(dirname "$0")" && pwd)/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=0
for parser in prio profile cluster jobs lingjun topo_xml calib; do
  n=$((n + 1))
  mkdir "$work/$parser"
  case " ${CRUX_FUZZ_SKIP:-} " in
    *" $parser "*) echo "ok $n - fuzz_$parser # SKIP CRUX_FUZZ_SKIP"; continue ;;
  esac
  ./fuzz_$parser -seed=1 -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -close_fd_mask=3 \
    -print_final_stats=1 -artifact_prefix="$PWD/crash-$parser-" "$work/$parser" "$corpus/$parser" \
    >"$work/$parser.log" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$parser.log")
  if [ $rc -eq 0 ]; then
    echo "ok $n - fuzz_$parser: ${runs:-?} executions in $secs s, no crash"
  else
    echo "not ok $n - fuzz_$parser: status $rc after ${runs:-?} executions (input: crash-$parser-*)"
    grep -v "^#[0-9]" "$work/$parser.log" | tail -40 | sed 's/^/# /'
  fi
done
echo "1..$n"
