#!/usr/bin/env bash
# Real Horovod + TensorFlow (CPU) with crux: a Keras training
# (bench/horovod_keras.py) under mpirun, with crux alone (--mca coll crux) and
# with Open MPI's default (--mca coll ^crux), alternating, K runs each; the
# median steps and samples per second of each and the ratio, and the time
# each rank spent in MPI_Allreduce by message size (a PMPI layer,
# bench/allreduce_timer.c, preloaded into every run): Horovod's coordinator
# reduces a bit vector of ready tensors every cycle, apart from the fused
# gradients.  Every run must end with bit-identical weights on every rank
# and a lower loss; the crux runs must show (coll_crux_verbose 2) crux's own
# Allreduce taking Horovod's fused gradient.
#
#   bench/horovod_keras.sh [NP [K [EPOCHS [WIDTH [BATCH [STEPS]]]]]]
#       (defaults 2, 3, 3, 1024, 64, all: horovod_keras.py's model)
#   bench/horovod_keras.sh 2 5 1 4096 8 60    communication-heavy: 70 MB of
#       gradient for every 8 samples a rank
#
# Needs downloads, so it is not part of ./scripts/test: the first run makes a
# virtual environment (CRUX_HOROVOD_VENV, default BUILD/horovod-venv) with
# tensorflow-cpu 2.12.1 and horovod 0.28.1 built against Debian's Open MPI
# (HOROVOD_WITH_MPI, no Gloo), from PyPI; about 5 minutes on 2 cores.
set -u -o pipefail
. "$(dirname "$0")/../scripts/common.sh"
np=${1:-2} runs=${2:-3} epochs=${3:-3} width=${4:-1024} batch=${5:-64} steps=${6:-0}
venv=${CRUX_HOROVOD_VENV:-$CRUX_BUILD/horovod-venv}
[ -f "$CRUX_BUILD/stage/mca_coll_crux.so" ] || { echo "$0: build crux first (./scripts/test or ./scripts/demo)" >&2; exit 2; }

if ! "$venv/bin/python" -c 'import horovod.tensorflow' 2>/dev/null; then
  crux_install_debs python3-venv python3-dev cmake g++ libopenmpi-dev openmpi-bin || exit 1
  crux_log "making $venv: tensorflow-cpu 2.12.1, horovod 0.28.1 with MPI (PyPI)"
  /usr/bin/python3 -m venv "$venv" && "$venv/bin/pip" install -q --upgrade pip wheel setuptools &&
    "$venv/bin/pip" install -q tensorflow-cpu==2.12.1 || exit 1
  HOROVOD_WITH_MPI=1 HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITHOUT_PYTORCH=1 HOROVOD_WITHOUT_MXNET=1 \
    HOROVOD_WITHOUT_GLOO=1 MAKEFLAGS=-j"$CRUX_JOBS" \
    "$venv/bin/pip" install -q --no-cache-dir --no-build-isolation horovod==0.28.1 || exit 1
fi

crux_mpirun_env
export OMPI_MCA_mca_base_component_path="$CRUX_BUILD/stage:SYS_DEFAULT" TF_CPP_MIN_LOG_LEVEL=2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mpicc -O2 -shared -fPIC -o "$out/allreduce_timer.so" "$CRUX_SRC/bench/allreduce_timer.c" || exit 1
export LD_PRELOAD=$out/allreduce_timer.so
bind=(--bind-to none)
[ "$np" -le "$(nproc)" ] && bind=(--bind-to core)
failed=0
for i in $(seq "$runs"); do
  for variant in crux default; do
    if [ $variant = crux ]; then coll=(--mca coll crux --mca coll_crux_verbose 2); else coll=(--mca coll ^crux); fi
    mpirun -np "$np" "${bind[@]}" "${coll[@]}" -x TF_CPP_MIN_LOG_LEVEL -x LD_PRELOAD \
      "$venv/bin/python" "$CRUX_SRC/bench/horovod_keras.py" "$epochs" "$width" "$batch" "$steps" \
      >"$out/$variant.$i" 2>&1
    rc=$?
    line=$(grep '^{"ranks' "$out/$variant.$i")
    echo "$variant run $i: ${line:-no result (exit $rc)}"
    if [ $rc -ne 0 ]; then
      failed=1
      tail -20 "$out/$variant.$i" | sed 's/^/#   /'
    fi
    if [ $variant = crux ] && ! grep -q 'coll:crux: allreduce on .*: lanes from' "$out/$variant.$i"; then
      echo "#   crux's own Allreduce did not run"
      failed=1
    fi
  done
done
median() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# field VARIANT KEY: KEY's value in each of VARIANT's runs (rank 0's line)
field() { cat "$out"/$1.* | grep "$3" | sed -n "s/.*\"$2\": \([0-9.]*\).*/\1/p"; }
rate() { field "$1" "$2" '^{"ranks' | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf("%.2fx", (b > 0 ? a / b : 0)) }'; }
for what in steps_per_s samples_per_s; do
  crux=$(rate crux $what) default=$(rate default $what)
  echo "$what, median of $runs runs of $epochs epochs (width $width, batch $batch) at $np ranks:" \
    "crux $crux, default $default, crux/default $(ratio "$crux" "$default")"
done
# Allreduce time by size class, per call and per training step: every
# rank's, medians over the runs
for class in le64B le4KiB le64KiB le1MiB le16MiB gt16MiB; do
  for variant in crux default; do
    calls=$(field $variant ${class}_calls '"allreduce_timer"' | median)
    us=$(field $variant ${class}_us '"allreduce_timer"' | median)
    [ "${calls:-0}" = 0 ] && continue
    echo "MPI_Allreduce $class, $variant: $calls calls a rank, $(awk -v u="$us" -v c="$calls" 'BEGIN { printf("%.1f", u / c) }') us a call"
  done
done
grep -h 'coll:crux: allreduce on' "$out"/crux.* | sed 's/^\[[^]]*\] //' | sort -u | sed 's/^/crux: /'
exit $failed
