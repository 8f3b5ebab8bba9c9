"""Analysis-specific utility (docs/measures.md; Bowen & Liu 2021, §4.3): L1 distance,
chi-square consistency and regression CI overlap.

- :func:`l1_distance` — L1 distance between the full cross-tabulations of the
  original and each synthetic set, in **proportions** (Σ|y/n − s/n_s|, range 0–2).
- :func:`chisq_consistency` — for every pair of attributes, the chi-square test of
  independence on the original and on each synthetic set, the m synthetic
  statistics combined by the D2 rule of Li, Meng, Raghunathan & Rubin (1991), and
  the share of pairs whose significance at α agrees with the original's.
- :func:`regression_overlap` — a logistic (or linear) regression fitted on the
  original and on each synthetic set, the m synthetic fits combined (β̄,
  T = B/m + W, t with ν = (m−1)(1 + mW/B)²), and the CI overlap of Karr et al.
  (2006) per coefficient.

**Not differentially private.**  Every measure here reads the raw (original) data.
They are for the curator's own evaluation of a synthesis (curator-only); the
numbers must not be published as if covered by the release's ε.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from dpcore.errors import InputError, OptionError
from dpcore.metrics.tables import _as_list, _cell_ids, _prepare

__all__ = [
    "L1Distance",
    "ChisqConsistency",
    "RegressionOverlap",
    "l1_distance",
    "chisq_consistency",
    "regression_overlap",
    "ci_overlap",
    "d2_combine",
    "combine_estimates",
]


# =========================================================================== L1


@dataclass(frozen=True)
class L1Distance:
    """Result of :func:`l1_distance`.  NOT differentially private (reads the raw data).

    ``l1`` is the mean over sets of Σ_cells |y/n − s/n_s| (proportions; 0 for
    identical distributions, 2 for disjoint supports).  ``per_set`` has, per set,
    ``l1`` and ``l1_counts`` = Σ|y − s| (raw counts; comparable to the proportion
    scale only when n_s = n) and ``cells`` (non-empty cells in original ∪ set).
    """

    l1: float
    per_set: list = field(default_factory=list)
    scale: str = "proportions"


def l1_distance(orig: pd.DataFrame, syns, columns: Sequence | None = None) -> L1Distance:
    """L1 distance between the full cross-tabulations of ``orig`` and each set.

    Proportions, not counts: Σ_cells |y_i/n − s_i/n_s|, so sets of a different size
    from the original are comparable and the value lies in [0, 2].  Missing values
    are a level.  Only non-empty cells are counted: rows are mapped to cell ids by
    the shared encoding of :mod:`dpcore.metrics.tables` (hashing the codes when the
    table is large) and the ids re-numbered over the observed cells, so the full
    cross-tabulation is never allocated.

    **Not differentially private**: this reads the original data.
    """
    syns, columns, codes, n_levels, bounds = _prepare(orig, syns, columns)
    ids, n_cells = _cell_ids(codes, n_levels)
    if n_cells > len(ids):
        ids, uniq = pd.factorize(ids)
        n_cells = len(uniq)
    y = np.bincount(ids[bounds[0]:bounds[1]], minlength=n_cells)
    n = y.sum()
    per_set = []
    for i in range(len(syns)):
        s = np.bincount(ids[bounds[i + 1]:bounds[i + 2]], minlength=n_cells)
        ns = s.sum()
        if n == 0 or ns == 0:
            l1 = float("nan")
        else:
            l1 = float(np.abs(y / n - s / ns).sum())
        per_set.append({"set": i + 1, "l1": l1, "l1_counts": int(np.abs(y - s).sum()),
                        "cells": int(np.count_nonzero((y + s) > 0))})
    return L1Distance(l1=float(np.mean([d["l1"] for d in per_set])), per_set=per_set)


# =========================================================================== chi-square


def d2_combine(statistics, df) -> dict:
    """Combine m chi-square statistics by the D2 rule (Li, Meng, Raghunathan & Rubin 1991).

    With d_j the m statistics on ν degrees of freedom (docs/measures.md):

    - r = (1 + 1/m)·Σ_j(√d_j − mean √d)²/(m − 1)
    - D = (mean d/ν − (m + 1)/(m − 1)·r)/(1 + r)
    - ν₂ = ν^(−3/m)·(m − 1)·(1 + 1/r)²
    - p = P(F(ν, ν₂) > D)

    When r = 0 (all statistics equal) ν₂ is infinite and p = P(χ²_ν > D·ν).  For
    m = 1 the single statistic's χ²_ν p-value is returned (D = d/ν, r = 0).
    Returns a dict with ``D``, ``r``, ``nu``, ``nu2``, ``p``, ``m``.
    """
    d = np.asarray(statistics, dtype=float)
    m = d.size
    nu = float(df)
    if m == 0 or not nu > 0:
        return {"D": math.nan, "r": math.nan, "nu": nu, "nu2": math.nan, "p": math.nan, "m": m}
    if m == 1:
        return {"D": float(d[0] / nu), "r": 0.0, "nu": nu, "nu2": math.inf,
                "p": float(stats.chi2.sf(d[0], nu)), "m": 1}
    root = np.sqrt(np.maximum(d, 0.0))
    r = (1.0 + 1.0 / m) * float(np.sum((root - root.mean()) ** 2)) / (m - 1)
    D = (float(d.mean()) / nu - (m + 1) / (m - 1) * r) / (1.0 + r)
    if r == 0.0:
        nu2 = math.inf
        p = float(stats.chi2.sf(D * nu, nu)) if D > 0 else 1.0
    else:
        nu2 = nu ** (-3.0 / m) * (m - 1) * (1.0 + 1.0 / r) ** 2
        p = float(stats.f.sf(D, nu, nu2)) if D > 0 else 1.0
    return {"D": float(D), "r": float(r), "nu": nu, "nu2": float(nu2), "p": p, "m": m}


def _chisq(table: np.ndarray, correction: bool):
    """χ² test on the observed levels of ``table``: (stat, df, p) or None if degenerate."""
    table = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
    if table.shape[0] < 2 or table.shape[1] < 2:
        return None
    res = stats.chi2_contingency(table, correction=correction)
    return float(res.statistic), int(res.dof), float(res.pvalue)


@dataclass(frozen=True)
class ChisqConsistency:
    """Result of :func:`chisq_consistency`.  NOT differentially private (reads the raw data).

    Attributes
    ----------
    table:
        one row per attribute pair: ``var1``, ``var2``, ``stat_orig``, ``df_orig``,
        ``p_orig``, ``D_syn`` (D2 statistic, or X²/ν for one set), ``df_syn`` (ν),
        ``nu2``, ``r``, ``p_syn`` (combined), ``m_used`` (synthetic sets with a
        testable table), ``tested`` (True when both p-values exist), ``note``.
    agreement:
        {α: share of tested pairs whose significance (p < α) agrees}.
    confusion:
        {α: 2×2 DataFrame of counts, index ``orig significant`` False/True,
        columns ``syn significant`` False/True}.
    n_tested, n_skipped:
        pairs tested and pairs skipped (degenerate tables; see ``table.note``).
    """

    table: pd.DataFrame
    agreement: dict
    confusion: dict
    n_tested: int
    n_skipped: int
    m: int
    correction: bool = True


def chisq_consistency(orig: pd.DataFrame, syns, alphas=(0.01, 0.05, 0.10),
                      columns: Sequence | None = None, correction: bool = True) -> ChisqConsistency:
    """Chi-square tests of independence for every pair of attributes, orig vs synthetic.

    Each table is tested on the levels observed in that data set (levels with no
    record in it are dropped; missing values are a level).  A table with fewer
    than two observed levels in either attribute has no test: for the original the
    pair is skipped (``note`` says why); a degenerate synthetic set is left out of
    the combination and the rest are combined.  The m synthetic statistics are
    combined with the D2 rule (:func:`d2_combine`); when the sets' degrees of
    freedom differ (different observed levels) ν is their mean, noted in ``note``.

    ``correction`` is scipy's (and R ``chisq.test``'s) Yates continuity correction
    for 2×2 tables, on by default as in R, which the 2021 paper's analysis used.

    **Not differentially private**: this reads the original data.
    """
    alphas = tuple(float(a) for a in alphas)
    if any(not 0 < a < 1 for a in alphas):
        raise OptionError(f"alphas must lie in (0, 1); got {alphas}")
    syns, columns, codes, n_levels, bounds = _prepare(orig, syns, columns)
    if len(columns) < 2:
        raise OptionError(f"chi-square consistency needs at least 2 columns, got {columns}")
    m = len(syns)
    rows = []
    for a, b in itertools.combinations(range(len(columns)), 2):
        ka, kb = int(n_levels[a]), int(n_levels[b])
        cell = codes[:, a] * kb + codes[:, b]
        tabs = [np.bincount(cell[lo:hi], minlength=ka * kb).reshape(ka, kb)
                for lo, hi in zip(bounds[:-1], bounds[1:])]
        notes = []
        o = _chisq(tabs[0], correction)
        syn_res = [_chisq(t, correction) for t in tabs[1:]]
        ok = [r for r in syn_res if r is not None]
        if o is None:
            notes.append("original table degenerate (an attribute has < 2 observed levels): skipped")
        if len(ok) < m:
            notes.append(f"{m - len(ok)} of {m} synthetic table(s) degenerate: left out of the combination")
        if ok:
            dfs = [r[1] for r in ok]
            nu = float(np.mean(dfs))
            if len(set(dfs)) > 1:
                notes.append(f"synthetic df differ ({sorted(set(dfs))}); ν = their mean")
            comb = d2_combine([r[0] for r in ok], nu)
        else:
            comb = {"D": math.nan, "r": math.nan, "nu": math.nan, "nu2": math.nan, "p": math.nan}
            notes.append("no synthetic set has a testable table")
        rows.append({
            "var1": columns[a], "var2": columns[b],
            "stat_orig": o[0] if o else math.nan, "df_orig": o[1] if o else 0,
            "p_orig": o[2] if o else math.nan,
            "D_syn": comb["D"], "df_syn": comb["nu"], "nu2": comb["nu2"], "r": comb["r"],
            "p_syn": comb["p"], "m_used": len(ok),
            "tested": bool(o is not None and ok),
            "note": "; ".join(notes),
        })
    table = pd.DataFrame(rows)
    tested = table[table["tested"]]
    agreement, confusion = {}, {}
    for alpha in alphas:
        so = (tested["p_orig"] < alpha).to_numpy()
        ss = (tested["p_syn"] < alpha).to_numpy()
        cm = pd.DataFrame(
            [[int(np.sum(~so & ~ss)), int(np.sum(~so & ss))],
             [int(np.sum(so & ~ss)), int(np.sum(so & ss))]],
            index=pd.Index([False, True], name="orig significant"),
            columns=pd.Index([False, True], name="syn significant"),
        )
        confusion[alpha] = cm
        agreement[alpha] = float(np.mean(so == ss)) if len(tested) else math.nan
    return ChisqConsistency(table=table, agreement=agreement, confusion=confusion,
                            n_tested=int(len(tested)), n_skipped=int(len(table) - len(tested)),
                            m=m, correction=correction)


# =========================================================================== regression


def ci_overlap(lo_o, hi_o, lo_s, hi_s):
    """CI overlap of Karr et al. (2006), clipped at 0 (vectorised).

    ½[(min(u_o,u_s) − max(l_o,l_s))/(u_o − l_o) + (min(u_o,u_s) − max(l_o,l_s))/(u_s − l_s)];
    1 for identical intervals, 0 for disjoint ones, NaN when either is missing or
    has zero width.
    """
    lo_o, hi_o, lo_s, hi_s = (np.asarray(x, dtype=float) for x in (lo_o, hi_o, lo_s, hi_s))
    inter = np.minimum(hi_o, hi_s) - np.maximum(lo_o, lo_s)
    wo, ws = hi_o - lo_o, hi_s - lo_s
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 0.5 * (inter / wo + inter / ws)
    out = np.where((wo > 0) & (ws > 0), np.maximum(out, 0.0), np.nan)
    return out if out.ndim else float(out)


def combine_estimates(betas, ses, level: float = 0.95) -> dict:
    """Combine m per-set estimates of one coefficient (docs/measures.md; Reiter 2003 / Liu 2016).

    β̄ = mean β̂_j, B = Σ(β̂_j − β̄)²/(m − 1), W = mean SE_j², T = B/m + W, and a t
    reference with ν = (m − 1)(1 + mW/B)².  B = 0 gives ν = ∞ (normal); m = 1
    gives T = W and the normal reference.  Non-finite inputs are dropped first.
    Returns ``beta``, ``se`` (√T), ``df`` (ν), ``lo``, ``hi``, ``B``, ``W``, ``m``.
    """
    betas = np.asarray(betas, dtype=float)
    ses = np.asarray(ses, dtype=float)
    ok = np.isfinite(betas) & np.isfinite(ses)
    betas, ses = betas[ok], ses[ok]
    m = int(betas.size)
    if m == 0:
        return {"beta": math.nan, "se": math.nan, "df": math.nan, "lo": math.nan,
                "hi": math.nan, "B": math.nan, "W": math.nan, "m": 0}
    beta = float(betas.mean())
    W = float(np.mean(ses ** 2))
    if m == 1:
        B, T, nu = math.nan, W, math.inf
    else:
        B = float(np.var(betas, ddof=1))
        T = B / m + W
        nu = math.inf if B <= 0 else (m - 1) * (1.0 + m * W / B) ** 2
    q = stats.norm.ppf(0.5 + level / 2) if math.isinf(nu) else stats.t.ppf(0.5 + level / 2, nu)
    se = math.sqrt(T)
    return {"beta": beta, "se": se, "df": float(nu), "lo": beta - q * se, "hi": beta + q * se,
            "B": B, "W": W, "m": m}


@dataclass(frozen=True)
class RegressionOverlap:
    """Result of :func:`regression_overlap`.  NOT differentially private (reads the raw data).

    Attributes
    ----------
    table:
        one row per coefficient: ``term``, ``beta_orig``, ``se_orig``, ``lo_orig``,
        ``hi_orig``, ``beta_syn`` (β̄), ``se_syn`` (√T), ``df_syn`` (ν), ``lo_syn``,
        ``hi_syn``, ``B``, ``W``, ``m_used``, ``overlap`` (Karr et al. 2006),
        ``sign_agree``, ``note``.
    mean_overlap:
        mean of ``overlap`` over the coefficients where it is defined.
    sign_agreement:
        share of those coefficients where sign(β_orig) = sign(β̄).
    notes:
        messages about sets or terms that could not be estimated.
    """

    table: pd.DataFrame
    mean_overlap: float
    sign_agreement: float
    family: str
    outcome: str
    level: float = 0.95
    notes: list = field(default_factory=list)


def _sort_levels(values) -> list:
    try:
        return sorted(values)
    except TypeError:
        return sorted(values, key=lambda v: (type(v).__name__, str(v)))


def _levels(series_list: list[pd.Series]) -> tuple[list, bool]:
    """Union of the non-missing levels (categorical order if declared, else sorted) and
    whether any value is missing."""
    first = series_list[0]
    if isinstance(first.dtype, pd.CategoricalDtype):
        levels = list(first.cat.categories)
        seen = set(levels)
        extra = [v for s in series_list[1:] for v in pd.unique(s.dropna()) if v not in seen]
        levels += _sort_levels(set(extra))
        used = set().union(*(set(pd.unique(s.dropna())) for s in series_list))
        levels = [v for v in levels if v in used]
    else:
        levels = _sort_levels(set().union(*(set(pd.unique(s.dropna())) for s in series_list)))
    has_na = any(bool(s.isna().any()) for s in series_list)
    return levels, has_na


class _Missing:
    """The level of missing values in a design (a sentinel, so a real "NA" value is not confused with it)."""

    def __repr__(self) -> str:
        return "NA"

    __str__ = __repr__


_NA = _Missing()


def _py(v):
    """A numpy scalar as the plain Python value (for readable notes)."""
    return v.item() if isinstance(v, np.generic) else v


def _design(frames, outcome, predictors, numeric, family, event, reference):
    """Per-frame (y, X) with the same columns in every frame, plus term names and notes."""
    notes = []
    ys, keeps = [], []
    out_series = [f[outcome] for f in frames]
    if family == "logit":
        levels, _ = _levels(out_series)
        if len(levels) != 2:
            raise OptionError(
                f"family='logit' needs a binary outcome; '{outcome}' has {len(levels)} levels "
                f"{levels[:10]} over the original and synthetic sets; pick a binary outcome or use family='ols'"
            )
        ev = levels[1] if event is None else event
        if ev not in levels:
            raise OptionError(f"event {event!r} is not a level of '{outcome}' (levels {levels})")
        for s in out_series:
            keeps.append(s.notna().to_numpy().copy())
            ys.append((s == ev).to_numpy(dtype=float))
        notes.append(f"outcome: P({outcome} = {_py(ev)!r})")
    else:
        for s in out_series:
            if not pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
                raise OptionError(f"family='ols' needs a numeric outcome; '{outcome}' is {s.dtype}")
            keeps.append(s.notna().to_numpy().copy())
            ys.append(s.to_numpy(dtype=float, na_value=np.nan))
    terms = ["Intercept"]
    blocks = [[np.ones(len(f))] for f in frames]
    for p in predictors:
        series = [f[p] for f in frames]
        if p in numeric:
            for i, s in enumerate(series):
                if not pd.api.types.is_numeric_dtype(s.dtype):
                    raise OptionError(f"predictor '{p}' is declared numeric but is {s.dtype} in set {i}")
                v = s.to_numpy(dtype=float, na_value=np.nan)
                keeps[i] &= ~np.isnan(v)
                blocks[i].append(v)
            terms.append(p)
            continue
        levels, has_na = _levels(series)
        if has_na:
            levels = levels + [_NA]
        if reference == "most_frequent":
            counts = series[0].value_counts(dropna=False)
            top = counts.index[0]
            ref = _NA if pd.isna(top) else top
        else:
            ref = levels[0]
        for lev in levels:
            if lev == ref:
                continue
            terms.append(f"{p}[T.{lev}]")
            for i, s in enumerate(series):
                col = s.isna().to_numpy() if lev is _NA else (s == lev).to_numpy(dtype=bool, na_value=False)
                blocks[i].append(col.astype(float))
        notes.append(f"{p}: reference level {_py(ref)!r}")
    designs = []
    for i, _f in enumerate(frames):
        X = np.column_stack(blocks[i])
        keep = keeps[i]
        designs.append((ys[i][keep], X[keep], int((~keep).sum())))
    return designs, terms, notes


def _independent_columns(X: np.ndarray, tol: float = 1e-9) -> np.ndarray:
    """Mask of the columns of ``X`` not in the span of the columns before them.

    Gram–Schmidt in column order (re-orthogonalised once), as R's ``lm`` decides
    which terms are aliased; ``tol`` is relative to each column's norm.
    """
    n, p = X.shape
    keep = np.zeros(p, dtype=bool)
    basis = np.zeros((n, 0))
    for j in range(p):
        v = X[:, j].astype(float)
        norm = np.linalg.norm(v)
        if norm == 0:
            continue
        r = v - basis @ (basis.T @ v)
        r = r - basis @ (basis.T @ r)
        rn = np.linalg.norm(r)
        if rn > tol * norm:
            keep[j] = True
            basis = np.column_stack([basis, r / rn])
    return keep


def _fit_one(y, X, family, terms, label):
    """Fit one set; coefficients not estimable are NaN.  Returns (beta, se, notes, df_resid)."""
    import statsmodels.api as sm
    from statsmodels.tools.sm_exceptions import PerfectSeparationError, PerfectSeparationWarning

    p = X.shape[1]
    beta = np.full(p, np.nan)
    se = np.full(p, np.nan)
    notes = []
    active = np.ones(p, dtype=bool)
    rows = np.ones(len(y), dtype=bool)
    # levels absent from this set
    absent = ~X.any(axis=0)
    absent[0] = False
    for j in np.flatnonzero(absent):
        notes.append(f"{label}: {terms[j]} not estimable (level absent)")
    active &= ~absent
    if family == "logit" and (len(y) == 0 or np.ptp(y) == 0):
        notes.append(f"{label}: outcome constant (or no rows); nothing estimable")
        return beta, se, notes, math.nan
    if family == "logit":
        # quasi-complete separation by a single dummy: the outcome is constant among
        # the records of that level, so its MLE is ±∞.  Drop the term and its rows
        # (the other coefficients are then the limit of the MLE) and repeat.
        changed = True
        while changed:
            changed = False
            for j in np.flatnonzero(active)[1:]:
                col = X[rows, j]
                if set(np.unique(col)) <= {0.0, 1.0}:
                    yy = y[rows][col == 1]
                    if yy.size and (yy.min() == yy.max()):
                        active[j] = False
                        rows &= X[:, j] == 0
                        notes.append(f"{label}: {terms[j]} not estimable (separation: outcome constant at this level)")
                        changed = True
        if not rows.any() or np.ptp(y[rows]) == 0:
            notes.append(f"{label}: outcome constant once separated levels are removed; nothing estimable")
            return beta, se, notes, math.nan
        emptied = active & ~X[rows].any(axis=0)
        emptied[0] = False
        for j in np.flatnonzero(emptied):
            notes.append(f"{label}: {terms[j]} not estimable (no records left once separated levels are removed)")
        active &= ~emptied
    idx = np.flatnonzero(active)
    Xa = X[np.ix_(rows, active)]
    # aliased columns, as R's lm/glm: a column that is a linear combination of the
    # columns before it (in term order) is dropped, so the intercept always stays
    keep_cols = _independent_columns(Xa)
    for j in idx[~keep_cols]:
        notes.append(f"{label}: {terms[j]} not estimable (aliased with earlier terms)")
    idx = idx[keep_cols]
    Xa = Xa[:, keep_cols]
    if Xa.shape[0] <= Xa.shape[1]:
        notes.append(f"{label}: {Xa.shape[0]} rows for {Xa.shape[1]} coefficients; nothing estimable")
        return beta, se, notes, math.nan
    ya = y[rows]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if family == "logit":
                res = sm.Logit(ya, Xa).fit(disp=0, method="newton", maxiter=100)
                converged = bool(res.mle_retvals.get("converged", True))
            else:
                res = sm.OLS(ya, Xa).fit()
                converged = True
        except (PerfectSeparationError, np.linalg.LinAlgError, ValueError) as exc:
            notes.append(f"{label}: fit failed ({type(exc).__name__}: {exc}); nothing estimable")
            return beta, se, notes, math.nan
    if any(issubclass(w.category, PerfectSeparationWarning) for w in caught):
        notes.append(f"{label}: perfect separation (by a combination of predictors); nothing estimable")
        return beta, se, notes, math.nan
    if not converged:
        notes.append(f"{label}: fit did not converge (likely separation by a combination of "
                     "predictors); nothing estimable")
        return beta, se, notes, math.nan
    b = np.asarray(res.params, dtype=float)
    s = np.asarray(res.bse, dtype=float)
    bad = ~np.isfinite(b) | ~np.isfinite(s)
    for j in idx[bad]:
        notes.append(f"{label}: {terms[j]} not estimable (non-finite estimate)")
    b[bad] = np.nan
    s[bad] = np.nan
    beta[idx] = b
    se[idx] = s
    return beta, se, notes, float(res.df_resid)


def regression_overlap(orig: pd.DataFrame, syns, outcome, predictors: Sequence | None = None,
                       family: str = "logit", numeric: Sequence | None = None, event=None,
                       reference: str = "first", level: float = 0.95) -> RegressionOverlap:
    """Fit a regression on the original and each synthetic set; CI overlap per coefficient.

    Parameters
    ----------
    outcome:
        the response column.  ``family="logit"``: binary (the event is the second
        level in sorted/categorical order unless ``event`` is given); ``"ols"``:
        numeric.  Rows with a missing outcome are dropped.
    predictors:
        columns to use (default: all columns but the outcome).  Columns named in
        ``numeric`` (default: those with a float dtype in the original) enter as
        numbers; all others as dummies.  The dummies are built from the union of the
        levels in the original and all sets (missing values a level "NA"), with the
        same reference level everywhere: the first level (``reference="first"``,
        R's convention) or the original's most frequent (``"most_frequent"``).
    level:
        confidence level of the intervals (0.95).

    The original's CI is statsmodels' (Wald z for logit, t for OLS).  The synthetic
    fits are combined by :func:`combine_estimates`.  A coefficient that cannot be
    estimated in a set (its level absent, separation, aliasing) is NaN for that set
    with a note and left out of the combination; never an exception.

    **Not differentially private**: this reads the original data.
    """
    if family not in ("logit", "ols"):
        raise OptionError(f"family must be 'logit' or 'ols'; got {family!r}")
    if not 0 < level < 1:
        raise OptionError(f"level must lie in (0, 1); got {level!r}")
    if reference not in ("first", "most_frequent"):
        raise OptionError(f"reference must be 'first' or 'most_frequent'; got {reference!r}")
    syns = _as_list(syns)
    if not isinstance(orig, pd.DataFrame):
        raise InputError(f"original data is a {type(orig).__name__}, not a DataFrame")
    if outcome not in orig.columns:
        raise InputError(f"outcome '{outcome}' is not a column of the original data")
    if predictors is None:
        predictors = [c for c in orig.columns if c != outcome]
    else:
        predictors = list(predictors)
        unknown = [c for c in predictors if c not in orig.columns]
        if unknown:
            raise InputError(f"predictors {unknown} are not columns of the original data")
        if outcome in predictors:
            raise OptionError(f"the outcome '{outcome}' is also listed as a predictor")
    used = [outcome] + predictors
    for i, s in enumerate(syns, start=1):
        missing = [c for c in used if c not in s.columns]
        if missing:
            raise InputError(f"synthetic set {i} lacks column(s) {missing} used by the regression")
    if numeric is None:
        numeric = [p for p in predictors if pd.api.types.is_float_dtype(orig[p].dtype)]
    numeric = set(numeric)
    frames = [orig] + syns
    designs, terms, notes = _design(frames, outcome, predictors, numeric, family, event, reference)
    notes = list(notes)
    fits = []
    for i, (y, X, dropped) in enumerate(designs):
        label = "original" if i == 0 else f"set {i}"
        if dropped:
            notes.append(f"{label}: {dropped} row(s) with a missing outcome or numeric predictor dropped")
        b, s, nt, df_resid = _fit_one(y, X, family, terms, label)
        notes.extend(nt)
        fits.append((b, s, df_resid))
    b_o, s_o, df_o = fits[0]
    if family == "ols" and np.isfinite(df_o) and df_o > 0:
        q_o = stats.t.ppf(0.5 + level / 2, df_o)
    else:
        q_o = stats.norm.ppf(0.5 + level / 2)
    rows = []
    for j, term in enumerate(terms):
        comb = combine_estimates([f[0][j] for f in fits[1:]], [f[1][j] for f in fits[1:]], level)
        lo_o, hi_o = b_o[j] - q_o * s_o[j], b_o[j] + q_o * s_o[j]
        ov = ci_overlap(lo_o, hi_o, comb["lo"], comb["hi"])
        term_notes = [("original" if i == 0 else f"set {i}") for i, f in enumerate(fits)
                      if not np.isfinite(f[0][j])]
        rows.append({
            "term": term, "beta_orig": b_o[j], "se_orig": s_o[j], "lo_orig": lo_o, "hi_orig": hi_o,
            "beta_syn": comb["beta"], "se_syn": comb["se"], "df_syn": comb["df"],
            "lo_syn": comb["lo"], "hi_syn": comb["hi"], "B": comb["B"], "W": comb["W"],
            "m_used": comb["m"], "overlap": ov,
            "sign_agree": (bool(np.sign(b_o[j]) == np.sign(comb["beta"]))
                           if np.isfinite(b_o[j]) and np.isfinite(comb["beta"]) else None),
            "note": ("not estimable in: " + ", ".join(term_notes)) if term_notes else "",
        })
    table = pd.DataFrame(rows)
    ov = table["overlap"].to_numpy(dtype=float)
    signs = table["sign_agree"].dropna()
    return RegressionOverlap(
        table=table,
        mean_overlap=float(np.nanmean(ov)) if np.isfinite(ov).any() else math.nan,
        sign_agreement=float(signs.astype(bool).mean()) if len(signs) else math.nan,
        family=family, outcome=str(outcome), level=level, notes=notes,
    )
