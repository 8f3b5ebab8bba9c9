"""Partitioned preprocessing and amplification (Merrill 2021 ch. 5, Table 5.1)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpcore.errors import InputError, OptionError
from dpcore.survey.partition import (
    amplification_table,
    amplified_epsilon,
    effective_epsilon,
    laplace_proportion,
    max_useful_beta,
    partition,
    release_to_user,
)


def test_table_5_1_exactly():
    t = amplification_table((0.1, 0.5, 1, 2, 5, 10), beta=0.1)
    mb = t["max_beta"].tolist()
    assert [f"{x:.3f}"[1:] for x in mb[:5]] == [".087", ".282", ".387", ".464", ".498"]
    # the thesis prints .499 for ε = 10: (e^10 − 1)/(2e^10 − 1) = .49999 rounds to .500, so the
    # table truncates there (every bound is < 1/2)
    assert 0.499 < mb[5] < 0.5
    ep = t["epsilon_prime"].tolist()
    assert math.isnan(ep[0])  # "N/A": at ε = .1 and β = 1/10, ε' = .116 > ε
    assert [f"{x:.2f}" for x in ep[1:]] == ["0.17", "0.26", "0.60", "2.86", "7.80"]


def test_amplification_formula_and_threshold():
    for eps in (0.1, 1.0, 3.0):
        b = max_useful_beta(eps)
        assert amplified_epsilon(eps, b) == pytest.approx(eps, rel=1e-12)  # equality at the threshold
        assert amplified_epsilon(eps, 0.9 * b) < eps < amplified_epsilon(eps, min(0.99, 1.1 * b))
        beta = 0.3
        want = math.log((math.exp(eps) * beta + 1 - beta) / (1 - beta))
        assert amplified_epsilon(eps, beta) == pytest.approx(want, rel=1e-13)
        assert effective_epsilon(eps, 0.95) == eps
    with pytest.raises(OptionError, match="strictly between 0 and 1"):
        amplified_epsilon(1, 1.0)


def test_partition_is_a_random_permutation_cut_into_fixed_sizes():
    p = partition(10, [3, 3, 4], rng=np.random.default_rng(0))
    assert p.sizes == (3, 3, 4)
    assert sorted(np.concatenate(p.pieces).tolist()) == list(range(10))
    q = partition(10, pieces=3, rng=np.random.default_rng(0))
    assert q.sizes == (4, 3, 3)
    # every record is equally likely to land in every piece (data-independent split)
    hits = np.zeros(6)
    for s in range(3000):
        hits[partition(6, [2, 4], rng=np.random.default_rng(s)).pieces[0]] += 1
    assert np.allclose(hits / 3000, 2 / 6, atol=0.04)
    with pytest.raises(OptionError, match="add up"):
        partition(10, [3, 3], rng=np.random.default_rng(0))


def test_release_to_user_charges_min_of_eps_and_eps_prime():
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"adult": rng.random(1000) < 0.7})
    p = partition(df, pieces=10, rng=rng)
    rel = release_to_user(df, p, [0], laplace_proportion("adult", True), 2.0, rng)
    assert rel.beta == pytest.approx(0.1)
    assert rel.epsilon_effective == pytest.approx(amplified_epsilon(2.0, 0.1))
    assert rel.ledger.epsilon == pytest.approx(rel.epsilon_effective, abs=1e-12)
    assert 0.5 < rel.values[0] < 0.9
    # several pieces to one user: β is their total share; no saving past the threshold
    rel3 = release_to_user(df, p, [0, 1, 2, 3, 4, 5], laplace_proportion("adult", True), 0.1, rng)
    assert rel3.beta == pytest.approx(0.6) and rel3.ledger.epsilon == pytest.approx(0.1)
    charge = next(iter(rel.ledger.charges()))[1]
    assert charge.neighbours.startswith("replace") and charge.sensitivity == pytest.approx(0.01)
    with pytest.raises(OptionError, match="distinct"):
        release_to_user(df, p, [0, 0], laplace_proportion("adult", True), 1.0, rng)
    with pytest.raises(InputError, match="'nope'"):
        release_to_user(df, p, [0], laplace_proportion("nope", True), 1.0, rng)
