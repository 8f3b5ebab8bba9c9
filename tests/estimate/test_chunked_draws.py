"""A set drawn in chunks (or partitions) has the law of the set drawn whole ([scale-out] item 1).

The draws of :mod:`dpcore.estimate.draws` on small tables with a tiny chunk size. Given the
cell counts, the only randomness of a :class:`CellDraw` is the order of its records, so the
statistics are positional: how many records of a cell land in each chunk (or partition).
Each law test is a two-sample χ² test between the chunked and the whole draw (fixed seeds,
rejected at p < 10⁻³), and each is shown to reject a wrong dealing (power).
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpcore.estimate.draws import CellDraw, FixedDraw, IIDDraw, chunk_sizes, deal, part_sizes, records
from dpcore.estimate.table import DenseTable, cell_codes, draw_cells
from dpcore.measure import leaf_noise
from dpcore.synthesizers import sparse_leaves as SL

ALPHA = 1e-3
COUNTS = np.array([9, 1, 14, 0, 5, 21])  # 50 records in 5 cells (one empty)
CODES = np.array([[0, 0], [0, 1], [1, 0], [1, 1], [2, 0], [2, 1]], dtype=np.uint8)
CHUNK = 7  # 50 records: chunks of 7 × 7, then 1


def _homogeneity(a: np.ndarray, b: np.ndarray) -> float:
    """p-value of the χ² two-sample test that the rows a and b (counts over the same categories) share one law."""
    keep = (a + b) > 0
    return stats.chi2_contingency(np.vstack([a[keep], b[keep]]))[1]


def _chunk_cell_counts(chunks, n_cells: int) -> np.ndarray:
    """Per chunk, how many records of cell 0 and of cell 2 it holds, as category ids (chunk, count)."""
    rows = []
    for k, c in enumerate(chunks):
        cell = c[:, 0] * 2 + c[:, 1]
        rows.append((k, int((cell == 0).sum()), int((cell == 2).sum())))
    return rows


def _histograms(draws, reps: int):
    """Histogram over (chunk, count of cell 0) and (chunk, count of cell 2), summed over reps."""
    h = np.zeros((2, 8, 30), dtype=np.int64)
    for r in range(reps):
        for k, c0, c2 in draws(r):
            h[0, k, c0] += 1
            h[1, k, c2] += 1
    return h.reshape(2, -1)


def _whole_in_pieces(r: int):
    """The whole draw (one permutation), read in the pieces the chunked draw uses."""
    rng = np.random.default_rng(10_000 + r)
    whole = records(CellDraw(CODES[COUNTS > 0], COUNTS[COUNTS > 0]), rng, 2, chunk_rows=10**6)
    pieces, at = [], 0
    for size in chunk_sizes(COUNTS.sum(), CHUNK):
        pieces.append(whole[at:at + size])
        at += size
    return _chunk_cell_counts(pieces, len(COUNTS))


def _chunked(r: int):
    rng = np.random.default_rng(20_000 + r)
    return _chunk_cell_counts(CellDraw(CODES[COUNTS > 0], COUNTS[COUNTS > 0]).chunks(rng, CHUNK), len(COUNTS))


def _wrong(r: int):
    """A wrong dealing: each chunk an independent multinomial of the cells' shares (totals not kept)."""
    rng = np.random.default_rng(30_000 + r)
    out = []
    for size in chunk_sizes(COUNTS.sum(), CHUNK):
        take = rng.multinomial(size, COUNTS / COUNTS.sum())
        out.append(np.repeat(CODES, take, axis=0))
    return _chunk_cell_counts(out, len(COUNTS))


REPS = 3000


def test_cell_draw_in_chunks_has_the_whole_draws_law():
    whole = _histograms(_whole_in_pieces, REPS)
    chunked = _histograms(_chunked, REPS)
    for a, b in zip(whole, chunked):
        assert _homogeneity(a, b) > ALPHA


def test_the_chunk_law_test_rejects_a_wrong_dealing():
    """Power: chunks drawn as independent multinomials (right means, wrong spread, totals not kept)."""
    whole = _histograms(_whole_in_pieces, REPS)
    wrong = _histograms(_wrong, REPS)
    assert min(_homogeneity(a, b) for a, b in zip(whole, wrong)) < 1e-6


def test_chunks_keep_every_cells_total_and_one_chunk_is_the_whole_draw():
    draw = CellDraw(CODES[COUNTS > 0], COUNTS[COUNTS > 0])
    got = np.concatenate(list(draw.chunks(np.random.default_rng(1), CHUNK)))
    cell = got[:, 0] * 2 + got[:, 1]
    np.testing.assert_array_equal(np.bincount(cell, minlength=6), COUNTS)
    # one chunk: exactly draw_cells' records (the calls seeded releases were made with)
    table = np.array([3.0, 0.5, 7.0, 0.0, 2.0, 9.0])
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    whole = cell_codes(draw_cells(table, 40, "sample", a), (3, 2))
    one = records(DenseTable(table.reshape(3, 2)).draw(40, b, "sample"), b, 2)
    np.testing.assert_array_equal(whole, one)
    assert a.random() == b.random()  # and the generator is left where the whole draw left it


def test_deal_is_multivariate_hypergeometric():
    """deal() against numpy's multivariate hypergeometric (marginals), for a subset and for its complement side."""
    counts = np.array([12, 3, 0, 25, 10])
    for size in (9, 41):  # 41 of 50: drawn as the complement's 9
        ours = np.array([deal(counts, size, np.random.default_rng(s))[0] for s in range(4000)])
        ref = np.random.default_rng(99).multivariate_hypergeometric(counts, size, size=4000)[:, 0]
        a, b = np.bincount(ours, minlength=13), np.bincount(ref, minlength=13)
        assert _homogeneity(a, b) > ALPHA
        assert (deal(counts, size, np.random.default_rng(0)) <= counts).all()
        assert deal(counts, size, np.random.default_rng(0)).sum() == size


def _parts(r: int, parts: int = 4):
    draw = CellDraw(CODES[COUNTS > 0], COUNTS[COUNTS > 0])
    out = []
    for k in range(parts):
        p = draw.part(k, parts, seed=r, set_index=0)
        cell = p.codes[:, 0].astype(np.int64) * 2 + p.codes[:, 1]
        out.append(np.bincount(cell, weights=p.counts, minlength=6).astype(int))
    return out


def test_partitions_deal_every_record_once_with_the_whole_draws_law():
    """CellDraw.part: partition k gets the counts of positions [a_k, b_k) of one uniform permutation
    (the public rule n//P, first n mod P one more), and together the partitions hold every record."""
    parts, sizes = 4, part_sizes(COUNTS.sum(), 4)
    assert sizes == [13, 13, 12, 12]
    ours, whole = np.zeros((parts, 30), np.int64), np.zeros((parts, 30), np.int64)
    for r in range(1500):
        got = _parts(r, parts)
        np.testing.assert_array_equal(np.sum(got, axis=0), COUNTS)
        for k in range(parts):
            assert got[k].sum() == sizes[k]
            ours[k, got[k][5]] += 1
        perm = np.random.default_rng(50_000 + r).permutation(np.repeat(np.arange(6), COUNTS))
        at = 0
        for k, size in enumerate(sizes):
            whole[k, int((perm[at:at + size] == 5).sum())] += 1
            at += size
    for k in range(parts):
        assert _homogeneity(ours[k], whole[k]) > ALPHA
    # reproducible: the same seed and partition count give the same partitions
    np.testing.assert_array_equal(np.array(_parts(7)), np.array(_parts(7)))


def test_iid_and_fixed_draws_in_chunks():
    class Uniform:
        def sample(self, n, rng):
            return rng.integers(0, 3, size=(n, 2))

    a, b = np.random.default_rng(3), np.random.default_rng(3)
    whole = Uniform().sample(20, a)
    one = records(IIDDraw(Uniform(), 20), b, 2)
    np.testing.assert_array_equal(whole, one)
    chunked = records(IIDDraw(Uniform(), 20), np.random.default_rng(4), 2, chunk_rows=3)
    assert chunked.shape == (20, 2) and chunked.min() >= 0 and chunked.max() <= 2
    fixed = np.arange(40).reshape(20, 2)
    np.testing.assert_array_equal(records(FixedDraw(fixed), None, 2, chunk_rows=3), fixed)
    np.testing.assert_array_equal(np.concatenate([FixedDraw(fixed).part(k, 3, 0, 0).records for k in range(3)]), fixed)


def _item_cells(out):
    item, slot, count = out
    return {(int(i), int(s)): int(c) for i, s, c in zip(item, slot, count)}


def test_sparse_items_drawn_in_batches_have_the_one_pass_law(monkeypatch):
    """draw_items' sample step for a long output (batches of DRAW_BATCH records) against the one-pass draw."""
    x = np.array([2.0, 0.5, 1.0, 3.0])
    mult = np.array([1, 3, 1, 4], dtype=np.int64)  # two classes of 3 and 4 cells
    n = 40
    one, batched = np.zeros(64, np.int64), np.zeros(64, np.int64)
    tot_one, tot_b = np.zeros(8, np.int64), np.zeros(8, np.int64)
    cells = [(0, 0), (1, 0), (1, 1), (1, 2), (2, 0), (3, 0), (3, 1), (3, 2), (3, 3)]
    for r in range(3000):
        a = _item_cells(SL.draw_items(x, mult, n, "sample", np.random.default_rng(r)))
        monkeypatch.setattr(SL, "DRAW_BATCH", 6)
        b = _item_cells(SL.draw_items(x, mult, n, "sample", np.random.default_rng(10**6 + r)))
        monkeypatch.setattr(SL, "DRAW_BATCH", 10**6)
        assert sum(b.values()) == n and all(0 <= s < mult[i] for i, s in b)
        one[min(a.get((1, 1), 0), 63)] += 1
        batched[min(b.get((1, 1), 0), 63)] += 1
        tot_one[:] += [a.get(c, 0) for c in cells[1:]]
        tot_b[:] += [b.get(c, 0) for c in cells[1:]]
    assert _homogeneity(one, batched) > ALPHA
    assert _homogeneity(tot_one, tot_b) > ALPHA


def test_empty_cells_drawn_in_batches_stay_distinct_and_uniform(monkeypatch):
    """Very many empty cells getting records are placed in batches: still distinct, in their blocks,
    and uniform over each block's empty cells."""
    shape = (2, 5)
    fixed = np.array([[0, -1], [1, -1]])  # block b: the 5 cells with a = b
    exclude = np.array([0 * 5 + 2, 1 * 5 + 1])  # one non-empty cell in each block (sorted keys)
    n_cells, n_empty = np.array([5, 5]), np.array([4, 4])
    # block 0: a class of 2 of its 4 empty cells with records, and one of 2 without; block 1: all 4
    items = leaf_noise.Items(np.array([0, 0, 1]), np.array([1.0, 0.0, 1.0]), np.array([2, 2, 4]),
                             np.array([-1, -1, -1]))
    table = type("T", (), {"shape": shape, "codes": np.zeros((0, 2), np.int64)})()
    hits = np.zeros(10, np.int64)
    monkeypatch.setattr(SL, "DRAW_BATCH", 2)  # 6 cells get records: three batches
    for r in range(2000):
        codes, counts = SL._support(items, items.value, table, fixed, n_cells, n_empty, exclude, 30, "round",
                                    np.random.default_rng(r))
        keys = codes[:, 0].astype(int) * 5 + codes[:, 1]
        assert len(set(keys)) == len(keys) == 6 and not set(keys) & set(exclude.tolist())
        assert counts.sum() == 30
        hits[keys] += 1
    assert (hits[5:] == 2000 * np.array([1, 0, 1, 1, 1])).all()  # block 1: its 4 empty cells, every time
    block0 = hits[[0, 1, 3, 4]]  # block 0: 2 of its 4 empty cells, uniformly
    assert block0.sum() == 4000 and stats.chisquare(block0).pvalue > ALPHA


@pytest.mark.parametrize("method", ["steps", "flat_laplace", "ipf", "privbayes", "aim", "mst", "aim_delta",
                                    "mst_delta"])
def test_a_release_in_tiny_chunks_keeps_its_margins(method, monkeypatch):
    """Every method's set drawn in chunks of 13 records: the released record count, codes in the
    domain, and one-way margins within sampling error of the set drawn whole (same noise: the
    chunks only change how the records are drawn after it)."""
    import pandas as pd

    import dpcore
    import dpcore.estimate.draws as D

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.choice(["x", "y", "z"], 800, p=[0.6, 0.3, 0.1]),
                       "b": rng.choice(["p", "q"], 800), "c": rng.choice(["1", "2", "3", "4"], 800)})
    # (ε, δ) AIM and MST draw by controlled rounding (TreeCountDraw): their chunks deal the clique tables
    method, extra = (method[:-len("_delta")], {"delta": 1e-9}) if method.endswith("_delta") else (method, {})
    whole = dpcore.synthesize(df, method, 2.0, seed=3, **extra)
    monkeypatch.setattr(D, "CHUNK_ROWS", 13)
    monkeypatch.setattr("dpcore.api.records", lambda draw, rng, width: D.records(draw, rng, width, chunk_rows=13))
    chunked = dpcore.synthesize(df, method, 2.0, seed=3, **extra)
    a, b = whole.sets[0], chunked.sets[0]
    assert len(a) == len(b) == whole.record_count["value"]
    for col in df.columns:
        ca, cb = a[col].value_counts(), b[col].value_counts()
        levels = sorted(set(ca.index) | set(cb.index))
        if method in ("steps", "flat_laplace", "ipf") or extra:
            # cell draws and rounded draws: the chunks deal the same counts, so the margins are equal exactly
            assert [ca.get(v, 0) for v in levels] == [cb.get(v, 0) for v in levels], (method, col)
        else:
            assert _homogeneity(np.array([ca.get(v, 0) for v in levels]),
                                np.array([cb.get(v, 0) for v in levels])) > ALPHA, (method, col)
