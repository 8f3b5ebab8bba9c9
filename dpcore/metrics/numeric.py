"""Fidelity of numeric columns: how close the synthetic values lie to the original ones over
each column's range (docs/measures.md#numeric-columns).

Per numeric column, over its range [lower, upper] (the declared domain's outer edges, or, with
no domain, the original's own min and max):

- ``w1``: the Wasserstein-1 distance between the original and the synthetic values
  (``scipy.stats.wasserstein_distance``), divided by the range's width: 0 for the same
  values, at most 1 while both lie inside the range;
- ``q10_error``, ``q50_error``, ``q90_error``: |synthetic − original| at the 10th, 50th
  and 90th percentiles, divided by the width.

Each is the mean over the m sets, with ``per_set`` beside it. The regression check fits OLS
of one numeric outcome on the other columns in the original and in the sets and reports the CI
overlap of :func:`dpcore.metrics.regression.regression_overlap`.

**Not differentially private.** Every measure reads the raw data (curator-only); none is
covered by the release's ε.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from dpcore.data.domain import FOUND_IN_RELEASE
from dpcore.errors import InputError, OptionError

__all__ = ["QUANTILES", "numeric_ranges", "column_fidelity", "numeric_fidelity", "bin_occupancy", "CROWDED_SHARE",
           "crowded_found_bins"]

#: One bin holding more than this share of the records is worth a warning: the column says little.
CROWDED_SHARE = 0.5

#: The percentiles whose errors are reported.
QUANTILES = (0.1, 0.5, 0.9)


def numeric_ranges(orig: pd.DataFrame, domain=None, max_int_levels: int | None = None) -> dict[str, dict]:
    """``{column: {"lower", "upper", "from"}}`` for the numeric columns measured: a domain's
    numeric attributes over their outer edges (``"from": "domain"``), or, with no domain, every
    numeric column of ``orig`` with more than ``max_int_levels`` distinct values over its own
    min and max (``"from": "data"``; curator-only, like every measure here)."""
    if domain is not None:
        return {a.name: {"lower": float(a.edges[0]), "upper": float(a.edges[-1]), "from": "domain"}
                for a in domain.attributes if a.kind == "numeric" and a.name in orig.columns}
    from dpcore.data.inference import DEFAULT_MAX_INT_LEVELS

    limit = DEFAULT_MAX_INT_LEVELS if max_int_levels is None else max_int_levels
    out = {}
    for c in orig.columns:
        s = orig[c]
        if pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype) \
                and s.nunique() > limit:
            lo, hi = float(s.min()), float(s.max())
            if hi > lo:
                out[str(c)] = {"lower": lo, "upper": hi, "from": "data"}
    return out


def _values(s: pd.Series, name: str, where: str) -> np.ndarray:
    if not pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
        raise InputError(f"column '{name}' of {where} is {s.dtype}, not numeric; numeric fidelity needs numbers")
    v = s.to_numpy(dtype=float, na_value=np.nan)
    return v[np.isfinite(v)]


def column_fidelity(orig: pd.Series, syn: pd.Series, lower: float, upper: float, name: str = "",
                    where: str = "the synthetic set") -> dict:
    """One set's ``w1`` and percentile errors for one column, each divided by ``upper − lower``
    (NaN when either side has no finite value). NOT DP: reads the raw data."""
    width = float(upper) - float(lower)
    if not (math.isfinite(width) and width > 0):
        raise OptionError(f"column '{name}': the range must have lower < upper; got [{lower}, {upper}]")
    o, s = _values(orig, name, "the original"), _values(syn, name, where)
    if o.size == 0 or s.size == 0:
        return {"w1": math.nan, **{_qkey(q): math.nan for q in QUANTILES}}
    out = {"w1": float(stats.wasserstein_distance(o, s)) / width}
    qo, qs = np.quantile(o, QUANTILES), np.quantile(s, QUANTILES)
    out.update({_qkey(q): float(abs(b - a)) / width for q, a, b in zip(QUANTILES, qo, qs)})
    return out


def _qkey(q: float) -> str:
    return f"q{round(100 * q):02d}_error"


def _regression(orig, syns, ranges, outcome, level) -> dict | None:
    """OLS of ``outcome`` on the other columns (the measured numeric ones as numbers): the CI
    overlap per term and its mean. None when there is no numeric outcome."""
    from dpcore.metrics.regression import regression_overlap

    if outcome is None:
        if not ranges:
            return None
        outcome = next(iter(ranges))
    elif outcome not in ranges:
        raise OptionError(f"the regression outcome '{outcome}' is not a numeric column measured here; choose one of "
                          f"{', '.join(ranges) or '(none)'}")
    numeric = [c for c in ranges if c != outcome]
    res = regression_overlap(orig, syns, outcome, family="ols", numeric=numeric, level=level)
    terms = {r["term"]: r["overlap"] for r in res.table.to_dict("records")}
    return {"outcome": outcome, "family": "ols", "mean_overlap": res.mean_overlap,
            "sign_agreement": res.sign_agreement, "overlap_by_term": terms, "notes": list(res.notes)}


def numeric_fidelity(orig: pd.DataFrame, syns: Sequence[pd.DataFrame], ranges: Mapping[str, Mapping],
                     outcome: str | None = None, level: float = 0.95) -> dict:
    """The numeric fidelity of m sets: ``{"columns": {col: {lower, upper, from, w1, q10_error,
    q50_error, q90_error, per_set}}, "regression": {...} or None}``. Means over the sets; the
    regression's outcome is ``outcome`` or the first measured column. NOT DP (curator-only)."""
    columns = {}
    for col, r in ranges.items():
        per_set = []
        for i, s in enumerate(syns, 1):
            if col not in s.columns:
                raise InputError(f"synthetic set {i} lacks the numeric column '{col}'")
            per_set.append(column_fidelity(orig[col], s[col], r["lower"], r["upper"], col, f"synthetic set {i}"))
        keys = per_set[0].keys()
        means = {k: float(np.nanmean([p[k] for p in per_set])) if any(np.isfinite(p[k]) for p in per_set)
                 else math.nan for k in keys}
        columns[col] = {"lower": r["lower"], "upper": r["upper"], "from": r.get("from", "domain"), **means,
                        "per_set": per_set}
    return {"columns": columns, "regression": _regression(orig, list(syns), ranges, outcome, level)}


def bin_occupancy(values: pd.Series, edges: Sequence[float]) -> dict:
    """How the non-missing ``values`` fill the bins ``[e0, e1), …, [e_{k−1}, e_k]``, values outside
    clamped into the end bins: ``n``, ``counts``, ``top_share`` (the fullest bin's share of n),
    ``top_bin`` (its lower and upper edge), ``below`` and ``above`` (the values clamped).

    Privacy: CURATOR-ONLY, NOT DP: exact counts of the raw data, for the curator's warning that
    one bin holds most records and for the number clamped; never released."""
    e = np.asarray([float(x) for x in edges])
    v = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    v = v[np.isfinite(v)]
    k = len(e) - 1
    idx = np.minimum(np.searchsorted(e, np.clip(v, e[0], e[-1]), side="right") - 1, k - 1)
    counts = np.bincount(idx, minlength=k) if v.size else np.zeros(k, dtype=int)
    top = int(np.argmax(counts))
    return {"n": int(v.size), "counts": counts.tolist(), "top_share": float(counts[top] / v.size) if v.size else 0.0,
            "top_bin": (float(e[top]), float(e[top + 1])), "below": int((v < e[0]).sum()),
            "above": int((v > e[-1]).sum())}


def crowded_found_bins(orig: pd.DataFrame, domain) -> dict[str, dict]:
    """The numeric columns of a release's ``domain`` whose edges the release found with DP (origins
    :data:`dpcore.data.domain.FOUND_IN_RELEASE`) and whose fullest bin holds more than :data:`CROWDED_SHARE` of the
    original's records: column → :func:`bin_occupancy` over the released edges.

    Privacy: CURATOR-ONLY, NOT DP: exact counts of the raw records in the released (DP) bins, for the
    curator's warning that a column says little; never released."""
    out = {}
    for a in domain.attributes:
        if a.kind != "numeric" or a.origin not in FOUND_IN_RELEASE or a.name not in orig.columns:
            continue
        occ = bin_occupancy(orig[a.name], a.edges)
        if occ["n"] and occ["top_share"] > CROWDED_SHARE:
            out[a.name] = occ
    return out
