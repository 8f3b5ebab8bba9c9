"""Private-PGM's estimator on dpcore's junction tree (dpcore.estimate.mirror_descent): exact margins
are reproduced, noisy ones are fitted at least as well as IPF on pooled targets and at the minimum
a solver over the whole joint simplex finds, the model is a calibrated decomposable model, and
margins are weighted by their inverse variance."""
import itertools

import numpy as np
import pytest
from scipy import optimize

from dpcore.estimate.accelerated_mirror_descent import AcceleratedMirrorDescent
from dpcore.estimate.estimator import Estimator
from dpcore.estimate.junction_tree import DecomposableModel, JunctionTreeIPF
from dpcore.estimate.mirror_descent import LossTerms, MirrorDescent, clique_beliefs
from dpcore.measure.margins import NoisyMargin

SHAPE = (2, 3, 2, 4, 3)
SETS = [(0, 1), (1, 2), (2, 3), (0, 3), (3, 4), (4,), (1,)]


def _table(shape=SHAPE, total=1000.0, seed=0, concentration=1.0):
    n = int(np.prod(shape))
    return np.random.default_rng(seed).dirichlet(np.full(n, concentration)).reshape(shape) * total


def _margin(p, axes):
    return p.sum(axis=tuple(i for i in range(p.ndim) if i not in axes))


def _noisy(p, sets, sd, seed=1):
    rng = np.random.default_rng(seed)
    return [NoisyMargin(s, _margin(p, s) + rng.normal(0, sd, _margin(p, s).shape), sd ** 2) for s in sets]


def test_it_meets_the_estimator_protocol():
    assert isinstance(MirrorDescent(), Estimator)


@pytest.mark.parametrize("variance", [1.0, 0.0])
def test_exact_consistent_margins_are_reproduced(variance):
    """Margins of one table (noise-free; given a variance, or exact with variance 0) are
    consistent: the minimum of L is 0 and the fit reaches it."""
    p = _table()
    margins = [NoisyMargin(s, _margin(p, s), variance) for s in SETS]
    model, info = MirrorDescent(iters=3000, tol=0.0).fit(SHAPE, margins, 1000.0)
    weight = LossTerms.of(model.tree, margins).weight[0]  # 1, or the exact margins' large weight
    assert info["loss"] / weight < 1e-8
    for s in SETS:
        assert np.abs(model.marginal(s) - _margin(p, s)).max() < 1e-3, s


def test_noisy_margins_are_fitted_better_than_by_ipf_on_pooled_targets():
    """On inconsistent noisy margins (some cells negative) IPF fits the simplex-projected targets;
    mirror descent minimises L itself, so its L is lower, and more iterations lower it further."""
    p = _table(total=300.0)
    margins = _noisy(p, SETS, 15.0)
    assert any((m.values < 0).any() for m in margins)
    ipf, _ = JunctionTreeIPF().fit(SHAPE, margins, 300.0)
    terms = LossTerms.of(ipf.tree, margins)
    ipf_loss = terms.loss(ipf.tree, ipf.mu)
    short, short_info = MirrorDescent(iters=20, tol=0.0).fit(SHAPE, margins, 300.0)
    model, info = MirrorDescent(iters=2000, tol=0.0).fit(SHAPE, margins, 300.0)
    assert info["start_loss"] == pytest.approx(ipf_loss, rel=1e-4)  # the IPF start, its zeros floored at 1e-3
    assert info["loss"] == pytest.approx(terms.loss(model.tree, model.mu), rel=1e-12)
    assert info["loss"] < short_info["loss"] < 0.9 * ipf_loss


#: both estimators of the same loss, run to its minimum: plain mirror descent and the accelerated one
TO_THE_MINIMUM = [MirrorDescent(iters=5000, tol=1e-14), AcceleratedMirrorDescent(iters=3000, rel_tol=0.0)]


@pytest.mark.parametrize("estimator", TO_THE_MINIMUM, ids=["plain", "accelerated"])
def test_the_fit_is_the_minimum_over_the_whole_joint_simplex(estimator):
    """On a 2×3×2 domain with margins {0,1}, {1,2}, {0}, {2} (a decomposable model: every
    consistent pair of clique tables is the margin of some joint table), the fit's L matches the
    minimum of L over all 12-cell tables with the total, found by SLSQP, within 1e-4 relative;
    noise is small against the counts so the minimum is interior."""
    shape, total = (2, 3, 2), 600.0
    p = _table(shape, total, seed=5) * 0.5 + total / 24  # every cell well above 0
    sets = [(0, 1), (1, 2), (0,), (2,)]
    rng = np.random.default_rng(7)
    variances = [4.0, 9.0, 1.0, 16.0]
    margins = [NoisyMargin(s, _margin(p, s) + rng.normal(0, np.sqrt(v), _margin(p, s).shape), v)
               for s, v in zip(sets, variances)]

    def loss(x):
        q = x.reshape(shape)
        return sum(np.sum((_margin(q, m.axes) - m.values) ** 2) / m.variance for m in margins)

    best = optimize.minimize(loss, p.ravel() / p.sum() * total, method="SLSQP", bounds=[(0, None)] * 12,
                             constraints=[{"type": "eq", "fun": lambda x: x.sum() - total}],
                             options={"ftol": 1e-14, "maxiter": 1000})
    assert best.success
    model, info = estimator.fit(shape, margins, total)
    assert info["loss"] == pytest.approx(best.fun, rel=1e-4)
    assert info["loss"] >= best.fun * (1 - 1e-6)  # nothing beats the joint minimum: the fit is in the polytope
    ipf, _ = JunctionTreeIPF().fit(shape, margins, total)
    assert LossTerms.of(ipf.tree, margins).loss(ipf.tree, ipf.mu) > best.fun * (1 + 1e-3)


@pytest.mark.parametrize("estimator", [MirrorDescent(iters=300), AcceleratedMirrorDescent()],
                         ids=["plain", "accelerated"])
def test_the_model_is_a_calibrated_decomposable_model(estimator):
    p = _table(total=500.0)
    model, _ = estimator.fit(SHAPE, _noisy(p, SETS, 6.0), 500.0)
    assert isinstance(model, DecomposableModel) and len(model.tree.cliques) >= 2
    t = model.tree
    for c, mu in enumerate(model.mu):
        assert mu.shape == tuple(SHAPE[a] for a in t.cliques[c])
        assert (mu >= 0).all() and mu.sum() == pytest.approx(500.0, rel=1e-12)
        if t.parent[c] >= 0:
            sep, par = t.separator(c), t.parent[c]
            mine = mu.sum(axis=tuple(i for i, a in enumerate(t.cliques[c]) if a not in sep))
            theirs = model.mu[par].sum(axis=tuple(i for i, a in enumerate(t.cliques[par]) if a not in sep))
            assert np.abs(mine - theirs).max() < 1e-9 * 500
    # margins across cliques and records from the model work as for the IPF fit
    for s in itertools.combinations(range(len(SHAPE)), 2):
        assert model.marginal(s).sum() == pytest.approx(500.0, rel=1e-9)
    rec = model.sample(2000, np.random.default_rng(3))
    assert rec.shape == (2000, len(SHAPE)) and (rec < np.array(SHAPE)).all()


def test_belief_propagation_gives_the_joint_tables_margins():
    """Sum-product on the tree equals summing the explicit joint exp Σθ_C (normalised to the total)."""
    p = _table(total=100.0)
    model, _ = MirrorDescent(iters=1).fit(SHAPE, _noisy(p, SETS, 2.0), 100.0)
    t = model.tree
    rng = np.random.default_rng(2)
    theta = [rng.normal(0, 1, m.shape) for m in model.mu]
    joint = np.zeros(SHAPE)
    for c, th in zip(t.cliques, theta):  # clique axes are sorted: broadcast θ_C over the other attributes
        joint = joint + th.reshape([SHAPE[a] if a in c else 1 for a in range(len(SHAPE))])
    joint = np.exp(joint - joint.max())
    joint *= 100.0 / joint.sum()
    for c, mu in zip(t.cliques, clique_beliefs(t, theta, 100.0)):
        assert np.abs(mu - _margin(joint, c)).max() < 1e-10


def test_a_margin_with_much_smaller_variance_is_fitted_much_more_closely():
    """Two measurements of the same attribute that disagree: the fit is their inverse-variance
    mean (the minimiser of L when it is feasible), so within 1 % of the precise one's distance
    from the noisy one, and swapping the variances swaps the winner."""
    p = _table(total=1000.0)
    y_a = _margin(p, (1,)) + np.array([30.0, -10.0, -20.0])
    y_b = _margin(p, (1,)) + np.array([-40.0, 25.0, 15.0])
    others = [NoisyMargin(s, _margin(p, s), 1.0) for s in [(0,), (2,)]]
    for va, vb in [(1.0, 1e4), (1e4, 1.0)]:
        margins = others + [NoisyMargin((1,), y_a, va), NoisyMargin((1,), y_b, vb)]
        model, _ = MirrorDescent(iters=2000, tol=0.0).fit(SHAPE, margins, 1000.0)
        fit = model.marginal((1,))
        mean = (y_a / va + y_b / vb) / (1 / va + 1 / vb)
        assert np.abs(fit - mean).max() < 1e-3
        near, far = (y_a, y_b) if va < vb else (y_b, y_a)
        assert np.abs(fit - near).max() < 0.01 * np.abs(fit - far).max()


def test_the_cold_start_reaches_the_same_fitted_margins():
    """From θ = 0 (Private-PGM's start) the fit reaches the same loss and measured margins as from
    the IPF start (L is strictly convex in the measured margins here: every cell of each is measured)."""
    p = _table(total=800.0)
    margins = _noisy(p, SETS, 3.0)
    warm, w = MirrorDescent(iters=3000, tol=1e-13).fit(SHAPE, margins, 800.0)
    cold, c = MirrorDescent(iters=3000, tol=1e-13, warm=False).fit(SHAPE, margins, 800.0)
    assert c["start_loss"] > 10 * w["start_loss"] and c["loss"] == pytest.approx(w["loss"], rel=1e-5)
    for s in SETS:
        assert np.abs(cold.marginal(s) - warm.marginal(s)).max() < 0.05, s


def test_repeated_measurements_are_one_term_with_the_same_loss_and_gradient():
    """AIM measures a set again when its budget anneals: the repeats are one term (inverse-variance
    mean, summed weight, a constant), so L and ∇L equal the sum over every measurement."""
    p = _table(total=300.0)
    margins = _noisy(p, SETS, 15.0) + _noisy(p, [(0, 1), (4,)], 5.0, seed=7) + _noisy(p, [(0, 1)], 30.0, seed=8)
    model, _ = JunctionTreeIPF().fit(SHAPE, margins, 300.0)
    tree, mu = model.tree, model.mu
    terms = LossTerms.of(tree, margins)
    assert len(terms.axes) == len(SETS) < len(margins)
    loss, grad = terms.loss_and_gradient(tree, mu)
    naive, naive_grad = 0.0, [np.zeros_like(m) for m in mu]
    for m in margins:
        h = tree.home(m.axes)
        diff = model.marginal(m.axes) - m.values
        naive += float(np.sum(diff ** 2)) / m.variance
        other = tuple(i for i, a in enumerate(tree.cliques[h]) if a not in m.axes)
        naive_grad[h] += np.expand_dims(2 * diff / m.variance, other) * np.ones_like(mu[h])
    assert loss == pytest.approx(naive, rel=1e-10) and terms.loss(tree, mu) == pytest.approx(naive, rel=1e-10)
    for g, n in zip(grad, naive_grad):
        assert np.allclose(g, n, rtol=1e-10, atol=1e-12)


def test_margins_summed_from_larger_terms_and_the_slope_from_margins_are_exact():
    """A term's margin summed from a larger term's margin (``source``) equals the joint table's margin,
    and ``slope`` (⟨∇L(μ), ν − μ⟩ from margins alone) equals the inner product of the clique tables."""
    p = _table(total=300.0)
    margins = _noisy(p, SETS + [(0, 1, 3)], 15.0)
    model, _ = JunctionTreeIPF().fit(SHAPE, margins, 300.0)
    other, _ = JunctionTreeIPF(max_sweeps=2).fit(SHAPE, _noisy(p, SETS + [(0, 1, 3)], 40.0, seed=5), 300.0)
    tree = model.tree
    terms = LossTerms.of(tree, margins)
    assert any(s >= 0 for s in terms.source)  # (0, 1) and (1,) are summed from larger terms, not the clique
    for axes, m in zip(terms.axes, terms.margins(tree, model.mu)):
        assert np.allclose(m, model.marginal(axes), rtol=1e-12, atol=1e-9), axes
    _, grad = terms.loss_and_gradient(tree, model.mu)
    direct = sum(float(np.sum(g * (a - b))) for g, a, b in zip(grad, other.mu, model.mu))
    assert terms.slope(terms.margins(tree, model.mu), terms.margins(tree, other.mu)) == pytest.approx(direct, rel=1e-9)
