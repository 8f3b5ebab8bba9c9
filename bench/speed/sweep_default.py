"""How long the Trade-offs page's sweeps take ([honest-flow] item 7), and whether SPECKS separates.

Cases (each a fresh in-memory cache; SPECKS on main effects, m = 1, as the page's defaults):

* ``demo default``: the SD2011 S7 demo, the page's default sweep — the design's method (AIM, the
  adviser's pick) and the adviser's best-measured alternative (MST), ε = 0.1, 1, 10, 2 reps;
* ``demo full``: the same two methods on the full grid ε = 0.1, 0.5, 1, 2, 5, 3 reps;
* ``numeric``: a generated 5,000-row table with three numeric columns (continuous values, binned by
  public edges) and three categorical ones, AIM and MST, ε = 0.1, 1, 10, 2 reps — the kind of
  table on which SPECKS sat at 1.0 and the default sweep took minutes.

Usage: ``PYTHONPATH=<root> .venv/bin/python bench/speed/sweep_default.py``; run it with ``PYTHONPATH`` set to
an older checkout (e.g. a ``git archive`` of main) for the figures before the change (its sweep
measured raw values). Prints one Markdown row per case.
"""
from __future__ import annotations

import importlib
import time
from pathlib import Path

import numpy as np
import pandas as pd

import dpcore

sweep_mod = importlib.import_module("dpcore.metrics.sweep")  # the module (dpcore.metrics.sweep is also the function)

ROOT = Path(__file__).resolve().parents[2]  # the repository (bench/speed/ is two levels down)
MEASURES = ("specks", "s_pmse", "ru_pct_of_p1")
METHODS = [("AIM", "aim", {}), ("MST", "mst", {})]


def numeric_table(n: int = 5000, seed: int = 0) -> tuple[pd.DataFrame, dict]:
    rng = np.random.default_rng(seed)
    cut = rng.choice(["Fair", "Good", "Very Good", "Premium", "Ideal"], n, p=[.05, .1, .2, .3, .35])
    carat = np.round(rng.gamma(2.0, 0.4, n), 2)
    price = np.round(np.exp(7 + 1.2 * np.log1p(carat) + rng.normal(0, .4, n)), 0)
    depth = np.round(rng.normal(61.7, 1.4, n), 1)
    df = pd.DataFrame({"cut": cut, "color": rng.choice(list("DEFGHIJ"), n), "clarity": rng.choice(
        ["I1", "SI2", "SI1", "VS2", "VS1", "VVS2", "VVS1", "IF"], n), "carat": carat, "price": price, "depth": depth})
    edges = {"carat": [0, 0.5, 1, 1.5, 2, 3, 6], "price": [0, 1000, 2000, 4000, 8000, 16000, 1e6],
             "depth": [40, 59, 61, 62, 63, 65, 80]}
    return df, edges


def run(label: str, df: pd.DataFrame, dom, eps, reps) -> None:
    sweep_mod.clear_cache()
    t0 = time.perf_counter()
    res = sweep_mod.sweep(df, METHODS, eps, reps, measures=MEASURES, domain=dom, specks_model="main", sets=1)
    wall = time.perf_counter() - t0
    sp = res[res["measure"] == "specks"].groupby(["method", "epsilon"])["value"].mean()
    spec = ", ".join(f"{m} ε={e:g}: {v:.2f}" for (m, e), v in sp.items())
    print(f"| {label} | {len(res) // len(MEASURES)} | {wall:.1f} | {spec} |", flush=True)


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="demo default,demo full,numeric", help="comma-separated cases to run")
    ap.add_argument("--numeric-rows", type=int, default=5000)
    args = ap.parse_args()
    cases = {c.strip() for c in args.cases.split(",")}
    s7 = pd.read_csv(ROOT / "assets" / "sd2011_s7.csv")
    s7_dom = dpcore.infer_domain(s7).declared()
    num, edges = numeric_table(args.numeric_rows)
    num_dom = dpcore.infer_domain(num, numeric=edges).declared()
    print(f"dpcore from {Path(dpcore.__file__).resolve().parent}")
    print("| case | releases | wall s | SPECKS (mean per method and ε) |")
    print("|---|---:|---:|---|")
    if "demo default" in cases:
        run("demo default", s7, s7_dom, [0.1, 1.0, 10.0], 2)
    if "demo full" in cases:
        run("demo full", s7, s7_dom, [0.1, 0.5, 1.0, 2.0, 5.0], 3)
    if "numeric" in cases:
        run(f"numeric ({len(num):,} rows)", num, num_dom, [0.1, 1.0, 10.0], 2)


if __name__ == "__main__":
    main()
