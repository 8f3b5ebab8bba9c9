"""Denoising noisy margins before a fit: positivity and James–Stein shrinkage.

A released margin y_S = c_S + Z_S has negative cells and, on a wide margin, the noise of
its many empty cells as mass; the fits want non-negative targets. Three ways to make a
margin non-negative (``ipf``'s ``positivity`` option): clip at 0, synthpop's
:func:`makepos`, PrivSyn's :func:`normsub`. And when the margins are fitted by records
(:mod:`dpcore.estimate.record_fit`) on a wide table, :func:`shrink_margins` first shrinks
each margin towards the independence table of the attributes' one-way margins
(:func:`one_way_margins`), by as much as its known noise variance says it cannot be told
from noise (docs/methods/ipf.md, "the record fit").

Every function here reads only released margins, their public noise variance and the
released record count: post-processing (Dwork & Roth 2014, Prop 2.1).
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["makepos", "normsub", "noise_ratio", "one_way_margins", "shrink_margins", "NOISE_DOMINATED"]


def makepos(x: np.ndarray, total: float) -> np.ndarray:
    """synthpop's ``makepos``: non-negative cells whose sum is at most ``total``.

    Sort decreasingly; a cell is kept (as its absolute value) while the cumulative
    sum of absolute values, up to and including it, is below ``total``; the rest
    are set to 0. Post-processing of the noisy margin (no data access).
    """
    x = np.asarray(x, dtype=float)
    order = np.argsort(-x, kind="stable")
    drop = order[np.cumsum(np.abs(x[order])) >= total]
    out = x.copy()
    out[drop] = 0.0
    return np.abs(out)


def normsub(x: np.ndarray, total: float) -> np.ndarray:
    """PrivSyn's ``norm_sub``: max(x − δ, 0) with the one δ that makes the cells sum to
    ``total`` (the released record count). Where clipping keeps the positive half of the
    noise on every empty cell, this takes the same shift off every cell, so the many empty
    cells of a wide margin stay near 0. Post-processing of the noisy margin."""
    x = np.asarray(x, dtype=float)
    if total <= 0 or not len(x):
        return np.zeros_like(x)
    v = np.sort(x.ravel())[::-1]
    # with the k largest cells kept, δ = (Σ_k − total)/k; the right k is the largest with v_k > δ
    k = np.arange(1, len(v) + 1)
    delta = (np.cumsum(v) - total) / k
    ok = np.flatnonzero(v > delta)
    d = delta[ok[-1]] if len(ok) else v[0] - total
    return np.clip(x - d, 0.0, None)


#: the margins count as noise-dominated (see :func:`noise_ratio`) above this ratio
NOISE_DOMINATED = 1.0
#: sweeps of the independence fit of the one-way margins in the noise-dominated regime
ONE_WAY_SWEEPS = 20


def _per_margin(variance, k: int) -> list[float]:
    """One noise variance per margin: ``variance`` is one for all or a sequence of k."""
    return [float(v) for v in variance] if np.ndim(variance) else [float(variance)] * k


def noise_ratio(axes, shape, variance, n: float) -> float:
    """Median over the margins of the noise's expected L2 norm, σ·√cells, divided by the record
    count n (the largest L2 norm a margin of n records can have). A public quantity: it reads
    only the domain, the noise variance (one, or one per margin) and the released record count."""
    if n <= 0:
        return math.inf
    var = _per_margin(variance, len(axes))
    return float(np.median([math.sqrt(v * math.prod(int(shape[a]) for a in ax)) for v, ax in zip(var, axes)])) / n


def _shrink_to_uniform(est: np.ndarray, cell_variance: float, n: float) -> np.ndarray:
    """Positive-part James–Stein shrinkage of a one-way estimate towards uniform (total n),
    then :func:`normsub`."""
    d = len(est)
    r = est - n / d
    rr = float((r ** 2).sum())
    return normsub(n / d + (max(0.0, 1.0 - d * cell_variance / rr) if rr > 0 else 0.0) * r, n)


def one_way_margins(raw, axes, shape, variance, n: float, independence_fit: bool = False) -> list[np.ndarray]:
    """Each attribute's one-way margin (counts summing to n) estimated from noisy margins.

    Start: the inverse-variance weighted mean of the projections of every margin holding it
    (a projection of a margin S onto a sums |S|/d_a noisy cells: per-cell variance
    σ²|S|/d_a), shrunk towards uniform (:func:`_shrink_to_uniform`). With
    ``independence_fit``: then ``ONE_WAY_SWEEPS`` sweeps of least squares under independence,
    y_S ≈ n ⊗_{a∈S} q_a: each q_a from every margin holding it, contracted with the other
    attributes' current q_b (per-cell variance σ²/(n² Π‖q_b‖²)), shrunk and made
    non-negative again. Where a partner's margin is far from uniform this weights its
    levels by their share instead of summing them, which cuts the noise; it is biased by
    the interactions, so it is used only where noise dominates (:func:`shrink_margins`).
    ``variance``: σ², one for all margins or one per margin (a measured one-way margin
    then weighs in by its own precision). Post-processing."""
    p = len(shape)
    var = _per_margin(variance, len(axes))
    num = [np.zeros(int(d)) for d in shape]
    den = [0.0] * p
    for y, ax, v in zip(raw, axes, var):
        for i, a in enumerate(ax):
            other = tuple(j for j in range(len(ax)) if j != i)
            w = shape[a] / (v * y.size) if v > 0 else 1.0
            num[a] += w * (y.sum(axis=other) if other else y)
            den[a] += w
    one = [_shrink_to_uniform(num[a] / den[a], 1.0 / den[a], n) if den[a] > 0 else np.full(int(shape[a]), n / shape[a])
           for a in range(p)]
    if not independence_fit or min(var, default=0.0) <= 0 or n <= 0:
        return one
    for _ in range(ONE_WAY_SWEEPS):
        q = [o / n for o in one]
        new = []
        for a in range(p):
            nm, dn = np.zeros(int(shape[a])), 0.0
            for y, ax, v in zip(raw, axes, var):
                if a not in ax:
                    continue
                i = ax.index(a)
                rest = [b for b in ax if b != a]
                t = np.moveaxis(y, i, 0)
                for b in rest:  # contract the other attributes with their current shares
                    t = np.tensordot(t, q[b], axes=([1], [0]))
                nm += t / v
                dn += n * math.prod(float(q[b] @ q[b]) for b in rest) / v
            # est is in shares; its per-cell variance in counts is n/dn
            new.append(_shrink_to_uniform(nm / dn * n, n / dn, n) if dn > 0 else one[a])
        one = new
    return one


def shrink_margins(raw, axes, shape, variance, n: float) -> tuple[list[np.ndarray], list[float]]:
    """Denoise noisy margins before the record fit (post-processing; docs/methods/ipf.md).

    1. Each attribute's one-way margin q_a (:func:`one_way_margins`).
    2. Each margin y_S is shrunk towards the independence table I_S = n Π_a (q_a/n) of
       those one-way margins: ŷ_S = I_S + λ_S (y_S − I_S) with
       λ_S = max(0, 1 − |S| σ² / ‖y_S − I_S‖²) (James & Stein 1961, positive part): the
       interaction the noisy margin shows is kept in proportion to how far it stands out
       of the noise it is known to carry, then made non-negative with total n (:func:`normsub`).

    When the margins are noise-dominated (:func:`noise_ratio` above ``NOISE_DOMINATED``, a
    public fact), a margin's own residual cannot tell its interaction from noise: the
    one-way margins are then refined by the independence fit, and one λ is pooled over all
    margins of two or more attributes, λ = max(0, 1 − Σ_S |S| σ_S² / Σ_S ‖y_S − I_S‖²)
    (measured on ``cps_voter_wide``, bench/RESULTS.md); a one-way margin's target is then its
    estimate q_a itself (λ = 0: it already holds that margin's measurement). σ² is the public
    noise variance per cell (one, or one per margin); n the released record count. Returns the
    targets and the λ_S.
    """
    axes = [tuple(ax) for ax in axes]
    var = _per_margin(variance, len(axes))
    dominated = noise_ratio(axes, shape, var, n) > NOISE_DOMINATED
    one = one_way_margins(raw, axes, shape, var, n, independence_fit=dominated)
    parts = []
    for y, ax, v in zip(raw, axes, var):
        ind = np.full((), float(n))
        for a in ax:
            q = one[a] / n if n > 0 else np.full(len(one[a]), 1.0 / len(one[a]))
            ind = np.multiply.outer(ind, q)
        r = y - ind
        parts.append((ind, r, float((r ** 2).sum()), v * y.size))
    if dominated:
        joint = [p for p, ax in zip(parts, axes) if len(ax) > 1]
        rr = sum(p[2] for p in joint)
        pooled = max(0.0, 1.0 - sum(p[3] for p in joint) / rr) if rr > 0 else 0.0
        lams = [pooled if len(ax) > 1 else 0.0 for ax in axes]
    else:
        lams = [max(0.0, 1.0 - noise / rr) if rr > 0 else 0.0 for _, _, rr, noise in parts]
    return [normsub(ind + lam * r, n) for (ind, r, _, _), lam in zip(parts, lams)], lams
