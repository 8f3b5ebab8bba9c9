"""The junction-tree model behind ipf (wide tables), AIM and MST (dpcore.estimate.junction_tree): its
junction trees, its IPF equals dense IPF on small tables, its marginals on sets no clique covers are
exact, and its samples follow it. ipf's use of it (margins in ipf's order, the dense iterates) is
tested in tests/synthesizers/test_ipf_wide.py."""
import itertools
import math

import numpy as np
import pytest
from scipy import stats

from dpcore.estimate.junction_tree import DecomposableModel, JunctionTree, model_cells, project_simplex

SHAPE = (2, 3, 2, 4, 3)


def _dense_ipf(targets, total, sweeps=3000):
    q = np.full(SHAPE, total / np.prod(SHAPE))
    for _ in range(sweeps):
        for s, t in targets.items():
            other = tuple(i for i in range(len(SHAPE)) if i not in s)
            cur = q.sum(axis=other, keepdims=True)
            q *= t.reshape(cur.shape) / cur
    return q


def _targets(seed=1, total=1000.0):
    p = np.random.default_rng(seed).dirichlet(np.ones(np.prod(SHAPE))).reshape(SHAPE) * total
    sets = [(0, 1), (1, 2), (2, 3), (0, 3), (3, 4), (4,)]
    return {s: p.sum(axis=tuple(i for i in range(len(SHAPE)) if i not in s)) for s in sets}


def test_junction_tree_ipf_equals_dense_ipf_on_every_margin():
    targets = _targets()
    model, info = DecomposableModel.fit(SHAPE, targets, 1000.0, max_sweeps=2000, tol=1e-10)
    assert info["converged"]
    dense = _dense_ipf(targets, 1000.0)
    for s in [(0, 1), (1, 3), (0, 2, 4), (1, 4), (0,), (2, 3, 4)]:
        other = tuple(i for i in range(len(SHAPE)) if i not in s)
        assert np.abs(model.marginal(s) - dense.sum(axis=other)).max() < 1e-8, s


def _running_intersection(jt):
    """Every attribute's cliques form a connected subtree (the junction-tree property)."""
    for a in range(len(jt.shape)):
        holders = {i for i, c in enumerate(jt.cliques) if a in c}
        roots = [i for i in holders if jt.parent[i] not in holders]
        assert len(roots) == 1, (a, jt)


def test_junction_tree_is_a_running_intersection_tree():
    sets = [(0, 1), (1, 2), (2, 3), (0, 3), (3, 4)]
    tree = JunctionTree.build(SHAPE, sets)
    _running_intersection(tree)
    assert model_cells(SHAPE, sets) == tree.cells


def test_junction_tree_of_a_chain_a_cycle_and_all_pairs():
    shape = (2, 3, 4, 3, 2, 5)
    chain = JunctionTree.build(shape, [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)])
    assert sorted(chain.cliques) == [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)]
    _running_intersection(chain)
    cycle = JunctionTree.build(shape, [(0, 1), (1, 2), (2, 3), (0, 3), (4,), (5,)])
    assert max(len(c) for c in cycle.cliques) == 3  # a 4-cycle needs one chord
    assert all(set(c) <= {0, 1, 2, 3} or len(c) == 1 for c in cycle.cliques)
    _running_intersection(cycle)
    full = JunctionTree.build(shape, list(itertools.combinations(range(6), 2)))
    assert full.cliques == [tuple(range(6))] and full.cells == math.prod(shape)


def test_samples_follow_the_model():
    model, _ = DecomposableModel.fit(SHAPE, _targets(2), 1000.0, max_sweeps=500)
    X = model.sample(20000, np.random.default_rng(0))
    for s in [(0, 1), (1, 3), (2, 4)]:
        expected = model.marginal(s).ravel() / 1000.0 * len(X)
        observed = np.bincount(np.ravel_multi_index(tuple(X[:, a] for a in s), [SHAPE[a] for a in s]),
                               minlength=expected.size)
        keep = expected > 0
        assert observed[~keep].sum() == 0
        assert stats.chisquare(observed[keep], expected[keep] * observed.sum() / expected[keep].sum()).pvalue > 0.001


def test_simplex_projection():
    y = np.array([5.0, -3.0, 2.0, 0.5])
    t = project_simplex(y, 4.0)
    assert t.min() >= 0 and t.sum() == pytest.approx(4.0)
    # the projection is the closest such point: no random feasible point is closer
    rng = np.random.default_rng(0)
    for _ in range(200):
        z = rng.dirichlet(np.ones(4)) * 4.0
        assert np.sum((y - t) ** 2) <= np.sum((y - z) ** 2) + 1e-12


def test_reconcile_nested_combines_by_inverse_variance_and_keeps_consistent_tables():
    from dpcore.estimate.junction_tree import reconcile_nested
    shape = (2, 3)
    rng = np.random.default_rng(5)
    pair = rng.uniform(0, 10, shape)
    # consistent inputs are left as they are
    out = reconcile_nested({(0, 1): (pair, 4.0), (0,): (pair.sum(axis=1), 1.0)}, shape)
    assert np.allclose(out[(0, 1)][0], pair) and np.allclose(out[(0,)][0], pair.sum(axis=1))
    # inconsistent ones: A gets the inverse-variance mean of its own table and B's A-margin
    # (variance 3·4 = 12 over the 3 summed cells), and B's A-margin then equals it
    one = pair.sum(axis=1) + np.array([6.0, -3.0])
    out = reconcile_nested({(0, 1): (pair, 4.0), (0,): (one, 1.0)}, shape)
    expected = (one / 1.0 + pair.sum(axis=1) / 12.0) / (1.0 + 1 / 12.0)
    assert np.allclose(out[(0,)][0], expected)
    assert out[(0,)][1] == pytest.approx(1 / (1 + 1 / 12))
    assert np.allclose(out[(0, 1)][0].sum(axis=1), expected)
    # the change to B is spread evenly over the cells of each A-level (least squares)
    diff = out[(0, 1)][0] - pair
    assert np.allclose(diff, diff[:, :1])


def test_a_margin_known_exactly_keeps_its_values_in_the_pooled_targets():
    """Variance 0 (a margin known exactly, or discrete Laplace at an ε so large its variance underflows):
    combining and reconciling keep its values, with finite weights, where 1/0 raised before."""
    from dpcore.estimate.junction_tree import combine, reconcile_nested
    from dpcore.measure.margins import NoisyMargin
    shape = (2, 3)
    exact = np.array([[3.0, 1.0, 4.0], [1.0, 5.0, 9.0]])
    noisy = exact + np.array([[2.0, -1.0, 0.0], [0.0, 1.0, -2.0]])
    pooled = combine([NoisyMargin((0, 1), exact, 0.0), NoisyMargin((0, 1), noisy, 4.0),
                      NoisyMargin((0,), np.array([10.0, 12.0]), 1.0)])
    assert np.allclose(pooled[(0, 1)][0], exact, atol=1e-9) and np.isfinite(pooled[(0, 1)][1])
    out = reconcile_nested(pooled, shape)
    assert np.allclose(out[(0, 1)][0], exact, atol=1e-9)
    assert np.allclose(out[(0,)][0], exact.sum(axis=1), atol=1e-9)  # the noisy one-way margin gives way


def test_a_marginal_across_cliques_stays_finite_when_a_separator_cell_is_subnormal():
    """Mirror descent's multiplicative updates can leave a cell at a subnormal float (1e-310): 1/μ_S then
    overflowed to inf and the marginal across two cliques came out NaN (an AIM round then stopped with
    "scores must be finite"). A quotient that overflows now counts as 0, as a cell at 0 does."""
    shape = (2, 2, 2)
    tree = JunctionTree.build(shape, [(0, 1), (1, 2)])
    model = DecomposableModel(tree, 10.0)
    a = np.array([[4.0, 1e-310], [5.0, 1e-311]])      # attribute 1 = 1 holds ~1e-310 records
    b = np.array([[2.0, 7.0], [1.1e-310, 0.0]])        # rows: attribute 1, columns: attribute 2
    model.mu = [a, b] if tree.cliques[0] == (0, 1) else [b, a]
    out = model.marginal((0, 2))
    assert np.all(np.isfinite(out))
    # the dense table μ(0,1)·μ(1,2)/μ(1), to the last cell, with the subnormal row counted as 0
    expected = np.einsum("ab,bc->ac", a[:, :1], b[:1] / b[:1].sum())
    assert np.allclose(out, expected, rtol=1e-12, atol=1e-300)


def test_a_warm_start_reaches_the_cold_fit_on_consistent_targets():
    """Warm start (AIM's rounds under (ε, δ)): a model fitted to fewer margins, carried to the tree of
    more margins, then fitted to them, ends at the cold fit's maximum-entropy table (within 1e-6 counts
    on every pair), in fewer sweeps."""
    targets = _targets(3)
    first = {s: targets[s] for s in [(0, 1), (1, 2), (4,)]}
    early, _ = DecomposableModel.fit(SHAPE, first, 1000.0, max_sweeps=2000, tol=1e-9)
    cold, cold_info = DecomposableModel.fit(SHAPE, targets, 1000.0, max_sweeps=5000, tol=1e-9)
    warm, warm_info = DecomposableModel.fit(SHAPE, targets, 1000.0, max_sweeps=5000, tol=1e-9, start=early,
                                            floor=1e-3)
    assert cold_info["converged"] and warm_info["converged"]
    assert early.tree.cliques != warm.tree.cliques  # the start was carried to another tree
    for s in itertools.combinations(range(len(SHAPE)), 2):
        assert np.abs(warm.marginal(s) - cold.marginal(s)).max() < 1e-6, s
    assert warm_info["sweeps"] < cold_info["sweeps"]


def test_carrying_a_model_to_a_tree_keeps_its_margins_and_floors_its_cells():
    model, _ = DecomposableModel.fit(SHAPE, _targets(4), 1000.0, max_sweeps=500, tol=1e-9)
    bigger = JunctionTree.build(SHAPE, list(_targets(4)) + [(0, 4)])
    carried = model.on_tree(bigger)
    for c in model.tree.cliques:  # the model is Markov on the bigger tree: the same distribution
        assert np.allclose(carried.marginal(c), model.marginal(c), atol=1e-9)
    zeroed = DecomposableModel.from_cliques(model.tree, 1000.0, [np.where(m < 5, 0.0, m) for m in model.mu])
    floored = zeroed.on_tree(bigger, floor=0.5)
    assert min(float(m.min()) for m in floored.mu) > 0
    assert all(abs(float(m.sum()) - 1000.0) < 1e-9 for m in floored.mu)


def test_the_stall_rule_stops_a_fit_whose_targets_disagree():
    """Inconsistent targets (independent noise on overlapping margins): the gap settles above ``tol``,
    so without ``stall`` every sweep runs; ``stall=0.05`` stops once a sweep closes it by < 5 %."""
    rng = np.random.default_rng(5)
    targets = {s: project_simplex(t + rng.normal(0, 20, t.shape), 1000.0) for s, t in _targets(5).items()}
    _, capped = DecomposableModel.fit(SHAPE, targets, 1000.0, max_sweeps=200, tol=1e-3)
    assert capped["sweeps"] == 200 and not capped["converged"] and capped["max_gap"] > 1
    _, stalled = DecomposableModel.fit(SHAPE, targets, 1000.0, max_sweeps=200, tol=1e-3, stall=0.05)
    assert stalled["stalled"] and 1 < stalled["sweeps"] < 200
    assert stalled["max_gap"] < 1.5 * capped["max_gap"]
