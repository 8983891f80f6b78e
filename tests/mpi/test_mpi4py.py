"""mpi4py (Debian's python3-mpi4py) through crux: Allreduce on NumPy arrays
of several dtypes, SUM/MAX/MIN, in and out of place, results checked
exactly.  Each dtype gets a communicator of its own, named after it, so the
verbose output (coll_crux_verbose 2: "allreduce on mpi4py-DTYPE: ALG from")
proves crux's own Allreduce took that dtype.  Arrays are far above crux's
allreduce_min_bytes.  Prints TAP lines ("ok - ...") from rank 0; the verdict
of every rank is combined with a Reduce, never with the Allreduce under test.
Usage: python3 test_mpi4py.py [ELEMENTS]   (default 262144)"""
import sys

try:
    from mpi4py import MPI
    import numpy as np
except ImportError as e:          # the shell script checks this first
    print("not ok - import mpi4py and numpy: %s" % e)
    sys.exit(1)

world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
n = int(sys.argv[1]) if len(sys.argv) > 1 else 262144


def check(ok, what):
    """Rank 0 prints one TAP line; the verdict is every rank's (true on the
    other ranks, which report nothing)."""
    everyone = world.reduce(bool(ok), op=MPI.LAND, root=0)
    if rank != 0:
        return True
    print("%s - %s" % ("ok" if everyone else "not ok", what), flush=True)
    return everyone


# Small integers: every sum, max and min is exact in every dtype below, even
# float16 (|sum| <= 12 * size) and uint8 (sum <= 255 up to 21 ranks).
def values(r, dtype):
    i = np.arange(n, dtype=np.int64)
    return ((r * 7 + i * 3) % 13).astype(dtype)


def expected(dtype, op):
    stack = np.stack([values(r, dtype).astype(np.int64) for r in range(size)])
    out = {"sum": stack.sum(0), "max": stack.max(0), "min": stack.min(0)}[op]
    return out.astype(dtype)


dtypes = ["float32", "float64", "int32", "int64", "uint8", "int16", "uint64"]
ops = {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}
failures = 0
for name in dtypes:
    dt = np.dtype(name)
    comm = world.Dup()
    comm.Set_name("mpi4py-" + name)
    bad = []
    for opname, op in ops.items():
        want = expected(dt, opname)
        send = values(rank, dt)
        recv = np.empty_like(send)
        comm.Allreduce(send, recv, op=op)          # out of place
        if not np.array_equal(recv, want) or not np.array_equal(send, values(rank, dt)):
            bad.append(opname + " out of place")
        buf = values(rank, dt)
        comm.Allreduce(MPI.IN_PLACE, buf, op=op)   # in place
        if not np.array_equal(buf, want):
            bad.append(opname + " in place")
    if not check(not bad, "%s: Allreduce of %d elements, SUM/MAX/MIN, in and out of place, exact%s"
                 % (name, n, (" (wrong: " + ", ".join(bad) + ")") if bad else "")):
        failures += 1
    comm.Free()

# pickled objects (lowercase allreduce) and a small buffer: below crux's
# threshold, the previous module's; right all the same
small = np.full(4, rank + 1, dtype=np.float64)
world.Allreduce(MPI.IN_PLACE, small, op=MPI.SUM)
total = world.allreduce(rank + 1, op=MPI.SUM)
want = size * (size + 1) // 2
failures += not check(np.all(small == want) and total == want,
                      "a small buffer and a pickled object: handed on, right")
sys.exit(1 if failures else 0)
