"""Speed of the utility and risk measures on the CPS-shaped table.

Times, against one synthetic set of the same size as the original:

- ``specks(orig, syn, model="interactions")``: SPECKS with all pairwise interactions
  (~90,000 stacked rows, ~500 design columns); target ≤ 10 s;
- ``utility_tables(orig, syn)``: all 105 two-way tables (S_pMSE); target ≤ 2 s;
- ``disclosure(orig, syn)``: p0, p1, ru, ru as % of p1; target ≤ 1 s.

Two synthetic sets: a STEPS-2 release at ε = 1 (seed 1, declared domain) and a
plain resample of the original (n rows drawn with replacement, numpy seed 1; a
stand-in for a synthesizer that is very close to the data; not a release).
Two BLAS thread settings: the library default and ``threadpoolctl.threadpool_limits(1)``.

Each (set, threads, measure) case is timed ``--runs`` times (default 7), interleaved
round-robin over the cases after one untimed warm-up of each, and the median
wall-clock (``time.perf_counter``) and process CPU time (``time.process_time``)
are reported.  The machine is shared: the load average is recorded before and after.

    cd <repo> && PYTHONPATH=. .venv/bin/python bench/speed/metrics_speed.py

Writes ``bench/out/metrics_speed.json`` (raw times) and prints a Markdown table.
The measures are NOT differentially private (they read the raw data); this is a
speed benchmark on synthetic benchmark data only.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))  # cps_data, _machine
from cps_data import cps_shaped

import dpcore
from dpcore.metrics import disclosure, specks, utility_tables

from _machine import describe, machine

TARGETS = {"specks_interactions": 10.0, "utility_tables_2way": 2.0, "disclosure": 1.0}


def _load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "out" / "metrics_speed.json"))
    args = ap.parse_args()

    from threadpoolctl import threadpool_info, threadpool_limits

    t_start = time.perf_counter()
    info = machine()
    load_before = _load()
    print("machine:", describe(info), flush=True)
    print("load average before:", load_before, flush=True)
    print("env threads:",
          {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")})

    orig = cps_shaped()
    dom = dpcore.infer_domain(orig).declared()
    rel = dpcore.synthesize(orig, "steps", epsilon=1.0, seed=1, domain=dom, layers=2)
    steps_set = rel.sets[0]
    rng = np.random.default_rng(1)
    resample = orig.iloc[rng.integers(0, len(orig), size=len(orig))].reset_index(drop=True)
    syn_sets = {"STEPS-2 ε=1": steps_set, "resample": resample}

    # import-time state of the thread pools (sklearn/scipy load their BLAS lazily; record after a warm-up too)
    pools_before = threadpool_info()

    measures = {
        "specks_interactions": lambda s: specks(orig, s, model="interactions"),
        "utility_tables_2way": lambda s: utility_tables(orig, s, order=2),
        "disclosure": lambda s: disclosure(orig, s),
    }
    threads = {"default": None, "1 thread": 1}

    cases = [(sname, tname, mname) for sname in syn_sets for tname in threads for mname in measures]

    def run(case):
        sname, tname, mname = case
        fn, s = measures[mname], syn_sets[sname]
        lim = threads[tname]
        if lim is None:
            w0, c0 = time.perf_counter(), time.process_time()
            res = fn(s)
            return time.perf_counter() - w0, time.process_time() - c0, res
        with threadpool_limits(limits=lim):
            w0, c0 = time.perf_counter(), time.process_time()
            res = fn(s)
            return time.perf_counter() - w0, time.process_time() - c0, res

    # warm-up (untimed) and side facts about each case
    facts: dict[str, dict] = {}
    for case in cases:
        _, _, res = run(case)
        sname, tname, mname = case
        key = f"{sname} | {mname}"
        if mname == "specks_interactions":
            facts[key] = {"ks": res.ks, "pmse": res.pmse, "design_columns": res.per_set[0]["columns"],
                          "converged": res.per_set[0]["converged"],
                          "stacked_rows": len(orig) + len(syn_sets[sname])}
        elif mname == "utility_tables_2way":
            facts[key] = {"tables": int(len(res.per_table)), "mean_s_pmse": res.mean_s_pmse}
        else:
            facts[key] = {"p0": res.p0, "p1": res.p1, "ru": res.ru, "ru_pct_of_p1": res.ru_pct_of_p1}
    pools = threadpool_info()
    print("threadpoolctl info (after warm-up):", json.dumps(pools, indent=1), flush=True)

    times = {"|".join(c): {"wall": [], "cpu": []} for c in cases}
    for r in range(args.runs):
        for case in cases:
            w, c, _ = run(case)
            times["|".join(case)]["wall"].append(w)
            times["|".join(case)]["cpu"].append(c)
        print(f"round {r + 1}/{args.runs} done, load {_load()}", flush=True)

    load_after = _load()
    total = time.perf_counter() - t_start
    rows = []
    for case in cases:
        sname, tname, mname = case
        t = times["|".join(case)]
        med = statistics.median(t["wall"])
        rows.append({"set": sname, "threads": tname, "measure": mname, "median_wall": med,
                     "min_wall": min(t["wall"]), "max_wall": max(t["wall"]),
                     "median_cpu": statistics.median(t["cpu"]), "target": TARGETS[mname],
                     "met": med <= TARGETS[mname], "wall": t["wall"], "cpu": t["cpu"]})

    print()
    print("| synthetic set | BLAS threads | measure | median wall s | min–max wall s | median CPU s | target | met? |")
    print("|---|---|---|---:|---:|---:|---|---|")
    for r in rows:
        print(f"| {r['set']} | {r['threads']} | {r['measure']} | {r['median_wall']:.2f} | "
              f"{r['min_wall']:.2f}–{r['max_wall']:.2f} | {r['median_cpu']:.2f} | ≤ {r['target']:g} s | "
              f"{'yes' if r['met'] else 'NO'} |")
    print()
    print("facts:", json.dumps(facts, indent=1, default=float))
    print(f"load average before {load_before}, after {load_after}; total {total:.0f} s")

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "machine": info, "load_before": load_before, "load_after": load_after, "runs": args.runs,
        "command": "PYTHONPATH=. .venv/bin/python bench/speed/metrics_speed.py " + " ".join(sys.argv[1:]),
        "threadpool_info_import": pools_before, "threadpool_info": pools, "facts": facts,
        "rows": rows, "total_seconds": total,
    }, indent=1, default=float))
    print("wrote", out)


if __name__ == "__main__":
    main()
