"""Shared statistical checks of the exact histogram samplers (tests/privacy/test_exact_histogram.py for the
discrete Laplace, tests/privacy/test_exact_gaussian_histogram.py for the discrete Gaussian)."""
from __future__ import annotations

import math

import numpy as np
from scipy import stats


def three_draw_outcomes(g: np.ndarray, v: np.ndarray, m: np.ndarray, groups: int, K: int):
    """The histogram outcomes of groups of m = 3 draws, coded: returns ``chi2(pmf)``, the chi-square
    test of the observed outcomes against the law whose P(Z = k), k = −K..K, is ``pmf(ks)``.

    Every outcome (a multiset of three values, values beyond ±K pooled as one "other" value) with
    expected count ≥ 20 is a class, the rest one more. ``chi2`` returns (the scipy result, the class
    probabilities)."""
    vals = np.clip(np.repeat(v, m), -K - 1, K + 1) + K + 1
    assert np.bincount(np.repeat(g, m), minlength=groups).tolist() == [3] * groups
    trip = np.sort(vals.reshape(groups, 3), axis=1)  # entries are sorted by group: rows are groups
    base = 2 * K + 3
    seen = np.bincount((trip[:, 0] * base + trip[:, 1]) * base + trip[:, 2], minlength=base**3)

    def chi2(pmf):
        pk = pmf(np.arange(-K, K + 1))
        codes, probs = [], []
        for i in range(len(pk)):
            for j in range(i, len(pk)):
                for k in range(j, len(pk)):
                    c = (i, j, k)
                    mult = 6 // math.prod(math.factorial(c.count(x)) for x in set(c))
                    codes.append(((i + 1) * base + j + 1) * base + k + 1)
                    probs.append(mult * pk[i] * pk[j] * pk[k])
        codes, probs = np.array(codes), np.array(probs)
        keep = probs * groups >= 20
        obs = seen[codes[keep]]
        p = np.r_[probs[keep], 1 - probs[keep].sum()]
        return stats.chisquare(np.r_[obs, groups - obs.sum()], p * groups), p

    return chi2


def power_against_moving_mass(p: np.ndarray, groups: int, alpha: float, moved: float = 0.01) -> float:
    """The smallest power, over the classes, of the chi-square test at level ``alpha`` against moving
    ``moved`` of probability onto one class (from the others, in proportion): noncentral chi-square
    with λ = N·Σ(p′ − p)²/p."""
    df = len(p) - 1
    crit = stats.chi2.isf(alpha, df)
    worst = 1.0
    for i in range(len(p)):
        others = np.arange(len(p)) != i
        shifted = p * (1 - moved / (1 - p[i]) * others) + moved * (~others)
        shifted = shifted / shifted.sum()
        worst = min(worst, float(stats.ncx2.sf(crit, df, groups * ((shifted - p) ** 2 / p).sum())))
    return worst


def two_sample_p(a: dict, b: dict) -> float:
    """Two-sample chi-square on value counts {value: count} (values with expected ≥ 50 in both rows,
    the rest pooled into one column)."""
    keys = sorted(set(a) | set(b))
    table = np.array([[a.get(k, 0) for k in keys], [b.get(k, 0) for k in keys]], dtype=np.float64)
    expected = table.sum(axis=0) * table.sum(axis=1)[:, None] / table.sum()
    big = expected.min(axis=0) >= 50
    t = np.c_[table[:, big], table[:, ~big].sum(axis=1)]
    return float(stats.chi2_contingency(t, correction=False)[1])


def pooled(v: np.ndarray, c: np.ndarray) -> dict:
    """{value: total multiplicity} of a histogram's (value, multiplicity) entries."""
    out: dict = {}
    for vi, ci in zip(v.tolist(), c.tolist()):
        out[vi] = out.get(vi, 0) + ci
    return out


def check_histogram_contract(draw) -> None:
    """``draw(counts, rng)`` keeps the (group, value, multiplicity) contract: int64 arrays, no entry
    of multiplicity 0, each group's multiplicities summing to its count (up to 2^63 − 1), sorted by
    group then value without repeats, and a negative count refused."""
    import pytest

    rng = np.random.default_rng(1)
    g, v, c = draw(np.array([0, 0]), rng)
    assert g.size == v.size == c.size == 0
    g, v, c = draw(np.array([3, 0, 2**63 - 1, 1]), rng)
    assert g.dtype == v.dtype == c.dtype == np.int64 and (c > 0).all()
    totals: dict = {}
    for gi, ci in zip(g.tolist(), c.tolist()):
        totals[gi] = totals.get(gi, 0) + ci
    assert totals == {0: 3, 2: 2**63 - 1, 3: 1}
    keys = list(zip(g.tolist(), v.tolist()))
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    with pytest.raises(ValueError):
        draw(np.array([-1]), rng)


def check_pooled_classes(v: np.ndarray, c: np.ndarray, M: int, K: int, pk: np.ndarray, p_tail: float,
                         alpha: float) -> None:
    """The pooled count of each value k = −K..K (probabilities ``pk``) and of the tail |k| > K
    (``p_tail``) among M draws is Binomial(M, p): z-tests with Bonferroni over the classes and the
    sign tests (family level ``alpha``); each class's power against a 1% relative error must be
    ≥ 0.9 (computed), and such an error is caught where the power is ≥ 0.99. The sign: #(+k) ~
    Binomial(#(±k), ½) for k = 1..K. The counts add up to M."""
    ks = np.arange(-K, K + 1)
    count = {int(k): 0 for k in ks}
    tail = 0
    for vi, ci in zip(v.tolist(), c.tolist()):
        if abs(vi) <= K:
            count[vi] += ci
        else:
            tail += ci
    zc = stats.norm.isf(alpha / (2 * (len(ks) + 1 + K)))
    for obs, p in [*zip((count[int(k)] for k in ks), pk), (tail, p_tail)]:
        sd = math.sqrt(M * p * (1 - p))
        assert abs(obs - M * p) / sd < zc
        power = stats.norm.sf(zc - 0.01 * M * p / sd)
        assert power >= 0.9
        # and a 1% error would be caught here: the observed count against the shifted law
        assert abs(obs - 1.01 * M * p) / sd >= zc or power < 0.99
    for k in range(1, K + 1):
        n = count[k] + count[-k]
        assert abs(count[k] - n / 2) / math.sqrt(n / 4) < zc
    assert sum(count.values()) + tail == M
