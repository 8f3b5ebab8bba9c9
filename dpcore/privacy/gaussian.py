"""The discrete Gaussian mechanism, sampled exactly from integer randomness (docs/mechanisms.md).

``DiscreteGaussian(sigma)`` adds noise Z with P(Z = k) ∝ exp(−k²/(2σ²)) on the integers
(Canonne, Kamath & Steinke 2020, "The Discrete Gaussian for Differential Privacy").

Privacy: for an integer-valued query q (one or many coordinates) with L2 sensitivity Δ₂,
‖q(D) − q(D′)‖₂ ≤ Δ₂ for neighbours, releasing q(D) + Z with independent Z per coordinate is
ρ-zCDP with ρ = Δ₂²/(2σ²) (Canonne, Kamath & Steinke 2020, Theorem 4 and its multivariate
form: the Rényi divergence of one coordinate shifted by an integer μ is at most αμ²/(2σ²),
and divergences of independent coordinates add). ``rho`` is that map; its (ε, δ) statement
comes from ``dpcore.privacy.zcdp.epsilon_of_rho``. Definitions: docs/privacy-model.md.

Exact sampler (their Algorithm 3, vectorised): with t = ⌊σ⌋ + 1, draw Y from the discrete
Laplace of scale t (the exact integer sampler of ``dpcore.privacy.exact_laplace``) and accept it with
probability exp(−(|Y| − σ²/t)²/(2σ²)), an exact Bernoulli(exp(−γ)) for rational γ
(``dpcore.privacy.exact_laplace.bernoulli_exp``); rejected draws are redrawn in the next round.
Accepting Y = y has probability ∝ exp(−|y|/t) · exp(−(|y| − σ²/t)²/(2σ²)) ∝ exp(−y²/(2σ²)):
the cross terms cancel, so the accepted draws follow the discrete Gaussian exactly.

σ² is represented exactly as the rational t·p/q (q a power of two, p = ⌈σ²q/t⌉), that is σ²
rounded UP by less than t/q, a relative 1/(p − 1): below 2⁻²⁵ for σ ≥ 1 and below 2⁻¹⁸ for
σ ≥ 2⁻⁸ (the smallest σ accepted). That is more noise, so the privacy map computed at the
requested σ still holds. Then σ²/t = p/q and the acceptance exponent is
γ = (|Y|q − p)²/(2tpq), a ratio of integers: the denominator stays below 2⁵⁶ and the numerator
fits int64 while | |Y|q − p | < 2³¹ (|Y| up to at least 11σ when σ ≥ 1); the rarer larger |Y|
are handled with Python integers. Only integer comparisons touch the randomness.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar, cast

import numpy as np
from numpy.typing import ArrayLike

from dpcore.errors import OptionError
from dpcore.privacy.budget import Budget, Rho
from dpcore.privacy.exact_histogram import DiscreteGaussianLaw, signed_histogram
from dpcore.privacy.exact_laplace import bernoulli_exp, discrete_laplace_exact
from dpcore.privacy.mechanisms import check_rng, nonnegative_finite, positive_finite
from dpcore.privacy.stability import Norm, Sensitivity
from dpcore.privacy.zcdp import check_delta, check_rho, epsilon_of_rho, rho_of_epsilon_delta

__all__ = ["DiscreteGaussian", "MAX_SIGMA", "MIN_SIGMA"]

#: Largest σ the exact sampler supports: the acceptance test's denominator 2tpq must stay
#: below 2⁵⁶ with q ≥ 2. Larger σ means ρ < 10⁻¹⁶ per unit of sensitivity: pure noise.
MAX_SIGMA = 2.0**26
#: Smallest σ: below it the noise is almost always 0 and ρ = Δ²/(2σ²) exceeds 30,000 at Δ = 1.
MIN_SIGMA = 2.0**-8
#: Bound on the denominator 2tpq of the acceptance exponent. ``bernoulli_exp`` draws integers
#: below den·k at its k-th step; den ≤ 2⁵⁶ keeps den·k in int64 for k ≤ 127 (reaching step k
#: has probability at most 1/(k − 1)!; numpy would raise, not round, beyond).
_DEN_LIMIT = 2**56
#: p < 2³¹: then |Y|q − p stays below 2³¹ in magnitude for every |Y| ≤ (2³¹ − 1 + p)/q.
_P_LIMIT = 2**31 - 1
#: |Y|q − p is squared in int64 only while it stays below this; larger values use Python ints.
_FAST_LIMIT = 2**31 - 1


def _rational_sigma2(sigma: float) -> tuple[int, int, int]:
    """(t, p, q): σ² rounded up to t·p/q with t = ⌊σ⌋ + 1, q the largest power of two with
    2tpq ≤ 2⁵⁶ and p = ⌈σ²q/t⌉ < 2³¹."""
    s2 = Fraction(sigma) ** 2  # exact: a float is a dyadic rational
    t = math.floor(sigma) + 1
    for j in range(90, 0, -1):
        q = 1 << j
        p = -((-s2.numerator * q) // (s2.denominator * t))  # ceil(σ² q / t)
        if 2 * t * p * q <= _DEN_LIMIT and p <= _P_LIMIT:
            return t, p, q
    raise OptionError(f"sigma {sigma:.3g} is larger than the exact discrete Gaussian sampler supports "
                      f"({MAX_SIGMA:.3g}): the budget is too small to give a useful release")


def _accept(rng: np.random.Generator, y: np.ndarray, t: int, p: int, q: int) -> np.ndarray:
    """Exact Bernoulli(exp(−(|y| − p/q)²/(2tp/q))) per entry: CKS Algorithm 3's acceptance test."""
    a = np.abs(y)
    den = 2 * t * p * q
    fast = a <= (_FAST_LIMIT + p) // q  # then | |y|q − p | < 2³¹ and its square fits int64
    out = np.empty(a.shape, dtype=bool)
    m = a[fast] * q - p
    out[fast] = bernoulli_exp(rng, m * m, den)
    slow = np.flatnonzero(~fast)
    if slow.size:
        # exp(−γ) = exp(−⌊γ⌋) · exp(−(γ − ⌊γ⌋)): two independent exact Bernoullis; the whole part
        # and the numerator of the fraction come from Python integers (no overflow).
        whole, frac = zip(*(divmod((int(v) * q - p) ** 2, den) for v in a[slow]))
        out[slow] = (bernoulli_exp(rng, np.array(whole, dtype=np.int64), 1)
                     & bernoulli_exp(rng, np.array(frac, dtype=np.int64), den))
    return out


def _discrete_gaussian_exact(rng: np.random.Generator, t: int, p: int, q: int,
                             size: int | tuple[int, ...] | None) -> np.ndarray:
    """Exact discrete Gaussian of variance parameter σ² = tp/q, by rejection from the discrete
    Laplace of scale t (an integer, so that sampler draws at exactly t), in vectorised rounds."""
    shape = () if size is None else tuple(np.atleast_1d(size).astype(int))
    total = int(np.prod(shape, dtype=np.int64))
    out = np.empty(total, dtype=np.int64)
    pending = np.arange(total)
    while pending.size:
        y = np.atleast_1d(discrete_laplace_exact(rng, float(t), pending.size))
        ok = _accept(rng, y, t, p, q)
        out[pending[ok]] = y[ok]
        pending = pending[~ok]
    return out.reshape(shape) if shape else out[0]


def _theta_terms(s2: float, power: int) -> float:
    """Σ_{j∈ℤ} j^power · exp(−j²/(2σ²)) / √(2πσ²), power 0 or 2, by Poisson summation:
    Σ_k exp(−2π²σ²k²) for power 0 and σ² Σ_k (1 − 4π²σ²k²) exp(−2π²σ²k²) for power 2, exact
    identities. Summing stops at the first term below 10⁻¹⁷ of the running total; used for
    σ ≥ 2, where each later term is smaller than the one before by a factor below
    4e^{−6π²σ²} < 10⁻¹⁰², so everything left out is below 2·10⁻¹⁷ of the sum."""
    c = 2.0 * math.pi**2 * s2
    total, k = 1.0, 1
    while True:
        w = math.exp(-c * k * k)
        term = 2.0 * w * (1.0 if power == 0 else 1.0 - 2.0 * c * k * k)
        if w == 0.0 or abs(term) < 1e-17 * abs(total):
            break
        total += term
        k += 1
    return total * (1.0 if power == 0 else s2)


def _direct_terms(s2: float, power: int) -> float:
    """The same sum computed directly over |j| ≤ J, J with J²/(2σ²) ≥ 760: every term left out
    is below e⁻⁷⁶⁰ < 2⁻¹⁰⁷⁴ of the j = 0 term and they decrease geometrically."""
    J = math.ceil(math.sqrt(2.0 * s2 * 760.0)) + 1
    j = np.arange(-J, J + 1, dtype=np.float64)
    w = np.exp(-j * j / (2.0 * s2))
    return float(np.sum(w * j**power)) / math.sqrt(2.0 * math.pi * s2)


def _gaussian_sum(s2: float, power: int) -> float:
    # the direct sum costs O(σ) terms and is the one to trust at small σ; the dual sum needs
    # O(1/σ) terms and is exact in floating point for σ ≥ 1 after one or two terms
    return _direct_terms(s2, power) if s2 < 4.0 else _theta_terms(s2, power)


@dataclass(frozen=True)
class DiscreteGaussian:
    """Discrete Gaussian noise on the integers: P(k) = exp(−k²/(2σ²)) / Σ_j exp(−j²/(2σ²)).

    Privacy: for integer-valued q with L2 sensitivity Δ₂, releasing q(D) + Z is ρ-zCDP with
    ρ = Δ₂²/(2σ²) (Canonne, Kamath & Steinke 2020, Thm 4); ``rho`` is that map and ``epsilon``
    its (ε, δ) statement. The sampler is exact with unbounded support (module docstring); it
    draws at σ² rounded up to the rational ``sampler_sigma2``, which only adds privacy. Proofs
    and the sampler's correctness: docs/mechanisms.md; zCDP: docs/privacy-model.md.
    """

    sigma: float
    name: ClassVar[str] = "discrete_gaussian"
    #: the norm of the sensitivity its map takes
    norm: ClassVar[Norm] = "l2"

    def __post_init__(self) -> None:
        s = positive_finite("sigma", self.sigma)
        if s > MAX_SIGMA:
            raise OptionError(f"noise sigma {s:.3g} is larger than the exact discrete Gaussian sampler supports "
                              f"({MAX_SIGMA:.3g}): the budget is too small to give a useful release; use a larger rho")
        if s < MIN_SIGMA:
            raise OptionError(f"noise sigma {s:.3g} is below {MIN_SIGMA:.3g}: that is no privacy at all "
                              f"(rho = {0.5 / s**2:.3g} per unit of sensitivity); use a smaller rho")
        object.__setattr__(self, "sigma", s)

    @classmethod
    def calibrate_rho(cls, rho: float, l2_sensitivity: float = 1.0) -> DiscreteGaussian:
        """The σ = Δ₂/√(2ρ) whose map gives at most ``rho`` at ``l2_sensitivity`` (σ is raised
        by ulps until ``rho(Δ₂) ≤ ρ`` holds in floating point too)."""
        r = check_rho(rho)
        if r == 0:
            raise OptionError("rho must be > 0 to calibrate noise (rho = 0 would need infinite noise)")
        sens = positive_finite("l2_sensitivity", l2_sensitivity)
        sigma = sens / math.sqrt(2.0 * r)
        if not sigma <= MAX_SIGMA:
            raise OptionError(f"rho {r:.3g} is too small: the noise sigma {sigma:.3g} is beyond what the exact "
                              f"sampler supports; use rho ≥ {sens**2 / (2 * MAX_SIGMA**2):.3g}")
        mech = cls(sigma)
        while mech.rho(sens) > r:
            mech = cls(math.nextafter(mech.sigma, math.inf))
        return mech

    @classmethod
    def calibrate(cls, epsilon: float, l2_sensitivity: float = 1.0, *, delta: float) -> DiscreteGaussian:
        """Noise for one release that is (ε, δ)-DP through zCDP: the largest ρ whose conversion
        (``dpcore.privacy.zcdp.rho_of_epsilon_delta``) does not exceed (ε, δ), then
        :meth:`calibrate_rho`. ``delta`` is keyword-only so a pure-ε call cannot land here."""
        return cls.calibrate_rho(rho_of_epsilon_delta(epsilon, check_delta(delta)), l2_sensitivity)

    @property
    def scale(self) -> float:
        """σ: what the ledger records as this mechanism's scale."""
        return self.sigma

    def rho(self, l2_sensitivity: float = 1.0) -> float:
        """ρ = Δ₂²/(2σ²): the zCDP of q(D) + Z for q of L2 sensitivity Δ₂ (at the requested σ;
        the sampler's σ is larger, so the true ρ is at most this)."""
        sens = nonnegative_finite("l2_sensitivity", l2_sensitivity)
        return sens * sens / (2.0 * self.sigma * self.sigma)

    def epsilon(self, l2_sensitivity: float = 1.0, *, delta: float) -> float:
        """The ε of the (ε, δ)-DP statement of :meth:`rho` (``dpcore.privacy.zcdp.epsilon_of_rho``)."""
        return epsilon_of_rho(self.rho(l2_sensitivity), delta)

    def cost(self, sensitivity: Sensitivity, unit: str) -> Budget:
        """The privacy map: ρ = Δ₂²/(2σ²). There is no pure-ε map: in a ledger kept in ε it is refused."""
        if not isinstance(sensitivity, Sensitivity) or sensitivity.norm != self.norm:
            raise ValueError(f"{self.name}'s privacy map takes an L2 Sensitivity, not {sensitivity!r}")
        if unit != Rho.unit:
            raise ValueError(f"{self.name} has no pure ε map; it needs a ledger kept in ρ")
        return Rho(self.rho(sensitivity.value))

    @cached_property
    def _rational(self) -> tuple[int, int, int]:
        return _rational_sigma2(self.sigma)

    @property
    def sampler_sigma2(self) -> Fraction:
        """The σ² the sampler draws at, exactly: σ² rounded up to t·p/q (module docstring)."""
        t, p, q = self._rational
        return Fraction(t * p, q)

    @property
    def _s2(self) -> float:
        return float(self.sampler_sigma2)

    @property
    def variance(self) -> float:
        """Var Z = Σ k² P(k) < σ² at the sampler's σ² (Poisson summation, see ``_theta_terms``;
        a direct sum for σ < 2). Below σ² because the dual series weights its terms by
        1 − 4π²σ²k² < 1; the gap is about 8π²σ⁴e^{−2π²σ²}: 2·10⁻⁷σ² at σ = 1, below 10⁻¹⁵σ²
        from σ = 1.5 (and rounding may then put the float a few ulps above σ²)."""
        return _gaussian_sum(self._s2, 2) / _gaussian_sum(self._s2, 0)

    def sample(self, rng: np.random.Generator, size: int | tuple[int, ...] | None = None) -> np.ndarray:
        """Integer noise (int64), exact (module docstring)."""
        return _discrete_gaussian_exact(check_rng(rng), *self._rational, size)

    @cached_property
    def _law(self) -> DiscreteGaussianLaw:
        s2 = self.sampler_sigma2
        return DiscreteGaussianLaw(s2.numerator, s2.denominator)

    def histogram_cutoff(self, n_max: int) -> int:
        """T of :meth:`sample_histogram`: its first pass draws the values in [−T, T], T the first
        with n_max·P(|Z| > T) ≤ 1 by a rigorous tail bound at the sampler's own σ², decided in
        integer arithmetic (:meth:`dpcore.privacy.exact_histogram.DiscreteGaussianLaw.cutoff`)."""
        return self._law.cutoff(0, max(1, int(n_max))) - 1

    def sample_histogram(self, counts: ArrayLike,
                         rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Histogram of ``counts[g]`` i.i.d. draws per group g, as (group, value, multiplicity) int64 arrays.

        Exact: for each group the Multinomial(counts[g], p) over ℤ, p the discrete Gaussian at the
        sampler's own σ² (:attr:`sampler_sigma2`, the one :meth:`sample` draws at), drawn by
        :func:`dpcore.privacy.exact_histogram.signed_histogram` of
        :class:`~dpcore.privacy.exact_histogram.DiscreteGaussianLaw` with integer randomness only
        (counts up to 2^63 − 1). Entries of multiplicity 0 are left out; sorted by group, then value.

        Privacy: this is the law of the multiset of ``counts[g]`` i.i.d. draws of :meth:`sample`,
        so noising identical cells through it is the same mechanism as noising each cell with
        :meth:`sample`: ρ = Δ₂²/(2σ²)-zCDP, for the implementation itself (proof:
        docs/sparse-leaves.md, "The discrete Gaussian"). Ledger charges that use it name it
        (:data:`dpcore.privacy.mechanisms.HISTOGRAM_SAMPLER`).
        """
        return signed_histogram(check_rng(rng), np.asarray(counts, dtype=np.int64), self._law)

    def release(self, values: ArrayLike, rng: np.random.Generator) -> np.ndarray:
        """values + noise: int64 for integer input, float64 for integral float input."""
        v = np.asarray(values)
        if np.issubdtype(v.dtype, np.integer):
            return cast(np.ndarray, v.astype(np.int64) + self.sample(rng, v.shape))
        v = v.astype(np.float64)
        # Integer noise on a fractional value would publish the fraction exactly.
        if not np.all(np.isfinite(v) & (v == np.rint(v))):
            raise OptionError("the discrete Gaussian needs integer-valued input (counts); round or scale "
                              "fractional values onto an integer grid first")
        return cast(np.ndarray, v + self.sample(rng, v.shape))

    def pmf(self, k: ArrayLike) -> np.ndarray:
        """P(Z = k) at the sampler's σ² (0 off the integers)."""
        k = np.asarray(k, dtype=np.float64)
        s2 = self._s2
        p = np.exp(-k * k / (2.0 * s2)) / (math.sqrt(2.0 * math.pi * s2) * _gaussian_sum(s2, 0))
        return np.where(k == np.rint(k), p, 0.0)

    def log_pmf(self, k: ArrayLike) -> np.ndarray:
        """log P(Z = k) at the sampler's σ² (−inf off the integers); finite far into the tails,
        where the pmf itself underflows."""
        k = np.asarray(k, dtype=np.float64)
        s2 = self._s2
        lp = -k * k / (2.0 * s2) - math.log(math.sqrt(2.0 * math.pi * s2) * _gaussian_sum(s2, 0))
        return np.where(k == np.rint(k), lp, -np.inf)

    def describe(self) -> dict[str, Any]:
        return {"mechanism": self.name, "sigma": self.sigma, "sampler_sigma2": str(self.sampler_sigma2),
                "variance": self.variance}
