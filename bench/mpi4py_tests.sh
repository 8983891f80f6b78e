#!/usr/bin/env bash
# Validate crux alone against mpi4py's own test suite, from its source
# distribution, run with the installed mpi4py (Debian's python3-mpi4py).
#
#   bench/mpi4py_tests.sh SOURCE [NP...]
#
# SOURCE is mpi4py's source distribution (mpi4py-X.Y.Z.tar.gz) or its
# unpacked directory, of the installed mpi4py's version: e.g. from
# `python3 -m pip download --no-binary :all: --no-deps mpi4py==3.1.4` or
# `apt-get source mpi4py`.  For each NP (default "1 2 3 4") the whole suite
# (test/runtests.py) runs once under `mpirun --mca coll crux` (crux alone)
# and once under Open MPI without crux (`--mca coll ^crux`, stock); each
# rank's output goes to its own file and every test's outcome is read on
# every rank.  A test passes when it is ok (or skipped by the suite, or an
# expected failure) on every rank.  Prints per NP and selection the counts, one line per test
# that did not pass with crux alone:
#   FAIL       not passed with crux alone, passed with stock
#   BOTH-FAIL  not passed either way: counted apart
# (a test that did not run because the run died counts as not passed), then
# "N passed, N failed" over all NPs; exits 1 on a FAIL.
#
# Environment: CRUX_COMPONENT_DIR is put ahead of Open MPI's component path;
# CRUX_PYTHON is the interpreter (default /usr/bin/python3: Debian's mpi4py
# is built for it); CRUX_MPI4PY_ARGS are more runtests.py arguments (e.g.
# "-i test_cco -i test_op"); CRUX_MPI4PY_TIMEOUT is the limit of one run in
# seconds (default 1800); CRUX_MPI4PY_WORKDIR keeps the outputs (default: a
# new directory under ${TMPDIR:-/tmp}).
set -u -o pipefail

usage() { echo "usage: $0 SOURCE [NP...]" >&2; exit 2; }
[ $# -ge 1 ] || usage
source_arg=$1
shift
nps=${*:-1 2 3 4}
for np in $nps; do
  case $np in '' | *[!0-9]* | 0) echo "$0: NP must be a positive number, not '$np'" >&2; exit 2 ;; esac
done
python=${CRUX_PYTHON:-/usr/bin/python3}
timeout_s=${CRUX_MPI4PY_TIMEOUT:-1800}
case $timeout_s in '' | *[!0-9]*) echo "$0: CRUX_MPI4PY_TIMEOUT must be a number of seconds" >&2; exit 2 ;; esac
work=${CRUX_MPI4PY_WORKDIR:-$(mktemp -d "${TMPDIR:-/tmp}/crux-mpi4py.XXXXXX")} || exit 1
mkdir -p "$work" || exit 1

installed=$("$python" -c 'import mpi4py; print(mpi4py.__version__)' 2>/dev/null) ||
  { echo "$0: $python cannot import mpi4py (install python3-mpi4py)" >&2; exit 2; }

# The suite: test/runtests.py of the unpacked distribution.
if [ -f "$source_arg" ]; then
  tar -xzf "$source_arg" -C "$work" || { echo "$0: cannot unpack $source_arg" >&2; exit 2; }
  tree=$(find "$work" -mindepth 2 -maxdepth 3 -path '*/test/runtests.py' | head -n 1)
  tree=${tree%/test/runtests.py}
else
  tree=$source_arg
fi
[ -n "$tree" ] && [ -f "$tree/test/runtests.py" ] ||
  { echo "$0: no test/runtests.py in $source_arg" >&2; exit 2; }
suite_version=$(sed -n "s/^__version__ = '\(.*\)'/\1/p" "$tree/src/mpi4py/__init__.py" 2>/dev/null)
echo "# mpi4py $installed ($python) with the test suite of $tree (${suite_version:-version unknown})"
[ "$suite_version" = "$installed" ] ||
  echo "# warning: the suite's version differs from the installed mpi4py's; failures may be the suite's"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
[ -n "${CRUX_COMPONENT_DIR:-}" ] &&
  export OMPI_MCA_mca_base_component_path="$CRUX_COMPONENT_DIR:SYS_DEFAULT"

# outcomes DIR: one "TEST STATUS" line per test of each rank's stderr under
# DIR (mpirun --output-filename); a test started but never finished (the
# run died in it) is "died".
outcomes() {
  "$python" - "$1" <<'EOF'
import glob, os, re, sys
start = re.compile(r"^(test\w*) \(([\w.]+)\)")
status = re.compile(r"\.\.\. (ok|FAIL|ERROR|skipped|expected failure|unexpected success)")
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*", "rank.*", "stderr"))):
    current = None
    with open(path, errors="replace") as f:
        for line in f:
            m = start.match(line)
            if m:
                name, where = m.groups()
                current = where if where.endswith("." + name) else where + "." + name
            s = status.search(line)
            if s and current:
                word = s.group(1)
                good = {"ok": "ok", "skipped": "skipped", "expected failure": "ok"}
                print(current, good.get(word, word.replace(" ", "-")))
                current = None
    if current:
        print(current, "died")
EOF
}

# summary FILE NRANKS: a test's outcome over the ranks: ok when ok or
# skipped on every one (skipped when skipped on every one), else the first
# other outcome (a rank that never reached it: not-run)
summary() {
  awk -v n="$2" '{ seen[$1] = 1 }
    $2 == "ok" || $2 == "skipped" { good[$1]++; if ($2 == "skipped") skip[$1]++; next }
    !($1 in bad) { bad[$1] = $2 }
    END { for (t in seen) print t, (t in bad) ? bad[t] : good[t] < n ? "not-run" : skip[t] == n ? "skipped" : "ok" }' \
    "$1" | LC_ALL=C sort
}

pass=0 fail=0 both=0
for np in $nps; do
  for sel in crux ^crux; do
    tag=$np-${sel#^}
    [ "$sel" = "^crux" ] && tag=$np-stock
    rm -rf "$work/out-$tag"
    # shellcheck disable=SC2086 # CRUX_MPI4PY_ARGS: several words
    timeout -k 10 "$timeout_s" mpirun -np "$np" --mca coll "$sel" --output-filename "$work/out-$tag" \
      "$python" "$tree/test/runtests.py" -v --no-builddir ${CRUX_MPI4PY_ARGS:-} </dev/null \
      >"$work/mpirun-$tag.log" 2>&1
    rc=$?
    outcomes "$work/out-$tag" >"$work/outcomes-$tag"
    summary "$work/outcomes-$tag" "$np" >"$work/summary-$tag"
    echo "# np=$np ${sel/^crux/stock}: exit $rc, $(wc -l <"$work/summary-$tag") tests," \
      "$(grep -c ' ok$' "$work/summary-$tag") passed on every rank," \
      "$(grep -c ' skipped$' "$work/summary-$tag") skipped by the suite"
  done
  # every test either run saw; one missing from a run that died did not pass
  while read -r test c s; do
    if [ "$c" = ok ] || [ "$c" = skipped ]; then
      pass=$((pass + 1))
    elif [ "$s" = ok ] || [ "$s" = skipped ]; then
      fail=$((fail + 1)); echo "FAIL: np=$np $test (crux alone: $c; stock: $s)"
    else
      both=$((both + 1)); echo "BOTH-FAIL: np=$np $test (crux alone: $c; stock: $s)"
    fi
  done < <(LC_ALL=C join -a 1 -a 2 -e not-run -o 0,1.2,2.2 "$work/summary-$np-crux" "$work/summary-$np-stock")
done
echo "# outputs: $work"
echo "$both did not pass with stock either (not counted)"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
