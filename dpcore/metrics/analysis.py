"""Analysis-specific utility (docs/measures.md; Bowen & Liu 2021, §4.3): L1 distance
and chi-square consistency; regression CI overlap is in :mod:`dpcore.metrics.regression`.

- :func:`l1_distance` — L1 distance between the full cross-tabulations of the
  original and each synthetic set, in **proportions** (Σ|y/n − s/n_s|, range 0–2).
- :func:`chisq_consistency` — for every pair of attributes, the chi-square test of
  independence on the original and on each synthetic set, the m synthetic
  statistics combined by the D2 rule of Li, Meng, Raghunathan & Rubin (1991), and
  the share of pairs whose significance at α agrees with the original's.

**Not differentially private.**  Every measure here reads the raw (original) data.
They are for the curator's own evaluation of a synthesis (curator-only); the
numbers must not be published as if covered by the release's ε.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from dpcore.errors import OptionError
from dpcore.metrics.tables import cell_ids, encode_sets

__all__ = [
    "L1Distance",
    "ChisqConsistency",
    "l1_distance",
    "chisq_consistency",
    "d2_combine",
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
    syns, columns, codes, n_levels, bounds = encode_sets(orig, syns, columns)
    ids, n_cells = cell_ids(codes, n_levels)
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
    syns, columns, codes, n_levels, bounds = encode_sets(orig, syns, columns)
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
