"""dpcore.counting.count_table: the sparse count table, including domains beyond 2^63 cells."""
import math

import numpy as np
import pandas as pd
import pytest

from dpcore.counting.count_table import CountTable, cell_keys, fits_int64, key_codes
from dpcore.counting.engines import count_table
from dpcore.data.inference import infer_domain
from dpcore.errors import OptionError


def _dense(X, shape):
    return np.bincount(np.ravel_multi_index(tuple(X.T), shape), minlength=math.prod(shape))


def test_small_table_matches_bincount():
    rng = np.random.default_rng(1)
    shape = (3, 4, 5)
    X = rng.integers(0, shape, (200, 3))
    t = CountTable.from_codes(X, shape)
    dense = _dense(X, shape)
    assert t.n == 200 and t.cells == 60 and t.nonempty == np.count_nonzero(dense)
    np.testing.assert_array_equal(t.dense(), dense)
    assert t.keys.dtype == np.int64 and np.all(np.diff(t.keys) > 0)
    np.testing.assert_array_equal(t.margin([2, 0]), dense.reshape(shape).sum(axis=1).T)
    np.testing.assert_array_equal(t.margin([]), np.array(200))
    all_cells = np.stack(np.unravel_index(np.arange(60), shape), axis=1)
    np.testing.assert_array_equal(t.lookup(all_cells), dense)


def test_beyond_int64_cells():
    """30 attributes of 10 levels: 10^30 cells, multi-word keys, exact Python-int size."""
    shape = (10,) * 30
    assert not fits_int64(shape)
    rng = np.random.default_rng(2)
    base = rng.integers(0, 10, (40, 30))
    X = np.concatenate([base, base[:10], base[:3]])  # 10 cells twice, 3 thrice
    t = CountTable.from_codes(X, shape)
    assert t.cells == 10**30 and t.n == 53 and t.nonempty == 40
    assert sorted(t.counts.tolist()) == [1] * 30 + [2] * 7 + [3] * 3
    # codes are in lexicographic order, and keys sort the same way
    np.testing.assert_array_equal(np.lexsort(t.codes.T[::-1]), np.arange(40))
    np.testing.assert_array_equal(t.lookup(base[:3]), [3, 3, 3])
    assert t.lookup(np.full((1, 30), 0) + (base[0] + 1) % 10)[0] in (0, 1)
    # a small margin is dense, a huge one is a sparse CountTable
    m = t.margin([0, 29])
    assert isinstance(m, np.ndarray) and m.shape == (10, 10) and m.sum() == 53
    big = t.margin(list(range(20)))
    assert isinstance(big, CountTable) and big.cells == 10**20 and big.n == 53
    # the margin of the margin agrees with the direct one
    np.testing.assert_array_equal(big.margin([0]), t.margin([0]))


def test_keys_order_is_lexicographic_for_multiword():
    shape = (2**40, 2**40, 3)
    X = np.array([[5, 0, 2], [1, 2**40 - 1, 0], [1, 3, 1], [5, 0, 2]])
    k = cell_keys(X, shape)
    assert k.dtype.kind == "V"
    order = np.argsort(k, kind="stable")
    np.testing.assert_array_equal(order, np.lexsort(X.T[::-1]))


def test_from_cells_sums_duplicates_and_drops_zeros():
    shape = (4, 5)
    t = CountTable.from_cells([[1, 2], [0, 0], [1, 2], [3, 3]], [2, 1, 3, 0], shape)
    np.testing.assert_array_equal(t.codes, [[0, 0], [1, 2]])
    np.testing.assert_array_equal(t.counts, [1, 5])


@pytest.mark.parametrize("shape", [(3, 1, 4, 2), (2**40, 2**40, 3), (10,) * 30])
def test_key_codes_inverts_cell_keys(shape):
    rng = np.random.default_rng(3)
    X = np.stack([rng.integers(0, d, 500) for d in shape], axis=1)
    k = cell_keys(X, shape)
    back = key_codes(k, shape)
    assert back.dtype == np.int64 and back.shape == X.shape
    np.testing.assert_array_equal(back, X)


def test_from_keys_is_from_cells_of_the_decoded_codes():
    """A GROUP BY over the packed key: same table as over the p codes (duplicates summed, zeros dropped)."""
    rng = np.random.default_rng(4)
    shape = (3, 5, 2, 7)
    X = np.stack([rng.integers(0, d, 300) for d in shape], axis=1)
    counts = rng.integers(0, 4, 300)  # zeros, and repeated cells among the 300 rows
    keys = cell_keys(X, shape)
    by_key = CountTable.from_keys(keys, counts, shape)
    by_cells = CountTable.from_cells(X, counts, shape)
    assert by_key.codes.dtype == by_cells.codes.dtype == np.uint8 and by_key.counts.dtype == np.int64
    np.testing.assert_array_equal(by_key.codes, by_cells.codes)
    np.testing.assert_array_equal(by_key.counts, by_cells.counts)
    np.testing.assert_array_equal(by_key.keys, cell_keys(by_cells.codes, shape))
    with pytest.raises(ValueError, match="cell keys"):
        CountTable.from_keys([0, math.prod(shape)], [1, 1], shape)
    with pytest.raises(ValueError, match="one-word"):
        CountTable.from_keys([0], [1], (10,) * 30)


def test_count_table_engines():
    df = pd.DataFrame({"a": ["x", "y", "x"], "b": ["u", "v", "u"]})
    dom = infer_domain(df)
    t = count_table(df, dom)
    assert t.n == 3 and t.nonempty == 2
    with pytest.raises(OptionError, match="duckdb"):
        count_table(df, dom, engine="duckdb")


def test_bad_codes_refused():
    with pytest.raises(ValueError, match="level count"):
        CountTable.from_codes(np.array([[0, 5]]), (2, 5))
