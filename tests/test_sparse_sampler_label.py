"""The sparse leaf layer says what drew its empty cells' noise (docs/sparse-leaves.md).

* ``DiscreteLaplace.sample_histogram`` (numpy's float64 multinomial, exact tail values) follows
  the discrete Laplace law: chi-square goodness of fit on pooled values, fixed seeds,
  asserted p > ALPHA = 1e-3, and the same test rejects a wrong scale (it can fail).
* A release that takes the sparse path (a wide table, no threshold patched) carries
  :data:`dpcore.privacy.mechanisms.HISTOGRAM_SAMPLER` in the ledger charge of the leaf layer
  (STEPS) or of the full table (flat Laplace), in the published manifest and in its DP
  statement; the charges of exactly sampled noise and every dense release do not.
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpcore
from dpcore.measure import sparse_leaves as SL
from dpcore.privacy.mechanisms import HISTOGRAM_SAMPLER, DiscreteLaplace
from dpcore.studio.report import plain_statement

ALPHA = 1e-3


def _pooled_p_value(group, value, mult, mech_for_law: DiscreteLaplace, lo: int, hi: int) -> float:
    """Chi-square p-value of the pooled histogram against the law of ``mech_for_law``
    on the bins {< lo}, lo..hi, {> hi} (all with expected counts well above 5 here)."""
    total = int(mult.sum())
    ks = np.arange(lo, hi + 1)
    observed = np.array([mult[value < lo].sum()] + [mult[value == k].sum() for k in ks] + [mult[value > hi].sum()])
    p = mech_for_law.pmf(ks)
    below = mech_for_law.pmf(np.arange(lo - 2000, lo)).sum()
    above = mech_for_law.pmf(np.arange(hi + 1, hi + 2001)).sum()
    expected = total * np.r_[below, p, above]
    assert expected.min() > 5
    return float(stats.chisquare(observed, expected * observed.sum() / expected.sum())[1])


@pytest.mark.parametrize("counts, lo, hi", [
    (np.full(40_000, 5), -10, 10),  # T = 3: a third of the draws come from the geometric tail
    (np.array([300_000, 100_000, 0, 7]), -14, 14),  # T large: the multinomial carries nearly all
])
def test_sample_histogram_follows_the_discrete_laplace_law(counts, lo, hi):
    mech = DiscreteLaplace(2.0)
    g, v, m = mech.sample_histogram(counts, np.random.default_rng(11))
    assert g.dtype == v.dtype == m.dtype == np.int64
    assert (m > 0).all()
    assert np.bincount(g, weights=m, minlength=len(counts)).astype(np.int64).tolist() == counts.tolist()
    T = mech.histogram_cutoff(int(counts.max()))
    a = np.exp(-1.0 / 2.0)
    if counts.sum() * 2 * a ** (T + 1) / (1 + a) > 20:  # ~1 tail draw per largest block: here many
        assert np.abs(v).max() > T  # the tail is drawn, not cut
    assert _pooled_p_value(g, v, m, mech, lo, hi) > ALPHA
    # the same test rejects the law of a scale 15% off: it can fail
    assert _pooled_p_value(g, v, m, DiscreteLaplace(2.3), lo, hi) < ALPHA


@pytest.mark.parametrize("scale", [1.0, 5.0])
def test_huge_blocks_draw_the_tail_at_its_rate(scale):
    """Blocks of 2^62 cells: the tail class |Z| > T has probability ~1/2^62, far below the
    float64 rounding of a running 1 − Σp. Drawn first, it comes out at its rate (Poisson,
    within 5 sd over 200 blocks); as numpy's last (remainder) class it came out ~2000-fold."""
    mech, n = DiscreteLaplace(scale), 2**62
    T = mech.histogram_cutoff(n)
    _, v, m = mech.sample_histogram(np.full(200, n), np.random.default_rng(8))
    a = np.exp(-1.0 / scale)
    expected = 200 * n * 2 * a ** (T + 1) / (1 + a)
    assert abs(int(m[np.abs(v) > T].sum()) - expected) < 5 * np.sqrt(expected)


def _chain_class_probabilities(pvals: np.ndarray) -> list:
    """The class probabilities numpy's multinomial realises from float64 ``pvals``, in 60-digit
    arithmetic. Model (numpy's random_multinomial): class j is Binomial(rest, c_j) with
    c_j = fl(p_j / r_j), r_{j+1} = fl(r_j − p_j), r_0 = 1, and the last class takes the rest;
    the binomials are taken as ideal (their own float error is not modelled)."""
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 60
        rest, survive, out = 1.0, Decimal(1), []
        for pj in pvals[:-1]:
            c = pj / rest
            out.append(survive * Decimal(c))
            survive *= 1 - Decimal(c)
            rest -= pj
        return out + [survive]


@pytest.mark.parametrize("scale, n", [(2.0, 10**6), (20.0, 2**40), (5.0, 2**62), (1.0, 2**62)])
def test_the_class_order_keeps_every_class_probability_to_float_precision(scale, n):
    """Through numpy's chain of conditional binomials every class, the tail included, gets its
    ideal probability within 1e-12 relative (the tail first, k = 0 last). Put the tail last
    and it is off by a factor of thousands at 2^62 cells (checked below: the test can fail)."""
    from decimal import Decimal, localcontext

    mech = DiscreteLaplace(scale)
    T = mech.histogram_cutoff(n)
    ks, pvals = mech._histogram_classes(T)
    with localcontext() as ctx:
        ctx.prec = 60
        s = Decimal(mech._sampler_scale)
        a, c = (-1 / s).exp(), ((1 / s).exp() - 1) / ((1 / s).exp() + 1)  # e^{-1/s}, tanh(1/(2s))
        ideal = [2 * a ** (T + 1) / (1 + a)] + [c * a ** abs(int(k)) for k in ks]
        got = _chain_class_probabilities(pvals)
        worst = max(abs(g / i - 1) for g, i in zip(got, ideal))
        assert worst < Decimal("1e-12"), worst
        # the former order: values −T..T, then the tail as numpy's remainder class
        by_value = np.argsort(ks)
        old = np.r_[pvals[1:][by_value], pvals[0]]
        old_ideal = [ideal[1 + i] for i in by_value] + [ideal[0]]
        tail_error = abs(_chain_class_probabilities(old)[-1] / old_ideal[-1] - 1)
        assert (tail_error > 100) == (n == 2**62), tail_error


def test_histogram_cutoff_puts_about_one_draw_in_the_tail():
    mech = DiscreteLaplace(3.0)
    for n in (10, 10**4, 10**9):
        T = mech.histogram_cutoff(n)
        tail = lambda t: 2 * np.exp(-(t + 1) / 3.0) / (1 + np.exp(-1 / 3.0))  # P(|Z| > t)
        assert n * tail(T) <= 1 + 1e-9 and (T == 0 or n * tail(T - 1) > 1)


def test_sparse_leaves_draws_its_histogram_through_the_mechanism():
    """The empty cells' histogram is the mechanism's, draw for draw (same generator calls)."""
    mech, n_empty = DiscreteLaplace(1.7), np.array([5000, 0, 12])
    a = SL.empty_histogram(n_empty, mech, np.random.default_rng(3))
    b = mech.sample_histogram(n_empty, np.random.default_rng(3))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


# --------------------------------------------------------------------------- ledger and statement


def _wide(seed=0, n=300) -> tuple[pd.DataFrame, dpcore.Domain]:
    """8^6 = 262,144 cells: above dpcore.measure.sparse_leaves.SPARSE_ABOVE, so flat Laplace and the
    STEPS leaf layer take the sparse path without any patching."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({f"c{j}": rng.choice(list("abcdefgh"), n) for j in range(6)})
    return df, dpcore.infer_domain(df).declared()


def _small(seed=0, n=300) -> tuple[pd.DataFrame, dpcore.Domain]:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({c: rng.choice(list("xyz"), n) for c in "pqr"})
    return df, dpcore.infer_domain(df).declared()


def _charges(rel) -> dict:
    """Published charges by path, read back from the manifest JSON."""
    return {c["path"]: c["mechanism"] for c in json.loads(rel.manifest_json())["ledger"]["charges"]}


def test_wide_tables_take_the_sparse_path():
    assert 8**6 > SL.SPARSE_ABOVE and 3**3 <= SL.SPARSE_ABOVE


def test_sparse_flat_laplace_says_its_empty_cells_are_not_the_exact_sampler():
    df, dom = _wide()
    rel = dpcore.synthesize(df, method="flat_laplace", epsilon=1.0, seed=1, domain=dom)
    charges = _charges(rel)
    table = [m for p, m in charges.items() if p.endswith("full cross-tabulation counts")]
    assert table == [f"discrete_laplace ({HISTOGRAM_SAMPLER})"]
    assert "not the exact sampler" in table[0] and "float64" in table[0]
    # the record count is exact and says so, without the caveat
    assert HISTOGRAM_SAMPLER not in charges["release (flat_laplace)/record count"]
    assert rel.dp and SL.STATEMENT_CAVEAT in rel.dp_reason
    assert rel.dp_reason.startswith("ε-differentially private")
    manifest = json.loads(rel.manifest_json())
    assert SL.STATEMENT_CAVEAT in manifest["dp_reason"]
    assert any(SL.STATEMENT_CAVEAT in para for para in plain_statement(manifest))  # the report's wording
    # ... and its opening sentence does not claim more than the caveat allows
    assert "for the ideal noise law" in plain_statement(manifest)[0]
    from dpcore.cli.commands import _dp_line

    assert _dp_line(rel).startswith("DP: yes, for the ideal noise law (caveat at the end)")


@pytest.mark.parametrize("opts", [dict(layers=1), dict(order="c0;c1", consistency="nonneg")])
def test_sparse_steps_labels_only_its_leaf_layer(opts):
    df, dom = _wide()
    rel = dpcore.synthesize(df, method="steps", epsilon=1.0, seed=2, domain=dom, **opts)
    charges = {p: m for p, m in _charges(rel).items() if "/node counts/" in p}
    leaf = [m for p, m in charges.items() if "(leaf cells)" in p]
    upper = [m for p, m in charges.items() if "(leaf cells)" not in p]
    assert leaf == [f"discrete_laplace ({HISTOGRAM_SAMPLER})"]
    assert upper and all(m == "discrete_laplace (exact integer sampler)" for m in upper)
    assert rel.dp and rel.dp_reason.endswith(SL.STATEMENT_CAVEAT)


@pytest.mark.parametrize("method, opts", [("flat_laplace", {}), ("steps", dict(layers=1)), ("steps", dict(layers=2))])
def test_dense_releases_keep_the_exact_sampler_label(method, opts):
    df, dom = _small()
    rel = dpcore.synthesize(df, method=method, epsilon=1.0, seed=3, domain=dom, **opts)
    charges = _charges(rel)
    assert not any(HISTOGRAM_SAMPLER in m for m in charges.values())
    counts = [m for p, m in charges.items() if "counts" in p]
    assert counts and all(m in ("discrete_laplace (exact sampler)", "discrete_laplace (exact integer sampler)")
                          for m in counts)
    assert rel.dp and SL.STATEMENT_CAVEAT not in rel.dp_reason
    assert SL.statement_caveat(rel.ledger) == ""


def test_a_not_dp_release_is_not_given_the_caveat_instead_of_its_reason():
    df, _ = _wide()
    rel = dpcore.synthesize(df, method="flat_laplace", epsilon=1.0, seed=1)  # inferred domain: NOT DP
    assert not rel.dp and rel.dp_reason.startswith("NOT differentially private")
    assert any(HISTOGRAM_SAMPLER in m for m in _charges(rel).values())  # the ledger still says it


def test_the_tail_values_come_from_the_exact_geometric():
    """The histogram's tail values beyond T use the exact sampler's geometric: P(Y = y) ∝ e^{−y/s}
    on {0, 1, ...} (chi-square at α = 1e-3, fixed seed), drawn with integer randomness only."""
    from scipy import stats

    from dpcore.privacy.mechanisms import _dyadic_scale, _geometric_dyadic

    num, den = _dyadic_scale(2.5)
    y = _geometric_dyadic(np.random.default_rng(5), num, den, 200_000)
    assert y.dtype == np.int64 and y.min() >= 0
    a = np.exp(-den / num)
    k = np.arange(0, 15)
    expected = (1 - a) * a ** k * len(y)
    observed = np.bincount(np.minimum(y, 15), minlength=16)
    exp_all = np.append(expected, len(y) - expected.sum())
    assert stats.chisquare(observed, exp_all).pvalue > 1e-3
    # and a wrong scale is rejected by the same test
    wrong = (1 - a ** 1.15) * (a ** 1.15) ** k * len(y)
    assert stats.chisquare(observed, np.append(wrong, len(y) - wrong.sum())).pvalue < 1e-3
