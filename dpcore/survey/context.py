"""DP noise in context (Merrill 2021, ch. 4): DP error next to sampling error.

Treat a table as the population, draw R samples by a known design, and for each sample
record the error of the plain (design-weighted) estimate, the *sampling error*, and the
error of a DP release on the same sample at each ε, the *sampling + DP error*. The
figure puts the two side by side per ε with the population value as a line (Figs 4.2,
4.3, 5.1, 6.4): boxes span the interquartile range, whiskers the 5th and 95th percentiles.

This is a simulation harness: it runs the curator's releases many times on data the
curator already holds, so its output (errors against the truth) is not itself a release.
Every DP release it calls states its own ε.

``release(sample, epsilon, rng) -> float`` can be any DP mechanism: the built-in Laplace
releases for counts, proportions and means (:func:`laplace_release`), the k-NN imputation
releases (:func:`imputation_release`), the post-stratified count (:func:`poststrat_release`)
or a marginal of a STEPS/IPF synthetic set (:func:`dpcore.studio.survey.synthetic_marginal_release`, in the
studio because it calls the release API).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpcore.errors import InputError, OptionError
from dpcore.privacy.ledger import check_epsilon
from dpcore.privacy.mechanisms import Laplace

__all__ = [
    "Design",
    "Query",
    "draw_sample",
    "laplace_release",
    "imputation_release",
    "poststrat_release",
    "noise_in_context",
    "summarize",
    "context_figure",
]

WEIGHT = "_design_weight"


@dataclass(frozen=True)
class Design:
    """Simple random sampling without replacement at ``rate``; with ``stratum`` set,
    stratified SRS with ``rates[level]`` per stratum (unlisted levels use ``rate``).
    Sample sizes are round(rate · N_h), so the design weight is N_h/n_h."""

    rate: float = 0.1
    stratum: str | None = None
    rates: Mapping | None = None

    def __post_init__(self):
        for r in [self.rate] + list((self.rates or {}).values()):
            if not (isinstance(r, (int, float)) and 0 < r <= 1):
                raise OptionError(f"sampling rates must be in (0, 1]; got {r!r}")
        if self.rates and not self.stratum:
            raise OptionError("rates by stratum need the stratum column (stratum=...)")

    def max_weight(self) -> float:
        """Largest design weight 1/rate (public: it is part of the design)."""
        return 1.0 / min([self.rate] + list((self.rates or {}).values()))


def draw_sample(population: pd.DataFrame, design: Design, rng: np.random.Generator) -> pd.DataFrame:
    """One sample with its design weights in column ``_design_weight``."""
    if design.stratum is None:
        groups = [np.arange(len(population))]
        rates = [design.rate]
    else:
        if design.stratum not in population.columns:
            raise InputError(f"stratum column {design.stratum!r} is not in the table")
        codes, levels = pd.factorize(population[design.stratum], use_na_sentinel=False)
        groups = [np.flatnonzero(codes == i) for i in range(len(levels))]
        rates = [(design.rates or {}).get(lv, design.rate) for lv in levels]
    take, w = [], []
    for idx, r in zip(groups, rates):
        n_h = max(1, int(round(r * len(idx))))
        pick = rng.choice(idx, size=n_h, replace=False)
        take.append(pick)
        w.append(np.full(n_h, len(idx) / n_h))
    take = np.concatenate(take)
    out = population.iloc[take].copy()
    out[WEIGHT] = np.concatenate(w)
    return out


@dataclass(frozen=True)
class Query:
    """A count, proportion or mean over the subpopulation ``where`` (a function of a frame
    returning a boolean mask; None = everyone). ``column`` and public ``bounds`` for means."""

    kind: str = "count"
    where: Callable | None = None
    column: str | None = None
    bounds: tuple | None = None

    def __post_init__(self):
        if self.kind not in ("count", "proportion", "mean"):
            raise OptionError(f"query kind must be count, proportion or mean; got {self.kind!r}")
        if self.kind == "mean" and (self.column is None or self.bounds is None):
            raise OptionError("a mean query needs column=... and public bounds=(a, b)")

    def mask(self, df: pd.DataFrame) -> np.ndarray:
        if self.where is None:
            return np.ones(len(df), bool)
        m = np.asarray(self.where(df))
        if m.dtype != bool or m.shape != (len(df),):
            raise InputError("the query's where must return one boolean per row")
        return m

    def truth(self, population: pd.DataFrame) -> float:
        m = self.mask(population)
        if self.kind == "count":
            return float(m.sum())
        if self.kind == "proportion":
            return float(m.mean())
        y = np.clip(population[self.column].to_numpy(float), *self.bounds)
        return float(y[m].mean())

    def estimate(self, sample: pd.DataFrame, population_size: int) -> float:
        """Design-weighted (Horvitz-Thompson / Hájek) estimate; no noise."""
        w = sample[WEIGHT].to_numpy(float)
        m = self.mask(sample)
        if self.kind == "count":
            return float(w[m].sum())
        if self.kind == "proportion":
            return float(w[m].sum() / population_size)
        y = np.clip(sample[self.column].to_numpy(float), *self.bounds)
        return float((w[m] * y[m]).sum() / max(w[m].sum(), 1e-300))


def laplace_release(query: Query, design: Design, population_size: int) -> Callable:
    """Laplace release of the design-weighted estimate. One record moves a weighted count
    by at most G = the design's largest weight, so: count ~ Lap(G/ε); proportion
    = count/N with N public ~ Lap(G/(Nε)); mean = noisy weighted sum (ε/2, sensitivity
    G·max(|a|,|b|)) over a noisy weighted count (ε/2, sensitivity G), clipped to [a, b].
    ε-DP (Dwork et al. 2006; sequential composition). Design weights are public."""
    G = design.max_weight()

    def release(sample: pd.DataFrame, epsilon: float, rng: np.random.Generator) -> float:
        eps = check_epsilon(epsilon)
        w = sample[WEIGHT].to_numpy(float)
        m = query.mask(sample)
        if query.kind == "count":
            return float(Laplace.calibrate(eps, G).release(w[m].sum(), rng))
        if query.kind == "proportion":
            return float(Laplace.calibrate(eps, G / population_size).release(w[m].sum() / population_size, rng))
        a, b = query.bounds
        y = np.clip(sample[query.column].to_numpy(float), a, b)
        num = float(Laplace.calibrate(eps / 2, G * max(abs(a), abs(b))).release((w[m] * y[m]).sum(), rng))
        den = float(Laplace.calibrate(eps / 2, G).release(w[m].sum(), rng))
        return float(np.clip(num / max(den, G), a, b))

    return release


def imputation_release(target: str, match: Sequence[str], bounds, *, where: Callable | None = None,
                       method: str = "smooth", k: int = 1, impute: str = "copy", ordinal=(), levels=None,
                       known_size: bool = True) -> Callable:
    """Release of a mean of an imputed ``target`` over ``where`` on each sample: k-NN
    imputation then ``method`` = ``smooth`` (Cor 6.4.6), ``ignore`` (drop missing,
    Laplace) or ``global`` (optimistic Laplace, not DP). ``known_size`` uses the sample's
    subpopulation size as public s (as §6.5.3 does); otherwise Remark 6.4.7."""
    from dpcore.survey.imputation import release_mean, release_mean_global, release_mean_ignoring_missing
    from dpcore.survey.knn import knn_impute

    def release(sample: pd.DataFrame, epsilon: float, rng: np.random.Generator) -> float:
        imp = knn_impute(sample, target, match, k=k, method=impute, ordinal=ordinal, levels=levels)
        m = np.ones(len(sample), bool) if where is None else np.asarray(where(sample))
        if method == "smooth":
            return release_mean(imp, epsilon, rng, bounds=bounds, where=m,
                                size=float(m.sum()) if known_size else None).value
        if method == "ignore":
            s = float((m & ~imp.incomplete).sum())
            return release_mean_ignoring_missing(imp, epsilon, rng, bounds=bounds, where=m,
                                                 size=s if known_size else None).value
        if method == "global":
            return release_mean_global(imp, epsilon, rng, bounds=bounds, where=m,
                                       size=float(m.sum()) if known_size else None).value
        raise OptionError(f"method must be smooth, ignore or global; got {method!r}")

    return release


def poststrat_release(binnings, totals, where: Callable, *, epsilon_share=(0.01, 0.0, 0.99), gamma: float = 4.0,
                      weight_range=None, use_design_weights: bool = True) -> Callable:
    """Post-stratified weighted count of ``where`` (ch. 7) with ε split by
    ``epsilon_share`` = (selection, table, count) shares summing to 1; the sample's
    design weights are the base weights when ``use_design_weights``."""
    from dpcore.survey.poststrat import poststratify_release

    sh = [float(x) for x in epsilon_share]
    if len(sh) != 3 or abs(sum(sh) - 1) > 1e-9 or min(sh) < 0 or sh[2] <= 0:
        raise OptionError("epsilon_share must be three non-negative shares (selection, table, count) summing to 1")

    def release(sample: pd.DataFrame, epsilon: float, rng: np.random.Generator) -> float:
        eps = check_epsilon(epsilon)
        rel = poststratify_release(
            sample, binnings, totals, np.asarray(where(sample)), rng=rng, gamma=gamma,
            epsilon_select=sh[0] * eps if sh[0] > 0 else None, epsilon_table=sh[1] * eps if sh[1] > 0 else None,
            epsilon_count=sh[2] * eps, weights=WEIGHT if use_design_weights else None,
            weight_range=weight_range)
        return rel.value

    return release


def noise_in_context(population: pd.DataFrame, design: Design, query: Query | None, epsilons: Sequence[float],
                     reps: int, rng: np.random.Generator, *, release: Callable | None = None,
                     estimator: Callable | None = None, truth: float | None = None) -> pd.DataFrame:
    """Tidy frame (epsilon, rep, sampling_error, sampling_plus_dp_error, truth, estimate,
    dp_estimate): per repetition one sample, its non-private estimate and, on the same
    sample, one DP release per ε.

    ``estimator(sample) -> float`` (default ``query.estimate``) and ``release(sample, ε,
    rng) -> float`` (default :func:`laplace_release`) may be given for other releases;
    ``truth`` defaults to ``query.truth(population)``.
    """
    eps_list = [check_epsilon(e) for e in epsilons]
    if not eps_list:
        raise OptionError("give at least one ε")
    if int(reps) != reps or reps < 1:
        raise OptionError(f"reps must be a whole number ≥ 1; got {reps!r}")
    N = len(population)
    if query is None and (release is None or estimator is None or truth is None):
        raise OptionError("without a query, give release, estimator and truth")
    est = estimator or (lambda s: query.estimate(s, N))
    rel = release or laplace_release(query, design, N)
    tv = float(query.truth(population)) if truth is None else float(truth)
    rows = []
    for r in range(int(reps)):
        s = draw_sample(population, design, rng)
        e0 = float(est(s))
        for e in eps_list:
            v = rel(s, e, rng)
            v = float(getattr(v, "value", v))
            rows.append((e, r, e0 - tv, v - tv, tv, e0, v))
    return pd.DataFrame(rows, columns=["epsilon", "rep", "sampling_error", "sampling_plus_dp_error", "truth",
                                       "estimate", "dp_estimate"])


def summarize(frame: pd.DataFrame, columns=("sampling_error", "sampling_plus_dp_error")) -> pd.DataFrame:
    """Per ε and error kind: 5th, 25th, 50th, 75th, 95th percentiles, mean, MSE, the box
    statistics the figure draws."""
    out = []
    for e, g in frame.groupby("epsilon", sort=True):
        for c in columns:
            v = g[c].to_numpy(float)
            q = np.percentile(v, [5, 25, 50, 75, 95])
            out.append({"epsilon": e, "error": c, "p5": q[0], "q1": q[1], "median": q[2], "q3": q[3], "p95": q[4],
                        "mean": float(v.mean()), "mse": float((v ** 2).mean())})
    return pd.DataFrame(out)


def context_figure(frame: pd.DataFrame, *, title: str = "DP noise in context", show: str = "estimate",
                   labels=("sampling + DP", "sampling only")):
    """Plotly figure: per ε, a box of sampling + DP and one of sampling only, IQR boxes and
    5th/95th-percentile whiskers, with the population value as a line (``show='estimate'``)
    or errors around 0 (``show='error'``)."""
    import plotly.graph_objects as go

    if show not in ("estimate", "error"):
        raise OptionError("show must be 'estimate' or 'error'")
    st = summarize(frame)
    tv = float(frame["truth"].iloc[0])
    shift = tv if show == "estimate" else 0.0
    fig = go.Figure()
    colors = ("#d62728", "#1f77b4")
    for (col, name), color in zip((("sampling_plus_dp_error", labels[0]), ("sampling_error", labels[1])), colors):
        s = st[st["error"] == col]
        x = [f"{e:g}" for e in s["epsilon"]]
        fig.add_trace(go.Box(
            name=name, x=x, q1=s["q1"] + shift, median=s["median"] + shift, q3=s["q3"] + shift,
            lowerfence=s["p5"] + shift, upperfence=s["p95"] + shift, mean=s["mean"] + shift,
            marker_color=color, boxpoints=False, offsetgroup=name,
        ))
    fig.add_hline(y=shift, line_dash="dash", line_color="black",
                  annotation_text="truth" if show == "estimate" else "no error")
    fig.update_layout(title=title, boxmode="group", xaxis_title="ε", yaxis_title="estimate" if show == "estimate"
                      else "error", legend_title_text="boxes: IQR; whiskers: 5th–95th percentile")
    return fig
