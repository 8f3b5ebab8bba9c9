"""Tests for dpcore.metrics: table utility (S_pMSE, pMSE) and disclosure (p0, p1, ru)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from dpcore.metrics import Disclosure, UtilityTables, disclosure, utility_tables
from dpcore.metrics import tables as tables_mod


def _rows(cells: dict[tuple, int], columns=("A", "B")) -> pd.DataFrame:
    """A data frame holding ``count`` copies of each cell (row order shuffled)."""
    recs = [cell for cell, count in cells.items() for _ in range(count)]
    df = pd.DataFrame(recs, columns=list(columns), dtype=object)
    return df.sample(frac=1.0, random_state=3).reset_index(drop=True)


# ----------------------------------------------------------------- hand example

# A in {a1, a2}; B in {b1, b2, b3, missing}.  40 original rows, 60 synthetic rows.
# (a1,b3) and (a2,NA) are empty in both (dropped); (a1,b2) is only in the original,
# (a2,b2) only in the synthetic data.
HAND_Y = {("a1", "b1"): 10, ("a1", "b2"): 5, ("a2", "b1"): 8, ("a2", "b3"): 12, ("a1", None): 5}
HAND_S = {("a1", "b1"): 12, ("a2", "b1"): 15, ("a2", "b2"): 9, ("a2", "b3"): 14, ("a1", None): 10}


def test_hand_example_s_pmse_and_pmse():
    orig, syn = _rows(HAND_Y), _rows(HAND_S)
    assert len(orig) == 40 and len(syn) == 60

    # By hand.  Kept cells (y+s > 0), in the order
    # (a1,b1) (a1,b2) (a2,b1) (a2,b2) (a2,b3) (a1,NA):
    y = np.array([10, 5, 8, 0, 12, 5], dtype=float)
    s = np.array([12, 0, 15, 9, 14, 10], dtype=float)
    df = 6 - 1
    c = 60 / 100  # Σs / (Σs + Σy)
    # d = s - y*c/(1-c) = s - 1.5 y  ->  -3, -7.5, 3, 9, -4, 2.5
    # E = (y+s)*c                     ->  13.2, 3, 13.8, 5.4, 15.6, 9
    vw = 9 / 13.2 + 56.25 / 3 + 9 / 13.8 + 81 / 5.4 + 16 / 15.6 + 6.25 / 9
    assert vw == pytest.approx(36.8040775649, abs=1e-9)
    s_pmse = vw / df
    pmse = vw * c * (1 - c) ** 2 / 100
    # pMSE is also the mean squared deviation of the saturated propensity score
    # e = s/(y+s) from c over all 100 stacked records.
    e = s / (y + s)
    assert pmse == pytest.approx(np.sum((y + s) * (e - c) ** 2) / 100, rel=1e-12)

    res = utility_tables(orig, syn)
    assert isinstance(res, UtilityTables)
    assert list(res.per_table.columns) == ["set", "variables", "s_pmse", "pmse", "df"]
    assert len(res.per_table) == 1
    row = res.per_table.iloc[0]
    assert row["set"] == 1
    assert row["variables"] == ("A", "B")
    assert row["df"] == df
    assert row["s_pmse"] == pytest.approx(s_pmse, rel=1e-12)
    assert row["pmse"] == pytest.approx(pmse, rel=1e-12)
    assert res.mean_s_pmse == pytest.approx(s_pmse, rel=1e-12)
    assert res.per_set_mean == [pytest.approx(s_pmse, rel=1e-12)]
    assert res.worst.variables == ("A", "B")
    assert res.worst.s_pmse == pytest.approx(s_pmse, rel=1e-12)


def test_na_is_a_level_not_dropped():
    # If missing values were dropped instead of kept as a level, the (a1,NA) cell
    # would vanish and df would be 4.
    res = utility_tables(_rows(HAND_Y), _rows(HAND_S))
    assert res.per_table["df"].iloc[0] == 5
    # NaN and None are the same level.
    y2 = _rows(HAND_Y).fillna(np.nan)
    res2 = utility_tables(y2, _rows(HAND_S))
    assert res2.per_table["s_pmse"].iloc[0] == pytest.approx(res.per_table["s_pmse"].iloc[0])


def test_identical_sets_give_zero():
    orig = _rows(HAND_Y)
    res = utility_tables(orig, orig.sample(frac=1.0, random_state=1))
    assert res.mean_s_pmse == pytest.approx(0.0, abs=1e-15)
    assert res.per_table["pmse"].iloc[0] == pytest.approx(0.0, abs=1e-15)


def test_single_cell_table_gives_nan():
    orig = pd.DataFrame({"A": ["x"] * 5, "B": ["y"] * 5})
    syn = pd.DataFrame({"A": ["x"] * 3, "B": ["y"] * 3})
    res = utility_tables(orig, syn)
    assert res.per_table["df"].iloc[0] == 0
    assert math.isnan(res.per_table["s_pmse"].iloc[0])
    assert math.isnan(res.mean_s_pmse)


# ------------------------------------------------------- several sets / structure


def _random_frame(rng, n, levels, na_rate=0.0):
    cols = {}
    for j, k in enumerate(levels):
        v = rng.integers(0, k, n).astype(str).astype(object)
        if na_rate:
            v[rng.random(n) < na_rate] = None
        cols[f"v{j}"] = v
    return pd.DataFrame(cols)


def test_multiple_sets_and_summaries():
    rng = np.random.default_rng(11)
    levels = [2, 3, 4, 2, 5]
    orig = _random_frame(rng, 300, levels, na_rate=0.05)
    syns = [_random_frame(rng, 300, levels, na_rate=0.05) for _ in range(3)]
    res = utility_tables(orig, syns)
    pt = res.per_table
    assert len(pt) == 10 * 3
    assert sorted(pt["set"].unique().tolist()) == [1, 2, 3]
    assert set(pt["variables"]) == set(itertools.combinations([f"v{j}" for j in range(5)], 2))
    # each set equals a single-set call
    for i, syn in enumerate(syns, start=1):
        single = utility_tables(orig, syn).per_table
        mine = pt[pt["set"] == i].reset_index(drop=True)
        np.testing.assert_allclose(mine["s_pmse"], single["s_pmse"], rtol=1e-12)
        np.testing.assert_allclose(mine["pmse"], single["pmse"], rtol=1e-12)
        assert res.per_set_mean[i - 1] == pytest.approx(single["s_pmse"].mean(), rel=1e-12)
    assert res.mean_s_pmse == pytest.approx(pt["s_pmse"].mean(), rel=1e-12)
    by_table = pt.groupby("variables")["s_pmse"].mean()
    assert res.worst.variables == by_table.idxmax()
    assert res.worst.s_pmse == pytest.approx(by_table.max(), rel=1e-12)


def test_matches_crosstab_reference():
    # An independent computation with pd.crosstab on random data with missing values.
    rng = np.random.default_rng(5)
    levels = [3, 4, 6]
    orig = _random_frame(rng, 500, levels, na_rate=0.1)
    syn = _random_frame(rng, 700, levels, na_rate=0.1)
    res = utility_tables(orig, syn, order=3)
    assert len(res.per_table) == 1
    key = ["v0", "v1", "v2"]
    y = orig.fillna("<NA>").value_counts(key)
    s = syn.fillna("<NA>").value_counts(key)
    both = pd.concat([y.rename("y"), s.rename("s")], axis=1).fillna(0)
    yy, ss = both["y"].to_numpy(), both["s"].to_numpy()
    c = ss.sum() / (ss.sum() + yy.sum())
    vw = np.sum((ss - yy * c / (1 - c)) ** 2 / ((yy + ss) * c))
    assert res.per_table["df"].iloc[0] == len(both) - 1
    assert res.per_table["s_pmse"].iloc[0] == pytest.approx(vw / (len(both) - 1), rel=1e-12)
    assert res.per_table["pmse"].iloc[0] == pytest.approx(
        vw * c * (1 - c) ** 2 / (yy.sum() + ss.sum()), rel=1e-12
    )


def test_order3_and_columns_subset():
    rng = np.random.default_rng(2)
    orig = _random_frame(rng, 200, [2, 3, 2, 4, 2])
    syn = _random_frame(rng, 200, [2, 3, 2, 4, 2])
    assert len(utility_tables(orig, syn, order=3).per_table) == math.comb(5, 3)
    sub = utility_tables(orig, syn, order=2, columns=["v1", "v3", "v4"])
    assert set(sub.per_table["variables"]) == {("v1", "v3"), ("v1", "v4"), ("v3", "v4")}
    full = utility_tables(orig, syn).per_table.set_index("variables")
    for _, r in sub.per_table.iterrows():
        assert r["s_pmse"] == pytest.approx(full.loc[[r["variables"]], "s_pmse"].iloc[0])


def test_column_order_of_synthetic_set_does_not_matter():
    rng = np.random.default_rng(9)
    orig = _random_frame(rng, 200, [2, 3, 4])
    syn = _random_frame(rng, 200, [2, 3, 4])
    a = utility_tables(orig, syn).per_table["s_pmse"]
    b = utility_tables(orig, syn[["v2", "v0", "v1"]]).per_table["s_pmse"]
    np.testing.assert_allclose(a, b, rtol=1e-12)


def test_bad_inputs():
    orig = pd.DataFrame({"A": ["x", "y"], "B": ["u", "v"], "C": ["p", "q"]})
    with pytest.raises(ValueError, match=r"\['D'\]"):
        utility_tables(orig, orig.assign(D=1))
    with pytest.raises(ValueError, match=r"\['C'\]"):
        utility_tables(orig, orig[["A", "B"]])
    with pytest.raises(ValueError, match=r"\['D'\]"):
        disclosure(orig, orig.assign(D=1))
    with pytest.raises(ValueError, match=r"\['C'\]"):
        disclosure(orig, [orig, orig[["A", "B"]]])
    with pytest.raises(ValueError, match="order"):
        utility_tables(orig, orig, order=4)
    with pytest.raises(ValueError, match=r"\['Z'\]"):
        utility_tables(orig, orig, columns=["A", "Z"])
    with pytest.raises(ValueError):
        utility_tables(orig, [])


def test_hashed_path_equals_dense_path(monkeypatch):
    # Force the "count only non-empty cells" path and compare with the dense one.
    rng = np.random.default_rng(4)
    levels = [3, 5, 7, 2, 4]
    orig = _random_frame(rng, 400, levels, na_rate=0.05)
    syns = [_random_frame(rng, 350, levels, na_rate=0.05) for _ in range(2)]
    dense_u = utility_tables(orig, syns, order=3).per_table
    dense_d = disclosure(orig, syns)
    monkeypatch.setattr(tables_mod, "_DENSE_LIMIT", 4)
    monkeypatch.setattr(tables_mod, "_CODE_LIMIT", 16)
    sparse_u = utility_tables(orig, syns, order=3).per_table
    sparse_d = disclosure(orig, syns)
    pd.testing.assert_frame_equal(dense_u, sparse_u)
    assert dense_d == sparse_d


# ------------------------------------------------------------------ statistical

POP_SHAPE = (2, 3, 4, 5)


def _population(seed=20240601):
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.full(int(np.prod(POP_SHAPE)), 2.0))


def _draw(rng, p, n):
    cells = rng.choice(p.size, size=n, p=p)
    return pd.DataFrame(np.stack(np.unravel_index(cells, POP_SHAPE), axis=1), columns=list("abcd"))


REPS = 200


def test_s_pmse_expectation_one_for_correct_model():
    """S_pMSE ≈ 1 when the synthetic set is drawn from the correct model fitted to
    the original (here the saturated model: a multinomial draw from the original's
    empirical joint distribution, i.e. a bootstrap of its rows).  This is the sense
    of "expected value 1" in synthpop / Raab (2022).

    Over 200 repetitions of 2,000 + 2,000 rows the mean two-way S_pMSE has
    sd ≈ 0.28 per repetition, so a standard error ≈ 0.02; the tolerance 0.1 is
    about 5 standard errors.  (Observed with this seed: ≈ 1.03.)
    """
    rng = np.random.default_rng(1)
    p = _population()
    vals = []
    for _ in range(REPS):
        orig = _draw(rng, p, 2000)
        syn = orig.iloc[rng.integers(0, 2000, 2000)]
        vals.append(utility_tables(orig, syn).mean_s_pmse)
    assert np.mean(vals) == pytest.approx(1.0, abs=0.1)


@pytest.mark.parametrize("n_syn, expected", [(2000, 2.0), (1000, 1.5)])
def test_s_pmse_expectation_for_independent_draws(n_syn, expected):
    """When original and synthetic sets are *independent* draws from the same
    population, both carry sampling noise and E[S_pMSE] ≈ 1 + n_syn/n_orig
    (Var(s − r·y) = n_s p(1−p)(1+r) with r = n_s/n_y, and E = (y+s)c ≈ n_s p), i.e.
    ≈ 2 for equal sizes, not 1.

    Per-repetition sd ≈ 0.45, 200 repetitions: standard error ≈ 0.03; tolerance
    0.15 is about 5 standard errors.  (Observed: ≈ 1.98 and ≈ 1.47.)
    """
    rng = np.random.default_rng(2)
    p = _population()
    vals = []
    for _ in range(REPS):
        vals.append(utility_tables(_draw(rng, p, 2000), _draw(rng, p, n_syn)).mean_s_pmse)
    assert np.mean(vals) == pytest.approx(expected, abs=0.15)


# ------------------------------------------------------------------- disclosure


def test_disclosure_hand_example():
    # A in {a, b}; B in {x, y, z, NA} in the original, plus "w" only in the synthetic set.
    orig = _rows({("a", "x"): 2, ("a", "y"): 1, ("b", "y"): 1, ("b", "z"): 1, ("a", None): 1})
    syn = _rows(
        {("a", "y"): 1, ("b", "y"): 2, ("b", "z"): 1, ("a", None): 1, ("b", "w"): 1, ("a", "x"): 1}
    )
    res = disclosure(orig, syn)
    assert isinstance(res, Disclosure)
    # k = 2 levels × 5 levels (x, y, z, w, NA)
    assert res.k == 10
    # non-empty original cells: (a,x) (a,y) (b,y) (b,z) (a,NA) -> 5 of 10 empty
    assert res.p0 == pytest.approx(50.0)
    # uniques in the original: (a,y) (b,y) (b,z) (a,NA) -> 4 of n = 6
    assert res.p1 == pytest.approx(100 * 4 / 6)
    # replicated: (a,y) (b,z) (a,NA).  Not (b,y) [s=2], (b,w) [y=0], (a,x) [y=2].
    assert res.ru == pytest.approx(100 * 3 / 6)
    assert res.ru_pct_of_p1 == pytest.approx(75.0)
    assert res.per_set[0]["ru"] == pytest.approx(50.0)


def test_disclosure_several_sets_mean():
    orig = _rows({("a", "x"): 2, ("a", "y"): 1, ("b", "y"): 1, ("b", "z"): 1, ("a", None): 1})
    syn = _rows(
        {("a", "y"): 1, ("b", "y"): 2, ("b", "z"): 1, ("a", None): 1, ("b", "w"): 1, ("a", "x"): 1}
    )
    res = disclosure(orig, [syn, orig])
    assert [d["ru"] for d in res.per_set] == [pytest.approx(50.0), pytest.approx(100 * 4 / 6)]
    assert res.ru == pytest.approx((50.0 + 100 * 4 / 6) / 2)
    assert res.k == 10  # "w" from set 1 counts for the whole call


def test_ru_equals_p1_when_syn_is_orig():
    rng = np.random.default_rng(8)
    orig = _random_frame(rng, 1000, [2, 5, 6, 4, 9], na_rate=0.02)
    res = disclosure(orig, orig.sample(frac=1.0, random_state=2))
    assert 0 < res.p1 < 100
    assert res.ru == pytest.approx(res.p1, rel=1e-12)
    assert res.ru_pct_of_p1 == pytest.approx(100.0)


def test_disclosure_huge_cross_tab_is_not_allocated():
    # 8 columns × 1000 levels: k = 10^24 cells, far beyond memory.
    rng = np.random.default_rng(6)
    n = 5000
    orig = pd.DataFrame({f"c{j}": rng.integers(0, 1000, n) for j in range(8)})
    # make every level present so k is exactly 1000^8
    orig.iloc[:1000, :] = np.arange(1000)[:, None]
    syn = orig.iloc[rng.permutation(n)[:2500]]
    res = disclosure(orig, syn)
    assert res.k == 1000**8
    nonempty = len(orig.drop_duplicates())
    assert res.p0 == pytest.approx(100.0 * (1000**8 - nonempty) / 1000**8)
    assert res.p1 == pytest.approx(100.0 * nonempty / n)  # all rows unique here
    assert res.ru == pytest.approx(100.0 * 2500 / n)
