"""Brute-force checks of the selection utilities and their sensitivities (docs/methods/steps.md "Utilities", §9).

For every count vector c over K declared levels and every add/remove-one neighbour c'
(one record more or fewer in one level) we assert |u(c) − u(c')| ≤ Δu(n, K) with
n = max(n_v, n_v'): the public total is at least the size of the node being scored.
"""
import itertools
import math

import numpy as np
import pytest

from dpcore.errors import OptionError
from dpcore.measure.selection import UTILITIES, sensitivity, utility

KS = (2, 3, 4)
MAX_NV = 8


def _count_vectors(K, max_total):
    """All c ∈ N^K with Σc ≤ max_total."""
    for c in itertools.product(range(max_total + 1), repeat=K):
        if sum(c) <= max_total:
            yield c


def _neighbour_pairs(K, max_total):
    """(c, c') with c' = c plus one record in one level; both directions are covered
    because |u(c) − u(c')| is symmetric. Includes c = 0 (empty node)."""
    for c in _count_vectors(K, max_total - 1):
        for lvl in range(K):
            d = list(c)
            d[lvl] += 1
            yield c, tuple(d)


def _max_ratio(kind, pairs, K):
    """max over pairs of |Δu| / Δu(n, K), and the worst pair."""
    a = np.array([p[0] for p in pairs], dtype=float)
    b = np.array([p[1] for p in pairs], dtype=float)
    du = np.abs(utility(a, kind) - utility(b, kind))
    n = np.maximum(a.sum(axis=1), b.sum(axis=1)).astype(int)
    bound = np.array([sensitivity(kind, int(x), K) for x in n])
    ratio = du / bound
    i = int(np.argmax(ratio))
    return float(ratio[i]), pairs[i], float(du[i]), float(bound[i])


@pytest.mark.parametrize("kind", UTILITIES)
@pytest.mark.parametrize("K", KS)
def test_sensitivity_bounds_every_small_neighbour_pair(kind, K):
    pairs = list(_neighbour_pairs(K, MAX_NV))
    # sanity: the enumeration really is exhaustive (stars and bars: C(max-1+K, K) vectors, K moves each)
    assert len(pairs) == math.comb(MAX_NV - 1 + K, K) * K
    ratio, pair, du, bound = _max_ratio(kind, pairs, K)
    assert ratio <= 1.0 + 1e-12, f"{kind}, K={K}: |Δu| = {du:.4f} > Δu = {bound:.4f} at {pair}"


@pytest.mark.parametrize("kind", UTILITIES)
@pytest.mark.parametrize("K", KS)
def test_sensitivity_bounds_random_larger_tables(kind, K):
    """Random larger nodes, including the extreme shapes (one big level, singletons, empties)."""
    rng = np.random.default_rng(20240 + K)
    pairs = []
    for _ in range(300):
        nv = int(rng.integers(10, 5000))
        shape = rng.integers(0, 4)
        if shape == 0:  # concentrated: everything in one level but a few singletons
            c = np.zeros(K, dtype=int)
            c[0] = nv
            c[1:] = rng.integers(0, 2, K - 1)
        elif shape == 1:  # uniform
            c = rng.multinomial(nv, np.full(K, 1 / K))
        else:  # skewed Dirichlet
            c = rng.multinomial(nv, rng.dirichlet(np.full(K, 0.3)))
        for lvl in range(K):
            d = c.copy()
            d[lvl] += 1
            pairs.append((tuple(c), tuple(d)))
    ratio, pair, du, bound = _max_ratio(kind, pairs, K)
    assert ratio <= 1.0 + 1e-12, f"{kind}, K={K}: |Δu| = {du:.4f} > Δu = {bound:.4f} at {pair}"


def test_aic_bound_is_not_vacuous():
    """The stated Δu for aic is within a small factor of the real worst case: the brute
    force attains more than half of it, so the check above can actually detect a bound
    that is too small (e.g. one that dropped the ln n term)."""
    pairs = list(_neighbour_pairs(2, MAX_NV))
    ratio, _, du, bound = _max_ratio("aic", pairs, 2)
    assert ratio > 0.5, (du, bound)
    # and at a larger node the worst case still grows like 2 ln n: (n−1, 1) → (n−1, 0)
    n = 1000
    du_big = abs(utility(np.array([n - 1.0, 1.0]), "aic") - utility(np.array([n - 1.0, 0.0]), "aic"))
    assert du_big > 2 * math.log(n)
    assert du_big <= sensitivity("aic", n, 2)


@pytest.mark.parametrize("K", KS)
def test_paper_aic_sensitivity_of_two_is_violated(K):
    """docs/paper-errata.md: the 2021 paper's Lemma 1 (Δu = 2 for AIC) is wrong. Some neighbour pair
    of small tables moves −AIC by more than 2, so using Δu = 2 would break ε-DP."""
    pairs = list(_neighbour_pairs(K, MAX_NV))
    a = np.array([p[0] for p in pairs], dtype=float)
    b = np.array([p[1] for p in pairs], dtype=float)
    du = np.abs(utility(a, "aic") - utility(b, "aic"))
    assert du.max() > 2.0
    # the worked example of docs/paper-errata.md: (999, 1) vs (999, 0) changes 2g by 2·d(1000) ≈ 15.8
    d = lambda x: x * math.log(x) - (x - 1) * math.log(x - 1)
    change = abs(utility(np.array([999.0, 1.0]), "aic") - utility(np.array([999.0, 0.0]), "aic"))
    assert change == pytest.approx(2 * d(1000), rel=1e-12)
    assert change > 15


def test_sensitivity_values():
    assert sensitivity("aic", 1000, 3) == pytest.approx(2 * math.log(1001) + 4)
    assert sensitivity("aic_gain", 10, 3) == pytest.approx(2 * math.log(11) + 4)
    # ln K dominates only when K > n + 1
    assert sensitivity("aic_gain", 2, 50) == pytest.approx(2 * math.log(50) + 4)
    assert sensitivity("l1_uniform", 10**6, 7) == 2.0
    # grows with n for the AIC utilities (needed: their worst case grows like ln n)
    assert sensitivity("aic", 10**6, 2) > sensitivity("aic", 100, 2)
    with pytest.raises(OptionError, match="utility"):
        sensitivity("gini", 10, 2)


# ----------------------------------------------------------------------------------------
# hand examples, computed from the definitions with g = Σ c ln(n_v / c)
# ----------------------------------------------------------------------------------------
def _g(c):
    nv = sum(c)
    return sum(x * math.log(nv / x) for x in c if x > 0)


HAND = [
    (2, 2),
    (3, 1, 0),
    (5, 0, 0, 0),
    (1, 2, 3, 4),
    (0, 0),
]


@pytest.mark.parametrize("c", HAND)
def test_aic_hand(c):
    K = len(c)
    expected = -(2 * _g(c) + 2 * K)
    assert float(utility(np.array(c), "aic")) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("c", HAND)
def test_aic_gain_hand(c):
    K, nv = len(c), sum(c)
    expected = 2 * (nv * math.log(K) - _g(c)) - 2 * (K - 1)
    assert float(utility(np.array(c), "aic_gain")) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("c", HAND)
def test_l1_uniform_hand(c):
    K, nv = len(c), sum(c)
    expected = sum(abs(x - nv / K) for x in c)
    assert float(utility(np.array(c), "l1_uniform")) == pytest.approx(expected, abs=1e-12)


def test_hand_values_literal():
    """A few values worked out on paper, independent of any helper."""
    # (2,2): g = 4 ln 2; −AIC = −(8 ln 2 + 4); the gain over uniform is exactly −2(K−1) = −2
    assert float(utility(np.array([2, 2]), "aic")) == pytest.approx(-(8 * math.log(2) + 4))
    assert float(utility(np.array([2, 2]), "aic_gain")) == pytest.approx(-2.0)
    assert float(utility(np.array([2, 2]), "l1_uniform")) == pytest.approx(0.0)
    # (3,1,0): l1 = 5/3 + 1/3 + 4/3 = 10/3
    assert float(utility(np.array([3, 1, 0]), "l1_uniform")) == pytest.approx(10 / 3)
    # (4,0): g = 0, so −AIC = −2K = −4; the gain is 2·4·ln 2 − 2
    assert float(utility(np.array([4, 0]), "aic")) == pytest.approx(-4.0)
    assert float(utility(np.array([4, 0]), "aic_gain")) == pytest.approx(8 * math.log(2) - 2)


def test_utility_is_rowwise_and_prefers_concentrated_levels():
    """MoSDA (maximise u) prefers the more concentrated attribute under every utility."""
    rows = np.array([[10, 10, 10], [28, 1, 1]])
    for kind in UTILITIES:
        u = utility(rows, kind)
        assert u.shape == (2,)
        assert u[1] > u[0], kind
        # row-wise evaluation agrees with one row at a time
        assert u[0] == pytest.approx(float(utility(rows[0], kind)))
    with pytest.raises(OptionError, match="utility"):
        utility(rows, "entropy")


def _replace_pairs(K, max_total):
    """(c, c') with c' = c with one record moved from level a to level b in the same node:
    the within-node part of a replace-one neighbour (n public). A record that moves
    between nodes adds to one node and removes from another: the add/remove pairs."""
    for c in _count_vectors(K, max_total):
        for a in range(K):
            if c[a] == 0:
                continue
            for b in range(K):
                if b != a:
                    d = list(c)
                    d[a] -= 1
                    d[b] += 1
                    yield c, tuple(d)


@pytest.mark.parametrize("kind", UTILITIES)
@pytest.mark.parametrize("K", KS)
def test_sensitivity_bounds_every_small_replace_one_pair(kind, K):
    """Under replace-one neighbours (n public) the same Δu(n, K) bounds every change:
    checked exhaustively for moves inside a node, with n = n_v (the tightest public total)."""
    pairs = list(_replace_pairs(K, MAX_NV))
    assert pairs
    ratio, pair, du, bound = _max_ratio(kind, pairs, K)
    assert ratio <= 1.0 + 1e-12, f"{kind}, K={K}: |Δu| = {du:.4f} > Δu = {bound:.4f} at {pair}"


def test_add_remove_sensitivity_uses_the_public_bound_not_n():
    """Under add/remove n is private: the Selector must take Δu at max_records."""
    import pandas as pd

    import dpcore
    from dpcore.privacy.neighbours import DEFAULT_MAX_RECORDS

    df = pd.DataFrame({"a": list("xyxy" * 25), "b": list("ppqq" * 25)})
    dom = dpcore.infer_domain(df).declared()
    for notion, n_bound in (("add_remove", DEFAULT_MAX_RECORDS), ("replace", len(df))):
        rel = dpcore.synthesize(df, epsilon=1, seed=1, domain=dom, layers=1, neighbours=notion)
        sel = [c for p, c in rel.ledger.charges() if "split" in p]
        assert sel and all(c.sensitivity == pytest.approx(sensitivity("aic", n_bound, 2)) for c in sel)
