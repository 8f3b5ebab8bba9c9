"""Empirical audits of the DP domain finders on neighbouring tables (fixed seeds, 95% jointly), each with an
under-noised negative control that the audit catches ([numeric-columns]; docs/methods/dp-domain.md).

* The range finder (dpcore.measure.bounds): D holds, in the bin [16, 32), a count just below the threshold, D'
  one record more; the event "the upper bound reaches 32" is where the two laws differ most.
* The DP levels (dpcore.measure.levels): (a) a common level's count one apart; (b) a level that only D' holds,
  once: the stability case, whose probability the threshold keeps under δ.

The noise is drawn by the privacy layer's exact samplers for many runs at once, and the bounds / levels are
computed from it by the modules' own post-processing (``bounds_from_noisy``, the threshold of ``level_threshold``).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpcore.measure.bounds import LogBins, bounds_from_noisy, threshold
from dpcore.measure.levels import level_counts, level_threshold
from dpcore.privacy.budget import Epsilon, Rho
from dpcore.privacy.definitions import PureDP, ZeroConcentratedDP
from dpcore.privacy.neighbours import Neighbours
from dpcore.privacy.zcdp import epsilon_of_rho
from tests.privacy.audit import epsilon_lower_bound

pytestmark = pytest.mark.audit
RUNS = 60_000
#: the range finder noises all 149 bins of each run (exact sampler): fewer runs keep it to seconds
RANGE_RUNS = 20_000


def _upper_reaches(values: pd.Series, mech, tau: float, rng) -> np.ndarray:
    """Whether each run's DP upper bound reaches 32, runs × 1 (the range finder on ``values``)."""
    bins = LogBins.for_kind(False)
    counts = np.bincount(bins.index(values), minlength=bins.size).astype(np.int64)
    noisy = mech.release(np.tile(counts, (RANGE_RUNS, 1)), rng)
    return np.array([[bounds_from_noisy(row, bins, tau).upper >= 32] for row in noisy])


def _range_pair(eps_noise: float, seed: int):
    """D: 400 values in [4, 8) and c in [16, 32), c = ⌈τ⌉ − 2; D': one more in [16, 32)."""
    mech = PureDP().count_noise(Epsilon(eps_noise), Neighbours())
    tau = threshold(mech, LogBins.for_kind(False).size)
    c = math.ceil(tau) - 2
    d = pd.Series([5.0] * 400 + [20.0] * c)
    d2 = pd.concat([d, pd.Series([20.0])], ignore_index=True)
    rng = np.random.default_rng(seed)
    return _upper_reaches(d, mech, tau, rng), _upper_reaches(d2, mech, tau, rng)


def test_range_finder_audit_stays_within_its_epsilon():
    eps = 1.0
    a, b = _range_pair(eps, 31)
    lb = epsilon_lower_bound(a, b, ["upper ≥ 32"]).epsilon_lower_bound
    assert 0.5 * eps < lb <= eps  # the audit has power here, and finds no violation


def test_range_finder_under_noised_is_caught():
    """Noise for ε = 2 while the ledger would say 1 (half the scale): the audit sees more than 1."""
    a, b = _range_pair(2.0, 32)
    assert epsilon_lower_bound(a, b, ["upper ≥ 32"]).epsilon_lower_bound > 1.0


def _levels_runs(values: pd.Series, keys_of_interest, rho: float, tau: float, seed: int) -> np.ndarray:
    """Whether each level of interest is released, runs × levels (the thresholded histogram on ``values``)."""
    keys, counts = level_counts(values)
    mech = ZeroConcentratedDP(1e-6).count_noise(Rho(rho), Neighbours())
    noisy = mech.release(np.tile(counts, (RUNS, 1)), np.random.default_rng(seed))
    passed = noisy >= tau
    cols = [passed[:, keys.index(k)] if k in keys else np.zeros(RUNS, bool) for k in keys_of_interest]
    return np.stack(cols, axis=1)


def _levels_pair(rho: float, delta_thr: float, tau: float | None = None):
    sigma = 1.0 / math.sqrt(2.0 * rho)
    tau = level_threshold(sigma, delta_thr) if tau is None else tau
    c = max(1, math.ceil(tau) - 1)
    d = pd.Series(["a"] * 500 + ["x"] * c)
    # two neighbours of D: one more "x" (the count case) and one "y" (the stability case)
    dx = pd.concat([d, pd.Series(["x"])], ignore_index=True)
    dy = pd.concat([d, pd.Series(["y"])], ignore_index=True)
    a = _levels_runs(d, ["x", "y"], rho, tau, 41)
    return a, _levels_runs(dx, ["x", "y"], rho, tau, 42), _levels_runs(dy, ["x", "y"], rho, tau, 43)


def test_dp_levels_audit_stays_within_its_epsilon_delta():
    """Claim: δ_thr-approximate ρ-zCDP, i.e. (ε(ρ, δ_thr), 2·δ_thr)-DP."""
    rho, delta_thr = 0.5, 1e-6
    claimed = epsilon_of_rho(rho, delta_thr)
    a, bx, by = _levels_pair(rho, delta_thr)
    for b in (bx, by):
        lb = epsilon_lower_bound(a, b, ["x released", "y released"], delta=2 * delta_thr).epsilon_lower_bound
        assert lb <= claimed
    assert not by[:, 1].any()  # a level seen once never passed in 60,000 runs (P ≤ 1e-6)
    lb_x = epsilon_lower_bound(a[:, :1], bx[:, :1], ["x released"], delta=2 * delta_thr).epsilon_lower_bound
    assert lb_x > 0.3  # the count case has power


def test_dp_levels_without_the_delta_threshold_are_caught():
    """A plausible mistake: release every observed level whose noisy count is ≥ 1 (no threshold set from δ).
    A level that only D' holds is then released about half the time, never under D."""
    rho, delta_thr = 0.5, 1e-6
    a, _, by = _levels_pair(rho, delta_thr, tau=1.0)
    lb = epsilon_lower_bound(a[:, 1:], by[:, 1:], ["y released"], delta=2 * delta_thr).epsilon_lower_bound
    assert lb > epsilon_of_rho(rho, delta_thr)
