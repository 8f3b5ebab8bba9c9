"""Smooth-sensitivity releases with generalized Cauchy noise, as the thesis calibrates them.

Merrill (2021), Theorem 2.2.5 (citing Nissim, Raskhodnikova & Smith 2007, Lemma 2.7):
if S is a β-smooth upper bound on the local sensitivity of q with β = ε/(2(γ−1)),
then q(D) + 2(γ−1)·S(D)/ε · X, X ~ GeneralizedCauchy(γ), is claimed ε-DP.

Privacy map used here (proved below; tested numerically in tests/survey/test_survey_smooth.py).
Write the release as q + (S/α)·Z with density h(z) ∝ 1/(1 + |z|^γ). For neighbours
D, D' put s = α(q(D') − q(D))/S(D), |s| ≤ α (S ≥ LS), and t = ln(S(D')/S(D)), |t| ≤ β.
The log density ratio at z is  log h(z) − log h((z − s)e^{−t}) + t.

* shift: |d/dz log h| = γ|z|^{γ−1}/(1+|z|^γ) ≤ L_γ := (γ−1)^{(γ−1)/γ} (maximum at
  |z|^γ = γ−1), so the shift costs at most α·L_γ;
* scale: e^t·h(w)/h(w e^{−t}) lies in [e^{−(γ−1)|t|}, e^{|t|}] (h is decreasing in |w|
  and (1 + r^{−γ}u)/(1 + u) ∈ [r^{−γ}, 1] for r ≥ 1), so it costs max(1, γ−1)·β.

Hence ε_true ≤ α·L_γ + max(1, γ−1)·β (:func:`cauchy_smooth_epsilon`). With the thesis's
α = β = ε/(2(γ−1)) this is ≤ ε exactly when L_γ ≤ γ − 1, i.e. for γ ≥ 2. For 1 < γ < 2
the claimed ε does not hold: at γ = 1.5, α = β = ln 2 (Cor 6.4.3 with ε = ln 2) the worst
log ratio on a grid is 1.158 > 0.693. The releases here therefore require γ ≥ 2, which in
chapter 6 (γ = 1 + ε/(2 ln 2)) means ε ≥ 2 ln 2.

Neighbours: S is a smooth bound on the local sensitivity for adding or removing one
record (L_1(D), W_k), so these releases are ε-DP for add/remove neighbours only.

Floating point: the argument above is for real-valued noise. ``GeneralizedCauchy.sample``
is a floating-point sampler (numpy gammas and exponentials) with no proof that its output
law is the ideal one, so the implementation is not covered by the proof (Mironov 2012).
:func:`smooth_value` rounds the released value to a power-of-two grid g chosen from
public inputs only (2^-20 of a public lower bound on the noise scale): for the ideal
mechanism that is post-processing, so the guarantee is unchanged and the value moves by
at most g/2; it removes the low-order bits in which textbook float samplers leak the
exact answer. It does not make the sampler exact, so every statement and ledger note
says the guarantee is for the ideal mechanism (docs/survey-privacy.md).

``dpcore.privacy.mechanisms.GeneralizedCauchy.smooth_epsilon`` states the looser map
γα + (γ+1)β; under it the thesis's calibrations would cost more than their ε (e.g.
1.5 instead of 1 for γ = 4, α = β = 1/6), so this package uses the sharper map above.
Noise is still drawn only by ``GeneralizedCauchy.sample``.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from dpcore.errors import OptionError
from dpcore.privacy.ledger import UNBOUNDED, Ledger, check_epsilon
from dpcore.privacy.measurement import Measurement, StatedMechanism
from dpcore.privacy.mechanisms import GeneralizedCauchy
from dpcore.privacy.neighbours import ADD_REMOVE
from dpcore.survey._privacy import public_grid, snap, statement

LN2 = math.log(2.0)
#: smallest ε for which the chapter-6 calibration γ = 1 + ε/(2 ln 2) is proven ε-DP (γ ≥ 2)
CH6_MIN_EPSILON = 2.0 * LN2
#: ε above which the chapter-6 noise has finite variance (γ > 3)
CH6_FINITE_VARIANCE_EPSILON = 4.0 * LN2


def cauchy_shift_lipschitz(gamma: float) -> float:
    """L_γ = sup_z |d/dz log(1 + |z|^γ)| = (γ−1)^{(γ−1)/γ}."""
    g = float(gamma)
    return (g - 1.0) ** ((g - 1.0) / g)


def cauchy_smooth_epsilon(gamma: float, alpha: float, beta: float) -> float:
    """ε of q + (S/α)·X, X ~ GeneralizedCauchy(γ), S a β-smooth upper bound (module docstring)."""
    g = float(gamma)
    if not g > 1:
        raise OptionError(f"gamma must be > 1, got {gamma!r}")
    return alpha * cauchy_shift_lipschitz(g) + max(1.0, g - 1.0) * beta


def ch6_gamma(epsilon: float) -> float:
    """Chapter 6 (Cor 6.4.3/6.4.6/6.4.9): β = ln 2 and γ = 1 + ε/(2 ln 2)."""
    return 1.0 + float(epsilon) / (2.0 * LN2)


def check_ch6_epsilon(epsilon, what: str) -> float:
    eps = check_epsilon(epsilon)
    if eps < CH6_MIN_EPSILON * (1 - 1e-12):
        raise OptionError(
            f"{what}: ε = {eps:g} is below 2 ln 2 ≈ {CH6_MIN_EPSILON:.4f}. The smooth-sensitivity "
            "release (β = ln 2, γ = 1 + ε/(2 ln 2)) is only proven ε-DP for γ ≥ 2; use ε ≥ 1.39 "
            "(ε > 4 ln 2 ≈ 2.77 also gives the noise a finite variance), or a Laplace baseline"
        )
    return eps


#: Above this the noise scale 2(γ−1)S/ε only grows while the tails barely change.
MAX_GAMMA = 100.0


def check_gamma(gamma) -> float:
    try:
        g = float(gamma)
    except (TypeError, ValueError):
        raise OptionError(f"gamma must be a number ≥ 2; got {gamma!r}") from None
    if not (math.isfinite(g) and 2 <= g <= MAX_GAMMA):
        raise OptionError(
            f"gamma must be a number from 2 to {MAX_GAMMA:g} (the generalized Cauchy calibration of Thm 2.2.5 is only "
            f"proven ε-DP for γ ≥ 2, and its noise scale grows like γ); got {gamma!r}. γ = 4 gives unit-variance noise"
        )
    return g


@dataclass(frozen=True)
class SmoothRelease:
    """One noisy answer q(D) + 2(γ−1)·S(D)/ε · X, rounded to the public grid ``grid``.

    ``value`` is what may be published; ``statement`` says what holds: ε-DP for add/remove
    neighbours, for the ideal real-valued mechanism (the float sampler is not hardened).
    ``smooth_sensitivity``, ``scale`` and ``exact`` depend on the data: they are for the
    curator and are kept out of the ledger.
    """

    value: float
    epsilon: float
    gamma: float
    beta: float
    smooth_sensitivity: float
    scale: float
    exact: float
    ledger: Ledger = field(compare=False, repr=False)
    query: str = ""
    details: dict = field(default_factory=dict, compare=False)
    grid: float = 0.0
    neighbours: str = ADD_REMOVE

    @property
    def statement(self) -> str:
        return statement(self.epsilon, self.neighbours, given="the declared public levels, bounds and sizes",
                         ideal_only=True)

    @property
    def finite_variance(self) -> bool:
        """Generalized Cauchy noise has a finite variance only for γ > 3."""
        return self.gamma > 3

    @property
    def noise_variance(self) -> float:
        return GeneralizedCauchy(self.gamma, self.scale).variance if self.scale > 0 else 0.0

    @property
    def noise_sd(self) -> float:
        return math.sqrt(self.noise_variance)


def cauchy_noise(smooth: float, epsilon: float, gamma: float, rng, size=None):
    """Noise 2(γ−1)·S/ε · X (Thm 2.2.5), after checking the sharper privacy map gives ≤ ε.

    Returns (noise, scale). ``smooth`` must be a β-smooth upper bound with
    β = ε/(2(γ−1)); the caller proves that.
    """
    g = float(gamma)
    a = epsilon / (2.0 * (g - 1.0))
    spent = cauchy_smooth_epsilon(g, a, a)
    if spent > epsilon * (1 + 1e-12):
        raise OptionError(f"generalized Cauchy with γ = {g:g} is not ε-DP at ε = {epsilon:g} (needs γ ≥ 2)")
    scale = float(smooth) / a
    if not (math.isfinite(scale) and scale >= 0):
        raise OptionError(f"the smooth sensitivity must be finite and ≥ 0; got {smooth!r}")
    if scale == 0:
        return (np.zeros(size) if size is not None else 0.0), 0.0
    if g <= 3:
        warnings.warn(
            f"generalized Cauchy noise with γ = {g:.3g} ≤ 3 has infinite variance"
            + (" (chapter 6: needs ε > 4 ln 2 ≈ 2.77)" if abs(a - LN2) < 1e-12 else ""),
            RuntimeWarning,
            stacklevel=3,
        )
    z = GeneralizedCauchy(g, scale).sample(rng, size)
    return (z if size is not None else float(z)), scale


def smooth_value(exact: float, smooth: float, epsilon: float, gamma: float, rng, sensitivity_floor: float):
    """(value, scale, grid): exact + 2(γ−1)·S/ε · X rounded to the public grid.

    ``sensitivity_floor`` is a public lower bound on S (1 for counts, M/s for a mean, ...),
    so the grid, 2^-20 of the smallest possible noise scale, depends on public inputs only.
    """
    noise, scale = cauchy_noise(smooth, epsilon, gamma, rng)
    grid = smooth_grid(epsilon, gamma, sensitivity_floor)
    return snap(float(exact) + noise, grid), scale, grid


def smooth_grid(epsilon: float, gamma: float, sensitivity_floor: float) -> float:
    """The public grid of :func:`smooth_value`: 2^-20 of the smallest possible noise scale
    (from public inputs only, so it can be stated in the ledger before the draw)."""
    alpha = float(epsilon) / (2.0 * (float(gamma) - 1.0))
    return public_grid(float(sensitivity_floor) / alpha)


def smooth_measurement(label: str, epsilon: float, gamma: float, beta: float, subset: str, note: str,
                       grid: float | None = None) -> Measurement:
    """The measurement of a smooth-sensitivity release (add/remove neighbours): its ``draw(ledger, sampler)``
    charges the ledger, then runs the sampler (:func:`smooth_value`). The sensitivity and scale depend on the
    data, so they are recorded as NaN (not published); ``note`` names the bound used and says the float
    sampler is not hardened."""
    on_grid = f"value rounded to the public grid {grid:.6g}; " if grid else ""
    return Measurement.stated(
        label, smooth_cauchy(epsilon, gamma),
        subset=subset,
        neighbours=UNBOUNDED,
        note=f"{note}; β-smooth bound with β = {beta:.6g}, γ = {gamma:.6g}, noise 2(γ−1)S(D)/ε·X "
        "(Merrill 2021 Thm 2.2.5, proven here for γ ≥ 2); S(D) and the scale are data-dependent "
        f"and not recorded; {on_grid}the guarantee is for the ideal real-valued noise: this "
        "floating-point sampler is not hardened against Mironov-style attacks (Laplace releases are)",
    )


def smooth_cauchy(epsilon: float, gamma: float) -> StatedMechanism:
    """The generalized Cauchy release calibrated as Thm 2.2.5 does (α = β = ε/(2(γ−1))) as a mechanism with its
    privacy map: it costs ε, which the sharper map of this module's docstring proves for γ ≥ 2
    (:func:`cauchy_smooth_epsilon` ≤ ε is checked here; refused otherwise)."""
    g, e = float(gamma), float(epsilon)
    a = e / (2.0 * (g - 1.0))
    if cauchy_smooth_epsilon(g, a, a) > e * (1 + 1e-12):
        raise OptionError(f"generalized Cauchy with γ = {g:g} is not ε-DP at ε = {e:g} (needs γ ≥ 2)")
    return StatedMechanism(GeneralizedCauchy.name + " (floating-point sampler, not hardened)", e,
                           "Merrill 2021 Thm 2.2.5 with the sharper map of dpcore.survey._smooth (γ ≥ 2)")
