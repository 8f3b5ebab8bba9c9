"""The exact discrete Gaussian sampler and its zCDP map (dpcore/privacy/gaussian.py; docs/mechanisms.md).

Statistical tests use fixed seeds and reject at p ≤ 0.001. The goodness-of-fit test has
10⁶ draws per σ; ``test_the_fit_test_has_power`` computes its power (non-central χ²) against
two alternatives: the central region |k| ≤ σ carrying 1% (relative) less mass than it should,
and, for σ ≤ 1, 1% of the mass of k = 0 moved to ±1; both must be detected with probability
≥ 0.99. Reference values are computed independently of the sampler: the pmf by its formula, the
Rényi and hockey-stick divergences by brute-force sums over the support.
"""
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import special, stats

import dpcore
from dpcore.privacy import gaussian as G
from dpcore.privacy.gaussian import DiscreteGaussian
from dpcore.privacy.zcdp import epsilon_of_rho
from tests.privacy.audit import hockey_stick, renyi_divergence

N = 1_000_000
P_MIN = 0.001
SIGMAS = [0.6, 1.0, 3.0, 25.0]


def rng(seed=2020):
    return np.random.default_rng(seed)


def _classes(mech, n):
    """Integer classes -K..K with expected count ≥ 5; the end classes hold the tails |k| ≥ K.
    Probabilities from the pmf's formula, summed directly (the tails over 60σ more terms)."""
    k_max = 0
    while n * mech.pmf(k_max + 1) >= 5:
        k_max += 1
    ks = np.arange(-k_max, k_max + 1)
    p = mech.pmf(ks)
    p[0] = p[-1] = mech.pmf(np.arange(k_max, k_max + 60 * math.ceil(mech.sigma) + 60)).sum()
    return ks, p


def _chisquare(draws, mech):
    ks, p = _classes(mech, draws.size)
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    observed = np.bincount(np.clip(draws, ks[0], ks[-1]) - ks[0], minlength=ks.size)
    return stats.chisquare(observed, draws.size * p).pvalue


@pytest.mark.parametrize("sigma", SIGMAS)
def test_sampler_matches_the_pmf(sigma):
    mech = DiscreteGaussian(sigma)
    draws = mech.sample(rng(), N)
    assert draws.dtype == np.int64 and draws.shape == (N,)
    assert _chisquare(draws, mech) > P_MIN


@pytest.mark.parametrize("sigma", SIGMAS)
def test_the_fit_test_has_power(sigma):
    """Power of the χ² test above at level 0.001 against 1% errors, from the non-central χ²."""
    mech = DiscreteGaussian(sigma)
    ks, p = _classes(mech, N)
    df = ks.size - 1
    crit = stats.chi2.ppf(1 - P_MIN, df)
    central = np.abs(ks) <= max(1, sigma)
    q = p.copy()
    q[central] *= 0.99  # 1% of the central mass moved to the other classes, proportionally
    q[~central] += 0.01 * p[central].sum() * p[~central] / p[~central].sum()
    alternatives = [q]
    if sigma <= 1:
        q0 = p.copy()
        mid = ks.size // 2
        q0[mid] -= 0.01 * p[mid]
        q0[mid - 1] += 0.005 * p[mid]
        q0[mid + 1] += 0.005 * p[mid]
        alternatives.append(q0)
    for alt in alternatives:
        assert alt.sum() == pytest.approx(1.0, abs=1e-12)
        power = stats.ncx2.sf(crit, df, N * np.sum((alt - p) ** 2 / p))
        assert power >= 0.99


def test_the_fit_test_detects_a_sigma_one_percent_too_large():
    draws = DiscreteGaussian(3.03).sample(rng(7), N)
    assert _chisquare(draws, DiscreteGaussian(3.0)) < P_MIN


def test_slow_path_for_large_values_is_exact(monkeypatch):
    """Draws far out (| |Y|q − p | ≥ 2³¹, about 11σ) take Python integers. With the int64 path
    switched off every draw takes that path, and the law is unchanged."""
    monkeypatch.setattr(G, "_FAST_LIMIT", 0)
    mech = DiscreteGaussian(1.0)
    draws = mech.sample(rng(3), 200_000)
    assert _chisquare(draws, mech) > P_MIN


@pytest.mark.parametrize("sigma", [1.0, 3.0])
def test_tails_symmetry_mean_and_variance(sigma):
    mech = DiscreteGaussian(sigma)
    draws = mech.sample(rng(11), N)
    # the tail P(|Z| ≥ 3σ) from the pmf, within 5 binomial sd
    k = math.ceil(3 * sigma)
    p_tail = 2 * mech.pmf(np.arange(k, k + 200)).sum()
    hits = int((np.abs(draws) >= k).sum())
    assert abs(hits - N * p_tail) < 5 * math.sqrt(N * p_tail)
    # symmetry: #{Z = j} vs #{Z = −j}, a binomial(·, 1/2) split for each j
    for j in range(1, k + 1):
        a, b = int((draws == j).sum()), int((draws == -j).sum())
        assert abs(a - b) < 5 * math.sqrt(a + b)
    # mean 0 within 5 sd; sample variance within 5 sd (√(2/N)·σ² for a near-Gaussian)
    assert abs(draws.mean()) < 5 * math.sqrt(mech.variance / N)
    assert abs(draws.var() - mech.variance) < 5 * math.sqrt(2 / N) * mech.variance


def test_rare_values_at_small_sigma_come_at_their_rate():
    """At σ = 0.45 the proposal (discrete Laplace of scale 1) is far wider than the target:
    P(|Z| ≥ 2) ≈ 1.3e-4 must come out at that rate, neither cut off nor inflated."""
    mech = DiscreteGaussian(0.45)
    draws = mech.sample(rng(5), N)
    p2 = 2 * mech.pmf(np.arange(2, 40)).sum()  # P(|Z| ≥ 2) ≈ 1.3e-4
    hits = int((np.abs(draws) >= 2).sum())
    assert hits > 0 and abs(hits - N * p2) < 5 * math.sqrt(N * p2)


@pytest.mark.parametrize("sigma", [0.3, 0.5, 1.0, 1.7, 2.0, 3.0, 7.0])
def test_pmf_and_variance_exact(sigma):
    """pmf by the formula; the variance's Poisson-summation and direct forms agree, and it is
    below σ² (visibly so for small σ)."""
    mech = DiscreteGaussian(sigma)
    s2 = float(mech.sampler_sigma2)
    ks = np.arange(-int(60 * sigma) - 60, int(60 * sigma) + 61)
    w = np.exp(-ks.astype(float) ** 2 / (2 * s2))
    assert np.allclose(mech.pmf(ks), w / w.sum(), rtol=1e-12, atol=0)
    assert mech.pmf(0.5) == 0.0 and mech.log_pmf(0.5) == -np.inf
    far = np.array([-40 * sigma - 7, 90 * sigma + 3]).round()  # pmf underflows there, log_pmf does not
    logs = -far**2 / (2 * s2) - special.logsumexp(-ks.astype(float) ** 2 / (2 * s2))
    assert np.allclose(mech.log_pmf(far), logs, rtol=1e-12, atol=0)
    var_direct = float((ks**2 * w).sum() / w.sum())
    assert mech.variance == pytest.approx(var_direct, rel=1e-12)
    assert G._theta_terms(s2, 2) / G._theta_terms(s2, 0) == pytest.approx(var_direct, rel=1e-12)
    assert mech.variance <= s2 * (1 + 1e-15)
    if sigma <= 0.5:
        assert mech.variance < 0.9 * s2  # far from σ² for small σ: the bound is not vacuous


@pytest.mark.parametrize("sigma", [2.0**-8, 0.1, 0.3, 1.0, 1.5, math.pi, 10.0, 1000.0, 123456.789, 2.0**26])
def test_sigma2_is_rounded_up_exactly(sigma):
    mech = DiscreteGaussian(sigma)
    t, p, q = mech._rational
    s2 = mech.sampler_sigma2
    assert isinstance(s2, Fraction) and s2 == Fraction(t * p, q)
    assert t == math.floor(sigma) + 1 and q & (q - 1) == 0
    exact = Fraction(sigma) ** 2
    assert s2 >= exact
    assert (s2 - exact) / exact <= (2.0**-25 if sigma >= 1 else 2.0**-18)
    assert 2 * t * p * q <= 2**56 and p <= 2**31 - 1  # the acceptance test's integers fit int64


def test_release_integer_and_float_input():
    mech = DiscreteGaussian(2.0)
    ints = mech.release(np.array([3, 4, 5], dtype=np.int32), rng())
    assert ints.dtype == np.int64
    assert np.array_equal(ints - np.array([3, 4, 5]), mech.sample(rng(), 3))
    floats = mech.release(np.array([3.0, 4.0]), rng())
    assert floats.dtype == np.float64 and np.array_equal(floats - [3.0, 4.0], mech.sample(rng(), 2))
    with pytest.raises(dpcore.OptionError, match="integer-valued"):
        mech.release(np.array([0.5]), rng())
    assert np.ndim(mech.sample(rng(), None)) == 0
    assert mech.sample(rng(), (2, 3)).shape == (2, 3)


def test_same_seed_same_draws_and_rng_must_be_a_generator():
    mech = DiscreteGaussian(4.0)
    assert np.array_equal(mech.sample(rng(9), 1000), mech.sample(rng(9), 1000))
    with pytest.raises(TypeError, match="Generator"):
        mech.sample(9, 3)


@pytest.mark.parametrize("sigma", [0, -1, float("nan"), float("inf"), "x", 2.0**27, 2.0**-9])
def test_bad_sigma_is_a_one_line_error(sigma):
    with pytest.raises(dpcore.OptionError, match="sigma") as info:
        DiscreteGaussian(sigma)
    assert "\n" not in str(info.value)


# ---------------------------------------------------------------- the privacy map


@pytest.mark.parametrize("rho,sens", [(0.5, 1.0), (0.01, 1.0), (0.1, 2.0), (1e-4, 3.0), (2.0, math.sqrt(2))])
def test_calibrate_rho_and_the_map(rho, sens):
    mech = DiscreteGaussian.calibrate_rho(rho, sens)
    assert mech.rho(sens) <= rho
    assert mech.rho(sens) == pytest.approx(rho, rel=1e-14)
    assert mech.rho(sens) == sens**2 / (2 * mech.sigma**2)
    assert mech.rho(0) == 0.0


def test_calibrate_for_epsilon_delta():
    mech = DiscreteGaussian.calibrate(1.0, 1.0, delta=1e-9)
    assert mech.epsilon(1.0, delta=1e-9) <= 1.0
    assert mech.epsilon(1.0, delta=1e-9) == pytest.approx(1.0, rel=1e-9)
    with pytest.raises(TypeError):
        DiscreteGaussian.calibrate(1.0, 1.0)  # a pure-ε call (ε, sensitivity) cannot land here
    with pytest.raises(dpcore.OptionError, match="delta"):
        DiscreteGaussian.calibrate(1.0, 1.0, delta=0.0)
    with pytest.raises(dpcore.OptionError, match="rho"):
        DiscreteGaussian.calibrate_rho(1e-30)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 2.5, 10.0])
@pytest.mark.parametrize("shift", [1, 2, 5])
def test_renyi_divergence_brute_force_is_at_most_alpha_rho(sigma, shift):
    """D_α(N_ℤ(0, σ²) ‖ N_ℤ(Δ, σ²)) = 1/(α−1) log Σ_k P(k)^α Q(k)^(1−α), summed over every k
    where the summand is not negligible, is at most α·ρ(Δ) for a grid of α (CKS 2020, Prop. 5);
    for σ ≥ 2.5 it comes within 1% of it (the map is tight, so the check has teeth)."""
    mech = DiscreteGaussian(sigma)
    rho = mech.rho(shift)
    for alpha in (1.01, 1.5, 2.0, 4.0, 8.0, 32.0, 128.0):
        span = int(alpha * shift + 60 * sigma + 60)
        ks = np.arange(-span, span + 1)
        d = renyi_divergence(mech.log_pmf(ks), mech.log_pmf(ks - shift), alpha)
        assert d <= alpha * rho * (1 + 1e-9)
        if sigma >= 2.5:
            assert d >= 0.99 * alpha * rho


@pytest.mark.parametrize("sigma,shift,delta", [(1.0, 1, 1e-9), (4.0, 1, 1e-6), (10.0, 3, 1e-9), (0.7, 2, 1e-3)])
def test_hockey_stick_divergence_brute_force_is_at_most_delta(sigma, shift, delta):
    """The (ε, δ) statement, checked on the pmfs: with ε = epsilon(Δ, δ), the largest
    P(S) − e^ε Q(S) over all output sets S is Σ_k max(0, P(k) − e^ε Q(k)) (both directions) and
    must be ≤ δ (Canonne, Kamath & Steinke's conversion; their Thm 7 gives this exact curve)."""
    mech = DiscreteGaussian(sigma)
    eps = mech.epsilon(shift, delta=delta)
    assert eps == epsilon_of_rho(shift**2 / (2 * sigma**2), delta)
    span = int(shift + 80 * sigma + 80)
    ks = np.arange(-span, span + 1)
    lp, lq = mech.log_pmf(ks), mech.log_pmf(ks - shift)
    for a, b in ((lp, lq), (lq, lp)):
        hockey = hockey_stick(a, b, eps)
        assert 0.01 * delta <= hockey <= delta  # holds, and not vacuously (0.05–0.2 δ here)
