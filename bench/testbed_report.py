#!/usr/bin/env python3
"""What bench/testbed.sh measured, and crux-sim on the same jobs.

  testbed_report.py check RUN [--policy P] [--tolerance PTS] [--sim CRUX-SIM]
      one repetition's checks, as TAP lines ("ok N - ..."), exit 1 when one fails:
      every job completed; its gradients crossed the spines on the path and
      in the band the priority file in force planned; its profile reached
      the daemon (the plan's W is the measured one, not the default); per
      job and in total, the simulated utilisation is within PTS points of
      the measured one
  testbed_report.py report REP... [--out DIR] [--sim CRUX-SIM]
      the comparison over repetitions: tables (markdown), data and plots in
      DIR (default: the repetitions' parent/report)

crux-sim is given each job as its profile shows it to crux-sched daemon:
compute = the mean time between its calls, no overlap, W = ranks x that
time, so that it decides from the figures the daemon decided from (with
the true figures, crux-sim's crux-pa ranked a ResNet above a GPT job that
the daemon ranked above it).  For the testbed's models, whose Allreduce
always outlasts the compute it can hide behind, that time is (1-overlap) C
and the job the same; the utilisation counts the whole compute C of each
iteration.

A run directory (bench/testbed.sh run) holds cluster.json and a directory
per policy: epoch, jobs.txt ("NAME SLURM-ID MODEL ARRIVAL SECONDS HOST HOST"),
logs/NAME.log (crux-bench-train's lines), flows.txt (the spines' counters,
"t TIME" then "SPINE SRC DST DSCP BYTES" lines), prio/TIME.prio and
TIME.report (each plan).

Utilisation is the paper's: compute done over GPU time held, per job from
its first iteration's start to its last one's end.  crux-sim replays each
job with its measured start and hold time, placement, compute, overlap and
the bytes that cross the network: crux's hierarchical Allreduce between two
hosts sends B bytes each way, where crux-sim's ring over G GPUs would send
2(G-1)/G B, so the simulator is given B G / (2 (G-1)).
"""
import csv
import glob
import os
import subprocess
import sys
import tempfile

RANKS_PER_HOST = 2
DEFAULT_COMPUTE_S = 1.0  # crux-sched daemon's --default-compute-s
# A job takes a new plan at the first call at which both ends of each of its
# connections read it (each polls the file every 0.5 s): at most two
# iterations and this after the file changed
SETTLE_S = 1.5
# The last profile covers the job's last window (5 s, a few iterations),
# not its whole run: W agrees with the whole run's mean within this
PROFILE_TOLERANCE = 0.25


def read_jobs(pdir):
    jobs = []
    for line in open(os.path.join(pdir, "jobs.txt")):
        f = line.split()
        if len(f) == 7:
            jobs.append(dict(name=f[0], id=f[1], model=f[2], arrival=float(f[3]),
                             seconds=float(f[4]), hosts=[f[5], f[6]]))
    return jobs


def read_log(path):
    """crux-bench-train's log: figures, iterations, the summary."""
    job = dict(iters=[], done=None)
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return job
    for line in lines:
        f = line.split()
        if line.startswith("# crux-bench-train:"):
            job["ranks"] = int(f[2])
            job["compute"] = float(f[5])
            job["bytes"] = float(f[7])
            job["overlap"] = float(f[10])
        elif f and f[0] == "iter" and len(f) == 10:
            job["iters"].append(dict(start=float(f[3]), compute=float(f[5]), comm=float(f[7]),
                                     period=float(f[9])))
        elif f and f[0] == "done" and len(f) >= 9:
            job["done"] = dict(n=int(f[2]), held=float(f[4]), busy=float(f[6]),
                               cpu=float(f[10]) if len(f) >= 11 else None)
    return job


def measured(pdir):
    """Per job: the log's figures and its utilisation; and the epoch."""
    epoch = float(open(os.path.join(pdir, "epoch")).read())
    out = []
    for j in read_jobs(pdir):
        log = read_log(os.path.join(pdir, "logs", j["name"] + ".log"))
        j.update(log)
        if log["iters"] and log["done"]:
            it = log["iters"]
            j["first"] = it[0]["start"]
            j["end"] = it[-1]["start"] + it[-1]["period"]
            j["held"] = j["end"] - j["first"]
            j["busy"] = sum(i["compute"] for i in it)
            j["util"] = j["busy"] / j["held"] if j["held"] > 0 else 0
            j["mean_period"] = j["held"] / len(it)
        out.append(j)
    return epoch, out


def plans(pdir):
    """[(time, {job id: (level, dscp, {(src, dst): (index, count)})}, report text)]"""
    out = []
    for path in sorted(glob.glob(os.path.join(pdir, "prio", "*.prio")),
                       key=lambda p: float(os.path.basename(p)[:-5])):
        t = float(os.path.basename(path)[:-5])
        jobs = {}
        for line in open(path):
            f = line.split()
            if len(f) >= 4 and f[0] == "job":
                kv = dict(zip(f[4::2], f[5::2]))
                route = {}
                for e in kv.get("route", "").split(","):
                    if ">" in e and ":" in e:
                        pair, path_ = e.rsplit(":", 1)
                        src, dst = pair.split(">")
                        i, n = path_.split("/")
                        route[(src, dst)] = (int(i), int(n))
                jobs[f[1]] = (int(f[3]), int(kv.get("dscp", 0)), route)
        rep = path[:-5] + ".report"
        out.append((t, jobs, open(rep).read() if os.path.exists(rep) else ""))
    return out


def flows(pdir):
    """[(time, {(spine, src, dst, dscp): bytes})], cumulative."""
    snaps, cur = [], None
    for line in open(os.path.join(pdir, "flows.txt")):
        f = line.split()
        if len(f) == 2 and f[0] == "t":
            cur = (float(f[1]), {})
            snaps.append(cur)
        elif len(f) == 5 and cur is not None:
            cur[1][(f[0], f[1], f[2], int(f[3]))] = int(f[4])
    return snaps


def wire_check(pdir, jobs):
    """Per job: bytes on the planned spine and band, bytes elsewhere, over
    the intervals where the job's plan (its band and route) had been in
    force since before its previous iteration began."""
    ps, fs = plans(pdir), flows(pdir)
    by_pair = {}
    for j in jobs:
        if "first" in j:
            for a, b in ((j["hosts"][0], j["hosts"][1]), (j["hosts"][1], j["hosts"][0])):
                by_pair.setdefault((a, b), []).append(j)
    # each job's decisions over time: [(time, (dscp, route))], changes only
    decided = {}
    for t, plan, _ in ps:
        for jid, (level, dscp, route) in plan.items():
            d = decided.setdefault(jid, [])
            if not d or d[-1][1] != (dscp, route):
                d.append((t, (dscp, route)))
    res = {j["name"]: [0, 0, set()] for j in jobs}
    for (t0, c0), (t1, c1) in zip(fs, fs[1:]):
        for key, b1 in c1.items():
            d = b1 - c0.get(key, 0)
            if d <= 0:
                continue
            spine, src, dst, dscp = key
            for j in by_pair.get((src, dst), []):
                if not (j["first"] - 5 <= t0 and t1 <= j["end"] + 5):
                    continue
                changes = decided.get(j["id"], [])
                cur = [x for x in changes if x[0] <= t0]
                # the copy of a version may be up to a second old: one that
                # appears within the interval may already be in force
                if not cur or any(t0 < x[0] <= t1 + 1.2 for x in changes):
                    continue
                since, (want_dscp, route) = cur[-1]
                settle = 2 * max(i["period"] for i in j["iters"]) + SETTLE_S
                if t0 < since + settle or t0 < j["first"] + settle:
                    continue
                want = route.get((src, dst))
                ok = dscp == want_dscp and (want is None or spine == "sp%d" % want[0])
                res[j["name"]][0 if ok else 1] += d
                if not ok:
                    res[j["name"]][2].add("%s %s>%s dscp %d (planned %s dscp %d)" % (
                        spine, src, dst, dscp, "sp%d" % want[0] if want else "any", want_dscp))
    return res


def profile_check(pdir, jobs):
    """Per job: the W the daemon planned it with, last, while it ran (the
    default is GPUs x --default-compute-s until a profile arrives)."""
    out = {}
    for t, plan, report in plans(pdir):
        for line in report.splitlines():
            f = line.split()
            if len(f) > 4 and f[1].isdigit():
                for j in jobs:
                    if j["id"] == f[0] and "first" in j and t <= j["end"]:
                        out[j["name"]] = float(f[3])
    return out


def measured_gap(j):
    """The mean time between the job's calls: its compute as its profile
    sees it (what it computes while its Allreduce runs is invisible to MPI)."""
    gaps = [i["period"] - i["comm"] for i in j["iters"]]
    return sum(gaps) / len(gaps) if gaps else j["compute"]


def measured_work(j):
    """W as the job's profile sees it: its ranks x the time between its calls."""
    return j.get("ranks", 4) * measured_gap(j)


def simulate(run, pdir, policy, epoch, jobs, sim):
    """crux-sim on the same jobs: per job name, (utilisation, iterations)."""
    tmp = tempfile.mkdtemp(prefix="crux-testbed-sim-")
    wl = os.path.join(tmp, "w.csv")
    with open(wl, "w") as f:
        f.write("id,arrival_s,model,gpus,compute_s,overlap,bytes,work,duration_s,placement\n")
        for j in jobs:
            if "first" not in j:
                continue
            g = j["ranks"]
            net_bytes = j["bytes"] * g / (2.0 * (g - 1))
            # the ids the daemon planned (ECMP hashes them; TACCL* routes in their
            # order), and the job as its profile shows it (see the top)
            f.write("%s,%.6f,%s,%d,%.6f,0,%.6g,%.6g,%.6f,%s\n" % (
                j["id"], j["first"] - epoch, j["model"], g, measured_gap(j), net_bytes,
                measured_work(j), j["held"], ";".join(j["hosts"])))
    subprocess.run([sim, "run", "--cluster", os.path.join(run, "cluster.json"), "--workload", wl,
                    "--policy", policy, "--levels", "3", "--bin", "5", "--out", tmp, "--quiet"],
                   check=True)
    out = {}
    by_id = {j["id"]: j for j in jobs}
    with open(os.path.join(tmp, "jobs-%s.csv" % policy)) as f:
        for row in csv.DictReader(f):
            j = by_id[row["id"]]
            held = float(row["end_s"]) - float(row["start_s"])
            # its compute phases were the gaps: the job did its whole compute in them
            busy = float(row["busy_s"]) * j["compute"] / measured_gap(j)
            out[j["name"]] = dict(util=busy / held if held > 0 else 0,
                                  iters=float(row["iterations"]), held=held, busy=busy,
                                  level=int(row["level"]))
    for p in glob.glob(os.path.join(tmp, "*")):
        os.remove(p)
    os.rmdir(tmp)
    return out


def learned_at(pdir, jobs):
    """When the daemon first planned each job from its profile (W no longer
    the default of a registration)."""
    default = RANKS_PER_HOST * 2 * DEFAULT_COMPUTE_S
    out = {}
    for t, plan, report in plans(pdir):
        for line in report.splitlines():
            f = line.split()
            if len(f) > 4 and f[1].isdigit() and abs(float(f[3]) - default) > 1e-6:
                for j in jobs:
                    if j["id"] == f[0] and j["name"] not in out:
                        out[j["name"]] = t
    return out


def trimmed(j, a, b):
    """Job j's iterations inside [a, b], as a job of its own (None when fewer
    than two)."""
    its = [i for i in j["iters"] if i["start"] >= a and i["start"] + i["period"] <= b]
    if len(its) < 2:
        return None
    k = dict(j)
    k["iters"] = its
    k["first"] = its[0]["start"]
    k["end"] = its[-1]["start"] + its[-1]["period"]
    k["held"] = k["end"] - k["first"]
    k["busy"] = sum(i["compute"] for i in its)
    k["util"] = k["busy"] / k["held"]
    k["mean_period"] = k["held"] / len(its)
    return k


def steady_windows(pdir, jobs, shortest=15.0):
    """The stretches in which the same jobs ran, each planned from its
    profile and on its plan for two iterations: [(a, b, [trimmed jobs])].
    crux-sim knows a job's figures from its arrival; the daemon learns them
    from the job's first profile, so only these stretches compare the two
    models on the same plan."""
    learned = learned_at(pdir, jobs)
    done = [j for j in jobs if "first" in j]
    ready = {}
    for j in done:
        if j["name"] in learned:
            ready[j["name"]] = max(learned[j["name"]], j["first"]) + \
                2 * max(i["period"] for i in j["iters"]) + SETTLE_S
    cuts = sorted(set([j["first"] for j in done] + [j["end"] for j in done] + list(ready.values())))
    out = []
    for a, b in zip(cuts, cuts[1:]):
        if b - a < shortest:
            continue
        active = [j for j in done if j["first"] <= a and j["end"] >= b]
        if not active or any(j["name"] not in ready or ready[j["name"]] > a for j in active):
            continue
        parts = [trimmed(j, a, b) for j in active]
        if all(parts):
            out.append((a, b, parts))
    return out


def total(items):
    busy = sum(i["busy"] for i in items)
    held = sum(i["held"] for i in items)
    return busy / held if held > 0 else 0


def check(argv):
    run, policy, tol, sim = argv[0], None, 5.0, "crux-sim"
    i = 1
    while i < len(argv):
        if argv[i] == "--policy":
            policy = argv[i + 1]
        elif argv[i] == "--tolerance":
            tol = float(argv[i + 1])
        elif argv[i] == "--sim":
            sim = argv[i + 1]
        i += 2
    pols = [policy] if policy else sorted(d for d in os.listdir(run)
                                          if os.path.isdir(os.path.join(run, d)))
    n, bad = 0, 0

    def tap(ok, what):
        nonlocal n, bad
        n += 1
        bad += not ok
        print("%s %d - %s" % ("ok" if ok else "not ok", n, what))

    for pol in pols:
        pdir = os.path.join(run, pol)
        epoch, jobs = measured(pdir)
        states = dict(l.split()[1:3] for l in open(os.path.join(pdir, "states.txt")) if l.strip())
        for j in jobs:
            tap(states.get(j["name"]) == "COMPLETED" and "first" in j,
                "%s: %s completed its iterations (%s)" % (pol, j["name"],
                                                          states.get(j["name"], "?")))
        wire = wire_check(pdir, jobs)
        for j in jobs:
            good, wrong, what = wire[j["name"]]
            tap(good > 0 and wrong <= 0.01 * (good + wrong),
                "%s: %s: %.1f MB between its hosts on the planned spine and band, %.2f MB elsewhere%s"
                % (pol, j["name"], good / 1e6, wrong / 1e6,
                   (" (" + "; ".join(sorted(what)[:3]) + ")") if what else ""))
        work = profile_check(pdir, jobs)
        for j in jobs:
            w = work.get(j["name"])
            want = measured_work(j)
            tap(w is not None and abs(w - want) <= PROFILE_TOLERANCE * want,
                "%s: %s: the daemon planned it from its profile: W %s, the ranks x the time "
                "between its calls %.3g (within %d%%; before a profile, %g)"
                % (pol, j["name"], "%.3g" % w if w is not None else "none", want,
                   100 * PROFILE_TOLERANCE, RANKS_PER_HOST * 2 * DEFAULT_COMPUTE_S))
        windows = steady_windows(pdir, jobs)
        tap(len(windows) > 0, "%s: %d stretch(es) of at least 15 s with every job on its measured plan"
            % (pol, len(windows)))
        for a, b, parts in windows:
            sims = simulate(run, pdir, pol, epoch, parts, sim)
            what = "%s, %.0f-%.0f s" % (pol, a - epoch, b - epoch)
            for j in parts:
                s = sims.get(j["name"])
                d = 100 * (s["util"] - j["util"]) if s else float("inf")
                tap(abs(d) <= tol, "%s: %s: utilisation measured %.1f%%, simulated %.1f%% "
                    "(%+.1f points, tolerance %g)" % (what, j["name"], 100 * j["util"],
                                                      100 * s["util"] if s else -1, d, tol))
            m, s_ = total(parts), total([sims[j["name"]] for j in parts if j["name"] in sims])
            tap(abs(100 * (s_ - m)) <= tol, "%s: all jobs: utilisation measured %.1f%%, simulated "
                "%.1f%% (%+.1f points)" % (what, 100 * m, 100 * s_, 100 * (s_ - m)))
    print("1..%d" % n)
    return 1 if bad else 0


def util_series(jobs, epoch, step=5.0):
    """Cluster utilisation per bin of `step` seconds: the compute the jobs
    did in it (their compute phases, exactly) over the GPU time they held."""
    end = max(j["end"] for j in jobs if "end" in j) - epoch
    nb = int(end / step) + 1
    busy, held = [0.0] * nb, [0.0] * nb

    def add(arr, a, b, w=1.0):
        a, b = a - epoch, b - epoch
        k = int(a / step)
        while a < b and k < nb:
            e = min(b, (k + 1) * step)
            arr[k] += (e - a) * w
            a, k = e, k + 1

    for j in jobs:
        if "first" not in j:
            continue
        add(held, j["first"], j["end"])
        o, c = j["overlap"], j["compute"]
        for it in j["iters"]:
            add(busy, it["start"], it["start"] + (1 - o) * c)
            comm = it["start"] + (1 - o) * c
            add(busy, comm, comm + o * c)
    # a bin where the jobs held less than half of it is an edge: left out
    return [(k * step, busy[k] / held[k] if held[k] > step / 2 else None) for k in range(nb)]


def report(argv):
    reps, out, sim = [], None, "crux-sim"
    i = 0
    while i < len(argv):
        if argv[i] == "--out":
            out = argv[i + 1]
            i += 2
        elif argv[i] == "--sim":
            sim = argv[i + 1]
            i += 2
        else:
            reps.append(argv[i])
            i += 1
    out = out or os.path.join(os.path.dirname(os.path.abspath(reps[0])), "report")
    os.makedirs(out, exist_ok=True)
    pols = []
    for r in reps:
        for d in sorted(os.listdir(r)):
            if os.path.isdir(os.path.join(r, d)) and d not in pols:
                pols.append(d)
    # fair sharing first: the others' gains are over it
    order = ["none", "crux-full", "crux-full-paper", "taccl", "crux-pa"]
    pols.sort(key=lambda p: (order.index(p) if p in order else len(order), p))
    rows = {}  # policy -> rep -> dict
    for r in reps:
        for pol in pols:
            pdir = os.path.join(r, pol)
            if not os.path.isdir(pdir):
                continue
            epoch, jobs = measured(pdir)
            done = [j for j in jobs if "first" in j]
            sims = simulate(r, pdir, pol, epoch, done, sim)
            wire = wire_check(pdir, jobs)
            steady = []  # (measured, simulated) utilisation of each job in each stretch
            for a, b, parts in steady_windows(pdir, jobs):
                ss = simulate(r, pdir, pol, epoch, parts, sim)
                steady += [(j["util"], ss[j["name"]]["util"], j["held"]) for j in parts]
            rows.setdefault(pol, {})[r] = dict(
                util=total(done), sim=total([sims[j["name"]] for j in done]), steady=steady,
                learned=len(learned_at(pdir, jobs)), jobs_n=len(jobs), done_n=len(done),
                jobs={j["name"]: dict(util=j["util"], period=j["mean_period"], n=len(j["iters"]),
                                      sim=sims[j["name"]]["util"],
                                      sim_period=sims[j["name"]]["held"] / max(sims[j["name"]]["iters"], 1e-9),
                                      wrong=wire[j["name"]][1],
                                      good=wire[j["name"]][0]) for j in done},
                series=util_series(done, epoch))
    med = lambda v: sorted(v)[len(v) // 2] if len(v) % 2 else sum(sorted(v)[len(v) // 2 - 1:len(v) // 2 + 1]) / 2
    md = []
    base = pols[0]
    md.append("| policy | GPU utilisation, each repetition | median | range | median gain over %s |" % base)
    md.append("|---|---|---|---|---|")
    for pol in pols:
        u = [rows[pol][r]["util"] for r in reps if r in rows[pol]]
        g = [100 * (rows[pol][r]["util"] - rows[base][r]["util"]) for r in reps
             if r in rows[pol] and r in rows[base]]
        md.append("| %s | %s | %.1f%% | %.1f-%.1f%% | %+.1f points (%s) |" % (
            pol, ", ".join("%.1f%%" % (100 * x) for x in u), 100 * med(u), 100 * min(u), 100 * max(u),
            med(g), ", ".join("%+.1f" % x for x in g)))
    md.append("")
    names = []
    for pol in pols:
        for r in rows[pol]:
            for n in rows[pol][r]["jobs"]:
                if n not in names:
                    names.append(n)
    md.append("| job | " + " | ".join(pols) + " |")
    md.append("|---|" + "---|" * len(pols))
    for n in names:
        cells = []
        for pol in pols:
            m = [rows[pol][r]["jobs"][n] for r in reps if r in rows[pol] and n in rows[pol][r]["jobs"]]
            cells.append("%.1f%%, %.2f s" % (100 * med([x["util"] for x in m]),
                                            med([x["period"] for x in m])) if m else "-")
        md.append("| %s | %s |" % (n, " | ".join(cells)))
    md.append("")
    md.append("| policy | crux-sim, whole run (median) | measured (median) | stretches on a measured plan: "
              "job-stretches, mean and largest simulated - measured |")
    md.append("|---|---|---|---|")
    for pol in pols:
        st = [x for r in reps if r in rows[pol] for x in rows[pol][r]["steady"]]
        d = [100 * (b - a) for a, b, _ in st]
        md.append("| %s | %.1f%% | %.1f%% | %d, %+.1f points, %+.1f points |" % (
            pol, 100 * med([rows[pol][r]["sim"] for r in reps if r in rows[pol]]),
            100 * med([rows[pol][r]["util"] for r in reps if r in rows[pol]]), len(d),
            sum(d) / len(d) if d else 0, max(d, key=abs) if d else 0))
    md.append("")
    wrong = sum(rows[p][r]["jobs"][n]["wrong"] for p in pols for r in rows[p] for n in rows[p][r]["jobs"])
    good = sum(rows[p][r]["jobs"][n]["good"] for p in pols for r in rows[p] for n in rows[p][r]["jobs"])
    learned = sum(rows[p][r]["learned"] for p in pols for r in rows[p])
    jobs_n = sum(rows[p][r]["jobs_n"] for p in pols for r in rows[p])
    done_n = sum(rows[p][r]["done_n"] for p in pols for r in rows[p])
    md.append("Jobs that ran their iterations: %d of %d; planned from their own profile: %d. Bytes between a "
              "job's hosts on the planned spine and band, once a plan was in force: %.1f MB; elsewhere: "
              "%.2f MB." % (done_n, jobs_n, learned, good / 1e6, wrong / 1e6))
    open(os.path.join(out, "tables.md"), "w").write("\n".join(md) + "\n")
    # data for the plots: utilisation over time (first repetition), mean iteration time per job
    first = reps[0]
    with open(os.path.join(out, "util-over-time.dat"), "w") as f:
        for pol in pols:
            if first not in rows[pol]:
                continue
            f.write("# %s\n" % pol)
            for t, u in rows[pol][first]["series"]:
                if u is not None:
                    f.write("%.1f %.4f\n" % (t, u))
            f.write("\n\n")
    with open(os.path.join(out, "iteration-times.dat"), "w") as f:
        f.write("# job " + " ".join(pols) + "\n")
        for n in names:
            vals = []
            for pol in pols:
                m = [rows[pol][r]["jobs"][n]["period"] for r in reps
                     if r in rows[pol] and n in rows[pol][r]["jobs"]]
                vals.append("%.3f" % med(m) if m else "?")
            f.write("%s %s\n" % (n, " ".join(vals)))
    plot(out, pols)
    print("\n".join(md))
    return 0


def plot(out, pols):
    gp = """set terminal png size 900,420
set output "%(out)s/util-over-time.png"
set xlabel "seconds since the first submission"
set ylabel "GPU utilisation of the jobs running"
set yrange [0:1.05]
set key bottom left
plot %(lines)s
set output "%(out)s/iteration-times.png"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel "mean iteration time (s)"
set xlabel ""
set yrange [0:*]
set key outside top center horizontal
set xtics rotate by -30
plot %(bars)s
""" % dict(out=out,
           lines=", ".join('"%s/util-over-time.dat" index %d using 1:2 with lines lw 2 title "%s"'
                           % (out, k, p) for k, p in enumerate(pols)),
           bars=", ".join('"%s/iteration-times.dat" using %d:xtic(1) title "%s"' % (out, k + 2, p)
                          for k, p in enumerate(pols)))
    try:
        subprocess.run(["gnuplot"], input=gp.encode(), check=False)
    except OSError:
        pass


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("check", "report"):
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    sys.exit(check(sys.argv[2:]) if sys.argv[1] == "check" else report(sys.argv[2:]))
