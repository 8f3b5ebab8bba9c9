"""[numeric-columns]: DP bounds (dpcore.measure.bounds), DP levels (dpcore.measure.levels), the release
with nothing declared (synthesize(domain="dp")), dp_bins without bounds, and clamping in releases."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.data.domain import DP_BOUNDS, DP_FOUND
from dpcore.errors import OptionError
from dpcore.measure.bounds import (
    FALSE_BIN_PROBABILITY,
    REFINE_BINS,
    WITHHOLD_PROBABILITY,
    LogBins,
    bounds_from_noisy,
    dp_bounds,
    refine_bounds,
    threshold,
)
from dpcore.measure.levels import OTHER, dp_levels, level_counts, level_threshold
from dpcore.privacy.budget import Epsilon, Rho
from dpcore.privacy.definitions import PureDP, ZeroConcentratedDP
from dpcore.privacy.gaussian import DiscreteGaussian
from dpcore.privacy.ledger import RHO, Ledger
from dpcore.privacy.mechanisms import DiscreteLaplace
from dpcore.privacy.neighbours import Neighbours


def _wages(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    """A wages-like table (log-normal wage around 5, whole-number experience, text sex) plus one outlier."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"wage": np.round(rng.lognormal(1.6, 0.45, n), 2), "exper": rng.integers(1, 19, n),
                       "sex": rng.choice(["female", "male"], n)})
    df.loc[0, "wage"] = 98765.4
    return df


# --------------------------------------------------------------------------- the public bins
@pytest.mark.parametrize("integer", [False, True])
def test_every_value_has_one_bin_holding_it(integer):
    bins = LogBins.for_kind(integer)
    x = np.array([0.0, 1.0, 2.0, 3.0, 7.0, -1.0, -2.0, -5.0, 98765.0, 1e30, -1e30, 2.0**62, 2.0**52])
    if not integer:
        x = np.append(x, [0.0004, -0.0004, 0.3, 5.5, -0.7])
    idx = bins.index(pd.Series(x))
    assert ((idx >= 0) & (idx < bins.value_bins)).all()
    for v, i in zip(x, idx):
        lo, hi = bins.interval(int(i))
        top = 2.0**52 if integer else 2.0**62
        assert lo <= v < hi or abs(v) >= top  # beyond the grid: the end bins, widened
    assert bins.index(pd.Series([np.nan, None], dtype=object))[0] == bins.value_bins  # NA: its own bin


def test_histogram_sensitivity_by_brute_force():
    """Adding one record (any value, NA included) changes exactly one bin by 1: L1 = L2 = 1 under add/remove."""
    bins = LogBins.for_kind(False)
    base = pd.Series([3.0, 4.5, 0.0, -2.0, np.nan])
    h = np.bincount(bins.index(base), minlength=bins.size)
    for v in [0.0, 1e-9, 3.9, 4.0, -4.0, 1e300, -1e300, np.nan, 7.25]:
        h2 = np.bincount(bins.index(pd.concat([base, pd.Series([v])], ignore_index=True)), minlength=bins.size)
        assert np.abs(h2 - h).sum() == 1


@pytest.mark.parametrize("mech", [DiscreteLaplace(4.0), DiscreteGaussian(6.0)])
def test_threshold_bounds_the_chance_an_empty_bin_passes(mech):
    """From the exact pmf: bins·P(Z ≥ τ) ≤ β, the property the threshold is set for."""
    bins = 149
    tau = threshold(mech, bins)
    k = np.arange(math.ceil(tau), math.ceil(tau) + 4000)
    tail = float(mech.pmf(k).sum())
    assert bins * tail <= FALSE_BIN_PROBABILITY
    assert bins * tail > FALSE_BIN_PROBABILITY / 50  # and not far more conservative than needed


def test_bounds_are_post_processing_of_the_noisy_counts():
    bins = LogBins.for_kind(False)
    noisy = np.zeros(bins.size)
    i4, i8 = (int(bins.index(pd.Series([v]))[0]) for v in (4.0, 8.0))
    noisy[[i4, i8]] = 50
    found = bounds_from_noisy(noisy, bins, 20.0)
    assert (found.lower, found.upper, found.na, found.fallback) == (4.0, 16.0, False, False)
    noisy[:] = -3
    noisy[i8] = 5
    assert bounds_from_noisy(noisy, bins, 20.0).fallback  # nothing passed: the largest noisy count's bin
    ints = LogBins.for_kind(True)
    noisy = np.zeros(ints.size)
    noisy[int(ints.index(pd.Series([0]))[0]):int(ints.index(pd.Series([20]))[0]) + 1] = 99
    f = bounds_from_noisy(noisy, ints, 10.0)
    assert (f.lower, f.upper) == (0.0, 31.0)  # [16, 32) holds whole numbers up to 31
    noisy[:] = 0
    noisy[-2] = 5  # only the top end bin: whole-number bounds stay within ±2^53 (exact whole numbers)
    assert bounds_from_noisy(noisy, ints, 10.0).upper <= 2.0**53


@pytest.mark.parametrize("definition", [PureDP(), ZeroConcentratedDP(1e-9)])
def test_dp_bounds_ignore_one_outlier_and_charge_the_ledger(definition):
    df = _wages()
    ledger = (Ledger("t") if definition.name == "pure" else Ledger("t", unit=RHO, delta=1e-9))
    budget = Epsilon(0.1) if definition.name == "pure" else Rho(0.005)
    found = dp_bounds(df["wage"], False, budget, np.random.default_rng(1), ledger, Neighbours(), definition, "wage")
    assert 0 < found.lower <= 2 and 8 <= found.upper <= 32 and not found.na
    (path, charge), = list(ledger.charges())
    assert "bounds of 'wage'" in path and charge.parallel_over == LogBins.for_kind(False).size
    assert ledger.spent == budget


def test_refined_bounds_tighten_a_loose_octave_and_stay_inside_it():
    """Years 1974–2018 sit in the octave [1024, 2048): the refinement over 16 equal-width bins of it keeps
    the years (one bin of margin each side) and drops most of the empty range; never wider than the first."""
    years = pd.Series(np.random.default_rng(3).integers(1974, 2019, 20_000))
    ledger = Ledger("t")
    lo, hi = refine_bounds(years, 1024.0, 2047.0, True, Epsilon(0.5), np.random.default_rng(4), ledger, Neighbours(),
                           PureDP(), "year")
    assert 1024 <= lo <= 1974 and 2018 <= hi <= 2047 and hi - lo < 300
    (path, charge), = list(ledger.charges())
    assert "refined bounds of 'year'" in path and charge.parallel_over == REFINE_BINS + 2
    few = pd.Series([2000, 2001, 2002])  # nothing passes: the first bounds are kept
    assert refine_bounds(few, 1024.0, 2047.0, True, Epsilon(0.01), np.random.default_rng(5), Ledger("u"), Neighbours(),
                         PureDP(), "year") == (1024.0, 2047.0)


# --------------------------------------------------------------------------- DP levels
def test_level_threshold_bounds_the_chance_a_level_seen_once_passes():
    """Exact pmf: P(1 + Z ≥ τ) ≤ δ: this is the δ of the stability argument."""
    for sigma, delta in [(1.0, 1e-6), (12.0, 1e-9), (40.0, 5e-10)]:
        tau = level_threshold(sigma, delta)
        g = DiscreteGaussian(sigma)
        k = np.arange(math.ceil(tau - 1), math.ceil(tau - 1) + int(60 * sigma) + 50)
        assert float(g.pmf(k).sum()) <= delta


def test_dp_levels_release_the_common_levels_only():
    s = pd.Series(["a"] * 900 + ["b"] * 700 + ["rare"] * 2 + [None] * 3)
    keys, counts = level_counts(s)
    assert keys == ["a", "b", "rare"] and counts.tolist() == [900, 700, 2, 3]
    ledger = Ledger("t", unit=RHO, delta=1e-9)
    found = dp_levels(s, Rho(0.01), 1e-9, np.random.default_rng(2), ledger, Neighbours(), ZeroConcentratedDP(1e-9),
                      "x")
    assert found.levels == ("a", "b") and not found.na and found.other == OTHER
    assert ledger.spent.value == pytest.approx(0.01)
    (_, charge), = list(ledger.charges())
    assert charge.parallel_over == 1  # the number of observed levels is not published
    with pytest.raises(OptionError, match=r"'x'.*need \(ε, δ\).*declare"):
        dp_levels(s, 0.5, 1e-9, np.random.default_rng(2), Ledger("p"), Neighbours(), PureDP(), "x")


# --------------------------------------------------------------------------- releases with nothing declared
def test_release_with_nothing_declared_is_dp_and_keeps_the_outlier_out():
    df = _wages()
    rel = dpcore.synthesize(df, "mst", 1.0, domain="dp", delta=1e-9, seed=3)
    assert rel.dp and "δ = 1e-09" in rel.dp_reason
    assert rel.domain.source == DP_FOUND and rel.domain["wage"].origin == DP_BOUNDS
    assert rel.domain["sex"].levels == ("female", "male", OTHER)
    s = rel.sets[0]
    assert s["wage"].max() < 1000
    assert abs(s["wage"].median() / df["wage"].median() - 1) < 0.25
    groups = [c["label"] for c in rel.ledger.to_dict()["composition"]["children"]]
    assert "DP domain" in groups
    rel.ledger.assert_total(rel.ledger.root.cap)  # the sets got whatever the domain did not spend
    assert rel.curator_only["clamped_records"]["wage"] >= 1  # the outlier at least: curator-only
    published = rel.manifest_json()
    assert "curator_only" not in published and "clamped" not in published
    private = json.loads(rel.manifest_json(private=True))
    assert private["curator_only_not_dp"]["clamped_records"]["wage"] == rel.curator_only["clamped_records"]["wage"]
    pdef = json.loads(published)["privacy_definition"]
    assert pdef["delta"] == 1e-9
    assert pdef["delta_of_level_thresholds"] + pdef["delta_of_rho_conversion"] == pytest.approx(1e-9)


def test_numbers_only_release_under_pure_epsilon():
    df = _wages().drop(columns="sex").assign(flag=lambda d: d["exper"] > 9)
    rel = dpcore.synthesize(df, "flat_laplace", 1.0, domain="dp", seed=4)
    assert rel.dp and rel.ledger.epsilon == pytest.approx(1.0)
    assert rel.domain["flag"].levels == (False, True)
    exper = rel.domain["exper"]  # whole numbers in a narrow DP range: one bin per number
    assert all(float(e).is_integer() for e in exper.edges[:-1]) and exper.edges[-1] - exper.edges[-2] == 0.5
    assert rel.sets[0]["exper"].dtype == df["exper"].dtype


def test_too_few_records_for_dp_bounds_is_said_not_hidden():
    """40 records at ε = 0.5: no bin passes, and none stands out of the noise (the largest noisy count under the
    withholding threshold): the column is withheld, every synthetic value missing, one warning line naming it.
    Before the withholding rule this release kept the largest noisy count's bin, most likely noise (changed on
    purpose: this test asserted the noise-bound release)."""
    df = pd.DataFrame({"x": np.linspace(10, 20, 40)})
    rel = dpcore.synthesize(df, "flat_laplace", 0.5, domain="dp", seed=1)
    rec = rel.diagnostics["dp_domain"]["columns"]["x"]
    assert rel.dp and rec["fallback"] and rec["withheld"] and len(rec["edges"]) == 2
    assert rel.sets[0]["x"].isna().all() and len(rel.sets[0]) > 0
    (w,) = rel.diagnostics["dp_domain"]["warnings"]
    assert w.startswith("column 'x': withheld, every synthetic value missing") and "declare its bounds" in w
    assert "domain_share" in w and "\n" not in w


def test_a_withheld_column_leaves_the_others_and_spends_less():
    """A column of 40 values among 3,000 missing ones is withheld; the table's other columns are released as
    usual, and the withheld column spends only its bounds histogram (no refinement, no edges)."""
    df = _wages().drop(columns="sex")
    df["rare"] = np.where(np.arange(len(df)) < 40, 15.0, np.nan)
    rel = dpcore.synthesize(df, "flat_laplace", 1.0, domain="dp", seed=0)
    cols = rel.diagnostics["dp_domain"]["columns"]
    assert cols["rare"]["withheld"] and not cols["wage"]["withheld"] and not cols["exper"]["withheld"]
    assert rel.sets[0]["rare"].isna().all() and rel.sets[0]["wage"].notna().mean() > 0.9
    assert cols["rare"]["spent"] < cols["wage"]["spent"] / 2
    warned = {w.split(":")[0]: w for w in rel.diagnostics["dp_domain"]["warnings"]}
    assert warned["column 'rare'"].startswith("column 'rare': withheld")
    assert all("withheld" not in w for c, w in warned.items() if c != "column 'rare'")


@pytest.mark.parametrize("mech", [DiscreteLaplace(4.0), DiscreteGaussian(6.0)])
def test_withholding_threshold_is_where_noise_alone_reaches_half_the_time(mech):
    """From the exact pmf: bins·P(Z ≥ τ_w) ≤ 1/2 (noise alone over the empty bins reaches τ_w at most that
    often, the union bound), not far more conservative, and under the threshold for bins to pass."""
    bins = 149
    tau_w = threshold(mech, bins, WITHHOLD_PROBABILITY)
    k = np.arange(math.ceil(tau_w), math.ceil(tau_w) + 4000)
    tail = float(mech.pmf(k).sum())
    assert bins * tail <= WITHHOLD_PROBABILITY < 50 * bins * tail
    assert tau_w < threshold(mech, bins)


def test_withheld_only_when_nothing_passes_and_the_largest_count_is_noise_like():
    bins = LogBins.for_kind(False)
    i8 = int(bins.index(pd.Series([8.0]))[0])
    noisy = np.full(bins.size, -3.0)
    noisy[i8] = 12.0
    assert not bounds_from_noisy(noisy, bins, 20.0, 10.0).withheld  # stands out, under τ: the fallback bin
    f = bounds_from_noisy(noisy, bins, 20.0, 10.0)
    assert f.fallback and (f.lower, f.upper) == (8.0, 16.0)
    assert bounds_from_noisy(noisy, bins, 20.0, 12.5).withheld  # under τ_w too: withheld
    assert bounds_from_noisy(noisy, bins, 20.0).withheld is False  # no τ_w given: never withheld
    noisy[i8] = 25.0
    assert not bounds_from_noisy(noisy, bins, 20.0, 30.0).withheld  # a bin passed τ: bounded, never withheld


def test_text_columns_under_pure_epsilon_are_refused_in_one_line():
    with pytest.raises(OptionError, match=r"domain=\"dp\" needs delta for text column\(s\) 'sex'.*universe") as e:
        dpcore.synthesize(_wages(), "steps", 1.0, domain="dp")
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("kw, match", [
    ({"domain": "dp", "domain_share": 0}, "domain_share"),
    ({"domain": "dp", "domain_share": 1}, "domain_share"),
    ({"domain": "dp", "domain_share": -0.2}, "domain_share"),
    ({"domain": "dp", "domain_share": "0.1"}, "domain_share"),
    ({"domain": "dp", "domain_share": 0.5, "count_share": 0.5}, "no ε"),
    ({"domain_share": 0.1}, "give domain=\"dp\""),
    ({"domain": "dp", "dp_bins": {"wage": {"bins": 4}}}, "drop dp_bins"),
    ({"domain": "dp", "delta": "1e-9"}, "delta"),
    ({"dp_bins": {"wage": {"bins": 4, "lower": "abc", "upper": 9}}}, r"\['wage'\] lower must be a finite number"),
    ({"dp_bins": {"wage": {"bins": 4, "lower": 5, "upper": 5}}}, r"lower \(5\) must be below upper \(5\)"),
    ({"dp_bins": {"wage": {"bins": 4, "lower": 0}}}, "needs both lower and upper"),
])
def test_bad_domain_options_are_one_line(kw, match):
    df = _wages(300).drop(columns="sex")
    dom = dpcore.infer_domain(df, numeric={"wage": {"bounds": [0, 100], "bins": 4}}).declared()
    with pytest.raises(OptionError, match=match) as e:
        dpcore.synthesize(df, "flat_laplace", 1.0, seed=1, **({"domain": dom} | kw))
    assert "\n" not in str(e.value)


def test_preview_of_a_dp_domain_is_one_line():
    with pytest.raises(OptionError, match=r"no domain to preview") as e:
        dpcore.preview(_wages(200).drop(columns="sex"), "flat_laplace", 1.0, domain="dp")
    assert "\n" not in str(e.value)


def test_dp_bins_without_bounds_in_a_declared_domain():
    """The app's "find privately" for one numeric column: the other columns stay declared."""
    df = _wages().drop(columns="sex")
    dom = dpcore.infer_domain(df, numeric={"wage": {"bounds": [0, 100], "bins": 4}}).declared()
    rel = dpcore.synthesize(df, "flat_laplace", 1.0, domain=dom, seed=2, dp_bins={"wage": {"bins": 5}})
    assert rel.dp and rel.domain["wage"].origin == DP_BOUNDS
    assert rel.domain["wage"].edges[-1] <= 64 and rel.sets[0]["wage"].max() < 100
    rec = rel.diagnostics["dp_bin_edges"]["wage"]
    assert rec["bounds"].startswith("differentially private") and rec["upper"] == rel.domain["wage"].edges[-1]
    labels = [p for p, _ in rel.ledger.charges()]
    assert any("bounds of 'wage'" in p for p in labels) and rel.ledger.epsilon == pytest.approx(1.0)


def test_clamping_changes_nothing_for_in_range_data_and_moves_outliers_to_the_end_bins():
    """Seeded releases: the data, and the data with its out-of-range values moved to the bounds, give the same
    bytes (each value outside is encoded as the end bin's values are)."""
    df = _wages(800).drop(columns="sex")
    dom = dpcore.infer_domain(df.assign(wage=df["wage"].clip(0, 40)),
                              numeric={"wage": {"bounds": [0, 40], "bins": 8}}).declared()
    a = dpcore.synthesize(df, "flat_laplace", 1.0, domain=dom, seed=9)
    b = dpcore.synthesize(df.assign(wage=df["wage"].clip(0, 40)), "flat_laplace", 1.0, domain=dom, seed=9)
    assert a.sets[0].to_csv() == b.sets[0].to_csv()
    assert a.curator_only == {"clamped_records": {"wage": int((df["wage"] > 40).sum())}}
    assert b.curator_only == {}


def test_report_names_a_domain_found_with_dp():
    """The release report says where a DP-found domain came from (not "inferred from data (NOT DP)")."""
    from dpcore.studio.report import build_report_html

    df = _wages(600)
    rel = dpcore.synthesize(df, "flat_laplace", 1.0, domain="dp", delta=1e-9, seed=2)
    page = build_report_html(rel.manifest(), rel.sets)
    assert "found with DP in the release" in page and "differentially private bounds" in page
    assert "inferred from data (NOT DP)" not in page
