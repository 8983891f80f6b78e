#!/usr/bin/env python3
"""Writes an hwloc XML export with N PCIe GPUs (N >= 2) to stdout: the
cts1-p100-pcie export with its first GPU's PCIe bridge repeated N - 2 more
times under new PCI domains and buses.  For crux-topo's scaling tests.

usage: topo_many_gpus.py TOPOLOGY-DIR N
"""
import re
import sys

src_dir, n = sys.argv[1], int(sys.argv[2])
lines = open(src_dir + "/cts1-p100-pcie.xml").read().split("\n")
start = next(i for i, l in enumerate(lines) if 'pci_busid="0000:03:04.0"' in l)
depth, end = 0, start
for end in range(start, len(lines)):  # the bridge's whole element
    depth += lines[end].count("<object") - lines[end].count("</object>")
    depth -= lines[end].rstrip().endswith("/>") and "<object" in lines[end]
    if depth == 0:
        break
block = "\n".join(lines[start:end + 1])
gp = [1000000]


def new_gp(_):
    gp[0] += 1
    return 'gp_index="%d"' % gp[0]


copies = []
for i in range(n - 2):
    dom, bus = 1 + i // 200, 16 + i % 200
    b = block.replace("0000:[04-04]", "%04x:[%02x-%02x]" % (dom, bus, bus))
    b = b.replace('pci_busid="0000:03:04.0"', 'pci_busid="%04x:03:%02x.0"' % (dom, i % 32))
    b = b.replace('pci_busid="0000:04:00.0"', 'pci_busid="%04x:%02x:00.0"' % (dom, bus))
    b = re.sub(r'gp_index="\d+"', new_gp, b)
    for name in ("cuda", "nvml", "opencl0d"):
        b = b.replace('"%s0"' % name, '"%s%d"' % (name, i + 2))
    b = re.sub(r"GPU-[0-9a-f-]+", "GPU-%08x-0000-0000-0000-000000000000" % i, b)
    copies.append(b)
sys.stdout.write("\n".join(lines[:end + 1] + copies + lines[end + 1:]))
