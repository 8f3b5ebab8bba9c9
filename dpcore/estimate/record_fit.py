"""Fit synthetic records directly to noisy margins: the Gradually Update Method (GUM).

GUM (Zhang et al. 2021, "PrivSyn", USENIX Security, §5) keeps a set of n
synthetic records and, margin after margin, moves records out of cells the records
over-fill into cells they under-fill, until every margin of the records is close to its
target. Nothing is ever held per cell of the full cross-tabulation: memory is O(n p) plus
one margin at a time, so it fits any set of margins on any width, including all two-way
margins, whose graph is complete and has no small junction tree.

One update for a margin S with target t (counts summing to n) and record counts s:

* under-filled cells (s < t) gain min(t − s, α s) records (α t when s = 0), rounded
  stochastically (unbiased);
* over-filled cells (s > t) lose min(s − t, β s) records, β found by bisection so that as
  many records leave as arrive (PrivSyn's ``find_optimal_beta``), the leaving records
  drawn uniformly within each cell;
* each leaving record either becomes a copy of a random record of its destination cell
  ("duplicate", which keeps that cell's other attributes coherent) or only has S's
  attributes set to the destination cell ("change"): PrivSyn alternates sweeps with all
  duplicates and half/half, and so do we.

α starts at 1 and decays as 0.84^⌊sweep/20⌋ (PrivSyn). Records start with each attribute
drawn from its one-way margin implied by the targets (the mean of the projections of the
margins holding it), rounded by largest remainder. We stop when the mean total-variation
distance between the records' margins and the targets has not fallen by ``rel_tol`` (a
share of itself) over ``patience`` sweeps, when it is 0 (the records have the targets'
margins exactly), or after ``max_sweeps``; that distance and the sweep count are reported.

The cost is records × margins × sweeps, so at most ``RECORD_FIT_MAX_RECORDS`` records are
fitted. A longer output is not those records repeated (a set of at most 10^5 distinct
records whose margins are the fitted ones scaled up): the fitted records' distinct cells
become the support of a weighted model, the weights are fitted to the margins by IPF on that
support (:func:`support_ipf`: the I-projection of the records' own distribution onto the
margins, among distributions on its cells), and the n records are drawn i.i.d. from the
weights, in chunks (:class:`WeightedRecords`; docs/methods/ipf.md, "Long outputs").
:class:`RecordFit` is the estimator (:mod:`dpcore.estimate.estimator`): noisy margins,
optionally denoised first (:func:`dpcore.estimate.denoise.shrink_margins`), in; the fitted
records (:class:`FittedRecords`), or above the cap the weighted support
(:class:`WeightedRecords`), out.

Privacy: reads only the (noisy) targets, the public domain and the released record count,
plus its own randomness: post-processing (Dwork & Roth 2014, Prop 2.1). Used by
``method="ipf"`` on tables whose margins have no small junction tree (docs/methods/ipf.md).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpcore.estimate.denoise import shrink_margins
from dpcore.estimate.estimator import check_margins
from dpcore.measure.margins import NoisyMargin

__all__ = ["fit_records", "support_ipf", "implied_one_way", "RecordFit", "FittedRecords", "WeightedRecords",
           "RECORD_FIT_MAX_RECORDS"]

#: the record fit updates at most this many synthetic records; a longer output is drawn from their
#: cells weighted by IPF (:class:`WeightedRecords`): its cost is records × margins × sweeps (105
#: margins: 10 s of CPU per sweep at 10^6 records; bench/RESULTS.md)
RECORD_FIT_MAX_RECORDS = 100_000


def _apportion(weights: np.ndarray, total: int, rng: np.random.Generator) -> np.ndarray:
    """Integers summing to ``total`` (≤ Σ⌈w⌉), each ⌊w⌋ or ⌈w⌉ of weights rescaled to ``total``:
    floor, then the remaining units to the largest remainders, ties broken at random."""
    w = np.asarray(weights, dtype=float)
    s = w.sum()
    if total <= 0 or s <= 0:
        return np.zeros(len(w), dtype=np.int64)
    x = w * (total / s)
    out = np.floor(x).astype(np.int64)
    short = int(total - out.sum())
    if short > 0:
        perm = rng.permutation(len(w))
        out[perm[np.argsort(-(x - out)[perm], kind="stable")[:short]]] += 1
    return out


def implied_one_way(targets, axes, shape) -> list[np.ndarray]:
    """Each attribute's one-way margin as the mean of the normalised projections of the
    targets that hold it (uniform for an attribute in none). Post-processing."""
    sums = [np.zeros(int(d)) for d in shape]
    hits = [0] * len(shape)
    for t, ax in zip(targets, axes):
        t = np.asarray(t, dtype=float)
        tot = t.sum()
        if tot <= 0:
            continue
        for i, a in enumerate(ax):
            other = tuple(j for j in range(len(ax)) if j != i)
            sums[a] += (t.sum(axis=other) if other else t) / tot
            hits[a] += 1
    return [s / h if h else np.full(len(s), 1.0 / len(s)) for s, h in zip(sums, hits)]


def _initial_records(one_way, n: int, rng: np.random.Generator) -> np.ndarray:
    out = np.empty((n, len(one_way)), dtype=np.int64)
    for a, q in enumerate(one_way):
        counts = _apportion(q, n, rng)
        out[:, a] = np.repeat(np.arange(len(q)), counts)[rng.permutation(n)]
    return out


def _beta(excess: np.ndarray, s: np.ndarray, need: float) -> float:
    """Smallest β in [0, 1] with Σ min(excess, β s) ≥ need (bisection)."""
    lo, hi = 0.0, 1.0
    for _ in range(40):
        mid = (lo + hi) / 2
        if np.minimum(excess, mid * s).sum() < need:
            lo = mid
        else:
            hi = mid
    return hi


def _update(R: np.ndarray, ax: tuple, mshape: tuple, t: np.ndarray, alpha: float, duplicate_share: float,
            rng: np.random.Generator) -> float:
    """One GUM step for one margin, in place. Returns the L1 distance before the step."""
    n = len(R)
    code = np.ravel_multi_index(tuple(R[:, ax].T), mshape)
    s = np.bincount(code, minlength=len(t)).astype(float)
    gap = t - s
    l1 = float(np.abs(gap).sum())
    under = np.flatnonzero(gap > 0)
    if not len(under):
        return l1
    want = np.where(s[under] > 0, np.minimum(gap[under], alpha * s[under]), alpha * t[under])
    want = np.floor(want + rng.random(len(want)))  # stochastic rounding
    over = np.flatnonzero(gap < 0)
    excess = -gap[over]
    moves = int(min(want.sum(), math.floor(excess.sum())))
    if moves <= 0:
        return l1
    beta = _beta(excess, s[over], moves)
    leave = _apportion(np.minimum(excess, beta * s[over]), moves, rng)
    arrive = _apportion(want, moves, rng)
    # records grouped by cell, in random order within each cell
    perm = rng.permutation(n)
    order = perm[np.argsort(code[perm], kind="stable")]
    start = np.concatenate(([0], np.cumsum(np.bincount(code, minlength=len(t)))))
    quota = np.zeros(len(t), dtype=np.int64)
    quota[over] = leave
    sorted_code = code[order]
    rank = np.arange(n) - start[sorted_code]
    leaving = order[rank < quota[sorted_code]]
    leaving = leaving[rng.permutation(len(leaving))]
    dest = np.repeat(under, arrive[: len(under)])
    dest = dest[rng.permutation(len(dest))]
    m = min(len(leaving), len(dest))
    leaving, dest = leaving[:m], dest[:m]
    has_src = s[dest] > 0
    dup = has_src & (rng.random(m) < duplicate_share)
    if dup.any():
        d = dest[dup]
        src = order[start[d] + np.floor(rng.random(len(d)) * s[d]).astype(np.int64)]
        R[leaving[dup]] = R[src]
    chg = ~dup
    if chg.any():
        cells = np.unravel_index(dest[chg], mshape)
        rows = leaving[chg]
        for a, c in zip(ax, cells):
            R[rows, a] = c
    return l1


def fit_records(targets, axes, shape: Sequence[int], n: int, rng: np.random.Generator, max_sweeps: int = 200,
                rel_tol: float = 0.01, patience: int = 5) -> tuple[np.ndarray, dict]:
    """n synthetic records (codes, (n, p)) whose margins over ``axes`` approach ``targets``.

    ``targets[i]``: non-negative array over ``[shape[a] for a in axes[i]]``, rescaled to n;
    an all-zero target is skipped. See the module docstring for the algorithm and the
    stopping rule. Returns (codes, info) with info = iterations (sweeps), max_change (the
    last sweep's mean total-variation distance to the targets), converged,
    skipped_margins. Post-processing only.
    """
    shape = tuple(int(d) for d in shape)
    prepared, skipped = [], 0
    for t, ax in zip(targets, axes):
        ax = tuple(int(a) for a in ax)
        t = np.asarray(t, dtype=float).ravel()
        tot = t.sum()
        if not tot > 0:
            skipped += 1
            continue
        prepared.append((ax, tuple(shape[a] for a in ax), t * (n / tot)))
    R = _initial_records(implied_one_way([t.reshape(ms) for _, ms, t in prepared], [a for a, _, _ in prepared], shape),
                         n, rng)
    info = {"iterations": 0, "max_change": 0.0, "converged": True, "skipped_margins": skipped, "fit": "records"}
    if not prepared or n == 0:
        return R, info
    history = []
    sweep = 0
    converged = False
    while sweep < max_sweeps:
        alpha = 0.84 ** (sweep // 20)
        dup = 1.0 if sweep % 2 else 0.5
        l1 = 0.0
        for j in rng.permutation(len(prepared)):
            ax, mshape, t = prepared[j]
            l1 += _update(R, ax, mshape, t, alpha, dup, rng)
        sweep += 1
        history.append(l1 / (2 * n * len(prepared)))
        # a distance of 0 is a fixed point (every margin exact: no record moves again); the relative
        # rule alone never ends there, since 0 does not exceed (1 − rel_tol)·0
        if history[-1] == 0.0 or (len(history) > patience and history[-1] > (1 - rel_tol) * min(history[:-patience])):
            converged = True
            break
    # the distance of the final records (the loop measures before each step)
    final = sum(float(np.abs(np.bincount(np.ravel_multi_index(tuple(R[:, ax].T), ms), minlength=len(t)) - t).sum())
                for ax, ms, t in prepared) / (2 * n * len(prepared))
    info.update(iterations=sweep, max_change=final, converged=converged, history=history)
    return R, info


def support_ipf(support: np.ndarray, start: np.ndarray, targets, axes, shape, total: float, max_sweeps: int = 100,
                rel_tol: float = 0.01, patience: int = 5) -> tuple[np.ndarray, dict]:
    """Weights on the cells ``support`` (codes (D, p)), from ``start``, fitted to the margins by IPF
    restricted to those cells: w ← w · t_S(x_S)/w_S(x_S) margin after margin (0 where w_S is 0), each
    target rescaled to ``total``, all-zero ones skipped. It converges to the I-projection of
    ``start`` onto the margins among weights on the support, when one exists; a target cell no
    support cell reaches stays unmet. Stopped as :func:`fit_records` is (the mean total-variation
    distance to the targets not falling by ``rel_tol`` over ``patience`` sweeps, or 0), or after
    ``max_sweeps``. Returns (weights summing to ``total``, info). Post-processing, no randomness."""
    w = np.asarray(start, dtype=float) * (total / max(float(np.sum(start)), 1e-300))
    shape = tuple(int(d) for d in shape)
    prepared = []
    for t, ax in zip(targets, axes):
        t = np.asarray(t, dtype=float).ravel()
        if not t.sum() > 0:
            continue
        ax = tuple(int(a) for a in ax)
        idx = np.ravel_multi_index(tuple(support[:, a].astype(np.int64) for a in ax), [shape[a] for a in ax])
        prepared.append((idx, t * (total / t.sum())))
    history, sweep, converged = [], 0, not prepared
    with np.errstate(divide="ignore", invalid="ignore"):
        while prepared and sweep < max_sweeps:
            gap = 0.0
            for idx, t in prepared:
                cur = np.bincount(idx, weights=w, minlength=len(t))
                gap += float(np.abs(cur - t).sum())
                w *= np.where(cur > 0, t / np.where(cur > 0, cur, 1.0), 0.0)[idx]
            sweep += 1
            history.append(gap / (2 * total * len(prepared)))
            if history[-1] == 0.0 or (len(history) > patience
                                      and history[-1] > (1 - rel_tol) * min(history[:-patience])):
                converged = True
                break
    s = w.sum()
    if not s > 0:  # the targets' zeros exclude every support cell: keep the records' own weights
        w = np.asarray(start, dtype=float) * (total / max(float(np.sum(start)), 1e-300))
    else:
        w *= total / s
    final = sum(float(np.abs(np.bincount(idx, weights=w, minlength=len(t)) - t).sum()) for idx, t in prepared)
    return w, {"support_sweeps": sweep, "support_converged": bool(converged),
               "support_distance": final / (2 * total * len(prepared)) if prepared else 0.0}


def _records_table(records: np.ndarray, weights, shape, axes) -> np.ndarray:
    """The table on ``axes`` (sorted) of records, each counted once or with its weight."""
    axes = tuple(sorted(int(a) for a in axes))
    mshape = tuple(shape[a] for a in axes)
    if not axes:
        return np.array(float(len(records) if weights is None else np.sum(weights)))
    cells = np.ravel_multi_index(tuple(records[:, a].astype(np.int64) for a in axes), mshape)
    return np.bincount(cells, weights=weights, minlength=math.prod(mshape)).reshape(mshape).astype(float)


@dataclass(frozen=True, eq=False)
class FittedRecords:
    """The model of a record fit: the fitted records (attribute codes, (n, p)) of a domain of
    ``shape``. Its law is their empirical distribution."""

    records: np.ndarray
    shape: tuple[int, ...]

    def marginal(self, axes: Sequence[int]) -> np.ndarray:
        """The records' count table on ``axes`` (increasing attribute order)."""
        return _records_table(self.records, None, self.shape, axes)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n records drawn uniformly, with replacement, from the fitted ones. (A synthesizer
        releasing the fit releases :attr:`records` themselves: GUM's output is its sample.)"""
        if not len(self.records):
            raise ValueError("the record fit has no records to draw from")
        return self.records[rng.integers(0, len(self.records), int(n))]


@dataclass(frozen=True, eq=False)
class WeightedRecords:
    """The model of a record fit above its cap: the fitted records' distinct cells (codes, (D, p))
    with weights summing to the total (:func:`support_ipf`). Its law is the weights normalised."""

    records: np.ndarray
    weights: np.ndarray
    shape: tuple[int, ...]

    def marginal(self, axes: Sequence[int]) -> np.ndarray:
        """The weights' table on ``axes`` (increasing attribute order)."""
        return _records_table(self.records, self.weights, self.shape, axes)

    def draw(self, n: int, rng: np.random.Generator):
        """n i.i.d. records from the weights, before they exist: multinomial counts per cell now,
        the records dealt in chunks (:class:`dpcore.estimate.draws.CellDraw`)."""
        from dpcore.estimate.draws import CellDraw, compact

        counts = rng.multinomial(int(n), self.weights / self.weights.sum())
        keep = counts > 0
        return CellDraw(compact(self.records[keep], self.shape), counts[keep])

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n i.i.d. records from the weights (codes, (n, p)), in random order."""
        from dpcore.estimate.draws import records

        return records(self.draw(n, rng), rng, len(self.shape))


@dataclass(frozen=True, eq=False)
class RecordFit:
    """The record fit (GUM) as an estimator: ``records`` synthetic records (None: the total,
    rounded) fitted to the margins by :func:`fit_records`, drawing from ``rng`` (post-processing
    randomness). Above ``cap`` records, ``cap`` are fitted and their distinct cells weighted by
    :func:`support_ipf` (model :class:`WeightedRecords`, from which the records are drawn);
    otherwise the model is the fitted records themselves (:class:`FittedRecords`). With
    ``shrink`` the noisy margins are first denoised by
    :func:`dpcore.estimate.denoise.shrink_margins` with their noise variances and ``total``;
    without it they are fitted as given (each must then be non-negative). Diagnostics: those of
    :func:`fit_records` (iterations, max_change, converged, skipped_margins, history, fit), above
    the cap fitted_records, support (distinct cells) and those of :func:`support_ipf`, and with
    ``shrink`` ``shrinkage``: the λ_S of each margin."""

    rng: np.random.Generator
    records: int | None = None
    shrink: bool = True
    cap: int = RECORD_FIT_MAX_RECORDS

    def fit(self, shape: Sequence[int], margins: Sequence[NoisyMargin],
            total: float) -> tuple[FittedRecords | WeightedRecords, dict]:
        shape = check_margins(shape, margins)
        axes = [m.axes for m in margins]
        targets = [m.values for m in margins]
        lams = None
        if self.shrink:
            targets, lams = shrink_margins(targets, axes, shape, [m.variance for m in margins], total)
        n = int(round(total)) if self.records is None else int(self.records)
        m = min(n, int(self.cap))
        codes, info = fit_records(targets, axes, shape, m, self.rng)
        if lams is not None:
            info["shrinkage"] = lams
        if m == n or m == 0:
            return FittedRecords(codes, shape), info
        support, counts = np.unique(codes, axis=0, return_counts=True)
        weights, fit = support_ipf(support, counts, targets, axes, shape, float(n))
        info.update(fit, fitted_records=m, support=len(support))
        return WeightedRecords(support, weights, shape), info
