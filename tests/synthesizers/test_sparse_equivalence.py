"""The sparse leaves (dpcore.synthesizers.sparse_leaves) release the SAME distribution as the dense paths.

Small tables, where both run: each path is run R times with fixed seeds and the
distributions of released statistics are compared with two-sample chi-square tests on
their value histograms (bins with fewer than 5 expected pooled counts merged). Each
test asserts p > ALPHA = 1e-3; with fixed seeds the outcome is deterministic, and a
correct implementation fails one comparison with probability 1e-3 per statistic.
The deterministic pieces (the nonneg root, the pseudo-leaf reduction of consistency)
are checked exactly against the dense code.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpcore.counting.count_table import CountTable
from dpcore.estimate.consistency import _project_children, make_consistent
from dpcore.estimate.table import draw_cells
from dpcore.measure import leaf_noise
from dpcore.privacy.gaussian import DiscreteGaussian
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.mechanisms import DiscreteLaplace
from dpcore.privacy.neighbours import Neighbours
from dpcore.synthesizers import hierarchy as H
from dpcore.synthesizers import sparse_leaves as SL
from dpcore.synthesizers.steps import layer_measurements

ALPHA = 1e-3
R = 300
SHAPE = (4, 5, 6)  # 120 cells
N = 40


def _table(seed=0):
    rng = np.random.default_rng(seed)
    # skewed records: many cells empty, some with several records
    X = np.stack([rng.integers(0, 2, N), rng.integers(0, 5, N), rng.binomial(5, 0.3, N)], axis=1)
    return X


def _chi2_same(a, b) -> float:
    """p-value of the two-sample chi-square test that integer samples a and b share a law."""
    vals = np.union1d(a, b)
    ca = np.array([(a == v).sum() for v in vals])
    cb = np.array([(b == v).sum() for v in vals])
    # merge bins (in value order) until each has >= 10 pooled counts
    groups, acc_a, acc_b = [], 0, 0
    for x, y in zip(ca, cb):
        acc_a, acc_b = acc_a + x, acc_b + y
        if acc_a + acc_b >= 10:
            groups.append((acc_a, acc_b))
            acc_a = acc_b = 0
    if acc_a + acc_b:
        if groups:
            ga, gb = groups.pop()
            groups.append((ga + acc_a, gb + acc_b))
        else:
            groups.append((acc_a, acc_b))
    if len(groups) < 2:
        return 1.0
    return stats.chi2_contingency(np.array(groups).T)[1]


def _statistics(records: np.ndarray, data_cells: set, shape) -> dict:
    flat = np.ravel_multi_index(tuple(records.T), shape)
    cells = np.bincount(flat, minlength=int(np.prod(shape)))
    in_empty = sum(c for i, c in enumerate(cells) if c and i not in data_cells)
    return {
        "distinct cells": int((cells > 0).sum()),
        "records in data-empty cells": int(in_empty),
        "margin a=0": int((records[:, 0] == 0).sum()),
        "margin b=4": int((records[:, 1] == 4).sum()),
        "cell (0,0,0)": int(cells[0]),
        "cell (3,4,5) (empty in data)": int(cells[-1]),
        "max cell": int(cells.max()),
    }


def _compare(dense_runs, sparse_runs):
    keys = dense_runs[0].keys()
    bad = {}
    for k in keys:
        a = np.array([r[k] for r in dense_runs])
        b = np.array([r[k] for r in sparse_runs])
        p = _chi2_same(a, b)
        if p <= ALPHA:
            bad[k] = (p, a.mean(), b.mean())
    assert not bad, f"dense and sparse differ: {bad}"


# ----------------------------------------------------------------------------- flat


def _dense_flat(X, shape, mech, prior, synthesis, n_out, rng):
    cells = int(np.prod(shape))
    counts = np.bincount(np.ravel_multi_index(tuple(X.T), shape), minlength=cells)
    noisy = mech.release(counts, rng).astype(float) + prior / cells
    picked = draw_cells(noisy, n_out, synthesis, rng)
    return np.stack(np.unravel_index(picked, shape), axis=1)


@pytest.mark.parametrize("synthesis, mech", [("sample", DiscreteLaplace(1.5)), ("round", DiscreteLaplace(1.5)),
                                             ("sample", DiscreteGaussian(1.8))], ids=["sample", "round", "gaussian"])
def test_flat_sparse_matches_dense(synthesis, mech):
    """Discrete Laplace (pure ε) and the discrete Gaussian ((ε, δ) through zCDP) alike."""
    X = _table()
    data_cells = set(np.ravel_multi_index(tuple(X.T), SHAPE).tolist())
    table = CountTable.from_codes(X, SHAPE)
    n_out = N + 3
    dense = [_statistics(_dense_flat(X, SHAPE, mech, 1.0, synthesis, n_out, np.random.default_rng(s)), data_cells,
                         SHAPE) for s in range(R)]
    sparse = [_statistics(SL.flat_release(table, mech, n_out, np.random.default_rng(10_000 + s), prior=1.0,
                                          synthesis=synthesis), data_cells, SHAPE) for s in range(R)]
    _compare(dense, sparse)


def test_flat_sparse_honours_structural_zeros():
    X = _table()
    table = CountTable.from_codes(X, SHAPE)
    zeros = [tuple(X[0]), (3, 4, 5)]
    for s in range(20):
        out = SL.flat_release(table, DiscreteLaplace(1.0), 50, np.random.default_rng(s), prior=1.0,
                              structural_zeros=zeros)
        flat = set(np.ravel_multi_index(tuple(out.T), SHAPE).tolist())
        assert not flat & set(np.ravel_multi_index(tuple(np.array(zeros).T), SHAPE).tolist())
        assert len(out) == 50


# ----------------------------------------------------------------------------- STEPS


def _tree(X, order):
    """A fixed tree: layer k splits every node on the attribute group order[k]."""
    names = ("a", "b", "c")
    return H.build_tree(X, SHAPE, names, len(order), lambda k, fixed, rank: [order[k]] * len(fixed))


def _dense_steps(tree, X, mechs, n_out, consistency, synthesis, rng):
    """The dense STEPS path (dpcore.synthesizers.steps.synthesize_set after the tree)."""
    counts, leaves = H.count_nodes(tree, X)
    noisy, var = [np.array([float(n_out)])], [np.zeros(1)]
    for k in range(1, tree.L + 1):
        noisy.append(mechs[k].release(counts[k], rng).astype(float))
        var.append(np.full(tree.layers[k].n_real, mechs[k].variance))
    leaf_noisy = mechs[-1].release(leaves, rng).astype(float)
    leaf_var = np.full(tree.n_leaves, mechs[-1].variance)
    parents, phantom = H.slot_structure(tree)
    nbar = make_consistent(parents, H.slot_values(tree, noisy, leaf_noisy), H.slot_values(tree, var, leaf_var),
                           phantom, consistency)
    cells = draw_cells(nbar[-1], n_out, synthesis, rng)
    return H.leaf_codes(tree, cells)


ORDERS = {"L=1 a": [(0,)], "L=2 a;b (phantoms)": [(0,), (1,)]}


@pytest.mark.parametrize("order", list(ORDERS), ids=list(ORDERS))
@pytest.mark.parametrize("consistency", ["nonneg", "wls", "uh"])
@pytest.mark.parametrize("synthesis", ["sample", "round"])
def test_steps_sparse_matches_dense(order, consistency, synthesis):
    if synthesis == "round" and order != "L=1 a":
        pytest.skip("round is covered on one tree per consistency mode (time)")
    X = _table(1)
    data_cells = set(np.ravel_multi_index(tuple(X.T), SHAPE).tolist())
    tree = _tree(X, ORDERS[order])
    table = CountTable.from_codes(X, SHAPE)
    mechs = [None] + [DiscreteLaplace(2.0)] * (tree.L - 1) + [DiscreteLaplace(1.0), DiscreteLaplace(1.5)]
    mechs = mechs[: tree.L + 2]
    n_out = N - 2
    dense = [_statistics(_dense_steps(tree, X, mechs, n_out, consistency, synthesis, np.random.default_rng(s)),
                         data_cells, SHAPE) for s in range(R)]
    layers = layer_measurements(tree, mechs, Neighbours(), "exact integer sampler", sparse=True)
    sparse = [_statistics(SL.steps_release(tree, table, layers, Ledger("set"), n_out, consistency, synthesis,
                                           np.random.default_rng(10_000 + s)), data_cells, SHAPE) for s in range(R)]
    _compare(dense, sparse)


@pytest.mark.parametrize("consistency", ["nonneg", "wls", "uh"])
def test_steps_sparse_matches_dense_under_the_discrete_gaussian(consistency):
    """The (ε, δ) release's leaf layer: discrete Gaussian noise on every layer, the empty leaf cells'
    drawn as its exact histogram, consistency on blocks with the Gaussian's variance (M_b·Var Z)."""
    X = _table(1)
    data_cells = set(np.ravel_multi_index(tuple(X.T), SHAPE).tolist())
    tree = _tree(X, ORDERS["L=2 a;b (phantoms)"])
    table = CountTable.from_codes(X, SHAPE)
    mechs = [None, DiscreteGaussian(2.0), DiscreteGaussian(1.2), DiscreteGaussian(1.6)]
    n_out = N - 2
    dense = [_statistics(_dense_steps(tree, X, mechs, n_out, consistency, "sample", np.random.default_rng(s)),
                         data_cells, SHAPE) for s in range(R)]
    layers = layer_measurements(tree, mechs, Neighbours(), "exact integer sampler", sparse=True)
    sparse = [_statistics(SL.steps_release(tree, table, layers, Ledger("set", unit="rho", delta=1e-9), n_out,
                                           consistency, "sample", np.random.default_rng(10_000 + s)),
                          data_cells, SHAPE)
              for s in range(R)]
    _compare(dense, sparse)


# ----------------------------------------------------------------------------- exact pieces


def test_nonneg_shift_is_the_dense_projection():
    rng = np.random.default_rng(3)
    for _ in range(50):
        B = 4
        sizes = rng.integers(1, 30, B)
        block = np.repeat(np.arange(B), sizes)
        z = rng.integers(-6, 8, len(block)).astype(float)
        target = rng.uniform(-3, 40, B)
        dense = _project_children(block, z, np.full(len(z), 2.5), target, B)
        # the same cells grouped into (block, value, multiplicity) items
        key = np.stack([block, z.astype(int)], axis=1)
        uk, mult = np.unique(key, axis=0, return_counts=True)
        items = leaf_noise.Items(uk[:, 0], uk[:, 1].astype(float), mult, np.full(len(uk), -1))
        mu = SL.nonneg_shift(items, target, B)
        sparse = np.maximum(z - mu[block], 0.0)
        np.testing.assert_allclose(sparse, dense, atol=1e-9)


def test_empty_histogram_is_the_noise_law():
    """Pooled over blocks, the histogram's values follow the mechanism's pmf (tails included)."""
    mech = DiscreteLaplace(2.0)
    b, k, m = leaf_noise.empty_histogram(np.array([10**6, 3 * 10**6, 0, 7]), mech, np.random.default_rng(4))
    assert np.bincount(b, weights=m, minlength=4).tolist() == [10**6, 3 * 10**6, 0, 7]
    ks = np.arange(-12, 13)
    counts = np.array([m[k == v].sum() for v in ks])
    expected = mech.pmf(ks) * (4 * 10**6 + 7)
    chi = ((counts - expected) ** 2 / expected).sum()
    assert stats.chi2.sf(chi, len(ks)) > ALPHA
    assert np.abs(k).max() > 12  # the tail is drawn, not cut


def test_empty_cells_are_distinct_uniform_and_empty():
    X = _table()
    table = CountTable.from_codes(X, SHAPE)
    fixed = np.array([[0, -1, -1], [2, -1, -1]])  # disjoint blocks, as leaf blocks are
    n_cells = np.array([30, 30])
    n_empty = n_cells - np.array([(table.codes[:, 0] == 0).sum(), 0])
    block = np.array([0] * int(n_empty[0]) + [1] * 30)
    out = SL.draw_empty_cells(block, fixed, SHAPE, table.keys, n_cells, n_empty, np.random.default_rng(5))
    keys = np.ravel_multi_index(tuple(out.T), SHAPE)
    k0 = int(n_empty[0])
    assert len(np.unique(keys)) == len(keys)  # every empty cell of both blocks, once
    assert not set(keys.tolist()) & set(table.keys.tolist())
    assert (out[:k0, 0] == 0).all() and (out[k0:, 0] == 2).all()


def test_sparse_release_through_the_api(monkeypatch):
    """With the dense threshold at 0 every release takes the sparse path, end to end."""
    import pandas as pd

    import dpcore

    monkeypatch.setattr(SL, "SPARSE_ABOVE", 0)
    rng = np.random.default_rng(6)
    df = pd.DataFrame({c: rng.choice(list("xyz"), 80) for c in "pqrs"})
    for method, opts in [("flat_laplace", {}), ("steps", dict(layers=2)),
                         ("steps", dict(order="p;q", consistency="uh")),
                         ("steps", dict(order="p,q", synthesis="round", consistency="wls"))]:
        rel = dpcore.synthesize(df, method=method, epsilon=1.0, sets=2, seed=3, **opts)
        assert len(rel.sets) == 2 and len(rel.sets[0]) == rel.record_count["value"]
        assert set(rel.sets[0].columns) == set(df.columns)


def test_preview_warns_about_empty_cells():
    """The preview's expected empty-cell share: a wide table warns, a dense small one does not;
    the model's share matches simulated flat releases within a few points."""
    import pandas as pd

    import dpcore
    from dpcore.synthesizers.empty_share import flat_empty_share

    rng = np.random.default_rng(7)
    wide = pd.DataFrame({f"c{j}": rng.choice(list("abcdefgh"), 100) for j in range(15)})  # 8^15 ≈ 3.5e13 cells
    pv = dpcore.preview(wide, method="steps", epsilon=1.0, layers=2)
    assert pv.plan["empty_cell_share"] > 0.99 and "ipf" in pv.plan["empty_cell_warning"]
    mp = dpcore.preview(wide, method="flat_laplace", epsilon=1.0)
    assert mp.plan["empty_cell_share"] > 0.99 and "privbayes" in mp.plan["empty_cell_warning"]
    dense = pd.DataFrame({"a": rng.choice(list("xy"), 2000), "b": rng.choice(list("uvw"), 2000)})
    assert dpcore.preview(dense, method="steps", epsilon=1.0, layers=1).plan["empty_cell_warning"] is None
    # model vs simulation: records in distinct cells of a 4000-cell table
    shape = (40, 100)
    X = np.stack(np.unravel_index(rng.choice(4000, 200, replace=False), shape), axis=1)
    table = CountTable.from_codes(X, shape)
    shares = [1 - (table.lookup(SL.flat_release(table, DiscreteLaplace(2.0), 200, np.random.default_rng(s), prior=1.0))
                   > 0).mean() for s in range(40)]
    assert abs(np.mean(shares) - flat_empty_share(4000, 200, 2.0, 1.0)) < 0.03
