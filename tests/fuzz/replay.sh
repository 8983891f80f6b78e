#!/usr/bin/env bash
# Every parser harness (tests/fuzz/fuzz_*.c) replays its corpus,
# tests/fuzz/corpus/<parser>/: the seeds, and every input that once crashed
# a parser (fixed since).  One TAP line per parser; a crash, an abort (a
# harness's consistency check) or a sanitizer report fails it.
builddir=${CRUX_BUILDDIR:?CRUX_BUILDDIR not set (run through make check)}
corpus=$(cd "$(dirname "$0")" && pwd)/corpus
export LSAN_OPTIONS="suppressions=$(cd "$(dirname "$0")" && pwd)/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
n=0
for parser in prio profile cluster jobs lingjun topo_xml calib; do
  n=$((n + 1))
  "$builddir/tests/fuzz/replay_$parser" "$corpus/$parser" >"$out" 2>&1
  rc=$?
  count=$(sed -n 's/^\([0-9]*\) inputs replayed$/\1/p' "$out")
  if [ $rc -eq 0 ] && [ "${count:-0}" -gt 0 ] && ! grep -q "Sanitizer\|runtime error:" "$out"; then
    echo "ok $n - $parser: $count inputs of the corpus replayed, no crash"
  else
    echo "not ok $n - $parser: replay failed (status $rc)"
    tail -30 "$out" | sed 's/^/# /'
  fi
done
echo "1..$n"
