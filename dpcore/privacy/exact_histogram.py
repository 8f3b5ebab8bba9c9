"""Exact histograms of many i.i.d. integer noise draws, with integer randomness only.

The sparse leaf layer noises the huge number of identical empty cells of a block through the
*histogram* of their noise values: for m cells, H ~ Multinomial(m, p) over the values, p the
noise law (docs/sparse-leaves.md). This module draws H **exactly**, for m up to 2^63 − 1: every
random decision compares uniform random bits from a passed-in ``numpy.random.Generator`` with
a number known through rigorous integer bounds, refined until the comparison is decided. No
floating-point number takes part in any decision. Proofs: docs/sparse-leaves.md, "The exact
histogram sampler".

Public pieces (all exact; ``rng`` is a ``numpy.random.Generator``):

* :func:`binomial_half` — Binomial(n, ½) for every entry of an int64 array (n < 2^63): a
  popcount of n random bits for n < 4096, else rejection from a table envelope whose
  acceptance is decided by integer bounds on the binomial ratio (Stirling's series with its
  remainder), or, in the rare undecided case, by big-integer arithmetic at growing precision.
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

__all__ = [
    "SAMPLER_NAME", "binomial_half", "binomial", "MagnitudeLaw", "DiscreteLaplaceLaw",
    "DiscreteGaussianLaw", "magnitude_histogram", "signed_histogram", "discrete_laplace_histogram",
    "discrete_gaussian_histogram",
]

#: What a ledger charge names when its many identical cells were noised through this module.
SAMPLER_NAME = "exact histogram sampler (dyadic inversion with exact Binomial(n, 1/2) splits)"

_U64 = np.uint64
_ALL_ONES = np.uint64(0xFFFF_FFFF_FFFF_FFFF)


# ============================================================================ rigorous integers
# Every function here returns integer bounds (lo, hi) of 2^prec · value: lo ≤ 2^prec · value ≤ hi.

def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


def _exp_neg_bounds(num: int, den: int, prec: int) -> tuple[int, int]:
    """Bounds of 2^prec · exp(−num/den) for integers num ≥ 0, den ≥ 1 (width a few units).

    x = num/den is halved r times to y ≤ ½; the alternating Taylor series of e^{−y}, each term
    floored (error ≤ 2 units each, one-sided), is bracketed by its partial sums; squaring r
    times with floor (lower) and ceiling (upper) gives e^{−x}. The guard bits (r + 40) absorb
    the error, which grows by 2^r through the squarings.
    """
    if num == 0:
        return 1 << prec, 1 << prec
    if num >= den * (prec + 2):  # x ≥ prec + 2 > (prec + 2)·ln 2: below half a unit
        return 0, 1
    r = (num // den).bit_length() + 1  # x / 2^r < ½
    work = prec + r + 40
    div = den << r
    lo_sum = hi_sum = 1 << work
    term, j = 1 << work, 1
    while True:
        term = term * num // (div * j)  # computed term ≤ true term ≤ computed + 2
        if term == 0:
            lo_sum -= 2  # the rest of the alternating series is at most the first omitted term
            hi_sum += 2
            break
        if j % 2:
            lo_sum -= term + 2
            hi_sum -= term
        else:
            lo_sum += term
            hi_sum += term + 2
        j += 1
    lo, hi = max(lo_sum, 0), min(hi_sum, 1 << work)
    for _ in range(r):
        lo = (lo * lo) >> work
        hi = _ceil_div(hi * hi, 1 << work)
    shift = work - prec
    return lo >> shift, _ceil_div(hi, 1 << shift)


def _atanh_bounds(a: int, b: int, work: int) -> tuple[int, int]:
    """Bounds of 2^work · atanh(a/b) for 0 ≤ a, 3a ≤ b (series of positive terms, each floored)."""
    if a == 0:
        return 0, 0
    p = (a << work) // b
    a2, b2 = a * a, b * b
    total, j, terms = 0, 0, 0
    while p:
        total += p // (2 * j + 1)
        p = p * a2 // b2
        j += 1
        terms += 1
    return total, total + 3 * terms + 3


@lru_cache(maxsize=32)
def _ln2_bounds(work: int) -> tuple[int, int]:
    lo, hi = _atanh_bounds(1, 3, work)  # ln 2 = 2 atanh(1/3)
    return 2 * lo, 2 * hi


def _ln_bounds(n: int, d: int, prec: int) -> tuple[int, int]:
    """Bounds of 2^prec · ln(n/d) for integers n, d ≥ 1."""
    if n == d:
        return 0, 0
    e = n.bit_length() - d.bit_length()
    scale_n, scale_d = (n, d << e) if e >= 0 else (n << -e, d)
    if 3 * scale_n < 2 * scale_d:  # m = n / (d 2^e) in (1/2, 2/3): use 2m
        e -= 1
    elif 3 * scale_n > 4 * scale_d:  # m in (4/3, 2): use m/2
        e += 1
    a, b = (n, d << e) if e >= 0 else (n << -e, d)  # a/b in [2/3, 4/3]
    work = prec + 12 + abs(e).bit_length()
    zlo, zhi = _atanh_bounds(abs(a - b), a + b, work)  # ln(a/b) = 2 atanh((a−b)/(a+b))
    if a < b:
        zlo, zhi = -zhi, -zlo
    l2lo, l2hi = _ln2_bounds(work)
    lo = e * (l2lo if e >= 0 else l2hi) + 2 * zlo
    hi = e * (l2hi if e >= 0 else l2lo) + 2 * zhi
    shift = work - prec
    return lo >> shift, _ceil_div(hi, 1 << shift)


@lru_cache(maxsize=4)
def _bernoulli_numbers(count: int) -> tuple[Fraction, ...]:
    """B_0 .. B_{count} (exact, B_1 = −½), by the Akiyama–Tanigawa algorithm."""
    out, a = [], [Fraction(0)] * (count + 1)
    for m in range(count + 1):
        a[m] = Fraction(1, m + 1)
        for j in range(m, 0, -1):
            a[j - 1] = j * (a[j - 1] - a[j])
        out.append(a[0])
    out[1] = -out[1]
    return tuple(out)


#: L(n) = ln n! − ½ ln 2π is taken from Stirling's series for n ≥ max(this, prec/8); smaller n
#: go through that n (the series' smallest term, about e^{−2πn}, is then below 2^−prec).
_STIRLING_FROM = 64


def _log_factorial_bounds(n: int, prec: int) -> tuple[int, int]:
    """Bounds of 2^prec · (ln n! − ½ ln 2π) for an integer n ≥ 0.

    n ≥ 64: Stirling, (n + ½) ln n − n + Σ_{k≤K} B_2k / (2k(2k−1) n^{2k−1}), whose remainder for
    real n > 0 is bounded by the first omitted term (DLMF 5.11.ii). Smaller n: the value at
    n0 = max(64, prec/8) minus ln(n0!/n!) (an exact integer), so the ½ ln 2π left out always
    cancels in ratios.
    """
    n0 = max(_STIRLING_FROM, prec // 8 + 1)
    if n < n0:
        lo, hi = _log_factorial_bounds(n0, prec)
        tlo, thi = _ln_bounds(math.factorial(n0) // math.factorial(n), 1, prec)
        return lo - thi, hi - tlo
    extra = n.bit_length() + 2
    llo, lhi = _ln_bounds(n, 1, prec + extra)
    lo = ((2 * n + 1) * llo) >> (extra + 1)
    hi = _ceil_div((2 * n + 1) * lhi, 1 << (extra + 1))
    lo -= n << prec
    hi -= n << prec
    bern = _bernoulli_numbers(64)
    series = Fraction(0)
    k = 1
    while True:
        if 2 * k >= len(bern):
            bern = _bernoulli_numbers(2 * len(bern))
        term = bern[2 * k] / (2 * k * (2 * k - 1) * Fraction(n) ** (2 * k - 1))
        if abs(term) * (1 << prec) < Fraction(1, 4):
            bound = abs(term)  # the first omitted term bounds the remainder
            break
        series += term
        k += 1
    lo += math.floor((series - bound) * (1 << prec))
    hi += math.ceil((series + bound) * (1 << prec))
    return lo, hi


def _uniform_below(rng: np.random.Generator, known: int, known_bits: int, bounds: Callable[[int], tuple[int, int]]):
    """Whether a uniform U in [0, 1) lies below a number p, exactly.

    The first ``known_bits`` bits of U are ``known``; more are drawn as needed. ``bounds(P)``
    gives (lo, hi) with lo ≤ 2^P·p ≤ hi. U < p is decided once its first P bits V satisfy
    V + 1 ≤ lo (yes) or V ≥ hi (no); otherwise 64 more bits are drawn and p is bounded at the
    new precision. Terminates with probability 1 when p is irrational or the bounds are exact.
    """
    value, bits = int(known), int(known_bits)
    while True:
        extra = 64 - bits % 32
        value = (value << extra) | int(rng.integers(0, 1 << extra, dtype=np.uint64))
        bits += extra
        lo, hi = bounds(bits)
        if value + 1 <= lo:
            return True
        if value >= hi:
            return False


# ============================================================================ Binomial(n, 1/2)
#: Below this, Binomial(n, 1/2) is the popcount of n random bits (at most 16 words).
_POPCOUNT_BELOW = 4096
#: Fixed-point bits of the exponent γ = −ln(acceptance) in the fast test.
_F = 24
#: The fast test handles u = y²/h up to this (z = y/√h ≤ 6); beyond, the exact path decides.
_U_FAST = 36
#: Mass of the envelope's table (the proposal weights sum to 2^_WBITS).
_WBITS = 40
#: Columns of each alias table (a power of two; ≥ the number of cells + 2).
_COLS = 512
#: The envelope's cells cover z = y/√h up to about this; beyond is its geometric tail entry.
_BODY = 7
#: Buckets of offsets per cell with their own squeeze constant.
_SUB = 8


@dataclass(frozen=True)
class _Envelope:
    """One proposal table of the Binomial(2h, ½) rejection sampler (for one range of √h).

    Cell J ≥ 0 covers the offsets y ∈ [J·L, (J+1)·L) with L = ⌊√h⌋ >> k; its weight is
    W_J ≥ c·exp(−J²·λ_min), λ_min ≤ L²/h for every h of the table. Cells J ≥ J_max are one
    "tail" entry (weights c·exp(−J·κ), κ = J_max·λ_min, drawn geometrically when chosen), and a
    "dummy" entry pads the total to 2^40 (a proposal in it is rejected).
    """

    k: int
    lam_min: Fraction
    j_max: int
    c: int
    w_tail: int
    kappa: Fraction
    weights: tuple  # W_0 .. W_{J_max-1}
    omega_lo: np.ndarray  # ⌊2^F ln(c / W_J)⌋ (int64; 0 for J ≥ J_max and where never read)
    omega_hi: np.ndarray
    squeeze: np.ndarray  # [J·_SUB + b]: 2^31 × a lower bound of the acceptance over bucket b of cell J
    cap: np.ndarray  # [J·_SUB + b]: 2^31 × an upper bound of it (rows J_max, J_max + 1: tail, dummy)
    threshold: np.ndarray  # alias tables over _COLS columns of capacity 2^_WBITS (int64)
    alias: np.ndarray


#: (k, smallest bit length of ⌊√h⌋) per table; the table of h is the last whose bit length fits.
_TABLE_SPECS = ((2, 6), (3, 7), (4, 9), (5, 11), (6, 13), (6, 17))


#: table index by the bit length of ⌊√h⌋ (0..32): the last table whose smallest bit length fits
_TABLE_BY_BITS = np.array([max(0, sum(b <= bw for _, b in _TABLE_SPECS) - 1) for bw in range(33)])


def _table_of(bw: np.ndarray) -> np.ndarray:
    """Table index for ⌊√h⌋ of bit length ``bw`` (6 ≤ bw ≤ 32)."""
    return _TABLE_BY_BITS[bw]


def _alias(weights: list[int], total: int) -> tuple[np.ndarray, np.ndarray]:
    """Walker/Vose alias tables in integers: column i keeps itself when r < threshold[i]
    (r uniform in [0, total)), else gives alias[i]; P(j) = weights[j] / total exactly."""
    n = _COLS
    if min(weights) < 0 or sum(weights) != total or len(weights) > n:
        raise ValueError("alias weights must be ≥ 0, sum to the total and fit the columns")
    scaled = [w * n for w in weights] + [0] * (n - len(weights))
    threshold, alias = [total] * n, list(range(n))
    small = [i for i in range(n) if scaled[i] < total]
    large = [i for i in range(n) if scaled[i] >= total]
    while small and large:
        s, g = small.pop(), large.pop()
        threshold[s], alias[s] = scaled[s], g
        scaled[g] -= total - scaled[s]
        (small if scaled[g] < total else large).append(g)
    for i in small + large:  # only exact leftovers remain: full columns
        threshold[i] = total
    return np.array(threshold, dtype=np.int64), np.array(alias, dtype=np.int64)


def _gaussian_weights_hi(lam: Fraction, count: int, prec: int) -> list[int]:
    """Upper bounds of 2^prec·e^{−J²λ}, J = 0 .. count − 1, by the recurrence
    e^{−J²λ} = e^{−(J−1)²λ}·e^{−(2J−1)λ}, e^{−(2J+1)λ} = e^{−(2J−1)λ}·e^{−2λ} (rounded up, 32 guard bits)."""
    work = prec + 32
    one = 1 << work
    step = _exp_neg_bounds((2 * lam).numerator, (2 * lam).denominator, work)[1]  # e^{−2λ}
    ratio = _exp_neg_bounds(lam.numerator, lam.denominator, work)[1]  # e^{−λ}: J = 1
    value, out = one, []
    for _ in range(count):
        out.append(_ceil_div(value, 1 << 32))
        value = _ceil_div(value * ratio, one)
        ratio = _ceil_div(ratio * step, one)
    return out


def _build_envelope(k: int, bw_min: int, body: int = _BODY) -> _Envelope:
    """The table for cell width δ = 2^−k and ⌊√h⌋ of bit length ≥ ``bw_min``; its cells cover
    z = y/√h up to about ``body`` (the rest is the geometric tail entry)."""
    delta = Fraction(1, 1 << k)
    lam = (delta - Fraction(1, 1 << (bw_min - 1))) ** 2  # L/√h > δ − 2^{1−bw} (see docs)
    j_max = body << k
    kappa = j_max * lam
    P = 64
    e_hi = _gaussian_weights_hi(lam, j_max, P)
    tail_num = _exp_neg_bounds((j_max * kappa).numerator, (j_max * kappa).denominator, P)[1]
    tail_den = (1 << P) - _exp_neg_bounds(kappa.numerator, kappa.denominator, P)[1]
    tail_hi = _ceil_div(tail_num << P, tail_den)  # ≥ 2^P Σ_{J ≥ J_max} e^{−Jκ}
    total = 1 << _WBITS
    c = (total - (total >> 12)) * (1 << P) // (sum(e_hi) + tail_hi)
    while True:
        weights = [max(1, _ceil_div(c * e, 1 << P)) for e in e_hi]
        w_tail = max(1, _ceil_div(c * tail_hi, 1 << P))
        if sum(weights) + w_tail <= total:
            break
        c -= c >> 16
    dummy = total - sum(weights) - w_tail
    # ω_J = ln(c/W_J) for the cells the fast test can see (u ≥ J²λ ≤ 36; the others are never
    # read). W_J ≤ c·E_J + 1 with e^{−J²λ} ≤ E_J ≤ e^{−J²λ}(1 + 2^−49), so for J²λ ≤ 10:
    # J²λ − 2^−49 − e^{J²λ}/c ≤ ω_J ≤ J²λ, and e^{10}/c < 2^−19 (c > 2^34); else by logarithms.
    omega, ln_, ld_ = [], lam.numerator, lam.denominator
    for j, w in enumerate(weights):
        xn = j * j * ln_  # J²λ = xn / ld_
        if xn <= 10 * ld_ and c > 1 << 34:
            omega.append(((xn << _F) // ld_ - (1 << (_F - 19)) - 1, _ceil_div(xn << _F, ld_)))
        elif xn <= _U_FAST * ld_:
            omega.append(_ln_bounds(c, w, _F))
        else:
            omega.append((0, 0))
    threshold, alias = _alias(weights + [w_tail, dummy], total)
    # squeeze: offsets o of cell J in bucket b = ⌊_SUB·o/L⌋ have y ≤ J·L + (b+1)L/_SUB + 1, so
    # u ≤ U = (J + (b+1)/_SUB + 1/L_min)²δ² (L ≤ δ√h, L ≥ L_min), and γ ≤ U + U²/(6h) + r⁺ + 1/h − ω_J
    # for every h ≥ h_min of the table (docs: the bounds on φ); each term rounded up to 2^−F, then
    # e^{−γ} rounded down by the exp tables; U > 36 gets 0 (no squeeze)
    h_min = max(_POPCOUNT_BELOW // 2, 1 << (2 * (bw_min - 1)))
    l_min = 1 << (bw_min - 1 - k)  # ⌊√h⌋ ≥ 2^(bw_min − 1)
    num = (_SUB * l_min * np.arange(j_max, dtype=np.int64)[:, None]
           + (np.arange(_SUB, dtype=np.int64) + 1) * l_min + _SUB)  # U = num²/den², den = 2^(bw_min + 2)
    shift = 2 * (bw_min + 2) - _F
    sq = num * num
    u = ((sq + (1 << shift) - 1) >> shift) if shift >= 0 else sq << -shift
    g = u + (u * u + 6 * h_min * (1 << _F) - 1) // (6 * h_min * (1 << _F))
    if h_min < 1 << 19:
        g += -((-11 * u * u) // (4 * h_min * h_min << _F)) - ((-u) // (5 * h_min * h_min))
    g += 1 + _ceil_div(1 << _F, 180 * h_min ** 3) + _ceil_div(1 << _F, h_min)
    g -= np.array([o[0] for o in omega], dtype=np.int64)[:, None]
    g = np.where(u > _U_FAST << _F, 64 << _F, np.maximum(g, 0))
    squeeze = _exp_neg_fixed(g.reshape(-1), False)  # entry J·_SUB + b
    # and a cap: in bucket b, u ≥ (J + b/_SUB − 1/L_min)²λ (y ≥ J·L + ⌊bL/_SUB⌋, λ ≤ L²/h), and
    # φ ≥ u − 1/h (the envelope's bound), so γ = φ + 1/h − ω_J ≥ u − ω_J
    # √u ≥ base·(L_min − 1)/D with D = _SUB·L_min²·2^k (λ = ((L_min − 1)/(L_min·2^k))²), floored
    # to 2^−F before squaring so that nothing overflows int64
    base = _SUB * l_min * np.arange(j_max, dtype=np.int64)[:, None] + np.arange(_SUB, dtype=np.int64) * l_min - _SUB
    root = np.maximum(base, 0) * (l_min - 1)
    shift = (_SUB.bit_length() - 1 + 2 * (bw_min - 1 - k) + k) - _F
    root = (root >> shift) if shift >= 0 else root << -shift  # ⌊2^F √u_min⌋
    u_min = (root * root) >> _F
    g_min = u_min - np.array([o[1] for o in omega], dtype=np.int64)[:, None]
    seen = np.array([j * j * lam.numerator <= _U_FAST * lam.denominator for j in range(j_max)])
    g_min = np.where(seen[:, None], g_min, 0)  # ω_J is bounded only where the fast test can see J
    cap = _exp_neg_fixed(np.maximum(g_min, 0).reshape(-1), True)
    # two more rows: the tail entry (never settled by the tables) and the dummy (always rejected)
    squeeze = np.concatenate([squeeze, np.zeros(2 * _SUB, dtype=np.int64)])
    cap = np.concatenate([cap, np.full(_SUB, 1 << 31, dtype=np.int64), np.zeros(_SUB, dtype=np.int64)])
    omega += [(0, 0), (0, 0)]
    return _Envelope(k, lam, j_max, c, w_tail, kappa, tuple(weights),
                     np.array([o[0] for o in omega], dtype=np.int64), np.array([o[1] for o in omega], dtype=np.int64),
                     squeeze, cap, threshold, alias)


@lru_cache(maxsize=1)
def _envelopes() -> tuple:
    envs = tuple(_build_envelope(k, b) for k, b in _TABLE_SPECS)
    j_off = np.cumsum([0] + [e.j_max + 2 for e in envs])[:-1]  # rows per table: cells, tail, dummy
    return (envs, np.concatenate([e.threshold for e in envs]), np.concatenate([e.alias for e in envs]),
            np.concatenate([e.omega_lo for e in envs]), np.concatenate([e.omega_hi for e in envs]),
            np.concatenate([e.squeeze for e in envs]), np.concatenate([e.cap for e in envs]),
            np.array(j_off, dtype=np.int64), np.array([e.j_max for e in envs], dtype=np.int64),
            np.array([e.k for e in envs], dtype=np.int64))


@lru_cache(maxsize=1)
def _exp_tables() -> tuple:
    """exp(−γ) for γ = a + b/2^8 + c/2^16 + d/2^24, as four tables of 31-bit bounds."""
    steps = ((64, 1), (256, 1 << 8), (256, 1 << 16), (256, 1 << 24))
    out = []
    for size, den in steps:
        # e^{−i/den} = (e^{−1/den})^i, the powers rounded down (lower) and up (upper) at 31 + 32 bits
        work = 31 + 32
        one = 1 << work
        base_lo, base_hi = _exp_neg_bounds(1, den, work)
        lo, hi, los, his = one, one, [], []
        for _ in range(size):
            los.append(lo >> 32)
            his.append(_ceil_div(hi, 1 << 32))
            lo, hi = (lo * base_lo) >> work, _ceil_div(hi * base_hi, one)
        out.append((np.array(los, dtype=np.int64), np.array(his, dtype=np.int64)))
    return tuple(out)


def _exp_neg_fixed(gamma: np.ndarray, upper: bool) -> np.ndarray:
    """2^31·exp(−γ/2^F) rounded down (``upper`` False) or up, for int64 γ ≥ 0 (γ ≥ 64·2^F: 0 or 1)."""
    tables = _exp_tables()
    g = np.minimum(gamma, (64 << _F) - 1)
    parts = (g >> _F, (g >> 16) & 255, (g >> 8) & 255, g & 255)
    acc = tables[0][1 if upper else 0][parts[0]]
    for tab, idx in zip(tables[1:], parts[1:]):
        acc = acc * tab[1 if upper else 0][idx]
        acc = (acc + (1 << 31) - 1) >> 31 if upper else acc >> 31
    big = gamma >= (64 << _F)
    return np.where(big, 1 if upper else 0, acc)


def _isqrt(h: np.ndarray) -> np.ndarray:
    """⌊√h⌋ exactly for int64 0 ≤ h < 2^62 (a float guess corrected by integer checks)."""
    r = np.sqrt(h.astype(np.float64)).astype(np.int64)
    r -= (r * r > h).astype(np.int64)
    r += ((r + 1) * (r + 1) <= h).astype(np.int64)
    return r


def _bit_length(v: np.ndarray) -> np.ndarray:
    """Bit length of int64 values 0 ≤ v < 2^53 (exact: such integers are exact doubles)."""
    return np.frexp(v.astype(np.float64))[1].astype(np.int64)


def _popcount_binomial(rng: np.random.Generator, n: np.ndarray) -> np.ndarray:
    """Binomial(n, ½) for 1 ≤ n < 2^16 as the number of ones among n uniform random bits."""
    if n.max() <= 64:
        bits = rng.integers(0, 1 << 64, n.size, dtype=np.uint64) & (_ALL_ONES >> (np.uint64(64) - n.view(_U64)))
        return np.bitwise_count(bits).astype(np.int64)
    words = (n + 63) >> 6
    ends = np.cumsum(words)
    bits = rng.integers(0, 1 << 64, int(ends[-1]), dtype=np.uint64)
    last = (n - ((words - 1) << 6)).view(_U64)  # bits used in each entry's last word: 1..64
    bits[ends - 1] &= _ALL_ONES >> (np.uint64(64) - last)
    ones = np.bitwise_count(bits).astype(np.int64)
    return np.add.reduceat(ones, ends - words)


def _u_bounds(y: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Integer bounds of 2^F · y²/h for 0 ≤ y < 2^35, 2048 ≤ h < 2^62 (int64 throughout).

    y and h are first shifted by s and 2s bits (s = 0 unless y ≥ 2^31), which keeps ≥ 30
    significant bits of y; then y²/h = Q + R/h with R/h bounded through R and h shifted to 38 bits.
    """
    s = np.maximum(_bit_length(y) - 31, 0)
    shifted = s > 0
    ylo = y >> s
    yhi = ylo + shifted
    hlo = h >> (2 * s)
    hhi = hlo + shifted

    def part(num, den, upper):
        q = num // den
        r = num - q * den
        b = np.maximum(_bit_length(den >> 22) + 22 - 38, 0)  # den < 2^38 after the shift
        rb, db = r >> b, den >> b
        cut = b > 0
        if upper:
            frac = (((rb + cut) << _F) + db - 1) // db
        else:
            frac = (rb << _F) // (db + cut)
        return (q << _F) + frac

    return part(ylo * ylo, hhi, False), part(yhi * yhi, hlo, True)


def _gamma_bounds(u_lo, u_hi, h, om_lo, om_hi):
    """Bounds of 2^F·γ, γ = −ln(acceptance) = u + u²/(6h) − u/(2h) + r + 1/h − ω (docs)."""
    one = np.int64(1)
    q1_lo = u_lo // (2 * h)
    q1_hi = -((-u_hi) // (2 * h))
    c_lo = (one << _F) // h
    c_hi = -((-(one << _F)) // h)
    mid = h < (one << 36)
    hm = np.where(mid, h, 1)
    den2 = 6 * hm << _F
    q2_lo = np.where(mid, (u_lo * u_lo) // den2, 0)
    q2_hi = np.where(mid, -((-(u_hi * u_hi)) // den2), 1)
    small = h < (one << 19)
    hs = np.where(small, h, 1)
    s2 = -((-(u_hi * u_hi)) // ((hs * hs) << _F))  # ⌈2^F u²/h²⌉
    s1 = -((-u_hi) // (hs * hs))  # ⌈2^F u/h²⌉
    r_lo = np.where(small, -((2 * s2 + 6) // 7), -1)
    r_hi = np.where(small, (11 * s2 + 3) // 4 + (s1 + 4) // 5 + 1, 1)
    g_lo = u_lo + q2_lo - q1_hi + r_lo + c_lo - om_hi
    g_hi = u_hi + q2_hi - q1_lo + r_hi + c_hi - om_lo
    return np.maximum(g_lo, 0), np.maximum(g_hi, 0)


def _phi_bounds(h: int, y: int, prec: int) -> tuple[int, int]:
    """Bounds of 2^prec · φ(y), φ(y) = −ln(C(2h, h+y)/C(2h, h)) = L(h+y) + L(h−y) − 2L(h)."""
    a = _log_factorial_bounds(h + y, prec)
    b = _log_factorial_bounds(h - y, prec)
    c = _log_factorial_bounds(h, prec)
    return a[0] + b[0] - 2 * c[1], a[1] + b[1] - 2 * c[0]


def _accept_exact(rng, h: int, y: int, env: _Envelope, cell: int, V: int, tail_geo: int | None) -> bool:
    """The exact acceptance test of one proposal: U < ρ(y)·e^{−1/h}·c / e(cell), U's first 31
    bits being V. ``tail_geo`` is G for a tail proposal (cell J = J_max + G), else None."""
    if y > h:
        return False

    def bounds(P: int) -> tuple[int, int]:
        Q = P + 24
        plo, phi = _phi_bounds(h, y, Q)
        g_lo, g_hi = plo + (1 << Q) // h, phi + _ceil_div(1 << Q, h)  # + 1/h
        clo, chi = _ln_bounds(env.c, 1, Q)
        g_lo -= chi
        g_hi -= clo
        if tail_geo is None:
            wlo, whi = _ln_bounds(env.weights[cell], 1, Q)
            g_lo += wlo
            g_hi += whi
        else:  # e(x) = W_tail · e^{−Gκ} · (1 − e^{−κ})
            wlo, whi = _ln_bounds(env.w_tail, 1, Q)
            k = tail_geo * env.kappa
            elo, ehi = _exp_neg_bounds(env.kappa.numerator, env.kappa.denominator, Q + 8)
            one = 1 << (Q + 8)
            mlo = _ln_bounds(one - ehi, one, Q)[0]  # ln(1 − e^{−κ}) (negative)
            mhi = _ln_bounds(one - elo, one, Q)[1]
            g_lo += wlo - _ceil_div(k.numerator << Q, k.denominator) + mlo
            g_hi += whi - ((k.numerator << Q) // k.denominator) + mhi
        g_lo = max(g_lo, 0)
        lo = _exp_neg_bounds(g_hi, 1 << Q, P)[0]
        hi = _exp_neg_bounds(g_lo, 1 << Q, P)[1]
        return lo, hi

    return _uniform_below(rng, V, 31, bounds)


def _geometric_exact(rng, rate: Fraction) -> int:
    """G with P(G = g) ∝ exp(−g·rate): successes of exact Bernoulli(e^{−rate}) before a failure."""
    g = 0
    while _uniform_below(rng, 0, 0, lambda P: _exp_neg_bounds(rate.numerator, rate.denominator, P)):
        g += 1
    return g


#: Entries handled together by one pass of the rejection sampler (bounds the temporary arrays).
_CHUNK = 1 << 18


def _rejection_binomial(rng: np.random.Generator, n: np.ndarray) -> np.ndarray:
    """Binomial(n, ½) for n ≥ 4096: h + Y (+ a fair bit when n is odd), n = 2h (+ 1).

    Y has P(y) ∝ ρ(y) = C(2h, h+y)/C(2h, h). Proposal: a magnitude x from the table envelope of
    h's range (cell J by alias, a uniform offset in the cell), a sign (y = x or −x−1, so every
    integer is proposed once). Accepted with probability ρ(|y|)·e^{−1/h}·c/W_J ≤ 1, decided by
    the cell's squeeze constant, else by the integer bounds of :func:`_gamma_bounds`, else (rarely)
    by :func:`_accept_exact`.
    """
    h = n >> 1
    odd = n & 1
    w = _isqrt(h)
    table = _table_of(_bit_length(w))
    out = np.empty(len(n), dtype=np.int64)
    for lo in range(0, len(n), _CHUNK):
        part = slice(lo, lo + _CHUNK)
        out[part] = _rejection_offsets(rng, h[part], w[part], table[part])
    out += h
    if odd.any():
        idx = np.flatnonzero(odd)
        out[idx] += rng.integers(0, 2, idx.size)
    return out


def _rejection_offsets(rng, h, w, table) -> np.ndarray:
    """Y for each entry of one chunk (see :func:`_rejection_binomial`)."""
    envs, thr_all, alias_all, om_lo_all, om_hi_all, sq_all, cap_all, j_off, j_max, ks = _envelopes()
    L = w >> ks[table]
    lemire = (1 << 32) % L  # Lemire's rejection threshold for an offset uniform in [0, L)
    first_col, first_row, last_body = table * _COLS, j_off[table], j_max[table]
    out = np.empty(len(h), dtype=np.int64)
    pending = np.arange(len(h))
    cols = np.uint64(_COLS - 1)
    while pending.size:
        m = pending.size
        if m == len(h):
            col0, row0, jm, Lp, lem = first_col, first_row, last_body, L, lemire
        else:
            col0, row0, jm, Lp, lem = (first_col[pending], first_row[pending], last_body[pending], L[pending],
                                       lemire[pending])
        words = rng.integers(0, 1 << 64, 2 * m, dtype=np.uint64)
        w1, w2 = words[:m], words[m:]
        # every field below is < 2^63, so reading the bits as int64 is exact
        col = (w1 & cols).view(np.int64)
        r = ((w1 >> np.uint64(10)) & np.uint64((1 << _WBITS) - 1)).view(np.int64)
        sign = ((w1 >> np.uint64(50)) & np.uint64(1)).view(np.int64)
        at = col0 + col
        J = np.where(r < thr_all[at], col, alias_all[at])
        V = (w2 & np.uint64((1 << 31) - 1)).view(np.int64)
        U = (w2 >> np.uint64(32)).view(np.int64)
        prod = U * Lp
        redo = np.flatnonzero((prod & 0xFFFF_FFFF) < lem)
        while redo.size:  # the biased low products of Lemire's method: draw again
            U[redo] = rng.integers(0, 1 << 32, redo.size, dtype=np.int64)
            prod[redo] = U[redo] * Lp[redo]
            redo = redo[(prod[redo] & 0xFFFF_FFFF) < lem[redo]]
        o = prod >> 32
        y = J * Lp + o + sign  # (for the tail entry, redrawn below)
        cell = row0 + J
        bucket = cell * _SUB + (U >> (32 - _SUB.bit_length() + 1))  # o < (b+1)L/_SUB, o ≥ ⌊bL/_SUB⌋
        accept = V + 1 <= sq_all[bucket]
        decided = accept | (V >= cap_all[bucket])
        fine = np.flatnonzero(~decided & (J < jm))
        if fine.size:
            hp = h[pending[fine]]
            u_lo, u_hi = _u_bounds(y[fine], hp)
            ok = u_hi <= (_U_FAST << _F)
            fine, u_lo, u_hi, hp = fine[ok], u_lo[ok], u_hi[ok], hp[ok]
            c = cell[fine]
            g_lo, g_hi = _gamma_bounds(u_lo, u_hi, hp, om_lo_all[c], om_hi_all[c])
            yes = V[fine] + 1 <= _exp_neg_fixed(g_hi, False)
            no = V[fine] >= _exp_neg_fixed(g_lo, True)
            accept[fine[yes]] = True
            decided[fine[yes | no]] = True
        for i in np.flatnonzero(~decided):  # the exact path: rare (tail, u > 36, or undecided)
            env = envs[int(table[pending[i]])]
            if J[i] > env.j_max:  # the dummy entry (its cap row rejects it already)
                continue
            geo = None
            yi = int(y[i])
            if J[i] == env.j_max:
                geo = _geometric_exact(rng, env.kappa)
                yi = (env.j_max + geo) * int(Lp[i]) + int(o[i]) + int(sign[i])
                y[i] = min(yi, 1 << 62)
            accept[i] = _accept_exact(rng, int(h[pending[i]]), yi, env, int(J[i]), int(V[i]), geo)
        out[pending[accept]] = np.where(sign[accept] == 1, -y[accept], y[accept])
        pending = pending[~accept]
    return out


def binomial_half(rng: np.random.Generator, n) -> np.ndarray:
    """Exact Binomial(n, ½) for every entry of ``n`` (int64, 0 ≤ n < 2^63), as int64.

    n < 4096: the number of ones among n uniform random bits. n ≥ 4096: rejection sampling
    whose every acceptance is decided exactly (:func:`_rejection_binomial`; proof in
    docs/sparse-leaves.md). Only the generator's integer draws are used.
    """
    n = np.asarray(n, dtype=np.int64)
    if n.size and (n.min() < 0):
        raise ValueError("binomial_half needs counts ≥ 0")
    out = np.zeros(n.shape, dtype=np.int64)
    flat = n.reshape(-1)
    res = out.reshape(-1)
    small = np.flatnonzero((flat > 0) & (flat < _POPCOUNT_BELOW))
    if small.size:
        res[small] = _popcount_binomial(rng, flat[small])
    big = np.flatnonzero(flat >= _POPCOUNT_BELOW)
    if big.size:
        res[big] = _rejection_binomial(rng, flat[big])
    return out


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


def _class_counts(rng: np.random.Generator, counts: np.ndarray, floors: Callable[[int], list[int]], n_bounds: int):
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


def binomial(rng: np.random.Generator, k, p) -> np.ndarray:
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
            s_hi = _ceil_div(s_hi * (one - h_lo), one)
            out.append(((one - s_hi) >> 8, _ceil_div(one - s_lo, 1 << 8)))
        shift = work - 8 - prec
        return [(lo >> shift, _ceil_div(hi, 1 << shift)) for lo, hi in out]

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
        return _exp_neg_bounds(self.den, self.num, prec)

    def level_conditional_bounds(self, k: int, prec: int) -> tuple[int, int]:
        qlo, qhi = self._q(prec + 4)
        one = 1 << (prec + 4)
        if k == 0:
            lo, hi = ((one - qhi) << (prec + 4)) // (one + qhi), _ceil_div((one - qlo) << (prec + 4), one + qlo)
        else:
            lo, hi = one - qhi, one - qlo
        return lo >> 4, _ceil_div(hi, 16)

    def cdf_bounds(self, start: int, stop: int, prec: int) -> list[tuple[int, int]]:
        work = prec + 8 + (stop - start + 2).bit_length()
        one = 1 << work
        qlo, qhi = self._q(work)
        plo, phi = qlo, qhi  # q^(j − start + 1) (start ≥ 1) or q^(j + 1) (start 0)
        out = []
        for _ in range(start, stop):
            if start == 0:  # 2 q^{j+1} / (1 + q)
                vlo, vhi = (2 * plo << work) // (one + qhi), _ceil_div(2 * phi << work, one + qlo)
            else:
                vlo, vhi = plo, phi
            out.append(((one - vhi) >> 8, _ceil_div(one - vlo, 1 << 8)))
            plo, phi = (plo * qlo) >> work, _ceil_div(phi * qhi, one)
        shift = work - 8 - prec
        return [(lo >> shift, _ceil_div(hi, 1 << shift)) for lo, hi in out]

    def cutoff(self, start: int, n_max: int) -> int:
        """stop = T + 1: start 0, the first T with 2·n_max·q^{T+1} ≤ 1 by an upper bound on
        ln(2·n_max) (so n_max·P(|Z| > T) ≤ 1); start ≥ 1 (the few draws left beyond a pass),
        with 4·n_max·q^{T−start+1} ≤ 1, so that a further pass is rarely needed."""
        target = 2 * n_max if start == 0 else 4 * n_max
        ln_hi = _ln_bounds(max(target, 1), 1, 32)[1]
        levels = max(1, _ceil_div(self.num * ln_hi, self.den << 32))  # levels·den/num ≥ ln(target)
        return (levels if start == 0 else start + levels)


def _gaussian_tail_factor(num: int, den: int, n: int) -> Fraction:
    """F(N) ≥ 1 with Σ_{k≥N} e^{−k²λ} ≤ e^{−N²λ}·F(N), λ = den/(2·num): F(N) = 1 + min(1/(2Nλ), 1.26·σ_hi).

    e^{−k²λ} ≤ ∫_{k−1}^{k} e^{−λx²}dx for k ≥ N + 1 ≥ 1, and ∫_N^∞ e^{−λx²}dx = e^{−λN²}∫_0^∞ e^{−λ(2Ny + y²)}dy,
    which is at most e^{−λN²}/(2λN) (drop y²) and at most e^{−λN²}·½√(π/λ) = e^{−λN²}·σ√(π/2) (drop 2Ny);
    √(π/2) < 1.26 and σ_hi = ⌊√⌈σ²⌉⌋ + 1 > σ.
    """
    sigma_hi = math.isqrt(_ceil_div(num, den)) + 1
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
        ln_hi = _ln_bounds(x.numerator, x.denominator, 32)[1]
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
        step_lo, step_hi = _exp_neg_bounds(den, num, work)  # e^{−2λ}
        r_lo, r_hi = _exp_neg_bounds((2 * start + 1) * den, 2 * num, work)  # e^{−(2s+1)λ}
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
            u_lo, u_hi = (u_lo * r_lo) >> work, _ceil_div(u_hi * r_hi, one)
            r_lo, r_hi = (r_lo * step_lo) >> work, _ceil_div(r_hi * step_hi, one)
        # the tail from n_top on (n_top ≥ 1, so every weight there is 2) lies in [u_N, u_N·F(N)]
        factor = _gaussian_tail_factor(num, den, n_top)
        total_lo = a_lo + 2 * u_lo
        total_hi = a_hi + 2 * _ceil_div(u_hi * factor.numerator, factor.denominator)
        out = []
        for p_lo, p_hi in partial:  # R_j = total − A_j for the lower and the upper sums alike
            out.append(((p_lo << prec) // (p_lo + total_hi - p_hi), _ceil_div(p_hi << prec, p_hi + total_lo - p_lo)))
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


def magnitude_histogram(rng: np.random.Generator, counts, law: MagnitudeLaw):
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


def signed_histogram(rng: np.random.Generator, counts, law: MagnitudeLaw):
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


def discrete_laplace_histogram(rng: np.random.Generator, counts, num: int, den: int):
    """Histogram of ``counts[g]`` i.i.d. draws of the discrete Laplace P(k) ∝ exp(−|k|·den/num)
    (:func:`signed_histogram` of :class:`DiscreteLaplaceLaw`): (group, value, multiplicity)."""
    return signed_histogram(rng, counts, DiscreteLaplaceLaw(int(num), int(den)))


def discrete_gaussian_histogram(rng: np.random.Generator, counts, sigma2: Fraction):
    """Histogram of ``counts[g]`` i.i.d. draws of the discrete Gaussian P(k) ∝ exp(−k²/(2σ²)) at the
    exact rational σ² = ``sigma2`` (:func:`signed_histogram` of :class:`DiscreteGaussianLaw`)."""
    sigma2 = Fraction(sigma2)
    return signed_histogram(rng, counts, DiscreteGaussianLaw(sigma2.numerator, sigma2.denominator))
