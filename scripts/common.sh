# Shared by scripts/demo and scripts/test: install the Debian packages crux
# needs (only those missing) and build crux out of tree in ./build.
# Sourced, not run.

CRUX_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CRUX_BUILD=${CRUX_BUILD:-$CRUX_SRC/build}
CRUX_JOBS=${CRUX_JOBS:-$(nproc 2>/dev/null || echo 2)}

# The Debian packages, from the one list (scripts/packages.txt, shown in
# docs/usage/install.md): a plain build; the tools the documentation uses;
# the tests (clang-format, mpi4py, dot, gnuplot, a single-host Slurm); the
# hardening steps (sanitizer run-times, valgrind, clang with libFuzzer).
CRUX_DEB_BUILD=$("$CRUX_SRC/scripts/packages" build)
CRUX_DEB_TEST=$("$CRUX_SRC/scripts/packages" run test)
CRUX_DEB_HARDEN=$("$CRUX_SRC/scripts/packages" harden)

crux_log() { printf '== %s\n' "$*" >&2; }

# crux_install_debs PKG...: apt-get install those not yet installed.
crux_install_debs() {
  local missing=() p
  [ $# -gt 0 ] || { crux_log "no packages to check: scripts/packages failed"; return 1; }
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && { crux_log "Debian packages: all present"; return 0; }
  crux_log "installing Debian packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq || return 1
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || return 1
}

# The CUDA 12.9 assembler (ptxas) from PyPI, in a virtual environment of the
# source tree (.venv-cuda12): with it the kernels' fat binary holds machine
# code for sm_70 to sm_120 that drivers from r525 on load, beside the CUDA 13
# toolkit whose own code needs r580 and starts at sm_75.  configure finds it
# there.  Only on machines with the CUDA toolkit; without the network the
# build goes on with the toolkit's code alone.
CRUX_PTXAS12_PKG="nvidia-cuda-nvcc-cu12==12.9.86"
crux_install_ptxas12() {
  local venv=$CRUX_SRC/.venv-cuda12
  [ -f "${CUDA_HOME:-/usr/local/cuda}/include/cuda.h" ] || return 0
  compgen -G "$venv/lib/python3*/site-packages/nvidia/cuda_nvcc/bin/ptxas" >/dev/null && return 0
  crux_log "installing the CUDA 12.9 assembler ($CRUX_PTXAS12_PKG) into $venv"
  { python3 -m venv "$venv" && "$venv/bin/pip" install -q --timeout 20 --retries 1 "$CRUX_PTXAS12_PKG"; } >&2 ||
    crux_log "could not install $CRUX_PTXAS12_PKG: the kernels need driver r580 and sm_75 or later"
  return 0
}

# crux_build [CONFIGURE-ARGS...]: (re)configure when needed, then make.
crux_build() {
  local args="$*"
  (cd "$CRUX_SRC" && { [ -x configure ] && [ configure -nt configure.ac ] || autoreconf -fi >/dev/null 2>&1 ||
      { crux_log "autoreconf failed"; autoreconf -fi; return 1; }; }) || return 1
  crux_install_ptxas12
  mkdir -p "$CRUX_BUILD"
  if [ ! -f "$CRUX_BUILD/config.status" ] || [ "$(cat "$CRUX_BUILD/.configure-args" 2>/dev/null)" != "$args" ]; then
    crux_log "configure $args"
    (cd "$CRUX_BUILD" && "$CRUX_SRC/configure" -q $args) || return 1
    printf '%s' "$args" >"$CRUX_BUILD/.configure-args"
  fi
  crux_log "make -j$CRUX_JOBS"
  make -s -C "$CRUX_BUILD" -j"$CRUX_JOBS" >/dev/null || make -C "$CRUX_BUILD" || return 1
}

# Open MPI refuses to run as root, and more ranks than cores, unless told.
crux_mpirun_env() {
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_rmaps_base_oversubscribe=1
}
