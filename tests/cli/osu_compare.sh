#!/usr/bin/env bash
# bench/osu.sh compare without MPI: a fake mpirun first on the PATH prints
# osu_allreduce's output with times set per selection and launch, so the
# medians, the ratios and their ranges over launches are known exactly; the
# options each selection and rank count launch with; the selection that runs
# first rotates; -o keeps every launch's times (and the cache-line round trip before it); a failing launch exits 1 naming it; bad options exit 2
# with one line.
. "$(dirname "$0")/tap.sh"
OSU_SH=$(cd "$(dirname "$0")/../../bench" && pwd)/osu.sh

# a suite's build tree (7.x layout): only the benchmark's presence matters
mkdir -p "$WORK/osu/c/mpi/collective/blocking" "$WORK/bin"
printf '#!/bin/sh\nexit 0\n' >"$WORK/osu/c/mpi/collective/blocking/osu_allreduce"
chmod +x "$WORK/osu/c/mpi/collective/blocking/osu_allreduce"

# The fake mpirun: logs its arguments, then prints OSU's rows for 8, 16, 32
# bytes.  crux takes 2 us; tuned FAKE_TUNED's Nth value on its Nth launch;
# han 3 us.  FAKE_FAIL=SEL makes that selection's launch fail.
cat >"$WORK/bin/mpirun" <<'EOF'
#!/usr/bin/env bash
echo "$*" >>"$FAKE_DIR/calls"
case "$*" in
  *coll_han_priority*) sel=han ;;
  *"coll ^crux"*) sel=tuned ;;
  *"coll crux"*) sel=crux ;;
  *) echo "fake mpirun: no selection in $*" >&2; exit 3 ;;
esac
[ "${FAKE_FAIL:-}" = "$sel" ] && { echo "mpirun: a rank died" >&2; exit 1; }
n=$(($(cat "$FAKE_DIR/n.$sel" 2>/dev/null || echo 0) + 1))
echo "$n" >"$FAKE_DIR/n.$sel"
case $sel in
  crux) t=2.00 ;;
  han) t=3.00 ;;
  tuned) set -- $FAKE_TUNED; t=${!n} ;;
esac
printf '\n# OSU MPI Allreduce Latency Test v7.4\n# Datatype: MPI_FLOAT.\n# Size       Avg Latency(us)\n'
for b in 8 16 32; do printf '%-10d%18s\n' "$b" "$t"; done
EOF
chmod +x "$WORK/bin/mpirun"
# osu.sh's temporary directory goes here, to be seen removed
mkdir "$WORK/tmp"
export PATH="$WORK/bin:$PATH" FAKE_DIR=$WORK TMPDIR=$WORK/tmp

fresh() { rm -f "$WORK"/n.* "$WORK/calls"; }

fresh
check "three launches, crux and tuned, 2 and 4 ranks: exit 0" sh -c "
  FAKE_TUNED='4.00 6.00 1.00 4.00 6.00 1.00' '$OSU_SH' compare -k 3 -m 8:32 -o '$WORK/raw.csv' '$WORK/osu' 2 4 >'$WORK/out'"
# tuned/crux per launch 2, 3, 0.5: median 2 [0.50 - 3.00]; tuned's median 4 us
check "a row per size: medians over launches, ratio 2.00x [0.50 - 3.00]" sh -c "
  test \$(grep -c '^ *8 *2.00 *4.00 *2.00x *\[0.50 - 3.00\]$' '$WORK/out') -eq 2 &&
  test \$(grep -c '^ *32 *2.00 *4.00 *2.00x *\[0.50 - 3.00\]$' '$WORK/out') -eq 2"
check "the header says ranks, binding and launches" sh -c "
  grep -q '^# osu_allreduce -T mpi_float, 2 ranks bound to a core each, 3 launches' '$WORK/out' &&
  grep -q '^# osu_allreduce -T mpi_float, 4 ranks unbound, oversubscribed, 3 launches' '$WORK/out'"
check "12 launches: 2 ranks bound to cores, 4 unbound and oversubscribed, float, the sizes asked" sh -c "
  test \$(wc -l <'$WORK/calls') -eq 12 &&
  test \$(grep -c '^-np 2 --bind-to core --mca coll .*/osu_allreduce -T mpi_float -m 8:32$' '$WORK/calls') -eq 6 &&
  test \$(grep -c '^-np 4 --bind-to none --oversubscribe --mca coll .*/osu_allreduce -T mpi_float -m 8:32$' '$WORK/calls') -eq 6"
check "-o: every launch's time, a row each" sh -c "
  test \$(wc -l <'$WORK/raw.csv') -eq 37 && head -1 '$WORK/raw.csv' | grep -qx 'ranks,launch,selection,bytes,us,rtt_ns' &&
  grep -qx '2,1,crux,8,2.00,-' '$WORK/raw.csv' && grep -qx '4,3,tuned,32,1.00,-' '$WORK/raw.csv'"
check "the first to run rotates: crux, tuned, crux" sh -c "
  head -6 '$WORK/calls' | awk '{ print \$7 }' | tr '\n' ' ' | grep -qx 'crux ^crux ^crux crux crux ^crux '"

printf '#!/bin/sh\necho rtt_ns 77\n' >"$WORK/bin/rtt"
chmod +x "$WORK/bin/rtt"
fresh
check "CRUX_RTT: each launch's round trip in the CSV" sh -c "
  CRUX_RTT='$WORK/bin/rtt' FAKE_TUNED='4.00' '$OSU_SH' compare -m 8:32 -o '$WORK/raw.csv' '$WORK/osu' 2 >/dev/null &&
  test \$(grep -c ',77\$' '$WORK/raw.csv') -eq 6"
fresh
check "han: coll/han's priority raised, without crux; its column and ratio" sh -c "
  FAKE_TUNED='4.00' '$OSU_SH' compare -s crux,tuned,han -m 8:32 '$WORK/osu' 2 >'$WORK/out' &&
  grep -q -- '--mca coll ^crux --mca coll_han_priority 100 ' '$WORK/calls' &&
  grep -q '^ *16 *2.00 *4.00 *3.00 *2.00x *\[2.00 - 2.00\] *1.50x *\[1.50 - 1.50\]$' '$WORK/out'"

fresh
check "a launch that fails: exit 1, naming launch, selection and ranks" sh -c "
  FAKE_FAIL=tuned '$OSU_SH' compare -k 2 -m 8:32 '$WORK/osu' 2 >'$WORK/out' 2>'$WORK/err'
  [ \$? -eq 1 ] && grep -q 'launch 1, tuned, 2 ranks failed' '$WORK/err' && grep -q 'a rank died' '$WORK/err'"
check "its temporary directories are removed" sh -c "[ -z \"\$(ls -A '$WORK/tmp')\" ]"

check "an unknown selection: exit 2, one line" sh -c "
  '$OSU_SH' compare -s crux,nccl '$WORK/osu' 2>'$WORK/err'; [ \$? -eq 2 ] &&
  [ \$(wc -l <'$WORK/err') -eq 1 ] && grep -q \"unknown selection 'nccl'\" '$WORK/err'"
check "-k 0: exit 2" exits 2 "$OSU_SH" compare -k 0 "$WORK/osu"
check "-m with MIN above MAX: exit 2" exits 2 "$OSU_SH" compare -m 64:8 "$WORK/osu"
check "-m not numbers: exit 2" exits 2 "$OSU_SH" compare -m 8:4M "$WORK/osu"
check "one rank: exit 2" exits 2 "$OSU_SH" compare "$WORK/osu" 1
check "no osu_allreduce under the directory: exit 2" exits 2 "$OSU_SH" compare "$WORK/bin"
check "no mode: exit 2" exits 2 "$OSU_SH"
tap_done
