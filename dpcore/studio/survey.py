"""The Survey page's releases and simulations, as the studio runs them (no widgets).

The survey tools themselves live in :mod:`dpcore.survey` (Merrill 2021, ch. 4–7); this module
holds what the Survey page once did itself: which :mod:`dpcore.survey.imputation` release a
(query, method) choice calls, how many equal shares of ε the smooth release splits into, the
simulation "sampling noise vs sampling + DP noise" on an imputed survey, the post-stratified
release set up as ``poststrat-release`` does, its total ε (ε₁ + ε₂ + ε₃), and a marginal of a
synthetic set as a release for :func:`dpcore.survey.context.noise_in_context`.

Privacy: every release called here states its own guarantee and charges its own ledger
(docs/survey-privacy.md); the simulations run on data the curator already holds and publish
nothing. This module adds no mechanism.
"""
from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable

import numpy as np
import pandas as pd

from dpcore.errors import OptionError
from dpcore.survey import context as C

__all__ = [
    "parts_of", "release_imputed", "imputation_context", "poststrat_release",
    "poststrat_epsilon", "poststrat_parts", "selects_bins", "synthetic_marginal_release", "imputation_problems",
    "infinite_variance_warning",
    "context_grid", "SMOOTH_MIN_PER_PART", "FINITE_VARIANCE_PER_PART", "LN2",
    "target_problems", "matching_problems", "public_levels", "subpopulation_mask", "subpopulation_problems",
    "subpopulation_where",
    "weight_problems", "strata_problems", "poststrat_problems", "MAX_MATCH_GRID",
]

LN2 = math.log(2.0)


def parts_of(query: str, method: str, public_size: bool) -> int:
    """How many equal shares of ε the smooth release splits into (size, centre, value)."""
    if method != "smooth" or query == "count":
        return 1
    return 1 + (not public_size) + (query == "variance")


def release_imputed(imp, query: str, method: str, eps: float, rng, *, bounds, where, threshold, public_size: bool):
    """One :mod:`dpcore.survey.imputation` release (spends ε) of ``query`` (count of target <
    ``threshold``, mean or variance) by ``method``. Returns the release object."""
    from dpcore.survey import imputation as I

    if query == "count":
        def target_where(values, _t=threshold):
            return (pd.to_numeric(values, errors="coerce") < _t).to_numpy()

        fn = {"smooth": I.release_count, "ignore": I.release_count_ignoring_missing,
              "global": I.release_count_global}[method]
        return fn(imp, eps, rng, where=where, target_where=target_where)
    if query == "mean":
        if method == "smooth":
            size = float(where.sum()) if public_size else None
            return I.release_mean(imp, eps, rng, bounds=bounds, where=where, size=size)
        if method == "ignore":
            size = float((where & ~imp.incomplete).sum()) if public_size else None
            return I.release_mean_ignoring_missing(imp, eps, rng, bounds=bounds, where=where, size=size)
        size = float(where.sum()) if public_size else None
        return I.release_mean_global(imp, eps, rng, bounds=bounds, where=where, size=size)
    if method != "smooth":
        raise OptionError("a variance is only released with the smooth-sensitivity method (Cor 6.4.9); "
                          "choose it, or ask for a count or a mean")
    size = float(where.sum()) if public_size else None
    return I.release_variance(imp, eps, rng, bounds=bounds, where=where, size=size)


def _exact_on(values: pd.Series, mask: np.ndarray, query: str, bounds, threshold) -> float:
    """The non-private value of the query on imputed values (curator only, NOT DP)."""
    if query == "count":
        return float((mask & (pd.to_numeric(values, errors="coerce") < threshold).to_numpy()).sum())
    y = np.clip(pd.to_numeric(values, errors="coerce").to_numpy(float), *bounds)[mask]
    if query == "mean":
        return float(y.mean()) if len(y) else float("nan")
    return float(y.var(ddof=1)) if len(y) > 1 else float("nan")


def imputation_context(pop: pd.DataFrame, full_imputed, impute: Callable, where: Callable, *, query: str,
                       method: str, bounds, threshold: float, public_size: bool, eps_grid, reps: int, rate: float,
                       seed: int) -> pd.DataFrame:
    """Simulation of ch. 4 for an imputed estimate: ``pop`` as the population, ``reps`` SRS
    samples at ``rate``; per sample the non-private estimate and one DP release per ε of
    ``eps_grid`` (:func:`dpcore.survey.context.noise_in_context`; nothing is published).

    ``impute(df)`` imputes a sample (its design-weight column dropped), ``full_imputed`` is the
    population imputed, ``where(df)`` the subpopulation mask."""
    scale = 1.0 / rate if query == "count" else 1.0  # a sample count → population count (design weight)

    def estimator(sample):
        imp = impute(sample.drop(columns=[C.WEIGHT], errors="ignore"))
        return scale * _exact_on(imp.values, where(sample.reset_index(drop=True)), query, bounds, threshold)

    def release(sample, eps, rng):
        imp = impute(sample.drop(columns=[C.WEIGHT], errors="ignore"))
        rel = release_imputed(imp, query, method, eps, rng, bounds=bounds,
                              where=where(sample.reset_index(drop=True)), threshold=threshold,
                              public_size=public_size)
        return scale * float(rel.value)

    truth = _exact_on(full_imputed.values, where(pop), query, bounds, threshold)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # infinite variance: the page warns about it
        return C.noise_in_context(pop, C.Design(rate), None, list(eps_grid), reps, np.random.default_rng(seed),
                                  release=release, estimator=estimator, truth=truth)


def poststrat_parts(e1, e2, e3, *, candidates: dict, columns) -> tuple[float | None, float | None, float]:
    """The ε of each part of a post-stratified release that runs (None: the part does not run and
    spends nothing): ε₁ only when some column has several candidate sets of bins to choose from
    (:func:`selects_bins`), ε₂ only with two or more columns (the noisy join table IPF rakes), ε₃
    always (the weighted count)."""
    return (float(e1) if selects_bins(candidates) else None, float(e2) if len(columns) >= 2 else None,
            float(e3))


def selects_bins(candidates: dict) -> bool:
    """Whether the bins are chosen privately (ε₁ spent): some column has more than one candidate set."""
    return any(len(v) > 1 for v in candidates.values())


def poststrat_epsilon(eps_select: float | None, eps_table: float | None, eps_count: float) -> float:
    """The total ε of a post-stratified release, ε₁ + ε₂ + ε₃ (sequential composition; an
    unused part is None and spends nothing)."""
    return (eps_select or 0.0) + (eps_table or 0.0) + float(eps_count)


def poststrat_release(data: pd.DataFrame, cols: list, totals: dict, cands: dict, mask: np.ndarray, *,
                      eps_select, eps_table, eps_count: float, gamma: float, weights: str, weight_range, rng=None):
    """One :func:`dpcore.survey.poststrat.poststratify_release` (spends
    :func:`poststrat_epsilon`), its bins set up as ``poststrat-release`` does."""
    from dpcore.survey import poststrat as P
    from dpcore.survey.bins import binnings_for

    data, binnings = binnings_for(data, cols, totals, cands)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # infinite variance: warned on the page
        return P.poststratify_release(data, binnings, totals, mask, epsilon_select=eps_select,
                                      epsilon_table=eps_table, epsilon_count=eps_count, gamma=gamma,
                                      weights=weights, weight_range=weight_range,
                                      rng=np.random.default_rng() if rng is None else rng)


def synthetic_marginal_release(where: Callable, *, method: str = "steps", scale: str = "count", domain=None,
                               **options) -> Callable:
    """A release for :func:`dpcore.survey.context.noise_in_context`: the share
    (``scale='proportion'``) or the count scaled to the population by the design weight
    (``scale='count'``, assuming equal weights) of ``where`` in one synthetic set made by
    :func:`dpcore.synthesize` at ε (STEPS, IPF, ...). The ε-DP of the set carries over to any
    marginal of it (post-processing). (It lives in the studio, not in :mod:`dpcore.survey`,
    because it calls the release API, a layer above the survey tools.)"""
    from dpcore.api import synthesize

    def release(sample: pd.DataFrame, epsilon: float, rng: np.random.Generator) -> float:
        data = sample.drop(columns=[C.WEIGHT])
        seed = int(rng.integers(0, 2**63 - 1))
        rel = synthesize(data, method=method, epsilon=epsilon, seed=seed, domain=domain, **options)
        share = float(np.asarray(where(rel.sets[0])).mean())
        if scale == "proportion":
            return share
        return share * float(sample[C.WEIGHT].sum())

    return release


#: ε per part from which the smooth release is proven DP (Merrill Cor 6.4.3), and above which its
#: generalized Cauchy noise has finite variance (γ = 1 + ε/(2 ln 2) > 3).
SMOOTH_MIN_PER_PART = 2 * LN2
FINITE_VARIANCE_PER_PART = 4 * LN2
#: The simulation's ε grid: multiples of ln 2 per part for the smooth release, plain values otherwise.
_SMOOTH_GRID_LN2 = (2, 3, 4.5, 6, 10, 16)
_PLAIN_GRID = (0.5, 1.0, 2.0, 4.0, 8.0)


def imputation_problems(eps, parts: int, *, method: str, query: str, lo: float | None, hi: float | None, match,
                        threshold: float | None = 0.0, target: str = "the target") -> list[str]:
    """Why an imputed release cannot run with these inputs, one sentence each (empty: it can).
    The bounds (mean, variance) and the threshold (count) are public: None means not entered."""
    problems = []
    if not (isinstance(eps, (int, float)) and math.isfinite(eps) and eps > 0):
        problems.append(f"ε must be a finite number greater than 0; got {eps!r}.")
    elif method == "smooth" and eps / parts < SMOOTH_MIN_PER_PART * (1 - 1e-12):
        split = f" (split into {parts} equal parts, ε/{parts} = {eps / parts:.4g} each)" if parts > 1 else ""
        problems.append(
            f"ε = {eps:g}{split} is too small for the smooth-sensitivity release: it is only proven DP for "
            f"ε ≥ 2 ln 2 ≈ {SMOOTH_MIN_PER_PART:.4f} per part, so this needs ε ≥ {parts * SMOOTH_MIN_PER_PART:.4f}. "
            "Raise ε, or use the 'ignore missing' Laplace baseline. Nothing was released.")
    if query != "count" and (lo is None or hi is None):
        problems.append(f"Enter the public lower and upper bounds of '{target}' (from its definition or the "
                        "questionnaire, not from the data).")
    elif query != "count" and lo is not None and hi is not None and not hi > lo:  # (None: said above)
        problems.append(f"The upper bound ({hi:g}) must be above the lower bound ({lo:g}).")
    if query == "count" and threshold is None:
        problems.append(f"Enter the public threshold: the release counts the records whose '{target}' is below it.")
    if query == "variance" and method != "smooth":
        problems.append("A variance is only released with the smooth-sensitivity method (Cor 6.4.9).")
    if not match:
        problems.append("Choose at least one matching attribute.")
    return problems


def infinite_variance_warning(eps: float, parts: int, method: str) -> str | None:
    """The warning for a smooth release whose noise has infinite variance (None: finite)."""
    if method != "smooth" or eps / parts > FINITE_VARIANCE_PER_PART:
        return None
    return (f"ε per part = {eps / parts:.4g} ≤ 4 ln 2 ≈ {FINITE_VARIANCE_PER_PART:.4f}: the generalized Cauchy noise "
            f"(γ = {1 + eps / parts / (2 * LN2):.3g} ≤ 3) has **infinite variance** — single releases "
            "can be far off. Use ε > " + f"{parts * FINITE_VARIANCE_PER_PART:.4f} for finite variance.")


def context_grid(method: str, parts: int, eps: float | None) -> list[float]:
    """The simulation's ε grid, with the release's own ε added when given (None: not valid)."""
    grid = [parts * g * LN2 for g in _SMOOTH_GRID_LN2] if method == "smooth" else list(_PLAIN_GRID)
    if eps is not None and all(abs(g - eps) > 1e-3 * eps for g in grid):
        grid = sorted(grid + [float(eps)])
    return grid


# --------------------------------------------------------------------------- the curator's table: checks
#
# What the Survey page checks before it offers a release on a table the curator loaded. Each
# function returns one-line messages naming the column (or option) and what to do; an empty
# list means the release can run. They read the data only to refuse it, never to suggest a value.

#: The largest grid of matching levels the k-NN imputation searches (knn_impute's max_grid).
MAX_MATCH_GRID = 2_000_000


def _is_number_column(col: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)


def target_problems(df: pd.DataFrame, target: str | None, k: int = 1) -> list[str]:
    """Why ``target`` cannot be the imputed survey variable: it must be a numeric column with
    missing values to impute and at least k + 1 observed values (the donors)."""
    if target is None:
        return ["Choose the variable to impute (a numeric column with missing values)."]
    if target not in df.columns:
        return [f"Choose the variable to impute; '{target}' is not a column of this table."]
    col = df[target]
    if not _is_number_column(col):
        return [f"'{target}' is not numeric ({col.dtype}): choose a numeric variable to impute (the queries are a "
                "count below a threshold, a mean or a variance)."]
    missing = int(col.isna().sum())
    if missing == 0:
        return [f"'{target}' has no missing values to impute: choose a variable with missing values, or use the "
                "bundled demo."]
    donors = len(col) - missing
    if donors < int(k) + 1:
        return [f"'{target}' has {donors} observed value(s); k = {int(k)} donors needs at least {int(k) + 1}: "
                "lower k or choose another variable."]
    return []


def matching_problems(df: pd.DataFrame, target: str | None, match, levels: dict | None = None,
                      ordinal=()) -> list[str]:
    """Why the matching attributes cannot be used: none chosen, the target among them, a numeric
    one (matching is on levels), an ordered one without a declared order, or too many level
    combinations for the exact L_1(D)."""
    match = list(match or [])
    if not match:
        return ["Choose at least one matching attribute."]
    problems = [f"Ordered attribute '{c}' has no declared level order: confirm the domain on the Data page, or "
                "match on it without order." for c in ordinal if c in match and not (levels and c in levels)]
    if target in match:
        problems.append(f"'{target}' is the variable to impute; remove it from the matching attributes.")
    missing = [c for c in match if c not in df.columns]
    if missing:
        problems.append(f"Matching attribute(s) {', '.join(map(repr, missing))} are not columns of this table; "
                        "choose others.")
    numeric = [c for c in match if c in df.columns and c != target and _is_number_column(df[c])
               and not (levels and c in levels)]
    for c in numeric:
        problems.append(f"Matching attribute '{c}' is numeric: k-NN matching compares levels, so choose a "
                        "categorical column (or drop it from the match).")
    if problems:
        return problems
    sizes = [(len(levels[c]) if levels and c in levels else int(df[c].nunique(dropna=True))) + 1 for c in match]
    if math.prod(sizes) > MAX_MATCH_GRID:
        widest = max(zip(sizes, match))[1]
        problems.append(f"The matching attributes have {math.prod(sizes):,} level combinations (over "
                        f"{MAX_MATCH_GRID:,}; '{widest}' has the most levels): match on fewer or coarser columns.")
    return problems


def public_levels(domain, match) -> dict | None:
    """The matching attributes' levels from the domain the curator confirmed (declared public), for k-NN
    matching; None when it was not confirmed, so the imputation infers them and the release is NOT DP.
    What decides is the confirmation, not :attr:`Domain.inferred`: a numeric column whose bins a synthetic
    release will find privately (a placeholder until then) leaves the confirmed levels public."""
    from dpcore.data.domain import DECLARED

    if domain is None or domain.source != DECLARED:
        return None
    out = {}
    for c in match:
        if c in domain.names and domain[c].kind == "categorical":
            out[c] = list(domain[c].levels)
    return out


def subpopulation_mask(df: pd.DataFrame, expr: str, target: str | None = None) -> np.ndarray:
    """The rows of the subpopulation ``expr`` (a pandas expression; empty: every row). It may not
    use the imputed ``target``, so whether a record is in it never depends on another record."""
    from dpcore.data.expressions import row_mask
    from dpcore.errors import InputError

    if not (expr or "").strip():
        return np.ones(len(df), dtype=bool)
    if target is not None and re.search(rf"(?<![\w`]){re.escape(str(target))}(?![\w`])|`{re.escape(str(target))}`",
                                        expr):
        raise InputError(f"the subpopulation {expr!r} uses the imputed variable '{target}': filter on other "
                         "columns only (the imputed values depend on other people's records)")
    return row_mask(df, expr, "the subpopulation")


def subpopulation_where(*, expr: str = "", ages: tuple | None = None, target: str | None = None) -> Callable:
    """The subpopulation as a function of a table: the demo's age range, or :func:`subpopulation_mask`
    of ``expr`` (the simulation applies it to every sample it draws)."""
    if ages is not None:
        lo, hi = ages
        return lambda df: df["age"].between(lo, hi).to_numpy()
    return lambda df: subpopulation_mask(df, expr, target)


def subpopulation_problems(df: pd.DataFrame, expr: str, target: str | None = None, *,
                           allow_empty: bool = False) -> list[str]:
    """:func:`subpopulation_mask`'s refusal as a one-line message (empty: the filter is usable);
    a filter that selects no row is refused unless ``allow_empty`` (a count may be 0)."""
    from dpcore.errors import DPCoreError

    try:
        m = subpopulation_mask(df, expr, target)
    except DPCoreError as exc:
        return [_sentence(str(exc))]
    if not m.any() and not allow_empty:
        return [f"The subpopulation {expr!r} selects no row: widen the filter."]
    return []


def weight_problems(df: pd.DataFrame, weights: str | None, weight_range=None) -> list[str]:
    """Why ``weights`` cannot be the base weights: not a column, not numeric, missing, zero or
    negative values, or values outside the declared range [G', G] (checked when given)."""
    from dpcore.errors import DPCoreError
    from dpcore.survey.bins import check_weight_range

    if weights is None:
        return ["Choose the column of base weights (from the sampling design)."]
    if weights not in df.columns:
        return [f"Choose the column of base weights; '{weights}' is not a column of this table."]
    col = df[weights]
    if not _is_number_column(col):
        return [f"Weights column '{weights}' is not numeric ({col.dtype}): choose the column of base weights from "
                "the sampling design."]
    w = col.to_numpy(dtype=float)
    n_missing = int((~np.isfinite(w)).sum())
    if n_missing:
        return [f"Weights column '{weights}' has {n_missing:,} missing value(s): every record needs a base weight; "
                "fix those rows in the file or choose another column."]
    n_bad = int((w <= 0).sum())
    if n_bad:
        return [f"Weights column '{weights}' has {n_bad:,} zero or negative weight(s): base weights must be > 0; "
                "fix those rows in the file or choose another column."]
    if weight_range is None:
        return []
    try:
        lo, hi = check_weight_range(weight_range)
    except DPCoreError as exc:
        return [f"base-weight range: {exc}"]  # as poststrat_problems says it, so a page can show it once
    outside = int(((w < lo * (1 - 1e-12)) | (w > hi * (1 + 1e-12))).sum())
    if outside:
        return [f"{outside:,} base weight(s) in '{weights}' lie outside the declared range [{lo:g}, {hi:g}]: widen "
                "the range to what the sampling design allows."]
    return []


def strata_problems(df: pd.DataFrame, columns, totals: dict | None, weights: str | None = None) -> list[str]:
    """Why the post-stratification columns cannot be used with these known totals: none chosen,
    the weights column among them, missing values, or levels without a known total."""
    from dpcore.errors import DPCoreError
    from dpcore.survey.bins import binnings_for

    columns = list(columns or [])
    if not columns:
        return ["Choose at least one column to post-stratify on."]
    if weights in columns:
        return [f"'{weights}' holds the base weights; post-stratify on other columns."]
    if totals is None:
        return ["Upload the known population totals (CSV: column,level,total) to continue."]
    try:
        binnings_for(df[[c for c in columns if c in df.columns]], columns, totals)
    except DPCoreError as exc:
        return [_sentence(str(exc))]
    return []


def poststrat_problems(eps_select, eps_table, eps_count, gamma, weight_range, columns,
                       candidates_missing=()) -> list[str]:
    """Why a post-stratified release cannot run with these budget settings: each ε part that
    runs (:func:`poststrat_parts`; None: not spent), γ, the declared base-weight range, and a
    column whose candidate sets of bins are all unticked."""
    from dpcore.errors import DPCoreError
    from dpcore.privacy.ledger import check_epsilon
    from dpcore.survey import check_gamma
    from dpcore.survey.bins import check_weight_range

    problems = []
    for what, check, arg in [("ε₁", check_epsilon, eps_select), ("ε₂", check_epsilon, eps_table),
                             ("ε₃", check_epsilon, eps_count), ("γ", check_gamma, gamma),
                             ("base-weight range", check_weight_range, weight_range)]:
        if arg is None:
            continue
        try:
            check(arg)
        except DPCoreError as exc:
            problems.append(f"{what}: {exc}")
    if not columns:
        problems.append("Choose at least one column to post-stratify on.")
    for c in candidates_missing:
        problems.append(f"Choose at least one candidate set of bins for '{c}'.")
    return problems


def _sentence(text: str) -> str:
    """A library message as one sentence of the page (capital first, full stop)."""
    text = " ".join(text.split())
    return (text[:1].upper() + text[1:]).rstrip(".") + "."
