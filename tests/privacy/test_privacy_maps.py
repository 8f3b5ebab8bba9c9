"""The ledger is built from the mechanisms' own privacy maps (docs/mechanisms.md).

Every registered method (the test iterates ``dpcore.synthesizers.REGISTRY``, so a method
added later is walked too) runs on a small table under both neighbour notions, with the
default noise, with real-valued (discretised Laplace) noise and with the sparse leaf
layer, and with DP quantile bin edges (``dp_bins``), while the mechanisms record each
instance that drew noise or made a choice. The ledger's charges must be exactly those
mechanisms, one charge per run, each with the ε the mechanism's map gives at the charge's
sensitivity; that sensitivity must be the one the mechanism was run at (the exponential
mechanism is told it) or, for count noise, the count-table sensitivity of the release's
neighbour notion (1 add/remove, 2 replace).

The maps themselves are walked under both privacy definitions: every mechanism's pure-ε map
and its zCDP map (ρ = ε²/2 for pure ε, ε²/8 for the exponential mechanism, Δ₂²/(2σ²) for the
discrete Gaussian) are checked against the mechanism's own output law on worst-case
neighbouring inputs, by brute-force Rényi (and, for (ε, δ), hockey-stick) divergences.
"""
import dataclasses
from collections import Counter

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.privacy import mechanisms as M
from dpcore.privacy import zcdp
from dpcore.privacy.gaussian import DiscreteGaussian
from dpcore.privacy.ledger import Charge
from dpcore.synthesizers import REGISTRY
from tests.privacy.audit import hockey_stick, renyi_divergence

#: option variants every method is walked with (a method that has no such option skips it)
VARIANTS = {"default": {}, "laplace noise": {"noise": "laplace"}, "sparse leaves": {"max_cells": 8},
            # DP quantile bin edges on c (exponential mechanism, rank utility) before the method runs
            "dp bins": {"dp_bins": {"c": {"bins": 2, "lower": 0, "upper": 3, "method": "quantiles"}},
                        "bins_share": 0.2},
            # ipf: every attribute's one-way margin measured besides the listed margins
            "one-way share": {"one_way_share": 0.4}}
#: options of synthesize itself, not of the method
RELEASE_OPTIONS = ("dp_bins", "bins_share")
COUNT_NOISE = {M.DiscreteLaplace.name, M.Laplace.name}


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(3)
    n = 240
    a = rng.integers(0, 2, n)
    return pd.DataFrame({"a": a, "b": np.where(rng.random(n) < 0.6, a, rng.integers(0, 3, n)),
                         "c": rng.integers(0, 3, n), "d": [f"d{x}" for x in rng.integers(0, 2, n)]})


def _spy(monkeypatch):
    """Record (mechanism, sensitivity it was run at or None) for every run. A count
    mechanism runs through ``release`` or, in the sparse leaf layer, through ``sample``;
    a ``sample`` made inside a ``release`` (the discretised Laplace's steps) is the same run."""
    ran, depth = [], [0]

    def wrap(cls, meth, sens_arg=None):
        original = getattr(cls, meth)

        def wrapped(self, *args, _original=original, **kw):
            if depth[0] == 0:
                ran.append((self, args[sens_arg] if sens_arg is not None else None))
            depth[0] += 1
            try:
                return _original(self, *args, **kw)
            finally:
                depth[0] -= 1

        monkeypatch.setattr(cls, meth, wrapped)

    for cls in (M.DiscreteLaplace, M.Laplace, DiscreteGaussian):
        wrap(cls, "release")
        wrap(cls, "sample")
    wrap(M.ExponentialMechanism, "select", sens_arg=1)  # select(scores, sensitivity, rng)
    return ran


def _release(table, method, notion, options):
    dom = dpcore.infer_domain(table).declared()
    try:
        REGISTRY[method].resolve(dom, method, **{k: v for k, v in options.items() if k not in RELEASE_OPTIONS})
    except dpcore.OptionError as exc:
        pytest.skip(f"{method} has no such option: {exc}")
    return dpcore.synthesize(table, method, 1.3, sets=2, seed=4, domain=dom, neighbours=notion, **options)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("notion", ["add_remove", "replace"])
@pytest.mark.parametrize("method", sorted(REGISTRY))
def test_ledger_charges_are_the_maps_of_the_mechanisms_that_ran(monkeypatch, table, method, notion, variant):
    ran = _spy(monkeypatch)
    try:
        rel = _release(table, method, notion, VARIANTS[variant])
    except dpcore.ResourceError as exc:  # e.g. ipf's dense table above max_cells: nothing ran, nothing charged
        assert variant == "sparse leaves", exc
        pytest.skip(f"{method} refuses the variant: {exc}")
    assert ran, "no mechanism ran"
    assert _mismatches(rel, ran) == []
    assert rel.ledger.epsilon == pytest.approx(1.3, abs=1e-12)


@pytest.mark.parametrize("notion", ["add_remove", "replace"])
@pytest.mark.parametrize("method", ["flat_laplace", "mst", "aim"])
def test_privtree_dp_bins_charge_the_map_of_the_tree_that_ran(monkeypatch, table, method, notion):
    """dp_bins by PrivTree inside public bounds: one charge for the whole tree, its ε the PrivTree map of the
    scale every node test drew at (at the notion's count sensitivity), within the share; every other charge is
    one run, as above."""
    from dpcore.measure.privtree import PrivTreeNoise
    ran = _spy(monkeypatch)
    rel = _release(table, method, notion, {"dp_bins": {"c": {"lower": 0, "upper": 3, "method": "privtree"}},
                                           "bins_share": 0.2})
    trees = [c for _, c in rel.ledger.charges() if c.mechanism.startswith("privtree")]
    assert len(trees) == 1
    tree, hs = trees[0], rel.neighbours.histogram_sensitivity
    assert tree.sensitivity == hs and tree.neighbours == rel.neighbours.label
    assert tree.epsilon == pytest.approx(PrivTreeNoise(tree.scale).epsilon(hs), rel=1e-12)
    assert 0.2 * 1.3 * (1 - 1e-6) <= tree.epsilon <= 0.2 * 1.3
    at = round(tree.scale, 12)
    drawn = [m for m, _ in ran if m.name == M.DiscreteLaplace.name and round(m.scale, 12) == at]
    assert drawn, "the tree drew no noise at its charged scale"
    rest = [(m, s) for m, s in ran if not any(m is d for d in drawn)]
    assert _mismatches(rel, rest, skip=lambda c: c is tree) == []
    assert rel.ledger.epsilon == pytest.approx(1.3, abs=1e-12)


def _key(name: str, scale: float):
    return name.split(" ")[0], round(scale, 12)


def _scale(m) -> float:
    """A mechanism's noise parameter as its ledger charge records it (σ for the discrete Gaussian)."""
    return m.sigma if m.name == DiscreteGaussian.name else m.scale


def _mismatches(rel, ran, skip=lambda c: False) -> list:
    """Every way the ledger of ``rel`` differs from the maps of the mechanisms in ``ran`` (charges for which
    ``skip`` is true left out: a PrivTree charge covers many runs, checked on its own)."""
    spent = [c for _, c in rel.ledger.charges() if c.epsilon > 0 and not skip(c)]
    charged = Counter(_key(c.mechanism, c.scale) for c in spent)
    used = Counter(_key(m.name, _scale(m)) for m, _ in ran)
    if charged != used:  # one charge per mechanism run, matched by kind and scale
        return [f"charged {dict(charged)} but ran {dict(used)}"]
    run_at, by_key = {}, {}
    for m, sens in ran:
        run_at.setdefault(_key(m.name, _scale(m)), set()).add(sens)
        by_key[_key(m.name, _scale(m))] = m
    hs = rel.neighbours.histogram_sensitivity
    bad = []
    for c in spent:
        k = _key(c.mechanism, c.scale)
        m = by_key[k]
        if m.name == DiscreteGaussian.name:
            # a zCDP charge: its ρ must be the map's at the charge's L2 sensitivity
            if getattr(c, "rho", None) != pytest.approx(m.rho(c.sensitivity), rel=1e-12):
                bad.append(f"{c.label}: ρ {getattr(c, 'rho', None)} is not the map's {m.rho(c.sensitivity)}")
            continue
        if c.epsilon != pytest.approx(m.epsilon(c.sensitivity), rel=1e-12):
            bad.append(f"{c.label}: ε {c.epsilon} is not the map's {m.epsilon(c.sensitivity)}")
        if c.neighbours != rel.neighbours.label:
            bad.append(f"{c.label}: notion {c.neighbours!r}")
        if m.name in COUNT_NOISE and c.sensitivity != hs:
            # counts, margins, cells and the record count (add/remove only) all move by hs
            bad.append(f"{c.label}: count sensitivity {c.sensitivity}, the notion's is {hs}")
        if m.name not in COUNT_NOISE and run_at[k] != {c.sensitivity}:
            bad.append(f"{c.label}: charged at Δ = {c.sensitivity}, run at {run_at[k]}")
    return bad


def test_spy_catches_a_charge_without_a_mechanism(monkeypatch, table):
    """The check can fail: a ledger entry with no mechanism behind it breaks the match."""
    dom = dpcore.infer_domain(table).declared()
    ran = _spy(monkeypatch)
    rel = dpcore.synthesize(table, "flat_laplace", 1.0, seed=1, domain=dom)
    assert _mismatches(rel, ran) == []
    rel.ledger.cap = None  # the release's own cap would refuse the forged entry
    rel.ledger._record(Charge(label="phantom", epsilon=0.1, mechanism="discrete_laplace", sensitivity=1.0, scale=10.0,
                             subset="-"))
    assert _mismatches(rel, ran)


def test_the_check_catches_counts_charged_at_sensitivity_1_under_replace(monkeypatch, table):
    """The audit's finding: under replace-one every count was charged at sensitivity 1."""
    dom = dpcore.infer_domain(table).declared()
    ran = _spy(monkeypatch)
    rel = dpcore.synthesize(table, "flat_laplace", 1.0, seed=1, domain=dom, neighbours="replace")
    assert _mismatches(rel, ran) == []
    group, charge = _last_charge(rel.ledger)
    # the same noise read at sensitivity 1: its ε halves and agrees with the map, so only the notion check sees it
    group.children[-1] = dataclasses.replace(charge, sensitivity=1.0, epsilon=charge.epsilon / 2)
    assert any("count sensitivity 1.0" in b for b in _mismatches(rel, ran))


def test_the_check_catches_a_selection_charged_at_another_sensitivity(monkeypatch, table):
    dom = dpcore.infer_domain(table).declared()
    ran = _spy(monkeypatch)
    rel = dpcore.synthesize(table, "privbayes", 1.0, seed=1, domain=dom)
    assert _mismatches(rel, ran) == []
    m, sens = next((m, s) for m, s in ran if m.name == "exponential")
    ran[ran.index((m, sens))] = (m, sens / 2)
    assert any("run at" in b for b in _mismatches(rel, ran))


def _last_charge(ledger):
    """(the group holding it, the last charge) of a ledger tree."""
    for c in reversed(ledger.children):
        if hasattr(c, "children"):
            found = _last_charge(c)
            if found:
                return found
        else:
            return ledger, c
    return None


def test_survey_post_stratification_charges_are_the_maps_of_its_mechanisms(monkeypatch):
    """The survey tool's bin selection and join table are charged from the same maps. (Its
    weighted count uses smooth sensitivity, a data-dependent ε bound recorded with its note.)"""
    from dpcore.survey import bins as B
    from dpcore.survey import poststrat as ps

    rng = np.random.default_rng(1)
    ages = ["0-12", "13-18", "19-39", "40-64", "65+"]
    df = pd.DataFrame({"age": rng.choice(ages, 3000), "sex": rng.choice(["F", "M"], 3000)})
    age = B.binning("age", ages, {"separate": {a: a for a in ages}, "all": {a: "0+" for a in ages}})
    totals = {"age": {a: 100_000 for a in ages}, "sex": {"F": 260_000, "M": 240_000}}
    ran = _spy(monkeypatch)
    rel = ps.poststratify_release(df, [age, B.binning("sex", ["F", "M"])], totals, np.ones(3000, bool),
                                  epsilon_select=0.1, epsilon_table=0.5, epsilon_count=2.0, rng=rng)
    mapped = [c for _, c in rel.ledger.charges() if c.mechanism.split(" ")[0] in COUNT_NOISE | {"exponential"}]
    assert Counter(_key(c.mechanism, c.scale) for c in mapped) == Counter(_key(m.name, m.scale) for m, _ in ran)
    for c in mapped:
        m, sens = next((m, s) for m, s in ran if _key(m.name, m.scale) == _key(c.mechanism, c.scale))
        assert c.epsilon == pytest.approx(m.epsilon(c.sensitivity), rel=1e-12)
        assert sens is None or sens == c.sensitivity
    assert {c.label for c in mapped} == {"bins of age", "join table"}


# ---------------------------------------------------------------- the maps under both definitions

#: α grid of the Rényi checks
ALPHAS = (1.01, 1.5, 2.0, 3.0, 8.0, 32.0)


def _integer_noise_laws(noise, shift: int):
    """log P and log Q of integer noise at 0 and at ``shift``, over every value that matters."""
    if isinstance(noise, DiscreteGaussian):  # in logs: its far tail underflows as a pmf
        ks = np.arange(-int(80 * noise.sigma) - 80 - shift, int(80 * noise.sigma) + 81 + shift)
        return noise.log_pmf(ks), noise.log_pmf(ks - shift)
    steps = noise._steps if isinstance(noise, M.Laplace) else noise  # the discretised Laplace's grid steps
    ks = np.arange(-int(80 * steps.scale) - 80 - shift, int(80 * steps.scale) + 81 + shift)
    return np.log(steps.pmf(ks)), np.log(steps.pmf(ks - shift))


def _laws(case):
    """(claimed ε or None, claimed ρ, [(log P, log Q)] on worst-case neighbours) of one case."""
    kind, param, sens = case
    if kind == "discrete_laplace":
        m = M.DiscreteLaplace.calibrate(param, sens)
        return m.epsilon(sens), zcdp.rho_of_pure(m.epsilon(sens)), [_integer_noise_laws(m, sens)]
    if kind == "laplace":
        m = M.Laplace.calibrate(param, sens)
        shift = int(np.floor(sens / m.grid)) + 1  # worst case in grid steps, rounding included
        return m.epsilon(sens), zcdp.rho_of_pure(m.epsilon(sens)), [_integer_noise_laws(m, shift)]
    if kind == "exponential":
        m = M.ExponentialMechanism.calibrate(param, sens)
        rng = np.random.default_rng(8)
        u = np.vstack([[0.0, 1.0, -2.0, 0.5], rng.normal(0, 3 * sens, (40, 4))])
        moves = np.vstack([[sens, -sens, 0.0, sens], rng.uniform(-sens, sens, (40, 4))])
        moves[1:8] = sens * np.sign(moves[1:8])  # extreme moves too
        p = np.log(m.probabilities(u, sens))
        q = np.log(m.probabilities(u + moves, sens))
        return m.epsilon(sens), zcdp.rho_of_exponential(m.epsilon(sens)), list(zip(p, q))
    if kind == "discrete_gaussian":
        m = DiscreteGaussian.calibrate_rho(param, sens)
        return None, m.rho(sens), [_integer_noise_laws(m, sens)]
    raise AssertionError(kind)


#: (mechanism, ε or ρ it is calibrated to, sensitivity); GeneralizedCauchy has no fixed map
#: (smooth sensitivity: its ε depends on the data through S) and is left out on purpose.
MAP_CASES = [("discrete_laplace", 1.0, 1), ("discrete_laplace", 0.3, 2), ("laplace", 1.0, 1.0),
             ("exponential", 1.0, 1.0), ("exponential", 2.0, 3.0),
             ("discrete_gaussian", 0.05, 1), ("discrete_gaussian", 0.5, 2), ("discrete_gaussian", 2.0, 1)]


def test_the_map_walk_covers_every_mechanism():
    walked = {kind for kind, _, _ in MAP_CASES}
    mechanisms = {cls.name for cls in vars(M).values()
                  if isinstance(cls, type) and cls.__module__ == M.__name__
                  and isinstance(getattr(cls, "name", None), str)}
    assert walked | {M.GeneralizedCauchy.name} == mechanisms | {DiscreteGaussian.name}


@pytest.mark.parametrize("case", MAP_CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_each_map_holds_under_both_definitions(case):
    """Pure ε: the largest log-ratio of the two output laws is at most ε. zCDP: D_α ≤ αρ for
    every α of the grid. (ε, δ): at the converted ε for δ = 10⁻⁹ the hockey-stick divergence is
    at most δ. All on the mechanism's own pmf or exact selection probabilities."""
    eps, rho, pairs = _laws(case)
    closest = 0.0  # the largest D_α/(αρ) seen: the maps are nearly tight, so the check has teeth
    for lp, lq in pairs:
        both = np.isfinite(lp) & np.isfinite(lq)
        assert np.array_equal(both, np.isfinite(lp) | np.isfinite(lq)), "an output possible under one input only"
        lp, lq = lp[both], lq[both]
        if eps is not None:
            assert np.max(np.abs(lp - lq)) <= eps * (1 + 1e-9)
        for alpha in ALPHAS:
            d = max(renyi_divergence(lp, lq, alpha), renyi_divergence(lq, lp, alpha))
            assert d <= alpha * rho * (1 + 1e-9) + 1e-15
            closest = max(closest, d / (alpha * rho))
        e_conv = zcdp.epsilon_of_rho(rho, 1e-9)
        assert max(hockey_stick(lp, lq, e_conv), hockey_stick(lq, lp, e_conv)) <= 1e-9
    assert closest >= 0.7  # measured 0.73 (discretised Laplace) to 1.0 (discrete Gaussian)
