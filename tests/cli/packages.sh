#!/bin/sh
# The one package list (scripts/packages.txt): docs/usage/install.md shows
# exactly the table scripts/packages makes of it, the scripts' groups hold
# the packages a plain build and lstopo need, and a malformed list or an
# unknown group is refused with the line named.
. "$(dirname "$0")/tap.sh"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
PKG=$SRC/scripts/packages
DOC=$SRC/docs/usage/install.md

# the table that follows the comment naming scripts/packages
awk '/<!-- the table is scripts\/packages --markdown/ { on = 1; next }
     on && /^\|/ { print; seen = 1; next }
     on && seen { exit }' "$DOC" >"$WORK/shown"
"$PKG" --markdown >"$WORK/made"
same_table() {
  cmp -s "$WORK/made" "$WORK/shown" && return 0
  echo "docs/usage/install.md's package table is not scripts/packages --markdown: paste its output there"
  diff -u "$WORK/made" "$WORK/shown"
  return 1
}
check "install.md shows the list the scripts install" same_table
check "the build group: compiler, autotools, Open MPI, UCX, hwloc, Check, json-c" sh -c "
  b=\" \$('$PKG' build) \"
  for p in gcc make autoconf automake libtool pkg-config libopenmpi-dev openmpi-bin libucx-dev libhwloc-dev check libjson-c-dev; do
    case \$b in *\" \$p \"*) ;; *) echo \"missing \$p\"; exit 1 ;; esac
  done"
check "lstopo's package is in the run group" sh -c "'$PKG' run | grep -qw hwloc-nox"
check "scripts/common.sh installs the groups scripts/packages prints" sh -c "
  cd '$SRC' && bash -c '. scripts/common.sh && [ \"\$CRUX_DEB_BUILD\" = \"\$(scripts/packages build)\" ] &&
    [ \"\$CRUX_DEB_TEST\" = \"\$(scripts/packages run test)\" ] && [ \"\$CRUX_DEB_HARDEN\" = \"\$(scripts/packages harden)\" ]'"
check "an unknown group: exit 2, named" sh -c "
  '$PKG' build extras >/dev/null 2>'$WORK/err'; [ \$? -eq 2 ] && grep -q 'unknown group extras' '$WORK/err'"
printf 'build gcc = =\n' >"$WORK/bad.txt"
check "a line without its purpose: exit 2, file and line named" sh -c "
  CRUX_PACKAGES_LIST='$WORK/bad.txt' '$PKG' build >/dev/null 2>'$WORK/err'; [ \$? -eq 2 ] && grep -q '^$WORK/bad.txt:1: ' '$WORK/err'"
tap_done
