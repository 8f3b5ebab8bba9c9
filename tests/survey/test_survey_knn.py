"""k-NN imputation and L_1(D) (Merrill 2021 §6.3, §6.5.2): Example 6.3.7 and brute force."""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from dpcore.data.datasets import SD2011_LEVELS
from dpcore.errors import InputError, OptionError
from dpcore.survey.knn import knn_impute

# ---------------------------------------------------------------- brute force
# A record is (codes tuple, label float, complete bool). Donor order for donee x:
# (squared distance, label above x's first ascending, then the labels below, ascending).


def _dist(a, b, ordinal):
    # ordinal[j]: None for a categorical column, else its number of levels (code L is NA,
    # which is 2 away from every level)
    d = 0
    for j, (u, v) in enumerate(zip(a, b)):
        L = ordinal[j]
        if L is not None:
            d += 0 if u == v else 2 if L in (u, v) else (u - v) ** 2
        else:
            d += 2 * (u != v)
    return d


def _donor_sets(records, k, ordinal):
    comp = [r for r in records if r[2]]
    out = {}
    for x in records:
        if x[2]:
            continue
        key = lambda y, x=x: (_dist(x[0], y[0], ordinal), (0, y[1]) if y[1] > x[1] else (1, y[1]))
        out[x[1]] = frozenset(y[1] for y in sorted(comp, key=key)[:k])
    return out


def _change(D, D2, k, ordinal, a=None):
    a = _donor_sets(D, k, ordinal) if a is None else a
    b = _donor_sets(D2, k, ordinal)
    return len(set(a) ^ set(b)) + sum(a[x] != b[x] for x in set(a) & set(b))


def _neighbours(D, grid):
    labels = sorted(r[1] for r in D)
    gaps = [labels[0] - 0.5] + [(u + v) / 2 for u, v in zip(labels, labels[1:])]
    for i in range(len(D)):
        yield D[:i] + D[i + 1:]
    yield D + [(grid[0], labels[-1] + 0.25, False)]  # an added donee
    for g in grid:
        for lab in gaps:
            yield D + [(g, lab, True)]


def brute_L1(D, k, grid, ordinal):
    return max(_change(D, D2, k, ordinal) for D2 in _neighbours(D, grid))


def brute_L2(D, k, grid, ordinal):
    best, base = 0, _donor_sets(D, k, ordinal)
    key = {(r[0], r[1], r[2]) for r in D}
    for D1 in _neighbours(D, grid):
        for D2 in _neighbours(D1, grid):
            # distance exactly 2 from D: D2 differs from D in two records
            if len(key ^ {(r[0], r[1], r[2]) for r in D2}) == 2:
                best = max(best, _change(D, D2, k, ordinal, base))
    return best


def _records(df, cols, target, ordinal_cols, levels):
    recs = []
    for i, row in df.reset_index(drop=True).iterrows():
        codes = tuple(levels[c].index(row[c]) if pd.notna(row[c]) else len(levels[c]) for c in cols)
        recs.append((codes, float(i), pd.notna(row[target])))
    return recs


# ---------------------------------------------------------------- Example 6.3.7

# On a line (one ordinal attribute, positions 0..14): gray circles at 1 and 10, a black one at 14,
# six donees. Adding a donor at 5 (between the four donees at 4..7) moves four of them: L_1 = 4.
LINE = list(range(15))
EX = pd.DataFrame({
    "x": [0, 1, 4, 5, 6, 7, 10, 11, 14],
    "color": [None, "gray", None, None, None, None, "gray", None, "black"],
})


def test_example_6_3_7_L1_is_4_and_L2_is_6():
    imp = knn_impute(EX, "color", ["x"], ordinal=["x"], levels={"x": LINE})
    assert imp.L1 == 4
    assert imp.L1_cases["remove_donor"] == 3
    grid = [(g,) for g in range(16)]  # 15 levels + NA
    D = _records(EX, ["x"], "color", ["x"], {"x": LINE})
    assert brute_L1(D, 1, grid, [15]) == 4
    # L_2 = 6: deleting both gray circles moves all six donees to the black one
    assert brute_L2(D, 1, grid, [15]) == 6
    # the greedy bound fails: delete the 4 changed donees from D' (donor added at 5) -> L_1 = 1
    Dp = EX.drop(index=[2, 3, 4, 5])
    Dp = pd.concat([Dp, pd.DataFrame({"x": [5], "color": ["black"]})], ignore_index=True)
    assert knn_impute(Dp, "color", ["x"], ordinal=["x"], levels={"x": LINE}).L1 == 1
    assert 4 + 1 < 6


# ---------------------------------------------------------------- brute force on random data


@pytest.mark.parametrize("seed", range(30))
def test_L1_equals_brute_force_maximum(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(6, 11))
    k = int(rng.integers(1, 3))
    levels = {"a": ["p", "q", "r"], "b": [0, 1, 2, 3]}
    df = pd.DataFrame({
        "a": rng.choice(levels["a"], n).astype(object),
        "b": rng.integers(0, 4, n),
        "y": np.where(rng.random(n) < 0.45, np.nan, rng.integers(0, 50, n).astype(float)),
    })
    if rng.random() < 0.3:
        df.loc[int(rng.integers(0, n)), "a"] = None  # a missing matching value: its own level
    if df["y"].notna().sum() < k + 1:
        df.loc[: k, "y"] = [1.0] * (k + 1)
    method = "copy" if k == 1 else "mean"
    imp = knn_impute(df, "y", ["a", "b"], k=k, method=method, ordinal=["b"], levels=levels)
    D = _records(df, ["a", "b"], "y", ["b"], levels)
    grid = list(itertools.product(range(4), range(5)))
    assert imp.L1 == brute_L1(D, k, grid, [None, 4]), (seed, imp.L1_cases)


def test_imputed_values_copy_mean_majority_and_tie_break():
    df = pd.DataFrame({
        "g": ["a", "a", "a", "a", "b", "b", "b"],
        "y": [10.0, np.nan, 20.0, np.nan, 1.0, 1.0, 3.0],
        "c": ["u", None, "v", None, "w", "w", "z"],
    })
    imp = knn_impute(df, "y", ["g"], k=1)
    # row 1 takes the next donor above it (row 2); row 3 wraps to the lowest donor of equal distance (row 0)
    assert imp.values.tolist() == [10.0, 20.0, 20.0, 10.0, 1.0, 1.0, 3.0]
    assert imp.donors.ravel().tolist() == [2, 0]
    m = knn_impute(df, "y", ["g"], k=2, method="mean")
    assert m.values.iloc[1] == pytest.approx(15.0)
    maj = knn_impute(df.assign(g=["b"] * 4 + ["b"] * 3), "c", ["g"], k=3, method="majority")
    assert maj.values.iloc[1] == "w" and maj.values.iloc[3] == "w"


def test_errors_name_the_problem():
    df = pd.DataFrame({"g": ["a", "b", "a"], "y": [1.0, np.nan, 2.0]})
    with pytest.raises(OptionError, match="k = 2 needs at least"):
        knn_impute(df, "y", ["g"], k=2, method="mean")
    with pytest.raises(InputError, match="'nope'"):
        knn_impute(df, "nope", ["g"])
    with pytest.raises(InputError, match="not among its declared levels"):
        knn_impute(df, "y", ["g"], levels={"g": ["a"]})
    with pytest.raises(OptionError, match="copy"):
        knn_impute(df, "y", ["g"], k=2)
    with pytest.raises(OptionError, match="max_grid"):
        knn_impute(df, "y", ["g"], max_grid=2)


def test_sd2011_scale_imputation():
    from pathlib import Path
    df = pd.read_csv(Path(__file__).resolve().parents[2] / "assets" / "sd2011.csv")
    imp = knn_impute(df, "income", ["sex", "agegr", "edu", "socprof", "placesize"],
                     ordinal=["agegr", "edu", "placesize"], levels=SD_LEVELS)
    assert imp.n_donees == 683 and imp.values.notna().all()
    assert imp.L1 >= imp.L1_cases["remove_donor"] >= 1


SD_LEVELS = SD2011_LEVELS
