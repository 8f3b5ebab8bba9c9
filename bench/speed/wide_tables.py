"""Wide tables: time and peak memory of the sparse leaf paths ([wide-tables]).

Every case runs in a fresh child process (``python bench/speed/wide_tables.py --case NAME``),
which times one ``dpcore.synthesize`` call and reports its own peak RSS
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``, which includes imports and data). The
parent takes medians over ``--reps`` children and writes ``bench/out/wide_tables.json``.

Cases:
* ``cps_wide:<method>``: ``dpcore.data.datasets.cps_voter_wide()`` (6231 × 22, 6.5·10^17 cells),
  ε = 1, m = 5, declared inferred domain, defaults of the method;
* ``huge:<method>``: 100 random rows over 15 attributes of 10 levels (10^15 cells), ε = 1, m = 1;
* ``cps_wide+delta:<method>``, ``huge+delta:<method>``: the same under (ε, δ) = (1, 10^−9) through zCDP
  (discrete Gaussian counts; the sparse path draws the empty cells' Gaussian histogram);
* ``cross:<method>:<path>:<log2 cells>``: 2000 rows over a table of 2^k cells (k/2 + k/2 bits
  in two attributes plus 3 small ones), m = 1, dense or sparse path forced through
  ``dpcore.synthesizers.sparse_leaves.SPARSE_ABOVE``: where the sparse path starts to win.
* ``boot64k:<method>``: a 64,600-row bootstrap (seed 0) of ``cps_voter_wide``'s first 15
  attributes, ε = 1, m = 5, defaults of the method;
* ``s7:ipf``, ``cps_shaped:ipf``: SD2011 S7 and ``bench/tools/cps_data.cps_shaped()`` (44,821 × 15),
  ε = 1, m = 1, seed 0, ipf defaults. With ``--baseline-root DIR`` the same two cases also run
  against the dpcore found in DIR (e.g. the main checkout: "today's" ipf), in the same run.

``--utility``: mean two-way S_pMSE on ``cps_voter_wide`` (ε = 1, m = 5, seeds 0..``--utility-seeds``−1)
per method (and ipf with ``one_way_share=0``, synthpop's measurement), and
the measurement behind ipf's choice of fit: ``fit="dense"`` against ``fit="records"`` on S7 and
the 10-attribute CPS extract (ε = 1, m = 1, seeds 0–4: mean S_pMSE and median seconds).

Usage: ``PYTHONPATH=. .venv/bin/python bench/speed/wide_tables.py [--reps 3] [--utility] [--baseline-root DIR]
[--only PREFIX ...]``
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

BENCH = Path(__file__).resolve().parents[1]
ROOT = BENCH.parent
# DPCORE_ROOT: measure another checkout's dpcore (the baseline) with this same script
sys.path.insert(0, os.environ.get("DPCORE_ROOT", str(ROOT)))


def _data(kind: str, log2: int = 0):
    import dpcore

    if kind == "cps_wide":
        from dpcore.data.datasets import bundled_cps_table, cps_voter_wide, default_cps_path

        df = cps_voter_wide() if default_cps_path() else bundled_cps_table("wide")
    elif kind == "boot64k":
        from dpcore.data.datasets import bundled_cps_table, cps_voter_wide, default_cps_path

        wide = (cps_voter_wide() if default_cps_path() else bundled_cps_table("wide")).iloc[:, :15]
        df = wide.iloc[np.random.default_rng(0).integers(0, len(wide), 64_600)].reset_index(drop=True)
    elif kind == "s7":
        from dpcore.data.datasets import load_sd2011, sd2011_extract

        df = sd2011_extract(load_sd2011(), 7)
    elif kind == "cps_shaped":
        sys.path.insert(0, str(BENCH / "tools"))
        from cps_data import cps_shaped

        df = cps_shaped()
    elif kind == "huge":
        rng = np.random.default_rng(0)
        df = pd.DataFrame({f"c{j:02d}": rng.integers(0, 10, 100).astype(str) for j in range(15)})
        # declare all 10 levels even if a column misses one in 100 rows
        from dpcore.data.domain import Attribute, Domain

        return df, Domain(tuple(Attribute(c, "categorical", levels=tuple(str(v) for v in range(10))) for c in df))
    else:  # cross
        rng = np.random.default_rng(1)
        a, b = log2 // 2, log2 - log2 // 2 - 3
        n = 2000
        df = pd.DataFrame({"x": rng.integers(0, 2**a, n).astype(str), "y": rng.integers(0, 2**b, n).astype(str),
                           "s1": rng.integers(0, 2, n).astype(str), "s2": rng.integers(0, 2, n).astype(str),
                           "s3": rng.integers(0, 2, n).astype(str)})
        from dpcore.data.domain import Attribute, Domain

        levels = {"x": 2**a, "y": 2**b, "s1": 2, "s2": 2, "s3": 2}
        return df, Domain(tuple(Attribute(c, "categorical", levels=tuple(str(v) for v in range(k)))
                                for c, k in levels.items()))
    return df, dpcore.infer_domain(df).declared()


def run_case(name: str) -> dict:
    import dpcore
    from dpcore.synthesizers import sparse_leaves

    parts = name.split(":")
    kind, method = parts[0], parts[1]
    opts, m = {}, 5
    if kind.endswith("+delta"):  # the same case under (ε, δ) = (1, 1e-9) through zCDP
        kind = kind[: -len("+delta")]
        opts["delta"] = 1e-9
    if kind in ("huge", "s7", "cps_shaped"):
        m = 1
    if kind == "cross":
        path, log2 = parts[2], int(parts[3])
        m = 1
        sparse_leaves.SPARSE_ABOVE = 0 if path == "sparse" else 2**62
        opts["max_cells"] = 2**30
        if method == "steps":
            opts.update(order="s1")
        df, dom = _data(kind, log2)
    else:
        df, dom = _data(kind)
    t0 = time.perf_counter()
    c0 = time.process_time()
    rel = dpcore.synthesize(df, method=method, epsilon=1.0, sets=m, seed=0, domain=dom, **opts)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    per_set = rel.diagnostics.get("per_set") or [{}]
    return {"case": name, "wall_s": wall, "cpu_s": cpu, "peak_rss_mb": peak_mb, "cells": str(dom.size),
            "rows_out": len(rel.sets[0]), "fit": per_set[0].get("fit"), "sweeps": per_set[0].get("iterations")}


def child(name: str, root: Path = ROOT) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root), DPCORE_ROOT=str(root))
    out = subprocess.run([sys.executable, __file__, "--case", name], capture_output=True, text=True, env=env, cwd=root)
    if out.returncode:
        return {"case": name, "error": out.stderr.strip().splitlines()[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def utility(method: str, seeds=(0,), **options) -> list[float]:
    """Mean two-way S_pMSE on cps_voter_wide, ε = 1, m = 5, one value per seed."""
    import dpcore
    from dpcore.metrics import utility_tables

    df, dom = _data("cps_wide")
    out = []
    for seed in seeds:
        rel = dpcore.synthesize(df, method=method, epsilon=1.0, sets=5, seed=seed, domain=dom, **options)
        out.append(float(utility_tables(df, rel.sets).mean_s_pmse))
    return out


def fit_comparison(seeds=range(5)) -> dict:
    """ipf's dense fit against the record fit on the tables where both run (same margins per seed)."""
    import dpcore
    from dpcore.data.datasets import (
        bundled_cps_table,
        cps_voter_extract,
        default_cps_path,
        load_cps_vrs,
        load_sd2011,
        sd2011_extract,
    )
    from dpcore.metrics import utility_tables

    out = {}
    for name, df in (("s7", sd2011_extract(load_sd2011(), 7)),
                     ("cps_extract", cps_voter_extract(load_cps_vrs()) if default_cps_path()
                      else bundled_cps_table("voters"))):
        dom = dpcore.infer_domain(df).declared()
        for fit in ("dense", "records"):
            vals, secs = [], []
            for s in seeds:
                t0 = time.perf_counter()
                rel = dpcore.synthesize(df, method="ipf", epsilon=1.0, seed=s, domain=dom, fit=fit)
                secs.append(time.perf_counter() - t0)
                vals.append(float(utility_tables(df, rel.sets).mean_s_pmse))
            out[f"{name}:{fit}"] = {"s_pmse": vals, "mean_s_pmse": statistics.mean(vals),
                                    "median_s": statistics.median(secs), "cells": str(dom.size)}
            print(f"{name} {fit}: mean S_pMSE {statistics.mean(vals):.2f} {[round(v, 2) for v in vals]}, "
                  f"median {statistics.median(secs):.2f} s", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--case")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--utility", action="store_true")
    ap.add_argument("--utility-seeds", dest="utility_seeds", type=int, default=1,
                    help="--utility: seeds 0..K-1 per method (default 1)")
    ap.add_argument("--no-fits", dest="no_fits", action="store_true",
                    help="--utility: skip the dense-vs-records comparison")
    ap.add_argument("--out", default=str(BENCH / "out" / "wide_tables.json"))
    ap.add_argument("--baseline-root", help="another checkout whose dpcore runs the s7/cps_shaped ipf cases too")
    ap.add_argument("--only", nargs="*", help="run only the cases whose name starts with one of these")
    args = ap.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case)))
        return
    sys.path.insert(0, str(BENCH / "tools"))
    from _machine import machine

    methods4 = ("steps", "flat_laplace", "privbayes", "ipf")
    cases = [(f"cps_wide:{m}", ROOT) for m in methods4 + ("aim", "mst")]
    cases += [(f"boot64k:{m}", ROOT) for m in methods4]
    for c in ("s7:ipf", "cps_shaped:ipf"):
        cases.append((c, ROOT))
        if args.baseline_root:
            cases.append((c, Path(args.baseline_root).resolve()))
    cases += [(f"huge:{m}", ROOT) for m in ("steps", "flat_laplace")]
    # the sparse path under (ε, δ): the empty cells' discrete Gaussian noise as its exact histogram
    cases += [(f"{k}+delta:{m}", ROOT) for k in ("cps_wide", "huge") for m in ("steps", "flat_laplace")]
    cases += [(f"cross:{m}:{p}:{k}", ROOT) for m in ("flat_laplace", "steps") for k in (14, 16, 18, 20, 22, 24)
              for p in ("dense", "sparse")]
    if args.only is not None:
        cases = [c for c in cases if any(c[0].startswith(o) for o in args.only)]
    results = []
    for name, root in cases:
        label = name if root == ROOT else f"{name} [baseline {root}]"
        runs = [child(name, root) for _ in range(args.reps)]
        ok = [r for r in runs if "error" not in r]
        if not ok:
            results.append(dict(runs[0], case=label))
            print(label, "ERROR", runs[0]["error"], flush=True)
            continue
        row = {"case": label, "fit": ok[0].get("fit"), "sweeps": [r.get("sweeps") for r in ok], "cells": ok[0]["cells"],
               "median_wall_s": statistics.median(r["wall_s"] for r in ok),
               "median_cpu_s": statistics.median(r["cpu_s"] for r in ok),
               "peak_rss_mb": max(r["peak_rss_mb"] for r in ok), "runs": ok}
        results.append(row)
        print(f"{label:35s} fit {row['fit']} wall {row['median_wall_s']:.3f}s cpu {row['median_cpu_s']:.3f}s "
              f"peak {row['peak_rss_mb']:.0f} MB",
              flush=True)
    util, fits = {}, {}
    if args.utility:
        seeds = range(args.utility_seeds)
        # ipf with synthpop's measurement only (one_way_share=0) against the default ("auto")
        for label, m, opts in ([(m, m, {}) for m in methods4 + ("aim", "mst")]
                               + [("ipf one_way_share=0", "ipf", {"one_way_share": 0.0})]):
            util[label] = utility(m, seeds, **opts)
            print(f"cps_wide {label} mean two-way S_pMSE {statistics.mean(util[label]):.1f} "
                  f"{[round(v, 1) for v in util[label]]}", flush=True)
        fits = {} if args.no_fits else fit_comparison()
    Path(args.out).parent.mkdir(exist_ok=True)
    Path(args.out).write_text(json.dumps({"machine": machine(), "results": results, "s_pmse": util, "ipf_fits": fits},
                                         indent=2, default=str))


if __name__ == "__main__":
    main()
