#!/bin/sh
# crux-topo from the outside, as TAP: exit codes, the text matrix (the
# connection classes of nvidia-smi topo -m, checked cell by cell against
# what each shared topology file's hwloc tree says), that --json parses and
# has the documented fields and values, that --dot renders with Graphviz at
# a sensible size, the live machine, standard input, and one-line errors.
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
echo "1..$((3 * NFILES + 51))"

run 0 --help && grep -q '^Usage: crux-topo' "$WORK/out" && grep -q -- '--json' "$WORK/out" &&
    [ ! -s "$WORK/err" ]
ok $? "--help prints the usage on stdout and exits 0"
run 0 --version && grep -q '^crux-topo (crux) [0-9]' "$WORK/out" && [ ! -s "$WORK/err" ]
ok $? "--version prints crux-topo (crux) VERSION and exits 0"

# cell.py FILE ROW COLUMN: the matrix cell (row and column as printed: GPU0,
# NIC1, "CPU Affinity", "NUMA Affinity"), cut at the header's offsets
cat >"$WORK/cell.py" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
head = next(l for l in lines if l.startswith("       ") and ("GPU0" in l or "NIC0" in l))
names = re.findall(r"CPU Affinity|NUMA Affinity|\S+", head)
starts, pos = [], 0
for n in names:
    pos = head.index(n, pos)
    starts.append(pos)
    pos += len(n)
col = names.index(sys.argv[3])
end = starts[col + 1] if col + 1 < len(starts) else None
row = next(l for l in lines if l.split(" ", 1)[0] == sys.argv[2])
print(row[starts[col]:end].strip())
PY
# cells FILE ROW COL WANT [ROW COL WANT...]: every listed cell is as wanted
cells() {
    f=$1
    shift
    while [ $# -ge 3 ]; do
        got=$(python3 "$WORK/cell.py" "$f" "$1" "$2" 2>/dev/null)
        if [ "$got" != "$3" ]; then
            echo "# $1/$2: '$got', want '$3'"
            return 1
        fi
        shift 3
    done
}

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
        # a sensible size: no side over 2500 points (the DGX-2 was 8456 wide)
        run 0 --input "$xml" --dot && dot -Tsvg -o "$WORK/$f.svg" "$WORK/out" &&
            python3 -c 'import re, sys
w, h = map(float, re.search(r"<svg width=\"([0-9.]+)pt\" height=\"([0-9.]+)pt\"",
                            open(sys.argv[1]).read()).groups())
print("# %dx%d points" % (w, h))
sys.exit(not (w <= 2500 and h <= 2500))' "$WORK/$f.svg"
        ok $? "$f: --dot renders with dot, no side over 2500 points"
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
assert p["conn"] == "SYS"
conn = {(p["src"], p["dst"]): p.get("conn") for p in d["paths"]}
assert conn[("gpu0", "gpu1")] == "NV2" and conn[("gpu4", "nic0")] == "NODE"
assert conn[("gpu0", "numa0")] is None
assert d["islands"] == [[0, 1, 2, 3], [4, 5, 6, 7]]
assert [g["numa"] for g in d["gpus"]] == [0, 0, 0, 0, 1, 1, 1, 1]
EOF
ok $? "cube-mesh JSON: 50/25 GB/s links, none 0-5, 0->5 via GPU 4, two quads, nvidia-smi classes"

run 0 --input "$DATA/synthetic-dgx1-hybrid-cube-mesh.xml" &&
    grep -q '^GPU0  *X  *NV2 50  *NV1 25  *NV1 25  *NV2 50  *SYS 50\[4\]  *SYS 25\[2\]  *SYS 50\[4,5\] ' "$WORK/out" &&
    grep -q 'relays over NVLink through GPU g' "$WORK/out" && ! grep -q 'NVLink islands' "$WORK/out"
ok $? "cube-mesh matrix: GPU0 row with relays, no islands by default"
run 0 --input "$DATA/synthetic-dgx1-hybrid-cube-mesh.xml" --islands &&
    grep -q '^NVLink islands (fully connected GPU sets, slowest pair in GB/s): \[0 1 2 3\] 25 \[4 5 6 7\] 25$' "$WORK/out" &&
    ! grep -q 'Multipath' "$WORK/out"
ok $? "cube-mesh --islands: the two quads"
run 0 --input "$DATA/synthetic-dgx1-hybrid-cube-mesh.xml" --paths &&
    grep -q '^  GPU0<->GPU5 .* GB/s  nvlink-multihop 50 via gpu4' "$WORK/out" &&
    [ "$(grep -c '^  GPU[0-9]*<*->GPU' "$WORK/out")" -ge 28 ]
ok $? "cube-mesh --paths: a multipath line per pair, relays named"

# Connection classes per file, from each file's hwloc tree.
# AC922 (2 POWER9 sockets): GPU pairs behind one PLX switch (PIX) whose
# downstream ports run PCIe 3.0 x2, so 1.97 GB/s although the V100s could
# do x16; the other socket SYS; the ConnectX-5 ports on another host bridge
# of the same NUMA node (NODE); two ports of one card PIX.
run 0 --input "$DATA/ac922-lassen-v100.xml" &&
    cells "$WORK/out" GPU0 GPU1 "PIX 1.97" GPU1 GPU0 "PIX 1.97" GPU1 GPU2 "SYS 1.97" \
        GPU0 NIC0 "NODE 1.97" GPU2 NIC4 "NODE 1.97" GPU0 NIC4 "SYS 1.97" NIC0 NIC1 PIX \
        NIC0 NIC4 SYS NIC5 GPU3 "NODE 1.97" GPU0 GPU0 X GPU0 "CPU Affinity" 8-87 \
        GPU0 "NUMA Affinity" 0 GPU3 "CPU Affinity" 96-175 GPU3 "NUMA Affinity" 8 &&
    grep -q '^  NIC0: mlx5_0  (hsi0, 0003:01:00.0, NUMA 0, ' "$WORK/out" &&
    grep -q '^  NIC5: mlx5_3 ' "$WORK/out"
ok $? "AC922: PIX at the 1.97 GB/s bottleneck, SYS, NODE, NIC rows and legend, affinity"
# g4dn.metal: two T4s per host bridge, each on its own root port (PHB); two
# host bridges per socket (NODE); the EFA and ENA on a switch of socket 1
run 0 --input "$DATA/aws-g4dn-metal-t4-pcie.xml" &&
    cells "$WORK/out" GPU0 GPU1 "PHB 15.75" GPU0 GPU2 "NODE 15.75" GPU0 GPU4 "SYS 15.75" \
        GPU4 NIC0 "NODE 15.75" GPU0 NIC1 "SYS 15.75" NIC0 NIC1 PIX \
        GPU0 "CPU Affinity" 0-23,48-71 GPU7 "CPU Affinity" 24-47,72-95 GPU7 "NUMA Affinity" 1 &&
    grep -q '^  NIC0: rdmap197s0 ' "$WORK/out" && grep -q '^  NIC1: eth0 ' "$WORK/out"
ok $? "g4dn: PHB, NODE, SYS, NIC rows and legend, affinity"
# CTS-1: two P100 PCIe and a ConnectX-5 below one switch
run 0 --input "$DATA/cts1-p100-pcie.xml" &&
    cells "$WORK/out" GPU0 GPU1 "PIX 15.75" GPU0 NIC0 "PIX 15.75" GPU1 NIC1 "PHB 2" NIC1 NIC2 PIX
ok $? "CTS-1: PIX between the GPUs and to the ConnectX-5, PHB to the Ethernet ports"
# DGX-2: every GPU pair on the NVSwitches with 6 NVLinks of 25 GB/s
run 0 --input "$DATA/dgx2-v100-nvswitch.xml" &&
    cells "$WORK/out" GPU0 GPU1 "NV6 150" GPU0 GPU15 "NV6 150" GPU15 "NUMA Affinity" 1
ok $? "DGX-2: NV6 150 through the NVSwitches"
# DGX-2 without its NVLink matrix: the PCIe tree shows, two levels of PLX
# switches (PIX, PXB), two switch trees per socket (NODE), two sockets (SYS)
python3 -c 'import re, sys
sys.stdout.write(re.sub(r"<distances2hetero .*?</distances2hetero>\n?", "",
                        open(sys.argv[1]).read(), flags=re.S))' \
    "$DATA/dgx2-v100-nvswitch.xml" >"$WORK/dgx2-pcie.xml"
run 0 --input "$WORK/dgx2-pcie.xml" &&
    cells "$WORK/out" GPU0 GPU1 "PIX 15.75" GPU0 GPU2 "PXB 15.75" GPU0 GPU4 "NODE 15.75" \
        GPU0 GPU8 "SYS 15.75" GPU9 GPU15 "NODE 15.75" GPU14 GPU15 "PIX 15.75"
ok $? "DGX-2 PCIe tree: PIX, PXB, NODE, SYS"
# Minsky: NVLink pairs; across sockets the assumed 20 GB/s is the bottleneck
run 0 --input "$DATA/power8-minsky-p100-nvlink.xml" &&
    cells "$WORK/out" GPU0 GPU1 "NV2 40" GPU0 GPU2 "SYS 20*" GPU3 GPU2 "NV2 40" &&
    grep -q "^  \*: that path's figure is the inter-socket bandwidth, which is assumed" "$WORK/out" &&
    grep -q '^Inter-socket link: 20 GB/s per direction, assumed ' "$WORK/out"
ok $? "Minsky: NV2 40, SYS 20* marked as assumed"
run 0 --input "$DATA/power8-minsky-p100-nvlink.xml" --smp-gbps 64 &&
    cells "$WORK/out" GPU0 GPU2 "SYS 40" && ! grep -q 'assumed' "$WORK/out" &&
    grep -q '^Inter-socket link: 64 GB/s per direction, as given$' "$WORK/out"
ok $? "Minsky --smp-gbps 64: the CPU NVLink limits, nothing marked assumed"
run 0 --input "$DATA/synthetic-ac922-nvlink.xml" &&
    cells "$WORK/out" GPU0 GPU1 "NV3 75" GPU0 GPU2 "SYS 20*" GPU0 NIC0 "NODE 15.75"
ok $? "synthetic AC922: NV3 75, GPU to NIC over the CPU NVLink"

# No NVLink: no islands line; asked for, none is claimed
for f in ac922-lassen-v100 aws-g4dn-metal-t4-pcie cts1-p100-pcie; do
    run 0 --input "$DATA/$f.xml" --all && ! grep -q 'NVLink islands (' "$WORK/out" &&
        grep -q '^NVLink islands: none, no GPU has an NVLink$' "$WORK/out" &&
        ! grep -q ' NV[0-9]' "$WORK/out" &&
        run 0 --input "$DATA/$f.xml" && ! grep -q 'NVLink islands' "$WORK/out"
    ok $? "$f: PCIe only, no islands line"
done
run 0 --input "$DATA/cts1-p100-pcie.xml" --json &&
    python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(not ([g["nvlink_gen"] for g in d["gpus"]] == [0, 0] and d["smp_assumed"] is True))' "$WORK/out"
ok $? "CTS-1 JSON: the PCIe P100s have nvlink_gen 0; smp_assumed"

# One socket: no inter-socket line (CTS-1 with its second package removed)
python3 -c 'import re, sys
s = open(sys.argv[1]).read()
start = s.rfind("\n", 0, s.index("<object type=\"Package\" os_index=\"1\"")) + 1
depth = 0
for m in re.finditer(r"<object\b[^>]*?(/?)>|</object>", s[start:]):
    depth += -1 if m.group(0).startswith("</") else (m.group(1) != "/")
    if depth == 0:
        break
sys.stdout.write(s[:start] + s[start + m.end():])' "$DATA/cts1-p100-pcie.xml" >"$WORK/one-socket.xml"
run 0 --input "$WORK/one-socket.xml" && grep -q ': 2 GPUs, .*, 1 packages' "$WORK/out" &&
    ! grep -qi 'inter-socket link:' "$WORK/out" && ! grep -q '^[GN][PI][UC][0-9].* SYS' "$WORK/out" &&
    run 0 --input "$DATA/cts1-p100-pcie.xml" && grep -q '^Inter-socket link: ' "$WORK/out"
ok $? "one socket: no inter-socket line (two sockets: one)"

# Standard input
run 0 --input - <"$DATA/ac922-lassen-v100.xml" && grep -q '^stdin: 4 GPUs' "$WORK/out" &&
    cells "$WORK/out" GPU0 GPU1 "PIX 1.97"
ok $? "-i - reads the export from standard input"
head -c 20000 "$DATA/aws-g4dn-metal-t4-pcie.xml" | "$TOPO" -i - >"$WORK/out" 2>"$WORK/err"
[ $? -eq 2 ] && one_line_error "stdin: truncated"
ok $? "-i - with a truncated export: exit 2 (an input error), one line naming stdin"
# more than the 64 MiB cap: refused once one byte more has come
head -c $((64 * 1024 * 1024 + 1)) /dev/zero | "$TOPO" -i - >"$WORK/out" 2>"$WORK/err"
[ $? -eq 1 ] && one_line_error "stdin: more than the 67108864 bytes"
ok $? "-i - over 64 MiB: refused, exit 1"
run 0 -i - --json <"$DATA/cts1-p100-pcie.xml" && python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(not (d["source"] == "stdin" and len(d["gpus"]) == 2))' "$WORK/out"
ok $? "-i - --json"

# The default is compact: no multipath sets on the 16-GPU DGX-2
run 0 --input "$DATA/dgx2-v100-nvswitch.xml" && ! grep -q 'Multipath\|GPU0<->' "$WORK/out" &&
    [ "$(wc -l <"$WORK/out")" -lt 50 ] &&
    run 0 --input "$DATA/dgx2-v100-nvswitch.xml" --paths &&
    [ "$(grep -c '^  GPU[0-9]*<*->GPU' "$WORK/out")" -ge 120 ]
ok $? "DGX-2: under 50 lines by default, the 120 multipath lines with --paths"

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
run 0 --groups && grep -q '^live machine: ' "$WORK/out" && grep -q 'Host memory groups' "$WORK/out"
ok $? "live machine: text report with --groups"

# A file that cannot be read: exit 1; one whose contents are wrong: exit 2;
# one line on stderr naming the file either way
run 1 --input "$WORK/missing.xml" && one_line_error "missing.xml: cannot open: No such file"
ok $? "missing file: exit 1, one line naming it"
printf 'garbage\001\002 not xml\n' >"$WORK/garbage.xml"
run 2 --input "$WORK/garbage.xml" && one_line_error "garbage.xml: not an XML file"
ok $? "garbage file: exit 2, one line naming it"
head -c 20000 "$DATA/aws-g4dn-metal-t4-pcie.xml" >"$WORK/truncated.xml"
run 2 --input "$WORK/truncated.xml" && one_line_error "truncated.xml: truncated"
ok $? "truncated XML: exit 2, one line naming it"
sed 's/<topology version="2.0">/<topology version="3.0">/' "$DATA/cts1-p100-pcie.xml" >"$WORK/v3.xml"
run 2 --input "$WORK/v3.xml" && one_line_error "v3.xml: written by a newer hwloc"
ok $? "XML from a newer hwloc: exit 2, one line naming it"
run 1 --input "$WORK" && one_line_error "not a regular file"
ok $? "a directory: exit 1, not a regular file"
run 1 --input /dev/zero && one_line_error "/dev/zero: not a regular file"
ok $? "/dev/zero: refused before reading, exit 1"
mkfifo "$WORK/fifo"
# a FIFO nobody writes would block a reader forever: timeout is a hang guard
timeout 60 "$TOPO" --input "$WORK/fifo" >"$WORK/out" 2>"$WORK/err"
[ $? -eq 1 ] && one_line_error "fifo: not a regular file"
ok $? "a FIFO: refused without blocking, exit 1"
HWLOC_XMLFILE=/dev/zero "$TOPO" >"$WORK/out" 2>"$WORK/err"
[ $? -eq 1 ] && one_line_error "/dev/zero: not a regular file"
ok $? "HWLOC_XMLFILE=/dev/zero: refused, exit 1"
truncate -s $((64 * 1024 * 1024 + 1)) "$WORK/huge.xml"
run 1 --input "$WORK/huge.xml" && one_line_error "huge.xml: 67108865 bytes, more than the 67108864"
ok $? "an input over 64 MiB: refused unread, exit 1"
sed 's/PCIDev:449/PCIDev:999/' "$DATA/dgx2-v100-nvswitch.xml" >"$WORK/unknown.xml"
run 0 --input "$WORK/unknown.xml" && one_line_error "warning: .*unknown.xml: 1 NVLinkBandwidth matrix names objects" &&
    grep -q 'NVLink from none' "$WORK/out"
ok $? "matrix naming unknown objects: ignored with one warning, exit 0"

# Many GPUs: the paths and multipath sets (quadratic in the GPUs) are listed
# only on request beyond 64 GPUs; the rest of the model is still there
GEN="$(dirname "$0")/topo_many_gpus.py"
python3 "$GEN" "$DATA" 96 >"$WORK/g96.xml"
run 0 --input "$WORK/g96.xml" && grep -q "^$WORK/g96.xml: 96 GPUs" "$WORK/out" &&
    grep -q "^GPU95 " "$WORK/out" && ! grep -q "Multipath" "$WORK/out"
ok $? "96 GPUs: the matrix, and multipath sets left to --paths"
run 0 --input "$WORK/g96.xml" --json && python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
sys.exit(not (len(d["gpus"])==96 and d["paths_listed"] is False and "paths" not in d and "multipath" not in d))' "$WORK/out"
ok $? "96 GPUs: --json without the paths, saying so"
run 0 --input "$WORK/g96.xml" --json --paths && python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
sys.exit(not (d["paths_listed"] is True and len(d["multipath"])==96*95 and len(d["paths"])>=96*95))' "$WORK/out"
ok $? "96 GPUs: --paths lists every multipath set"
python3 "$GEN" "$DATA" 512 >"$WORK/g512.xml"
run 0 --input "$WORK/g512.xml" && grep -q "^$WORK/g512.xml: 512 GPUs" "$WORK/out" &&
    grep -q "^GPU511 " "$WORK/out" && ! grep -q "Multipath" "$WORK/out"
ok $? "512 GPUs: the text report"
run 0 --input "$WORK/g512.xml" --json && python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
sys.exit(not (len(d["gpus"])==512 and "multipath" not in d))' "$WORK/out"
ok $? "512 GPUs: --json"

# Usage errors: exit 2, one line naming the option or value
run 2 --frobnicate && one_line_error "unknown option --frobnicate"
ok $? "unknown option: exit 2, named"
run 2 -Z && one_line_error "unknown option -Z"
ok $? "unknown short option: exit 2, named"
run 2 --input && one_line_error "missing value for --input;" &&
    run 2 --smp-gbps=x && one_line_error "smp-gbps.* x;" && run 2 --json=1 &&
    one_line_error "json takes no value;"
ok $? "--input without a value, --opt=value forms: exit 2, named"
run 2 --json --dot && one_line_error "exclude each other"
ok $? "--json with --dot: exit 2"
run 2 --smp-gbps fast && one_line_error "smp-gbps .*fast"
ok $? "bad --smp-gbps: exit 2, value named"
(export CRUX_TOPO_SMP_GBPS=-3; run 2 --input "$DATA/cts1-p100-pcie.xml") &&
    one_line_error "CRUX_TOPO_SMP_GBPS=-3"
ok $? "bad CRUX_TOPO_SMP_GBPS: exit 2, named"
run 2 --input "$DATA/cts1-p100-pcie.xml" extra && one_line_error "unexpected argument extra"
ok $? "a stray argument: exit 2, named"
