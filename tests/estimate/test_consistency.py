"""Tests for dpcore.estimate.consistency against dense reference solutions (docs/methods/steps.md)."""

import numpy as np
import pytest
from scipy.optimize import minimize

from dpcore.estimate.consistency import (
    gls_bottom_up,
    make_consistent,
    posterior_variances,
)

METHODS = ("wls", "nonneg", "uh")


# ---------------------------------------------------------------------------
# tree builders
# ---------------------------------------------------------------------------
def _permute_layer(rng, par, ph):
    perm = rng.permutation(len(par))
    return par[perm], ph[perm]


def random_tree(rng, depth=None, max_fan=4, phantom_prob=0.5, childless_prob=0.1,
                leaf_rate=3.0, var_range=(0.5, 20.0)):
    """Random tree: fan-outs 1..max_fan, optional phantom padding up to max_fan,
    some real childless nodes above the last layer, shuffled layers (children of a
    parent are not contiguous), known root, random per-layer variances.

    Returns dict(parents, noisy, variances, phantom, true).
    """
    D = int(rng.integers(2, 5)) if depth is None else depth
    parents = [None]
    phantom = [np.zeros(1, dtype=bool)]
    for k in range(1, D + 1):
        par, ph = [], []
        for v in range(len(phantom[k - 1])):
            if phantom[k - 1][v]:
                continue
            if k >= 2 and rng.random() < childless_prob:
                continue  # a real node with no children: a leaf above layer D
            f = int(rng.integers(1, max_fan + 1))
            par += [v] * f
            ph += [False] * f
            if f < max_fan and rng.random() < phantom_prob:
                par += [v] * (max_fan - f)
                ph += [True] * (max_fan - f)
        p, h = _permute_layer(rng, np.array(par, dtype=np.int64), np.array(ph, dtype=bool))
        parents.append(p)
        phantom.append(h)
    # true counts: leaves (childless real nodes) Poisson, aggregated upwards
    L = D + 1
    true = [None] * L
    for k in range(D, -1, -1):
        m = len(phantom[k])
        own = rng.poisson(leaf_rate, m).astype(float)
        if k < D:
            nchild = np.bincount(parents[k + 1], minlength=m)
            sums = np.bincount(parents[k + 1], weights=true[k + 1], minlength=m)
            own = np.where(nchild > 0, sums, own)
        own[phantom[k]] = 0.0
        true[k] = own
    variances = [np.zeros(1)]
    noisy = [true[0].copy()]
    for k in range(1, L):
        s2 = rng.uniform(*var_range)
        var = np.full(len(phantom[k]), s2)
        var[phantom[k]] = 0.0
        variances.append(var)
        noisy.append(np.where(phantom[k], 0.0, true[k] + rng.normal(0, np.sqrt(s2), len(var))))
    return dict(parents=parents, noisy=noisy, variances=variances, phantom=phantom, true=true)


def complete_tree(rng, b, depth, s2):
    """Complete b-ary tree, shuffled layers, equal variance s2 in every non-root layer."""
    parents = [None]
    for k in range(1, depth + 1):
        par = np.repeat(np.arange(b ** (k - 1)), b)
        parents.append(par[rng.permutation(len(par))])
    true = [None] * (depth + 1)
    true[depth] = rng.poisson(4.0, b ** depth).astype(float)
    for k in range(depth - 1, -1, -1):
        true[k] = np.bincount(parents[k + 1], weights=true[k + 1], minlength=b ** k)
    noisy = [true[0].copy()] + [true[k] + rng.laplace(0, np.sqrt(s2 / 2), b ** k)
                                for k in range(1, depth + 1)]
    variances = [np.zeros(1)] + [np.full(b ** k, s2) for k in range(1, depth + 1)]
    phantom = [np.zeros(b ** k, dtype=bool) for k in range(depth + 1)]
    return dict(parents=parents, noisy=noisy, variances=variances, phantom=phantom, true=true)


def _scale(a):
    return max(1.0, float(np.abs(a).max(initial=0.0)))


def _args(t):
    return t["parents"], t["noisy"], t["variances"], t["phantom"]


# ---------------------------------------------------------------------------
# dense references
# ---------------------------------------------------------------------------
def dense_gls(t):
    """Dense constrained GLS via the KKT system.

    Unknowns: all nodes.  Minimise sum (x - n*)^2 / s2 over nodes with s2 > 0,
    subject to x = n* where s2 = 0 and x_parent = sum x_children.
    Returns (x_hat per layer, diag Cov(x_hat) per layer).
    """
    parents, noisy, variances = t["parents"], t["noisy"], t["variances"]
    sizes = [len(v) for v in noisy]
    off = np.concatenate(([0], np.cumsum(sizes)))
    N = off[-1]
    nst = np.concatenate(noisy)
    s2 = np.concatenate(variances)
    H = np.diag(np.where(s2 > 0, 1.0 / np.where(s2 > 0, s2, 1.0), 0.0))
    rows, sel = [], []  # constraint rows; sel: rhs depends on n*_i (fixed) or 0
    for i in np.flatnonzero(s2 == 0):
        r = np.zeros(N)
        r[i] = 1.0
        rows.append(r)
        sel.append(i)
    for k in range(len(sizes) - 1):
        p = parents[k + 1]
        for v in np.unique(p):
            r = np.zeros(N)
            r[off[k] + v] = 1.0
            r[off[k + 1] + np.flatnonzero(p == v)] = -1.0
            rows.append(r)
            sel.append(-1)
    A = np.array(rows)
    m = A.shape[0]
    K = np.block([[H, A.T], [A, np.zeros((m, m))]])
    R = np.zeros((N + m, N))  # rhs = R @ n*
    R[:N] = H
    for j, i in enumerate(sel):
        if i >= 0:
            R[N + j, i] = 1.0
    M = np.linalg.solve(K, R)[:N]
    x = M @ nst
    cov_diag = (M * M) @ s2
    split = lambda a: [a[off[k]:off[k + 1]] for k in range(len(sizes))]
    return split(x), split(cov_diag)


def slsqp_projection(z, V, target):
    """argmin sum (x - z)^2 / V  s.t.  x >= 0, sum x = target (scipy reference)."""
    w = 1.0 / V
    x0 = np.full(len(z), max(target, 0.0) / len(z))
    res = minimize(
        lambda x: np.sum(w * (x - z) ** 2),
        x0,
        jac=lambda x: 2 * w * (x - z),
        method="SLSQP",
        bounds=[(0.0, None)] * len(z),
        constraints=[{"type": "eq", "fun": lambda x: np.sum(x) - target,
                      "jac": lambda x: np.ones_like(x)}],
        options={"ftol": 1e-12, "maxiter": 1000},
    )
    assert res.success, res.message
    return res.x


def assert_consistent(t, out, rtol=1e-9):
    parents, phantom = t["parents"], t["phantom"]
    assert out[0][0] == t["noisy"][0][0]
    for k in range(len(out)):
        assert out[k].shape == t["noisy"][k].shape
        assert np.all(np.isfinite(out[k]))
        assert np.all(out[k][phantom[k]] == 0.0)
    for k in range(len(out) - 1):
        m = len(out[k])
        p = parents[k + 1]
        has = np.bincount(p, minlength=m) > 0
        sums = np.bincount(p, weights=out[k + 1], minlength=m)
        scale = _scale(out[k])
        np.testing.assert_allclose(sums[has], out[k][has], rtol=0, atol=rtol * scale)


# ---------------------------------------------------------------------------
# tests
# ---------------------------------------------------------------------------
def test_random_tree_helper_has_the_features_tested():
    rng = np.random.default_rng(0)
    trees = [random_tree(rng) for _ in range(30)]
    assert any(t["phantom"][k].any() for t in trees for k in range(1, len(t["phantom"])))
    # children of some parent are not contiguous
    assert any(np.any(np.diff(t["parents"][k]) < 0) for t in trees for k in range(2, len(t["parents"])))
    # some real node above the last layer is childless
    found = False
    for t in trees:
        for k in range(1, len(t["parents"]) - 1):
            nchild = np.bincount(t["parents"][k + 1], minlength=len(t["phantom"][k]))
            found |= bool(np.any((nchild == 0) & ~t["phantom"][k]))
    assert found


def test_wls_equals_dense_constrained_gls():
    rng = np.random.default_rng(1)
    for _ in range(30):
        t = random_tree(rng)
        ref, _ = dense_gls(t)
        out = make_consistent(*_args(t), method="wls")
        for k in range(len(out)):
            np.testing.assert_allclose(out[k], ref[k], rtol=0, atol=1e-9 * _scale(ref[k]))


def test_posterior_variances_equal_dense_covariance():
    rng = np.random.default_rng(2)
    for _ in range(30):
        t = random_tree(rng)
        _, cov = dense_gls(t)
        P = posterior_variances(t["parents"], t["variances"])
        assert P[0][0] == 0.0
        for k in range(len(P)):
            np.testing.assert_allclose(P[k], cov[k], rtol=0, atol=1e-9 * _scale(cov[k]))
            assert np.all(P[k][t["phantom"][k]] == 0.0)


def test_gls_bottom_up_leaf_and_sum_outputs():
    rng = np.random.default_rng(3)
    t = random_tree(rng, depth=3)
    z, V, S, VS = gls_bottom_up(t["parents"], t["noisy"], t["variances"])
    D = len(z) - 1
    np.testing.assert_array_equal(z[D], t["noisy"][D])
    np.testing.assert_array_equal(V[D], t["variances"][D])
    assert np.all(S[D] == 0) and np.all(VS[D] == 0)
    assert V[0][0] == 0.0 and z[0][0] == t["noisy"][0][0]
    for k in range(D):
        m = len(z[k])
        p = t["parents"][k + 1]
        np.testing.assert_allclose(S[k], np.bincount(p, weights=z[k + 1], minlength=m))
        np.testing.assert_allclose(VS[k], np.bincount(p, weights=V[k + 1], minlength=m))
        leaf = np.bincount(p, minlength=m) == 0
        np.testing.assert_array_equal(z[k][leaf], t["noisy"][k][leaf])
        # combining never increases variance
        assert np.all(V[k] <= t["variances"][k] + 1e-12)


def test_nonneg_equals_scipy_projection_per_parent():
    rng = np.random.default_rng(4)
    n_checked = n_clipped = 0
    for _ in range(12):
        # small counts and large noise, so many wls estimates are negative
        t = random_tree(rng, leaf_rate=0.7, var_range=(4.0, 30.0))
        out = make_consistent(*_args(t), method="nonneg")
        z, V, _, _ = gls_bottom_up(t["parents"], t["noisy"], t["variances"])
        for k in range(1, len(out)):
            p = t["parents"][k]
            for v in np.unique(p):
                ch = np.flatnonzero(p == v)
                free = ch[V[k][ch] > 0]
                fixed = ch[V[k][ch] == 0]
                np.testing.assert_array_equal(out[k][fixed], z[k][fixed])
                if len(free) == 0:
                    continue
                target = out[k - 1][v] - z[k][fixed].sum()
                ref = slsqp_projection(z[k][free], V[k][free], target)
                np.testing.assert_allclose(out[k][free], ref, rtol=0, atol=1e-5)
                n_checked += 1
                n_clipped += int(np.any(ref < 1e-9) and np.any(z[k][free] < 0))
    assert n_checked > 100
    assert n_clipped > 20  # the non-negativity constraint was actually active


def test_nonneg_outputs_nonnegative_and_consistent():
    rng = np.random.default_rng(5)
    for _ in range(30):
        t = random_tree(rng, leaf_rate=0.5, var_range=(5.0, 50.0))
        out = make_consistent(*_args(t), method="nonneg")
        assert all(np.all(o >= 0) for o in out)
        assert_consistent(t, out)


def test_nonneg_equals_wls_when_wls_is_nonnegative():
    rng = np.random.default_rng(6)
    for _ in range(20):
        t = random_tree(rng, leaf_rate=200.0, var_range=(0.5, 2.0))
        wls = make_consistent(*_args(t), method="wls")
        assert all(np.all(o >= 0) for o in wls)  # precondition of this test
        nn = make_consistent(*_args(t), method="nonneg")
        for a, b in zip(wls, nn):
            np.testing.assert_allclose(b, a, rtol=0, atol=1e-9 * _scale(a))


@pytest.mark.parametrize("b", [2, 3, 4])
@pytest.mark.parametrize("depth", [2, 3])
def test_uh_equals_wls_on_complete_trees(b, depth):
    rng = np.random.default_rng(100 * b + depth)
    for s2 in (1.0, 8.0, 50.0):
        t = complete_tree(rng, b, depth, s2)
        uh = make_consistent(*_args(t), method="uh")
        wls = make_consistent(*_args(t), method="wls")
        for a, c in zip(wls, uh):
            np.testing.assert_allclose(c, a, rtol=0, atol=1e-9 * _scale(a))
        # and differs from doing nothing (the test can fail)
        assert not np.allclose(uh[depth], t["noisy"][depth])


def test_uh_differs_from_wls_with_unequal_layer_variances():
    rng = np.random.default_rng(7)
    t = complete_tree(rng, 3, 3, 4.0)
    t["variances"][1] = t["variances"][1] * 25.0
    uh = make_consistent(*_args(t), method="uh")
    wls = make_consistent(*_args(t), method="wls")
    assert not np.allclose(uh[3], wls[3])


@pytest.mark.parametrize("method", METHODS)
def test_consistency_and_phantoms_every_method(method):
    rng = np.random.default_rng(8)
    for _ in range(30):
        t = random_tree(rng)
        out = make_consistent(*_args(t), method=method)
        assert_consistent(t, out)


@pytest.mark.parametrize("method", METHODS)
def test_phantoms_pinned_even_if_caller_passes_values(method):
    rng = np.random.default_rng(9)
    t = random_tree(rng, depth=3, phantom_prob=1.0)
    assert any(p.any() for p in t["phantom"])
    noisy = [n.copy() for n in t["noisy"]]
    for k in range(1, len(noisy)):
        noisy[k][t["phantom"][k]] = 7.0
    out = make_consistent(t["parents"], noisy, t["variances"], t["phantom"], method=method)
    assert_consistent(t, out)


def test_inputs_not_modified():
    rng = np.random.default_rng(10)
    t = random_tree(rng)
    before = [n.copy() for n in t["noisy"]]
    for m in METHODS:
        make_consistent(*_args(t), method=m)
    for a, b in zip(before, t["noisy"]):
        np.testing.assert_array_equal(a, b)


def test_unknown_method_raises_value_error_listing_allowed():
    rng = np.random.default_rng(11)
    t = random_tree(rng, depth=2)
    with pytest.raises(ValueError) as exc:
        make_consistent(*_args(t), method="ols")
    msg = str(exc.value)
    for m in METHODS:
        assert m in msg


def test_nonneg_large_layer_sums_and_kkt():
    rng = np.random.default_rng(12)
    P, n = 2_000, 200_000
    p1 = np.zeros(P, dtype=np.int64)
    p2 = rng.integers(0, P, n)
    true2 = rng.poisson(0.3, n).astype(float)
    true1 = np.bincount(p2, weights=true2, minlength=P)
    s1, s2 = 4.0, 8.0
    noisy = [np.array([true2.sum()]), true1 + rng.laplace(0, np.sqrt(s1 / 2), P),
             true2 + rng.laplace(0, np.sqrt(s2 / 2), n)]
    variances = [np.zeros(1), np.full(P, s1), np.full(n, s2)]
    phantom = [np.zeros(1, bool), np.zeros(P, bool), np.zeros(n, bool)]
    t = dict(parents=[None, p1, p2], noisy=noisy, variances=variances, phantom=phantom)
    out = make_consistent(*_args(t), method="nonneg")
    assert all(np.all(o >= 0) for o in out)
    assert_consistent(t, out)
    assert np.mean(out[2] == 0) > 0.3  # the projection zeroed many cells

    # KKT: x = max(z - lam V, 0) with one lam per parent
    z, V, _, _ = gls_bottom_up(t["parents"], noisy, variances)
    x = out[2]
    act = x > 0
    lam_u = (z[2] - x) / V[2]
    lam_max = np.full(P, -np.inf)
    lam_min = np.full(P, np.inf)
    np.maximum.at(lam_max, p2[act], lam_u[act])
    np.minimum.at(lam_min, p2[act], lam_u[act])
    has = np.isfinite(lam_max)
    np.testing.assert_allclose(lam_max[has], lam_min[has], rtol=0, atol=1e-8)
    # inactive children: z/V <= lam
    inact = ~act & has[p2]
    assert np.all(z[2][inact] / V[2][inact] <= lam_max[p2[inact]] + 1e-8)

    # a few parents against scipy
    for v in rng.choice(P, 3, replace=False):
        ch = np.flatnonzero(p2 == v)
        ref = slsqp_projection(z[2][ch], V[2][ch], out[1][v])
        np.testing.assert_allclose(x[ch], ref, rtol=0, atol=1e-5)
