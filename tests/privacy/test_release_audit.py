"""Empirical audits of whole releases on neighbouring tables (fixed seeds, 95% jointly).

A release labelled ε-DP for its neighbour notion must keep the lower bound at or below
ε on pairs of that notion; an add/remove release must keep replace-one pairs at or below
2ε (a replacement is a removal and an addition). The full runs, every method × notion ×
pair with many more repetitions, are in bench/checks/privacy_audit.py and bench/RESULTS.md.
"""
import pytest

from tests.privacy.audit import epsilon_lower_bound, run_pair
from tests.privacy.releases import METHODS, PAIRS, events, statistics

EPS = 1.0
RUNS = 300

NOTIONS = ("add_remove", "replace")
#: (method label, release notion, pair notion, claimed bound): every audited method under each
#: notion on a pair of that notion, and an add/remove release on a replace-one pair (2ε)
FAST = [(label, n, n, EPS) for label, _, _ in METHODS for n in NOTIONS] + [
    ("steps MoSDA", "add_remove", "replace", 2 * EPS),
    ("flat_laplace", "add_remove", "replace", 2 * EPS),
]


def test_every_registered_method_is_audited():
    """A method added to the registry must get an entry in tests/privacy/releases.py."""
    from dpcore.synthesizers import REGISTRY

    assert {m for _, m, _ in METHODS} == set(REGISTRY)


@pytest.mark.parametrize("label,notion,pair,claim", FAST, ids=[f"{m}|{n}|{p}" for m, n, p, _ in FAST])
def test_release_privacy_loss_stays_within_the_claim(label, notion, pair, claim):
    method, options = next((m, o) for lab, m, o in METHODS if lab == label)
    a, b = run_pair(statistics(method, options, notion, EPS), *PAIRS[pair], RUNS, seed0=1000)
    r = epsilon_lower_bound(*events(a, b))
    assert r.epsilon_lower_bound <= claim, r


def test_exact_record_count_is_caught_under_add_remove():
    """The audit finding: a release that publishes n exactly (here one made under the
    replace notion, where n is public) is distinguishable on an add/remove pair by its
    length alone: the bound far exceeds ε. The default notion closes this."""
    a, b = run_pair(statistics("steps", {"order": "a"}, "replace", EPS), *PAIRS["add_remove"], 200, seed0=7)
    r = epsilon_lower_bound(*events(a, b))
    assert r.epsilon_lower_bound > 2 * EPS and "length" in r.event  # 200 runs cap the bound near 3.3


#: most of ε on the bin edges, so the audit looks at the quantile mechanism itself
BINS_SHARE = 0.9


@pytest.mark.parametrize("notion", NOTIONS)
def test_release_with_dp_bins_stays_within_the_claim(notion):
    """dp_bins are charged to the release's ledger: the edge and the length together stay within ε."""
    from tests.privacy.releases import V_PAIRS, bin_edge_events, bin_edge_statistics

    a, b = run_pair(bin_edge_statistics(notion, EPS, BINS_SHARE), *V_PAIRS[notion], RUNS, seed0=2000)
    r = epsilon_lower_bound(*bin_edge_events(a, b))
    assert r.epsilon_lower_bound <= EPS, r


def test_under_noised_dp_bins_are_caught(monkeypatch):
    """The audit can fail: a quantile calibrated to a tenth of its rank sensitivity
    (less noise than claimed) is caught on the median edge."""
    import dpcore.measure.quantiles
    from tests.privacy.releases import V_PAIRS, bin_edge_events, bin_edge_statistics

    monkeypatch.setattr(dpcore.measure.quantiles, "RANK_SENSITIVITY", 0.1)
    a, b = run_pair(bin_edge_statistics("add_remove", EPS, BINS_SHARE), *V_PAIRS["add_remove"], 200, seed0=7)
    r = epsilon_lower_bound(*bin_edge_events(a, b))
    assert r.epsilon_lower_bound > 2 * EPS and "median edge" in r.event, r


#: (ε, δ) releases through zCDP: events far more likely than δ must keep the bound at or below ε
DELTA = 1e-9
#: every audited method, the forced sparse paths included (their empty cells' Gaussian noise is drawn
#: by the exact histogram sampler in D, where the audited cell (y, q) is empty)
ZCDP = [(label, n) for label, m, o in METHODS for n in NOTIONS]


@pytest.mark.parametrize("label,notion", ZCDP, ids=[f"{m}|{n}" for m, n in ZCDP])
def test_zcdp_release_privacy_loss_stays_within_the_claim(label, notion):
    from dpcore.synthesizers import REGISTRY

    method, options = next((m, o) for lab, m, o in METHODS if lab == label)
    assert "zcdp" in REGISTRY[method].definitions
    a, b = run_pair(statistics(method, dict(options, delta=DELTA), notion, EPS), *PAIRS[notion], RUNS, seed0=3000)
    r = epsilon_lower_bound(*events(a, b), delta=DELTA)
    assert r.epsilon_lower_bound <= EPS, r


def test_an_under_noised_zcdp_release_is_caught(monkeypatch):
    """The audit can fail: counts drawn with σ 30 times smaller than the one whose ρ the
    ledger records (so the cap lets them through) are caught on the (y, q) count."""
    from dataclasses import dataclass

    from dpcore.privacy import definitions
    from dpcore.privacy.gaussian import DiscreteGaussian

    @dataclass(frozen=True)
    class Understated(DiscreteGaussian):
        def rho(self, l2_sensitivity=1.0):  # claims the ρ of 30 times the noise it draws
            return l2_sensitivity**2 / (2 * (30 * self.sigma) ** 2)

    real = definitions.ZeroConcentratedDP.count_noise

    def weak(self, budget, neighbours, kind=None):
        return Understated(real(self, budget, neighbours, kind).sigma / 30)

    monkeypatch.setattr(definitions.ZeroConcentratedDP, "count_noise", weak)
    a, b = run_pair(statistics("flat_laplace", {"delta": DELTA, "synthesis": "round"}, "add_remove", EPS),
                    *PAIRS["add_remove"], 200,
                    seed0=11)
    r = epsilon_lower_bound(*events(a, b), delta=DELTA)
    assert r.epsilon_lower_bound > 2 * EPS, r


def test_an_under_noised_empty_cell_histogram_is_caught(monkeypatch):
    """The audit sees the histogram sampler: empty cells noised at a twentieth of the scale the
    ledger records (the per-cell sampler left as it is) are caught on the (y, q) count of the
    forced sparse flat Laplace release, whose (y, q) cell is empty in D only."""
    import numpy as np

    from dpcore.privacy import mechanisms
    from dpcore.privacy.exact_histogram import discrete_laplace_histogram
    from dpcore.privacy.exact_laplace import dyadic_scale

    def under_noised(self, counts, rng):
        num, den = dyadic_scale(self.scale / 20)
        return discrete_laplace_histogram(rng, np.asarray(counts, dtype=np.int64), num, den)

    monkeypatch.setattr(mechanisms.DiscreteLaplace, "sample_histogram", under_noised)
    a, b = run_pair(statistics("flat_laplace", {"max_cells": 2}, "add_remove", EPS), *PAIRS["add_remove"], RUNS,
                    seed0=7)
    r = epsilon_lower_bound(*events(a, b))
    assert r.epsilon_lower_bound > EPS and "(y,q)" in r.event, r


def test_an_under_noised_gaussian_empty_cell_histogram_is_caught(monkeypatch):
    """The zCDP audit sees the Gaussian histogram sampler: empty cells noised at a twentieth of the
    σ the ledger records (the per-cell sampler left as it is) are caught on the (y, q) count of the
    forced sparse flat Laplace release under δ, whose (y, q) cell is empty in D only."""
    from dpcore.privacy.gaussian import DiscreteGaussian

    real = DiscreteGaussian.sample_histogram

    def under_noised(self, counts, rng):
        return real(DiscreteGaussian(self.sigma / 20), counts, rng)

    monkeypatch.setattr(DiscreteGaussian, "sample_histogram", under_noised)
    a, b = run_pair(statistics("flat_laplace", {"max_cells": 2, "delta": DELTA}, "add_remove", EPS),
                    *PAIRS["add_remove"], RUNS, seed0=7)
    r = epsilon_lower_bound(*events(a, b), delta=DELTA)
    assert r.epsilon_lower_bound > EPS and "(y,q)" in r.event, r
