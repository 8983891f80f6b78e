#!/bin/bash
# Every example in README.md and docs/ works as written.  Each fenced block
# is one TAP line naming its file and line:
#   ```sh       run with bash -e; the blocks of one page run in order, in one
#               scratch directory that looks like the top of the source tree
#               (a symbolic link to each entry), with the build's tools on
#               PATH and the component from the build's stage/ directory
#   ```json     parsed: one JSON document, or several in a row
#   ```console  not run (a GPU, a real cluster, a system install or a long
#               run); the files under examples/ that it names must exist
# Other blocks (```text, ```c, a bare ```) are illustrations, not checked.
# Each page's relative links ([text](path)) must name files that exist.
# Each file under examples/ must be named by some block, and a .json one
# must parse.  Arguments, when given, replace the list of pages (the test
# of this script uses that).  See docs/testing.md.
set -u
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${CRUX_BUILDDIR:-$SRC/build}
BLOCK_TIMEOUT=${CRUX_DOC_TIMEOUT:-120}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/crux-doc-XXXXXX")
trap 'rm -rf "$WORK"' EXIT

export PATH="$BUILD/topo:$BUILD/sched:$BUILD/sim:$BUILD/bench:$PATH"
export OMPI_MCA_mca_base_component_path="$BUILD/stage:SYS_DEFAULT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
# private shared-memory and temporary paths: other tests run at the same time
mkdir -p "$WORK/tmp"
export TMPDIR="$WORK/tmp" CRUX_ARB_PATH="$WORK/tmp/crux-arb"

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
  if [ "$1" != ok ] && [ -n "${3:-}" ]; then sed 's/^/# /' "$3" | tail -n 30; fi
  return 0
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

# the paths under examples/ that a block names
example_paths() {
  grep -o 'examples/[A-Za-z0-9._/-]*' "$1" | sed 's/[.,]*$//' | sort -u
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

# a scratch directory that looks like the top of the source tree
scratch_top() {
  local d=$1 e
  mkdir -p "$d"
  for e in "$SRC"/* "$SRC"/.clang-format; do
    [ -e "$e" ] && ln -s "$e" "$d/$(basename "$e")"
  done
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
  run="$WORK/run/$(echo "$rel" | tr '/' '_')"
  scratch_top "$run"
  for b in "$WORK"/blocks/*; do
    [ -e "$b" ] || continue
    read -r line lang <"$b"
    body="$WORK/body"
    tail -n +2 "$b" >"$body"
    where="$rel:$line"
    case $lang in
      sh)
        missing_examples "$body" >"$WORK/err"
        if [ -s "$WORK/err" ]; then
          tap "not ok" "$where: sh" "$WORK/err"
          continue
        fi
        (cd "$run" && timeout -k 5 "$BLOCK_TIMEOUT" bash -e "$body") </dev/null >"$WORK/err" 2>&1
        rc=$?
        if [ $rc -eq 0 ]; then
          tap ok "$where: sh"
        else
          { echo "exit status $rc of:"; sed 's/^/  /' "$body"; echo "output:"; cat "$WORK/err"; } >"$WORK/why"
          tap "not ok" "$where: sh" "$WORK/why"
        fi
        ;;
      json)
        if json_ok "$body" 2>"$WORK/err"; then tap ok "$where: json parses"; else
          tap "not ok" "$where: json parses" "$WORK/err"
        fi
        ;;
      console)
        missing_examples "$body" >"$WORK/err"
        if [ -s "$WORK/err" ]; then
          tap "not ok" "$where: console (not run): named examples exist" "$WORK/err"
        elif [ -n "$(example_paths "$body")" ]; then
          tap ok "$where: console (not run): named examples exist"
        else
          tap ok "$where: console # SKIP not run"
        fi
        ;;
    esac
    cat "$body" >>"$WORK/all-blocks"
  done
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
