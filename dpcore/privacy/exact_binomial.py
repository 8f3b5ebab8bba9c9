"""Binomial(n, ½) drawn exactly for every entry of an int64 array (n < 2^63), integer randomness only.

A popcount of n random bits for n < 4096, else rejection from a table envelope whose acceptance
is decided by integer bounds on the binomial ratio (Stirling's series with its remainder,
:mod:`dpcore.privacy.exact_bounds`), or, in the rare undecided case, by big-integer arithmetic at
growing precision. This is the split step of the exact histogram sampler
(:mod:`dpcore.privacy.exact_histogram`). Proofs:
docs/sparse-leaves.md, "The exact histogram sampler".

Privacy: an exact sampler of the Binomial(n, ½) law from a passed-in ``numpy.random.Generator``;
no floating-point number takes part in any decision.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import cast

import numpy as np
from numpy.typing import ArrayLike

from dpcore.privacy.exact_bounds import ceil_div, exp_neg_bounds, ln_bounds, log_factorial_bounds, uniform_below

__all__ = ["binomial_half"]

_U64 = np.uint64
_ALL_ONES = np.uint64(0xFFFF_FFFF_FFFF_FFFF)


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
    weights: tuple[int, ...]  # W_0 .. W_{J_max-1}
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
    return cast(np.ndarray, _TABLE_BY_BITS[bw])


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
    step = exp_neg_bounds((2 * lam).numerator, (2 * lam).denominator, work)[1]  # e^{−2λ}
    ratio = exp_neg_bounds(lam.numerator, lam.denominator, work)[1]  # e^{−λ}: J = 1
    value, out = one, []
    for _ in range(count):
        out.append(ceil_div(value, 1 << 32))
        value = ceil_div(value * ratio, one)
        ratio = ceil_div(ratio * step, one)
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
    tail_num = exp_neg_bounds((j_max * kappa).numerator, (j_max * kappa).denominator, P)[1]
    tail_den = (1 << P) - exp_neg_bounds(kappa.numerator, kappa.denominator, P)[1]
    tail_hi = ceil_div(tail_num << P, tail_den)  # ≥ 2^P Σ_{J ≥ J_max} e^{−Jκ}
    total = 1 << _WBITS
    c = (total - (total >> 12)) * (1 << P) // (sum(e_hi) + tail_hi)
    while True:
        weights = [max(1, ceil_div(c * e, 1 << P)) for e in e_hi]
        w_tail = max(1, ceil_div(c * tail_hi, 1 << P))
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
            omega.append(((xn << _F) // ld_ - (1 << (_F - 19)) - 1, ceil_div(xn << _F, ld_)))
        elif xn <= _U_FAST * ld_:
            omega.append(ln_bounds(c, w, _F))
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
    g += 1 + ceil_div(1 << _F, 180 * h_min ** 3) + ceil_div(1 << _F, h_min)
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
def _envelopes() -> tuple[tuple[_Envelope, ...], np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                          np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    envs = tuple(_build_envelope(k, b) for k, b in _TABLE_SPECS)
    j_off = np.cumsum([0] + [e.j_max + 2 for e in envs])[:-1]  # rows per table: cells, tail, dummy
    return (envs, np.concatenate([e.threshold for e in envs]), np.concatenate([e.alias for e in envs]),
            np.concatenate([e.omega_lo for e in envs]), np.concatenate([e.omega_hi for e in envs]),
            np.concatenate([e.squeeze for e in envs]), np.concatenate([e.cap for e in envs]),
            np.array(j_off, dtype=np.int64), np.array([e.j_max for e in envs], dtype=np.int64),
            np.array([e.k for e in envs], dtype=np.int64))


@lru_cache(maxsize=1)
def _exp_tables() -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """exp(−γ) for γ = a + b/2^8 + c/2^16 + d/2^24, as four tables of 31-bit bounds."""
    steps = ((64, 1), (256, 1 << 8), (256, 1 << 16), (256, 1 << 24))
    out = []
    for size, den in steps:
        # e^{−i/den} = (e^{−1/den})^i, the powers rounded down (lower) and up (upper) at 31 + 32 bits
        work = 31 + 32
        one = 1 << work
        base_lo, base_hi = exp_neg_bounds(1, den, work)
        lo, hi, los, his = one, one, [], []
        for _ in range(size):
            los.append(lo >> 32)
            his.append(ceil_div(hi, 1 << 32))
            lo, hi = (lo * base_lo) >> work, ceil_div(hi * base_hi, one)
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

    def part(num: np.ndarray, den: np.ndarray, upper: bool) -> np.ndarray:
        q = num // den
        r = num - q * den
        b = np.maximum(_bit_length(den >> 22) + 22 - 38, 0)  # den < 2^38 after the shift
        rb, db = r >> b, den >> b
        cut = b > 0
        if upper:
            frac = (((rb + cut) << _F) + db - 1) // db
        else:
            frac = (rb << _F) // (db + cut)
        return cast(np.ndarray, (q << _F) + frac)

    return part(ylo * ylo, hhi, False), part(yhi * yhi, hlo, True)


def _gamma_bounds(u_lo: np.ndarray, u_hi: np.ndarray, h: np.ndarray, om_lo: np.ndarray,
                  om_hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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
    a = log_factorial_bounds(h + y, prec)
    b = log_factorial_bounds(h - y, prec)
    c = log_factorial_bounds(h, prec)
    return a[0] + b[0] - 2 * c[1], a[1] + b[1] - 2 * c[0]


def _accept_exact(rng: np.random.Generator, h: int, y: int, env: _Envelope, cell: int, V: int,
                  tail_geo: int | None) -> bool:
    """The exact acceptance test of one proposal: U < ρ(y)·e^{−1/h}·c / e(cell), U's first 31
    bits being V. ``tail_geo`` is G for a tail proposal (cell J = J_max + G), else None."""
    if y > h:
        return False

    def bounds(P: int) -> tuple[int, int]:
        Q = P + 24
        plo, phi = _phi_bounds(h, y, Q)
        g_lo, g_hi = plo + (1 << Q) // h, phi + ceil_div(1 << Q, h)  # + 1/h
        clo, chi = ln_bounds(env.c, 1, Q)
        g_lo -= chi
        g_hi -= clo
        if tail_geo is None:
            wlo, whi = ln_bounds(env.weights[cell], 1, Q)
            g_lo += wlo
            g_hi += whi
        else:  # e(x) = W_tail · e^{−Gκ} · (1 − e^{−κ})
            wlo, whi = ln_bounds(env.w_tail, 1, Q)
            k = tail_geo * env.kappa
            elo, ehi = exp_neg_bounds(env.kappa.numerator, env.kappa.denominator, Q + 8)
            one = 1 << (Q + 8)
            mlo = ln_bounds(one - ehi, one, Q)[0]  # ln(1 − e^{−κ}) (negative)
            mhi = ln_bounds(one - elo, one, Q)[1]
            g_lo += wlo - ceil_div(k.numerator << Q, k.denominator) + mlo
            g_hi += whi - ((k.numerator << Q) // k.denominator) + mhi
        g_lo = max(g_lo, 0)
        lo = exp_neg_bounds(g_hi, 1 << Q, P)[0]
        hi = exp_neg_bounds(g_lo, 1 << Q, P)[1]
        return lo, hi

    return uniform_below(rng, V, 31, bounds)


def _geometric_exact(rng: np.random.Generator, rate: Fraction) -> int:
    """G with P(G = g) ∝ exp(−g·rate): successes of exact Bernoulli(e^{−rate}) before a failure."""
    g = 0
    while uniform_below(rng, 0, 0, lambda P: exp_neg_bounds(rate.numerator, rate.denominator, P)):
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


def _rejection_offsets(rng: np.random.Generator, h: np.ndarray, w: np.ndarray, table: np.ndarray) -> np.ndarray:
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


def binomial_half(rng: np.random.Generator, n: ArrayLike) -> np.ndarray:
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
