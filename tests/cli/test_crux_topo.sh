#!/bin/sh
# crux-topo from the outside, as TAP: exit codes, the text matrix, that
# --json parses and has the documented fields and values, that --dot renders
# with Graphviz, the live machine, and one-line errors on bad input.
# Needs CRUX_TEST_DATA and CRUX_BUILDDIR (set by tests/Makefile.am), python3.

DATA=${CRUX_TEST_DATA:?CRUX_TEST_DATA is not set}/topologies
TOPO=${CRUX_BUILDDIR:?CRUX_BUILDDIR is not set}/topo/crux-topo
WORK=$(mktemp -d "${TMPDIR:-/tmp}/crux-topo-cli.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
unset HWLOC_XMLFILE CRUX_TOPO_SMP_GBPS

n=0
ok() {      # ok STATUS DESCRIPTION: STATUS 0 passes
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi
}
skip() {
    n=$((n + 1))
    echo "ok $n # SKIP $1"
}
# run EXPECTED-STATUS ARGS...: runs crux-topo, output in $WORK/out, $WORK/err
run() {
    want=$1
    shift
    "$TOPO" "$@" >"$WORK/out" 2>"$WORK/err"
    [ $? -eq "$want" ]
}
# one_line_error FILE-OR-WORD: stderr is one line, naming it
one_line_error() {
    [ "$(wc -l <"$WORK/err")" -eq 1 ] && grep -q -- "$1" "$WORK/err"
}

FILES="dgx2-v100-nvswitch power8-minsky-p100-nvlink ac922-lassen-v100 aws-g4dn-metal-t4-pcie
cts1-p100-pcie synthetic-dgx1-hybrid-cube-mesh synthetic-ac922-nvlink"
NFILES=7
HAVE_DOT=0
command -v dot >/dev/null 2>&1 && HAVE_DOT=1
echo "1..$((3 * NFILES + 26))"

run 0 --help && grep -q '^Usage: crux-topo' "$WORK/out" && grep -q -- '--json' "$WORK/out"
ok $? "--help prints the usage and exits 0"

gpus_of() {
    case $1 in
        dgx2*) echo 16 ;; aws-g4dn*|synthetic-dgx1*) echo 8 ;; cts1*) echo 2 ;; *) echo 4 ;;
    esac
}

# JSON checker: fields and types the README documents, GPU count, kinds
cat >"$WORK/check.py" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
ngpus = int(sys.argv[2])
assert len(d["gpus"]) == ngpus, "gpus: %d" % len(d["gpus"])
for i, g in enumerate(d["gpus"]):
    assert g["index"] == i and g["name"] == "gpu%d" % i
    assert isinstance(g["pci"], str) and len(g["pci"]) == 12
    assert isinstance(g["numa"], int)
names = {x["name"] for k in ("packages", "numa_nodes", "host_bridges", "pcie_switches", "gpus",
                             "nvswitches", "nics") for x in d[k]}
for l in d["links"]:
    assert l["a"] in names and l["b"] in names
    assert l["type"] in ("nvlink", "pcie", "smp")
    assert isinstance(l["gbps"], (int, float)) and l["gbps"] >= 0
kinds = ("nvlink", "nvswitch", "nvlink-multihop", "pcie-p2p", "host")
for p in d["paths"]:
    assert p["src"] in names and p["dst"] in names
    assert p["kind"] in kinds and p["hops"] >= 1 and p["gbps"] > 0
gpu_pairs = [p for p in d["paths"] if p["dst"].startswith("gpu")]
assert len(gpu_pairs) == ngpus * (ngpus - 1)
assert len(d["multipath"]) == ngpus * (ngpus - 1)
for s in d["multipath"]:
    used = [tuple(l) for p in s["paths"] for l in p["links"]]
    assert len(used) == len(set(used)), "paths of %s->%s share a directed link" % (s["src"], s["dst"])
    assert abs(sum(p["gbps"] for p in s["paths"]) - s["gbps"]) < 0.05
members = sorted(i for isl in d["islands"] for i in isl)
assert members == list(range(ngpus)), d["islands"]
EOF

for f in $FILES; do
    xml=$DATA/$f.xml
    run 0 --input "$xml" && { [ "$(gpus_of "$f")" -eq 0 ] || grep -q '^GPU0 ' "$WORK/out"; } &&
        grep -q 'Legend' "$WORK/out" && [ ! -s "$WORK/err" ]
    ok $? "$f: matrix printed, exit 0, nothing on stderr"
    run 0 --input "$xml" --json && python3 "$WORK/check.py" "$WORK/out" "$(gpus_of "$f")" 2>"$WORK/py"
    st=$?
    [ $st -ne 0 ] && sed 's/^/# /' "$WORK/py"
    ok $st "$f: --json parses and has gpus, links, paths, multipath, islands"
    if [ $HAVE_DOT -eq 1 ]; then
        run 0 --input "$xml" --dot && dot -Tpng -o "$WORK/$f.png" "$WORK/out" && [ -s "$WORK/$f.png" ]
        ok $? "$f: --dot renders with dot -Tpng"
    else
        skip "$f: --dot: Graphviz dot is not installed"
    fi
done

# Known values of the DGX-1-like cube-mesh, from the JSON
run 0 --input "$DATA/synthetic-dgx1-hybrid-cube-mesh.xml" --json
python3 - "$WORK/out" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
nv = {frozenset((l["a"], l["b"])): l for l in d["links"] if l["type"] == "nvlink"}
assert nv[frozenset(("gpu0", "gpu1"))]["gbps"] == 50 and nv[frozenset(("gpu0", "gpu1"))]["nvlinks"] == 2
assert nv[frozenset(("gpu0", "gpu2"))]["gbps"] == 25
assert frozenset(("gpu0", "gpu5")) not in nv
p = [p for p in d["paths"] if p["src"] == "gpu0" and p["dst"] == "gpu5"][0]
assert p["kind"] == "nvlink-multihop" and p["via"] == ["gpu4"] and p["gbps"] == 50 and p["hops"] == 2
assert d["islands"] == [[0, 1, 2, 3], [4, 5, 6, 7]]
assert [g["numa"] for g in d["gpus"]] == [0, 0, 0, 0, 1, 1, 1, 1]
EOF
ok $? "cube-mesh JSON: 50/25 GB/s links, none 0-5, 0->5 via GPU 4, two quads"

run 0 --input "$DATA/synthetic-dgx1-hybrid-cube-mesh.xml" &&
    grep -q '^GPU0  *X  *NV2 50  *NV1 25  *NV1 25  *NV2 50  *NVH2 50 ' "$WORK/out" &&
    grep -q 'NVLink islands (fully connected GPU sets): \[0 1 2 3\] \[4 5 6 7\]' "$WORK/out"
ok $? "cube-mesh matrix: GPU0 row and islands"

run 0 --input "$DATA/power8-minsky-p100-nvlink.xml" --smp-gbps 64 --json &&
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); p=[p for p in d["paths"] if p["src"]=="gpu0" and p["dst"]=="gpu2"][0]; sys.exit(not (d["smp_gbps"]==64 and p["kind"]=="host" and p["cross_socket"] and p["gbps"]==40))' "$WORK/out"
ok $? "--smp-gbps raises the inter-socket link: Minsky 0->2 then limited by the CPU NVLink"

(export CRUX_TOPO_SMP_GBPS=9; run 0 --input "$DATA/aws-g4dn-metal-t4-pcie.xml") &&
    grep -q 'GPU0 .* SYS 9 ' "$WORK/out"
ok $? "CRUX_TOPO_SMP_GBPS sets the inter-socket bandwidth"

(export HWLOC_XMLFILE="$DATA/cts1-p100-pcie.xml"; run 0) && grep -q 'cts1-p100-pcie.xml: 2 GPUs' "$WORK/out"
ok $? "HWLOC_XMLFILE is read when no --input is given"

# The live machine
run 0 --json && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d["source"]=="live" and len(d["packages"])>=1 and len(d["numa_nodes"])>=1 and len(d["host_groups"])==len(d["packages"])))' "$WORK/out"
ok $? "live machine: --json with packages, NUMA nodes and host groups"
run 0 && grep -q '^live machine: ' "$WORK/out" && grep -q 'Host memory groups' "$WORK/out"
ok $? "live machine: text report"

# Bad input: exit 2, one line on stderr naming the file
run 2 --input "$WORK/missing.xml" && one_line_error "missing.xml: cannot open: No such file"
ok $? "missing file: exit 2, one line naming it"
printf 'garbage\001\002 not xml\n' >"$WORK/garbage.xml"
run 2 --input "$WORK/garbage.xml" && one_line_error "garbage.xml: not an XML file"
ok $? "garbage file: exit 2, one line naming it"
head -c 20000 "$DATA/aws-g4dn-metal-t4-pcie.xml" >"$WORK/truncated.xml"
run 2 --input "$WORK/truncated.xml" && one_line_error "truncated.xml: truncated"
ok $? "truncated XML: exit 2, one line naming it"
sed 's/<topology version="2.0">/<topology version="3.0">/' "$DATA/cts1-p100-pcie.xml" >"$WORK/v3.xml"
run 2 --input "$WORK/v3.xml" && one_line_error "v3.xml: written by a newer hwloc"
ok $? "XML from a newer hwloc: exit 2, one line naming it"
run 2 --input "$WORK" && one_line_error "not a regular file"
ok $? "a directory: exit 2, not a regular file"
run 2 --input /dev/zero && one_line_error "/dev/zero: not a regular file"
ok $? "/dev/zero: refused before reading, exit 2"
mkfifo "$WORK/fifo"
# a FIFO nobody writes would block a reader forever: timeout is a hang guard
timeout 60 "$TOPO" --input "$WORK/fifo" >"$WORK/out" 2>"$WORK/err"
[ $? -eq 2 ] && one_line_error "fifo: not a regular file"
ok $? "a FIFO: refused without blocking, exit 2"
HWLOC_XMLFILE=/dev/zero "$TOPO" >"$WORK/out" 2>"$WORK/err"
[ $? -eq 2 ] && one_line_error "/dev/zero: not a regular file"
ok $? "HWLOC_XMLFILE=/dev/zero: refused, exit 2"
truncate -s $((64 * 1024 * 1024 + 1)) "$WORK/huge.xml"
run 2 --input "$WORK/huge.xml" && one_line_error "huge.xml: 67108865 bytes, more than the 67108864"
ok $? "an input over 64 MiB: refused unread, exit 2"
sed 's/PCIDev:449/PCIDev:999/' "$DATA/dgx2-v100-nvswitch.xml" >"$WORK/unknown.xml"
run 0 --input "$WORK/unknown.xml" && one_line_error "warning: .*unknown.xml: 1 NVLinkBandwidth matrix names objects" &&
    grep -q 'NVLink from none' "$WORK/out"
ok $? "matrix naming unknown objects: ignored with one warning, exit 0"

# Many GPUs: the paths and multipath sets (quadratic in the GPUs) are listed
# only on request beyond 64 GPUs; the rest of the model is still there
GEN="$(dirname "$0")/topo_many_gpus.py"
python3 "$GEN" "$DATA" 96 >"$WORK/g96.xml"
run 0 --input "$WORK/g96.xml" && grep -q "^$WORK/g96.xml: 96 GPUs" "$WORK/out" &&
    grep -q "GPU95" "$WORK/out" &&
    grep -q "Multipath sets: not listed for 96 GPUs (crux-topo --paths lists them)" "$WORK/out"
ok $? "96 GPUs: the matrix, and multipath sets left to --paths"
run 0 --input "$WORK/g96.xml" --json && python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
sys.exit(not (len(d["gpus"])==96 and d["paths_listed"] is False and "paths" not in d and "multipath" not in d))' "$WORK/out"
ok $? "96 GPUs: --json without the paths, saying so"
run 0 --input "$WORK/g96.xml" --json --paths && python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
sys.exit(not (d["paths_listed"] is True and len(d["multipath"])==96*95 and len(d["paths"])>=96*95))' "$WORK/out"
ok $? "96 GPUs: --paths lists every multipath set"
python3 "$GEN" "$DATA" 512 >"$WORK/g512.xml"
run 0 --input "$WORK/g512.xml" && grep -q "^$WORK/g512.xml: 512 GPUs" "$WORK/out" &&
    grep -q "not listed for 512 GPUs" "$WORK/out"
ok $? "512 GPUs: the text report"
run 0 --input "$WORK/g512.xml" --json && python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
sys.exit(not (len(d["gpus"])==512 and "multipath" not in d))' "$WORK/out"
ok $? "512 GPUs: --json"

# Usage errors: exit 2
run 2 --frobnicate && one_line_error "unknown option"
ok $? "unknown option: exit 2"
run 2 --json --dot && one_line_error "exclude each other"
ok $? "--json with --dot: exit 2"
run 2 --smp-gbps fast && one_line_error "smp-gbps"
ok $? "bad --smp-gbps: exit 2"
