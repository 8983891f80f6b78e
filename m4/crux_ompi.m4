# CRUX_CHECK_OMPI: find Open MPI's compiler wrapper, its internal (devel)
# headers, and the directory mpirun loads components from.
AC_DEFUN([CRUX_CHECK_OMPI], [
  AC_ARG_WITH([mpicc],
    [AS_HELP_STRING([--with-mpicc=PATH], [Open MPI compiler wrapper (default: mpicc on PATH)])],
    [MPICC=$withval], [AC_PATH_PROG([MPICC], [mpicc])])
  AS_IF([test -z "$MPICC" || ! test -x "$MPICC"],
    [AC_MSG_ERROR([mpicc not found.  Install Open MPI with: apt-get install libopenmpi-dev openmpi-bin])])
  AC_PATH_PROG([OMPI_INFO], [ompi_info], [], [`AS_DIRNAME(["$MPICC"])`$PATH_SEPARATOR$PATH])
  AC_PATH_PROG([MPIRUN], [mpirun], [], [`AS_DIRNAME(["$MPICC"])`$PATH_SEPARATOR$PATH])
  AS_IF([test -z "$OMPI_INFO" || test -z "$MPIRUN"],
    [AC_MSG_ERROR([ompi_info/mpirun not found.  Install them with: apt-get install openmpi-bin])])

  OMPI_VERSION=`$OMPI_INFO --parsable 2>/dev/null | $SED -n 's/^ompi:version:full://p'`
  AS_IF([test -z "$OMPI_VERSION"],
    [AC_MSG_ERROR([$MPICC is not Open MPI (ompi_info gave no version); crux is an Open MPI component])])

  crux_ompi_incdirs=`$MPICC --showme:incdirs`
  OMPI_CPPFLAGS=""
  crux_ompi_devel=""
  for d in $crux_ompi_incdirs; do
    OMPI_CPPFLAGS="$OMPI_CPPFLAGS -I$d"
    AS_IF([test -f "$d/openmpi/ompi_config.h"], [crux_ompi_devel="$d/openmpi"])
    AS_IF([test -f "$d/ompi_config.h"], [crux_ompi_devel="$d"])
  done
  AC_MSG_CHECKING([for Open MPI internal headers (ompi_config.h)])
  AS_IF([test -z "$crux_ompi_devel" || ! test -f "$crux_ompi_devel/ompi/mca/coll/coll.h"],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([Open MPI's development headers (ompi_config.h, ompi/mca/coll/coll.h) not found.  Install them with: apt-get install libopenmpi-dev])])
  AC_MSG_RESULT([$crux_ompi_devel])
  OMPI_CPPFLAGS="-I$crux_ompi_devel $OMPI_CPPFLAGS"
  OMPI_LDFLAGS=""
  for d in `$MPICC --showme:libdirs`; do OMPI_LDFLAGS="$OMPI_LDFLAGS -L$d"; done
  OMPI_LIBS=""
  for l in `$MPICC --showme:libs`; do OMPI_LIBS="$OMPI_LIBS -l$l"; done

  crux_ompi_path() {
    $OMPI_INFO --path "$[1]" --parsable 2>/dev/null | $SED -n "s/^path:$[1]://p"
  }
  OMPI_PKGLIBDIR=`crux_ompi_path pkglibdir`
  OMPI_PKGDATADIR=`crux_ompi_path pkgdatadir`

  # Under the prefix unless asked: a system directory is loaded by every
  # Open MPI job on the host, so only --with-ompi-component-dir=system puts
  # crux there (docs/usage/install.md), whoever runs configure.
  AC_ARG_WITH([ompi-component-dir],
    [AS_HELP_STRING([--with-ompi-component-dir=DIR|system],
      [where make install puts mca_coll_crux.so (default: LIBDIR/openmpi, under the prefix; system: Open MPI's own component directory, ompi_info --path pkglibdir, where every job on the host finds it)])],
    [OMPI_COMPONENT_DIR=$withval], [OMPI_COMPONENT_DIR='${libdir}/openmpi'])
  case $OMPI_COMPONENT_DIR in
    system)
      AS_IF([test -z "$OMPI_PKGLIBDIR"],
            [AC_MSG_ERROR([--with-ompi-component-dir=system: ompi_info names no pkglibdir])])
      OMPI_COMPONENT_DIR=$OMPI_PKGLIBDIR ;;
    /* | '${'*) ;;
    *) AC_MSG_ERROR([--with-ompi-component-dir=$OMPI_COMPONENT_DIR: give an absolute path or "system"]) ;;
  esac
  # The help file goes where opal_show_help looks first when crux goes into
  # Open MPI's own directory and that is writable; the component also adds
  # the directory it was loaded from.
  AS_IF([test "x$OMPI_COMPONENT_DIR" = "x$OMPI_PKGLIBDIR" && test -w "$OMPI_PKGDATADIR"],
        [OMPI_HELP_DIR=$OMPI_PKGDATADIR], [OMPI_HELP_DIR=$OMPI_COMPONENT_DIR])
  # the directories as configure's summary shows them, ${libdir} expanded
  crux_p=$prefix crux_ep=$exec_prefix
  test "x$crux_p" = xNONE && crux_p=$ac_default_prefix
  test "x$crux_ep" = xNONE && crux_ep=$crux_p
  crux_expand() {
    prefix=$crux_p exec_prefix=$crux_ep
    eval "eval echo \"$[1]\""
  }
  OMPI_COMPONENT_DIR_SHOWN=`crux_expand "$OMPI_COMPONENT_DIR"`
  OMPI_HELP_DIR_SHOWN=`crux_expand "$OMPI_HELP_DIR"`

  AC_SUBST([MPICC])
  AC_SUBST([MPIRUN])
  AC_SUBST([OMPI_INFO])
  AC_SUBST([OMPI_VERSION])
  AC_SUBST([OMPI_CPPFLAGS])
  AC_SUBST([OMPI_LDFLAGS])
  AC_SUBST([OMPI_LIBS])
  AC_SUBST([OMPI_PKGLIBDIR])
  AC_SUBST([OMPI_COMPONENT_DIR])
  AC_SUBST([OMPI_HELP_DIR])
])
