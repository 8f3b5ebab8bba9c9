"""DP quantile bin edges (dpcore.measure.quantiles): the sampler's law, the utility's sensitivity by
brute force, the ledger of a release with dp_bins, and neighbouring datasets."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpcore
from dpcore.errors import OptionError
from dpcore.measure.quantiles import (
    RANK_SENSITIVITY,
    BinSpec,
    candidate_grid,
    dp_bin_edges,
    dp_quantile,
    quantile_probabilities,
    rank_utility,
)

DATA = np.array([2.0, 3.5, 3.5, 7.0, 8.25, 9.0, 12.0, 15.5])


def _stated_law(values, q, cands, eps):
    """The law the docs state, written independently of dpcore: choose the interval between
    sorted data values with probability ∝ (grid points in it)·exp(ε·u/2), then a grid point
    uniformly inside it; per grid point that is ∝ exp(ε·u(x)/2)."""
    v = np.sort(values)
    n = len(v)
    w = []
    for x in cands:
        below = sum(1 for y in v if y < x)
        w.append(math.exp(eps * -abs(below - q * n) / (2 * RANK_SENSITIVITY)))
    w = np.array(w)
    return w / w.sum()


def test_sampler_matches_its_stated_law():
    """Chi-square goodness of fit of 40,000 draws against the stated law (seed 7, reject at p < 0.001)."""
    cands = candidate_grid(0.0, 16.0, grid=16)  # 15 public points 1..15
    eps, q = 1.5, 0.5
    law = _stated_law(DATA, q, cands, eps)
    # the exact law the sampler uses differs from the ideal one only by the score quantisation
    assert np.allclose(quantile_probabilities(DATA, q, cands, eps), law, rtol=1e-5, atol=0)
    draws = dp_quantile(DATA, q, cands, eps, np.random.default_rng(7), size=40_000)
    counts = np.array([(draws == x).sum() for x in cands])
    assert counts.sum() == 40_000  # every draw is a public grid point
    expected = law * 40_000
    keep = expected >= 5
    obs = np.append(counts[keep], counts[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    assert stats.chisquare(obs, exp).pvalue > 1e-3


def test_interval_form_of_the_law():
    """Grouping grid points by the interval between sorted data values they fall in gives
    P(interval) ∝ (points in it)·exp(ε·u/2): the interval-then-uniform description."""
    cands = candidate_grid(0.0, 16.0, grid=64)
    eps, q = 1.0, 0.25
    p = quantile_probabilities(DATA, q, cands, eps)
    v = np.sort(DATA)
    interval = np.searchsorted(v, cands, side="left")  # rank = index of the interval
    n = len(v)
    for r in np.unique(interval):
        inside = interval == r
        per_point = p[inside]
        assert np.allclose(per_point, per_point[0], rtol=1e-12)  # uniform inside the interval
    weights = {r: (interval == r).sum() * math.exp(-eps * abs(r - q * n) / 2) for r in np.unique(interval)}
    total = sum(weights.values())
    for r, w in weights.items():
        assert p[interval == r].sum() == pytest.approx(w / total, rel=1e-5)


def _neighbours(data, universe):
    """Every add/remove and every replace neighbour of ``data`` with values from ``universe``."""
    add_remove = [np.append(data, u) for u in universe] + [np.delete(data, i) for i in range(len(data))]
    replace = [np.where(np.arange(len(data)) == i, u, data) for i in range(len(data)) for u in universe]
    return add_remove, replace


@pytest.mark.parametrize("q", [0.1, 0.25, 0.5, 0.8])
def test_rank_utility_sensitivity_by_brute_force(q):
    """|Δu| ≤ 1 over all neighbours of many small tables, under both notions; under add/remove
    the largest change is exactly max(q, 1-q) (so 1 is a valid, nearly tight bound)."""
    universe = [0.0, 1.0, 2.5, 4.0, 5.0]
    cands = np.array([0.5, 1.0, 2.0, 2.5, 3.0, 4.5, 5.5])
    worst = {"add_remove": 0.0, "replace": 0.0}
    for size in (1, 2, 3, 4):
        for data in itertools.product(universe, repeat=size):
            d = np.array(data)
            u = rank_utility(d, cands, q)
            ar, rp = _neighbours(d, universe)
            for other in ar:
                if len(other):
                    worst["add_remove"] = max(worst["add_remove"], np.abs(rank_utility(other, cands, q) - u).max())
            for other in rp:
                worst["replace"] = max(worst["replace"], np.abs(rank_utility(other, cands, q) - u).max())
    assert worst["add_remove"] == pytest.approx(max(q, 1 - q))
    assert worst["replace"] == pytest.approx(1.0)
    # 1e-12: q·n is a float; an ulp of rounding is far inside the 1/G slack of the mechanism's quantisation
    assert max(worst.values()) <= RANK_SENSITIVITY + 1e-12


def test_neighbouring_datasets_exact_ratio_within_epsilon():
    """For every neighbour of DATA, every output's probability changes by at most e^ε (exact law)."""
    cands = candidate_grid(0.0, 16.0, grid=32)
    eps = 0.8
    universe = [0.0, 3.5, 8.0, 15.9, 20.0]  # 20 is outside the bounds: still covered
    ar, rp = _neighbours(DATA, universe)
    worst = 0.0
    for q in (0.2, 0.5, 0.9):
        p = quantile_probabilities(DATA, q, cands, eps)
        for other in ar + rp:
            p2 = quantile_probabilities(other, q, cands, eps)
            worst = max(worst, np.abs(np.log(p) - np.log(p2)).max())
    assert 0.3 * eps < worst <= eps + 1e-12


def test_neighbouring_datasets_empirical_ratio():
    """Sampled frequencies on D and on D plus one record: on every output drawn ≥ 1000 times in both,
    the frequency ratio stays below e^ε·1.15 (60,000 draws each, seed 11; 15% covers sampling error)."""
    cands = candidate_grid(0.0, 16.0, grid=16)
    eps, q = 1.0, 0.5
    d2 = np.append(DATA, 15.0)
    rng = np.random.default_rng(11)
    a = dp_quantile(DATA, q, cands, eps, rng, size=60_000)
    b = dp_quantile(d2, q, cands, eps, rng, size=60_000)
    ratios = []
    for x in cands:
        ca, cb = (a == x).sum(), (b == x).sum()
        if ca >= 1000 and cb >= 1000:
            ratios.append(max(ca / cb, cb / ca))
    assert len(ratios) >= 4
    assert max(ratios) <= math.exp(eps) * 1.15
    assert max(ratios) > 1.2  # the two laws really differ: the test can fail


def test_dp_edges_track_the_quantiles_at_large_epsilon():
    rng = np.random.default_rng(3)
    v = rng.normal(50, 10, 5000)
    edges = dp_bin_edges(v, BinSpec(5, 0.0, 100.0), 20.0, np.random.default_rng(4))
    assert edges[0] == 0.0 and edges[-1] == 100.0 and len(edges) == 6
    assert np.allclose(edges[1:-1], np.quantile(v, [0.2, 0.4, 0.6, 0.8]), atol=1.0)


def _table(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.integers(18, 90, n), "income": rng.gamma(2.0, 1500.0, n).round(2),
                         "sex": rng.choice(["f", "m"], n)})


@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
def test_release_with_dp_bins_totals_epsilon_and_records_edges(neighbours):
    df = _table()
    dom = dpcore.infer_domain(df, numeric={"age": {"bounds": [0, 120], "bins": 6},
                                           "income": {"bounds": [0, 50000], "bins": 4}}).declared()
    rel = dpcore.synthesize(df, "flat_laplace", 2.0, seed=5, domain=dom, neighbours=neighbours,
                            dp_bins={"age": {"bins": 6, "lower": 0, "upper": 120},
                                     "income": {"bins": 4, "lower": 0, "upper": 50000}}, bins_share=0.2,
                            bins_method="quantiles")
    assert rel.ledger.epsilon == pytest.approx(2.0, abs=1e-12)
    bins = [c for p, c in rel.ledger.charges() if "/DP bin edges/" in p]
    assert len(bins) == 5 + 3 and math.fsum(c.epsilon for c in bins) == pytest.approx(0.4, abs=1e-12)
    assert all(c.mechanism.startswith("exponential") and c.sensitivity == 1.0 for c in bins)
    man = rel.manifest()
    rec = man["diagnostics"]["dp_bin_edges"]
    assert rec["age"]["edges"] == list(rel.domain["age"].edges)
    assert "differentially private" in rec["age"]["derived"]
    assert rel.dp and man["dp"]
    # the released values fall in the DP bins
    assert rel.sets[0]["age"].between(0, 120).all()
    assert rel.domain["age"].edges != dom["age"].edges  # data-adapted, not the placeholder equal-width edges


def test_dp_bins_integer_edges_keep_a_whole_number_in_every_bin():
    df = pd.DataFrame({"k": np.random.default_rng(2).integers(0, 4, 500), "c": ["a", "b"] * 250})
    dom = dpcore.infer_domain(df).declared()
    rel = dpcore.synthesize(df, "flat_laplace", 1.0, seed=1, domain=dom,
                            dp_bins={"k": {"bins": 8, "lower": 0, "upper": 3, "method": "quantiles"}})
    edges = rel.domain["k"].edges
    assert all(float(e).is_integer() for e in edges) and edges[0] == 0 and edges[-1] == 3
    assert rel.ledger.epsilon == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("kw, match", [
    ({"dp_bins": {"age": {"bins": 5, "lower": 10, "upper": 0}}}, "lower"),
    ({"dp_bins": {"age": {"bins": 1, "lower": 0, "upper": 100}}}, "bins"),
    ({"dp_bins": {"age": {"bins": 5, "upper": 100}}}, "needs both lower and upper"),
    ({"dp_bins": {"age": {"bins": 5, "lower": 0, "upper": 100, "step": 2}}}, "unknown key"),
    ({"dp_bins": {"nope": {"bins": 5, "lower": 0, "upper": 100}}}, "nope"),
    ({"dp_bins": {"sex": {"bins": 5, "lower": 0, "upper": 100}}}, "not numeric"),
    ({"bins_share": 0.1}, "give dp_bins"),
    ({"dp_bins": {"age": {"bins": 5, "lower": 0, "upper": 100}}, "bins_share": 0.96}, "no ε"),
])
def test_bad_dp_bins_options_are_one_line(kw, match):
    df = _table(200)
    dom = dpcore.infer_domain(df, numeric={"age": {"bounds": [0, 120], "bins": 6},
                                           "income": {"bounds": [0, 50000], "bins": 4}}).declared()
    with pytest.raises(OptionError, match=match) as err:
        dpcore.synthesize(df, "flat_laplace", 1.0, seed=1, domain=dom, **kw)
    assert "\n" not in str(err.value)


def test_cli_synth_dp_bins(tmp_path, capsys):
    from dpcore.cli.commands import main

    df = _table(400)
    src = tmp_path / "t.csv"
    df.to_csv(src, index=False)
    dom = dpcore.infer_domain(df, numeric={"age": {"bounds": [0, 120], "bins": 6},
                                           "income": {"bounds": [0, 50000], "bins": 4}}).declared()
    (tmp_path / "d.json").write_text(dom.to_json())
    rc = main(["synth", str(src), "--out", str(tmp_path / "out"), "--method", "flat_laplace", "--domain",
               str(tmp_path / "d.json"), "--dp-bins", "age=0:120:4", "--bins-share", "0.2",
               "--bins-method", "quantiles", "--seed", "1"])
    assert rc == 0
    import json

    man = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert man["diagnostics"]["dp_bin_edges"]["age"]["bins_requested"] == 4
    assert man["ledger"]["epsilon_total"] == pytest.approx(1.0, abs=1e-12)
    # the bins may be left out (COL=lower:upper), not the bounds
    assert main(["synth", str(src), "--out", str(tmp_path / "o2"), "--dp-bins", "age=0"]) == 2
    assert "COL=lower:upper or COL=lower:upper:bins" in capsys.readouterr().err
