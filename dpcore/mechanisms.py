"""Noise mechanisms: the only place in dpcore that draws privacy noise (SPEC section 1).

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

These are guarantees for the ideal real-number distributions. The numpy samplers work
in floating point; integer outputs (discrete Laplace) escape the low-order-bits attack
on textbook Laplace samplers (Mironov 2012), and ``backend="opendp"`` offers an exact
discrete Laplace sampler for releases that must be audited.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy import special

from dpcore.errors import OptionError

__all__ = [
    "DiscreteLaplace",
    "Laplace",
    "GeneralizedCauchy",
    "BackendUnavailableError",
    "exponential_mechanism",
    "exponential_probabilities",
    "noise_for",
    "NOISE_KINDS",
]


class BackendUnavailableError(OptionError, ImportError):
    """An optional noise backend was requested but its package is not installed."""


def positive_finite(name: str, value) -> float:
    """``value`` as a float, or an OptionError naming ``name`` unless it is finite and > 0."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise OptionError(f"{name} must be a finite number > 0, got {value!r}") from None
    if not (math.isfinite(x) and x > 0):
        raise OptionError(f"{name} must be a finite number > 0, got {value!r}")
    return x


def _nonnegative_finite(name: str, value) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise OptionError(f"{name} must be a finite number >= 0, got {value!r}") from None
    if not (math.isfinite(x) and x >= 0):
        raise OptionError(f"{name} must be a finite number >= 0, got {value!r}")
    return x


def _check_rng(rng) -> np.random.Generator:
    # An int seed or the np.random module here would silently break reproducibility.
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"rng must be a numpy.random.Generator (e.g. np.random.default_rng(seed)), "
            f"got {type(rng).__name__}"
        )
    return rng


@dataclass(frozen=True)
class DiscreteLaplace:
    """Two-sided geometric noise on the integers: P(k) = tanh(1/(2s)) * exp(-|k|/s).

    Privacy: for integer-valued q with |q(D) - q(D')|_1 <= D, releasing q(D) + Z is
    (D/s)-DP. Proof: P(k)/P(k + d) = exp((|k + d| - |k|)/s) <= exp(|d|/s), and
    independent coordinates multiply (Ghosh, Roughgarden & Sundararajan 2009).
    The bound is tight (attained for k >= 0), so ``epsilon`` is the exact map.
    """

    scale: float
    name: ClassVar[str] = "discrete_laplace"

    def __post_init__(self):
        object.__setattr__(self, "scale", positive_finite("scale", self.scale))

    @classmethod
    def calibrate(cls, epsilon: float, sensitivity: float = 1.0) -> "DiscreteLaplace":
        eps = positive_finite("epsilon", epsilon)
        return cls(positive_finite("sensitivity", sensitivity) / eps)

    def epsilon(self, sensitivity: float = 1.0) -> float:
        return _nonnegative_finite("sensitivity", sensitivity) / self.scale

    @property
    def variance(self) -> float:
        # 2a/(1-a)^2 with a = e^{-1/s}; expm1 keeps 1-a accurate for large s.
        one_minus_a = -math.expm1(-1.0 / self.scale)
        return 2.0 * math.exp(-1.0 / self.scale) / one_minus_a**2

    def sample(self, rng: np.random.Generator, size=None, backend: str = "numpy") -> np.ndarray:
        """Integer noise (int64). ``backend="opendp"`` uses OpenDP's exact sampler;
        that one draws from OS randomness, so ``rng`` does not reproduce it."""
        if backend == "opendp":
            return _opendp_discrete_laplace(self.scale, size)
        if backend != "numpy":
            raise OptionError(f"unknown noise backend {backend!r}; use 'numpy' or 'opendp'")
        _check_rng(rng)
        # numpy's geometric lives on {1, 2, ...}; the shift cancels in the difference.
        p = -math.expm1(-1.0 / self.scale)
        draws = rng.geometric(p, size) - rng.geometric(p, size)
        return np.asarray(draws, dtype=np.int64)

    def release(self, values, rng: np.random.Generator, backend: str = "numpy") -> np.ndarray:
        """values + noise: int64 for integer input, float64 for integral float input."""
        v = np.asarray(values)
        if np.issubdtype(v.dtype, np.integer):
            return v.astype(np.int64) + self.sample(rng, v.shape, backend=backend)
        v = v.astype(np.float64)
        # Integer noise on a fractional value would publish the fraction exactly.
        if not np.all(np.isfinite(v) & (v == np.rint(v))):
            raise OptionError(
                "discrete Laplace needs integer-valued input (counts); use the 'laplace' "
                "noise kind for fractional values such as weighted counts"
            )
        return v + self.sample(rng, v.shape, backend=backend)

    def pmf(self, k) -> np.ndarray:
        k = np.asarray(k, dtype=np.float64)
        p = math.tanh(0.5 / self.scale) * np.exp(-np.abs(k) / self.scale)
        return np.where(k == np.rint(k), p, 0.0)

    def describe(self) -> dict:
        return {"mechanism": self.name, "scale": self.scale, "variance": self.variance}


def _opendp_discrete_laplace(scale: float, size) -> np.ndarray:
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


@dataclass(frozen=True)
class Laplace:
    """Continuous Laplace noise, density exp(-|x|/s)/(2s), variance 2 s^2.

    Privacy: for real q with |q(D) - q(D')|_1 <= D, q(D) + Z is (D/s)-DP, since the
    density ratio at any point is at most exp(|d|/s) (Dwork, McSherry, Nissim & Smith
    2006). This holds for the ideal distribution; numpy's floating-point sampler is
    open to Mironov's (2012) attack, which is why counts default to DiscreteLaplace.
    """

    scale: float
    name: ClassVar[str] = "laplace"

    def __post_init__(self):
        object.__setattr__(self, "scale", positive_finite("scale", self.scale))

    @classmethod
    def calibrate(cls, epsilon: float, sensitivity: float = 1.0) -> "Laplace":
        eps = positive_finite("epsilon", epsilon)
        return cls(positive_finite("sensitivity", sensitivity) / eps)

    def epsilon(self, sensitivity: float = 1.0) -> float:
        return _nonnegative_finite("sensitivity", sensitivity) / self.scale

    @property
    def variance(self) -> float:
        return 2.0 * self.scale**2

    def sample(self, rng: np.random.Generator, size=None) -> np.ndarray:
        return np.asarray(_check_rng(rng).laplace(0.0, self.scale, size), dtype=np.float64)

    def release(self, values, rng: np.random.Generator) -> np.ndarray:
        v = np.asarray(values, dtype=np.float64)
        return v + self.sample(rng, v.shape)

    def pdf(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        return np.exp(-np.abs(x) / self.scale) / (2.0 * self.scale)

    def cdf(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        half_tail = 0.5 * np.exp(-np.abs(x) / self.scale)
        return np.where(x < 0, half_tail, 1.0 - half_tail)

    def describe(self) -> dict:
        return {"mechanism": self.name, "scale": self.scale, "variance": self.variance}


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

    def __post_init__(self):
        g = float(self.gamma)
        if not (math.isfinite(g) and g > 1):
            raise OptionError(f"gamma must be a finite number > 1, got {self.gamma!r}")
        object.__setattr__(self, "gamma", g)
        object.__setattr__(self, "scale", positive_finite("scale", self.scale))

    def smooth_epsilon(self, alpha: float, beta: float) -> float:
        """Privacy map for noise S(x)/alpha * Z with S beta-smooth (see class docstring)."""
        a = _nonnegative_finite("alpha", alpha)
        b = _nonnegative_finite("beta", beta)
        return self.gamma * a + (self.gamma + 1.0) * b

    @property
    def variance(self) -> float:
        if self.gamma <= 3:
            return math.inf
        g = self.gamma
        return self.scale**2 * math.sin(math.pi / g) / math.sin(3 * math.pi / g)

    def sample(self, rng: np.random.Generator, size=None) -> np.ndarray:
        """X = ±scale * Y^(1/gamma), Y ~ BetaPrime(1/gamma, 1 - 1/gamma) = G_a / G_b.

        Y is formed in log space as a ratio of gammas, log G_a = log G_{a+1} - E/a with
        E ~ Exp(1): B/(1-B) with B ~ rng.beta hits B == 1.0 (Y = inf) for gamma near 1
        and B == 0.0 for large gamma, and G_a itself underflows for large gamma.
        """
        _check_rng(rng)
        a, b = 1.0 / self.gamma, 1.0 - 1.0 / self.gamma
        log_ga = np.log(rng.standard_gamma(a + 1.0, size)) - rng.standard_exponential(size) / a
        log_gb = np.log(rng.standard_gamma(b + 1.0, size)) - rng.standard_exponential(size) / b
        sign = 2 * rng.integers(0, 2, size) - 1
        # For gamma very near 1 the true tail can pass 1e308; those draws become ±inf.
        with np.errstate(over="ignore"):
            return np.asarray(sign * self.scale * np.exp((log_ga - log_gb) / self.gamma))

    def release(self, values, rng: np.random.Generator) -> np.ndarray:
        v = np.asarray(values, dtype=np.float64)
        return v + self.sample(rng, v.shape)

    def pdf(self, x) -> np.ndarray:
        g = self.gamma
        z = np.abs(np.asarray(x, dtype=np.float64)) / self.scale
        norm = g * math.sin(math.pi / g) / (2.0 * math.pi * self.scale)
        return norm / (1.0 + z**g)

    def cdf(self, x) -> np.ndarray:
        # P(|X| > x) = P(Y > y) = I_{1/(1+y)}(b, a) with y = (x/scale)^gamma; written via
        # expit so the far tail keeps full relative precision instead of rounding to 1.
        x = np.asarray(x, dtype=np.float64)
        a, b = 1.0 / self.gamma, 1.0 - 1.0 / self.gamma
        with np.errstate(divide="ignore"):
            t = special.expit(-self.gamma * np.log(np.abs(x) / self.scale))
        half_tail = 0.5 * special.betainc(b, a, t)
        return np.where(x < 0, half_tail, 1.0 - half_tail)

    def describe(self) -> dict:
        return {
            "mechanism": self.name,
            "gamma": self.gamma,
            "scale": self.scale,
            "variance": self.variance,
        }


def _exponential_logits(scores, epsilon, sensitivity, axis) -> np.ndarray:
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
    # Shifting by the row max changes no probability and keeps large scores in range.
    return (u - top) * (eps / (2.0 * delta))


def exponential_mechanism(scores, epsilon: float, sensitivity: float, rng, axis: int = -1):
    """Pick one index per row with P(r) proportional to exp(eps*u(r)/(2*sensitivity)).

    Privacy: eps-DP when every score changes by at most ``sensitivity`` between
    neighbours (McSherry & Talwar 2007). Sampling uses the Gumbel-max trick: the argmax
    of logits plus iid Gumbel(0, 1) noise is distributed as their softmax. Scores of -inf
    mark unavailable candidates; which ones are unavailable must not depend on the data.
    Returns an integer scalar for 1-D scores, else an int array with ``axis`` removed.
    """
    _check_rng(rng)
    logits = _exponential_logits(scores, epsilon, sensitivity, axis)
    return np.argmax(logits + rng.gumbel(size=logits.shape), axis=-1)


def exponential_probabilities(scores, epsilon: float, sensitivity: float, axis: int = -1):
    """Exact selection probabilities of ``exponential_mechanism`` (0 for -inf scores)."""
    w = np.exp(_exponential_logits(scores, epsilon, sensitivity, axis))
    return np.moveaxis(w / w.sum(axis=-1, keepdims=True), -1, axis)


NOISE_KINDS = {DiscreteLaplace.name: DiscreteLaplace, Laplace.name: Laplace}


def noise_for(kind: str | None, epsilon: float, sensitivity: float = 1.0):
    """Calibrated count noise: scale = sensitivity / epsilon. kind None means the
    default, "discrete_laplace"; epsilon has no default on purpose."""
    kind = DiscreteLaplace.name if kind is None else kind
    if kind not in NOISE_KINDS:
        allowed = ", ".join(repr(k) for k in NOISE_KINDS)
        raise OptionError(f"unknown noise kind {kind!r}; allowed kinds are {allowed}")
    return NOISE_KINDS[kind].calibrate(epsilon, sensitivity)
