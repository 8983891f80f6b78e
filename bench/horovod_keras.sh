#!/usr/bin/env bash
# Real Horovod + TensorFlow (CPU) with crux: a small Keras training
# (bench/horovod_keras.py) under mpirun, with crux alone (--mca coll crux) and
# with Open MPI's default (--mca coll ^crux), alternating, K runs each; the
# median samples per second of each and the ratio.  Every run must end with
# bit-identical weights on every rank and a lower loss; the crux runs must
# show (coll_crux_verbose 2) crux's own Allreduce taking Horovod's fused
# gradient.
#
#   bench/horovod_keras.sh [NP [K [EPOCHS]]]     (defaults 2, 3, 3)
#
# Needs downloads, so it is not part of ./scripts/test: the first run makes a
# virtual environment (CRUX_HOROVOD_VENV, default BUILD/horovod-venv) with
# tensorflow-cpu 2.12.1 and horovod 0.28.1 built against Debian's Open MPI
# (HOROVOD_WITH_MPI, no Gloo), from PyPI; about 5 minutes on 2 cores.
set -u -o pipefail
. "$(dirname "$0")/../scripts/common.sh"
np=${1:-2} runs=${2:-3} epochs=${3:-3}
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
bind=(--bind-to none)
[ "$np" -le "$(nproc)" ] && bind=(--bind-to core)
failed=0
for i in $(seq "$runs"); do
  for variant in crux default; do
    if [ $variant = crux ]; then coll=(--mca coll crux --mca coll_crux_verbose 2); else coll=(--mca coll ^crux); fi
    mpirun -np "$np" "${bind[@]}" "${coll[@]}" -x TF_CPP_MIN_LOG_LEVEL \
      "$venv/bin/python" "$CRUX_SRC/bench/horovod_keras.py" "$epochs" >"$out/$variant.$i" 2>&1
    rc=$?
    line=$(grep '^{' "$out/$variant.$i")
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
rate() { cat "$out"/$1.* | sed -n 's/.*"samples_per_s": \([0-9.]*\).*/\1/p' | median; }
crux=$(rate crux) default=$(rate default)
echo "samples/s, median of $runs runs of $epochs epochs at $np ranks: crux $crux, default $default," \
  "crux/default $(awk -v a="$crux" -v b="$default" 'BEGIN { printf("%.2fx", (b > 0 ? a / b : 0)) }')"
grep -h 'coll:crux: allreduce on' "$out"/crux.* | sed 's/^\[[^]]*\] //' | sort -u | sed 's/^/crux: /'
exit $failed
