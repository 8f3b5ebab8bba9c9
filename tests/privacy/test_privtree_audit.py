"""Empirical audit of PrivTree bins (dpcore.measure.privtree) on neighbouring tables (fixed seeds, 95% jointly),
with an under-noised negative control that the audit catches ([numeric-columns] item 7; docs/methods/privtree.md).

D: n records at one point of [0, 1), so the nodes on its path (depths 0, 1, 2) hold n records each; D': one
record more there. θ is set so that the depth-1 node's biased count is just under θ (the test's full 1/λ) and
the depth-2 node's is just under the floor θ − δ under D and above it under D' (another 1/λ): the two nodes the
proof allows near the threshold. The event "the depth-2 node splits" (the edge 1/8 is released, which implies
its ancestors split) is where the two laws differ most.

The noise is drawn by the privacy layer's exact sampler for many runs at once, and each node's decision is
made by the module's own rule (``split_cutoffs``); ``tests/measure/test_privtree.py`` checks that ``grow_tree``
makes its decisions with that rule and that law.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpcore.measure.privtree import calibrated_scale, epsilon_of_scale, sampler_scale, split_cutoffs
from dpcore.privacy.mechanisms import DiscreteLaplace
from tests.privacy.audit import epsilon_lower_bound

pytestmark = pytest.mark.audit
RUNS = 60_000
N = 30
DEPTHS = (0, 1, 2)


def _path_splits(count: int, scale: float, bias: float, theta: float, seed: int) -> np.ndarray:
    """Whether the depth-2 node of the path splits (and so its ancestors), runs × 1."""
    cut = split_cutoffs([count] * len(DEPTHS), DEPTHS, Fraction(bias), Fraction(theta))
    z = DiscreteLaplace(scale).sample(np.random.default_rng(seed), (RUNS, len(DEPTHS)))
    return (z >= cut).all(axis=1, keepdims=True)


def _pair(eps_noise: float, seed: int):
    scale = sampler_scale(calibrated_scale(eps_noise))
    bias = scale * math.log(2) * (1 + 1e-12)
    theta = N - bias + 0.5  # depth 1: b = θ − 0.5; depth 2: b = θ − δ (floor) under D, θ − δ + 0.5 under D'
    return _path_splits(N, scale, bias, theta, seed), _path_splits(N + 1, scale, bias, theta, seed + 1)


def test_privtree_audit_stays_within_its_epsilon():
    eps = 1.0
    assert epsilon_of_scale(sampler_scale(calibrated_scale(eps))) <= eps
    a, b = _pair(eps, 51)
    lb = epsilon_lower_bound(a, b, ["1/8 is an edge"]).epsilon_lower_bound
    assert 0.5 * eps < lb <= eps  # the audit has power here (exact loss 0.70), and finds no violation


def test_privtree_under_noised_is_caught():
    """Noise for ε = 2 while the ledger would say 1: the audit sees more than 1."""
    a, b = _pair(2.0, 52)
    assert epsilon_lower_bound(a, b, ["1/8 is an edge"]).epsilon_lower_bound > 1.0


def test_privtree_without_the_depth_bias_is_caught():
    """A plausible mistake: the paper's λ but no depth bias (δ = 0), so every node on a long path costs up to 1/λ.
    With 6 nodes of the path each at θ (the floor, with δ = 0) under D and over it under D', the event "all 6
    split" separates D and D' by about 6/λ ≈ 1.8 > ε."""
    scale = sampler_scale(calibrated_scale(1.0))
    depths = list(range(6))
    cut_d = split_cutoffs([N] * 6, depths, Fraction(0), Fraction(N) + Fraction(1, 2))
    cut_d2 = split_cutoffs([N + 1] * 6, depths, Fraction(0), Fraction(N) + Fraction(1, 2))
    z = DiscreteLaplace(scale).sample(np.random.default_rng(53), (2, RUNS, 6))
    a, b = (z[0] >= cut_d).all(axis=1, keepdims=True), (z[1] >= cut_d2).all(axis=1, keepdims=True)
    assert epsilon_lower_bound(a, b, ["the path splits to depth 6"]).epsilon_lower_bound > 1.0
