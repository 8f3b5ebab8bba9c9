"""The estimation layer's protocol ([architecture]): every estimator of dpcore/estimate takes
NoisyMargins and returns a model with ``marginal`` and ``sample``.

One test, parametrised over all estimators, fits the exact margins of a small known table
and checks (1) the protocol, (2) that the model's marginals recover the margins within the
tolerance stated per estimator, (3) that the model's marginals agree with one another and
with the total, and (4) that ``sample`` draws from the model's law: a χ² goodness-of-fit
test of 20,000 records on the 24 cells of the full table against ``marginal`` of all
attributes, at level 10⁻³ with a fixed seed (the same statistic rejects a wrong law, last
test below)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpcore.estimate.dense_ipf import DenseIPF
from dpcore.estimate.estimator import Estimator, Model
from dpcore.estimate.junction_tree import JunctionTreeIPF
from dpcore.estimate.raking import Raking
from dpcore.estimate.record_fit import RecordFit
from dpcore.measure.margins import NoisyMargin, measure
from dpcore.privacy.budget import Epsilon, Rho
from dpcore.privacy.definitions import ZeroConcentratedDP
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.mechanisms import DiscreteLaplace
from dpcore.privacy.neighbours import Neighbours

SHAPE = (3, 4, 2)
#: a known table of 2,400 records; its margins on (0, 1) and (1, 2) are what the IPFs fit
TABLE = np.random.default_rng(20).multinomial(2400, np.random.default_rng(21).dirichlet(np.ones(24))).reshape(SHAPE)
TOTAL = float(TABLE.sum())
DRAWS = 20_000
LEVEL = 1e-3


def _margin(axes) -> np.ndarray:
    other = tuple(i for i in range(len(SHAPE)) if i not in axes)
    return TABLE.sum(axis=other).astype(float)


def _two_way() -> list[NoisyMargin]:
    """Exact margins, stated with the noise variance 1 per cell (the estimators that weigh by
    variance need one; the values carry no noise)."""
    return [NoisyMargin(ax, _margin(ax), 1.0) for ax in [(0, 1), (1, 2)]]


def _one_way() -> list[NoisyMargin]:
    return [NoisyMargin.exact((a,), _margin((a,))) for a in range(len(SHAPE))]


def _seed_table() -> np.ndarray:
    """A seed with the known table's odds ratios and other one-way margins."""
    a, b, c = (np.linspace(1, 2, s) for s in SHAPE)
    return (TABLE + 0.5) * np.einsum("i,j,k->ijk", a, b[::-1], c)


#: (name, estimator, margins it fits, largest |marginal − margin| / total it must reach)
CASES = [
    ("dense IPF", lambda: DenseIPF(tol=1e-9, max_iter=2000), _two_way, 1e-9),
    ("junction-tree IPF, pooled targets (AIM, MST)", lambda: JunctionTreeIPF(max_sweeps=2000, tol=1e-9), _two_way,
     1e-9),
    ("junction-tree IPF like the dense one (ipf)", lambda: JunctionTreeIPF.like_dense(tol=1e-9, max_sweeps=2000),
     _two_way, 1e-9),
    # GUM moves whole records: on consistent integer margins within one record of every cell
    # (shrinkage at variance 1 per cell moves the targets by less than that)
    ("record fit", lambda: RecordFit(np.random.default_rng(3), shrink=False), _two_way, 1 / TOTAL),
    ("record fit after shrinkage (ipf)", lambda: RecordFit(np.random.default_rng(3)), _two_way, 1 / TOTAL),
    ("raking (post-stratification)", lambda: Raking(_seed_table(), tol=1e-12), _one_way, 1e-9),
]


@pytest.mark.parametrize("name, make, margins, tol", CASES, ids=[c[0] for c in CASES])
def test_every_estimator_meets_the_protocol(name, make, margins, tol):
    est, ms = make(), margins()
    assert isinstance(est, Estimator)
    model, info = est.fit(SHAPE, ms, TOTAL)
    assert isinstance(model, Model)
    assert {"iterations", "converged"} <= set(info) and info["converged"], info
    # (2) the model recovers the margins it was fitted to
    for m in ms:
        got = model.marginal(m.axes)
        assert got.shape == m.values.shape
        assert np.abs(got - m.values).max() <= tol * TOTAL, (m.axes, np.abs(got - m.values).max())
    # (3) the model's marginals agree with one another and with the total
    full = model.marginal((0, 1, 2))
    assert full.shape == SHAPE and (full >= 0).all()
    assert full.sum() == pytest.approx(TOTAL, rel=1e-9)
    np.testing.assert_allclose(model.marginal((0, 2)), full.sum(axis=1), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(model.marginal((1,)), full.sum(axis=(0, 2)), rtol=1e-9, atol=1e-9)
    # (4) sample draws from marginal/total
    codes = model.sample(DRAWS, np.random.default_rng(11))
    assert codes.shape == (DRAWS, len(SHAPE)) and codes.dtype.kind == "i"
    assert _p_value(codes, full / full.sum()) > LEVEL


def _p_value(codes: np.ndarray, law: np.ndarray) -> float:
    """χ² goodness of fit of the records' cells to ``law``; a record in a cell of probability 0
    is an outright rejection (p = 0)."""
    seen = np.bincount(np.ravel_multi_index(tuple(codes.T), law.shape), minlength=law.size)
    p = law.ravel()
    if seen[p == 0].any():
        return 0.0
    return float(stats.chisquare(seen[p > 0], p[p > 0] * len(codes)).pvalue)


def test_the_sampling_check_rejects_a_wrong_law():
    """Power: the same 20,000 draws from the fitted dense model are rejected against the uniform
    law and against the known table's law with two cells swapped."""
    model, _ = DenseIPF(tol=1e-9).fit(SHAPE, _two_way(), TOTAL)
    codes = model.sample(DRAWS, np.random.default_rng(11))
    assert _p_value(codes, np.full(SHAPE, 1.0 / 24)) < LEVEL
    law = model.marginal((0, 1, 2)) / TOTAL
    order = np.argsort(law.ravel())
    swapped = law.ravel().copy()
    swapped[[order[0], order[-1]]] = swapped[[order[-1], order[0]]]
    assert _p_value(codes, swapped.reshape(SHAPE)) < LEVEL


def test_raking_keeps_the_seeds_odds_ratios():
    """The seed has the known table's interactions and other one-way margins: raking it to the
    table's one-way margins gives back the table (+0.5 per cell, the seed's offset, rescaled)."""
    model, info = Raking(_seed_table(), tol=1e-13, max_iter=5000).fit(SHAPE, _one_way(), TOTAL)
    assert info["converged"] and info["margins_consistent"]
    # the unique table with the seed's odds ratios and the table's one-way margins
    want, _ = Raking(TABLE + 0.5, tol=1e-13, max_iter=5000).fit(SHAPE, _one_way(), TOTAL)
    np.testing.assert_allclose(model.table, want.table, rtol=1e-8)


def test_record_fit_releases_its_records_and_samples_from_them():
    model, info = RecordFit(np.random.default_rng(1), records=500, shrink=False).fit(SHAPE, _two_way(), TOTAL)
    assert model.records.shape == (500, 3)
    assert model.marginal(()) == 500.0
    np.testing.assert_array_equal(model.marginal((0, 1, 2)).ravel(),
                                  np.bincount(np.ravel_multi_index(tuple(model.records.T), SHAPE), minlength=24))


def test_estimators_refuse_margins_of_another_domain():
    with pytest.raises(ValueError, match="does not fit a domain"):
        DenseIPF().fit((3, 5, 2), _two_way(), TOTAL)
    with pytest.raises(ValueError, match="does not fit a domain"):
        JunctionTreeIPF().fit((3, 4), _two_way(), TOTAL)
    with pytest.raises(Exception, match="one one-way margin per attribute"):
        Raking(_seed_table()).fit(SHAPE, _one_way()[:2], TOTAL)


# ---------------------------------------------------------------------------- NoisyMargin


def test_noisy_margin_is_a_frozen_record_of_one_measurement():
    y = np.arange(6.0).reshape(2, 3)
    mech = DiscreteLaplace(2.0)
    m = NoisyMargin((0, 2), y, mech.variance, mech)
    assert m.cells == 6 and m.axes == (0, 2) and m.variance == mech.variance
    with pytest.raises(ValueError):
        m.values[0, 0] = 1.0  # read-only ...
    y[0, 0] = -1.0  # ... a view: the caller's array stays writable
    post = m.with_values(np.clip(m.values, 0, None).ravel())  # post-processing keeps the rest
    assert post.values.shape == (2, 3) and post.variance == m.variance and post.mechanism is mech
    assert NoisyMargin.exact((1,), [4.0, 5.0]).variance == 0.0
    for bad in [dict(axes=(2, 0), values=y, variance=1.0), dict(axes=(0,), values=y, variance=1.0),
                dict(axes=(0, 1), values=y, variance=-1.0)]:
        with pytest.raises(ValueError):
            NoisyMargin(**bad)


def test_measure_returns_the_noisy_margin_and_its_mechanisms_variance():
    X = np.array([[0, 1], [1, 1], [1, 0], [0, 1]])
    ledger = Ledger("t")
    m = measure(X, (2, 2), (0, 1), Epsilon(1.0), Neighbours("add_remove"), np.random.default_rng(0), ledger,
                "margin a × b")
    assert isinstance(m, NoisyMargin) and m.axes == (0, 1) and m.values.shape == (2, 2)
    assert m.mechanism == DiscreteLaplace.calibrate(1.0, 1.0) and m.variance == m.mechanism.variance
    assert ledger.epsilon == pytest.approx(1.0)
    # under zCDP the same call spends ρ with discrete Gaussian noise, and the margin says so
    rho = Ledger("t", unit="rho", delta=1e-6)
    g = measure(X, (2, 2), (0,), Rho(0.5), Neighbours("add_remove"), np.random.default_rng(0), rho, "margin a",
                definition=ZeroConcentratedDP(1e-6))
    assert g.mechanism.name == "discrete_gaussian" and g.variance == g.mechanism.variance > 0
    assert rho.spent.value == pytest.approx(0.5)
