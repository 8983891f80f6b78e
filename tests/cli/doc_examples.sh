#!/bin/bash
# Every example in README.md and docs/ works as written (docs/testing.md).
# Each fenced block is one TAP line naming its file and line:
#   ```sh, ```console   run with bash -e, as a reader types them into one
#               shell: the blocks of a page in order, each starting where the
#               one before left (directory and exported variables).  In a
#               block with "$ " prompts only the prompted lines (and their
#               continuations) are commands, the rest is output.  A block
#               whose first line is "# needs REASON" (a GPU, root, a
#               cluster, minutes) is not run, only parsed (bash -n).
#   ```json     parsed: one JSON document, or several in a row
#   ```text, ```c, ...   illustrations, not checked; a fence without a
#               language is refused (say what the block is)
# The shell is a new user's: a clean environment (HOME a scratch directory,
# PATH the system's).  README.md's blocks run in a fresh copy of the source
# tree: its build installs everything into $HOME/crux.  docs/usage/install.md
# starts from the same clean environment; every other page starts as a reader
# who followed both, with $HOME/crux/bin on PATH and the component found
# there, in a scratch directory that looks like the top of that copy.
# Each page's relative links ([text](path)) must name files that exist, and
# each file under examples/ must be named by some block (a .json one must
# parse).  Arguments, when given, replace the list of pages (the test of
# this script uses that); without README.md among them, $HOME/crux is
# installed from the build tree (CRUX_BUILDDIR) instead.
set -u
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${CRUX_BUILDDIR:-$SRC/build}
BLOCK_TIMEOUT=${CRUX_DOC_TIMEOUT:-600}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/crux-doc-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
HOME_DIR=$WORK/home
PREFIX=$HOME_DIR/crux
mkdir -p "$HOME_DIR" "$WORK/tmp"
chmod 755 "$WORK" "$HOME_DIR"

if [ $# -gt 0 ]; then
  pages=("$@")
else
  pages=("$SRC/README.md")
  while IFS= read -r f; do pages+=("$f"); done < <(find "$SRC/docs" -name '*.md' | LC_ALL=C sort)
fi

n=0
failed=0
tap() { # tap ok|"not ok" DESCRIPTION [DETAILS-FILE]
  n=$((n + 1))
  echo "$1 $n - $2"
  [ "$1" = ok ] || failed=$((failed + 1))
  if [ "$1" != ok ] && [ -n "${3:-}" ]; then sed 's/^/# /' "$3" | tail -n 40; fi
  return 0
}

# The environment of a new user's shell, as "export" lines: HOME, the system
# PATH, a private TMPDIR and arbitration table (other tests run at the same
# time), make's parallelism, and, for root, Open MPI's consent to run.
clean_env() {
  local v
  for v in "HOME=$HOME_DIR" "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    "TMPDIR=$WORK/tmp" "CRUX_ARB_PATH=$WORK/tmp/crux-arb" "LANG=C.UTF-8" "SHELL=/bin/bash" \
    "USER=$(id -un)" "LOGNAME=$(id -un)" "MAKEFLAGS=-j$(nproc 2>/dev/null || echo 2)"; do
    printf 'export %s=%q\n' "${v%%=*}" "${v#*=}"
  done
  if [ "$(id -u)" -eq 0 ]; then
    echo "export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
  fi
}

# What docs/usage/install.md tells a reader to set after the build.
installed_env() {
  clean_env
  printf 'export PATH=%q:"$PATH"\n' "$PREFIX/bin"
  printf 'export OMPI_MCA_mca_base_component_path=%q\n' "$PREFIX/lib/openmpi:SYS_DEFAULT"
}

# The tree the pages' commands see: a fresh copy of the sources (what git
# tracks and what it would add; all of it without git), once, for README.md.
TREE=$SRC
fresh_copy() {
  local dst=$WORK/src
  mkdir -p "$dst"
  if git -C "$SRC" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$SRC" && git ls-files -z --cached --others --exclude-standard |
      while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
      tar --null -T - -cf - | tar -C "$dst" -xf -)
  else
    (cd "$SRC" && tar --exclude='./build*' --exclude=./autom4te.cache --exclude='./.venv*' -cf - .) |
      tar -C "$dst" -xf -
  fi
  TREE=$dst
}

# Without README.md's build, $HOME/crux from the build tree, once.
ensure_prefix() {
  [ -x "$PREFIX/bin/crux-sched" ] && return 0
  # the component's directories too: the build may have been configured
  # for Open MPI's own (scripts/demo)
  make -s -C "$BUILD" install prefix="$PREFIX" ompicompdir="$PREFIX/lib/openmpi" \
    cruxhelpdir="$PREFIX/lib/openmpi" >"$WORK/install.log" 2>&1 ||
    { echo "make -C $BUILD install prefix=$PREFIX failed:"; tail -20 "$WORK/install.log"; return 1; }
}

# Split PAGE into $WORK/blocks/NNNN files: a first line "LINE LANG", then the
# block's text with the fence's indentation removed.
split_blocks() {
  rm -rf "$WORK/blocks"
  mkdir "$WORK/blocks"
  awk -v dir="$WORK/blocks" '
    function out() { return sprintf("%s/%04d", dir, nb) }
    !inb && /^[ \t]*```/ {
      match($0, /^[ \t]*/); ind = RLENGTH
      lang = substr($0, ind + 4); sub(/[ \t].*$/, "", lang)
      inb = 1; nb++; print NR " " (lang == "" ? "-" : lang) > out(); next
    }
    inb && /^[ \t]*```[ \t]*$/ { inb = 0; close(out()); next }
    inb { s = $0; if (substr(s, 1, ind) ~ /^[ \t]*$/) s = substr(s, ind + 1); print s > out() }
    END { if (inb) { print "unterminated fence" > "/dev/stderr"; exit 1 } }
  ' "$1"
}

# The commands of a block: with "$ " prompts, the prompted lines and the
# lines that continue them (after a trailing backslash); else all of it.
commands_of() {
  if grep -q '^\$ ' "$1"; then
    awk 'c { print; c = /\\$/; next } /^\$ / { sub(/^\$ /, ""); print; c = /\\$/ }' "$1"
  else
    cat "$1"
  fi
}

# the paths under the source tree's examples/ that a block names (not
# another directory's examples/, as an installed share/crux/examples/)
example_paths() {
  grep -o '\(^\|[^/A-Za-z0-9._-]\)examples/[A-Za-z0-9._/-]*' "$1" | sed 's/^[^e]//; s/[.,]*$//' | sort -u
}

missing_examples() { # BLOCK: prints the named example paths that do not exist
  local p
  while IFS= read -r p; do
    [ -e "$SRC/$p" ] || echo "missing: $p"
  done < <(example_paths "$1")
}

json_ok() { # FILE: one JSON document or several in a row (e.g. one a line)
  python3 -c '
import json, sys
text = open(sys.argv[1]).read()
dec, i, n = json.JSONDecoder(), 0, 0
while True:
    while i < len(text) and text[i].isspace():
        i += 1
    if i == len(text):
        break
    try:
        _, i = dec.raw_decode(text, i)
    except ValueError as e:
        sys.exit("%s" % e)
    n += 1
sys.exit(0 if n else "no JSON document")' "$1"
}

# a scratch directory that looks like the top of the tree
scratch_top() {
  local d=$1 e
  mkdir -p "$d"
  for e in "$TREE"/* "$TREE"/.clang-format; do
    [ -e "$e" ] && ln -s "$e" "$d/$(basename "$e")"
  done
}

# Run block BODY in the page's shell (state in STATE: the exports and the
# directory the block before left); on success STATE is what it leaves.
run_block() {
  local state=$1 body=$2 out=$3
  # shellcheck disable=SC2016
  timeout -k 5 "$BLOCK_TIMEOUT" env -i /bin/bash -e -c '
    . "$1"
    . "$2"
    { export -p | grep -v -E "^declare -x (OLDPWD|PWD|SHLVL|_)="; printf "cd %q\n" "$PWD"; } >"$1.next"
  ' block "$state" "$body" </dev/null >"$out" 2>&1
  local rc=$?
  [ $rc -eq 0 ] && mv "$state.next" "$state"
  return $rc
}

fix_hint() {
  echo "to fix: make the block work as written (from a fresh build installed with --prefix=\$HOME/crux, in a"
  echo "directory like the top of the source tree), or, if it cannot run here, make its first line"
  echo "\"# needs REASON\" (a GPU, root, a cluster, minutes: docs/testing.md)"
}

for page in "${pages[@]}"; do
  rel=${page#"$SRC"/}
  if ! split_blocks "$page" 2>"$WORK/err"; then
    tap "not ok" "$rel: fenced blocks" "$WORK/err"
    continue
  fi
  # relative links outside code blocks and code spans: the file each names exists
  awk '/^[ \t]*```/ { inb = !inb; next } !inb' "$page" | sed 's/`[^`]*`//g' | grep -o '\]([^)]*)' | sed 's/^](//; s/)$//; s/#.*//; s/ .*//' |
    grep -v -E '^(https?:|mailto:|$)' | sort -u >"$WORK/links"
  if [ -s "$WORK/links" ]; then
    : >"$WORK/err"
    while IFS= read -r l; do
      [ -e "$(dirname "$page")/$l" ] || echo "missing: $l" >>"$WORK/err"
    done <"$WORK/links"
    if [ -s "$WORK/err" ]; then tap "not ok" "$rel: links resolve" "$WORK/err"; else tap ok "$rel: links resolve"; fi
  fi
  # the page's shell: where it starts, and with what
  state="$WORK/state"
  case $rel in
    README.md)
      fresh_copy
      clean_env >"$state"
      printf 'cd %q\n' "$TREE" >>"$state"
      ;;
    *)
      run="$WORK/run/$(echo "$rel" | tr '/' '_')"
      scratch_top "$run"
      if [ "$rel" = docs/usage/install.md ]; then clean_env >"$state"; else installed_env >"$state"; fi
      printf 'cd %q\n' "$run" >>"$state"
      ;;
  esac
  for b in "$WORK"/blocks/*; do
    [ -e "$b" ] || continue
    read -r line lang <"$b"
    body="$WORK/body"
    tail -n +2 "$b" >"$body"
    where="$rel:$line"
    case $lang in
      sh | console)
        commands_of "$body" >"$WORK/cmds"
        missing_examples "$body" >"$WORK/err"
        if [ -s "$WORK/err" ]; then
          tap "not ok" "$where: names examples that exist" "$WORK/err"
        elif reason=$(head -n 1 "$body" | sed -n 's/^# needs \(..*\)$/\1/p') && [ -n "$reason" ]; then
          if bash -n "$WORK/cmds" 2>"$WORK/err"; then
            tap ok "$where: not run (needs $reason), parses"
          else
            { cat "$WORK/err"; echo "of:"; sed 's/^/  /' "$WORK/cmds"; } >"$WORK/why"
            tap "not ok" "$where: not run (needs $reason), parses" "$WORK/why"
          fi
        else
          if [ "$rel" != README.md ] && ! ensure_prefix >"$WORK/err" 2>&1; then
            tap "not ok" "$where: runs" "$WORK/err"
            continue
          fi
          if run_block "$state" "$WORK/cmds" "$WORK/err"; then
            tap ok "$where: runs"
          else
            rc=$?
            { echo "$where: exit status $rc$([ $rc -eq 124 ] && echo ", killed after $BLOCK_TIMEOUT s") of:"
              sed 's/^/  /' "$WORK/cmds"; echo "output (the end):"; tail -n 25 "$WORK/err"; fix_hint; } >"$WORK/why"
            tap "not ok" "$where: runs" "$WORK/why"
          fi
        fi
        ;;
      json)
        if json_ok "$body" 2>"$WORK/err"; then tap ok "$where: json parses"; else
          tap "not ok" "$where: json parses" "$WORK/err"
        fi
        ;;
      -)
        echo "a fence without a language: write sh or console (commands: run), text (output, a file), json, c ..." >"$WORK/err"
        tap "not ok" "$where: says what it is" "$WORK/err"
        ;;
    esac
    cat "$body" >>"$WORK/all-blocks"
  done
  if [ "$rel" = README.md ] && [ ! -x "$PREFIX/bin/crux-sched" ]; then
    echo "README.md's build installed nothing into \$HOME/crux ($PREFIX): the other pages cannot run" >"$WORK/err"
    tap "not ok" "README.md: the build installs into \$HOME/crux" "$WORK/err"
  fi
done

# every shipped example is shown somewhere, and a JSON one parses
if [ $# -eq 0 ]; then
  touch "$WORK/all-blocks"
  while IFS= read -r f; do
    rel=${f#"$SRC"/}
    named=0 p=$rel
    while [ "$p" != examples ] && [ "$p" != . ]; do
      grep -qF "$p" "$WORK/all-blocks" && named=1
      p=$(dirname "$p")
    done
    if [ $named -eq 0 ]; then
      echo "no block in README.md or docs/ names $rel" >"$WORK/err"
      tap "not ok" "$rel: used by an example" "$WORK/err"
    elif [ "${f%.json}" != "$f" ] && ! python3 -m json.tool "$f" >"$WORK/err" 2>&1; then
      tap "not ok" "$rel: used by an example, parses" "$WORK/err"
    else
      tap ok "$rel: used by an example"
    fi
  done < <(find "$SRC/examples" -type f | LC_ALL=C sort)
fi

echo "1..$n"
[ "$failed" -eq 0 ]
