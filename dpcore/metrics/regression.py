"""Regression CI overlap (docs/measures.md; Bowen & Liu 2021, §4.3; Karr et al. 2006).

:func:`regression_overlap` fits a logistic (or linear) regression on the original
and on each synthetic set, combines the m synthetic fits (β̄, T = B/m + W, t with
ν = (m−1)(1 + mW/B)²) and reports the CI overlap of Karr et al. (2006) per
coefficient.  The other analysis-specific measures (L1 distance, chi-square
consistency) are in :mod:`dpcore.metrics.analysis`.

**Not differentially private.**  Every measure here reads the raw (original) data.
They are for the curator's own evaluation of a synthesis (curator-only); the
numbers must not be published as if covered by the release's ε.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from dpcore.errors import InputError, OptionError
from dpcore.metrics.tables import synthetic_set_list

__all__ = [
    "RegressionOverlap",
    "regression_overlap",
    "ci_overlap",
    "combine_estimates",
]


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


def combine_estimates(betas, ses, level: float = 0.95, dfs=None) -> dict:
    """Combine m per-set estimates of one coefficient (docs/measures.md; Reiter 2003 / Liu 2016).

    β̄ = mean β̂_j, B = Σ(β̂_j − β̄)²/(m − 1), W = mean SE_j², T = B/m + W, and a t
    reference with ν = (m − 1)(1 + mW/B)².  B = 0 gives ν = ∞ (normal); m = 1
    gives T = W and the normal reference, or, when ``dfs`` gives the sets' residual degrees of
    freedom (OLS), the set's own t with them, so a set equal to the original gets the original's
    interval.  Non-finite inputs are dropped first.
    Returns ``beta``, ``se`` (√T), ``df`` (ν), ``lo``, ``hi``, ``B``, ``W``, ``m``.
    """
    betas = np.asarray(betas, dtype=float)
    ses = np.asarray(ses, dtype=float)
    ok = np.isfinite(betas) & np.isfinite(ses)
    own_df = np.asarray(dfs, dtype=float)[ok] if dfs is not None else np.array([])
    betas, ses = betas[ok], ses[ok]
    m = int(betas.size)
    if m == 0:
        return {"beta": math.nan, "se": math.nan, "df": math.nan, "lo": math.nan,
                "hi": math.nan, "B": math.nan, "W": math.nan, "m": 0}
    beta = float(betas.mean())
    W = float(np.mean(ses ** 2))
    if m == 1:
        B, T = math.nan, W
        nu = float(own_df[0]) if own_df.size and np.isfinite(own_df[0]) and own_df[0] > 0 else math.inf
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


def _outcomes(out_series: list, outcome, family: str, event, notes: list[str]) -> tuple[list, list]:
    """Per frame: the outcome as floats (logit: 1 at the event level) and the rows where it is known."""
    ys, keeps = [], []
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
    return ys, keeps


def _dummy_columns(p, series: list, reference: str, terms: list[str], blocks: list[list], notes: list[str]) -> None:
    """The treatment-coded columns of categorical predictor ``p`` (missing values a level of their
    own), appended to every frame's block; the reference level is the first, or the original's most
    frequent."""
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


def _design(frames, outcome, predictors, numeric, family, event, reference):
    """Per-frame (y, X) with the same columns in every frame, plus term names and notes."""
    notes: list[str] = []
    ys, keeps = _outcomes([f[outcome] for f in frames], outcome, family, event, notes)
    terms = ["Intercept"]
    blocks = [[np.ones(len(f))] for f in frames]
    for p in predictors:
        series = [f[p] for f in frames]
        if p not in numeric:
            _dummy_columns(p, series, reference, terms, blocks, notes)
            continue
        for i, s in enumerate(series):
            if not pd.api.types.is_numeric_dtype(s.dtype):
                raise OptionError(f"predictor '{p}' is declared numeric but is {s.dtype} in set {i}")
            v = s.to_numpy(dtype=float, na_value=np.nan)
            keeps[i] &= ~np.isnan(v)
            blocks[i].append(v)
        terms.append(p)
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


def _drop_separated(y, X, terms, label, active, notes):
    """Logit only: drop the terms whose dummy separates the outcome, with their rows.

    Quasi-complete separation by a single dummy: the outcome is constant among the
    records of that level, so its MLE is ±∞.  Drop the term and its rows (the other
    coefficients are then the limit of the MLE) and repeat.  Returns the updated
    (active, rows), or None when nothing is left to estimate; ``notes`` gets a line
    per dropped term.
    """
    active = active.copy()
    rows = np.ones(len(y), dtype=bool)
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
        return None
    emptied = active & ~X[rows].any(axis=0)
    emptied[0] = False
    for j in np.flatnonzero(emptied):
        notes.append(f"{label}: {terms[j]} not estimable (no records left once separated levels are removed)")
    active &= ~emptied
    return active, rows


def _fit_model(ya, Xa, family, label, notes):
    """statsmodels' Logit (Newton) or OLS on full-rank ``Xa``; None (with a note) when
    the fit fails, separates or does not converge."""
    import statsmodels.api as sm
    from statsmodels.tools.sm_exceptions import PerfectSeparationError, PerfectSeparationWarning

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
            return None
    if any(issubclass(w.category, PerfectSeparationWarning) for w in caught):
        notes.append(f"{label}: perfect separation (by a combination of predictors); nothing estimable")
        return None
    if not converged:
        notes.append(f"{label}: fit did not converge (likely separation by a combination of "
                     "predictors); nothing estimable")
        return None
    return res


def _fit_one(y, X, family, terms, label):
    """Fit one set; coefficients not estimable are NaN.  Returns (beta, se, notes, df_resid)."""
    p = X.shape[1]
    beta = np.full(p, np.nan)
    se = np.full(p, np.nan)
    notes: list[str] = []
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
        separated = _drop_separated(y, X, terms, label, active, notes)
        if separated is None:
            return beta, se, notes, math.nan
        active, rows = separated
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
    res = _fit_model(y[rows], Xa, family, label, notes)
    if res is None:
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


def _check_regression(orig, syns, outcome, predictors, family, numeric, reference, level):
    """Validate the options and columns; returns (syns as a list, predictors, numeric set)."""
    if family not in ("logit", "ols"):
        raise OptionError(f"family must be 'logit' or 'ols'; got {family!r}")
    if not 0 < level < 1:
        raise OptionError(f"level must lie in (0, 1); got {level!r}")
    if reference not in ("first", "most_frequent"):
        raise OptionError(f"reference must be 'first' or 'most_frequent'; got {reference!r}")
    syns = synthetic_set_list(syns)
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
    return syns, predictors, set(numeric)


def _overlap_table(terms, fits, family, level) -> pd.DataFrame:
    """One row per term: the original's fit and CI, the combined synthetic fit, their overlap."""
    b_o, s_o, df_o = fits[0]
    if family == "ols" and np.isfinite(df_o) and df_o > 0:
        q_o = stats.t.ppf(0.5 + level / 2, df_o)
    else:
        q_o = stats.norm.ppf(0.5 + level / 2)
    rows = []
    for j, term in enumerate(terms):
        comb = combine_estimates([f[0][j] for f in fits[1:]], [f[1][j] for f in fits[1:]], level,
                                 dfs=[f[2] for f in fits[1:]] if family == "ols" else None)
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
    return pd.DataFrame(rows)


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
    syns, predictors, numeric = _check_regression(orig, syns, outcome, predictors, family,
                                                  numeric, reference, level)
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
    table = _overlap_table(terms, fits, family, level)
    ov = table["overlap"].to_numpy(dtype=float)
    signs = table["sign_agree"].dropna()
    return RegressionOverlap(
        table=table,
        mean_overlap=float(np.nanmean(ov)) if np.isfinite(ov).any() else math.nan,
        sign_agreement=float(signs.astype(bool).mean()) if len(signs) else math.nan,
        family=family, outcome=str(outcome), level=level, notes=notes,
    )
