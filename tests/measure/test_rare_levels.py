"""Rare levels measured together (dpcore.measure.rare_levels; MST under (ε, δ)): which levels merge,
the recoding of records and count tables, the re-expressed one-way margin, the spreading back
(its law), the sensitivity of a margin over merged levels (brute force), and MST's use of it."""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.counting.count_table import CountTable
from dpcore.estimate.draws import IIDDraw, RecodedDraw, records
from dpcore.measure.margins import NoisyMargin, margin_counts
from dpcore.measure.rare_levels import RARE_SDS, find_rare_levels

SHAPE = (5, 3, 4)


def _one_way(values_by_attr, variance=4.0):
    return [NoisyMargin((j,), np.asarray(v, float), variance) for j, v in enumerate(values_by_attr)]


def test_which_levels_merge():
    """Below 3σ (σ = 2 here: below 6) is rare; at least two rare levels and one kept are needed; an exact
    margin (variance 0) merges nothing."""
    rare = find_rare_levels(_one_way([[50, 5.9, -3, 6.0, 2], [40, 1, 30], [0, 1, 2, 3]]), SHAPE)
    assert list(rare.merged[0]) == [1, 2, 4]  # 6.0 is not below 6
    assert len(rare.merged[1]) == 0  # one rare level only: nothing to merge
    assert len(rare.merged[2]) == 0  # every level rare: nothing kept, nothing merged
    assert rare.model_shape == (3, 3, 4) and rare.any
    assert np.allclose(rare.spread[0], np.array([5.9, 0, 2]) / 7.9)  # noisy counts clipped at 0
    exact = find_rare_levels([NoisyMargin.exact((0,), [50, 1, 1, 1, 1])], (5,))
    assert not exact.any
    assert RARE_SDS == 3.0
    none_positive = find_rare_levels(_one_way([[50, -1, -2, 30, 0]]), (5,))
    assert np.allclose(none_positive.spread[0], 1 / 3)  # equal shares when no merged count is positive


def test_recoding_records_and_count_tables_and_the_margin():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, s, 400) for s in SHAPE])
    rare = find_rare_levels(_one_way([[50, 1, 1, 30, 1], [40, 20, 30], [9, 9, 9, 9]]), SHAPE)
    Y = rare.recode(X)
    assert Y.max(axis=0).tolist() <= [s - 1 for s in rare.model_shape]
    # the merged levels' records are one level; the others keep their relative order
    lookup = rare.lookup(0)
    assert np.array_equal(Y[:, 0], lookup[X[:, 0]]) and list(lookup) == [0, 2, 2, 1, 2]
    table = rare.recode(CountTable.from_codes(X, SHAPE))
    for axes in [(0,), (0, 1), (0, 2)]:
        assert np.array_equal(margin_counts(table, rare.model_shape, axes), margin_counts(Y, rare.model_shape, axes))
    m = rare.margin(NoisyMargin((0,), np.array([50, 1.5, -1, 30, 2.5]), 4.0))
    assert np.allclose(m.values, [50, 30, 3.0]) and m.variance == 4.0 and m.values.sum() == pytest.approx(83)


def test_spreading_back_has_the_stated_law_whole_in_chunks_and_in_parts():
    """Kept levels map back exactly; every "other" record gets merged level i with probability
    spread[i]: over 30,000 records each frequency is within 4.5 standard errors; chunks of 1,000
    and 3 partitions give records of the declared domain, as many as the draw's n."""
    rare = find_rare_levels(_one_way([[50, 1, 4, 30, 1], [40, 20, 30], [9, 9, 9, 9]]), SHAPE)

    class Model:  # model codes: attribute 0 uniform over its 3 model levels, the others 0
        def sample(self, n, rng):
            return np.column_stack([rng.integers(0, 3, n), np.zeros(n, int), np.zeros(n, int)])

    draw = RecodedDraw(IIDDraw(Model(), 30_000), rare.expand)
    out = records(draw, np.random.default_rng(1), 3)
    assert out.shape == (30_000, 3) and set(np.unique(out[:, 0])) <= {0, 1, 2, 3, 4}
    other = np.isin(out[:, 0], rare.merged[0])
    freq = np.array([(out[other, 0] == c).mean() for c in rare.merged[0]])
    se = np.sqrt(rare.spread[0] * (1 - rare.spread[0]) / other.sum())
    assert (np.abs(freq - rare.spread[0]) <= 4.5 * se).all()
    assert abs(other.mean() - 1 / 3) < 0.02  # the "other" model level's share, untouched
    chunked = records(draw, np.random.default_rng(2), 3, chunk_rows=1_000)
    parts = [records(draw.part(k, 3, seed=5, set_index=0), np.random.default_rng(k), 3) for k in range(3)]
    for got in (chunked, np.vstack(parts)):
        assert len(got) == 30_000 and got[:, 0].max() <= 4


@pytest.mark.parametrize("delta_l1", [1, 2])
def test_a_margin_over_merged_levels_has_the_declared_sensitivity(delta_l1):
    """Brute force over every table of at most 3 records on a 3×2 domain, levels {0, 2} of the first
    attribute merged: neighbouring tables (add/remove: Δ = 1; replace: Δ = 2) have margins over the
    merged levels within Δ in L1, and some pair attains Δ."""
    shape = (3, 2)
    rare = find_rare_levels(_one_way([[1, 50, 2], [40, 40]]), shape)
    assert list(rare.merged[0]) == [0, 2]
    cells = list(itertools.product(range(3), range(2)))
    worst = 0
    for k in range(4):
        for rows in itertools.combinations_with_replacement(cells, k):
            X = np.array(rows, dtype=int).reshape(-1, 2)
            if delta_l1 == 1:
                neighbours = [np.array([*rows, c]).reshape(-1, 2) for c in cells]
            else:
                neighbours = [np.array([*rows[:i], c, *rows[i + 1:]]).reshape(-1, 2) for i in range(k) for c in cells]
            base = margin_counts(rare.recode(X), rare.model_shape, (0, 1))
            for Y in neighbours:
                worst = max(worst, int(np.abs(margin_counts(rare.recode(Y), rare.model_shape, (0, 1)) - base).sum()))
    assert worst == delta_l1


def test_mst_under_delta_merges_rare_levels_and_keeps_the_declared_domain():
    """A table with an attribute of many rare levels: under (ε, δ) MST merges some (the manifest's
    diagnostics name them), its ledger charges the same mechanisms at the same ρ as with
    ``rare_levels="keep"`` (the pairs chosen may differ),
    and the set uses only declared levels; pure ε keeps every level (``auto`` is ``keep``)."""
    rng = np.random.default_rng(3)
    n = 3000
    a = rng.choice(12, size=n, p=np.r_[[0.45, 0.45], np.full(10, 0.01)])
    df = pd.DataFrame({"a": [f"l{v}" for v in a], "b": rng.choice(["x", "y"], n), "c": rng.choice(["u", "v", "w"], n)})
    dom = dpcore.infer_domain(df).declared()
    rel = dpcore.synthesize(df, "mst", 1.0, seed=4, domain=dom, delta=1e-9)
    merged = rel.diagnostics["per_set"][0]["merged_levels"]
    assert len(merged["a"]) >= 2 and set(merged) == {"a"}
    keep = dpcore.synthesize(df, "mst", 1.0, seed=4, domain=dom, delta=1e-9, rare_levels="keep")
    charges = [(c["mechanism"], c["rho"]) for c in rel.ledger.to_dict()["charges"]]
    assert charges == [(c["mechanism"], c["rho"]) for c in keep.ledger.to_dict()["charges"]]
    assert rel.rho == pytest.approx(keep.rho)
    assert set(rel.sets[0]["a"]) <= set(dom["a"].levels)
    pure = dpcore.synthesize(df, "mst", 1.0, seed=4, domain=dom)
    assert pure.options["rare_levels"] == "keep" and rel.options["rare_levels"] == "merge"
