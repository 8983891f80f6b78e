# CRUX_CHECK_CUDA: the CUDA toolkit is optional.  Only its headers and nvcc
# are used at build time; the driver (libcuda.so.1) is loaded at run time so
# every binary runs on a machine without a GPU.
AC_DEFUN([CRUX_CHECK_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@],
      [build the CUDA paths with the toolkit in DIR (default: /usr/local/cuda when present)])],
    [], [with_cuda=check])
  CUDA_HOME=""
  AS_CASE([$with_cuda],
    [no], [],
    [yes|check], [AS_IF([test -f /usr/local/cuda/include/cuda.h], [CUDA_HOME=/usr/local/cuda])],
    [CUDA_HOME=$with_cuda])
  AS_IF([test "x$with_cuda" = xyes && test -z "$CUDA_HOME"],
    [AC_MSG_ERROR([--with-cuda given but no toolkit in /usr/local/cuda; pass --with-cuda=DIR])])
  crux_cuda_summary=no
  AS_IF([test -n "$CUDA_HOME"], [
    AS_IF([test -f "$CUDA_HOME/include/cuda.h" && test -x "$CUDA_HOME/bin/nvcc"], [
        NVCC="$CUDA_HOME/bin/nvcc"
        CUDA_CPPFLAGS="-I$CUDA_HOME/include"
        crux_cuda_summary="yes ($CUDA_HOME)"
        AC_DEFINE([CRUX_HAVE_CUDA], [1], [Build the CUDA paths])
      ], [AC_MSG_ERROR([no CUDA toolkit (include/cuda.h, bin/nvcc) in $CUDA_HOME])])])
  dnl The CUDA 12.9 assembler (scripts/common.sh installs it in the source
  dnl tree's .venv-cuda12): machine code for sm_70 on, loaded by drivers from
  dnl r525 on, where the CUDA 13 toolkit's needs r580 and starts at sm_75.
  AC_ARG_VAR([PTXAS12], [a CUDA 12.x ptxas for the kernels' machine code])
  AS_IF([test -n "$NVCC" && test -z "$PTXAS12"], [
    for p in "$srcdir"/.venv-cuda12/lib/python3*/site-packages/nvidia/cuda_nvcc/bin/ptxas; do
      AS_IF([test -x "$p"], [PTXAS12=$p])
    done])
  AS_IF([test -n "$PTXAS12"], [
    AS_IF(["$PTXAS12" --version 2>/dev/null | grep -q 'release 12\.'], [
        crux_cuda_summary="$crux_cuda_summary, kernels: sm_70-sm_120 by ptxas 12 (driver r525 on)"
      ], [AC_MSG_WARN([$PTXAS12 is not a CUDA 12 ptxas: not used]); PTXAS12=""])])
  AS_IF([test -n "$NVCC" && test -z "$PTXAS12"],
    [crux_cuda_summary="$crux_cuda_summary, kernels: sm_75-sm_120 by nvcc (driver r580 on)"])
  AM_CONDITIONAL([CRUX_HAVE_CUDA], [test -n "$NVCC"])
  AM_CONDITIONAL([CRUX_HAVE_PTXAS12], [test -n "$PTXAS12"])
  AC_SUBST([NVCC])
  AC_SUBST([PTXAS12])
  AC_SUBST([CUDA_HOME])
  AC_SUBST([CUDA_CPPFLAGS])
])
