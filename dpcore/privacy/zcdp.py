"""Zero-concentrated differential privacy (zCDP): the accounting maths, as pure functions.

A mechanism M is ρ-zCDP (Bun & Steinke 2016) when, for every pair of neighbouring tables
D, D′ and every order α > 1, the Rényi divergence of its output laws is bounded:
D_α(M(D) ‖ M(D′)) ≤ α·ρ. Charges compose by adding their ρ (Bun & Steinke 2016),
which is why Gaussian noise over many measurements grows like √T instead of T. At the end a
total ρ is converted to an (ε, δ) statement with the tight conversion of Canonne, Kamath &
Steinke (2020). Definitions, proofs and when to choose which: docs/privacy-model.md, section
"(ε, δ) through zero-concentrated DP".

What this module gives:
  * ``rho_of_pure(ε) = ε²/2``: an ε-DP mechanism is (ε²/2)-zCDP (Bun & Steinke 2016, Prop. 1.4);
  * ``rho_of_exponential(ε) = ε²/8``: the exponential mechanism at ε is ε-bounded-range, and
    ε-bounded-range mechanisms are (ε²/8)-zCDP (Cesar & Rogers 2021);
  * ``epsilon_of_rho(ρ, δ)``: the ε of the (ε, δ) guarantee of a ρ-zCDP mechanism
    (Canonne, Kamath & Steinke 2020, Proposition 12 / Corollary 13), rounded up;
  * ``delta_of_rho(ρ, ε)``: the same curve read the other way, rounded up;
  * ``rho_of_epsilon_delta(ε, δ)``: the largest ρ whose conversion does not exceed (ε, δ);
  * ``epsilon_of_rho_classic(ρ, δ) = ρ + 2√(ρ log(1/δ))`` (Bun & Steinke 2016, Prop. 1.3),
    looser, for comparison;
  * ``check_delta`` and ``delta_warning`` for the curator's δ.

Exactness. The conversion holds for *every* order α > 1, so the search for the best α needs no
care about rounding: a slightly wrong α only loosens the bound. What must not round the wrong
way is the value of ε (or δ) at the chosen α; it is evaluated in float64 as a sum of a few
pieces, each computed with a few roundings, and then raised by a margin (``_MARGIN`` times the
sum of the pieces' magnitudes, about 45 ulps of it) that covers their rounding even when the
pieces cancel. ``rho_of_epsilon_delta`` returns a ρ that
has been converted back with ``epsilon_of_rho`` and checked to give at most ε.
"""
from __future__ import annotations

import math
from collections.abc import Callable

from scipy import optimize

from dpcore.errors import OptionError, real_number, whole_number

__all__ = [
    "check_delta",
    "check_rho",
    "delta_warning",
    "rho_of_pure",
    "rho_of_exponential",
    "epsilon_of_rho",
    "delta_of_rho",
    "rho_of_epsilon_delta",
    "epsilon_of_rho_classic",
    "DELTA_WARN_ABOVE",
]

#: A δ above this is allowed but warned about (:func:`delta_warning`).
DELTA_WARN_ABOVE = 1e-5
#: Relative margin added to a converted ε or log δ, times the sum of the magnitudes of the
#: terms that make it: about 45 ulps, more than the few roundings of each term.
_MARGIN = 1e-14


def check_delta(delta: object) -> float:
    """δ as a float, or a one-line :class:`OptionError` unless it is a number with 0 < δ < 1."""
    return real_number("delta", delta, 0, 1, lo_open=True, hi_open=True,
                       hint=" (δ is the small probability that the ε bound may fail; try 1e-9, well below 1/n)")


def check_rho(rho: object) -> float:
    """ρ as a float, or a one-line :class:`OptionError` unless it is a finite number ≥ 0."""
    return real_number("rho", rho, 0, hint=" (ρ is a zCDP budget, e.g. 0.05)")


def delta_warning(delta: object, n: int | None = None) -> str | None:
    """A one-line warning for a δ that is allowed but weak, or None.

    δ is the probability with which the ε bound may fail outright, so it must be small next
    to the chance of picking out any one person: warned when δ > 10⁻⁵ or, given the number of
    records n, when δ ≥ 1/n (publishing one record chosen at random meets the (ε, δ)
    inequality with ε = 0 and δ = 1/n under replace-one neighbours).
    """
    d = check_delta(delta)
    if n is not None:
        n = whole_number("n (the number of records)", n, lo=1)
        if d >= 1.0 / n:
            return (f"δ = {d:g} is at least 1/n = 1/{n}: a release could then reveal some person's record "
                    f"outright; use δ well below 1/n, e.g. {_suggested_delta(n):g}")
    if d > DELTA_WARN_ABOVE:
        return (f"δ = {d:g} is above {DELTA_WARN_ABOVE:g}: the ε bound may fail with that probability; "
                f"use δ well below 1/n, e.g. 1e-9")
    return None


def _suggested_delta(n: int) -> float:
    """A power of ten at most 1/(100 n) and at most 10⁻⁹."""
    return 10.0 ** min(-9, math.floor(math.log10(1.0 / (100.0 * n))))


def _positive(name: str, value: float) -> float:
    return real_number(name, value, 0, lo_open=True)


def rho_of_pure(epsilon: float) -> float:
    """ρ = ε²/2: an ε-DP mechanism is (ε²/2)-zCDP (Bun & Steinke 2016, Proposition 1.4)."""
    e = real_number("epsilon", epsilon, 0)
    return 0.5 * e * e


def rho_of_exponential(epsilon: float) -> float:
    """ρ = ε²/8 for the exponential mechanism run at ε.

    The exponential mechanism with scores of sensitivity Δ at ε is ε-bounded-range: between
    neighbours the log-ratio of the probabilities of any output lies in an interval of width ε
    (Durfee & Rogers 2019). ε-bounded-range mechanisms are (ε²/8)-zCDP (Cesar & Rogers 2021),
    four times less than the ε²/2 of a generic ε-DP mechanism. The exact sampler in
    ``dpcore.privacy.mechanisms`` quantises the scores inside the same ε, so it is ε-bounded-range too.
    """
    e = real_number("epsilon", epsilon, 0)
    return 0.125 * e * e


def epsilon_of_rho_classic(rho: float, delta: float) -> float:
    """ε = ρ + 2√(ρ log(1/δ)) (Bun & Steinke 2016, Proposition 1.3): valid, looser than
    :func:`epsilon_of_rho`; kept for comparison."""
    r, d = check_rho(rho), check_delta(delta)
    return r + 2.0 * math.sqrt(r * -math.log(d))


def _epsilon_terms(rho: float, log_inv_delta: float, beta: float) -> tuple[float, ...]:
    """ε_α = αρ + (log(1/δ) − log α)/(α − 1) + log(1 − 1/α) at α = 1 + β, as five pieces that
    are each computed with a few roundings relative to their own size (the sum may cancel:
    the margin of ``_upper`` is taken on the pieces, not on their sum)."""
    return (rho, rho * beta, log_inv_delta / beta, -math.log1p(beta) / beta, -math.log1p(1.0 / beta))


def _log_delta_terms(rho: float, epsilon: float, beta: float) -> tuple[float, ...]:
    """log δ_α = (α − 1)(αρ − ε) + (α − 1) log(1 − 1/α) − log α at α = 1 + β, as five pieces
    (αρ = ρ + ρβ; log(1 − 1/α) = −log(1 + 1/β))."""
    return (beta * rho, beta * (rho * beta), -beta * epsilon, -beta * math.log1p(1.0 / beta), -math.log1p(beta))


def _upper(terms: tuple[float, ...]) -> float:
    """The sum of the pieces, raised by the rounding margin (``_MARGIN`` times the sum of their
    magnitudes), so it is not below the exact value at this α."""
    return math.fsum(terms) + _MARGIN * math.fsum(abs(t) for t in terms) + 5e-324


#: Smallest α − 1 searched: a valid order (every α > 1 is), far below any optimum that matters.
_BETA_MIN = 1e-300


def _root(g: Callable[[float], float], lo: float, hi: float) -> float:
    """The root of an increasing g in [lo, hi], hi grown until g(hi) ≥ 0; lo if g(lo) ≥ 0
    already (any order in the search range gives a valid bound, only a looser one)."""
    if g(lo) >= 0:
        return lo
    while g(hi) < 0:
        lo, hi = hi, 2.0 * hi
    return float(optimize.brentq(g, lo, hi, xtol=1e-300, rtol=4 * 2.0**-52, maxiter=500))


def epsilon_of_rho(rho: float, delta: float) -> float:
    """ε such that a ρ-zCDP mechanism is (ε, δ)-DP (Canonne, Kamath & Steinke 2020, Cor. 13).

    For every α > 1, ρ-zCDP gives (ε_α, δ)-DP with
        ε_α = αρ + (log(1/δ) + (α − 1) log(1 − 1/α) − log α)/(α − 1)      (their Prop. 12:
        δ = exp((α − 1)(αρ − ε))/(α − 1) · (1 − 1/α)^α, solved for ε),
    and the answer is inf_α ε_α, clamped at 0. With β = α − 1, dε_α/dα = ρ + log(αδ)/β², which
    has the sign of g(β) = ρβ² + log(1 + β) − log(1/δ): g is strictly increasing (g′ = 2ρβ +
    1/(1 + β) > 0) from g(0) = log δ < 0, so ε_α is unimodal and its minimiser is the root of
    g, found by Brent's method. ε is then evaluated at that α and rounded up (module docstring).
    """
    r, d = check_rho(rho), check_delta(delta)
    if r == 0:
        return 0.0
    if not math.isfinite(r):
        raise OptionError("rho must be finite")
    L = -math.log(d)
    beta = _root(lambda b: r * b * b + math.log1p(b) - L, _BETA_MIN, 1.0)
    return max(0.0, _upper(_epsilon_terms(r, L, beta)))


def delta_of_rho(rho: float, epsilon: float) -> float:
    """δ such that a ρ-zCDP mechanism is (ε, δ)-DP: inf over α > 1 of Canonne, Kamath &
    Steinke's (2020, Prop. 12) δ_α = exp((α − 1)(αρ − ε)) (1 − 1/α)^(α−1) / α, rounded up.

    With β = α − 1, d log δ_α/dα = (2α − 1)ρ − ε + log(1 − 1/α), strictly increasing in α
    (derivative 2ρ + 1/(αβ) > 0) from −∞: log δ_α is unimodal, minimised at its root.
    """
    r = check_rho(rho)
    e = real_number("epsilon", epsilon, 0)
    if r == 0:
        return 0.0
    beta = _root(lambda b: (1.0 + 2.0 * b) * r - e - math.log1p(1.0 / b), _BETA_MIN, 1.0)
    return min(1.0, math.exp(_upper(_log_delta_terms(r, e, beta))))


def rho_of_epsilon_delta(epsilon: float, delta: float) -> float:
    """The largest ρ (to a relative 10⁻¹³) with ``epsilon_of_rho(ρ, δ) ≤ ε``.

    Monotonicity: each ε_α(ρ) = αρ + c_α is increasing in ρ with slope α > 1, so the infimum
    ε(ρ) satisfies ε(ρ′) ≥ ε(ρ) + (ρ′ − ρ) for ρ′ > ρ: the set of ρ that convert to at most
    ε is an interval [0, ρ*]. Bisection keeps a lower end ``lo`` whose computed conversion
    (itself rounded up) is at most ε, so converting the returned ρ back gives ε′ ≤ ε for sure.
    """
    e = _positive("epsilon", epsilon)
    d = check_delta(delta)
    lo, hi = 0.0, e
    while epsilon_of_rho(hi, d) <= e:
        lo, hi = hi, 2.0 * hi
    while hi - lo > 1e-13 * hi:
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if epsilon_of_rho(mid, d) <= e:
            lo = mid
        else:
            hi = mid
    assert epsilon_of_rho(lo, d) <= e
    return lo
