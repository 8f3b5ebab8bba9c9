"""The accelerated estimator (dpcore.estimate.accelerated_mirror_descent): it reaches the minimum of
the same loss as plain mirror descent, faster; its stop rule is the one documented; its Bregman
divergence is n·KL of the joint tables; and it is the released fit of AIM and MST under (ε, δ).
The joint minimum on a small domain and the calibrated model are checked for both estimators in
test_mirror_descent.py."""
import numpy as np
import pytest

from dpcore.estimate.accelerated_mirror_descent import AcceleratedMirrorDescent, margins_pinsker, tree_divergence
from dpcore.estimate.estimator import Estimator
from dpcore.estimate.junction_tree import JunctionTreeIPF
from dpcore.estimate.mirror_descent import LossTerms, MirrorDescent, clique_beliefs
from dpcore.measure.margins import NoisyMargin
from tests.estimate.test_mirror_descent import SETS, SHAPE, _margin, _noisy, _table


def _sparse_noisy():
    """A sparse table (many cells near 0) with noise that makes counts negative: the case where plain
    mirror descent is slow, since cells the noise pushes to 0 approach it geometrically."""
    p = _table(total=2000.0, seed=4, concentration=0.05)
    margins = _noisy(p, SETS, 20.0, seed=9)
    assert any((m.values < 0).any() for m in margins)
    return margins


def test_it_meets_the_estimator_protocol():
    assert isinstance(AcceleratedMirrorDescent(), Estimator)


def test_it_reaches_plain_mirror_descents_minimum_and_its_margins():
    """Run long on both, the two methods minimise the same L: the same loss within 1e-4 relative and
    the same measured margins within 0.05 records."""
    margins = _sparse_noisy()
    acc, a = AcceleratedMirrorDescent(iters=4000, rel_tol=0.0).fit(SHAPE, margins, 2000.0)
    plain, p = MirrorDescent(iters=20000, tol=1e-15).fit(SHAPE, margins, 2000.0)
    assert a["loss"] == pytest.approx(p["loss"], rel=1e-4)
    assert a["loss"] == pytest.approx(LossTerms.of(acc.tree, margins).loss(acc.tree, acc.mu), rel=1e-12)
    for s in SETS:
        assert np.abs(acc.marginal(s) - plain.marginal(s)).max() < 0.05, s


def test_it_gets_there_in_far_fewer_iterations():
    """After 100 iterations from the same IPF start the accelerated loss is closer to the minimum than
    plain mirror descent's after 300 (its point: a faster rate, not a different objective)."""
    margins = _sparse_noisy()
    _, best = AcceleratedMirrorDescent(iters=4000, rel_tol=0.0).fit(SHAPE, margins, 2000.0)
    _, acc = AcceleratedMirrorDescent(iters=100, rel_tol=0.0).fit(SHAPE, margins, 2000.0)
    _, plain = MirrorDescent(iters=300, tol=0.0).fit(SHAPE, margins, 2000.0)
    assert acc["start_loss"] == pytest.approx(plain["start_loss"], rel=1e-12)  # the same start
    assert acc["iterations"] == 100 and plain["iterations"] == 300
    assert acc["loss"] - best["loss"] < 0.5 * (plain["loss"] - best["loss"])


def test_the_stop_rule_is_the_documented_one():
    """With ``rel_tol`` it stops at the first iteration k ≥ window where L(k − window) − L(k) <
    rel_tol·L(k), and not before; with rel_tol = 0 it runs every iteration. Checked by rerunning to
    k − 1 and k (the method is deterministic, so the runs share their path)."""
    margins = _sparse_noisy()
    window, tol = 10, 0.01
    _, info = AcceleratedMirrorDescent(window=window, rel_tol=tol).fit(SHAPE, margins, 2000.0)
    k = info["iterations"]
    assert info["converged"] and window <= k < 1000
    loss = {j: AcceleratedMirrorDescent(iters=j, rel_tol=0.0).fit(SHAPE, margins, 2000.0)[1]["loss"]
            for j in (k - window - 1, k - window, k - 1, k)}
    assert loss[k] == pytest.approx(info["loss"], rel=1e-12)
    assert loss[k - window] - loss[k] < tol * loss[k]
    if k - 1 >= window:
        assert loss[k - window - 1] - loss[k - 1] >= tol * loss[k - 1]
    _, full = AcceleratedMirrorDescent(iters=50, rel_tol=0.0).fit(SHAPE, margins, 2000.0)
    assert full["iterations"] == 50 and not full["converged"]


def test_exact_consistent_margins_are_reproduced():
    p = _table()
    margins = [NoisyMargin(s, _margin(p, s), 1.0) for s in SETS]
    model, info = AcceleratedMirrorDescent(iters=3000, rel_tol=0.0).fit(SHAPE, margins, 1000.0)
    assert info["loss"] < 1e-6
    for s in SETS:
        assert np.abs(model.marginal(s) - _margin(p, s)).max() < 1e-3, s


def test_the_divergence_is_n_times_kl_of_the_joint_tables():
    """tree_divergence of two calibrated tree tables equals Σ x log(x/y) over the full joint tables
    they define (brute force over all 144 cells), and is 0 for a table against itself."""
    margins = _noisy(_table(total=100.0), SETS, 2.0)
    model, _ = JunctionTreeIPF().fit(SHAPE, margins, 100.0)
    t = model.tree
    rng = np.random.default_rng(2)
    joints, tables = [], []
    for _ in range(2):
        theta = [rng.normal(0, 1, m.shape) for m in model.mu]
        joint = np.zeros(SHAPE)
        for c, th in zip(t.cliques, theta):
            joint = joint + th.reshape([SHAPE[a] if a in c else 1 for a in range(len(SHAPE))])
        joint = np.exp(joint - joint.max())
        joints.append(joint * 100.0 / joint.sum())
        tables.append(clique_beliefs(t, theta, 100.0))
    brute = float(np.sum(joints[0] * np.log(joints[0] / joints[1])))
    assert tree_divergence(t, tables[0], tables[1]) == pytest.approx(brute, rel=1e-9)
    assert tree_divergence(t, tables[0], tables[0]) == pytest.approx(0.0, abs=1e-9)


def test_the_released_model_is_the_accelerated_refit_or_the_ipf_fit_as_it_is():
    """final_fit.released_model: ``ipf`` returns the IPF model and its diagnostics untouched;
    ``mirror_descent`` the accelerated refit from it (same tree), whose loss is below the IPF fit's."""
    from dpcore.estimate.final_fit import released_model

    margins = _sparse_noisy()
    ipf, ipf_info = JunctionTreeIPF().fit(SHAPE, margins, 2000.0)
    same, same_info = released_model("ipf", SHAPE, margins, 2000.0, ipf, ipf_info)
    assert same is ipf and same_info is ipf_info
    refit, info = released_model("mirror_descent", SHAPE, margins, 2000.0, ipf, ipf_info)
    direct, direct_info = AcceleratedMirrorDescent(start_model=ipf).fit(SHAPE, margins, 2000.0)
    assert refit.tree is ipf.tree and info["iterations"] == direct_info["iterations"]
    assert all(np.array_equal(a, b) for a, b in zip(refit.mu, direct.mu))
    terms = LossTerms.of(ipf.tree, margins)
    assert info["loss"] < terms.loss(ipf.tree, ipf.mu)


def test_the_pinsker_bound_on_margins_is_below_the_divergence():
    """margins_pinsker (max ||x_r − y_r||₁² / 2n over the measured margins) never exceeds the tree
    divergence, on random pairs of calibrated tables, including pairs far apart."""
    margins = _noisy(_table(total=100.0), SETS, 2.0)
    model, _ = JunctionTreeIPF().fit(SHAPE, margins, 100.0)
    t = model.tree
    terms = LossTerms.of(t, margins)
    rng = np.random.default_rng(3)
    for scale in (0.01, 0.3, 3.0):
        for _ in range(20):
            x = clique_beliefs(t, [rng.normal(0, scale, m.shape) for m in model.mu], 100.0)
            y = clique_beliefs(t, [rng.normal(0, scale, m.shape) for m in model.mu], 100.0)
            bound = margins_pinsker(terms.margins(t, x), terms.margins(t, y), 100.0)
            assert 0.0 < bound <= tree_divergence(t, x, y) * (1 + 1e-12)


def test_the_pinsker_shortcut_changes_no_decision(monkeypatch):
    """The line search accepts on the Pinsker bound when it suffices and computes the divergence
    otherwise: with the shortcut off (bound 0, the divergence always computed) the iterations, the
    restarts, the loss and the model are the same."""
    from dpcore.estimate import accelerated_mirror_descent as acc

    margins = _sparse_noisy()
    fast, f = AcceleratedMirrorDescent().fit(SHAPE, margins, 2000.0)
    assert 0 < f["divergences"] < f["iterations"]  # the shortcut was taken, and not always
    monkeypatch.setattr(acc, "margins_pinsker", lambda a, b, total: 0.0)
    slow, s = AcceleratedMirrorDescent().fit(SHAPE, margins, 2000.0)
    assert (f["iterations"], f["restarts"]) == (s["iterations"], s["restarts"])
    assert s["divergences"] >= s["iterations"]
    assert f["loss"] == pytest.approx(s["loss"], rel=1e-12)
    for a, b in zip(fast.mu, slow.mu):
        assert np.allclose(a, b, rtol=1e-9, atol=1e-9)
