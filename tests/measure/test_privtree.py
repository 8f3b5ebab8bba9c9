"""[numeric-columns] item 2: PrivTree bins (dpcore.measure.privtree) and ``domain_bins="privtree"`` of a release
with nothing declared. The audit is in tests/privacy/test_privtree_audit.py; the proof in docs/methods/privtree.md."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.errors import OptionError
from dpcore.measure.dp_domain import distinct_labels
from dpcore.measure.privtree import (
    FANOUT,
    MAX_DEPTH,
    PrivTreeNoise,
    calibrated_scale,
    depth_cap,
    epsilon_of_scale,
    grow_tree,
    privtree_bins,
    privtree_edges,
    sampler_scale,
    split_cutoffs,
    split_probability,
)
from dpcore.privacy.budget import Epsilon, Rho
from dpcore.privacy.definitions import PureDP, ZeroConcentratedDP
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.mechanisms import DiscreteLaplace
from dpcore.privacy.neighbours import REPLACE, Neighbours


def _column(n: int = 5000, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).lognormal(3.0, 1.0, n)


# --------------------------------------------------------------------------- the edges
@pytest.mark.parametrize("eps", [0.05, 1.0, 5.0])
def test_edges_are_sorted_distinct_and_span_the_bounds(eps):
    r = privtree_edges(_column(), 0.0, 2048.0, eps, np.random.default_rng(1))
    e = np.asarray(r.edges)
    assert e[0] == 0.0 and e[-1] == 2048.0
    assert (np.diff(e) > 0).all()
    assert r.bins == len(e) - 1 >= 2  # 5,000 records split the root at any of these ε


def test_values_outside_the_bounds_are_clamped_not_refused():
    x = np.concatenate([_column(2000), [-1e9, 1e12]])
    e = privtree_edges(x, 1.0, 100.0, 1.0, np.random.default_rng(2)).edges
    assert e[0] == 1.0 and e[-1] == 100.0 and all(1.0 <= v <= 100.0 for v in e)


def test_depth_cap_bounds_the_number_and_the_width_of_the_bins():
    """Every record at one point and a large ε: the tree would go deep; the cap stops it at 2^-3 of the range."""
    x = np.full(100_000, 0.3)
    r = privtree_edges(x, 0.0, 1.0, 50.0, np.random.default_rng(3), max_depth=3)
    assert r.max_depth == 3 and r.bins <= 2 ** 3
    assert all((e * 8).is_integer() for e in r.edges)  # only the dyadic points of depth ≤ 3
    assert 0.25 in r.edges and 0.375 in r.edges  # the path to 0.3 was split to the cap


def test_whole_numbers_get_whole_edges_and_no_bin_without_a_number():
    x = np.random.default_rng(4).integers(1974, 2019, 20_000).astype(float)
    r = privtree_edges(x, 1974, 2018, 2.0, np.random.default_rng(5), integer=True)
    assert all(float(e).is_integer() for e in r.edges) and r.edges[0] == 1974 and r.edges[-1] == 2018
    assert r.max_depth == MAX_DEPTH and depth_cap(1974, 2018, True, MAX_DEPTH) == 5  # 45 numbers: 2^5 ≤ 45
    assert (np.diff(r.edges) >= 1).all()


@pytest.mark.parametrize("kw, match", [
    ({"lower": 5.0, "upper": 5.0}, "lower < upper"),
    ({"lower": 0.0, "upper": math.inf}, "upper bound"),
    ({"epsilon": 0.0}, "epsilon of the PrivTree bins"),
    ({"epsilon": -1.0}, "epsilon of the PrivTree bins"),
    ({"theta": "0"}, "theta"),
    ({"max_depth": 0}, "max_depth"),
    ({"max_depth": 2.5}, "max_depth"),
])
def test_bad_options_are_refused_in_one_line_naming_the_option(kw, match):
    args = {"values": _column(100), "lower": 0.0, "upper": 10.0, "epsilon": 1.0, "rng": np.random.default_rng(0)}
    args |= kw
    with pytest.raises(OptionError, match=match) as e:
        privtree_edges(**args)
    assert "\n" not in str(e.value)


# --------------------------------------------------------------------------- the calibration
@pytest.mark.parametrize("eps", [0.001, 0.02, 0.3, 1.0, 8.0])
@pytest.mark.parametrize("notion", ["add_remove", REPLACE])
def test_calibrated_scale_is_within_epsilon_and_close_to_the_papers(eps, notion):
    sens = Neighbours(notion).histogram_sensitivity
    lam = calibrated_scale(eps, sens)
    assert epsilon_of_scale(lam, sens) <= eps
    paper = sens * (2 * FANOUT - 1) / ((FANOUT - 1) * eps)
    assert paper <= lam and epsilon_of_scale(0.999 * lam, sens) > eps  # the smallest such λ, to 0.1%
    if eps <= 0.3:
        assert lam <= 1.04 * paper  # at the budgets a column gets, within a few % of the paper's λ
    assert epsilon_of_scale(sampler_scale(lam), sens) <= eps  # the sampler's rounding up only adds noise


def test_replace_neighbours_pay_for_a_removal_and_an_addition():
    """Replace-one is two add/remove steps: the scale is calibrated so that twice the add/remove map is ε."""
    a = privtree_edges(_column(), 0, 2048, 1.0, np.random.default_rng(0))
    b = privtree_edges(_column(), 0, 2048, 1.0, np.random.default_rng(0), neighbours=Neighbours(REPLACE))
    assert a.epsilon <= 1.0 and b.epsilon <= 1.0
    assert epsilon_of_scale(b.scale, 1.0) <= 0.5 < epsilon_of_scale(a.scale, 1.0)
    assert 1.8 * a.scale < b.scale < 2 * a.scale and b.bias == pytest.approx(b.scale * math.log(2), rel=1e-9)


def test_split_rule_is_the_biased_count_against_theta():
    """b(v) = max(c − dδ, θ − δ); split iff b + Z > θ, i.e. Z ≥ ⌊θ − b⌋ + 1, in exact rationals."""
    delta, theta = Fraction(5, 2), Fraction(10)
    assert list(split_cutoffs([10, 13, 0, 100], [0, 1, 4, 2], delta, theta)) == [1, 0, 3, -84]
    # an empty node at any depth: b = θ − δ, so it splits iff Z > δ
    assert list(split_cutoffs([0, 0], [0, 9], delta, theta)) == [3, 3]


# --------------------------------------------------------------------------- the noise, statistically
@pytest.mark.parametrize("count, theta", [(40, 40.0), (40, 43.5), (0, 5.0)])
def test_root_split_frequency_matches_the_exact_probability(count, theta):
    """The root's split decision of grow_tree (depth cap 1) over 1,500 seeded runs, against P(Z ≥ ⌊θ − b⌋ + 1)
    of the exact discrete Laplace law: within 4.5 binomial standard deviations (fixed seed: the test is
    deterministic; a wrong sampler scale or rule shifts the frequency by many deviations)."""
    lam = 3.0
    bias = lam * math.log(2)
    x = np.full(count, 0.5)
    rng = np.random.default_rng(11)
    runs = 1500
    splits = sum(len(grow_tree(x, 0.0, 1.0, lam, bias, theta, rng, max_depth=1)) == 3 for _ in range(runs))
    p = split_probability(count, 0, lam, bias, theta)
    assert abs(splits / runs - p) <= 4.5 * math.sqrt(p * (1 - p) / runs)


def test_split_probability_is_the_discrete_laplace_tail():
    mech = DiscreteLaplace(2.5)
    z = np.arange(-200, 201)
    pmf = mech.pmf(z)
    for c, d, theta in [(7, 0, 7.0), (7, 1, 3.2), (0, 3, 1.0), (90, 2, 10.0)]:
        k = int(split_cutoffs([c], [d], Fraction(2.5 * math.log(2)), Fraction(theta))[0])
        assert split_probability(c, d, 2.5, 2.5 * math.log(2), theta) == pytest.approx(pmf[z >= k].sum(), rel=1e-9)


# --------------------------------------------------------------------------- the ledger
@pytest.mark.parametrize("definition, budget", [(PureDP(), Epsilon(0.2)), (ZeroConcentratedDP(1e-9), Rho(0.01))])
def test_privtree_bins_charge_the_ledger_before_drawing(definition, budget):
    ledger = Ledger.capped("release", type(budget)(1.0), definition.delta)
    r = privtree_bins(_column(), 0.0, 2048.0, budget, np.random.default_rng(0), ledger, "x", Neighbours(),
                      definition)
    assert r.bins >= 2
    assert 0.99 * budget <= ledger.spent <= budget  # the map at the sampler's (rounded up) scale (a budget)
    (_, charge), = list(ledger.charges())
    assert charge.label == "PrivTree bins of 'x'" and "privtree" in charge.mechanism


def test_a_capped_ledger_refuses_before_any_noise():
    ledger = Ledger("release", cap=Epsilon(0.1))
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(Exception, match="budget|cap|exceed"):
        privtree_bins(_column(), 0.0, 2048.0, Epsilon(0.2), rng, ledger, "x", Neighbours(), PureDP())
    assert rng.bit_generator.state == state


def test_noise_map_is_the_stated_one():
    m = PrivTreeNoise(3.0)
    assert m.epsilon(1.0) == pytest.approx((2 + math.exp(1 / 3)) / 3)
    assert m.rho(2.0) == pytest.approx(m.epsilon(2.0) ** 2 / 2)


# --------------------------------------------------------------------------- in a release
def _table(n: int = 4000) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    return pd.DataFrame({"wage": np.round(rng.lognormal(1.6, 0.45, n), 2), "year": rng.integers(1900, 2020, n),
                         "z": rng.normal(0, 1, n)})


@pytest.mark.parametrize("delta", [None, 1e-9])
def test_release_with_privtree_bins_is_dp_and_totals_its_budget(delta):
    rel = dpcore.synthesize(_table(), "mst", 1.0, domain="dp", delta=delta, seed=2, domain_bins="privtree")
    assert rel.dp
    rel.ledger.assert_total(rel.ledger.root.cap)
    cols = rel.diagnostics["dp_domain"]["columns"]
    assert all(cols[c]["bins"].startswith("PrivTree bins") for c in ("wage", "z"))
    labels = [label for label, _ in rel.ledger.charges()]
    assert any(label.endswith("PrivTree bins of 'wage'") for label in labels)
    assert not any("quantile" in label for label in labels)
    for c in ("wage", "z"):
        e = rel.domain[c].edges
        assert list(e) == sorted(set(e))


def test_default_binning_is_privtree_and_quantiles_stay_an_option():
    """The default changed on purpose ([numeric-columns] item 2, bench/RESULTS.md): PrivTree by default; the DP
    quantiles on request, as before."""
    a = dpcore.synthesize(_table(), "mst", 1.0, domain="dp", delta=1e-9, seed=5)
    b = dpcore.synthesize(_table(), "mst", 1.0, domain="dp", delta=1e-9, seed=5, domain_bins="privtree")
    q = dpcore.synthesize(_table(), "mst", 1.0, domain="dp", delta=1e-9, seed=5, domain_bins="quantiles")
    assert a.domain.to_dict() == b.domain.to_dict()
    pd.testing.assert_frame_equal(a.sets[0], b.sets[0])
    assert any("PrivTree" in label for label, _ in a.ledger.charges())
    assert any("quantile" in label for label, _ in q.ledger.charges())
    assert not any("PrivTree" in label for label, _ in q.ledger.charges())
    assert q.domain.to_dict() != a.domain.to_dict()


def test_edges_too_close_to_label_apart_are_merged():
    """Post-processing: a bin whose printed label would repeat its neighbour's is merged into it; the ends stay."""
    assert distinct_labels((0.0, 1.0000001, 1.0000002, 2.0, 3.0)) == (0.0, 1.0000001, 2.0, 3.0)
    assert distinct_labels((1e9, 1e9 + 0.25, 1e9 + 0.5, 2e9)) == (1e9, 2e9)
    assert distinct_labels((0.0, 2.0, 2.0000001)) == (0.0, 2.0000001)
    assert distinct_labels((0.0, 1.0)) == (0.0, 1.0)


@pytest.mark.parametrize("kw, match", [
    ({"domain": "dp", "domain_bins": "kmeans"}, "domain_bins must be one of quantiles, privtree"),
    ({"domain_bins": "privtree"}, "domain_bins is an option of domain=\"dp\""),
])
def test_bad_domain_bins_is_one_line(kw, match):
    with pytest.raises(OptionError, match=match) as e:
        dpcore.synthesize(_table(200), "flat_laplace", 1.0, seed=1, **kw)
    assert "\n" not in str(e.value)


# --------------------------------------------------------------------------- the proof's bound, searched
@pytest.mark.parametrize("scale", [0.5, 1.0, 3.0, 40.0])
def test_no_path_loses_more_than_the_stated_map(scale):
    """docs/methods/privtree.md, Lemma 2: along the record's path, Σ ln(p'_k/p_k) over the split nodes is at most
    ε(λ) = (2 + e^{1/λ})/λ, and the leaf's ln((1 − p)/(1 − p')) at most 1/λ. A seeded random search over paths
    (counts non-increasing with depth, θ anywhere) with the exact split probabilities, plus the two-nodes-near-θ
    path of the audit."""
    bias = scale * math.log(2)
    rng = np.random.default_rng(12)
    paths = [([30, 30, 30], 30 - bias + 0.5)]
    for _ in range(500):
        top = int(rng.integers(0, 120))
        paths.append((sorted(rng.integers(0, top + 1, int(rng.integers(1, 10))).tolist(), reverse=True),
                      float(rng.uniform(0, 60))))
    a = math.exp(-1.0 / scale)

    def split_and_stay(count: int, depth: int, theta: float) -> tuple[float, float]:
        """(P(Z ≥ k), P(Z < k)) at the node's cutoff k, each from its own closed form (no 1 − p cancellation)."""
        k = int(split_cutoffs([count], [depth], Fraction(bias), Fraction(theta))[0])
        tail = a ** k / (1 + a) if k >= 1 else a ** (1 - k) / (1 + a)  # P(Z ≥ k) (k ≥ 1) or P(Z < k) (k ≤ 0)
        return (tail, 1.0 - tail) if k >= 1 else (1.0 - tail, tail)

    worst = 0.0
    for counts, theta in paths:
        d = [split_and_stay(c, k, theta) for k, c in enumerate(counts)]
        d2 = [split_and_stay(c + 1, k, theta) for k, c in enumerate(counts)]
        assert d[0][0] == pytest.approx(split_probability(counts[0], 0, scale, bias, theta), rel=1e-12)
        up = sum(math.log(y[0] / x[0]) for x, y in zip(d, d2))
        assert up <= epsilon_of_scale(scale) + 1e-12
        assert math.log(d[-1][1] / d2[-1][1]) <= 1 / scale + 1e-9
        worst = max(worst, up)
    assert worst > 1.5 / scale  # the search reaches paths with more than one node's loss: it can fail


def test_the_sampler_scale_is_a_fixed_point():
    """grow_tree draws at DiscreteLaplace(λ): λ already the sampler's dyadic scale, so δ = λ ln 2 is for it."""
    for lam in (3.0000001, 150.33, 0.7):
        s = sampler_scale(lam)
        assert s >= lam and sampler_scale(s) == s
