"""Exact histograms of many i.i.d. integer noise draws, with integer randomness only.

The sparse leaf layer noises the huge number of identical empty cells of a block through the
*histogram* of their noise values: for m cells, H ~ Multinomial(m, p) over the values, p the
noise law (docs/sparse-leaves.md). This module draws H **exactly**, for m up to 2^63 − 1: every
random decision compares uniform random bits from a passed-in ``numpy.random.Generator`` with
a number known through rigorous integer bounds, refined until the comparison is decided. No
floating-point number takes part in any decision. Proofs: docs/sparse-leaves.md, "The exact
histogram sampler".

Public pieces (all exact; ``rng`` is a ``numpy.random.Generator``):

* :func:`binomial_half` — Binomial(n, ½) for every entry of an int64 array (n < 2^63), from
  :mod:`dpcore.privacy.exact_binomial` (its integer bounds: :mod:`dpcore.privacy.exact_bounds`).
* :func:`binomial` — Binomial(k, p) for p given by its exact binary expansion.
* :func:`magnitude_histogram` — the histogram of ``counts[g]`` i.i.d. draws of |Z| per group g,
  for any :class:`MagnitudeLaw` (a symmetric law on ℤ given by exact cumulative probabilities of
  |Z|, or by exact per-level conditional probabilities).
* :func:`signed_histogram` — the (group, value, multiplicity) histogram of a symmetric law
  (magnitudes, then a fair sign per draw);
* :func:`discrete_laplace_histogram` — for the discrete Laplace law P(k) ∝ exp(−|k|·den/num),
  the sampler behind ``dpcore.privacy.mechanisms.DiscreteLaplace.sample_histogram``;
* :func:`discrete_gaussian_histogram` — for the discrete Gaussian P(k) ∝ exp(−k²/(2σ²)) at an
  exact rational σ² (:class:`DiscreteGaussianLaw`: its boundaries by summing the terms with
  integer bounds and a tail bound), the sampler behind
  ``dpcore.privacy.gaussian.DiscreteGaussian.sample_histogram``.

How a histogram is drawn (docs/sparse-leaves.md): each of the m draws is the inverse CDF of a
uniform U in [0, 1); the m uniforms are distributed over the dyadic intervals of [0, 1) level by
level (the count of an interval splits into its halves by Binomial(count, ½)); an interval that
lies between two consecutive class boundaries hands its whole count to that class, and only the
intervals that contain a boundary are split further. All groups share the boundaries, so each
level is one vectorised :func:`binomial_half` call; about 64 levels suffice for m ≤ 2^63.

Privacy: this module adds no noise of its own to anything; it is the exact sampler of the
multinomial law, so noising identical cells through it is the same mechanism as noising each
cell with the exact per-cell sampler (docs/sparse-leaves.md).
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike

# the exact Binomial(n, ½) (the split step of every level) and the integer bounds
from dpcore.privacy.exact_binomial import binomial_half
from dpcore.privacy.exact_bounds import ceil_div, exp_neg_bounds, ln_bounds

__all__ = [
    "SAMPLER_NAME", "binomial", "MagnitudeLaw", "DiscreteLaplaceLaw",
    "DiscreteGaussianLaw", "magnitude_histogram", "signed_histogram", "discrete_laplace_histogram",
    "discrete_gaussian_histogram",
]

#: What a ledger charge names when its many identical cells were noised through this module.
SAMPLER_NAME = "exact histogram sampler (dyadic inversion with exact Binomial(n, 1/2) splits)"


# ============================================================================ dyadic inversion
#: Up to this many (group, class) cells, counts are summed in a dense int64 array (np.add.at)
#: rather than by sorting their keys.
_DENSE_LIMIT = 1 << 23


class _Sums:
    """Exact int64 sums of counts per key in [0, size): dense when small, else sorted at the end."""

    def __init__(self, size: int):
        self.size = size
        self.dense = np.zeros(size, dtype=np.int64) if size <= _DENSE_LIMIT else None
        self.keys: list[np.ndarray] = []
        self.vals: list[np.ndarray] = []

    def add(self, keys: np.ndarray, vals: np.ndarray) -> None:
        if self.dense is not None:
            np.add.at(self.dense, keys, vals)
        else:
            self.keys.append(keys)
            self.vals.append(vals)

    def items(self) -> tuple[np.ndarray, np.ndarray]:
        """(key, sum) for every key with a positive sum, keys increasing."""
        if self.dense is not None:
            key = np.flatnonzero(self.dense)
            return key, self.dense[key]
        if not self.keys:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        key, val = np.concatenate(self.keys), np.concatenate(self.vals)
        order = np.argsort(key)
        key, val = key[order], val[order]
        first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        total = np.add.reduceat(val, first)
        keep = total > 0
        return key[first][keep], total[keep]


def _sorted_unique(keys: np.ndarray, vals: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """(keys, vals) ordered by key, for distinct keys in [0, size)."""
    if size <= _DENSE_LIMIT:
        dense = np.zeros(size, dtype=np.int64)
        dense[keys] = vals
        key = np.flatnonzero(dense)
        return key, dense[key]
    order = np.argsort(keys)
    return keys[order], vals[order]

def _bit_limbs(floors: list[int], prec: int) -> np.ndarray:
    """The first ``prec`` bits of each boundary, most significant first, in 64-bit limbs."""
    limbs = (prec + 63) // 64
    pad = limbs * 64 - prec
    raw = b"".join((f << pad).to_bytes(8 * limbs, "big") for f in floors)
    return np.frombuffer(raw, dtype=">u8").astype(np.uint64).reshape(len(floors), limbs)


def _class_counts(rng: np.random.Generator, counts: np.ndarray, floors: Callable[[int], list[int]],
                  n_bounds: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Multinomial counts of uniforms over the classes cut by ``n_bounds`` increasing boundaries.

    ``floors(P)`` gives ⌊2^P·G_c⌋ exactly for each boundary G_0 < … < G_{B−1} in [0, 1); class c
    is [G_{c−1}, G_c) (G_{−1} = 0, G_B = 1). Returns (group, class, count) with count > 0, one
    entry per (group, class). Each active node is a dyadic interval at the current depth holding
    the boundaries lo..hi and ``n`` uniforms; its halves get Binomial(n, ½) and the rest, and a
    half without boundaries gives its count to the class it lies in (docs/sparse-leaves.md). A
    node with one boundary c keeps only the half that holds c; the other half's count is added
    to class c or c + 1 as it goes, and the node is emitted once no uniform is left in it.
    """
    counts = np.asarray(counts, dtype=np.int64)
    g = np.flatnonzero(counts > 0)
    lo, hi, n = np.zeros(g.size, dtype=np.int64), np.full(g.size, n_bounds - 1, dtype=np.int64), counts[g]
    one = lo == hi  # nodes with a single boundary go to the second set of arrays
    sg, sc, sn, s_left, s_right = (g[one], lo[one], n[one], np.zeros(int(one.sum()), np.int64),
                                   np.zeros(int(one.sum()), np.int64))
    g, lo, hi, n = g[~one], lo[~one], hi[~one], n[~one]
    sums = _Sums(counts.size * (n_bounds + 1))
    prec = 96
    limbs = _bit_limbs(floors(prec), prec)
    depth = 0
    while n.size or sn.size:
        if depth >= prec:
            prec *= 2
            limbs = _bit_limbs(floors(prec), prec)
        limb, pos = divmod(depth, 64)
        column = (limbs[:, limb] >> np.uint64(63 - pos)) & np.uint64(1)
        halves = binomial_half(rng, np.concatenate([n, sn]))
        left, s_l = halves[:n.size], halves[n.size:]
        if sn.size:  # single boundary c: bit 1 → the left half lies in class c, bit 0 → right in c + 1
            bit = column[sc].astype(bool)
            s_r = sn - s_l
            s_left += np.where(bit, s_l, 0)
            s_right += np.where(bit, 0, s_r)
            sn = np.where(bit, s_r, s_l)
            done = sn == 0
            if done.any():
                for cls, acc in ((sc, s_left), (sc + 1, s_right)):
                    take = done & (acc > 0)
                    sums.add(sg[take] * (n_bounds + 1) + cls[take], acc[take])
                keep = ~done
                sg, sc, sn, s_left, s_right = sg[keep], sc[keep], sn[keep], s_left[keep], s_right[keep]
        if n.size:
            zeros = np.concatenate(([0], np.cumsum(1 - column.astype(np.int64))))
            mid = lo + zeros[hi + 1] - zeros[lo]  # first boundary of the right half
            right = n - left
            left_done = mid == lo
            right_done = mid == hi + 1
            for done, cls, cnt in ((left_done, lo, left), (right_done, hi + 1, right)):
                take = done & (cnt > 0)
                sums.add(g[take] * (n_bounds + 1) + cls[take], cnt[take])
            lk = ~left_done & (left > 0)
            rk = ~right_done & (right > 0)
            g = np.concatenate([g[lk], g[rk]])
            lo, hi = np.concatenate([lo[lk], mid[rk]]), np.concatenate([mid[lk] - 1, hi[rk]])
            n = np.concatenate([left[lk], right[rk]])
            one = lo == hi
            if one.any():
                sg, sc, sn = np.concatenate([sg, g[one]]), np.concatenate([sc, lo[one]]), np.concatenate([sn, n[one]])
                s_left = np.concatenate([s_left, np.zeros(int(one.sum()), np.int64)])
                s_right = np.concatenate([s_right, np.zeros(int(one.sum()), np.int64)])
                g, lo, hi, n = g[~one], lo[~one], hi[~one], n[~one]
        depth += 1
    key, total = sums.items()
    return key // (n_bounds + 1), key % (n_bounds + 1), total


def binomial(rng: np.random.Generator, k: ArrayLike, p: Fraction | Callable[[int], int]) -> np.ndarray:
    """Exact Binomial(k, p) per entry of ``k`` (int64 < 2^63) for one probability p.

    ``p`` is a :class:`fractions.Fraction` in [0, 1] or a callable P ↦ ⌊2^P·p⌋ (exact; p
    irrational or its expansion exact). It is the number of k uniforms below p, drawn by the
    dyadic inversion of :func:`_class_counts` with one boundary (every split a Binomial(·, ½)).
    """
    k = np.asarray(k, dtype=np.int64)
    if isinstance(p, Fraction):
        if not 0 <= p <= 1:
            raise ValueError("p must lie in [0, 1]")
        frac = p
        floors = (lambda P: [(frac.numerator << P) // frac.denominator])
        if p == 1:
            return k.copy()
    else:
        floors = (lambda P: [int(p(P))])
    g, cls, cnt = _class_counts(rng, k.reshape(-1), floors, 1)
    out = np.zeros(k.size, dtype=np.int64)
    below = cls == 0
    out[g[below]] = cnt[below]
    return out.reshape(k.shape)


# ============================================================================ laws and histograms
@dataclass(frozen=True)
class MagnitudeLaw:
    """A law on ℤ symmetric about 0, given through its magnitude |Z|, for the exact histogram.

    A law gives either the exact cumulative probabilities of |Z| conditioned on |Z| ≥ start
    (override :meth:`cdf_bounds`) or its per-level conditional probabilities
    P(|Z| = k | |Z| ≥ k) (override :meth:`level_conditional_bounds`; the cumulative ones are
    then their products). Bounds are integers around 2^prec × the value and must close in as
    prec grows; the values must be irrational or given exactly (lo = hi). :meth:`cutoff` says
    how many levels one pass draws before the rest is drawn as a new pass conditioned on
    |Z| ≥ stop; any cutoff gives the exact law, a good one keeps the passes few.
    """

    def level_conditional_bounds(self, k: int, prec: int) -> tuple[int, int]:
        raise NotImplementedError

    def cdf_bounds(self, start: int, stop: int, prec: int) -> list[tuple[int, int]]:
        """Bounds of 2^prec · P(|Z| ≤ j | |Z| ≥ start) for j = start .. stop − 1."""
        work = prec + 8 + (stop - start + 2).bit_length()
        one = 1 << work
        s_lo = s_hi = one  # P(|Z| > j | |Z| ≥ start): products of 1 − h_i
        out = []
        for j in range(start, stop):
            h_lo, h_hi = self.level_conditional_bounds(j, work)
            s_lo = (s_lo * (one - h_hi)) >> work
            s_hi = ceil_div(s_hi * (one - h_lo), one)
            out.append(((one - s_hi) >> 8, ceil_div(one - s_lo, 1 << 8)))
        shift = work - 8 - prec
        return [(lo >> shift, ceil_div(hi, 1 << shift)) for lo, hi in out]

    def cutoff(self, start: int, n_max: int) -> int:
        raise NotImplementedError

    def cdf_floors(self, start: int, stop: int, prec: int) -> list[int]:
        """⌊2^prec · P(|Z| ≤ j | |Z| ≥ start)⌋ exactly, j = start .. stop − 1."""
        return list(_cdf_floors(self, start, stop, prec))


@lru_cache(maxsize=64)
def _cdf_floors(law: MagnitudeLaw, start: int, stop: int, prec: int) -> tuple[int, ...]:
    guard = 32
    while True:
        b = law.cdf_bounds(start, stop, prec + guard)
        lo = [x >> guard for x, _ in b]
        if all((x == y) or (x >> guard == y >> guard) for (x, y), _ in zip(b, lo)):
            return tuple(lo)
        guard *= 2
        if guard > 1 << 16:  # pragma: no cover - a boundary exactly at a dyadic point given inexactly
            raise ArithmeticError("a class boundary of the noise law cannot be resolved")


@dataclass(frozen=True)
class DiscreteLaplaceLaw(MagnitudeLaw):
    """P(Z = k) ∝ q^|k| with q = exp(−den/num): the discrete Laplace of scale num/den.

    P(|Z| ≤ j) = 1 − 2q^{j+1}/(1 + q); past level 0 the law is memoryless,
    P(|Z| ≤ j | |Z| ≥ start) = 1 − q^{j−start+1} for start ≥ 1. Level conditionals:
    P(|Z| = 0) = (1 − q)/(1 + q), P(|Z| = k | |Z| ≥ k) = 1 − q for k ≥ 1.
    """

    num: int
    den: int

    def _q(self, prec: int) -> tuple[int, int]:
        return exp_neg_bounds(self.den, self.num, prec)

    def level_conditional_bounds(self, k: int, prec: int) -> tuple[int, int]:
        qlo, qhi = self._q(prec + 4)
        one = 1 << (prec + 4)
        if k == 0:
            lo, hi = ((one - qhi) << (prec + 4)) // (one + qhi), ceil_div((one - qlo) << (prec + 4), one + qlo)
        else:
            lo, hi = one - qhi, one - qlo
        return lo >> 4, ceil_div(hi, 16)

    def cdf_bounds(self, start: int, stop: int, prec: int) -> list[tuple[int, int]]:
        work = prec + 8 + (stop - start + 2).bit_length()
        one = 1 << work
        qlo, qhi = self._q(work)
        plo, phi = qlo, qhi  # q^(j − start + 1) (start ≥ 1) or q^(j + 1) (start 0)
        out = []
        for _ in range(start, stop):
            if start == 0:  # 2 q^{j+1} / (1 + q)
                vlo, vhi = (2 * plo << work) // (one + qhi), ceil_div(2 * phi << work, one + qlo)
            else:
                vlo, vhi = plo, phi
            out.append(((one - vhi) >> 8, ceil_div(one - vlo, 1 << 8)))
            plo, phi = (plo * qlo) >> work, ceil_div(phi * qhi, one)
        shift = work - 8 - prec
        return [(lo >> shift, ceil_div(hi, 1 << shift)) for lo, hi in out]

    def cutoff(self, start: int, n_max: int) -> int:
        """stop = T + 1: start 0, the first T with 2·n_max·q^{T+1} ≤ 1 by an upper bound on
        ln(2·n_max) (so n_max·P(|Z| > T) ≤ 1); start ≥ 1 (the few draws left beyond a pass),
        with 4·n_max·q^{T−start+1} ≤ 1, so that a further pass is rarely needed."""
        target = 2 * n_max if start == 0 else 4 * n_max
        ln_hi = ln_bounds(max(target, 1), 1, 32)[1]
        levels = max(1, ceil_div(self.num * ln_hi, self.den << 32))  # levels·den/num ≥ ln(target)
        return (levels if start == 0 else start + levels)


def _gaussian_tail_factor(num: int, den: int, n: int) -> Fraction:
    """F(N) ≥ 1 with Σ_{k≥N} e^{−k²λ} ≤ e^{−N²λ}·F(N), λ = den/(2·num): F(N) = 1 + min(1/(2Nλ), 1.26·σ_hi).

    e^{−k²λ} ≤ ∫_{k−1}^{k} e^{−λx²}dx for k ≥ N + 1 ≥ 1, and ∫_N^∞ e^{−λx²}dx = e^{−λN²}∫_0^∞ e^{−λ(2Ny + y²)}dy,
    which is at most e^{−λN²}/(2λN) (drop y²) and at most e^{−λN²}·½√(π/λ) = e^{−λN²}·σ√(π/2) (drop 2Ny);
    √(π/2) < 1.26 and σ_hi = ⌊√⌈σ²⌉⌋ + 1 > σ.
    """
    sigma_hi = math.isqrt(ceil_div(num, den)) + 1
    gauss = Fraction(63 * sigma_hi, 50)
    return 1 + (gauss if n == 0 else min(Fraction(num, n * den), gauss))


@lru_cache(maxsize=256)
def _gaussian_level(num: int, den: int, start: int, target: Fraction) -> int:
    """The least N ≥ start with e^{−(N² − start²)λ}·F(N) ≤ 1/target (λ = den/(2·num), F of
    :func:`_gaussian_tail_factor`), so Σ_{k≥N} e^{−(k² − start²)λ} ≤ 1/target.

    Decided in integers: (N² − start²)·den·2^32 ≥ 2·num·⌈2^32 ln(target·F(N))⌉ (an upper bound of the
    logarithm). Both sides are monotone in N (F decreases), so the least N is found by doubling
    and bisection.
    """
    def enough(n: int) -> bool:
        x = target * _gaussian_tail_factor(num, den, n)
        ln_hi = ln_bounds(x.numerator, x.denominator, 32)[1]
        return (n * n - start * start) * den << 32 >= 2 * num * ln_hi

    if enough(start):
        return start
    lo, step = start, 1
    while not enough(lo + step):
        lo, step = lo + step, step * 2
    hi = lo + step  # enough(hi) and not enough(lo): the least N lies in (lo, hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
    return hi


@dataclass(frozen=True)
class DiscreteGaussianLaw(MagnitudeLaw):
    """P(Z = k) ∝ exp(−k²/(2σ²)) on ℤ with σ² = num/den exactly: the discrete Gaussian
    (Canonne, Kamath & Steinke 2020) at the rational σ² its exact sampler draws at.

    With λ = 1/(2σ²) and u_k = e^{−(k² − s²)λ} (u_s = 1), P(|Z| ≤ j | |Z| ≥ s) = A_j/(A_j + R_j)
    with A_j = Σ_{k=s}^{j} v_k, R_j = Σ_{k>j} v_k, v_k = u_k for k ≥ 1 and v_0 = ½u_0 (|Z| = k ≥ 1 has
    two values, 0 one; the common factor cancels). The u_k are bounded in fixed point by the
    recurrence u_{k+1} = u_k·e^{−(2k+1)λ}, e^{−(2k+3)λ} = e^{−(2k+1)λ}·e^{−2λ} (lower bounds rounded
    down, upper up), to a level N whose tail Σ_{k≥N} u_k lies in [u_N, u_N·F(N)]
    (:func:`_gaussian_tail_factor`) and is below 2^−(prec+8); A/(A + R) grows with A and falls
    with R, so it is bounded by the bounds of A and R. Proof: docs/sparse-leaves.md, "The
    discrete Gaussian".
    """

    num: int
    den: int

    def cdf_bounds(self, start: int, stop: int, prec: int) -> list[tuple[int, int]]:
        num, den = self.num, self.den
        n_top = max(stop, start + 1, _gaussian_level(num, den, start, Fraction(1 << (prec + 8))))
        work = prec + 3 * (n_top - start + 1).bit_length() + 24  # the rounding errors grow at most like L³
        one = 1 << work
        step_lo, step_hi = exp_neg_bounds(den, num, work)  # e^{−2λ}
        r_lo, r_hi = exp_neg_bounds((2 * start + 1) * den, 2 * num, work)  # e^{−(2s+1)λ}
        # v at level 0 is half of u (one value against two): in units of ½, level 0 counts 1, others 2
        half = start == 0
        u_lo = u_hi = one
        a_lo = a_hi = 0
        partial = []
        for k in range(start, n_top):
            w = 1 if (half and k == 0) else 2
            a_lo += w * u_lo
            a_hi += w * u_hi
            if k < stop:
                partial.append((a_lo, a_hi))
            u_lo, u_hi = (u_lo * r_lo) >> work, ceil_div(u_hi * r_hi, one)
            r_lo, r_hi = (r_lo * step_lo) >> work, ceil_div(r_hi * step_hi, one)
        # the tail from n_top on (n_top ≥ 1, so every weight there is 2) lies in [u_N, u_N·F(N)]
        factor = _gaussian_tail_factor(num, den, n_top)
        total_lo = a_lo + 2 * u_lo
        total_hi = a_hi + 2 * ceil_div(u_hi * factor.numerator, factor.denominator)
        out = []
        for p_lo, p_hi in partial:  # R_j = total − A_j for the lower and the upper sums alike
            out.append(((p_lo << prec) // (p_lo + total_hi - p_hi), ceil_div(p_hi << prec, p_hi + total_lo - p_lo)))
        return out

    def cutoff(self, start: int, n_max: int) -> int:
        """stop = T + 1 with n_max·P(|Z| > T) ≤ 1 (start 0), or n_max·P(|Z| > T | |Z| ≥ start) ≤ ¼
        (start ≥ 1: the few draws beyond a pass), by the tail bound of :func:`_gaussian_level`:
        P(|Z| > T) = 2Σ_{k>T} e^{−k²λ}/Θ with Θ = Σ_{k∈ℤ} e^{−k²λ} ≥ √(π/λ) − 1 = σ√(2π) − 1 (a sum of a
        unimodal symmetric function against its integral), so Θ ≥ ⌊5⌊σ⌋/2⌋ − 1;
        given |Z| ≥ s ≥ 1, the conditional tail is at most Σ_{k>T} e^{−(k² − s²)λ} (the mass from s on
        is at least its first term)."""
        n = max(1, int(n_max))
        if start == 0:
            theta_lo = max(1, (5 * math.isqrt(self.num // self.den)) // 2 - 1)  # √(2π) > 5/2; and Θ ≥ 1
            return max(1, _gaussian_level(self.num, self.den, 0, Fraction(2 * n, theta_lo)))
        return max(start + 1, _gaussian_level(self.num, self.den, start, Fraction(4 * n)))


def magnitude_histogram(rng: np.random.Generator, counts: ArrayLike,
                        law: MagnitudeLaw) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Histogram of ``counts[g]`` i.i.d. draws of |Z| per group g: (group, magnitude, count) int64.

    Passes: levels start .. stop − 1 (stop = ``law.cutoff``) are classes of one dyadic inversion
    (:func:`_class_counts`) and everything beyond is one more class; its counts are drawn again,
    conditioned on |Z| ≥ stop, until no draw is left. Entries with count 0 are left out; sorted
    by group, then magnitude.
    """
    counts = np.asarray(counts, dtype=np.int64)
    if counts.size and counts.min() < 0:
        raise ValueError("counts must be ≥ 0")
    start, out = 0, []
    while counts.size and counts.max() > 0:
        stop = law.cutoff(start, int(counts.max()))
        B = stop - start
        g, cls, cnt = _class_counts(rng, counts, functools.partial(law.cdf_floors, start, stop), B)
        inside = cls < B
        out.append((g[inside], start + cls[inside], cnt[inside]))
        counts = np.zeros_like(counts)
        counts[g[~inside]] = cnt[~inside]
        start = stop
    if not out:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    g, k, c = (np.concatenate(x) for x in zip(*out))
    width = int(k.max()) + 1
    key, c = _sorted_unique(g * width + k, c, counts.size * width)  # by group, then magnitude
    return key // width, key % width, c


def signed_histogram(rng: np.random.Generator, counts: ArrayLike,
                     law: MagnitudeLaw) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Histogram of ``counts[g]`` i.i.d. draws of Z per group g, for a law on ℤ symmetric about 0.

    Returns (group, value, multiplicity) int64 arrays, multiplicity > 0, sorted by group then
    value: the exact Multinomial(counts[g], p) over ℤ per group (magnitudes by
    :func:`magnitude_histogram`, then each magnitude k ≥ 1 split into ±k by Binomial(·, ½):
    given |Z| = k ≥ 1 the sign is fair and independent across draws).
    """
    g, k, c = magnitude_histogram(rng, counts, law)
    pos = k > 0
    plus = binomial_half(rng, c[pos])
    minus = c[pos] - plus
    group = np.concatenate([g[~pos], g[pos], g[pos]])
    value = np.concatenate([k[~pos], k[pos], -k[pos]])
    mult = np.concatenate([c[~pos], plus, minus])
    keep = mult > 0
    group, value, mult = group[keep], value[keep], mult[keep]
    top = int(np.abs(value).max()) if value.size else 0
    width = 2 * top + 1
    key, mult = _sorted_unique(group * width + value + top, mult, int(np.size(counts)) * width)
    return key // width, key % width - top, mult


def discrete_laplace_histogram(rng: np.random.Generator, counts: ArrayLike, num: int,
                               den: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Histogram of ``counts[g]`` i.i.d. draws of the discrete Laplace P(k) ∝ exp(−|k|·den/num)
    (:func:`signed_histogram` of :class:`DiscreteLaplaceLaw`): (group, value, multiplicity)."""
    return signed_histogram(rng, counts, DiscreteLaplaceLaw(int(num), int(den)))


def discrete_gaussian_histogram(rng: np.random.Generator, counts: ArrayLike,
                                sigma2: Fraction) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Histogram of ``counts[g]`` i.i.d. draws of the discrete Gaussian P(k) ∝ exp(−k²/(2σ²)) at the
    exact rational σ² = ``sigma2`` (:func:`signed_histogram` of :class:`DiscreteGaussianLaw`)."""
    sigma2 = Fraction(sigma2)
    return signed_histogram(rng, counts, DiscreteGaussianLaw(sigma2.numerator, sigma2.denominator))
