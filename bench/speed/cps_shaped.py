"""STEPS engine speed and peak memory on the CPS-shaped table (bench/tools/cps_data.py).

    cd <repo> && PYTHONPATH=. .venv/bin/python bench/speed/cps_shaped.py [--quick] [--runs N]

Times (time.perf_counter, median of ``--runs`` runs, default 5; ``--quick`` = 1 run)
one full ``dpcore.synthesize`` call (selection, noise, consistency, sampling and
decoding of all m sets) with ε = 1, m = 5 and a declared domain, for

- STEPS-L, L = 1..6, consistency nonneg / wls / uh, private MoSDA (default select);
- STEPS-2 with every option at its default;
- flat_laplace.

Runs are interleaved round-robin (run 1 of every case, then run 2, ...) so that
background load on the noisy machine spreads over all cases instead of hitting one.
Run i uses seed i. One untimed warm-up call of each method precedes the timings.

Peak memory: each case is run once more in a fresh child process, which reports its
VmRSS / VmHWM (from /proc/self/status) after imports + data generation + domain
(the baseline) and VmHWM after the release (the peak); the parent also reads each
child's ru_maxrss (os.wait4) and ``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss``
(max over all children) as cross-checks. The memory children run first, while the
parent is small, because a child's ru_maxrss includes its pre-exec copy of the parent.
Results go to bench/out/cps_shaped.json.
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
ROOT = BENCH.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

EPS = 1.0
M = 5
LAYERS = range(1, 7)
CONSISTENCY = ("nonneg", "wls", "uh")
TARGET_STEPS_L_S = 10.0
TARGET_STEPS2_S = 2.0
TARGET_PEAK_MB = 1536.0  # 1.5 GB = 1.5 × 1024 MB


def cases() -> list[dict]:
    out = []
    for L in LAYERS:
        for c in CONSISTENCY:
            out.append({"name": f"STEPS-{L} {c}", "method": "steps", "options": {"layers": L, "consistency": c}})
    out.append({"name": "STEPS-2 defaults", "method": "steps", "options": {}})
    out.append({"name": "flat_laplace", "method": "flat_laplace", "options": {}})
    return out


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _setup():
    import dpcore
    from bench.tools.cps_data import cps_shaped
    df = cps_shaped()
    dom = dpcore.infer_domain(df).declared()
    return dpcore, df, dom


def child(case_json: str) -> None:
    """Run one case once in this (fresh) process and print memory figures as JSON."""
    case = json.loads(case_json)
    dpcore, df, dom = _setup()
    gc.collect()
    base_rss, base_hwm = _status_kb("VmRSS"), _status_kb("VmHWM")
    t = time.perf_counter()
    rel = dpcore.synthesize(df, case["method"], EPS, sets=M, seed=0, domain=dom, **case["options"])
    secs = time.perf_counter() - t
    peak_hwm = _status_kb("VmHWM")
    assert len(rel.sets) == M
    print(json.dumps({"baseline_rss_kb": base_rss, "baseline_hwm_kb": base_hwm, "peak_hwm_kb": peak_hwm,
                      "end_rss_kb": _status_kb("VmRSS"), "seconds": secs, "dp": bool(rel.dp)}))


def run_child(case: dict) -> dict:
    """Run ``case`` in a fresh interpreter; its own figures plus its ru_maxrss from os.wait4."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(case)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=str(ROOT))
    out = p.stdout.read()
    p.stdout.close()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise RuntimeError(f"child for {case['name']} failed:\n{out}")
    res = json.loads(out.strip().splitlines()[-1])
    res["wait4_maxrss_kb"] = ru.ru_maxrss  # KB on Linux
    return res


def mb(kb: float) -> float:
    return kb / 1024.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1 run per case")
    ap.add_argument("--runs", type=int, default=5, help="timed runs per case (default 5)")
    ap.add_argument("--out", default=str(BENCH / "out" / "cps_shaped.json"))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.child)
        return
    runs = 1 if a.quick else a.runs

    t0 = time.perf_counter()
    cs = cases()
    # Memory first, while this parent is still small: a child's ru_maxrss also counts the
    # pre-exec copy of the parent, so a parent grown by the timing loop would inflate it.
    print("peak memory: one fresh child process per case ...", flush=True)
    mem = {c["name"]: run_child(c) for c in cs}
    ru_children_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KB on Linux, max over children

    from bench.tools._machine import describe, machine
    mach = machine()
    print(describe(mach))
    t_setup = time.perf_counter()
    dpcore, df, dom = _setup()
    print(f"data: {df.shape[0]} rows × {df.shape[1]} attributes, {math.prod(dom.shape):,} cells; "
          f"setup {time.perf_counter() - t_setup:.2f} s")

    # untimed warm-up (imports, first-call allocations)
    dpcore.synthesize(df, "steps", EPS, sets=M, seed=999, domain=dom)
    dpcore.synthesize(df, "flat_laplace", EPS, sets=M, seed=999, domain=dom)

    times = {c["name"]: [] for c in cs}
    cpu = {c["name"]: [] for c in cs}
    load_before = os.getloadavg()
    for i in range(runs):
        for c in cs:
            gc.collect()
            t, tc = time.perf_counter(), time.process_time()
            rel = dpcore.synthesize(df, c["method"], EPS, sets=M, seed=i, domain=dom, **c["options"])
            times[c["name"]].append(time.perf_counter() - t)
            cpu[c["name"]].append(time.process_time() - tc)
            assert len(rel.sets) == M and rel.dp, c["name"]
            del rel
        print(f"  run {i + 1}/{runs} done ({time.perf_counter() - t0:.0f} s elapsed)", flush=True)

    load_after = os.getloadavg()
    print(f"load average (1, 5, 15 min) before timing {load_before}, after {load_after}")
    rows = []
    for c in cs:
        ts = times[c["name"]]
        mm = mem[c["name"]]
        med = statistics.median(ts)
        if c["name"].startswith("STEPS-2 defaults"):
            target, target_s = TARGET_STEPS2_S, "≤ 2 s"
        elif c["method"] == "steps":
            target, target_s = TARGET_STEPS_L_S, "< 10 s"
        else:
            target, target_s = None, ""
        rows.append({
            "case": c["name"], "method": c["method"], "options": c["options"], "runs": len(ts),
            "median_s": med, "min_s": min(ts), "max_s": max(ts), "times_s": ts,
            "median_cpu_s": statistics.median(cpu[c["name"]]), "cpu_s": cpu[c["name"]],
            "target": target_s, "target_met": (med <= target) if target is not None else None,
            "baseline_rss_mb": mb(mm["baseline_rss_kb"]), "baseline_hwm_mb": mb(mm["baseline_hwm_kb"]),
            "peak_hwm_mb": mb(mm["peak_hwm_kb"]), "wait4_maxrss_mb": mb(mm["wait4_maxrss_kb"]),
            "child_seconds": mm["seconds"], "increment_mb": mb(mm["peak_hwm_kb"] - mm["baseline_rss_kb"]),
            "peak_target_met": mb(mm["peak_hwm_kb"]) <= TARGET_PEAK_MB,
        })

    hdr = (f"{'case':<18} {'median s':>9} {'min s':>7} {'max s':>7} {'cpu s':>7}  {'target':<7} {'met':<4} "
           f"{'base MB':>8} {'peak MB':>8} {'incr MB':>8} {'wait4 MB':>8}")
    print()
    print(f"ε = {EPS}, m = {M}, median of {runs} run(s) (wall; 'cpu s' = median process CPU time); memory: one child "
          f"process per case, m = {M}, seed 0")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        met = "" if r["target_met"] is None else ("yes" if r["target_met"] else "NO")
        print(f"{r['case']:<18} {r['median_s']:9.3f} {r['min_s']:7.3f} {r['max_s']:7.3f} {r['median_cpu_s']:7.3f}  "
              f"{r['target']:<7} {met:<4} {r['baseline_rss_mb']:8.1f} {r['peak_hwm_mb']:8.1f} "
              f"{r['increment_mb']:8.1f} {r['wait4_maxrss_mb']:8.1f}")
    heaviest = max(rows, key=lambda r: r["peak_hwm_mb"])
    steps_l = [r for r in rows if r["method"] == "steps" and r["case"] != "STEPS-2 defaults"]
    summary = {
        "all_steps_L_le6_under_10s": all(r["target_met"] for r in steps_l),
        "slowest_steps_L": max(steps_l, key=lambda r: r["median_s"])["case"],
        "slowest_steps_L_median_s": max(r["median_s"] for r in steps_l),
        "steps2_defaults_median_s": next(r["median_s"] for r in rows if r["case"] == "STEPS-2 defaults"),
        "steps2_defaults_le_2s": next(r["target_met"] for r in rows if r["case"] == "STEPS-2 defaults"),
        "heaviest_case": heaviest["case"], "heaviest_peak_mb": heaviest["peak_hwm_mb"],
        "heaviest_baseline_rss_mb": heaviest["baseline_rss_mb"], "heaviest_increment_mb": heaviest["increment_mb"],
        "peak_le_1_5GB": heaviest["peak_hwm_mb"] <= TARGET_PEAK_MB,
        "getrusage_children_maxrss_mb": mb(ru_children_kb),
        "total_wall_s": time.perf_counter() - t0,
        "loadavg_before_timing": load_before, "loadavg_after_timing": load_after,
    }
    print()
    print(f"all STEPS-L (L ≤ 6) < 10 s: {'yes' if summary['all_steps_L_le6_under_10s'] else 'NO'} "
          f"(slowest {summary['slowest_steps_L']}: {summary['slowest_steps_L_median_s']:.3f} s)")
    print(f"STEPS-2 defaults ≤ 2 s: {'yes' if summary['steps2_defaults_le_2s'] else 'NO'} "
          f"({summary['steps2_defaults_median_s']:.3f} s)")
    print(f"peak RSS ≤ 1.5 GB: {'yes' if summary['peak_le_1_5GB'] else 'NO'} — heaviest {heaviest['case']}: "
          f"{heaviest['peak_hwm_mb']:.1f} MB (baseline {heaviest['baseline_rss_mb']:.1f} MB, "
          f"release +{heaviest['increment_mb']:.1f} MB); getrusage(RUSAGE_CHILDREN).ru_maxrss = "
          f"{summary['getrusage_children_maxrss_mb']:.1f} MB")
    print(f"total {summary['total_wall_s']:.0f} s")

    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": mach, "command": " ".join(["bench/speed/cps_shaped.py"] + sys.argv[1:]),
                               "epsilon": EPS, "sets": M, "runs": runs, "rows": rows, "summary": summary}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
