"""The record fit above RECORD_FIT_MAX_RECORDS (ipf's fit of wide tables): m fitted records repeated up to n."""
from __future__ import annotations

import itertools

import numpy as np

from dpcore.counting.rows import margin_counts
from dpcore.estimate.record_fit import fit_records, fit_records_capped

SHAPE = (3, 4, 2, 5)
AXES = list(itertools.combinations(range(len(SHAPE)), 2))


def _targets(seed: int):
    rng = np.random.default_rng(seed)
    return [rng.random((SHAPE[a], SHAPE[b])) * 100 for a, b in AXES]


def test_at_most_cap_records_is_the_plain_record_fit():
    t = _targets(0)
    a, ia = fit_records(t, AXES, SHAPE, 400, np.random.default_rng(5))
    b, ib = fit_records_capped(t, AXES, SHAPE, 400, np.random.default_rng(5), cap=400)
    np.testing.assert_array_equal(a, b)
    assert ia == ib and "fitted_records" not in ib


def test_above_cap_the_fitted_records_are_repeated():
    t = _targets(1)
    n, cap = 1037, 200
    fitted, _ = fit_records(t, AXES, SHAPE, cap, np.random.default_rng(9))
    codes, info = fit_records_capped(t, AXES, SHAPE, n, np.random.default_rng(9), cap=cap)
    assert codes.shape == (n, len(SHAPE)) and info["fitted_records"] == cap
    q = n // cap
    for ax in AXES:
        got = margin_counts(codes, SHAPE, ax)
        base = margin_counts(fitted, SHAPE, ax)
        # q copies of every fitted record, plus n mod cap distinct ones of them
        assert (got >= q * base).all() and (got <= (q + 1) * base).all()
        assert got.sum() == n
    # every output record is a fitted record, and none is used more than q + 1 times
    keys = np.ravel_multi_index(tuple(codes.T), SHAPE)
    fkeys = np.ravel_multi_index(tuple(fitted.T), SHAPE)
    assert np.isin(keys, fkeys).all()
    assert np.bincount(keys).max() <= (q + 1) * np.bincount(fkeys).max()
