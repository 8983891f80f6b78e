#!/bin/sh
# Where `make install` puts crux (docs/usage/install.md): with --prefix alone
# everything goes under the prefix, the component included, whoever runs
# configure (root, and an unprivileged user when the test runs as root);
# Open MPI's own component directory only with
# --with-ompi-component-dir=system; a relative directory is refused.  And a
# staged install of the build (DESTDIR) is what a job loads once the
# component path names it, as install.md says.
. "$(dirname "$0")/tap.sh"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${CRUX_BUILDDIR:-$SRC/build}
chmod 755 "$WORK"

# configure_in NAME ARGS...: configure in $WORK/NAME (one cache for all)
configure_in() {
  local name=$1
  shift
  mkdir -p "$WORK/$name"
  (cd "$WORK/$name" && "$SRC/configure" --cache-file="$WORK/config.cache" "$@") >"$WORK/$name.out" 2>&1
}
# shown NAME: the component directory configure's summary names
shown() { sed -n 's/^ *component dir: *//p' "$WORK/$1.out"; }
names() { # NAME WANT: the summary names WANT
  [ "$(shown "$1")" = "$2" ] || { echo "component dir: '$(shown "$1")', wanted '$2'"; tail -5 "$WORK/$1.out"; return 1; }
}

if configure_in root --prefix="$WORK/p"; then
  check "configure --prefix as $(id -un): the component in PREFIX/lib/openmpi" names root "$WORK/p/lib/openmpi"
else
  check "configure --prefix as $(id -un)" sh -c "tail -20 '$WORK/root.out'; false"
fi

# the same as an unprivileged user, when this test may become one
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1 &&
  setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups test -r "$SRC/configure"; then
  mkdir -p "$WORK/nobody/home"
  cp "$WORK/config.cache" "$WORK/nobody/config.cache"
  chown -R nobody "$WORK/nobody"
  (cd "$WORK/nobody" && HOME=$WORK/nobody/home setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups \
    "$SRC/configure" --cache-file="$WORK/nobody/config.cache" --prefix="$WORK/q") >"$WORK/user.out" 2>&1
  check "configure --prefix as nobody: the component in PREFIX/lib/openmpi" names user "$WORK/q/lib/openmpi"
else
  tap_n=$((tap_n + 1))
  echo "ok $tap_n # SKIP configure as an unprivileged user: not root, or no setpriv, or nobody cannot read the sources"
fi

pkglibdir=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
configure_in system --prefix="$WORK/s" --with-ompi-component-dir=system
check "--with-ompi-component-dir=system: Open MPI's own directory ($pkglibdir)" names system "$pkglibdir"
check "--with-ompi-component-dir=relative/dir: refused" sh -c "
  ! (cd '$WORK' && '$SRC/configure' --cache-file='$WORK/config.cache' --with-ompi-component-dir=relative/dir) >'$WORK/rel.out' 2>&1 &&
  grep -q 'relative/dir: give an absolute path or \"system\"' '$WORK/rel.out'"

# The build's own install, staged under DESTDIR: every file under the
# prefix, and the component found there through the component path.
prefix=$(sed -n 's/^prefix = //p' "$BUILD/Makefile")
compdir=$(sed -n 's/^ompicompdir = //p' "$BUILD/ompi_coll/Makefile")
if [ "$compdir" != '${libdir}/openmpi' ]; then
  tap_n=$((tap_n + 1))
  echo "ok $tap_n # SKIP the build's install: $BUILD was configured for another component directory ($compdir)"
else
  make -s -C "$BUILD" install DESTDIR="$WORK/d" >"$WORK/install.out" 2>&1
  check "make install DESTDIR: every file under the prefix" sh -c "
    test -s '$WORK/d$prefix/lib/openmpi/mca_coll_crux.so' && test -x '$WORK/d$prefix/bin/crux-sched' &&
    test -z \"\$(cd '$WORK/d' && find . -type f | grep -v '^.$prefix/')\""
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  check "the component path install.md gives: ompi_info lists crux, a job loads that copy" sh -c "
    export OMPI_MCA_mca_base_component_path='$WORK/d$prefix/lib/openmpi:SYS_DEFAULT'
    ompi_info | grep -q 'MCA coll: crux' &&
    timeout 120 mpirun -np 1 --mca coll crux --mca coll_crux_verbose 1 '$WORK/d$prefix/bin/crux-bench-allreduce' \
      -b 8 -e 8 -r 1 2>&1 | grep -q 'coll:crux: loaded $WORK/d$prefix/lib/openmpi/mca_coll_crux.so'"
fi
tap_done
