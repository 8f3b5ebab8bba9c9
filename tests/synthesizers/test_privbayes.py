"""PrivBayes (Zhang et al. 2017; docs/methods/comparators.md): score sensitivity by brute force, the network,
ancestral sampling, the ledger and options.

Statistical checks use fixed seeds and reject at p ≤ 0.001.
"""
import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpcore
from dpcore.errors import OptionError
from dpcore.privacy.budget import Epsilon
from dpcore.privacy.ledger import BOUNDED, Ledger
from dpcore.synthesizers import REGISTRY
from dpcore.synthesizers import privbayes as PB

P_MIN = 0.001


# ---------------------------------------------------------------------------- the score


def _compositions(n, k):
    """All count vectors of n records over k cells."""
    out = []
    for c in itertools.combinations(range(n + k - 1), k - 1):
        b = (-1,) + c + (n + k - 1,)
        out.append([b[i + 1] - b[i] - 1 for i in range(k)])
    return np.array(out)


def _mi_batch(c, kx):
    """Mutual information in bits of a batch of flattened (kx, kp) count tables."""
    c = c.reshape(len(c), kx, -1).astype(float)
    n = c.sum(axis=(1, 2), keepdims=True)
    px = c.sum(axis=2, keepdims=True)
    pp = c.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        term = np.where(c > 0, c * np.log2(c * n / (px * pp)), 0.0)
    return term.sum(axis=(1, 2)) / n[:, 0, 0]


def _max_replace_one_change(kx, kp, n):
    """max |I(D) − I(D')| over all datasets D of n records and all D' = D with one record moved."""
    tables = _compositions(n, kx * kp)
    base = _mi_batch(tables, kx)
    best = 0.0
    for a, b in itertools.permutations(range(kx * kp), 2):
        has = tables[:, a] > 0
        moved = tables[has].copy()
        moved[:, a] -= 1
        moved[:, b] += 1
        best = max(best, np.abs(_mi_batch(moved, kx) - base[has]).max())
    return best


def test_module_mi_matches_reference():
    rng = np.random.default_rng(0)
    for shape in [(2, 2), (3, 5), (4, 2, 3)]:
        c = rng.integers(0, 7, size=shape)
        ref = _mi_batch(c.reshape(1, -1), shape[0])[0]
        assert PB.mutual_information(c) == pytest.approx(ref, abs=1e-12)
        # sparse scorer (per-record codes) agrees with the dense one
        x = np.repeat(np.arange(c.size) // (c.size // shape[0]), c.ravel())
        pi = np.repeat(np.arange(c.size) % (c.size // shape[0]), c.ravel())
        assert PB._sparse_mi(x, shape[0], pi) == pytest.approx(ref, abs=1e-12)
    # independence gives 0, a copy gives the entropy
    assert PB.mutual_information(np.outer([1, 3], [2, 2, 4])) == pytest.approx(0.0, abs=1e-12)
    assert PB.mutual_information(np.diag([5, 5])) == pytest.approx(1.0)


@pytest.mark.parametrize("n", range(2, 7))
def test_binary_mi_sensitivity_brute_force(n):
    """Binary X and Π: every replace-one neighbour of every dataset of n ≤ 6 records
    changes I by at most Zhang et al.'s Δ, which is attained (the bound is tight)."""
    worst = _max_replace_one_change(2, 2, n)
    delta = PB.mi_sensitivity(n, binary=True)
    assert worst <= delta + 1e-12
    assert worst == pytest.approx(delta, rel=1e-9)


@pytest.mark.parametrize("kx, kp, n_max", [(3, 3, 5), (2, 3, 6), (2, 4, 5), (3, 2, 5)])
def test_general_mi_sensitivity_brute_force(kx, kp, n_max):
    """Non-binary domains: the general Δ bounds every replace-one change; the binary Δ
    does not when neither X nor Π is binary (3 × 3), so it must not be used there."""
    for n in range(2, n_max + 1):
        assert _max_replace_one_change(kx, kp, n) <= PB.mi_sensitivity(n, binary=False) + 1e-12
    if (kx, kp) == (3, 3):
        assert _max_replace_one_change(3, 3, 4) > PB.mi_sensitivity(4, binary=True)


def test_sensitivity_formulas_and_small_n():
    n = 1000
    assert PB.mi_sensitivity(n, True) == pytest.approx(math.log2(n) / n + (n - 1) / n * math.log2(n / (n - 1)))
    assert PB.mi_sensitivity(n, False) == pytest.approx(2 / n * math.log2((n + 1) / 2)
                                                        + (n - 1) / n * math.log2((n + 1) / (n - 1)))
    assert PB.mi_sensitivity(n, True) < PB.mi_sensitivity(n, False)
    with pytest.raises(OptionError, match="at least 2 records"):
        PB.mi_sensitivity(1, False)


# ---------------------------------------------------------------------------- data


def _bn_data(n, seed):
    """a → b → c, a → c; d independent: a known Bayesian network."""
    rng = np.random.default_rng(seed)
    a = (rng.random(n) < 0.3).astype(int)
    b = np.where(rng.random(n) < 0.8, a, 1 - a) + 2 * (rng.random(n) < 0.2)  # 4 levels
    c = (a + b + rng.integers(0, 2, n)) % 3
    d = rng.integers(0, 5, n)
    return pd.DataFrame({"a": [f"a{v}" for v in a], "b": [f"b{v}" for v in b], "c": [f"c{v}" for v in c],
                         "d": [f"d{v}" for v in d]})


@pytest.fixture(scope="module")
def table():
    return _bn_data(3000, 1)


@pytest.fixture(scope="module")
def domain(table):
    dom = dpcore.infer_domain(table).declared()
    assert dom.shape == (2, 4, 3, 5)
    return dom


# ---------------------------------------------------------------------------- network


@pytest.mark.parametrize("k", [1, 2, 3, 6])
@pytest.mark.parametrize("seed", [0, 1])
def test_network_is_a_valid_dag(k, seed):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({f"v{j}": rng.integers(0, 2 + j % 3, 500) for j in range(6)})
    dom = dpcore.infer_domain(df).declared()
    opts = PB.resolve(dom, degree=k)
    led = Ledger("t")
    net, steps = PB.learn_network(dom.encode(df), dom, opts, Epsilon(1.0), np.random.default_rng(seed), led)
    order = [x for x, _ in net]
    assert sorted(order) == list(range(6))  # every attribute once
    for pos, (_x, pi) in enumerate(net):
        assert len(pi) == min(k, pos) and len(set(pi)) == len(pi)
        assert set(pi) <= set(order[:pos])  # parents placed before the child
    assert len(steps) == 5 and led.epsilon == pytest.approx(1.0, abs=1e-12)


def test_network_finds_strong_dependence_at_large_epsilon(table, domain):
    """ε large: the exponential mechanism picks the highest-MI pair at each step, so the
    independent attribute d comes last and is nobody's parent (unless drawn first), and
    c, once placed after a and b, has exactly them as parents."""
    opts = PB.resolve(domain, degree=2)
    for seed in range(4):
        net, _ = PB.learn_network(domain.encode(table), domain, opts, Epsilon(1e5), np.random.default_rng(seed),
                                  Ledger("t"))
        order = [domain.names[x] for x, _ in net]
        parents = {domain.names[x]: {domain.names[p] for p in pi} for x, pi in net}
        if order[0] != "d":
            assert order[-1] == "d" and "d" not in set().union(*parents.values())
        if order.index("c") >= 2 and {"a", "b"} <= set(order[:order.index("c")]):
            assert parents["c"] == {"a", "b"}


def test_candidate_sampling_is_recorded(table, domain):
    rel = dpcore.synthesize(table, method="privbayes", epsilon=1, seed=2, domain=domain, max_candidates=2)
    diag = rel.diagnostics["per_set"][0]
    assert diag["candidates_sampled"] is True
    assert any(s["sampled"] and s["scored"] <= 2 < s["candidates"] for s in diag["steps"])
    assert any("max_candidates=2" in w for w in diag["warnings"])
    assert any("sampled from" in c.subset for _, c in rel.ledger.charges())
    full = dpcore.synthesize(table, method="privbayes", epsilon=1, seed=2, domain=domain).diagnostics["per_set"][0]
    assert full["candidates_sampled"] is False and not full["warnings"]


# ---------------------------------------------------------------------------- sampling


def test_ancestral_sampling_reproduces_given_conditionals():
    """A fixed network a → b, (a, b) → c: each drawn conditional matches its table (chi-square)."""
    shape = (2, 3, 4)
    p_a = np.array([[0.3, 0.7]])
    p_b = np.array([[0.6, 0.3, 0.1], [0.1, 0.2, 0.7]])
    rng = np.random.default_rng(5)
    p_c = rng.dirichlet(np.ones(4), size=6)
    p_c[2] = [0.0, 0.5, 0.5, 0.0]  # zero-probability levels are never drawn
    network = [(0, ()), (1, (0,)), (2, (0, 1))]
    conds = [((), p_a), ((0,), p_b), ((0, 1), p_c)]
    n = 60_000
    codes = PB.ancestral_sample(network, conds, shape, n, np.random.default_rng(6))
    assert codes.shape == (n, 3) and codes.min() >= 0 and (codes.max(axis=0) < shape).all()
    for x, pi, cond in [(0, (), p_a), (1, (0,), p_b), (2, (0, 1), p_c)]:
        rows = np.ravel_multi_index(tuple(codes[:, p] for p in pi), [shape[p] for p in pi]) if pi else np.zeros(n, int)
        for r in range(len(cond)):
            obs = np.bincount(codes[rows == r, x], minlength=shape[x])
            exp = cond[r] * obs.sum()
            assert obs[exp == 0].sum() == 0
            assert stats.chisquare(obs[exp > 0], exp[exp > 0]).pvalue > P_MIN


def test_huge_epsilon_three_attributes_reproduces_the_joint():
    """d = 3, k = 2 is a saturated network: at ε = 1e7 the synthetic joint is a draw from
    the data's empirical joint distribution (chi-square, fixed seed)."""
    df = _bn_data(4000, 3)[["a", "b", "c"]]
    dom = dpcore.infer_domain(df).declared()
    rel = dpcore.synthesize(df, method="privbayes", epsilon=1e7, seed=8, domain=dom)
    X, S = dom.encode(df), dom.encode(rel.sets[0])
    y = np.bincount(np.ravel_multi_index(X.T, dom.shape), minlength=dom.size)
    s = np.bincount(np.ravel_multi_index(S.T, dom.shape), minlength=dom.size)
    assert s[y == 0].sum() == 0
    assert stats.chisquare(s[y > 0], y[y > 0] / y.sum() * s.sum()).pvalue > P_MIN


# ---------------------------------------------------------------------------- ledger


@pytest.mark.parametrize("d, k, m, share", [(4, 2, 1, 0.5), (4, 1, 3, 0.3), (4, 3, 2, 0.5), (4, 5, 1, 0.7),
                                            (2, 2, 1, 0.5), (1, 2, 2, 0.5), (3, 1, 1, 0.5)])
def test_ledger_totals_and_structure(table, d, k, m, share):
    df = table.iloc[:, :d]
    dom = dpcore.infer_domain(df).declared()
    eps = 1.7
    rel = dpcore.synthesize(df, method="privbayes", epsilon=eps, sets=m, seed=1, domain=dom, degree=k,
                            network_share=share, neighbours="replace")
    assert rel.ledger.epsilon == pytest.approx(eps, abs=1e-12)
    P, T = PB.network_plan(d, k)
    assert T == d - min(k, d - 1)
    eps1 = share * eps / m if P else 0.0
    eps2 = eps / m - eps1
    for s in range(1, m + 1):
        net = [c for p, c in rel.ledger.charges() if p.startswith(f"release (privbayes)/set {s}/network/")]
        cond = [c for p, c in rel.ledger.charges() if p.startswith(f"release (privbayes)/set {s}/conditionals/")]
        assert len(net) == d - 1 and len(cond) == T
        assert math.fsum(c.epsilon for c in net) == pytest.approx(eps1, abs=1e-12)
        assert all(c.neighbours == BOUNDED for c in net)
        for c in net:
            if c.epsilon:
                assert c.mechanism == "exponential" and c.scale == pytest.approx(2 * c.sensitivity / c.epsilon)
        for c in cond:
            # replace-one: one record moves one unit between two cells, L1 change 2
            assert c.neighbours == BOUNDED and c.sensitivity == 2.0
            assert c.epsilon == pytest.approx(eps2 / T) and c.scale == pytest.approx(2 * T / eps2)
    assert len(rel.sets) == m and all(len(x) == len(df) for x in rel.sets)
    if not P:
        assert any("forced" in w for w in rel.diagnostics["per_set"][0]["warnings"])


def test_network_diagnostics_and_reproducibility(table, domain):
    a = dpcore.synthesize(table, method="privbayes", epsilon=2, seed=3, domain=domain)
    b = dpcore.synthesize(table, method="privbayes", epsilon=2, seed=3, domain=domain)
    pd.testing.assert_frame_equal(a.sets[0], b.sets[0])
    net = a.diagnostics["per_set"][0]["network"]
    assert [e["attribute"] for e in net] and sorted(e["attribute"] for e in net) == sorted(domain.names)
    assert a.options["degree"] == 2 and "privbayes" in REGISTRY and a.dp


# ---------------------------------------------------------------------------- options


def test_defaults(domain):
    o = PB.resolve(domain)
    assert (o.degree, o.network_share, o.score, o.max_candidates, o.noise) == (2, 0.5, "mi", 2000, "discrete_laplace")
    assert o.to_dict()["degree"] == 2


@pytest.mark.parametrize("opts, needle", [
    ({"degree": 0}, "degree must be a whole number ≥ 1"),
    ({"degree": 1.5}, "degree must be a whole number ≥ 1"),
    ({"degree": True}, "degree must be a whole number ≥ 1"),
    ({"network_share": 0}, "network_share must be a finite number > 0 and < 1"),
    ({"network_share": 1}, "network_share must be a finite number > 0 and < 1"),
    ({"network_share": "half"}, "network_share must be a finite number > 0 and < 1"),
    ({"score": "R"}, "score='R'"),
    ({"score": "aic"}, "score must be one of"),
    ({"max_candidates": 0}, "max_candidates must be a whole number ≥ 1"),
    ({"noise": "gaussian"}, "noise must be one of"),
    ({"margins": "a,b"}, "unknown option(s) margins for method 'privbayes'"),
])
def test_bad_options(domain, opts, needle):
    with pytest.raises(OptionError) as e:
        PB.resolve(domain, **opts)
    assert needle in str(e.value)


def test_oversized_parent_tables_are_refused(table, domain):
    with pytest.raises(dpcore.errors.ResourceError, match="max_cells"):
        dpcore.synthesize(table, method="privbayes", epsilon=1, seed=1, domain=domain, max_cells=3)


def test_count_mi_sensitivity_bounds_every_small_add_remove_pair():
    """n·I(X;Π) in bits changes by at most log2(N+1) + log2(e) when one record is added,
    N the larger table's size: exhaustive over joint tables with up to 7 records."""
    worst = 0.0
    for kx, kp in ((2, 2), (2, 3), (3, 2)):
        cells = kx * kp
        for c in itertools.product(range(4), repeat=cells):
            if sum(c) > 7:
                continue
            t = np.array(c, dtype=float).reshape(kx, kp)
            base = t.sum() * PB.mutual_information(t)
            for j in range(cells):
                d = t.copy().ravel()
                d[j] += 1
                d = d.reshape(kx, kp)
                change = abs(d.sum() * PB.mutual_information(d) - base)
                worst = max(worst, change / PB.count_mi_sensitivity(int(d.sum())))
    assert 0.3 < worst <= 1.0 + 1e-12


def test_privbayes_follows_the_neighbour_notion(table):
    df = table.iloc[:, :3]
    dom = dpcore.infer_domain(df).declared()
    rel = dpcore.synthesize(df, method="privbayes", epsilon=1.0, seed=3, domain=dom)  # add/remove default
    net = [c for p, c in rel.ledger.charges() if "/network/" in p and c.epsilon > 0]
    cond = [c for p, c in rel.ledger.charges() if "/conditionals/" in p]
    assert net and all(c.sensitivity == pytest.approx(PB.count_mi_sensitivity(10**9)) for c in net)
    assert all(c.sensitivity == 1.0 and c.neighbours == "add/remove one record" for c in cond)
    assert all(len(s) == rel.record_count["value"] for s in rel.sets)
    assert "adding or removing one record" in rel.dp_reason
