"""Release report and DP quantile edges: wall time on the bundled demos.

    PYTHONPATH=. .venv/bin/python bench/speed/report_speed.py [--runs N]

Median of ``--runs`` (default 3) of: the HTML report without the raw data (what may be
published), with the raw data (curator copy: S_pMSE, SPECKS, replicated uniques, bar
charts), the PDF print by headless Chromium, and one release with ``dp_bins`` against the
same release without it (the DP quantiles' own cost).
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import dpcore
from dpcore.data.io import read_table
from dpcore.studio.report import find_chromium, html_to_pdf, release_report_html

ROOT = Path(__file__).resolve().parents[2]  # the repository (bench/speed/ is two levels down)


def _median(fn, runs):
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    runs = ap.parse_args().runs
    for name, file in (("sd2011_s7", "sd2011_s7.csv"), ("cps_voters", "cps_voters.csv")):
        df = read_table(ROOT / "assets" / file)
        dom = dpcore.infer_domain(df).declared()
        rel = dpcore.synthesize(df, "flat_laplace", 1.0, sets=5, seed=1, domain=dom)
        html = release_report_html(rel, df)
        pub = _median(lambda rel=rel: release_report_html(rel, None), runs)
        cur = _median(lambda rel=rel, df=df: release_report_html(rel, df), runs)
        pdf = float("nan")
        if find_chromium():
            with tempfile.TemporaryDirectory() as tmp:
                pdf = _median(lambda html=html, tmp=tmp: html_to_pdf(html, Path(tmp) / "r.pdf"), runs)
        print(f"{name} ({len(df)} × {df.shape[1]}, m = 5): report HTML public {pub:.2f} s, curator {cur:.2f} s, "
              f"PDF {pdf:.2f} s, HTML size {len(html) / 1e6:.1f} MB")
    rng = np.random.default_rng(0)
    n = 100_000
    df = pd.DataFrame({"age": rng.integers(0, 100, n), "income": rng.gamma(2.0, 20_000.0, n).round(2),
                       "sex": rng.choice(["f", "m"], n)})
    dom = dpcore.infer_domain(df, numeric={"age": {"bounds": [0, 100], "bins": 10},
                                           "income": {"bounds": [0, 1e6], "bins": 10}}).declared()
    spec = {"age": {"bins": 10, "lower": 0, "upper": 100}, "income": {"bins": 10, "lower": 0, "upper": 1e6}}
    base = _median(lambda: dpcore.synthesize(df, "flat_laplace", 1.0, seed=1, domain=dom), runs)
    with_bins = _median(lambda: dpcore.synthesize(df, "flat_laplace", 1.0, seed=1, domain=dom, dp_bins=spec), runs)
    print(f"synthetic 100,000 × 3, flat_laplace, ε = 1: without dp_bins {base:.3f} s, with dp_bins "
          f"(age 10 bins on 99 integer points, income 10 bins on 4095 grid points) {with_bins:.3f} s")


if __name__ == "__main__":
    main()
