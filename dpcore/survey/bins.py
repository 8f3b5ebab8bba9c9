"""Post-stratification bins: binning strategies, post-stratified weights, their W_k and
smooth bounds, and the DP bin selection (Merrill 2021, ch. 7; Def 7.1.2, Prop 7.3.8).

The first step of the pipeline in :mod:`dpcore.survey.poststrat` (whose docstring states
the notation and the guarantee of the whole release). Bin
selection is the exact exponential mechanism, ε_1-DP for add/remove neighbours; every
other function here is a public bound or a curator-side computation on the sample.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpcore.errors import InputError, OptionError
from dpcore.privacy.ledger import Ledger, check_epsilon
from dpcore.privacy.measurement import Measurement
from dpcore.privacy.mechanisms import ExponentialMechanism
from dpcore.privacy.neighbours import ADD_REMOVE
from dpcore.privacy.stability import Sensitivity
from dpcore.survey._privacy import label

__all__ = [
    "Binning",
    "binning",
    "binnings_for",
    "check_base_weights",
    "check_weight_range",
    "post_weights",
    "max_potential_weight",
    "potential_weight",
    "smooth_weight_bound",
    "selection_scores",
    "selection_sensitivity",
    "SelectedBins",
    "select_bins",
    "level_totals",
    "bin_totals",
    "level_codes",
]


# ------------------------------------------------------------------ strategies and totals


@dataclass(frozen=True)
class Binning:
    """A binning strategy 𝒫_s for one column: candidates[i] = (name, bin label per base level)."""

    column: str
    levels: tuple
    candidates: tuple

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.candidates)

    def bins(self, i: int) -> tuple:
        """The distinct bin labels of candidate i, in order of first appearance."""
        return tuple(dict.fromkeys(self.candidates[i][1]))

    def bin_of_level(self, i: int) -> np.ndarray:
        """Index (into :meth:`bins`) of the bin of every base level under candidate i."""
        lab = self.candidates[i][1]
        b = {x: j for j, x in enumerate(self.bins(i))}
        return np.array([b[x] for x in lab], dtype=np.int64)


def binnings_for(df: pd.DataFrame, columns: Sequence[str], totals: Mapping, candidates: Mapping | None = None):
    """Check that every record has a bin the known totals cover; return (data, binnings).

    ``data`` is a copy of ``df`` with the binning columns as text (the totals' keys);
    raises :class:`InputError` naming the column and the uncovered level(s). Reads the
    data only to refuse it; releases nothing.
    """
    candidates = candidates or {}
    data = df.copy()
    out = []
    for c in columns:
        if c not in data.columns:
            raise InputError(f"column {c!r} is not in the table; columns are {list(data.columns)}")
        if data[c].isna().any():
            raise InputError(f"column {c!r} has {int(data[c].isna().sum())} missing value(s); every record needs "
                             "a bin: drop or impute those rows first")
        if c not in totals:
            raise InputError(f"the totals have no rows for column {c!r}; add column,level,total rows for it")
        data[c] = data[c].astype(str)
        levels = list(totals[c])
        missing = sorted(set(data[c]) - set(levels))
        if missing:
            raise InputError(f"the totals do not cover bin level(s) {missing[:5]} of column {c!r}; add a total "
                             "for every level that occurs")
        out.append(binning(c, levels, candidates.get(c)))
    return data, out


def binning(column: str, levels: Sequence, candidates: Mapping[str, Mapping] | None = None) -> Binning:
    """Declare the base levels of ``column`` and its candidate sets of bins.

    ``candidates`` maps a name to {base level: bin label}; every base level must be given
    a bin. None means a single candidate with every level its own bin.
    """
    lv = tuple(levels)
    if not lv:
        raise OptionError(f"column {column!r}: declare at least one base level")
    if len(set(lv)) != len(lv):
        raise OptionError(f"column {column!r}: the base levels repeat; list each once")
    if candidates is None:
        candidates = {"separate": {x: x for x in lv}}
    if not candidates:
        raise OptionError(f"column {column!r}: give at least one candidate set of bins")
    out = []
    for name, mp in candidates.items():
        miss = [x for x in lv if x not in mp]
        if miss:
            raise OptionError(
                f"column {column!r}: candidate {name!r} puts no bin on level(s) {miss}; every base level "
                "must belong to one bin"
            )
        extra = [x for x in mp if x not in lv]
        if extra:
            raise OptionError(f"column {column!r}: candidate {name!r} names unknown level(s) {extra}")
        out.append((str(name), tuple(mp[x] for x in lv)))
    return Binning(column, lv, tuple(out))


def level_totals(b: Binning, totals: Mapping) -> np.ndarray:
    """The known population totals of ``b``'s base levels, in level order; an InputError when a
    level has none or a total is not a positive number. Public facts: no privacy cost."""
    if b.column not in totals:
        raise InputError(f"no population totals for column {b.column!r}; add its levels to the totals")
    t = totals[b.column]
    miss = [x for x in b.levels if x not in t]
    if miss:
        raise InputError(
            f"the totals for column {b.column!r} do not cover level(s) {miss}; every base level needs a "
            "known population total (add a row per missing level)"
        )
    v = np.array([float(t[x]) for x in b.levels])
    if not np.all(np.isfinite(v)) or np.any(v <= 0):
        bad = [x for x, y in zip(b.levels, v) if not (math.isfinite(y) and y > 0)]
        raise InputError(
            f"the totals for column {b.column!r} must be positive numbers; level(s) {bad} are not. "
            "Merge structural-zero levels into a neighbouring level in the binning"
        )
    return v


def bin_totals(b: Binning, i: int, base: np.ndarray) -> np.ndarray:
    """The population totals of the bins of ``b``'s strategy ``i``: the level totals ``base``
    summed within each bin."""
    return np.bincount(b.bin_of_level(i), weights=base, minlength=len(b.bins(i)))


def level_codes(data: pd.DataFrame, b: Binning) -> np.ndarray:
    """Each record's base level index in ``b`` (column ``b.column``); an InputError for a
    missing column, missing values, or a value that is not a declared level."""
    if b.column not in data.columns:
        raise InputError(f"column {b.column!r} is not in the table; columns are {list(data.columns)}")
    s = data[b.column]
    if s.isna().any():
        raise InputError(
            f"column {b.column!r} has {int(s.isna().sum())} missing value(s); post-stratification needs every "
            "record in a bin (impute them or declare a level for them)"
        )
    lookup = {x: i for i, x in enumerate(b.levels)}
    vals = s.tolist()
    bad = sorted({v for v in vals if v not in lookup}, key=str)
    if bad:
        raise InputError(
            f"column {b.column!r} has value(s) {bad[:5]} that are not among its declared levels {list(b.levels)}"
        )
    return np.array([lookup[v] for v in vals], dtype=np.int64)


def check_base_weights(data: pd.DataFrame, weights: str | None, weight_range=None) -> tuple[np.ndarray, float, float]:
    """Base weights from ``weights`` (all 1 if None) and the public range [G', G]."""
    n = len(data)
    if weights is None:
        bwt = np.ones(n)
        lo, hi = (1.0, 1.0) if weight_range is None else check_weight_range(weight_range)
    else:
        if weights not in data.columns:
            raise InputError(f"weights column {weights!r} is not in the table; columns are {list(data.columns)}")
        col = data[weights]
        if not pd.api.types.is_numeric_dtype(col):
            raise InputError(f"weights column {weights!r} must be numeric; it has type {col.dtype}")
        bwt = col.to_numpy(dtype=float)
        bad = ~np.isfinite(bwt) | (bwt <= 0)
        if bad.any():
            raise InputError(
                f"weights column {weights!r} has {int(bad.sum())} row(s) with a missing, zero or negative "
                f"weight (first at row {int(np.flatnonzero(bad)[0])}); base weights must be > 0: drop or fix "
                "those rows"
            )
        if weight_range is None:
            raise OptionError(
                "with a weights column, declare the design's base-weight range [G', G] (weight_range, or "
                "--base-weight-range LO,HI); it must come from the sampling design, not from the data"
            )
        lo, hi = check_weight_range(weight_range)
    out = (bwt < lo * (1 - 1e-12)) | (bwt > hi * (1 + 1e-12))
    if out.any():
        raise InputError(
            f"{int(out.sum())} base weight(s) lie outside the declared range [{lo:g}, {hi:g}] (e.g. "
            f"{bwt[out][0]:g}); widen the range to what the design allows"
        )
    return bwt, lo, hi


def check_weight_range(r) -> tuple[float, float]:
    try:
        lo, hi = (float(x) for x in r)
    except (TypeError, ValueError):
        raise OptionError(f"the base-weight range must be two numbers LO,HI; got {r!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and 0 < lo <= hi):
        raise OptionError(f"the base-weight range needs 0 < LO ≤ HI; got {r!r}")
    return lo, hi


# ------------------------------------------------------------------ weights, W_k, SS


def post_weights(bin_idx, totals, bwt=None) -> np.ndarray:
    """wt(x) = bwt(x)·N̂(S(x))/Σ_{S(x)∩D} bwt (Def 7.5.3)."""
    bin_idx = np.asarray(bin_idx, dtype=np.int64)
    totals = np.asarray(totals, dtype=float)
    bwt = np.ones(len(bin_idx)) if bwt is None else np.asarray(bwt, dtype=float)
    s = np.bincount(bin_idx, weights=bwt, minlength=len(totals))
    return bwt * totals[bin_idx] / s[bin_idx]


def _per_bin(bin_idx, totals, bwt, max_bwt):
    """Records sorted by (bin, descending bwt) with, per record at rank j in its bin (j = k),
    DW_k and AW_k of Prop 7.3.8. Returns (bins, k, DW, AW, empty bin mask)."""
    bin_idx = np.asarray(bin_idx, dtype=np.int64)
    totals = np.asarray(totals, dtype=float)
    bwt = np.ones(len(bin_idx)) if bwt is None else np.asarray(bwt, dtype=float)
    order = np.lexsort((-bwt, bin_idx))
    b, w = bin_idx[order], bwt[order]
    n_b = np.bincount(b, minlength=len(totals))
    start = np.concatenate([[0], np.cumsum(n_b)[:-1]])
    k = np.arange(len(b)) - start[b]
    cs = np.cumsum(w)
    base = (cs - w)[start[b]] if len(b) else np.zeros(0)  # cumulative sum before the bin
    C_k1 = cs - base                                     # sum of the top k+1 weights of the bin
    C_k = C_k1 - w                                       # sum of the top k
    T = np.bincount(b, weights=w, minlength=len(totals))[b]
    w1 = w[start[b]]
    N = totals[b]
    G = float(max_bwt)
    DW = w1 * N / (w1 + T - C_k1)
    AW = N * G / (G + T - C_k)
    return b, k, DW, AW, n_b == 0


def max_potential_weight(bin_idx, totals, bwt=None, max_bwt: float = 1.0) -> float:
    """W_0 of (7.3)."""
    return potential_weight(bin_idx, totals, 0, bwt, max_bwt)


def potential_weight(bin_idx, totals, k: int, bwt=None, max_bwt: float = 1.0) -> float:
    """W_k (Prop 7.3.8; Prop 7.2.3 when all base weights are equal)."""
    totals = np.asarray(totals, dtype=float)
    b, kk, DW, AW, empty = _per_bin(bin_idx, totals, bwt, max_bwt)
    n_b = np.bincount(b, minlength=len(totals))
    at = kk == k
    vals = [np.maximum(DW[at], AW[at])]
    vals.append(totals[n_b <= k])  # bins that k deletions can empty (incl. empty bins)
    v = np.concatenate(vals)
    return float(v.max()) if len(v) else 0.0


def smooth_weight_bound(bin_idx, totals, beta: float, bwt=None, max_bwt: float = 1.0) -> float:
    """SS_β = max_k e^{−βk} W_k (Prop 7.4.2). Per bin the maximum over k ≥ n_S is at
    k = n_S − 1 (W = N̂(S)), which DW already covers, so k runs over 0..n_S − 1."""
    totals = np.asarray(totals, dtype=float)
    b, k, DW, AW, empty = _per_bin(bin_idx, totals, bwt, max_bwt)
    v = np.exp(-beta * k) * np.maximum(DW, AW)
    parts = [v, totals[empty]]
    allv = np.concatenate(parts)
    return float(allv.max()) if len(allv) else 0.0


# ------------------------------------------------------------------ bin selection


def selection_scores(data: pd.DataFrame, b: Binning, totals: Mapping, bwt=None, max_bwt: float = 1.0) -> np.ndarray:
    """f(D, 𝒮) = |𝒮|/W_0^𝒮(D) for every candidate (7.1). Curator-side (not DP)."""
    codes = level_codes(data, b)
    base = level_totals(b, totals)
    out = np.empty(len(b.candidates))
    for i in range(len(b.candidates)):
        bi = b.bin_of_level(i)[codes]
        out[i] = len(b.bins(i)) / max_potential_weight(bi, bin_totals(b, i, base), bwt, max_bwt)
    return out


def selection_sensitivity(b: Binning, totals: Mapping, min_bwt: float = 1.0, max_bwt: float = 1.0) -> float:
    """Δ of (7.2): max over candidates of |𝒮|·G/(G'·min_{S∈𝒮} N̂(S)). Public (totals, design)."""
    base = level_totals(b, totals)
    return max(len(b.bins(i)) * max_bwt / (min_bwt * bin_totals(b, i, base).min()) for i in range(len(b.candidates)))


@dataclass(frozen=True)
class SelectedBins:
    column: str
    name: str
    index: int
    epsilon: float
    sensitivity: float
    probabilities: tuple = field(repr=False)  # data-dependent: curator only
    scores: tuple = field(repr=False)         # data-dependent: curator only


def select_bins(data: pd.DataFrame, b: Binning, totals: Mapping, epsilon: float, rng, *, bwt=None,
                weight_range=(1.0, 1.0), ledger: Ledger | None = None) -> SelectedBins:
    """Choose a set of bins by the exponential mechanism (Def 7.1.2). ε-DP by Thm 7.1.3:
    the score has sensitivity Δ (7.2), and P ∝ exp(ε·f/(2Δ)) is McSherry–Talwar with
    α = ε/(2Δ). A strategy with a single candidate spends nothing."""
    lo, hi = check_weight_range(weight_range)
    scores = selection_scores(data, b, totals, bwt, hi)
    if len(b.candidates) == 1:
        return SelectedBins(b.column, b.candidates[0][0], 0, 0.0, 0.0, (1.0,), tuple(scores))
    eps = check_epsilon(epsilon)
    delta = selection_sensitivity(b, totals, lo, hi)
    if not math.isfinite(delta):
        raise OptionError(f"the base-weight range [{lo:g}, {hi:g}] makes the selection sensitivity of column "
                          f"{b.column!r} overflow; declare the range the sampling design really allows")
    # The exact sampler scales ε/(2Δ)·score by its grid (≤ 2^40): refuse an ε_1 for which that
    # overflows rather than let a NaN reach the sampler. Far below this ε_1 already picks the
    # best candidate almost surely.
    if not math.isfinite(eps / (2.0 * delta) * 2.0**41 * max(1.0, float(np.ptp(scores)))):
        raise OptionError(f"epsilon_select (ε_1 = {eps:g} for column {b.column!r}) is too large for the exact "
                          "exponential sampler; use a smaller one (a few hundred already picks the best candidate)")
    mech = ExponentialMechanism.calibrate(eps, delta)
    choice = Measurement(f"bins of {b.column}", mech, Sensitivity(delta, "score"), "sample", label(ADD_REMOVE),
                         note=f"score |S|/W_0 over {len(b.candidates)} candidate sets of bins (Thm 7.1.3, Δ of (7.2))")
    try:
        probs = mech.probabilities(scores, delta)  # also refuses scores the exact sampler cannot take
        # ε from the mechanism's own map at Δ (docs/mechanisms.md), charged before the draw; with no
        # ledger the caller accounts for the returned selection's ε itself
        idx = int(choice.select(ledger, scores, rng) if ledger is not None else mech.select(scores, delta, rng))
    except OptionError as exc:  # name the option the sampler's limit is about
        raise OptionError(f"epsilon_select (ε_1 = {eps:g} for column {b.column!r}): {exc}") from None
    return SelectedBins(b.column, b.candidates[idx][0], idx, eps, delta, tuple(probs), tuple(scores))
