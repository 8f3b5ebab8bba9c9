"""The record fit above RECORD_FIT_MAX_RECORDS (ipf's fit of wide tables, long outputs): the fitted
records' cells weighted by IPF on that support, and the output drawn from the weights."""
from __future__ import annotations

import itertools

import numpy as np
from scipy import stats

from dpcore.counting.rows import margin_counts
from dpcore.estimate.draws import records
from dpcore.estimate.record_fit import FittedRecords, RecordFit, WeightedRecords, fit_records, support_ipf
from dpcore.measure.margins import NoisyMargin

SHAPE = (3, 4, 2, 5)
AXES = list(itertools.combinations(range(len(SHAPE)), 2))


def _targets(seed: int):
    """Two-way margins of a random table of 10^4 records, each cell with a little noise (clipped at 0)."""
    rng = np.random.default_rng(seed)
    truth = rng.dirichlet(np.ones(int(np.prod(SHAPE))) * 0.5).reshape(SHAPE) * 10_000
    return [np.clip(truth.sum(axis=tuple(i for i in range(4) if i not in (a, b)))
                    + rng.normal(0, 5, (SHAPE[a], SHAPE[b])), 0, None) for a, b in AXES]


def _margins(targets):
    return [NoisyMargin(ax, t, 1.0, "none") for ax, t in zip(AXES, targets)]


def _distance(model_margin, targets, total):
    return np.mean([np.abs(model_margin(ax) - t * (total / t.sum())).sum() / (2 * total)
                    for ax, t in zip(AXES, targets)])


def test_at_most_cap_records_is_the_plain_record_fit():
    t = _targets(0)
    a, ia = fit_records(t, AXES, SHAPE, 400, np.random.default_rng(5))
    model, ib = RecordFit(np.random.default_rng(5), records=400, shrink=False, cap=400).fit(SHAPE, _margins(t), 400.0)
    assert isinstance(model, FittedRecords)
    np.testing.assert_array_equal(model.records, a)
    assert ia == ib and "fitted_records" not in ib


def test_above_cap_the_fitted_cells_are_weighted_to_the_margins_not_repeated():
    t = _targets(1)
    n, cap = 50_000, 300
    fitted, _ = fit_records(t, AXES, SHAPE, cap, np.random.default_rng(9))
    model, info = RecordFit(np.random.default_rng(9), records=n, shrink=False, cap=cap).fit(SHAPE, _margins(t),
                                                                                            float(n))
    assert isinstance(model, WeightedRecords) and info["fitted_records"] == cap
    # the support is the fitted records' distinct cells; the weights sum to n
    np.testing.assert_array_equal(model.records, np.unique(fitted, axis=0))
    assert info["support"] == len(model.records) and abs(model.weights.sum() - n) < 1e-6 * n
    # IPF on the support brings its margins closer to the targets than the repeated records' margins
    repeated = _distance(lambda ax: margin_counts(fitted, SHAPE, ax) * (n / cap), t, n)
    weighted = _distance(model.marginal, t, n)
    assert weighted < 0.7 * repeated, (weighted, repeated)
    assert abs(info["support_distance"] - weighted) < 1e-9


def test_the_long_output_is_drawn_iid_from_the_weights():
    t = _targets(2)
    n = 40_000
    model, _ = RecordFit(np.random.default_rng(4), records=n, shrink=False, cap=200).fit(SHAPE, _margins(t), float(n))
    rng = np.random.default_rng(12)
    codes = records(model.draw(n, rng), rng, len(SHAPE), chunk_rows=7_000)  # in chunks
    assert codes.shape == (n, len(SHAPE))
    keys = np.ravel_multi_index(codes.T, SHAPE)
    support = np.ravel_multi_index(model.records.T.astype(np.int64), SHAPE)
    assert np.isin(keys, support).all()  # every record is a fitted cell
    observed = np.array([(keys == k).sum() for k in support])
    expected = model.weights / model.weights.sum() * n
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_support_ipf_reaches_consistent_margins_on_a_full_support():
    rng = np.random.default_rng(3)
    truth = rng.random(SHAPE) * 10
    targets = [truth.sum(axis=tuple(i for i in range(4) if i not in ax)) for ax in AXES]
    support = np.array(list(itertools.product(*[range(s) for s in SHAPE])))
    w, info = support_ipf(support, np.ones(len(support)), targets, AXES, SHAPE, float(truth.sum()))
    model = WeightedRecords(support, w, SHAPE)
    assert info["support_distance"] < 1e-3
    for ax, tt in zip(AXES, targets):
        np.testing.assert_allclose(model.marginal(ax), tt, rtol=5e-3, atol=1e-3)
