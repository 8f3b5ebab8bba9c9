"""Empirical audits of the mechanisms on neighbouring inputs (fixed seeds, 95% jointly).

Each mechanism runs many times on a query value and on its neighbour at the stated
sensitivity; threshold events on the output bound the privacy loss from below. The
bound must not exceed the claimed ε, and a deliberately mis-calibrated use must be caught.
"""
import numpy as np
import pytest

from dpcore.privacy.gaussian import DiscreteGaussian
from dpcore.privacy.mechanisms import DiscreteLaplace, ExponentialMechanism, Laplace
from tests.privacy.audit import epsilon_lower_bound, threshold_events

RUNS = 200_000


def _bound(a, b, thresholds, label, delta=0.0):
    return epsilon_lower_bound(*threshold_events(a, b, thresholds, label), delta=delta).epsilon_lower_bound


@pytest.mark.parametrize("eps,sens", [(1.0, 1.0), (0.5, 2.0)])
def test_discrete_laplace_counts(eps, sens):
    mech = DiscreteLaplace.calibrate(eps, sens)
    rng = np.random.default_rng(10)
    a = mech.release(np.zeros(RUNS, np.int64), rng)
    b = mech.release(np.full(RUNS, int(sens), np.int64), rng)
    lb = _bound(a, b, range(-4, 6), "count")
    assert 0.7 * eps < lb <= eps  # close to the claim: the audit has power here


def test_discrete_laplace_used_at_the_wrong_sensitivity_is_caught():
    """A count table under replace-one neighbours moves by 2; noise calibrated for 1 leaks 2ε."""
    mech = DiscreteLaplace.calibrate(1.0, 1.0)
    rng = np.random.default_rng(11)
    a = mech.release(np.zeros(RUNS, np.int64), rng)
    b = mech.release(np.full(RUNS, 2, np.int64), rng)
    assert _bound(a, b, range(-4, 6), "count") > 1.0


def test_discretised_laplace_real_values():
    eps, sens = 1.0, 0.37
    mech = Laplace.calibrate(eps, sens)
    rng = np.random.default_rng(12)
    x, x2 = 0.1234567, 0.1234567 + sens
    a = mech.release(np.full(RUNS, x), rng)
    b = mech.release(np.full(RUNS, x2), rng)
    assert _bound(a, b, np.linspace(-0.5, 1.0, 13), "value") <= eps
    # Mironov (2012): under textbook float Laplace many outputs are impossible under the
    # neighbour. Here every output of either input is a grid point, reachable from both.
    assert np.all(a / mech.grid == np.rint(a / mech.grid)) and np.all(b / mech.grid == np.rint(b / mech.grid))


def test_exponential_mechanism_scores_shifted_by_the_sensitivity():
    eps, sens = 1.0, 3.0
    mech = ExponentialMechanism.calibrate(eps, sens)
    rng = np.random.default_rng(13)
    u = np.array([0.0, 1.0, -2.0])
    u2 = u + np.array([sens, -sens, 0.0])  # the worst neighbour: two candidates move apart
    a = mech.select(np.tile(u, (RUNS, 1)), sens, rng)
    b = mech.select(np.tile(u2, (RUNS, 1)), sens, rng)
    hits_a = np.stack([a == k for k in range(3)], axis=1)
    hits_b = np.stack([b == k for k in range(3)], axis=1)
    lb = epsilon_lower_bound(hits_a, hits_b, ["pick 0", "pick 1", "pick 2"]).epsilon_lower_bound
    assert 0.5 * eps < lb <= eps


@pytest.mark.parametrize("eps,delta,sens", [(1.0, 1e-9, 1), (0.5, 1e-6, 2), (2.0, 1e-9, 1)])
def test_discrete_gaussian_counts(eps, delta, sens):
    """(ε, δ) through zCDP: noise for the largest ρ that converts to (ε, δ). Threshold events
    over ±4σ have probabilities ≥ 10⁻⁴, far above δ, so δ barely helps them; the bound must stay
    at or below the converted ε. (It cannot come close: at δ this small most of ε pays for tails
    no audit of this size sees; the exact curve is checked on the pmfs in
    tests/privacy/test_discrete_gaussian.py.)"""
    mech = DiscreteGaussian.calibrate(eps, sens, delta=delta)
    claimed = mech.epsilon(sens, delta=delta)
    assert claimed <= eps
    rng = np.random.default_rng(14)
    a = mech.release(np.zeros(RUNS, np.int64), rng)
    b = mech.release(np.full(RUNS, sens, np.int64), rng)
    s = mech.sigma
    lb = _bound(a, b, range(int(-4 * s), int(4 * s) + sens + 1), "count", delta=delta)
    assert 0.25 * claimed < lb <= claimed


def test_discrete_gaussian_calibrated_like_laplace_is_caught():
    """A plausible mistake: Gaussian noise of σ = Δ/ε, as if it were Laplace, claimed (1, 10⁻⁹).
    Its true ε at that δ is about 6.3 (the hockey-stick divergence of the pmfs); the audit sees
    more than the claimed 1."""
    mech = DiscreteGaussian(1.0)
    rng = np.random.default_rng(15)
    a = mech.release(np.zeros(RUNS, np.int64), rng)
    b = mech.release(np.ones(RUNS, np.int64), rng)
    assert _bound(a, b, range(-5, 7), "count", delta=1e-9) > 1.0


@pytest.mark.parametrize("eps", [1e-19, 1e-30, 1e-300])
def test_tiny_epsilon_never_releases_exact_values(eps):
    """[privacy-audit]: numpy's geometric saturated and released the exact table."""
    import dpcore

    for make in (lambda: DiscreteLaplace.calibrate(eps), lambda: Laplace.calibrate(eps)):
        with pytest.raises(dpcore.OptionError, match="too small"):
            make()
