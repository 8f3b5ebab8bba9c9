"""DP post-stratification: bin selection, DP IPF and weighted counts (Merrill 2021, ch. 7).

Notation: a *binning strategy* for a column is a list of candidate *sets of bins*, each a
partition of the column's public base levels (Example 7.5.5). N̂(S) is the known
population total of bin S (the sum of its base levels' totals, Remark 7.5.1). Base
weights bwt(x) come from the sampling design and lie in a public range [G', G]. The
post-stratified weight of x under the set of bins 𝒮 is (Def 7.5.3)

    wt(x) = bwt(x) · N̂(S(x)) / Σ_{y ∈ S(x) ∩ D} bwt(y).

* W_0 (7.3), the *max potential weight*: the largest weight of a record in D, of a record
  that could be added (N̂(S)·G/(G + Σ_S bwt), Remark 7.3.7), or N̂ of an empty bin.
* W_k = max over datasets k steps away of W_0; Prop 7.3.8 (7.2.3 for equal weights):
  per bin with n_S > k records, the larger of DW_k (keep the heaviest record, delete the
  next k heaviest) and AW_k (delete the k heaviest, add one of weight G); N̂(S) if n_S ≤ k.
* Bin selection (Def 7.1.2, Thm 7.1.3): the exponential mechanism with score
  |𝒮|/W_0^𝒮(D) and sensitivity Δ (7.2) = max_𝒮 |𝒮|·G/(G'·min_{S∈𝒮} N̂(S)); ε_1-DP.
* DP IPF (Thm 7.3.2, §7.3): the counts of the join cells of the chosen bins plus
  independent count noise at ε_2 (one record is in one cell: parallel composition),
  a non-negative collapse (post-processing), then raking to the known marginal totals
  (post-processing; :class:`dpcore.estimate.raking.Raking`, whose :func:`rake` this module
  names too). The raked table T estimates the join-bin totals N̂(S) := T(S).
* Weighted count (Prop 7.4.2, Cor 7.4.3): q(D) = Σ_x wt(x)·q(x) plus
  2(γ−1)·SS_β(D)/ε_3 · X, X ~ GeneralizedCauchy(γ), β = ε_3/(2(γ−1)),
  SS_β = max_k e^{−βk} W_k; ε_3-DP for γ ≥ 2 (see :mod:`dpcore.survey._smooth`).

By sequential composition the whole pipeline is (ε_1 + ε_2 + ε_3)-DP; the ledger says so.

Neighbours: W_k, the selection sensitivity Δ and the join-table counts are all bounds for
adding or removing one record, so the pipeline is for add/remove neighbours only
(``neighbours="replace"`` is refused); n is not public.

What holds as implemented (docs/survey-privacy.md): the bin selection (exact exponential
mechanism) and the join table (exact discrete Laplace by default) are ε-DP as run. The
weighted count uses a floating-point generalized Cauchy sampler that is not hardened:
its value is rounded to a public power-of-two grid (2^-20 of the noise scale the count
would have if SS_β were one person, i.e. of 2(γ−1)/ε_3; a grid is post-processing, so
this choice affects resolution only), and its ε_3 is stated for the ideal real-valued
mechanism.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpcore.errors import InputError, OptionError
from dpcore.estimate.raking import Raking, rake
from dpcore.measure.margins import NoisyMargin
from dpcore.privacy.ledger import Ledger, check_epsilon
from dpcore.privacy.measurement import Measurement
from dpcore.privacy.mechanisms import ExponentialMechanism, exponential_probabilities, noise_for
from dpcore.survey._privacy import ADD_REMOVE, label, notion_for, statement
from dpcore.survey._smooth import charge_smooth, check_gamma, smooth_grid, smooth_value

_WHY = ("W_k (Prop 7.3.8), the selection sensitivity (7.2) and the join-table counts bound what adding or "
        "removing one record changes; replace-one bounds are not derived")

__all__ = [
    "Binning",
    "binning",
    "post_weights",
    "max_potential_weight",
    "potential_weight",
    "smooth_weight_bound",
    "selection_scores",
    "selection_sensitivity",
    "SelectedBins",
    "select_bins",
    "nonnegative_collapse",
    "rake",
    "dp_ipf",
    "weighted_count",
    "expected_noise_sd",
    "PostStratRelease",
    "poststratify_release",
    "check_base_weights",
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


def _base_totals(b: Binning, totals: Mapping) -> np.ndarray:
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


def _bin_totals(b: Binning, i: int, base: np.ndarray) -> np.ndarray:
    return np.bincount(b.bin_of_level(i), weights=base, minlength=len(b.bins(i)))


def _level_codes(data: pd.DataFrame, b: Binning) -> np.ndarray:
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
    codes = _level_codes(data, b)
    base = _base_totals(b, totals)
    out = np.empty(len(b.candidates))
    for i in range(len(b.candidates)):
        bi = b.bin_of_level(i)[codes]
        out[i] = len(b.bins(i)) / max_potential_weight(bi, _bin_totals(b, i, base), bwt, max_bwt)
    return out


def selection_sensitivity(b: Binning, totals: Mapping, min_bwt: float = 1.0, max_bwt: float = 1.0) -> float:
    """Δ of (7.2): max over candidates of |𝒮|·G/(G'·min_{S∈𝒮} N̂(S)). Public (totals, design)."""
    base = _base_totals(b, totals)
    return max(len(b.bins(i)) * max_bwt / (min_bwt * _bin_totals(b, i, base).min()) for i in range(len(b.candidates)))


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
    choice = Measurement(f"bins of {b.column}", mech, delta, "sample", label(ADD_REMOVE),
                         note=f"score |S|/W_0 over {len(b.candidates)} candidate sets of bins (Thm 7.1.3, Δ of (7.2))")
    try:
        probs = mech.probabilities(scores, delta)  # also refuses scores the exact sampler cannot take
        # ε from the mechanism's own map at Δ (docs/mechanisms.md), charged before the draw; with no
        # ledger the caller accounts for the returned selection's ε itself
        idx = int(choice.select(ledger, scores, rng) if ledger is not None else mech.select(scores, delta, rng))
    except OptionError as exc:  # name the option the sampler's limit is about
        raise OptionError(f"epsilon_select (ε_1 = {eps:g} for column {b.column!r}): {exc}") from None
    return SelectedBins(b.column, b.candidates[idx][0], idx, eps, delta, tuple(probs), tuple(scores))


# ------------------------------------------------------------------ DP IPF


def _collapse(T, groups):
    out = T
    for ax, g in enumerate(groups):
        out = np.add.reduceat(out, [grp[0] for grp in g], axis=ax)
    return out


def nonnegative_collapse(T_init: np.ndarray, structural: np.ndarray | None = None):
    """Merge neighbouring bins until every non-structural cell is > 0 (§7.3).

    Greedy: take the smallest bad cell and, over every column and both neighbours of the
    cell's bin in it, apply the merge that leaves the fewest bad cells (then the largest
    minimum). Returns (T_0, groups) with groups[i] a tuple of tuples of original bin
    indices. Post-processing of the noisy table.
    """
    T_init = np.asarray(T_init, dtype=float)
    S = np.zeros(T_init.shape, bool) if structural is None else np.asarray(structural, bool)
    groups = [tuple((j,) for j in range(s)) for s in T_init.shape]

    def state(gr):
        T = _collapse(T_init, gr)
        st = _collapse(S.astype(np.int64), gr) == _collapse(np.ones(S.shape, np.int64), gr)
        bad = (T <= 0) & ~st
        return T, st, bad

    while True:
        T, st, bad = state(groups)
        if not bad.any():
            return np.where(st, 0.0, T), tuple(groups)
        cell = np.unravel_index(np.argmin(np.where(bad, T, np.inf)), T.shape)
        best = None
        for ax, g in enumerate(groups):
            if len(g) < 2:
                continue
            j = cell[ax]
            for nb in (j - 1, j + 1):
                if 0 <= nb < len(g):
                    lo = min(j, nb)
                    new = list(g[:lo]) + [g[lo] + g[lo + 1]] + list(g[lo + 2:])
                    trial = list(groups)
                    trial[ax] = tuple(new)
                    Tt, _, bt = state(trial)
                    key = (int(bt.sum()), -float(np.min(np.where(bt, Tt, np.inf), initial=np.inf)))
                    if best is None or key < best[0]:
                        best = (key, trial)
        if best is None:
            raise OptionError(
                "the noisy table sums to ≤ 0 even after merging every bin; spend more ε on the table "
                "(epsilon_table) or use fewer attributes"
            )
        groups = best[1]


def dp_ipf(codes, margins, shape, epsilon: float, ledger: Ledger, rng, *, structural_zeros=None,
           noise: str | None = None, tol: float = 1e-10, max_iter: int = 1000):
    """DP IPF (Thm 7.3.2, §7.3): the join table of the chosen bins (``codes``: each record's bin
    per column; ``shape``: bins per column) released with count noise at ``epsilon`` (charged to
    ``ledger``), made positive by :func:`nonnegative_collapse`, and raked to the known one-way
    ``margins`` collapsed alike (:class:`dpcore.estimate.raking.Raking`). Returns (the raked
    table, the collapsed groups, the raking's diagnostics)."""
    counts = np.bincount(np.ravel_multi_index(tuple(codes), shape), minlength=int(np.prod(shape))).reshape(shape)
    S = np.zeros(shape, bool) if structural_zeros is None else np.asarray(structural_zeros, bool)
    if S.shape != shape:
        raise OptionError(f"structural_zeros must have the join-table shape {shape}; got {S.shape}")
    if (counts[S] > 0).any():
        raise InputError("records fall in cells declared structural zeros; fix the data or the declaration")
    mech = noise_for(noise, epsilon, 1.0)
    table = Measurement("join table", mech, 1.0, "sample", label(ADD_REMOVE), parallel_over=int((~S).sum()),
                        note="unweighted counts of the join cells of the chosen bins (Thm 7.3.2); one record "
                             "is in one cell, so the cells compose in parallel; structural zeros are not noised")
    noisy = np.where(S, 0.0, table.release(ledger, counts.astype(np.int64) if mech.name == "discrete_laplace"
                                           else counts.astype(float), rng).astype(float))
    T0, groups = nonnegative_collapse(noisy, S)
    collapsed = [np.add.reduceat(mg, [gr[0] for gr in grp]) for mg, grp in zip(margins, groups)]
    known = [NoisyMargin.exact((k,), mg) for k, mg in enumerate(collapsed)]  # public totals
    model, info = Raking(T0, tol=tol, max_iter=max_iter).fit(T0.shape, known,
                                                             total=max(float(mg.sum()) for mg in collapsed))
    return model.table, groups, info


def _group_codes(codes: np.ndarray, groups) -> np.ndarray:
    """Each record's bin mapped to its collapsed group."""
    lut = np.empty(sum(len(x) for x in groups), np.int64)
    for j, x in enumerate(groups):
        lut[list(x)] = j
    return lut[codes]


# ------------------------------------------------------------------ weighted count


def weighted_count(bin_idx, totals, mask, epsilon, rng, *, gamma: float = 4.0, bwt=None, max_bwt: float = 1.0,
                   ledger: Ledger | None = None, label: str = "weighted count"):
    """Σ_x wt(x)·q(x) + 2(γ−1)·SS_β/ε·X with β = ε/(2(γ−1)) (Cor 7.4.3), rounded to the
    public grid 2^-20·2(γ−1)/ε (rounded down to a power of two). ε-DP for add/remove
    neighbours and γ ≥ 2, for the ideal real-valued mechanism (the float sampler is not
    hardened; module docstring). Returns (value, exact, SS_β, scale, β, grid)."""
    eps = check_epsilon(epsilon)
    g = check_gamma(gamma)
    beta = eps / (2.0 * (g - 1.0))
    w = post_weights(bin_idx, totals, bwt)
    exact = float(w[np.asarray(mask, bool)].sum())
    ss = smooth_weight_bound(bin_idx, totals, beta, bwt, max_bwt)
    # grid floor: one person (public); a coarser grid relative to the noise costs resolution only
    if ledger is not None:  # charged before the draw, so a capped ledger refuses before any noise
        charge_smooth(ledger, label, eps, g, beta, "sample",
                      "post-stratified weighted count, SS_β = max_k e^{−βk} W_k (Prop 7.4.2, 7.3.8)",
                      smooth_grid(eps, g, 1.0))
    value, scale, grid = smooth_value(exact, ss, eps, g, rng, 1.0)
    return value, exact, ss, scale, beta, grid


def expected_noise_sd(data: pd.DataFrame, b: Binning, totals: Mapping, epsilon_select: float,
                      epsilon_count: float, gamma: float = 4.0, bwt=None, weight_range=(1.0, 1.0)) -> dict:
    """Example 7.4.4: the noise sd of the weighted count under each candidate, and its
    expectation over the selection probabilities. Curator-side planning (not DP)."""
    lo, hi = check_weight_range(weight_range)
    g = check_gamma(gamma)
    codes = _level_codes(data, b)
    base = _base_totals(b, totals)
    beta = epsilon_count / (2 * (g - 1))
    var1 = math.sin(math.pi / g) / math.sin(3 * math.pi / g) if g > 3 else math.inf
    ss, sd, w0 = [], [], []
    for i in range(len(b.candidates)):
        bi = b.bin_of_level(i)[codes]
        t = _bin_totals(b, i, base)
        s = smooth_weight_bound(bi, t, beta, bwt, hi)
        ss.append(s)
        w0.append(max_potential_weight(bi, t, bwt, hi))
        sd.append(2 * (g - 1) * s / epsilon_count * math.sqrt(var1))
    scores = selection_scores(data, b, totals, bwt, hi)
    probs = exponential_probabilities(scores, epsilon_select, selection_sensitivity(b, totals, lo, hi))
    return {"names": b.names, "W0": np.array(w0), "smooth": np.array(ss), "sd": np.array(sd),
            "probabilities": np.asarray(probs), "expected_sd": float(np.dot(probs, sd))}


# ------------------------------------------------------------------ the pipeline


@dataclass(frozen=True)
class PostStratRelease:
    """A post-stratified weighted count. ``value``, ``selected``, ``bins`` and
    ``population_estimates`` are DP outputs (``statement`` says what holds); ``exact``,
    ``smooth_sensitivity``, ``scale`` and ``selection_probabilities`` depend on the data
    (curator only). ``value`` is a multiple of the public ``grid``."""

    value: float
    exact: float
    epsilon: float
    gamma: float
    beta: float
    selected: dict
    bins: dict
    population_estimates: np.ndarray = field(repr=False)
    ipf: dict | None
    smooth_sensitivity: float
    scale: float
    selection_probabilities: dict = field(repr=False)
    ledger: Ledger = field(compare=False, repr=False)
    grid: float = 0.0
    neighbours: str = ADD_REMOVE

    @property
    def statement(self) -> str:
        return statement(self.epsilon, self.neighbours,
                         given="the public population totals, candidate bins and base-weight range",
                         ideal_only=True)

    @property
    def finite_variance(self) -> bool:
        return self.gamma > 3

    @property
    def noise_sd(self) -> float:
        if not self.finite_variance:
            return math.inf
        g = self.gamma
        return self.scale * math.sqrt(math.sin(math.pi / g) / math.sin(3 * math.pi / g))


def poststratify_release(data: pd.DataFrame, binnings: Sequence[Binning], totals: Mapping, mask, *,
                         epsilon_select: float | Mapping | None, epsilon_count: float,
                         epsilon_table: float | None = None, gamma: float = 4.0, weights: str | None = None,
                         weight_range=None, rng: np.random.Generator, structural_zeros=None,
                         noise: str | None = None, ipf_tol: float = 1e-10, ipf_max_iter: int = 1000,
                         neighbours: str = ADD_REMOVE) -> PostStratRelease:
    """DP post-stratified weighted count of the rows in ``mask`` (module docstring).

    ε_1 = ``epsilon_select`` (split equally over the columns with more than one
    candidate, or a mapping column → ε), ε_2 = ``epsilon_table`` (needed with two or more
    columns: the noisy join table for IPF), ε_3 = ``epsilon_count``. The release is
    (ε_1 + ε_2 + ε_3)-DP by sequential composition (Thm 7.3.1, Remark 7.3.4, Cor 7.4.3),
    for add/remove neighbours (``neighbours="replace"`` is refused), with ε_3 for the
    ideal real-valued mechanism (module docstring).
    """
    nb = notion_for(neighbours, (ADD_REMOVE,), "poststratify_release", _WHY)
    binnings = list(binnings)
    if not binnings:
        raise OptionError("give at least one column to post-stratify on")
    cols = [b.column for b in binnings]
    if len(set(cols)) != len(cols):
        raise OptionError(f"each column may be binned once; got {cols}")
    m = np.asarray(mask.to_numpy() if isinstance(mask, pd.Series) else mask)
    if m.dtype != bool or m.shape != (len(data),):
        raise InputError(f"the query must be a boolean mask with one entry per row ({len(data)} rows)")
    if len(data) == 0:
        raise InputError("the sample has no rows")
    bwt, lo, hi = check_base_weights(data, weights, weight_range)
    eps3 = check_epsilon(epsilon_count)
    g = check_gamma(gamma)
    multi = [b for b in binnings if len(b.candidates) > 1]
    if isinstance(epsilon_select, Mapping):
        sel_eps = {c: check_epsilon(epsilon_select[c]) for c in (b.column for b in multi)}
    elif multi:
        if epsilon_select is None:
            raise OptionError("choosing among candidate sets of bins needs epsilon_select > 0")
        e1 = check_epsilon(epsilon_select)
        sel_eps = {b.column: e1 / len(multi) for b in multi}
    else:
        if epsilon_select not in (None, 0, 0.0):
            raise OptionError("epsilon_select is only spent when a column has several candidate sets of bins")
        sel_eps = {}
    if len(binnings) > 1:
        eps2 = check_epsilon(epsilon_table) if epsilon_table is not None else None
        if eps2 is None:
            raise OptionError("post-stratifying on two or more columns uses DP IPF: give epsilon_table > 0")
    else:
        if epsilon_table not in (None, 0, 0.0):
            raise OptionError("epsilon_table is only used with two or more columns (DP IPF)")
        eps2 = 0.0
    requested = sum(sel_eps.values()) + eps2 + eps3
    ledger = Ledger("post-stratified weighted count")
    sel_ledger = ledger.group("bin selection")
    selected, probs, chosen = {}, {}, []
    for b in binnings:
        sb = select_bins(data, b, totals, sel_eps.get(b.column, 0.0) or 1.0, rng, bwt=bwt,
                         weight_range=(lo, hi), ledger=sel_ledger)
        selected[b.column] = sb.name
        probs[b.column] = dict(zip(b.names, sb.probabilities))
        chosen.append(sb.index)
    codes = [b.bin_of_level(i)[_level_codes(data, b)] for b, i in zip(binnings, chosen)]
    margins = [_bin_totals(b, i, _base_totals(b, totals)) for b, i in zip(binnings, chosen)]
    labels = [b.bins(i) for b, i in zip(binnings, chosen)]
    ipf_info = None
    if len(binnings) == 1:
        cell = codes[0]
        cell_totals = margins[0]
        bins_out = {binnings[0].column: tuple((x,) for x in labels[0])}
        pop = cell_totals
    else:
        pop, groups, ipf_info = dp_ipf(codes, margins, tuple(len(x) for x in labels), eps2, ledger, rng,
                                       structural_zeros=structural_zeros, noise=noise, tol=ipf_tol,
                                       max_iter=ipf_max_iter)
        cell = np.ravel_multi_index(tuple(_group_codes(c, grp) for c, grp in zip(codes, groups)), pop.shape)
        cell_totals = pop.ravel()
        if (cell_totals[cell] <= 0).any():
            raise OptionError("a record's join cell got an IPF total of 0; declare fewer structural zeros")
        bins_out = {b.column: tuple(tuple(labels[k][j] for j in x) for x in grp)
                    for k, (b, grp) in enumerate(zip(binnings, groups))}
    value, exact, ss, scale, beta, grid = weighted_count(cell, cell_totals, m, eps3, rng, gamma=g, bwt=bwt,
                                                         max_bwt=hi, ledger=ledger)
    ledger.assert_total(requested)
    return PostStratRelease(value, exact, requested, g, beta, selected, bins_out, np.asarray(pop), ipf_info,
                            ss, scale, probs, ledger, grid, nb)
