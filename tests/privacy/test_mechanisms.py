"""Tests for dpcore.privacy.mechanisms (docs/mechanisms.md).

Statistical tests use fixed seeds and reject at p <= 0.001; moment tolerances are
stated next to each check. Reference values are computed independently of the code
under test (hand formulas, scipy.stats, numerical integration with quad).
"""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpcore.privacy.mechanisms import (
    DiscreteLaplace,
    GeneralizedCauchy,
    Laplace,
    exponential_mechanism,
    exponential_probabilities,
    noise_for,
)

N = 100_000
P_MIN = 0.001
BAD_EPS = [0, -1, float("nan"), float("inf")]


def rng(seed=12345):
    return np.random.default_rng(seed)


# ---------------------------------------------------------------- discrete Laplace


def chisquare_discrete_laplace(draws, mech):
    """Chi-square GoF over k = -K..K; the edge bins absorb the tails (expected >= 5)."""
    n = draws.size
    k_max = 0
    while n * mech.pmf(k_max + 1) >= 5:
        k_max += 1
    ks = np.arange(-k_max, k_max + 1)
    a = math.exp(-1 / mech.scale)
    expected = n * mech.pmf(ks)
    expected[0] = expected[-1] = n * a**k_max / (1 + a)  # P(k >= K) = a^K / (1 + a)
    observed = np.bincount(np.clip(draws, -k_max, k_max) + k_max, minlength=ks.size)
    assert expected.min() >= 5 and np.isclose(expected.sum(), n, rtol=1e-9)
    return stats.chisquare(observed, expected).pvalue


@pytest.mark.parametrize("scale", [0.7, 2.0, 10.0])
def test_discrete_laplace_matches_pmf(scale):
    mech = DiscreteLaplace(scale)
    draws = mech.sample(rng(), N)
    assert draws.dtype == np.int64 and draws.shape == (N,)
    assert chisquare_discrete_laplace(draws, mech) > P_MIN
    # Sample variance has relative sd sqrt((kurtosis - 1)/N) ~ 0.7% for Laplace-like tails.
    assert draws.var() == pytest.approx(mech.variance, rel=0.04)


@pytest.mark.parametrize("scale", [0.7, 2.0, 10.0])
def test_discrete_laplace_pmf_and_variance_exact(scale):
    mech = DiscreteLaplace(scale)
    ks = np.arange(-2000, 2001)
    pmf = mech.pmf(ks)
    a = math.exp(-1 / scale)
    assert np.allclose(pmf, (1 - a) / (1 + a) * a ** np.abs(ks), rtol=1e-12, atol=0)
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
    assert (ks**2 * pmf).sum() == pytest.approx(mech.variance, rel=1e-10)
    assert mech.pmf(0.5) == 0.0


def test_discrete_laplace_detects_wrong_scale():
    # The chi-square check has power: draws at scale 2.1 fail against scale 2.
    draws = DiscreteLaplace(2.1).sample(rng(), N)
    assert chisquare_discrete_laplace(draws, DiscreteLaplace(2.0)) < P_MIN


def test_discrete_laplace_release_dtypes():
    mech = DiscreteLaplace(1.0)
    ints = mech.release(np.array([3, 4, 5], dtype=np.int32), rng())
    assert np.issubdtype(ints.dtype, np.integer)
    floats = mech.release(np.array([3.0, 4.0]), rng())
    assert floats.dtype == np.float64
    noise = DiscreteLaplace(1.0).sample(rng(), 3)
    assert np.array_equal(ints - np.array([3, 4, 5]), noise)
    with pytest.raises(ValueError, match="integer-valued"):
        mech.release(np.array([0.5]), rng())


def test_discrete_laplace_opendp_backend_missing_is_clear():
    try:
        import opendp  # noqa: F401
    except ImportError:
        with pytest.raises(ValueError, match="install opendp"):
            DiscreteLaplace(1.0).sample(rng(), 3, backend="opendp")
    else:
        draws = DiscreteLaplace(1.0).sample(None, 5, backend="opendp")
        assert draws.dtype == np.int64 and draws.shape == (5,)
    with pytest.raises(ValueError, match="backend"):
        DiscreteLaplace(1.0).sample(rng(), 3, backend="torch")


# ---------------------------------------------------------------- Laplace


@pytest.mark.parametrize("scale", [0.5, 3.0])
def test_laplace_ks_and_variance(scale):
    mech = Laplace(scale)
    draws = mech.sample(rng(), N)
    assert stats.kstest(draws, mech.cdf).pvalue > P_MIN
    assert stats.kstest(draws, stats.laplace(scale=scale).cdf).pvalue > P_MIN
    # discretised on a grid of scale*2^-16: the variance is 2 scale^2 to ~1e-9 relative
    assert mech.variance == pytest.approx(2 * scale**2, rel=1e-8)
    # Relative sd of the sample variance is sqrt(5/N) ~ 0.7%.
    assert draws.var() == pytest.approx(mech.variance, rel=0.04)
    x = np.linspace(-20, 20, 81)
    assert np.allclose(mech.cdf(x), stats.laplace(scale=scale).cdf(x), rtol=1e-12, atol=1e-15)
    assert np.allclose(mech.pdf(x), stats.laplace(scale=scale).pdf(x), rtol=1e-12, atol=0)


def test_laplace_ks_detects_wrong_scale():
    draws = Laplace(1.05).sample(rng(), N)
    assert stats.kstest(draws, Laplace(1.0).cdf).pvalue < P_MIN


# ---------------------------------------------------------------- generalized Cauchy


def quad_half_mass(gamma, scale):
    dens = lambda t: 1.0 / (1.0 + abs(t / scale) ** gamma)
    total = integrate.quad(dens, 0, 1)[0] + integrate.quad(dens, 1, np.inf, limit=200)[0]
    return dens, total


def quad_cdf_points(gamma, scale, xs):
    dens, half = quad_half_mass(gamma, scale)
    out = []
    for x in xs:
        inner = integrate.quad(dens, 0, abs(x), epsabs=1e-13, epsrel=1e-12, limit=200)[0]
        out.append(0.5 + math.copysign(0.5 * inner / half, x))
    return np.array(out)


def quad_cdf_interpolator(gamma, scale):
    """cdf from quad on a log grid (100 points per decade) with linear interpolation.

    Interpolation error is ~ h^2 x f(x) / 8 ~ 1e-4 at most, far below the KS
    critical distance 1.95/sqrt(N) ~ 6e-3; mass beyond the grid (<= 3e-6) is ignored.
    """
    dens, half = quad_half_mass(gamma, scale)
    grid = np.concatenate([[0.0], scale * np.logspace(-8, 12, 2001)])
    pieces = [integrate.quad(dens, lo, hi)[0] for lo, hi in zip(grid[:-1], grid[1:])]
    upper = 0.5 + 0.5 * np.concatenate([[0.0], np.cumsum(pieces)]) / half

    def cdf(x):
        x = np.asarray(x, dtype=float)
        u = np.interp(np.abs(x), grid, upper)
        return np.where(x < 0, 1.0 - u, u)

    return cdf


@pytest.mark.parametrize("gamma", [1.5, 4.0, 6.0])
def test_generalized_cauchy_against_quad(gamma):
    scale = 2.0
    mech = GeneralizedCauchy(gamma, scale)
    draws = mech.sample(rng(), N)
    assert np.all(np.isfinite(draws))
    assert stats.kstest(draws, quad_cdf_interpolator(gamma, scale)).pvalue > P_MIN
    xs = [-50.0, -3.0, -0.5, 0.0, 0.2, 1.0, 2.5, 10.0, 1e3]
    assert np.allclose(mech.cdf(xs), quad_cdf_points(gamma, scale, xs), rtol=0, atol=1e-6)
    dens, half = quad_half_mass(gamma, scale)
    grid = np.array([0.0, 0.3, 1.0, 7.0])
    assert np.allclose(mech.pdf(grid), [dens(t) / (2 * half) for t in grid], rtol=1e-8)
    assert np.allclose(mech.pdf(-grid), mech.pdf(grid))


def test_generalized_cauchy_ks_detects_wrong_gamma():
    draws = GeneralizedCauchy(4.4, 2.0).sample(rng(), N)
    assert stats.kstest(draws, quad_cdf_interpolator(4.0, 2.0)).pvalue < P_MIN


def test_generalized_cauchy_variance():
    scale = 1.7
    mech = GeneralizedCauchy(6.0, scale)
    dens, half = quad_half_mass(6.0, scale)
    second = (
        integrate.quad(lambda t: t * t * dens(t), 0, scale)[0]
        + integrate.quad(lambda t: t * t * dens(t), scale, np.inf, epsabs=0, epsrel=1e-12)[0]
    )
    assert mech.variance == pytest.approx(second / half, rel=1e-6)
    assert GeneralizedCauchy(3.0).variance == math.inf
    assert GeneralizedCauchy(1.5).variance == math.inf
    # gamma = 6: kurtosis 4, so the sample variance has relative sd sqrt(3/N) ~ 0.6%.
    assert mech.sample(rng(), N).var() == pytest.approx(mech.variance, rel=0.05)


def test_generalized_cauchy_sampler_extremes():
    # With B ~ rng.beta these seeds give B == 1 (X = inf) 213 times for gamma = 1.2
    # and B == 0 (X = 0) 2373 times for gamma = 200; the true law has neither.
    assert np.all(np.isfinite(GeneralizedCauchy(1.2).sample(rng(), N)))
    assert np.all(GeneralizedCauchy(200.0).sample(rng(), N) != 0)


def test_generalized_cauchy_smooth_epsilon_bound():
    """Worst-case log density ratio of the smooth-sensitivity release stays under the map."""
    gamma, alpha, beta = 2.5, 0.2, 0.1
    mech = GeneralizedCauchy(gamma)
    y = np.linspace(-200, 200, 400_001)
    worst = 0.0
    for shift in (-1.0, 1.0):  # |f(x) - f(x')| <= S(x) = 1
        for s_prime in (math.exp(-beta), math.exp(beta)):
            p = GeneralizedCauchy(gamma, 1 / alpha).pdf(y)
            q = GeneralizedCauchy(gamma, s_prime / alpha).pdf(y - shift)
            worst = max(worst, np.abs(np.log(p / q)).max())
    assert 0 < worst <= mech.smooth_epsilon(alpha, beta)


# ---------------------------------------------------------------- exponential mechanism

SCORES = np.array([0.0, 1.0, 2.5, -np.inf, 1.5, -0.5])


def test_exponential_probabilities_hand_formula():
    eps, sens = 1.2, 0.8
    finite = np.isfinite(SCORES)
    w = np.where(finite, np.exp(eps * np.where(finite, SCORES, 0) / (2 * sens)), 0.0)
    probs = exponential_probabilities(SCORES, eps, sens)
    # the exact sampler quantises scaled scores to a grid of about eps*2^-21 (docs/mechanisms.md)
    assert np.allclose(probs, w / w.sum(), rtol=1e-5, atol=0)
    assert probs[3] == 0.0
    rows = exponential_probabilities(np.vstack([SCORES, SCORES[::-1]]), eps, sens)
    assert np.allclose(rows[1], (w / w.sum())[::-1])
    cols = exponential_probabilities(np.vstack([SCORES, SCORES[::-1]]).T, eps, sens, axis=0)
    assert np.allclose(cols, rows.T)


def test_exponential_mechanism_matches_probabilities():
    eps, sens = 1.2, 0.8
    picks = exponential_mechanism(np.tile(SCORES, (N, 1)), eps, sens, rng())
    assert picks.shape == (N,)
    counts = np.bincount(picks, minlength=SCORES.size)
    assert counts[3] == 0  # the unavailable candidate is never chosen
    probs = exponential_probabilities(SCORES, eps, sens)
    keep = probs > 0
    assert stats.chisquare(counts[keep], N * probs[keep]).pvalue > P_MIN
    # Power: the same draws are rejected against the probabilities at eps * 1.1.
    wrong = exponential_probabilities(SCORES, eps * 1.1, sens)
    assert stats.chisquare(counts[keep], N * wrong[keep]).pvalue < P_MIN


def test_exponential_mechanism_scalar_and_axis():
    pick = exponential_mechanism(SCORES, 1.0, 1.0, rng())
    assert np.ndim(pick) == 0 and 0 <= int(pick) < SCORES.size and int(pick) != 3
    picks = exponential_mechanism(np.tile(SCORES, (50, 1)).T, 1.0, 1.0, rng(), axis=0)
    assert picks.shape == (50,) and not np.any(picks == 3)


def test_exponential_mechanism_unavailable_rows_raise():
    with pytest.raises(ValueError, match="-inf"):
        exponential_mechanism(np.array([[0.0, 1.0], [-np.inf, -np.inf]]), 1.0, 1.0, rng())
    with pytest.raises(ValueError):
        exponential_probabilities([-np.inf, -np.inf], 1.0, 1.0)
    with pytest.raises(ValueError):
        exponential_mechanism([0.0, np.nan], 1.0, 1.0, rng())


def test_exponential_mechanism_large_scores():
    big = np.array([1e6, 1e6 - 1.0, 1e6 - 3.0, -np.inf])
    probs = exponential_probabilities(big, 2.0, 1.0)
    assert np.all(np.isfinite(probs))
    assert np.allclose(probs, exponential_probabilities(big - 1e6, 2.0, 1.0), rtol=1e-12)
    picks = exponential_mechanism(np.tile(big, (N, 1)), 2.0, 1.0, rng())
    counts = np.bincount(picks, minlength=4)
    assert counts[3] == 0
    assert stats.chisquare(counts[:3], N * probs[:3]).pvalue > P_MIN


# ---------------------------------------------------------------- privacy maps


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("sens", [1, 2])
def test_discrete_laplace_privacy_map_brute_force(eps, sens):
    mech = DiscreteLaplace.calibrate(eps, sens)
    assert mech.epsilon(sens) == pytest.approx(eps, rel=1e-12)
    ks = np.arange(-60, 61)
    ratios = mech.pmf(ks) / mech.pmf(ks + sens)
    assert np.max(np.maximum(ratios, 1 / ratios)) == pytest.approx(math.exp(eps), rel=1e-9)


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("sens", [1.0, 0.3])
def test_laplace_privacy_map_brute_force(eps, sens):
    """The discretised Laplace: over every output grid point and input pairs at distance
    <= sens (on and off the grid), the pmf ratio is at most e^eps, and nearly attained."""
    mech = Laplace.calibrate(eps, sens)
    assert mech.epsilon(sens) == pytest.approx(eps, rel=1e-12)
    g = mech.grid
    steps = DiscreteLaplace(mech.scale / g)
    worst = 0.0
    for x in (0.0, 0.37 * g, 0.5 * g, 0.51 * g, 12.3, -7.25 * g):
        for d in (sens, -sens, 0.5 * sens):
            a, b = np.rint(x / g), np.rint((x + d) / g)
            j = np.arange(min(a, b) - 200, max(a, b) + 201)
            worst = max(worst, np.max(np.abs(np.log(steps.pmf(j - a)) - np.log(steps.pmf(j - b)))))
    assert worst <= eps * (1 + 1e-9)
    assert worst >= eps * (1 - 1e-3)


def test_laplace_outputs_lie_on_the_grid():
    """Mironov (2012): textbook float Laplace outputs are unreachable from some inputs.
    Every discretised output is a multiple of the grid, reachable from every input."""
    mech = Laplace.calibrate(1.0, 1.0)
    out = mech.release(np.full(10_000, 0.123456789), rng())
    assert np.all(out / mech.grid == np.rint(out / mech.grid))
    assert np.isclose(np.median(out), 0.123456789, atol=0.1)


@pytest.mark.parametrize("eps", [1e-19, 1e-30, 1e-300])
def test_tiny_epsilon_is_refused_not_saturated(eps):
    """numpy's geometric saturated at tiny eps and returned 0 noise (the exact table)."""
    for call in (
        lambda: DiscreteLaplace.calibrate(eps),
        lambda: Laplace.calibrate(eps),
        lambda: noise_for("discrete_laplace", eps),
        lambda: exponential_mechanism(SCORES, eps, 1.0, rng()),
    ):
        with pytest.raises(ValueError, match="too small"):
            call()


def test_discrete_laplace_support_is_unbounded_at_large_scale():
    """The old two-geometric sampler had bounded support; the exact one follows the tail
    law P(|Z| >= k) = 2 a^k / (1 + a), a = e^{-1/s}, checked here at k = 10 s."""
    mech = DiscreteLaplace(3.0)
    draws = mech.sample(rng(3), 400_000)
    # P(Z >= k) = a^k/(1+a), a = e^{-1/s}: compare the observed tail counts beyond 30
    a = math.exp(-1 / 3.0)
    expected = 400_000 * 2 * a**30 / (1 + a)
    observed = int((np.abs(draws) >= 30).sum())
    assert abs(observed - expected) < 5 * math.sqrt(expected)


@pytest.mark.parametrize("gamma_num,den", [(0, 7), (3, 7), (7, 7), (10, 7), (25, 4), (1, 1)])
def test_bernoulli_exp_is_exact(gamma_num, den):
    from dpcore.privacy.exact_laplace import bernoulli_exp

    draws = bernoulli_exp(rng(11), np.full(N, gamma_num, np.int64), den)
    p = math.exp(-gamma_num / den)
    assert abs(draws.mean() - p) <= 5 * math.sqrt(p * (1 - p) / N) + 1e-12


def test_exponential_mechanism_far_candidate_is_possible():
    """Gumbel-max on floats gave probability exactly 0 beyond a gap of ~40 nats; the exact
    sampler gives the softmax. A gap of 12 nats: P = e^-12/(1+e^-12) ~ 6.1e-6."""
    picks = exponential_mechanism(np.tile([0.0, -12.0], (2_000_000, 1)), 2.0, 1.0, rng(5))
    hits = int(picks.sum())
    expected = 2_000_000 * math.exp(-12) / (1 + math.exp(-12))
    assert abs(hits - expected) < 5 * math.sqrt(expected)


# ---------------------------------------------------------------- reproducibility, validation


@pytest.mark.parametrize(
    "draw",
    [
        lambda g: DiscreteLaplace(2.0).sample(g, 100),
        lambda g: Laplace(2.0).sample(g, 100),
        lambda g: GeneralizedCauchy(4.0).sample(g, 100),
        lambda g: exponential_mechanism(np.tile(SCORES, (100, 1)), 1.0, 1.0, g),
    ],
)
def test_same_seed_same_draws(draw):
    assert np.array_equal(draw(rng(7)), draw(rng(7)))
    assert not np.array_equal(draw(rng(7)), draw(rng(8)))


def test_rng_must_be_a_generator():
    with pytest.raises(TypeError, match="Generator"):
        Laplace(1.0).sample(42, 3)
    with pytest.raises(TypeError, match="Generator"):
        exponential_mechanism(SCORES, 1.0, 1.0, np.random)


@pytest.mark.parametrize("eps", BAD_EPS)
def test_bad_epsilon_rejected(eps):
    for call in (
        lambda: DiscreteLaplace.calibrate(eps),
        lambda: Laplace.calibrate(eps),
        lambda: noise_for("discrete_laplace", eps),
        lambda: exponential_mechanism(SCORES, eps, 1.0, rng()),
        lambda: exponential_probabilities(SCORES, eps, 1.0),
    ):
        with pytest.raises(ValueError, match="epsilon"):
            call()


@pytest.mark.parametrize("scale", BAD_EPS)
def test_bad_scale_rejected(scale):
    for cls in (DiscreteLaplace, Laplace):
        with pytest.raises(ValueError, match="scale"):
            cls(scale)
    with pytest.raises(ValueError, match="scale"):
        GeneralizedCauchy(4.0, scale)


@pytest.mark.parametrize("gamma", [1.0, 0.5, float("nan"), float("inf")])
def test_bad_gamma_rejected(gamma):
    with pytest.raises(ValueError, match="gamma"):
        GeneralizedCauchy(gamma)


def test_noise_for():
    assert noise_for(None, 0.5) == DiscreteLaplace(2.0)
    assert noise_for("discrete_laplace", 0.5, 3.0) == DiscreteLaplace(6.0)
    assert noise_for("laplace", 2.0) == Laplace.calibrate(2.0, 1.0)
    assert noise_for("laplace", 2.0).epsilon(1.0) == pytest.approx(2.0, rel=1e-12)
    with pytest.raises(ValueError, match="discrete_laplace.*laplace"):
        noise_for("gaussian", 1.0)


def test_describe():
    assert DiscreteLaplace(2.0).describe() == {
        "mechanism": "discrete_laplace",
        "scale": 2.0,
        "variance": DiscreteLaplace(2.0).variance,
    }
    d = Laplace(2.0).describe()
    assert d["mechanism"] == "laplace" and d["scale"] == 2.0 and d["variance"] == pytest.approx(8.0, rel=1e-8)
    assert d["grid"] == 2.0**-15
    assert GeneralizedCauchy(4.0).describe()["mechanism"] == "generalized_cauchy"
