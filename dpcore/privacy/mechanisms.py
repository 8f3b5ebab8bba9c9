"""Noise mechanisms: the only place in dpcore that draws privacy noise (docs/mechanisms.md).

Each mechanism is a frozen dataclass that carries
  * its privacy map (``epsilon``: the epsilon it gives a query of a given sensitivity),
  * its exact variance (used by the consistency step), and
  * samplers that take an explicit ``numpy.random.Generator`` so a seed reproduces
    a release. Global ``np.random`` state is never used.

Privacy guarantees (pure epsilon-DP, neighbours differ by one record):
  * ``DiscreteLaplace(s)`` added to an integer-valued query of L1 sensitivity D is
    (D/s)-DP: P(k)/P(k') = exp((|k'|-|k|)/s) <= exp(|k-k'|/s) by the triangle inequality
    (Ghosh, Roughgarden & Sundararajan 2009, the geometric mechanism).
  * ``Laplace(s)`` added to a real-valued query of L1 sensitivity D is (D/s)-DP by the
    same argument for densities (Dwork, McSherry, Nissim & Smith 2006).
  * ``exponential_mechanism`` with utility sensitivity D_u is epsilon-DP
    (McSherry & Talwar 2007).
  * ``GeneralizedCauchy`` is the noise for smooth-sensitivity releases (Nissim,
    Raskhodnikova & Smith 2007); see its docstring for the bound.

Every sampler here but ``GeneralizedCauchy`` (numpy's float gammas; the survey tools that
use it say so in their ledger) is exact: its output distribution is the ideal one, given uniform
random integers from the ``Generator`` (numpy's ``integers`` is exact, by rejection).

  * Discrete Laplace is sampled with integer arithmetic only (Canonne, Kamath &
    Steinke 2020, Algorithm 2, vectorised), so its support is all of Z. The scale is
    rounded UP to a dyadic rational, which only adds privacy.
  * ``Laplace`` for real-valued outputs is the floating-point-safe discretisation
    (as in OpenDP): the value is rounded to a power-of-two grid and integer discrete
    Laplace noise is added in grid units. Mironov's (2012) attack on textbook float
    samplers has nothing to work with: every output is a grid point reachable from
    every input. Rounding costs at most one grid step of sensitivity, which the
    calibration absorbs, so ``Laplace.calibrate(eps, D)`` is exactly eps-DP.
  * The exponential mechanism samples the exact softmax by rejection from uniform
    proposals, with exact Bernoulli(exp(-gamma)) draws on quantised scores.
  * ``DiscreteLaplace.sample_histogram`` draws the histogram of many i.i.d. discrete
    Laplace values (the sparse leaf layer's empty cells) exactly too, by
    :mod:`dpcore.privacy.exact_histogram` (proof: docs/sparse-leaves.md); charges that use it
    name it (:data:`HISTOGRAM_SAMPLER`).

Scales the exact samplers cannot represent (epsilon too small) are refused with an
:class:`~dpcore.errors.OptionError`, never approximated. Proofs: docs/mechanisms.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from dpcore.errors import OptionError
from dpcore.privacy.budget import Budget
from dpcore.privacy.exact_histogram import SAMPLER_NAME, DiscreteLaplaceLaw, discrete_laplace_histogram
from dpcore.privacy.exact_laplace import MAX_SCALE, bernoulli_exp, discrete_laplace_exact, dyadic_scale
from dpcore.privacy.maps import Mechanism, check_norm, pure_cost
from dpcore.privacy.stability import Norm, Sensitivity
from dpcore.privacy.zcdp import rho_of_exponential, rho_of_pure

__all__ = [
    "Mechanism",
    "pure_cost",
    "DiscreteLaplace",
    "Laplace",
    "GeneralizedCauchy",
    "ExponentialMechanism",
    "BackendUnavailableError",
    "exponential_mechanism",
    "exponential_probabilities",
    "noise_for",
    "NOISE_KINDS",
    "HISTOGRAM_SAMPLER",
    "check_rng",
    "nonnegative_finite",
]

#: Ledger sampler text of a discrete Laplace charge whose many identical cells (the empty
#: cells of a sparse leaf layer) were noised through :meth:`DiscreteLaplace.sample_histogram`.
HISTOGRAM_SAMPLER = f"exact integer sampler for non-empty cells, {SAMPLER_NAME} for the empty cells"


class BackendUnavailableError(OptionError, ImportError):
    """An optional noise backend was requested but its package is not installed."""


def positive_finite(name: str, value: float) -> float:
    """``value`` as a float, or an OptionError naming ``name`` unless it is finite and > 0."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise OptionError(f"{name} must be a finite number > 0, got {value!r}") from None
    if not (math.isfinite(x) and x > 0):
        raise OptionError(f"{name} must be a finite number > 0, got {value!r}")
    return x


def nonnegative_finite(name: str, value: float) -> float:
    """``value`` as a float if it is a finite number >= 0; an OptionError naming ``name`` otherwise."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise OptionError(f"{name} must be a finite number >= 0, got {value!r}") from None
    if not (math.isfinite(x) and x >= 0):
        raise OptionError(f"{name} must be a finite number >= 0, got {value!r}")
    return x


def check_rng(rng: object) -> np.random.Generator:
    """``rng`` if it is a ``numpy.random.Generator``; a TypeError otherwise."""
    # An int seed or the np.random module here would silently break reproducibility.
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"rng must be a numpy.random.Generator (e.g. np.random.default_rng(seed)), "
            f"got {type(rng).__name__}"
        )
    return rng


def _check_scale(scale: float, what: str = "scale") -> float:
    s = positive_finite(what, scale)
    if s > MAX_SCALE:
        raise OptionError(
            f"noise scale {s:.3g} is larger than the exact samplers support ({MAX_SCALE:.3g}): "
            "epsilon is too small to give a useful release; use a larger epsilon"
        )
    return s


def _calibrated_scale(epsilon: float, sensitivity: float, limit: float = MAX_SCALE) -> float:
    """sensitivity/epsilon, refusing an epsilon so small the samplers cannot honour it."""
    eps = positive_finite("epsilon", epsilon)
    sens = positive_finite("sensitivity", sensitivity)
    scale = sens / eps
    if not scale <= limit:
        raise OptionError(
            f"epsilon {eps:.3g} is too small: the noise scale {scale:.3g} is beyond what the exact samplers "
            f"support; use epsilon ≥ {sens / limit:.3g} (anything that small is pure noise anyway)"
        )
    return scale


@dataclass(frozen=True)
class DiscreteLaplace:
    """Two-sided geometric noise on the integers: P(k) = tanh(1/(2s)) * exp(-|k|/s).

    Privacy: for integer-valued q with |q(D) - q(D')|_1 <= D, releasing q(D) + Z is
    (D/s)-DP (Ghosh, Roughgarden & Sundararajan 2009); ``epsilon`` is that exact map.
    The sampler is exact with unbounded support (module docstring); proof and the
    sampler's correctness: docs/mechanisms.md.
    """

    scale: float
    name: ClassVar[str] = "discrete_laplace"
    #: the norm of the sensitivity its map takes
    norm: ClassVar[Norm] = "l1"

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", _check_scale(self.scale))

    @classmethod
    def calibrate(cls, epsilon: float, sensitivity: float = 1.0) -> DiscreteLaplace:
        return cls(_calibrated_scale(epsilon, sensitivity))

    def epsilon(self, sensitivity: float = 1.0) -> float:
        return nonnegative_finite("sensitivity", sensitivity) / self.scale

    def cost(self, sensitivity: Sensitivity, unit: str) -> Budget:
        """The privacy map: ε = Δ₁/s, or its zCDP cost ε²/2."""
        return pure_cost(self.epsilon(check_norm(self.name, self.norm, sensitivity)), unit)

    def rho(self, sensitivity: float = 1.0) -> float:
        """Its zCDP cost: an ε-DP mechanism is (ε²/2)-zCDP (Bun & Steinke 2016, Prop. 1.4)."""
        return rho_of_pure(self.epsilon(sensitivity))

    @property
    def variance(self) -> float:
        # 2a/(1-a)^2 with a = e^{-1/s}; expm1 keeps 1-a accurate for large s.
        one_minus_a = -math.expm1(-1.0 / self.scale)
        return 2.0 * math.exp(-1.0 / self.scale) / one_minus_a**2

    def sample(self, rng: np.random.Generator, size: int | tuple[int, ...] | None = None,
               backend: str = "numpy") -> np.ndarray:
        """Integer noise (int64), exact. ``backend="opendp"`` uses OpenDP's sampler instead;
        that one draws from OS randomness, so ``rng`` does not reproduce it."""
        if backend == "opendp":
            return _opendp_discrete_laplace(self.scale, size)
        if backend != "numpy":
            raise OptionError(f"unknown noise backend {backend!r}; use 'numpy' or 'opendp'")
        return discrete_laplace_exact(check_rng(rng), self.scale, size)

    def release(self, values: ArrayLike, rng: np.random.Generator, backend: str = "numpy") -> np.ndarray:
        """values + noise: int64 for integer input, float64 for integral float input."""
        v = np.asarray(values)
        if np.issubdtype(v.dtype, np.integer):
            return cast(np.ndarray, v.astype(np.int64) + self.sample(rng, v.shape, backend=backend))
        v = v.astype(np.float64)
        # Integer noise on a fractional value would publish the fraction exactly.
        if not np.all(np.isfinite(v) & (v == np.rint(v))):
            raise OptionError(
                "discrete Laplace needs integer-valued input (counts); use the 'laplace' "
                "noise kind for fractional values such as weighted counts"
            )
        return cast(np.ndarray, v + self.sample(rng, v.shape, backend=backend))

    def pmf(self, k: ArrayLike) -> np.ndarray:
        k = np.asarray(k, dtype=np.float64)
        p = math.tanh(0.5 / self.scale) * np.exp(-np.abs(k) / self.scale)
        return np.where(k == np.rint(k), p, 0.0)

    def histogram_cutoff(self, n_max: int) -> int:
        """T of :meth:`sample_histogram`: its first pass draws the values in [−T, T], T the first
        with 2·n_max·e^{−(T+1)/s} ≤ 1 at the sampler's own dyadic scale s (so n_max·P(|Z| > T) ≤ 1),
        decided in integer arithmetic (:meth:`dpcore.privacy.exact_histogram.DiscreteLaplaceLaw.cutoff`)."""
        return DiscreteLaplaceLaw(*dyadic_scale(self.scale)).cutoff(0, max(1, int(n_max))) - 1

    def sample_histogram(self, counts: ArrayLike,
                         rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Histogram of ``counts[g]`` i.i.d. draws per group g, as (group, value, multiplicity) int64 arrays.

        Exact: for each group the Multinomial(counts[g], p) over ℤ, p the discrete Laplace law at
        the sampler's own dyadic scale num/den (the one :meth:`sample` draws from), drawn by
        :func:`dpcore.privacy.exact_histogram.discrete_laplace_histogram` with integer randomness
        only (counts up to 2^63 − 1). Entries of multiplicity 0 are left out; sorted by group, then
        value.

        Privacy: this is the law of the multiset of ``counts[g]`` i.i.d. draws of :meth:`sample`,
        so noising identical cells through it is the same mechanism as noising each cell with
        :meth:`sample`: (Δ/s)-DP for sensitivity Δ, for the implementation itself (proof:
        docs/sparse-leaves.md). Ledger charges that use it name it (:data:`HISTOGRAM_SAMPLER`).
        """
        counts = np.asarray(counts, dtype=np.int64)
        num, den = dyadic_scale(self.scale)
        return discrete_laplace_histogram(check_rng(rng), counts, num, den)

    def describe(self) -> dict[str, Any]:
        return {"mechanism": self.name, "scale": self.scale, "variance": self.variance}


def _opendp_discrete_laplace(scale: float, size: int | tuple[int, ...] | None) -> np.ndarray:
    try:
        import opendp.prelude as dp
    except ImportError as exc:
        raise BackendUnavailableError(
            "noise backend 'opendp' requested but opendp is not installed: "
            "install opendp to use the audited sampler (pip install opendp)"
        ) from exc
    dp.enable_features("contrib")
    shape = () if size is None else tuple(np.atleast_1d(size).astype(int))
    n = int(np.prod(shape, dtype=np.int64))
    meas = dp.m.make_laplace(
        dp.vector_domain(dp.atom_domain(T="i64")), dp.l1_distance(T="i64"), scale=float(scale)
    )
    return np.asarray(meas([0] * n), dtype=np.int64).reshape(shape)


#: The grid of the discretised Laplace is 2^-GRID_BITS of the sensitivity (rounded down
#: to a power of two): rounding then adds at most 2^-GRID_BITS to the sensitivity.
GRID_BITS = 16


def _grid_for(sensitivity: float) -> float:
    """The power of two g <= sensitivity * 2^-GRID_BITS."""
    return math.ldexp(1.0, math.frexp(sensitivity)[1] - 1 - GRID_BITS)


@dataclass(frozen=True)
class Laplace:
    """Laplace noise for real-valued outputs, made floating-point safe by discretisation.

    ``release(x)`` returns g * (round(x/g) + Z), Z ~ DiscreteLaplace(scale/g), with g a
    power of two (``grid``). The noise is the discretisation of Laplace(scale): variance
    g^2 Var(Z) ~ 2 scale^2, and ``pdf``/``cdf`` give the continuous law it approximates.

    Privacy: if |x(D) - x(D')| <= D then |round(x/g) - round(x'/g)| <= floor(D/g) + 1,
    so the release is ((floor(D/g) + 1) g / scale)-DP: ``epsilon(D)`` is that exact map,
    and ``calibrate(eps, D)`` chooses g and scale so that it equals eps. Outputs lie
    on the grid and every grid point has positive probability under every input, so
    there is no Mironov (2012) leak (cf. OpenDP's discretised Laplace). Proof:
    docs/mechanisms.md.
    """

    scale: float
    grid: float = 0.0  # 0: chosen from the scale (grid = scale * 2^-GRID_BITS, a power of two)
    name: ClassVar[str] = "laplace"
    norm: ClassVar[Norm] = "l1"

    def __post_init__(self) -> None:
        s = positive_finite("scale", self.scale)
        g = float(self.grid) if self.grid else _grid_for(s)
        if not (g > 0 and math.frexp(g)[0] == 0.5):
            raise OptionError(f"the Laplace grid must be a positive power of two, got {self.grid!r}")
        _check_scale(s / g, "scale (in grid steps)")
        object.__setattr__(self, "scale", s)
        object.__setattr__(self, "grid", g)

    @classmethod
    def calibrate(cls, epsilon: float, sensitivity: float = 1.0) -> Laplace:
        sens = positive_finite("sensitivity", sensitivity)
        g = _grid_for(sens)
        steps = math.floor(sens / g) + 1  # sensitivity in grid steps, rounding included
        return cls(_calibrated_scale(epsilon, steps, MAX_SCALE) * g, g)

    def epsilon(self, sensitivity: float = 1.0) -> float:
        sens = nonnegative_finite("sensitivity", sensitivity)
        if sens == 0:
            return 0.0
        return (math.floor(sens / self.grid) + 1) * self.grid / self.scale

    def rho(self, sensitivity: float = 1.0) -> float:
        """Its zCDP cost: ε²/2 of its pure ε (Bun & Steinke 2016, Prop. 1.4)."""
        return rho_of_pure(self.epsilon(sensitivity))

    def cost(self, sensitivity: Sensitivity, unit: str) -> Budget:
        """The privacy map: ε = (⌊Δ₁/g⌋ + 1)·g/s (rounding to the grid included), or its zCDP cost ε²/2."""
        return pure_cost(self.epsilon(check_norm(self.name, self.norm, sensitivity)), unit)

    @property
    def _steps(self) -> DiscreteLaplace:
        return DiscreteLaplace(self.scale / self.grid)

    @property
    def variance(self) -> float:
        return self.grid**2 * self._steps.variance

    def sample(self, rng: np.random.Generator, size: int | tuple[int, ...] | None = None) -> np.ndarray:
        return cast(np.ndarray, np.asarray(self._steps.sample(check_rng(rng), size), dtype=np.float64) * self.grid)

    def release(self, values: ArrayLike, rng: np.random.Generator) -> np.ndarray:
        v = np.asarray(values, dtype=np.float64)
        q = v / self.grid
        if not np.all(np.isfinite(q) & (np.abs(q) < 2.0**52)):
            raise OptionError(
                "a value to be released is not finite or too large for its noise grid; "
                "check the clipping bounds of the query"
            )
        z = self._steps.sample(check_rng(rng), v.shape)
        return cast(np.ndarray, (np.rint(q) + z) * self.grid)

    def pdf(self, x: ArrayLike) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        return cast(np.ndarray, np.exp(-np.abs(x) / self.scale) / (2.0 * self.scale))

    def cdf(self, x: ArrayLike) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        half_tail = 0.5 * np.exp(-np.abs(x) / self.scale)
        return cast(np.ndarray, np.where(x < 0, half_tail, 1.0 - half_tail))

    def describe(self) -> dict[str, Any]:
        return {"mechanism": self.name, "scale": self.scale, "variance": self.variance, "grid": self.grid}


@dataclass(frozen=True)
class GeneralizedCauchy:
    """Noise with density proportional to 1/(1 + |x/scale|^gamma), gamma > 1.

    Used with smooth sensitivity (Nissim, Raskhodnikova & Smith 2007; Bun & Steinke
    2019). Privacy: let S be a beta-smooth upper bound on the local sensitivity of f
    and release f(x) + (S(x)/alpha) Z with Z ~ GeneralizedCauchy(gamma, 1). This is
    eps-DP with eps = gamma*alpha + (gamma + 1)*beta (``smooth_epsilon``). Sketch:
    |d/dz log h(z)| <= gamma bounds the shift |f(x)-f(x')| <= S(x) by gamma*alpha;
    h(z)/h(e^t z) <= e^{gamma|t|} and the Jacobian e^{|t|} bound the change of scale,
    |log S(x) - log S(x')| <= beta, by (gamma + 1)*beta.

    Variance: scale^2 sin(pi/gamma)/sin(3 pi/gamma) for gamma > 3, else infinite.
    """

    gamma: float
    scale: float = 1.0
    name: ClassVar[str] = "generalized_cauchy"

    def __post_init__(self) -> None:
        g = float(self.gamma)
        if not (math.isfinite(g) and g > 1):
            raise OptionError(f"gamma must be a finite number > 1, got {self.gamma!r}")
        object.__setattr__(self, "gamma", g)
        object.__setattr__(self, "scale", positive_finite("scale", self.scale))

    def smooth_epsilon(self, alpha: float, beta: float) -> float:
        """Privacy map for noise S(x)/alpha * Z with S beta-smooth (see class docstring)."""
        a = nonnegative_finite("alpha", alpha)
        b = nonnegative_finite("beta", beta)
        return self.gamma * a + (self.gamma + 1.0) * b

    @property
    def variance(self) -> float:
        if self.gamma <= 3:
            return math.inf
        g = self.gamma
        return self.scale**2 * math.sin(math.pi / g) / math.sin(3 * math.pi / g)

    def sample(self, rng: np.random.Generator, size: int | tuple[int, ...] | None = None) -> np.ndarray:
        """X = ±scale * Y^(1/gamma), Y ~ BetaPrime(1/gamma, 1 - 1/gamma) = G_a / G_b.

        Y is formed in log space as a ratio of gammas, log G_a = log G_{a+1} - E/a with
        E ~ Exp(1): B/(1-B) with B ~ rng.beta hits B == 1.0 (Y = inf) for gamma near 1
        and B == 0.0 for large gamma, and G_a itself underflows for large gamma.
        """
        check_rng(rng)
        a, b = 1.0 / self.gamma, 1.0 - 1.0 / self.gamma
        log_ga = np.log(rng.standard_gamma(a + 1.0, size)) - rng.standard_exponential(size) / a
        log_gb = np.log(rng.standard_gamma(b + 1.0, size)) - rng.standard_exponential(size) / b
        sign = 2 * rng.integers(0, 2, size) - 1
        # For gamma very near 1 the true tail can pass 1e308; those draws become ±inf.
        with np.errstate(over="ignore"):
            return np.asarray(sign * self.scale * np.exp((log_ga - log_gb) / self.gamma))

    def release(self, values: ArrayLike, rng: np.random.Generator) -> np.ndarray:
        v = np.asarray(values, dtype=np.float64)
        return cast(np.ndarray, v + self.sample(rng, v.shape))

    def pdf(self, x: ArrayLike) -> np.ndarray:
        g = self.gamma
        z = np.abs(np.asarray(x, dtype=np.float64)) / self.scale
        norm = g * math.sin(math.pi / g) / (2.0 * math.pi * self.scale)
        return cast(np.ndarray, norm / (1.0 + z**g))

    def cdf(self, x: ArrayLike) -> np.ndarray:
        # P(|X| > x) = P(Y > y) = I_{1/(1+y)}(b, a) with y = (x/scale)^gamma; written via
        # expit so the far tail keeps full relative precision instead of rounding to 1.
        x = np.asarray(x, dtype=np.float64)
        a, b = 1.0 / self.gamma, 1.0 - 1.0 / self.gamma
        with np.errstate(divide="ignore"):
            t = special.expit(-self.gamma * np.log(np.abs(x) / self.scale))
        half_tail = 0.5 * special.betainc(b, a, t)
        return cast(np.ndarray, np.where(x < 0, half_tail, 1.0 - half_tail))

    def describe(self) -> dict[str, Any]:
        return {
            "mechanism": self.name,
            "gamma": self.gamma,
            "scale": self.scale,
            "variance": self.variance,
        }


#: Largest denominator of the quantised exponential-mechanism scores.
_EM_MAX_GRID = 2**40


def _quantised_scores(scores: ArrayLike, epsilon: float, sensitivity: float, axis: int) -> tuple[np.ndarray, int]:
    """Integer scores a_r and their denominator G with a_r/G ~ eps'*u_r/(2*sensitivity).

    a_r = floor(G * eps' * u_r / (2 * sensitivity)). Flooring moves a score by less than
    1/G, so between neighbours a_r/G moves by at most eps'/2 + 1/G; with
    eps' = eps - 2/G the softmax of a/G is exactly eps-DP (McSherry & Talwar 2007).
    G is a power of two with 2/G <= eps * 2^-20 where possible.
    """
    eps = positive_finite("epsilon", epsilon)
    delta = positive_finite("sensitivity", sensitivity)
    u = np.moveaxis(np.asarray(scores, dtype=np.float64), axis, -1)
    if u.ndim == 0 or u.shape[-1] == 0:
        raise OptionError("exponential mechanism needs at least one candidate score")
    if np.isnan(u).any() or np.isposinf(u).any():
        raise OptionError("scores must be finite, or -inf for unavailable candidates")
    top = u.max(axis=-1, keepdims=True)
    if np.isneginf(top).any():
        raise OptionError("every candidate is unavailable (all scores -inf) in some row")
    grid = min(_EM_MAX_GRID, 1 << max(1, math.ceil(math.log2(2.0**21 / eps))))
    eps_q = eps - 2.0 / grid
    if eps_q <= 0:
        raise OptionError(
            f"epsilon {eps:.3g} is too small for the exponential mechanism's exact sampler; "
            f"use epsilon ≥ {4.0 / _EM_MAX_GRID:.3g}"
        )
    # Shifting by the row max changes no probability and keeps the integers small.
    with np.errstate(invalid="ignore"):
        scaled = np.floor((u - top) * (grid * eps_q / (2.0 * delta)))
    if (scaled[np.isfinite(scaled)] < -(2.0**62)).any():
        raise OptionError("scores span too wide a range for the exponential mechanism's exact sampler")
    return scaled, grid


def exponential_mechanism(scores: ArrayLike, epsilon: float, sensitivity: float, rng: np.random.Generator,
                          axis: int = -1) -> Any:
    """Pick one index per row with P(r) proportional to exp(eps*u(r)/(2*sensitivity)).

    Privacy: eps-DP when every score changes by at most ``sensitivity`` between
    neighbours (McSherry & Talwar 2007). Scores of -inf mark unavailable candidates;
    which ones are unavailable must not depend on the data.

    Sampling is exact (docs/mechanisms.md): scores are quantised (``_quantised_scores``),
    then each row proposes candidates uniformly among its available ones and accepts
    candidate r with probability exp(-(a_max - a_r)/G), an exact Bernoulli; the first
    acceptance is the output. Rejection sampling from the uniform proposal gives the
    softmax exactly, whatever a_max is. Returns an integer scalar for 1-D scores, else
    an int array with ``axis`` removed.
    """
    check_rng(rng)
    scaled, grid = _quantised_scores(scores, epsilon, sensitivity, axis)
    out_shape = scaled.shape[:-1]
    k = scaled.shape[-1]
    a = scaled.reshape(-1, k)
    rows = a.shape[0]
    avail = np.isfinite(a)
    n_avail = avail.sum(axis=1)
    # candidates of each row, available ones first (stable: keeps index order)
    order = np.argsort(~avail, axis=1, kind="stable")
    gap = np.where(avail, -a, 0).astype(np.int64)  # a_max - a_r >= 0, integer
    choice = np.full(rows, -1, dtype=np.int64)
    pending = np.arange(rows)
    batch = int(max(1, n_avail.max()))
    while pending.size:
        # a batch of iid uniform proposals per pending row; the first accepted one wins
        pick = rng.integers(0, n_avail[pending][:, None], (pending.size, batch))
        cand = np.take_along_axis(order[pending], pick, axis=1)
        g = np.take_along_axis(gap[pending], cand, axis=1)
        accept = bernoulli_exp(rng, g.ravel(), grid).reshape(g.shape)
        hit = accept.any(axis=1)
        first = accept.argmax(axis=1)
        choice[pending[hit]] = cand[hit, first[hit]]
        pending = pending[~hit]
    out = choice.reshape(out_shape)
    return out[()] if out.ndim == 0 else out


def exponential_probabilities(scores: ArrayLike, epsilon: float, sensitivity: float, axis: int = -1) -> np.ndarray:
    """Exact selection probabilities of ``exponential_mechanism`` (0 for -inf scores):
    the softmax of the quantised scores it samples from."""
    scaled, grid = _quantised_scores(scores, epsilon, sensitivity, axis)
    w = np.exp(scaled / grid)
    return np.moveaxis(w / w.sum(axis=-1, keepdims=True), -1, axis)


@dataclass(frozen=True)
class ExponentialMechanism:
    """The exponential mechanism as a measurement with its privacy map.

    ``scale`` is 2Δ/ε: selecting with scores of sensitivity Δ costs
    ``epsilon(Δ) = 2Δ/scale`` (McSherry & Talwar 2007); ``select`` samples it exactly
    (:func:`exponential_mechanism`).
    """

    scale: float
    name: ClassVar[str] = "exponential"
    #: its scores' sensitivity: the largest change of any one score between neighbours
    norm: ClassVar[Norm] = "score"

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", positive_finite("scale", self.scale))

    @classmethod
    def calibrate(cls, epsilon: float, sensitivity: float) -> ExponentialMechanism:
        return cls(2.0 * positive_finite("sensitivity", sensitivity) / positive_finite("epsilon", epsilon))

    def epsilon(self, sensitivity: float) -> float:
        return 2.0 * nonnegative_finite("sensitivity", sensitivity) / self.scale

    def rho(self, sensitivity: float) -> float:
        """Its zCDP cost: ε²/8, since the exponential mechanism is ε-bounded-range (Cesar &
        Rogers 2021; the exact sampler's quantised scores stay within the same ε)."""
        return rho_of_exponential(self.epsilon(sensitivity))

    def cost(self, sensitivity: Sensitivity, unit: str) -> Budget:
        """The privacy map: ε = 2Δ/scale, or its zCDP cost ε²/8 (ε-bounded-range)."""
        return pure_cost(self.epsilon(check_norm(self.name, self.norm, sensitivity)), unit, rho_of_exponential)

    def select(self, scores: ArrayLike, sensitivity: float, rng: np.random.Generator, axis: int = -1) -> Any:
        return exponential_mechanism(scores, self.epsilon(sensitivity), sensitivity, rng, axis)

    def probabilities(self, scores: ArrayLike, sensitivity: float, axis: int = -1) -> np.ndarray:
        return exponential_probabilities(scores, self.epsilon(sensitivity), sensitivity, axis)


NOISE_KINDS: dict[str, type[DiscreteLaplace] | type[Laplace]] = {DiscreteLaplace.name: DiscreteLaplace,
                                                                Laplace.name: Laplace}


def noise_for(kind: str | None, epsilon: float, sensitivity: float = 1.0) -> DiscreteLaplace | Laplace:
    """Calibrated count noise: scale = sensitivity / epsilon. kind None means the
    default, "discrete_laplace"; epsilon has no default on purpose."""
    kind = DiscreteLaplace.name if kind is None else kind
    if kind not in NOISE_KINDS:
        allowed = ", ".join(repr(k) for k in NOISE_KINDS)
        raise OptionError(f"unknown noise kind {kind!r}; allowed kinds are {allowed}")
    return NOISE_KINDS[kind].calibrate(epsilon, sensitivity)
