"""[private-domain]: the exact level threshold, bounds that keep a mostly-zero column's tail, the split of the
domain's share by need, the missing level declared (never found), and the forecast before any spending."""
from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.data.domain import DP_BOUNDS, ZERO_POINT_WIDTH, numeric_attribute
from dpcore.data.schema import ColumnType, Schema
from dpcore.measure.bounds import MIN_EXPONENT, LogBins, bounds_from_noisy
from dpcore.measure.domain_forecast import forecast
from dpcore.measure.dp_domain import COARSE, FOUND, NOT_FOUND, plan_dp_domain, with_zero_point
from dpcore.measure.levels import exact_level_threshold, gaussian_tail_point
from dpcore.privacy.budget import Epsilon
from dpcore.privacy.definitions import definition_for
from dpcore.privacy.gaussian import DiscreteGaussian
from dpcore.privacy.neighbours import Neighbours


def _tail(sigma2: Fraction, t: int) -> Decimal:
    """P(Z ≥ t) for the discrete Gaussian at σ², summed in 60-digit decimals (to far past where terms matter)."""
    with localcontext() as ctx:
        ctx.prec = 60
        s2 = Decimal(sigma2.numerator) / Decimal(sigma2.denominator)
        top = int(t + 40 * float(s2) ** 0.5) + 60
        w = [(-(Decimal(z) ** 2) / (2 * s2)).exp() for z in range(top + 1)]
        return sum(w[t:], Decimal(0)) / (w[0] + 2 * sum(w[1:], Decimal(0)))


@pytest.mark.parametrize("rho", [1e-2, 1e-3, 1.2e-4])
@pytest.mark.parametrize("delta", [1e-9, 6e-11])
def test_the_level_threshold_is_exact_and_tight(rho, delta):
    """τ − 1 is the smallest t with P(Z ≥ t) ≤ δ at the sampler's σ² (checked at 60 digits): a level seen once
    passes with probability at most δ, and one step lower it would pass more often than δ."""
    mech = DiscreteGaussian.calibrate_rho(rho)
    t = gaussian_tail_point(float(mech.sampler_sigma2), delta)
    assert _tail(mech.sampler_sigma2, t) <= Decimal(delta) < _tail(mech.sampler_sigma2, t - 1)
    assert exact_level_threshold(float(mech.sampler_sigma2), delta) == 1 + t
    # below the tail bound the releases used before: σ·√(2 ln(1/δ))
    assert t <= np.ceil(mech.sigma * np.sqrt(2 * np.log(1 / delta)))
    # a unit of K records: a count of K passes with probability at most δ/K
    k = 3
    tk = exact_level_threshold(float(mech.sampler_sigma2), delta, k) - k
    assert _tail(mech.sampler_sigma2, int(tk)) <= Decimal(delta) / k


def test_zero_is_its_own_point_so_a_mostly_zero_column_keeps_its_tail():
    bins = LogBins.for_kind(False)
    noisy = np.zeros(bins.size)
    zero = bins.zero_bin
    noisy[zero] = 3000  # the zeros
    noisy[zero + 21: zero + 26] = 150  # a tail spread thin over five octaves (2^10 … 2^15)
    plain = bounds_from_noisy(noisy, bins, tau=400.0)
    assert plain.upper < 0.01  # before: the tail clamped to the zero bin
    side = bounds_from_noisy(noisy, bins, tau=400.0, tau_side=300.0, group_tau=lambda g, m: 200.0 * np.sqrt(g))
    assert side.extended and side.upper >= 2 ** 11  # the merged octaves reach into the tail
    # an all-zero column with noise on the positive side below every threshold stays at zero
    quiet = noisy.copy()
    quiet[zero + 21: zero + 26] = 20
    assert bounds_from_noisy(quiet, bins, 400.0, tau_side=300.0,
                             group_tau=lambda g, m: 200.0 * np.sqrt(g)).upper < 0.01


def test_a_count_is_never_widened_below_zero():
    # a 0/1 count whose empty negative side happens to hold a noisy count over the side threshold: read as an
    # amount, its bounds reach the far negative bin (the fault of bench/checks/bounds_side.py); as a count, not
    bins = LogBins.for_kind(True)
    noisy = np.zeros(bins.size)
    zero = bins.zero_bin
    noisy[zero], noisy[zero + 1] = 1500, 500  # the zeros and the ones
    noisy[zero - 30] = 320  # noise alone, below zero
    kw = {"tau": 400.0, "tau_side": 300.0, "tau_next": 350.0}
    amount = bounds_from_noisy(noisy, bins, **kw)
    assert amount.lower < -1e8 and amount.extended
    count = bounds_from_noisy(noisy, bins, **kw, nonnegative=True)
    assert (count.lower, count.upper) == (0.0, 1.0) and not count.extended
    # and when nothing passes at all, the fallback does not pick a bin below zero either
    only_below = np.zeros(bins.size)
    only_below[zero - 3] = 50
    assert bounds_from_noisy(only_below, bins, 400.0, nonnegative=True).lower == 0.0


def test_a_declared_count_starts_at_zero_and_an_amount_keeps_its_sign():
    rng = np.random.default_rng(5)
    n = 2000
    df = pd.DataFrame({"kids": rng.integers(0, 2, n), "net": rng.integers(-5000, 5000, n)})
    df.loc[:4, "kids"] = -3  # values a count cannot hold: clamped to 0, never a reason to widen the range
    for seed in range(20):
        rel = dpcore.synthesize(df, "mst", 1.0, seed=seed, domain="dp", delta=1e-9)
        assert rel.domain["kids"].edges[0] == 0.0  # int64 is declared a count (the API's dtypes)
    sch = Schema((ColumnType("kids", "whole", False, "count"), ColumnType("net", "whole", False, "amount")))
    rel = dpcore.synthesize(df, "mst", 1.0, seed=0, domain="dp", delta=1e-9, schema=sch)
    assert rel.domain["kids"].edges[0] == 0.0 and rel.domain["net"].edges[0] < -1000
    assert (rel.sets[0]["kids"] >= 0).all() and (rel.sets[0]["net"] < 0).mean() > 0.3


def test_the_count_clamp_is_record_wise():
    # one added record moves one bin's count by one, whatever its value: the histogram's sensitivity stands
    bins = LogBins.for_kind(True)
    base = pd.Series(np.random.default_rng(0).integers(-50, 50, 500))

    def counts(s):
        return np.bincount(np.maximum(bins.index(s), bins.zero_bin), minlength=bins.size)

    for v in (-10**9, -7, -1, 0, 1, 63, 10**12):
        diff = counts(pd.concat([base, pd.Series([v])], ignore_index=True)) - counts(base)
        assert np.abs(diff).sum() == 1 and diff.min() == 0


def test_the_next_octave_out_is_kept_at_a_lower_threshold():
    bins = LogBins.for_kind(True)
    noisy = np.zeros(bins.size)
    zero = bins.zero_bin
    noisy[zero + 6] = 900  # [32, 64)
    noisy[zero + 5] = 250  # [16, 32): under τ, over the next-bin threshold
    noisy[zero + 7] = 120  # [64, 128): under both
    b = bounds_from_noisy(noisy, bins, tau=400.0, tau_next=200.0)
    assert (b.lower, b.upper) == (16.0, 63.0)


def test_the_split_follows_need_and_the_missing_level_is_declared():
    df = pd.DataFrame({"a": ["x", "y"] * 50, "n": np.arange(100, dtype=float), "b": [True, False] * 50,
                       "c": np.arange(100)})
    plan = plan_dp_domain(df, 1e-9, None)
    split = plan.split()
    assert split["b"] == 0 and split["n"] == 2 * split["a"] and abs(sum(split.values()) - 1) < 1e-12
    rel = dpcore.synthesize(df, "mst", 2.0, seed=1, domain="dp", delta=1e-9)
    dom = rel.domain
    assert dom["n"].na and dom["a"].na and not dom["c"].na  # float64 and text may be missing; int64 may not
    # a declared schema decides instead: text not nullable, the whole number a code
    sch = Schema((ColumnType("a", "text", False), ColumnType("n", "number", True), ColumnType("b", "boolean", False),
                  ColumnType("c", "whole", False, "code")))
    plan2 = plan_dp_domain(df, 1e-9, None, schema=sch)
    assert plan2.kinds["c"] == "levels" and plan2.nullable("a", df) is False


def test_the_share_of_missing_values_survives():
    rng = np.random.default_rng(3)
    n = 3000
    df = pd.DataFrame({"t": rng.choice(["a", "b", "c"], n), "v": rng.lognormal(3, 1, n)})
    df.loc[rng.random(n) < 0.2, "t"] = None
    df.loc[rng.random(n) < 0.1, "v"] = np.nan
    shares = {"t": [], "v": []}
    for seed in range(4):
        s = dpcore.synthesize(df, "mst", 1.0, seed=seed, domain="dp", delta=1e-9).sets[0]
        for c in shares:
            shares[c].append(s[c].isna().mean())
    assert abs(np.mean(shares["t"]) - 0.2) < 0.03 and abs(np.mean(shares["v"]) - 0.1) < 0.03


def test_the_forecast_reads_no_value_and_orders_by_the_record_count():
    df = pd.DataFrame({"a": ["x"] * 10, "v": np.ones(10)})
    plan = plan_dp_domain(df, 1e-9, 0.25)
    d = definition_for(1e-9 - plan.levels_delta)
    b = d.budget(Epsilon(1.0)) * plan.share
    order = {FOUND: 2, COARSE: 1, NOT_FOUND: 0}
    last = None
    for n in (100, 1_000, 5_000, 50_000):
        fc = {f.column: f for f in forecast(plan, b, n, Neighbours(), d)}
        now = (order[fc["a"].status], order[fc["v"].status])
        assert last is None or now >= last
        last = now
    assert last == (2, 2)
    small = {f.column: f for f in forecast(plan, b, 100, Neighbours(), d)}
    assert small["v"].status == NOT_FOUND and "declare it" in small["v"].what
    # the share it names would find it (the forecast at that share says so)
    fc = {f.column: f for f in forecast(plan, b, 4_000, Neighbours(), d)}
    need = fc["a"].share_needed
    if need is not None and need < 0.6:
        plan_b = plan_dp_domain(df, 1e-9, need)
        fc_b = {f.column: f for f in forecast(plan_b, d.budget(Epsilon(1.0)) * need, 4_000, Neighbours(), d)}
        assert order[fc_b["a"].status] >= order[fc["a"].status]


def test_with_zero_point_gives_zero_a_bin_of_its_own():
    w = ZERO_POINT_WIDTH
    assert w == 2.0 ** MIN_EXPONENT  # the resolution of the DP bounds' bin holding zero
    assert with_zero_point((0.0, 0.0003, 0.5, 8.0)) == (0.0, w, 0.5, 8.0)  # an inner edge inside zero's bin merges
    assert with_zero_point((-4.0, -1.0, 2.0, 8.0)) == (-4.0, -1.0, 0.0, w, 2.0, 8.0)
    assert with_zero_point((0.0, w)) == (0.0, w)  # only zero stood out
    assert with_zero_point((-2.0, 0.0005)) == (-2.0, 0.0, 0.0005)
    assert with_zero_point((0.5, 8.0)) == (0.5, 8.0)  # the range does not hold zero: unchanged
    assert with_zero_point((-8.0, -0.5)) == (-8.0, -0.5)


def test_decode_draws_zero_only_in_a_privately_found_zero_bin():
    codes = np.zeros(2000, dtype=np.int64)
    found = numeric_attribute("x", (0.0, ZERO_POINT_WIDTH, 1.0), origin=DP_BOUNDS)
    assert (found.decode(codes, np.random.default_rng(0)) == 0.0).all()
    declared = numeric_attribute("x", (0.0, ZERO_POINT_WIDTH, 1.0))  # the curator's bin keeps its uniform draw
    vals = declared.decode(codes, np.random.default_rng(0))
    assert (vals > 0).mean() > 0.99 and vals.max() < ZERO_POINT_WIDTH
    wider = numeric_attribute("x", (0.0, 0.01, 1.0), origin=DP_BOUNDS)  # wider than the resolution: uniform
    assert (wider.decode(codes, np.random.default_rng(0)) > 0).mean() > 0.99


@pytest.mark.parametrize("seed", [0, 1])
def test_a_column_mostly_zero_comes_out_with_its_zeros(seed):
    # a float column 70% zero with a tail up to a few thousand (as assets or affairs): before, the zeros came out
    # spread over a sliver [0, w) and the synthetic median was a sliver above the true 0
    rng = np.random.default_rng(100 + seed)
    n = 3000
    amount = np.where(rng.random(n) < 0.7, 0.0, np.round(rng.lognormal(5, 1.5, n), 2))
    df = pd.DataFrame({"amount": amount, "group": rng.integers(0, 3, n)})
    rel = dpcore.synthesize(df, "mst", 1.0, seed=seed, domain="dp", delta=1e-9)
    col = rel.diagnostics["dp_domain"]["columns"]["amount"]
    assert col["zero_point"] and ZERO_POINT_WIDTH in rel.domain["amount"].edges
    out = rel.sets[0]["amount"]
    assert out.median() == 0.0
    assert abs((out == 0).mean() - 0.7) < 0.05  # tolerance: MST's noise on one-way counts of 3,000 records
    assert (out > 10).mean() > 0.2  # the rest are not drawn into zero's bin
    # a continuous column through zero has no mass at zero: no zero point, no spike of exact zeros
    df2 = pd.DataFrame({"score": rng.normal(0, 1, n), "group": rng.integers(0, 3, n)})
    rel2 = dpcore.synthesize(df2, "mst", 1.0, seed=seed, domain="dp", delta=1e-9)
    assert not rel2.diagnostics["dp_domain"]["columns"]["score"]["zero_point"]
    assert (rel2.sets[0]["score"] == 0).mean() < 0.005
