"""Do the 2021 STEPS paper's qualitative findings hold on the CPS voter data?

    cd <repo> && PYTHONPATH=. .venv/bin/python bench/papers/findings_voters.py            # the sweep + plots
    cd <repo> && PYTHONPATH=. .venv/bin/python bench/papers/findings_voters.py --plots    # redraw from the CSV only

Data: ``dpcore.data.datasets.cps_voter_extract(load_cps_vrs())``, the cpsvote sample named by ``$DPCORE_CPS_VRS``
(adults asked the voting questions; categorical attributes), with the domain inferred
from it and declared (``infer_domain(df).declared()``) once and passed to every release.

Sweep (``dpcore.metrics.sweep``): ε ∈ {e⁻², e⁻¹, 1, e, e²}, ``--reps`` repetitions
(default 5), m = 1 synthetic set per release, base seed 2021, for

- STEPS-2 and STEPS-3 with select = mosda, lesda and random (other options default:
  allocation half, consistency nonneg, utility aic, r = 0.1 for the private selections);
- STEPS-2 MoSDA with allocation = equal;
- flat_laplace and ipf (defaults), ipf only if it is in ``dpcore.METHODS``.

Measures: SPECKS (propensity model with all pairwise interactions) and its pMSE, mean
two-way S_pMSE, ru and ru as % of p1.  **Not differentially private**: the measures
read the raw data (curator-only evaluation).

Writes bench/data/findings-voters.csv (tidy: method, options, epsilon, rep, measure, value),
bench/data/findings-voters-{specks,spmse,ru,risk-utility}.png, bench/out/findings-voters.json
(machine, runtime, command) and prints the summary tables and comparisons quoted in
bench/papers/FINDINGS.md.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

BENCH = Path(__file__).resolve().parents[1]
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH / "tools"))  # _machine

import dpcore  # noqa: E402
from dpcore.metrics import sweep  # noqa: E402

from _machine import describe, machine  # noqa: E402

DATA = BENCH / "data"
CSV = DATA / "findings-voters.csv"
META = BENCH / "out" / "findings-voters.json"
CACHE = BENCH / "out" / "findings-voters-cache"
EPSILONS = [math.exp(k) for k in (-2, -1, 0, 1, 2)]
EPS_LABELS = ["e⁻²", "e⁻¹", "1", "e", "e²"]
MEASURES = ("specks", "pmse", "s_pmse", "ru", "ru_pct_of_p1")
SEED = 2021

METHODS = [
    ("STEPS-2 MoSDA", "steps", {"layers": 2, "select": "mosda"}),
    ("STEPS-2 LeSDA", "steps", {"layers": 2, "select": "lesda"}),
    ("STEPS-2 random", "steps", {"layers": 2, "select": "random"}),
    ("STEPS-3 MoSDA", "steps", {"layers": 3, "select": "mosda"}),
    ("STEPS-3 LeSDA", "steps", {"layers": 3, "select": "lesda"}),
    ("STEPS-3 random", "steps", {"layers": 3, "select": "random"}),
    ("STEPS-2 MoSDA equal", "steps", {"layers": 2, "select": "mosda", "allocation": "equal"}),
    ("flat_laplace", "flat_laplace", {}),
    ("ipf", "ipf", {}),
]

# Okabe & Ito (2008) colour-blind-safe palette
OI = {"orange": "#E69F00", "sky": "#56B4E9", "green": "#009E73", "yellow": "#F0E442", "blue": "#0072B2",
      "vermillion": "#D55E00", "purple": "#CC79A7", "black": "#000000", "grey": "#999999"}
STYLE = {  # label -> (colour, dash, marker)
    "STEPS-2 MoSDA": (OI["blue"], "solid", "circle"),
    "STEPS-2 LeSDA": (OI["vermillion"], "solid", "square"),
    "STEPS-2 random": (OI["green"], "solid", "diamond"),
    "STEPS-3 MoSDA": (OI["blue"], "dash", "circle-open"),
    "STEPS-3 LeSDA": (OI["vermillion"], "dash", "square-open"),
    "STEPS-3 random": (OI["green"], "dash", "diamond-open"),
    "STEPS-2 MoSDA equal": (OI["sky"], "dot", "triangle-up"),
    "flat_laplace": (OI["black"], "solid", "x"),
    "ipf": (OI["purple"], "dashdot", "cross"),
}
PANELS = [
    ("Tree ordering (half allocation)", ["STEPS-2 MoSDA", "STEPS-2 LeSDA", "STEPS-2 random",
                                         "STEPS-3 MoSDA", "STEPS-3 LeSDA", "STEPS-3 random"]),
    ("Allocation and comparators", ["STEPS-2 MoSDA", "STEPS-2 MoSDA equal", "flat_laplace", "ipf"]),
]
LOG_TICKS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]
MEASURE_TITLES = {  # measure -> (plot title, y-axis title)
    "specks": ("SPECKS (KS distance of propensity scores, pairwise-interaction model; lower = better utility)",
               "SPECKS KS distance (0–1)"),
    "s_pmse": ("mean two-way S_pMSE over the 45 two-way tables (lower = better utility)",
               "mean two-way S_pMSE (ratio, log scale)"),
    "ru_pct_of_p1": ("replicated uniques as % of the original's unique records p1 (lower = less risk)",
                     "ru, % of p1"),
}


def load_voters() -> pd.DataFrame:
    from dpcore.data.datasets import cps_voter_extract, load_cps_vrs
    return cps_voter_extract(load_cps_vrs())


def run_sweep(reps: int) -> tuple[pd.DataFrame, dict]:
    df = load_voters()
    dom = dpcore.infer_domain(df).declared()
    methods = [m for m in METHODS if m[1] in dpcore.METHODS]
    skipped = [m[0] for m in METHODS if m[1] not in dpcore.METHODS]
    levels = {c: int(df[c].nunique(dropna=False)) for c in df.columns}
    print(f"voter extract: {df.shape[0]} rows × {df.shape[1]} attributes; levels {levels}; "
          f"{int(np.prod(dom.shape)):,} cells", flush=True)
    print(f"dpcore.METHODS = {dpcore.METHODS}; skipped: {skipped or 'none'}", flush=True)
    timings: dict[str, float] = {}
    parts = []
    for label, name, opts in methods:
        t0 = time.perf_counter()

        def progress(done, total, msg):
            if done == total or done % reps == 0:
                print(f"  [{done}/{total}] {msg}", flush=True)

        part = sweep(df, [(label, name, opts)], EPSILONS, reps, measures=MEASURES,
                                    progress=progress, domain=dom, seed=SEED, cache_dir=CACHE)
        timings[label] = time.perf_counter() - t0
        if part.attrs.get("errors"):
            print("  errors:", part.attrs["errors"], flush=True)
        print(f"{label}: {timings[label]:.0f} s ({part.attrs['releases']} releases, "
              f"{part.attrs['cache_hits']} cached)", flush=True)
        parts.append(part)
    out = pd.concat(parts, ignore_index=True)
    info = {"n": int(df.shape[0]), "attributes": levels, "cells": int(np.prod(dom.shape)),
            "skipped": skipped, "timings_s": timings, "methods": dpcore.METHODS}
    return out, info


def summarise(res: pd.DataFrame) -> pd.DataFrame:
    g = res.groupby(["method", "epsilon", "measure"], sort=False)["value"]
    s = g.agg(["mean", "std", "min", "max", "count"]).reset_index()
    return s


# ----------------------------------------------------------------------------- plots

def _eps_axis(fig, row=None, col=None):
    kw = dict(type="log", tickvals=EPSILONS, ticktext=EPS_LABELS, title_text="privacy-loss budget ε (log scale)",
              showgrid=True, gridcolor="#e5e5e5", linecolor="#444", mirror=True, ticks="outside")
    if row is None:
        fig.update_xaxes(**kw)
    else:
        fig.update_xaxes(**kw, row=row, col=col)


def _rgba(hex_colour: str, a: float) -> str:
    h = hex_colour.lstrip("#")
    return f"rgba({int(h[0:2], 16)},{int(h[2:4], 16)},{int(h[4:6], 16)},{a})"


def plot_measure(summ: pd.DataFrame, measure: str, path: Path, reps: int, log_y: bool = False) -> None:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=[p[0] for p in PANELS], shared_yaxes=True,
                        horizontal_spacing=0.05)
    d = summ[summ["measure"] == measure]
    for col, (_, labels) in enumerate(PANELS, start=1):
        for label in labels:
            s = d[d["method"] == label].sort_values("epsilon")
            if s.empty:
                continue
            colour, dash, marker = STYLE[label]
            x = s["epsilon"].to_numpy()
            lo, hi = s["min"].to_numpy(), s["max"].to_numpy()
            fig.add_trace(go.Scatter(x=np.r_[x, x[::-1]], y=np.r_[hi, lo[::-1]], fill="toself", mode="lines",
                                     fillcolor=_rgba(colour, 0.13), line=dict(width=0), hoverinfo="skip",
                                     showlegend=False), row=1, col=col)
            fig.add_trace(go.Scatter(x=x, y=s["mean"], mode="lines+markers", name=label,
                                     legendgroup=label, showlegend=(col == 1 or label not in PANELS[0][1]),
                                     line=dict(color=colour, dash=dash, width=2.2),
                                     marker=dict(symbol=marker, size=8, color=colour)), row=1, col=col)
    _eps_axis(fig)
    ptitle, ytitle = MEASURE_TITLES[measure]
    fig.update_yaxes(showgrid=True, gridcolor="#e5e5e5", linecolor="#444", mirror=True, ticks="outside")
    if log_y:
        fig.update_yaxes(type="log", tickvals=LOG_TICKS, ticktext=[f"{v:g}" for v in LOG_TICKS])
    fig.update_yaxes(title_text=ytitle, row=1, col=1)
    fig.update_layout(
        title=dict(text=f"CPS voter extract: {ptitle}<br><sup>lines: mean of {reps} "
                        f"repetitions (m = 1 set each); bands: min–max over the repetitions</sup>", x=0.01),
        template="plotly_white", width=1250, height=560, font=dict(family="Arial, Helvetica, sans-serif", size=13),
        legend=dict(orientation="h", yanchor="top", y=-0.17, x=0.0), margin=dict(l=80, r=20, t=90, b=130))
    fig.write_image(str(path), scale=2)
    print("wrote", path)


def plot_risk_utility(summ: pd.DataFrame, path: Path, reps: int) -> None:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    w = summ.pivot_table(index=["method", "epsilon"], columns="measure", values="mean").reset_index()
    sd = summ.pivot_table(index=["method", "epsilon"], columns="measure", values="std").reset_index()
    fig = make_subplots(rows=1, cols=2, subplot_titles=[p[0] for p in PANELS], shared_yaxes=True,
                        horizontal_spacing=0.05)
    for col, (_, labels) in enumerate(PANELS, start=1):
        for label in labels:
            s = w[w["method"] == label].sort_values("epsilon")
            e = sd[sd["method"] == label].sort_values("epsilon")
            if s.empty:
                continue
            colour, dash, marker = STYLE[label]
            # label ε = 1, e, e² only: the low-ε points pile up near (S_pMSE ≈ 400, ru ≈ 0)
            text = [EPS_LABELS[i] if i >= 2 else "" for i in
                    (EPSILONS.index(min(EPSILONS, key=lambda v: abs(v - x))) for x in s["epsilon"])]
            fig.add_trace(go.Scatter(
                x=s["s_pmse"], y=s["ru_pct_of_p1"], mode="lines+markers+text", name=label, legendgroup=label,
                showlegend=(col == 1 or label not in PANELS[0][1]), text=text, textposition="top center",
                textfont=dict(size=10, color=colour),
                error_y=dict(type="data", array=e["ru_pct_of_p1"], color=colour, thickness=1, width=3),
                line=dict(color=colour, dash=dash, width=1.6), marker=dict(symbol=marker, size=9, color=colour)),
                row=1, col=col)
    lo = max(0.5, float(w["s_pmse"].min()) / 1.5)
    hi = float(w["s_pmse"].max()) * 1.3
    fig.update_xaxes(type="log", range=[math.log10(lo), math.log10(hi)], tickvals=LOG_TICKS,
                     ticktext=[f"{v:g}" for v in LOG_TICKS], showgrid=True, gridcolor="#e5e5e5",
                     linecolor="#444", mirror=True, ticks="outside",
                     title_text="mean two-way S_pMSE (log scale; lower = more utility)")
    fig.update_yaxes(showgrid=True, gridcolor="#e5e5e5", linecolor="#444", mirror=True, ticks="outside")
    fig.update_yaxes(title_text="ru, % of p1 (higher = more risk)", row=1, col=1)
    fig.update_layout(
        title=dict(text=f"CPS voter extract: risk–utility<br><sup>points: mean of {reps} repetitions at each ε "
                        "(labelled for ε = 1, e, e²; the unlabelled points at the lower right are ε = e⁻², e⁻¹); "
                        "error bars: ±1 sd of ru%p1 over the repetitions</sup>", x=0.01),
        template="plotly_white", width=1250, height=600, font=dict(family="Arial, Helvetica, sans-serif", size=13),
        legend=dict(orientation="h", yanchor="top", y=-0.16, x=0.0), margin=dict(l=80, r=20, t=90, b=130))
    fig.write_image(str(path), scale=2)
    print("wrote", path)


def plots(res: pd.DataFrame, reps: int) -> None:
    summ = summarise(res)
    plot_measure(summ, "specks", DATA / "findings-voters-specks.png", reps)
    plot_measure(summ, "s_pmse", DATA / "findings-voters-spmse.png", reps, log_y=True)
    plot_measure(summ, "ru_pct_of_p1", DATA / "findings-voters-ru.png", reps)
    plot_risk_utility(summ, DATA / "findings-voters-risk-utility.png", reps)


# ----------------------------------------------------------------------------- report

def _cell(s: pd.DataFrame, fmt: str) -> str:
    return f"{s['mean']:{fmt}} ± {s['std']:{fmt}}"


def report(res: pd.DataFrame) -> None:
    from scipy.stats import ttest_ind

    summ = summarise(res)
    fmts = {"specks": ".3f", "pmse": ".4f", "s_pmse": ".1f", "ru": ".3f", "ru_pct_of_p1": ".2f"}
    for measure in ("specks", "s_pmse", "ru_pct_of_p1", "pmse"):
        print(f"\n### {measure}: mean ± sd over reps\n")
        print("| method | " + " | ".join(f"ε = {e}" for e in EPS_LABELS) + " |")
        print("|---|" + "---:|" * len(EPS_LABELS))
        for label in summ["method"].unique():
            cells = []
            for e in EPSILONS:
                s = summ[(summ["method"] == label) & (summ["measure"] == measure) & np.isclose(summ["epsilon"], e)]
                cells.append(_cell(s.iloc[0], fmts[measure]) if len(s) else "—")
            print(f"| {label} | " + " | ".join(cells) + " |")

    def vals(label, e, measure):
        r = res[(res["method"] == label) & (res["measure"] == measure) & np.isclose(res["epsilon"], e)]
        return r["value"].to_numpy()

    comparisons = [
        ("STEPS-2 MoSDA", "STEPS-2 LeSDA"), ("STEPS-2 MoSDA", "STEPS-2 random"),
        ("STEPS-3 MoSDA", "STEPS-3 LeSDA"), ("STEPS-3 MoSDA", "STEPS-3 random"),
        ("STEPS-2 LeSDA", "STEPS-2 random"), ("STEPS-3 LeSDA", "STEPS-3 random"),
        ("STEPS-2 MoSDA", "flat_laplace"), ("STEPS-3 MoSDA", "flat_laplace"),
        ("STEPS-2 random", "flat_laplace"),
        ("STEPS-2 MoSDA", "STEPS-2 MoSDA equal"),
        ("STEPS-2 MoSDA", "ipf"),
    ]
    have = set(res["method"])
    for measure in ("specks", "s_pmse", "ru_pct_of_p1"):
        print(f"\n### {measure}: A − B (mean difference; Welch t-test p; reps per side)\n")
        print("| A vs B | " + " | ".join(f"ε = {e}" for e in EPS_LABELS) + " |")
        print("|---|" + "---:|" * len(EPS_LABELS))
        for a, b in comparisons:
            if a not in have or b not in have:
                continue
            cells = []
            for e in EPSILONS:
                va, vb = vals(a, e, measure), vals(b, e, measure)
                va, vb = va[~np.isnan(va)], vb[~np.isnan(vb)]
                if len(va) < 2 or len(vb) < 2:
                    cells.append("—")
                    continue
                diff = va.mean() - vb.mean()
                p = ttest_ind(va, vb, equal_var=False).pvalue if (va.std() + vb.std()) > 0 else float("nan")
                cells.append(f"{diff:+{fmts[measure]}} (p={p:.2g})")
            print(f"| {a} vs {b} | " + " | ".join(cells) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--plots", action="store_true", help="redraw the plots and report from the CSV only")
    args = ap.parse_args()
    if args.plots:
        res = pd.read_csv(CSV)
        reps = int(res["rep"].max())
        plots(res, reps)
        report(res)
        return
    t0 = time.perf_counter()
    info = machine()
    print("machine:", describe(info), flush=True)
    res, extra = run_sweep(args.reps)
    runtime = time.perf_counter() - t0
    res.to_csv(CSV, index=False)
    print("wrote", CSV)
    META.parent.mkdir(parents=True, exist_ok=True)
    META.write_text(json.dumps({
        "machine": info, "runtime_s": runtime, "reps": args.reps, "epsilons": EPSILONS, "seed": SEED,
        "command": "PYTHONPATH=. .venv/bin/python bench/papers/findings_voters.py " + " ".join(sys.argv[1:]),
        **extra}, indent=1, default=str))
    plots(res, args.reps)
    report(res)
    print(f"\nsweep + plots runtime: {time.perf_counter() - t0:.0f} s (sweep alone {runtime:.0f} s)")


if __name__ == "__main__":
    main()
