# Dependency checks for crux.  Each missing required dependency stops
# configure with the Debian package that provides it.

# CRUX_REQUIRE_PKG(VAR, MODULES, DEBIAN-PACKAGE)
AC_DEFUN([CRUX_REQUIRE_PKG], [
  PKG_CHECK_MODULES([$1], [$2], [],
    [AC_MSG_ERROR([$2 not found (pkg-config).  Install it with: apt-get install $3])])
])

AC_DEFUN([CRUX_CHECK_UCX], [
  CRUX_REQUIRE_PKG([UCX], [ucx-uct ucx-ucs], [libucx-dev])
  dnl UCP (ucx.pc: -lucp and what it needs): libcrux_coll's UCX channel
  CRUX_REQUIRE_PKG([UCP], [ucx], [libucx-dev])
  UCX_VERSION=`$PKG_CONFIG --modversion ucx-uct`
  AC_SUBST([UCX_VERSION])
])

AC_DEFUN([CRUX_CHECK_HWLOC], [
  CRUX_REQUIRE_PKG([HWLOC], [hwloc >= 2.1], [libhwloc-dev])
  HWLOC_VERSION=`$PKG_CONFIG --modversion hwloc`
  AC_SUBST([HWLOC_VERSION])
])

AC_DEFUN([CRUX_CHECK_CHECK], [
  CRUX_REQUIRE_PKG([CHECK], [check >= 0.11], [check])
])

AC_DEFUN([CRUX_CHECK_JSONC], [
  CRUX_REQUIRE_PKG([JSONC], [json-c], [libjson-c-dev])
])

# The pthread flags: gcc and clang on Linux both take -pthread.
AC_DEFUN([AX_PTHREAD_SIMPLE], [
  PTHREAD_CFLAGS=-pthread
  PTHREAD_LIBS=-pthread
  AC_SUBST([PTHREAD_CFLAGS])
  AC_SUBST([PTHREAD_LIBS])
])
