"""zCDP accounting (dpcore/privacy/zcdp.py; docs/privacy-model.md).

The conversion ρ → (ε, δ) is checked against values computed independently of the code:
  * the exact (ε, δ) curve of the Gaussian mechanism, which is exactly ρ-zCDP with
    μ = √(2ρ): δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Balle & Wang 2018). The conversion
    holds for every ρ-zCDP mechanism, so it must claim at least the Gaussian's exact ε;
  * the classic bound ε = ρ + 2√(ρ log(1/δ)) (Bun & Steinke 2016), which it must not exceed;
  * Canonne, Kamath & Steinke's δ formula evaluated directly on a dense grid of orders α;
  * a published value: OpenDP's test of its CKS conversion, δ(ρ = 0.5, ε = 0) = 0.5588356393474351.
"""
import math

import numpy as np
import pytest
from scipy import optimize, special

import dpcore
from dpcore.privacy import zcdp as Z

RHOS = [1e-6, 1e-4, 0.003, 0.05, 0.5, 2.63, 20.0]
DELTAS = [1e-12, 1e-9, 1e-6, 1e-3, 0.1]
EPS_DELTA = [(e, d) for e in (0.01, 0.1, 0.5, 1.0, 2.0, 8.0, 30.0) for d in (1e-12, 1e-9, 1e-6, 1e-3)]


def gaussian_delta(eps, rho):
    """Balle & Wang (2018), Thm 8: the exact δ(ε) of the Gaussian mechanism with μ = Δ/σ = √(2ρ)."""
    mu = math.sqrt(2 * rho)
    a = special.log_ndtr(-eps / mu + mu / 2)
    b = eps + special.log_ndtr(-eps / mu - mu / 2)
    return math.exp(a) * -math.expm1(b - a)


def gaussian_epsilon(rho, delta):
    """The exact ε at δ of the Gaussian mechanism (δ(ε) is decreasing: root by bisection)."""
    if gaussian_delta(0.0, rho) <= delta:
        return 0.0
    hi = 1.0
    while gaussian_delta(hi, rho) > delta:
        hi *= 2
    return optimize.brentq(lambda e: gaussian_delta(e, rho) - delta, 0.0, hi, xtol=1e-14, rtol=1e-14)


def cks_delta(alpha, rho, eps):
    """CKS 2020, Prop. 12 as printed: δ = exp((α−1)(αρ−ε))/(α−1) · (1 − 1/α)^α, in logs
    (overflowing to inf for orders far from the optimum, which is harmless here)."""
    with np.errstate(over="ignore"):
            return np.exp((alpha - 1) * (alpha * rho - eps) - np.log(alpha - 1) + alpha * np.log1p(-1 / alpha))


@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("delta", DELTAS)
def test_conversion_between_the_exact_gaussian_and_the_classic_bound(rho, delta):
    eps = Z.epsilon_of_rho(rho, delta)
    assert eps <= Z.epsilon_of_rho_classic(rho, delta)
    assert eps >= gaussian_epsilon(rho, delta)
    if eps > 0:
        assert gaussian_delta(eps, rho) <= delta


@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("delta", [1e-9, 1e-3])
def test_conversion_is_the_infimum_over_alpha_of_the_cks_bound(rho, delta):
    """At the returned ε, CKS's δ_α ≥ δ for every α on a dense grid (ε is not below the
    infimum: that would be an invalid claim), and min_α δ_α ≈ δ (ε is not far above it)."""
    eps = Z.epsilon_of_rho(rho, delta)
    if eps == 0:
        return
    beta = np.geomspace(1e-6, 1e10, 400_001)
    d_alpha = cks_delta(1 + beta, rho, eps)
    assert d_alpha.min() >= delta * (1 - 1e-9)
    assert d_alpha.min() <= delta * (1 + 1e-6)


def test_a_published_value():
    """OpenDP's cdp_delta test: ρ = 0.5, ε = 0 gives δ = 0.5588356393474351 (CKS's conversion)."""
    d = Z.delta_of_rho(0.5, 0.0)
    assert d >= 0.5588356393474351 * (1 - 1e-14)
    assert d == pytest.approx(0.5588356393474351, rel=1e-12)
    assert 0.0 <= Z.epsilon_of_rho(0.5, d) <= 1e-13  # 0 but for the upward rounding margin


@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("delta", [1e-9, 1e-4])
def test_delta_of_rho_is_the_same_curve(rho, delta):
    eps = Z.epsilon_of_rho(rho, delta)
    if eps > 0:
        assert Z.delta_of_rho(rho, eps) <= delta * (1 + 1e-9)
        assert Z.delta_of_rho(rho, eps) >= delta * (1 - 1e-6)
        assert Z.delta_of_rho(rho, eps) >= gaussian_delta(eps, rho)


@pytest.mark.parametrize("eps,delta", EPS_DELTA)
def test_round_trip_epsilon_delta_to_rho_and_back(eps, delta):
    rho = Z.rho_of_epsilon_delta(eps, delta)
    back = Z.epsilon_of_rho(rho, delta)
    assert back <= eps
    assert back >= 0.999 * eps
    assert back >= eps * (1 - 1e-9)  # in fact much closer
    assert Z.epsilon_of_rho(rho * (1 + 1e-9), delta) > eps  # the largest such ρ


def test_conversion_is_monotone():
    """ε(ρ) grows with slope ≥ 1 in ρ (each ε_α has slope α > 1) and falls as δ grows."""
    rhos = np.geomspace(1e-8, 100, 400)
    for delta in (1e-10, 1e-5, 0.05):
        e = np.array([Z.epsilon_of_rho(r, delta) for r in rhos])
        pos = e > 0
        assert np.all(np.diff(e[pos]) >= np.diff(rhos[pos]) * (1 - 1e-9))
    for rho in (1e-3, 0.1, 3.0):
        e = [Z.epsilon_of_rho(rho, d) for d in np.geomspace(1e-15, 0.5, 200)]
        assert np.all(np.diff(e) <= 1e-15)


def test_tight_conversion_gains_over_the_classic_one():
    """The reason to use it: at (1, 10⁻⁹) the tight conversion affords more ρ (less noise)."""
    rho = Z.rho_of_epsilon_delta(1.0, 1e-9)
    classic = optimize.brentq(lambda r: Z.epsilon_of_rho_classic(r, 1e-9) - 1.0, 1e-9, 1.0)
    assert rho > 1.2 * classic


def test_pure_and_exponential_maps():
    assert Z.rho_of_pure(1.0) == 0.5 and Z.rho_of_pure(0.2) == pytest.approx(0.02, rel=1e-15)
    assert Z.rho_of_exponential(1.0) == 0.125 and Z.rho_of_exponential(2.0) == 0.5
    assert Z.rho_of_pure(0) == 0.0
    for bad in (-1, float("nan"), "1", True):
        with pytest.raises(dpcore.OptionError, match="epsilon"):
            Z.rho_of_pure(bad)


def test_zero_rho_and_tiny_rho():
    assert Z.epsilon_of_rho(0.0, 1e-9) == 0.0 and Z.delta_of_rho(0.0, 0.5) == 0.0
    assert Z.epsilon_of_rho(1e-30, 1e-13) == 0.0  # the (ε < 0, δ) bound implies (0, δ)
    assert 0 < Z.epsilon_of_rho(1e-12, 1e-9) <= Z.epsilon_of_rho_classic(1e-12, 1e-9)


@pytest.mark.parametrize("bad", [0, 1, -0.1, 1.5, float("nan"), float("inf"), "1e-9", None, True, [1e-9]])
def test_bad_delta_is_a_one_line_error(bad):
    for call in (lambda: Z.check_delta(bad), lambda: Z.epsilon_of_rho(0.1, bad),
                 lambda: Z.rho_of_epsilon_delta(1.0, bad), lambda: Z.delta_warning(bad)):
        with pytest.raises(dpcore.OptionError, match="delta") as info:
            call()
        assert "\n" not in str(info.value)


@pytest.mark.parametrize("bad", [-1e-3, float("nan"), float("inf"), "0.1"])
def test_bad_rho_and_epsilon_are_one_line_errors(bad):
    with pytest.raises(dpcore.OptionError, match="rho"):
        Z.epsilon_of_rho(bad, 1e-9)
    with pytest.raises(dpcore.OptionError, match="epsilon"):
        Z.rho_of_epsilon_delta(bad, 1e-9)
    with pytest.raises(dpcore.OptionError, match="epsilon"):
        Z.rho_of_epsilon_delta(0.0, 1e-9)


def test_delta_warning():
    assert Z.delta_warning(1e-9) is None
    assert Z.delta_warning(1e-5) is None
    assert Z.delta_warning(1e-9, n=65_000) is None
    w = Z.delta_warning(1e-4)
    assert w and "above 1e-05" in w and "\n" not in w
    w = Z.delta_warning(1e-6, n=5_000_000)  # δ ≥ 1/n although below 10⁻⁵
    assert w and "1/n" in w and "\n" not in w and "1e-09" in w
    w = Z.delta_warning(0.01, n=100)
    assert "1/n = 1/100" in w
    with pytest.raises(dpcore.OptionError, match="n"):
        Z.delta_warning(1e-9, n=0)


def test_the_value_at_a_chosen_order_is_rounded_up():
    """The conversion's value at an order α is computed in float64 and raised by a margin; here
    it is compared with the same expression in 60-digit decimal arithmetic (from the exact
    binary values of ρ, δ, ε and β): it must never be below it, and only barely above."""
    from decimal import Decimal, localcontext

    rng = np.random.default_rng(4)
    with localcontext() as ctx:
        ctx.prec = 60
        _check_rounding_up(rng, Decimal)


def _check_rounding_up(rng, Decimal):
    for _ in range(3000):
        rho, delta, eps = 10 ** rng.uniform(-12, 2), 10 ** rng.uniform(-15, -0.5), 10 ** rng.uniform(-3, 1.5)
        beta = 10 ** rng.uniform(-6, 14)
        R, B, E = Decimal(rho), Decimal(beta), Decimal(eps)
        A = 1 + B
        L = -Decimal(delta).ln()
        exact_eps = A * R + (L - A.ln()) / B + (B / A).ln()
        got = Decimal(Z._upper(Z._epsilon_terms(rho, -math.log(delta), beta)))
        assert got >= exact_eps  # the margin covers the rounding of log δ too
        assert got - exact_eps <= Decimal(1e-12) * (abs(exact_eps) + L / B + 1)
        exact_log_delta = B * (A * R - E) + B * (B / A).ln() - A.ln()
        got_log_delta = Z._upper(Z._log_delta_terms(rho, eps, beta))
        assert Decimal(got_log_delta) >= exact_log_delta
