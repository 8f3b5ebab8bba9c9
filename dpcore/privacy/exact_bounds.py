"""Rigorous integer bounds for the exact samplers: e^{−x}, ln, atanh, log n! and uniform integers.

Every function here returns integer bounds (lo, hi) of 2^prec · value, lo ≤ 2^prec · value ≤ hi,
computed with integer (and :class:`fractions.Fraction`) arithmetic only, so a sampler can compare
uniform random bits with a number it knows only through such bounds, refining the precision
until the comparison is decided (:mod:`dpcore.privacy.exact_binomial`,
:mod:`dpcore.privacy.exact_histogram`). Proofs: docs/sparse-leaves.md, "The exact histogram sampler".

Privacy: no randomness is drawn here except by :func:`uniform_below` (uniform integers from the
passed-in generator's bits); these are the exact decisions the samplers' guarantees rest on.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache

import numpy as np

__all__ = ["ceil_div", "exp_neg_bounds", "ln_bounds", "log_factorial_bounds", "uniform_below"]


# ============================================================================ rigorous integers
# Every function here returns integer bounds (lo, hi) of 2^prec · value: lo ≤ 2^prec · value ≤ hi.

def ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


def exp_neg_bounds(num: int, den: int, prec: int) -> tuple[int, int]:
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
        hi = ceil_div(hi * hi, 1 << work)
    shift = work - prec
    return lo >> shift, ceil_div(hi, 1 << shift)


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


def ln_bounds(n: int, d: int, prec: int) -> tuple[int, int]:
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
    return lo >> shift, ceil_div(hi, 1 << shift)


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


def log_factorial_bounds(n: int, prec: int) -> tuple[int, int]:
    """Bounds of 2^prec · (ln n! − ½ ln 2π) for an integer n ≥ 0.

    n ≥ 64: Stirling, (n + ½) ln n − n + Σ_{k≤K} B_2k / (2k(2k−1) n^{2k−1}), whose remainder for
    real n > 0 is bounded by the first omitted term (DLMF 5.11.ii). Smaller n: the value at
    n0 = max(64, prec/8) minus ln(n0!/n!) (an exact integer), so the ½ ln 2π left out always
    cancels in ratios.
    """
    n0 = max(_STIRLING_FROM, prec // 8 + 1)
    if n < n0:
        lo, hi = log_factorial_bounds(n0, prec)
        tlo, thi = ln_bounds(math.factorial(n0) // math.factorial(n), 1, prec)
        return lo - thi, hi - tlo
    extra = n.bit_length() + 2
    llo, lhi = ln_bounds(n, 1, prec + extra)
    lo = ((2 * n + 1) * llo) >> (extra + 1)
    hi = ceil_div((2 * n + 1) * lhi, 1 << (extra + 1))
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


def uniform_below(rng: np.random.Generator, known: int, known_bits: int,
                  bounds: Callable[[int], tuple[int, int]]) -> bool:
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
