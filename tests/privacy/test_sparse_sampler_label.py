"""The sparse leaf layer's empty cells are noised by the exact histogram sampler, and say so
(docs/sparse-leaves.md).

* ``DiscreteLaplace.sample_histogram`` (:mod:`dpcore.privacy.exact_histogram`) follows the
  discrete Laplace law: chi-square goodness of fit on pooled values, fixed seeds, asserted
  p > ALPHA = 1e-3, and the same test rejects a scale 15% off (it can fail). The law itself is
  tested with stated power in tests/privacy/test_exact_histogram.py.
* A release that takes the sparse path (a wide table, no threshold patched) names the exact
  histogram sampler (:data:`dpcore.privacy.mechanisms.HISTOGRAM_SAMPLER`) in the ledger charge of the
  leaf layer (STEPS) or of the full table (flat Laplace) and in the published manifest; its DP
  statement, report, command line and app carry no floating-point caveat any more; dense
  releases keep their "exact sampler" labels.
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpcore
from dpcore.measure import leaf_noise
from dpcore.privacy.exact_histogram import SAMPLER_NAME
from dpcore.privacy.exact_laplace import dyadic_scale
from dpcore.privacy.gaussian import DiscreteGaussian
from dpcore.privacy.mechanisms import HISTOGRAM_SAMPLER, DiscreteLaplace
from dpcore.studio.report import plain_statement
from dpcore.synthesizers import sparse_leaves as SL

ALPHA = 1e-3
#: words that belonged to the floating-point caveat and must not come back
CAVEAT_WORDS = ("float", "ideal noise law", "rounding", "not the exact", "caveat")


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
    (np.full(40_000, 5), -10, 10),  # T = 3: many draws come from the later passes beyond T
    (np.array([300_000, 100_000, 0, 7]), -14, 14),  # T large: the first pass carries nearly all
])
def test_sample_histogram_follows_the_discrete_laplace_law(counts, lo, hi):
    mech = DiscreteLaplace(2.0)
    g, v, m = mech.sample_histogram(counts, np.random.default_rng(11))
    assert g.dtype == v.dtype == m.dtype == np.int64
    assert (m > 0).all()
    assert np.bincount(g, weights=m, minlength=len(counts)).astype(np.int64).tolist() == counts.tolist()
    T = mech.histogram_cutoff(int(counts.max()))
    a = np.exp(-1.0 / 2.0)
    if counts.sum() * 2 * a ** (T + 1) / (1 + a) > 20:  # ~1 draw beyond T per largest block: here many
        assert np.abs(v).max() > T  # the values beyond T are drawn, not cut
    assert _pooled_p_value(g, v, m, mech, lo, hi) > ALPHA
    # the same test rejects the law of a scale 15% off: it can fail
    assert _pooled_p_value(g, v, m, DiscreteLaplace(2.3), lo, hi) < ALPHA


@pytest.mark.parametrize("scale", [1.0, 5.0])
def test_huge_blocks_draw_the_tail_at_its_rate(scale):
    """Blocks of 2^62 cells: the values beyond T have probability ~1/2^62 per cell. They come out
    at their rate (Poisson, within 5 sd over 200 blocks). The float sampler this replaced drew
    them ~2000-fold too often before its class order was fixed."""
    mech, n = DiscreteLaplace(scale), 2**62
    T = mech.histogram_cutoff(n)
    _, v, m = mech.sample_histogram(np.full(200, n), np.random.default_rng(8))
    num, den = dyadic_scale(scale)
    a = np.exp(-den / num)
    expected = 200 * n * 2 * a ** (T + 1) / (1 + a)
    assert abs(int(m[np.abs(v) > T].sum()) - expected) < 5 * np.sqrt(expected)


def test_histogram_cutoff_puts_at_most_one_draw_beyond_it():
    """n·P(|Z| > T) ≤ 1, and T is at most one level (s·ln 2 values of slack) above the least such T."""
    for scale in (0.7, 3.0, 11.7):
        mech = DiscreteLaplace(scale)
        num, den = dyadic_scale(scale)
        s = num / den
        tail = lambda t, s=s: 2 * np.exp(-(t + 1) / s) / (1 + np.exp(-1 / s))  # P(|Z| > t)
        for n in (1, 10, 10**4, 10**9, 2**62):
            T = mech.histogram_cutoff(n)
            assert n * tail(T) <= 1 + 1e-9
            least = next(t for t in range(0, T + 1) if n * tail(t) <= 1)
            assert T - least <= s * np.log(2) + 1


@pytest.mark.parametrize("mech", [DiscreteLaplace(1.7), DiscreteGaussian(1.7)], ids=["laplace", "gaussian"])
def test_sparse_leaves_draws_its_histogram_through_the_mechanism(mech):
    """The empty cells' histogram is the mechanism's, draw for draw (same generator calls)."""
    n_empty = np.array([5000, 0, 12])
    a = leaf_noise.empty_histogram(n_empty, mech, np.random.default_rng(3))
    b = mech.sample_histogram(n_empty, np.random.default_rng(3))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


# --------------------------------------------------------------------------- ledger and statement


def _wide(seed=0, n=300) -> tuple[pd.DataFrame, dpcore.Domain]:
    """8^6 = 262,144 cells: above dpcore.synthesizers.sparse_leaves.SPARSE_ABOVE, so flat Laplace and the
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


def test_the_histogram_sampler_label_names_the_exact_sampler():
    assert SAMPLER_NAME in HISTOGRAM_SAMPLER and "exact" in SAMPLER_NAME
    assert not any(w in HISTOGRAM_SAMPLER.lower() for w in CAVEAT_WORDS)


def test_sparse_flat_laplace_names_the_exact_histogram_sampler_and_states_plain_dp():
    from dpcore.cli.commands import _dp_line

    df, dom = _wide()
    rel = dpcore.synthesize(df, method="flat_laplace", epsilon=1.0, seed=1, domain=dom)
    charges = _charges(rel)
    table = [m for p, m in charges.items() if p.endswith("full cross-tabulation counts")]
    assert table == [f"discrete_laplace ({HISTOGRAM_SAMPLER})"]
    assert charges["release (flat_laplace)/record count"] == "discrete_laplace (exact sampler)"
    assert rel.dp and rel.dp_reason.startswith("ε-differentially private")
    manifest = json.loads(rel.manifest_json())
    statement = " ".join(plain_statement(manifest))
    for text in (rel.dp_reason, manifest["dp_reason"], statement, _dp_line(rel)):
        assert not any(w in text.lower() for w in CAVEAT_WORDS), text
    assert plain_statement(manifest)[0].startswith(f"This release is differentially private with ε = {rel.epsilon:g}")
    assert _dp_line(rel) == "DP: yes — " + rel.dp_reason


@pytest.mark.parametrize("opts", [dict(layers=1), dict(order="c0;c1", consistency="nonneg")])
def test_sparse_steps_names_the_histogram_sampler_on_its_leaf_layer_only(opts):
    df, dom = _wide()
    rel = dpcore.synthesize(df, method="steps", epsilon=1.0, seed=2, domain=dom, **opts)
    charges = {p: m for p, m in _charges(rel).items() if "/node counts/" in p}
    leaf = [m for p, m in charges.items() if "(leaf cells)" in p]
    upper = [m for p, m in charges.items() if "(leaf cells)" not in p]
    assert leaf == [f"discrete_laplace ({HISTOGRAM_SAMPLER})"]
    assert upper and all(m == "discrete_laplace (exact integer sampler)" for m in upper)
    assert rel.dp and not any(w in rel.dp_reason.lower() for w in CAVEAT_WORDS)


@pytest.mark.parametrize("method, opts", [("flat_laplace", {}), ("steps", dict(layers=1)), ("steps", dict(layers=2))])
def test_dense_releases_keep_the_exact_sampler_label(method, opts):
    df, dom = _small()
    rel = dpcore.synthesize(df, method=method, epsilon=1.0, seed=3, domain=dom, **opts)
    charges = _charges(rel)
    assert not any(HISTOGRAM_SAMPLER in m for m in charges.values())
    counts = [m for p, m in charges.items() if "counts" in p]
    assert counts and all(m in ("discrete_laplace (exact sampler)", "discrete_laplace (exact integer sampler)")
                          for m in counts)
    assert rel.dp


def test_a_not_dp_release_keeps_its_reason():
    df, _ = _wide()
    rel = dpcore.synthesize(df, method="flat_laplace", epsilon=1.0, seed=1)  # inferred domain: NOT DP
    assert not rel.dp and rel.dp_reason.startswith("NOT differentially private")
    assert any(HISTOGRAM_SAMPLER in m for m in _charges(rel).values())  # the ledger still names the sampler


def test_no_floating_point_caveat_is_left_in_the_code_or_the_app():
    """The caveat's machinery is gone: no module of dpcore or page of the app words it."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for path in [*sorted((root / "dpcore").rglob("*.py")), *sorted((root / "pages").glob("*.py")), root / "app.py"]:
        text = path.read_text(encoding="utf-8")
        for phrase in ("ideal noise law", "STATEMENT_CAVEAT", "sparse_caveat", "float64 multinomial"):
            assert phrase not in text, f"{path.relative_to(root)}: {phrase}"
