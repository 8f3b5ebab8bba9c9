"""Findings for dpcore.survey (Merrill 2021, chapters 4-7). Run:

    .venv/bin/python bench/findings_survey.py            # ~2-3 minutes on 2 cores

Writes bench/findings-survey-*.csv (figure data: matplotlib and kaleido are not installed,
so no PNG is drawn) and prints the numbers quoted in bench/FINDINGS-survey.md.

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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dpcore.survey import context as C  # noqa: E402
from dpcore.survey import imputation as I  # noqa: E402
from dpcore.survey import poststrat as ps  # noqa: E402
from dpcore.survey.knn import knn_impute  # noqa: E402
from dpcore.survey.partition import amplification_table  # noqa: E402

OUT = ROOT / "bench"
LN2 = math.log(2)
EPS = 6 * LN2
REPS = 200
BOUNDS = (0.0, 20_000.0)  # declared public income bounds (PLN per month); no income exceeds them
MATCH = ["sex", "agegr", "edu", "socprof", "placesize"]
ORDINAL = ["agegr", "edu", "placesize"]
LEVELS = {
    "sex": ["FEMALE", "MALE"],
    "agegr": ["16-24", "25-34", "35-44", "45-59", "60-64", "65+"],
    "edu": ["PRIMARY/NO EDUCATION", "VOCATIONAL/GRAMMAR", "SECONDARY", "POST-SECONDARY OR HIGHER"],
    "socprof": ["EMPLOYED IN PRIVATE SECTOR", "EMPLOYED IN PUBLIC SECTOR", "FARMER", "LONG-TERM SICK/DISABLED",
                "OTHER ECONOMICALLY INACTIVE", "PUPIL OR STUDENT", "RETIRED", "SELF-EMPLOYED", "UNEMPLOYED"],
    "placesize": ["RURAL AREAS", "URBAN BELOW 20,000", "URBAN 20,000-100,000", "URBAN 100,000-200,000",
                  "URBAN 200,000-500,000", "URBAN 500,000 AND OVER"],
}


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
    b = ps.binning("age", ages, cands)
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
    rows, L1s, imputed_err = [], [], []
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
    where = lambda s: ((s["age"] >= 20) & (s["age"] <= 59)).to_numpy()  # noqa: E731
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


def main():
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
    print("\nwrote bench/findings-survey-fig64.csv and bench/findings-survey-context.csv")


if __name__ == "__main__":
    main()
