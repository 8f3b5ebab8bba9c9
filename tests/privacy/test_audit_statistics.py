"""The audit's statistics can detect a violation and do not invent one (tests/privacy/audit.py)."""
import math

import numpy as np

from tests.privacy.audit import clopper_pearson, epsilon_lower_bound


def _randomized_response(eps, bit, n, rng):
    keep = rng.random(n) < math.exp(eps) / (1 + math.exp(eps))
    return np.where(keep, bit, 1 - bit)


def test_clopper_pearson_covers_and_is_exact_at_the_edges():
    lo, hi = clopper_pearson(0, 100, 0.05)
    assert lo == 0 and 0.03 < hi < 0.04  # 1 - 0.025^(1/100) = 0.0362
    lo, hi = clopper_pearson(50, 100, 0.05)
    assert 0.39 < lo < 0.41 and 0.59 < hi < 0.61


def test_randomized_response_bound_is_below_its_epsilon_and_close_with_many_runs():
    rng = np.random.default_rng(1)
    eps = 1.0
    a = _randomized_response(eps, 1, 400_000, rng)[:, None] == 1
    b = _randomized_response(eps, 0, 400_000, rng)[:, None] == 1
    r = epsilon_lower_bound(a, b, ["reports 1"])
    assert 0.95 * eps < r.epsilon_lower_bound <= eps


def test_a_broken_mechanism_is_caught():
    """Claimed ε = 1, true ε = 3: the bound exceeds the claim."""
    rng = np.random.default_rng(2)
    a = _randomized_response(3.0, 1, 20_000, rng)[:, None] == 1
    b = _randomized_response(3.0, 0, 20_000, rng)[:, None] == 1
    assert epsilon_lower_bound(a, b, ["reports 1"]).epsilon_lower_bound > 2.5


def test_delta_absorbs_a_rare_leak():
    """A mechanism that reveals the bit with probability 10⁻³ (and is otherwise silent) is
    (0, 10⁻³)-DP: pure-ε auditing finds a large bound, the (ε, δ) audit at that δ finds none."""
    rng = np.random.default_rng(3)
    leak = 1e-3
    a = (rng.random(400_000) < leak)[:, None]  # "reveals 1" under D
    b = np.zeros((400_000, 1), dtype=bool)      # never under D'
    assert epsilon_lower_bound(a, b, ["reveals"]).epsilon_lower_bound > 3
    assert epsilon_lower_bound(a, b, ["reveals"], delta=leak).epsilon_lower_bound == 0.0
