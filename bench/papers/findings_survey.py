"""Findings for dpcore.survey (Merrill 2021, chapters 4-7). Run:

    .venv/bin/python bench/papers/findings_survey.py            # ~65 s on 2 cores
    .venv/bin/python bench/papers/findings_survey.py --plots    # redraw the PNGs from the CSVs only

Writes bench/data/findings-survey-*.csv (figure data), draws them with Plotly as
bench/data/findings-survey-fig64.png and bench/data/findings-survey-context.png (static export through
kaleido, which needs a Chromium), and prints the numbers quoted in bench/papers/FINDINGS-survey.md.

1. Table 5.1 (amplification).
2. The chapter-7 running example (Figs 7.1-7.6, Example 7.4.4).
3. Fig 6.4 on SD2011: the DP mean income of ages 20-59 at ε = 6 ln 2 with the smooth
   release (Cor 6.4.6), ignore-missing + Laplace and impute + optimistic-global Laplace,
   200 repetitions; (a) the real 683 missing incomes, (b) missingness simulated on the
   complete records (so the truth is known), as in §6.5.1.
4. Noise in context (ch. 4): a 50 % SRS of the simulated population, sampling error vs
   sampling + DP error of the smooth release over an ε grid.
"""
from __future__ import annotations

import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]  # the repository (bench/papers/ is two levels down)
sys.path.insert(0, str(ROOT))

from dpcore.data.datasets import SD2011_LEVELS  # noqa: E402
from dpcore.survey import bins as B  # noqa: E402
from dpcore.survey import context as C  # noqa: E402
from dpcore.survey import imputation as I  # noqa: E402
from dpcore.survey import poststrat as ps  # noqa: E402
from dpcore.survey.knn import knn_impute  # noqa: E402
from dpcore.survey.partition import amplification_table  # noqa: E402

OUT = ROOT / "bench" / "data"
LN2 = math.log(2)
EPS = 6 * LN2
REPS = 200
BOUNDS = (0.0, 20_000.0)  # declared public income bounds (PLN per month); no income exceeds them
MATCH = ["sex", "agegr", "edu", "socprof", "placesize"]
ORDINAL = ["agegr", "edu", "placesize"]
LEVELS = SD2011_LEVELS


def section(t):
    print(f"\n## {t}\n")


def table51():
    section("Table 5.1")
    t = amplification_table()
    print(t.to_string(index=False, float_format=lambda x: f"{x:.4f}"))


def running_example():
    section("Chapter 7 running example")
    ages = ["0-12", "13-18", "19-39", "40-64", "65+"]
    cands = {
        "separate": {a: a for a in ages},
        "minors": {"0-12": "0-18", "13-18": "0-18", "19-39": "19-39", "40-64": "40-64", "65+": "65+"},
        "adults": {"0-12": "0-12", "13-18": "13-18", "19-39": "19+", "40-64": "19+", "65+": "19+"},
        "minors-adults": {"0-12": "0-18", "13-18": "0-18", "19-39": "19+", "40-64": "19+", "65+": "19+"},
        "all": {a: "0+" for a in ages},
    }
    b = B.binning("age", ages, cands)
    totals = {"age": {a: 100_000 for a in ages}}
    for name, counts in (("A", [1300, 100, 1200, 1200, 1200]), ("B", [1600, 100, 1600, 1600, 100])):
        df = pd.DataFrame({"age": np.repeat(ages, counts)})
        e = ps.expected_noise_sd(df, b, totals, 0.01, 1.0, gamma=4)
        print(f"sample {name}: W0 = {np.round(e['W0'], 1).tolist()}")
        print(f"  P(select) at eps=0.01 = {np.round(e['probabilities'], 4).tolist()}")
        print(f"  sigma at eps=1, gamma=4 = {np.round(e['sd'], 1).tolist()}; E[sigma] = {e['expected_sd']:.1f}")
        print(f"  SS_beta == W0: {bool(np.allclose(e['smooth'], e['W0']))}")


def load_sd2011():
    d = pd.read_csv(ROOT / "assets" / "sd2011.csv")
    # -8 is SD2011's code for "not applicable" (no personal income): taken as 0, the only
    # recoding; all other observed incomes are used as they are.
    d["income"] = d["income"].where(d["income"] != -8, 0.0)
    return d


def run_methods(df, mask, truth, rng, reps):
    """reps DP releases per method on one imputed table; returns rows (method, rep, estimate)."""
    imp = knn_impute(df, "income", MATCH, ordinal=ORDINAL, levels=LEVELS)
    s = float(mask.sum())
    s_cc = float((mask & ~imp.incomplete).sum())
    rows = []
    for r in range(reps):
        rows.append(("smooth (Cor 6.4.6)", r, I.release_mean(imp, EPS, rng, bounds=BOUNDS, where=mask, size=s).value))
        rows.append(("smooth, size unknown (Rem 6.4.7)", r,
                     I.release_mean(imp, EPS, rng, bounds=BOUNDS, where=mask).value))
        rows.append(("ignore missing + Laplace", r,
                     I.release_mean_ignoring_missing(imp, EPS, rng, bounds=BOUNDS, where=mask, size=s_cc).value))
        rows.append(("impute + global Laplace (not DP)", r,
                     I.release_mean_global(imp, EPS, rng, bounds=BOUNDS, where=mask, size=s).value))
    exact = float(np.clip(imp.values[mask], *BOUNDS).mean())
    cc = float(np.clip(imp.observed[mask & ~imp.incomplete], *BOUNDS).mean())
    return rows, imp, exact, cc


def summary(frame, truth_col="truth"):
    out = []
    for m, g in frame.groupby("method", sort=False):
        err = g["estimate"] - g[truth_col]
        q = np.percentile(g["estimate"], [5, 25, 50, 75, 95])
        out.append({"method": m, "MSE": float((err ** 2).mean()), "bias": float(err.mean()),
                    "median |err|": float(err.abs().median()), "p5": q[0], "q1": q[1], "median": q[2], "q3": q[3],
                    "p95": q[4]})
    return pd.DataFrame(out)


def fig64_real(d, rng):
    section("Fig 6.4 on SD2011, real missingness (truth proxy: the non-private 1-NN imputed mean)")
    mask = ((d["age"] >= 20) & (d["age"] <= 59)).to_numpy()
    t = time.perf_counter()
    rows, imp, exact, cc = run_methods(d, mask, None, rng, REPS)
    print(f"n = {len(d)}, donees = {imp.n_donees}, ages 20-59: s = {int(mask.sum())} "
          f"({int((mask & imp.incomplete).sum())} imputed)")
    print(f"L1(D) = {imp.L1}, cases = {imp.L1_cases}, grid = {imp.grid_size} points")
    print(f"imputed mean = {exact:.2f}; complete-case mean = {cc:.2f} (difference {cc - exact:+.2f})")
    s_, s_cc = float(mask.sum()), float((mask & ~imp.incomplete).sum())
    sm = I.release_mean(imp, EPS, rng, bounds=BOUNDS, where=mask, size=s_)
    ig = I.release_mean_ignoring_missing(imp, EPS, rng, bounds=BOUNDS, where=mask, size=s_cc)
    gl = I.release_mean_global(imp, EPS, rng, bounds=BOUNDS, where=mask, size=s_)
    print(f"noise sd: smooth {sm.noise_sd:.1f} (S(D) = {sm.smooth_sensitivity:.2f}, gamma = {sm.gamma:g}); "
          f"ignore {ig.noise_sd:.2f}; global {gl.noise_sd:.1f}")
    print(f"expected MSE against the imputed mean: smooth {sm.noise_variance:.0f}; "
          f"ignore {(cc - exact) ** 2 + ig.noise_sd ** 2:.0f}; global {gl.noise_sd ** 2:.0f}")
    print("smooth noise sd as eps grows (scale S/ln 2 is fixed, only gamma changes): " + ", ".join(
        f"{k} ln2: {I.release_mean(imp, k * LN2, rng, bounds=BOUNDS, where=mask, size=s_).noise_sd:.1f}"
        for k in (5, 6, 10, 20, 100)))
    f = pd.DataFrame(rows, columns=["method", "rep", "estimate"])
    f["truth"] = exact
    f["experiment"] = "real missingness"
    print(summary(f).to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    print(f"({time.perf_counter() - t:.1f} s)")
    return f


def missingness_model(d):
    """P(income missing | matching attributes), a logistic regression on SD2011's real pattern."""
    from sklearn.linear_model import LogisticRegression

    X = pd.get_dummies(d[MATCH].fillna("NA").astype(str), drop_first=True).to_numpy(float)
    y = d["income"].isna().to_numpy()
    model = LogisticRegression(max_iter=2000).fit(X, y)
    return model, X


def fig64_simulated(d, rng):
    section("Fig 6.4 on SD2011, simulated missingness (truth known), 200 repetitions")
    model, X = missingness_model(d)
    obs = d["income"].notna().to_numpy()
    pop = d[obs].reset_index(drop=True)
    p = model.predict_proba(X[obs])[:, 1]
    mask = ((pop["age"] >= 20) & (pop["age"] <= 59)).to_numpy()
    truth = float(np.clip(pop["income"][mask], *BOUNDS).mean())
    print(f"population: {len(pop)} complete records, ages 20-59: {int(mask.sum())}, true mean = {truth:.2f}; "
          f"simulated missing rate {p.mean():.3f} (ages 20-59: {p[mask].mean():.3f})")
    t = time.perf_counter()
    rows, L1s = [], []
    for r in range(REPS):
        miss = rng.random(len(pop)) < p
        df = pop.assign(income=pop["income"].where(~miss))
        rr, imp, exact, cc = run_methods(df, mask, truth, rng, 1)
        rows += [(m, r, v) for m, _, v in rr]
        rows.append(("no DP: imputed", r, exact))
        rows.append(("no DP: complete cases", r, cc))
        L1s.append(imp.L1)
    f = pd.DataFrame(rows, columns=["method", "rep", "estimate"])
    f["truth"] = truth
    f["experiment"] = "simulated missingness"
    print(f"L1(D) over repetitions: median {np.median(L1s):.0f}, range {min(L1s)}-{max(L1s)}")
    print(summary(f).to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    print(f"({time.perf_counter() - t:.1f} s)")
    return f, pop, p, truth, mask


def context(pop, p, truth, rng):
    section("Noise in context: 50% SRS of the simulated population, smooth release, 60 repetitions")
    miss = rng.random(len(pop)) < p
    popm = pop.assign(income=pop["income"].where(~miss))
    where = lambda s: ((s["age"] >= 20) & (s["age"] <= 59)).to_numpy()
    rel = C.imputation_release("income", MATCH, BOUNDS, where=where, ordinal=ORDINAL, levels=LEVELS)

    def est(s):
        imp = knn_impute(s, "income", MATCH, ordinal=ORDINAL, levels=LEVELS)
        return float(np.clip(imp.values[where(s)], *BOUNDS).mean())

    t = time.perf_counter()
    f = C.noise_in_context(popm, C.Design(0.5), None, [2 * LN2, 4 * LN2, 6 * LN2, 10 * LN2, 20 * LN2], 60, rng,
                           release=rel, estimator=est, truth=truth)
    st = C.summarize(f)
    print(st.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    print(f"({time.perf_counter() - t:.1f} s)")
    return f


# Okabe-Ito colour-blind-safe palette.
OKABE_ITO = {"orange": "#E69F00", "sky": "#56B4E9", "green": "#009E73", "yellow": "#F0E442", "blue": "#0072B2",
             "vermillion": "#D55E00", "purple": "#CC79A7", "black": "#000000"}
FIG64_METHODS = [  # (method in the CSV, axis label, colour)
    ("smooth (Cor 6.4.6)", "impute + smooth<br>sensitivity (Cor 6.4.6)", OKABE_ITO["blue"]),
    ("ignore missing + Laplace", "ignore missing<br>+ Laplace", OKABE_ITO["orange"]),
    ("impute + global Laplace (not DP)", "impute + global<br>Laplace (not DP)", OKABE_ITO["purple"]),
]
FIG64_PANELS = [  # (experiment in the CSV, panel title)
    ("real missingness", "(a) real missingness<br><sup>error against the non-private imputed mean</sup>"),
    ("simulated missingness", "(b) simulated missingness<br><sup>error against the true mean</sup>"),
]
FONT = dict(family="Arial, Helvetica, sans-serif", size=14, color="#222")


def _sci(x):
    """1.2·10⁴-style label for the MSEs."""
    if x < 1000:
        return f"{x:.0f}"
    e = int(math.floor(math.log10(x)))
    sup = str(e).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))
    return f"{x / 10 ** e:.2g}·10{sup}"


def fig64_figure(frame):
    """Fig 6.4 as an MSE comparison: per experiment and method, the squared error of the 200
    DP releases on a log axis (box: IQR, whiskers: 5th-95th percentiles, as in the thesis) with
    the MSE (their mean) as a diamond and in the axis label."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.05,
                        subplot_titles=[t for _, t in FIG64_PANELS])
    for col, (exp, _) in enumerate(FIG64_PANELS, start=1):
        g = frame[frame["experiment"] == exp]
        for method, label, color in FIG64_METHODS:
            m = g[g["method"] == method]
            se = ((m["estimate"] - m["truth"]) ** 2).to_numpy(float)
            q = np.percentile(se, [5, 25, 50, 75, 95])
            mse = float(se.mean())
            x = [f"{label}<br><b>MSE {_sci(mse)}</b>"]
            fig.add_trace(go.Box(
                x=x, q1=[q[1]], median=[q[2]], q3=[q[3]], lowerfence=[q[0]], upperfence=[q[4]],
                name=label.replace("<br>", " "), marker_color=color, fillcolor=color,
                line=dict(color="#222", width=1.5), boxpoints=False, width=0.5, showlegend=False,
            ), row=1, col=col)
            fig.add_trace(go.Scatter(
                x=x, y=[mse], mode="markers",
                marker=dict(symbol="diamond", size=13, color="white", line=dict(color="black", width=2)),
                name="MSE (mean of the 200 squared errors)", legendgroup="mse",
                showlegend=(col == 1 and method == FIG64_METHODS[0][0]),
            ), row=1, col=col)
    fig.update_yaxes(type="log", exponentformat="power", showgrid=True, gridcolor="#ddd", dtick=1,
                     zeroline=False, linecolor="#444", ticks="outside")
    fig.update_yaxes(title_text="squared error of the released mean (PLN², log scale)", row=1, col=1)
    fig.update_xaxes(linecolor="#444", tickfont=dict(size=13))
    fig.update_layout(
        title=dict(text="DP mean monthly income, ages 20–59, SD2011, ε = 6 ln 2: squared error of 200 releases "
                        "per method<br><sup>box: interquartile range; whiskers: 5th–95th percentiles; "
                        "diamond: mean squared error (MSE)</sup>", x=0.5, xanchor="center"),
        font=FONT, plot_bgcolor="white", paper_bgcolor="white", margin=dict(l=90, r=30, t=130, b=70),
        legend=dict(orientation="h", x=1, xanchor="right", y=-0.17, yanchor="top"),
    )
    return fig


def context_plot(frame):
    """The noise-in-context figure from dpcore.survey.context, restyled: Okabe-Ito colours,
    ε on the x axis as multiples of ln 2, units on the y axis, the truth in the legend."""
    import plotly.graph_objects as go

    fig = C.context_figure(frame, title="Noise in context: DP mean monthly income, ages 20–59, "
                                        "50 % simple random samples of SD2011 (60 per ε)", show="estimate",
                           labels=("sampling + DP (smooth release, Cor 6.4.6)", "sampling only (no DP)"))
    colors = (OKABE_ITO["vermillion"], OKABE_ITO["blue"])
    eps = sorted(frame["epsilon"].unique())
    ticks = {f"{e:g}": f"{e / LN2:.3g} ln 2<br>(γ = {1 + e / (2 * LN2):.3g})" for e in eps}
    for tr, c in zip(fig.data, colors):
        tr.update(x=[ticks[x] for x in tr.x], marker_color=c, line=dict(color="#222", width=1.5), fillcolor=c,
                  opacity=0.85, mean=None, boxmean=False)  # the heavy-tailed means only clutter the boxes
    truth = float(frame["truth"].iloc[0])
    fig.layout.annotations = [a for a in fig.layout.annotations if a.text != "truth"]
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", line=dict(color="black", dash="dash", width=2),
                             name=f"true mean ({truth:.1f} PLN)"))
    fig.update_layout(
        font=FONT, plot_bgcolor="white", paper_bgcolor="white", margin=dict(l=90, r=30, t=100, b=80),
        xaxis_title="privacy budget ε (tail parameter γ = 1 + ε / (2 ln 2))",
        yaxis_title="released mean income (PLN per month)",
        legend=dict(orientation="h", x=0.5, xanchor="center", y=-0.2, yanchor="top",
                    title_text=""),
        title=dict(text=fig.layout.title.text + "<br><sup>box: interquartile range, line in box: median; "
                        "whiskers: 5th–95th percentiles of the released mean</sup>", x=0.5, xanchor="center"),
    )
    fig.update_yaxes(showgrid=True, gridcolor="#ddd", zeroline=False, linecolor="#444", ticks="outside")
    fig.update_xaxes(linecolor="#444")
    return fig


def write_plots(fig64=None, ctx=None):
    fig64 = pd.read_csv(OUT / "findings-survey-fig64.csv") if fig64 is None else fig64
    ctx = pd.read_csv(OUT / "findings-survey-context.csv") if ctx is None else ctx
    fig64_figure(fig64).write_image(OUT / "findings-survey-fig64.png", width=1100, height=650, scale=2)
    context_plot(ctx).write_image(OUT / "findings-survey-context.png", width=1100, height=650, scale=2)
    print("wrote bench/data/findings-survey-fig64.png and bench/data/findings-survey-context.png")


def main():
    if "--plots" in sys.argv[1:]:
        write_plots()
        return
    warnings.simplefilter("ignore", RuntimeWarning)  # γ ≤ 3 at small ε is expected and reported
    rng = np.random.default_rng(20240601)
    table51()
    running_example()
    d = load_sd2011()
    f1 = fig64_real(d, rng)
    f2, pop, p, truth, _ = fig64_simulated(d, rng)
    pd.concat([f1, f2]).to_csv(OUT / "findings-survey-fig64.csv", index=False)
    fc = context(pop, p, truth, rng)
    fc.to_csv(OUT / "findings-survey-context.csv", index=False)
    print("\nwrote bench/data/findings-survey-fig64.csv and bench/data/findings-survey-context.csv")
    write_plots(pd.concat([f1, f2]), fc)


if __name__ == "__main__":
    main()
