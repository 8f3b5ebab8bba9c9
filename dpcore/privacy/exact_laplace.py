"""The exact integer samplers under the discrete Laplace: Bernoulli(exp(−γ)), the geometric
and the discrete Laplace itself (Canonne, Kamath & Steinke 2020, Algorithms 1 and 2).

Only integer randomness from a passed-in ``numpy.random.Generator`` and integer arithmetic take
part in any decision; a scale is rounded UP to a dyadic rational, which only adds privacy.
:class:`dpcore.privacy.mechanisms.DiscreteLaplace` and ``Laplace`` draw through
:func:`discrete_laplace_exact` and the discrete Gaussian through :func:`bernoulli_exp`
(:mod:`dpcore.privacy.gaussian`). Proofs: docs/mechanisms.md.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

__all__ = ["MAX_SCALE", "dyadic_scale", "bernoulli_exp", "discrete_laplace_exact"]


#: Largest noise scale (in integer units) the exact discrete sampler supports. Larger
#: scales mean an epsilon so small that the release would be pure noise; they are
#: refused rather than drawn from a saturated sampler.
MAX_SCALE = 2.0**48
#: Bits of the dyadic denominator used to represent a scale exactly (rounded up).
_SCALE_BITS = 30


def dyadic_scale(scale: float) -> tuple[int, int]:
    """(num, den): the smallest num/den >= scale with den a power of two, num ~ 2^30.

    The sampler draws from the discrete Laplace of scale num/den exactly; since
    num/den >= scale, its epsilon is at most the one claimed for ``scale``.
    """
    f = Fraction(scale)  # exact: a float is a dyadic rational
    exp = math.frexp(scale)[1]
    den = 1 << max(0, min(52, _SCALE_BITS - exp))
    num = max(1, -((-f.numerator * den) // f.denominator))  # ceil(scale * den)
    return num, den


def bernoulli_exp(rng: np.random.Generator, num: np.ndarray, den: int) -> np.ndarray:
    """Exact Bernoulli(exp(-num/den)) per entry, for integers num >= 0 and one den >= 1.

    Canonne, Kamath & Steinke (2020), Algorithm 1: for gamma in [0, 1], draw
    A_k ~ Bernoulli(gamma/k) for k = 1, 2, ... until the first A_k = 0; the answer is
    whether that k is odd (P = exp(-gamma)). For gamma > 1, exp(-gamma) is the product
    of floor(gamma) Bernoulli(exp(-1)) draws and one for the fractional part.
    Bernoulli(a/b) is ``integers(0, b) < a``: exact integer comparisons only.
    """
    num = np.asarray(num, dtype=np.int64)
    den = int(den)
    whole, frac = np.divmod(num, den)
    out = np.ones(num.shape, dtype=bool)
    # integer part: each unit of gamma is one Bernoulli(exp(-1)) that must succeed
    todo = np.flatnonzero(whole > 0)
    left = whole[todo]
    while todo.size:
        ok = _bernoulli_exp_unit(rng, np.ones(todo.size, np.int64), 1)
        out[todo[~ok]] = False
        keep = ok & (left > 1)
        todo, left = todo[keep], left[keep] - 1
    idx = np.flatnonzero(out & (frac > 0))
    if idx.size:
        out[idx] = _bernoulli_exp_unit(rng, frac[idx], den)
    return out


def _bernoulli_exp_unit(rng: np.random.Generator, num: np.ndarray, den: int) -> np.ndarray:
    """Exact Bernoulli(exp(-num/den)) for 0 <= num <= den (Algorithm 1's inner loop).

    Every entry still running at step k has seen A_1 = ... = A_{k-1} = 1, so k is one
    number per step, not per entry.
    """
    odd = np.ones(num.shape, dtype=bool)  # K = 1 while the first A_1 is pending
    active = np.flatnonzero(num > 0)
    k = 1
    while active.size:
        hit = rng.integers(0, den * k, active.size) < num[active]  # A_k ~ Bernoulli(gamma/k)
        active = active[hit]
        k += 1
        odd[active] = (k % 2) == 1
    return odd


def _geometric_exp1(rng: np.random.Generator, size: int) -> np.ndarray:
    """Number of successes before the first failure of Bernoulli(exp(-1)): Geometric(1 - 1/e)."""
    v = np.zeros(size, dtype=np.int64)
    active = np.arange(size)
    while active.size:
        ok = _bernoulli_exp_unit(rng, np.ones(active.size, np.int64), 1)
        active = active[ok]
        v[active] += 1
    return v


def _geometric_round(rng: np.random.Generator, num: int, den: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """One rejection round of Canonne, Kamath & Steinke's geometric (their Alg. 2 without the
    sign): of m proposals, which were accepted and, for those, Y with P(Y = y) ∝ exp(−y·den/num)
    on {0, 1, ...}, exactly (integer arithmetic only)."""
    u = rng.integers(0, num, m)
    keep = bernoulli_exp(rng, u, num)
    return keep, (u[keep] + num * _geometric_exp1(rng, int(keep.sum()))) // den


def discrete_laplace_exact(rng: np.random.Generator, scale: float, size: int | tuple[int, ...] | None) -> np.ndarray:
    """Exact discrete Laplace of scale >= ``scale`` (Canonne, Kamath & Steinke 2020, Alg. 2).

    With scale t/s (here num/den): U ~ U{0..t-1}, accept with prob exp(-U/t);
    V ~ Geometric(1 - 1/e); X = U + tV is then geometric with parameter 1 - exp(-1/t);
    Y = floor(X/s) is geometric with parameter 1 - exp(-s/t); a random sign, rejecting
    "-0", gives P(Z = z) proportional to exp(-|z| s/t). Vectorised over all draws with
    rejection rounds; only integer arithmetic touches the randomness.
    """
    num, den = dyadic_scale(scale)
    shape = () if size is None else tuple(np.atleast_1d(size).astype(int))
    total = int(np.prod(shape, dtype=np.int64))
    out = np.empty(total, dtype=np.int64)
    pending = np.arange(total)
    while pending.size:
        keep, y = _geometric_round(rng, num, den, pending.size)
        idx = pending[keep]
        neg = rng.integers(0, 2, idx.size).astype(bool)
        ok = ~(neg & (y == 0))
        out[idx[ok]] = np.where(neg[ok], -y[ok], y[ok])
        pending = np.concatenate([pending[~keep], idx[~ok]])
    return out.reshape(shape) if shape else out[0]
