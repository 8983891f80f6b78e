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
  AM_CONDITIONAL([CRUX_HAVE_CUDA], [test -n "$NVCC"])
  AC_SUBST([NVCC])
  AC_SUBST([CUDA_HOME])
  AC_SUBST([CUDA_CPPFLAGS])
])
