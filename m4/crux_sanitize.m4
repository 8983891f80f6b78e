# Hardening builds (see README.md, Hardening).  Both options add to CFLAGS
# and LDFLAGS after the compiler checks, so every library, the component,
# the tools and the tests are built alike.
#
# --enable-sanitizers=LIST: -fsanitize=LIST (e.g. address,undefined or
#   thread), undefined behaviour fatal; the tests read CRUX_SANITIZERS to set
#   the run-time options (tests/mpi/sanitizers.sh).
# --enable-fuzzing: clang's libFuzzer harnesses in tests/fuzz, with
#   AddressSanitizer, UndefinedBehaviorSanitizer and coverage everywhere.
AC_DEFUN([CRUX_CHECK_SANITIZERS], [
  AC_ARG_ENABLE([sanitizers],
    [AS_HELP_STRING([--enable-sanitizers=LIST],
      [build with -fsanitize=LIST, e.g. address,undefined or thread (default: no)])],
    [], [enable_sanitizers=no])
  AS_CASE([$enable_sanitizers], [yes], [enable_sanitizers=address,undefined], [""], [enable_sanitizers=no])
  CRUX_SANITIZERS=""
  AS_IF([test "x$enable_sanitizers" != xno], [
    crux_san="-fsanitize=$enable_sanitizers -fno-omit-frame-pointer"
    AS_CASE([$enable_sanitizers], [*undefined*], [crux_san="$crux_san -fno-sanitize-recover=undefined"])
    CRUX_TRY_FLAGS([$crux_san], [-fsanitize=$enable_sanitizers],
      [AC_MSG_ERROR([$CC cannot build with -fsanitize=$enable_sanitizers (gcc needs libasan8, libubsan1 or libtsan2)])])
    CRUX_SANITIZERS=$enable_sanitizers
  ])
  AC_SUBST([CRUX_SANITIZERS])

  AC_ARG_ENABLE([fuzzing],
    [AS_HELP_STRING([--enable-fuzzing],
      [build the libFuzzer harnesses of tests/fuzz (needs clang, e.g. CC=clang-14)])],
    [], [enable_fuzzing=no])
  AS_IF([test "x$enable_fuzzing" = xyes], [
    CRUX_TRY_FLAGS([-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer],
      [-fsanitize=address,undefined],
      [AC_MSG_ERROR([--enable-fuzzing needs clang with libFuzzer (CC=clang-14; Debian: clang-14, libclang-rt-14-dev)])])
  ])
  AM_CONDITIONAL([CRUX_FUZZING], [test "x$enable_fuzzing" = xyes])
])

# CRUX_TRY_FLAGS(CFLAGS, LDFLAGS, IF-NOT): add them when a program links with them.
AC_DEFUN([CRUX_TRY_FLAGS], [
  crux_save_CFLAGS=$CFLAGS crux_save_LDFLAGS=$LDFLAGS
  CFLAGS="$CFLAGS $1" LDFLAGS="$LDFLAGS $2"
  AC_MSG_CHECKING([whether $CC builds with $1])
  AC_LINK_IFELSE([AC_LANG_PROGRAM([], [])], [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no]); CFLAGS=$crux_save_CFLAGS LDFLAGS=$crux_save_LDFLAGS; $3])
])
