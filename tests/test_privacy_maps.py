"""The ledger is built from the mechanisms' own privacy maps (docs/mechanisms.md).

Every registered method (the test iterates ``dpcore.synthesizers.REGISTRY``, so a method
added later is walked too) runs on a small table under both neighbour notions, with the
default noise, with real-valued (discretised Laplace) noise and with the sparse leaf
layer, and with DP quantile bin edges (``dp_bins``), while the mechanisms record each instance that drew noise or made a choice. The
ledger's charges must be exactly those mechanisms, one charge per run, each with the ε
the mechanism's map gives at the charge's sensitivity; that sensitivity must be the one
the mechanism was run at (the exponential mechanism is told it) or, for count noise, the
count-table sensitivity of the release's neighbour notion (1 add/remove, 2 replace).
"""
import dataclasses
from collections import Counter

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.privacy import mechanisms as M
from dpcore.privacy.ledger import Charge
from dpcore.synthesizers import REGISTRY

#: option variants every method is walked with (a method that has no such option skips it)
VARIANTS = {"default": {}, "laplace noise": {"noise": "laplace"}, "sparse leaves": {"max_cells": 8},
            # DP quantile bin edges on c (exponential mechanism, rank utility) before the method runs
            "dp bins": {"dp_bins": {"c": {"bins": 2, "lower": 0, "upper": 3}}, "bins_share": 0.2},
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

    for cls in (M.DiscreteLaplace, M.Laplace):
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


def _key(name: str, scale: float):
    return name.split(" ")[0], round(scale, 12)


def _mismatches(rel, ran) -> list:
    """Every way the ledger of ``rel`` differs from the maps of the mechanisms in ``ran``."""
    spent = [c for _, c in rel.ledger.charges() if c.epsilon > 0]
    charged = Counter(_key(c.mechanism, c.scale) for c in spent)
    used = Counter(_key(m.name, m.scale) for m, _ in ran)
    if charged != used:  # one charge per mechanism run, matched by kind and scale
        return [f"charged {dict(charged)} but ran {dict(used)}"]
    run_at, by_key = {}, {}
    for m, sens in ran:
        run_at.setdefault(_key(m.name, m.scale), set()).add(sens)
        by_key[_key(m.name, m.scale)] = m
    hs = rel.neighbours.histogram_sensitivity
    bad = []
    for c in spent:
        k = _key(c.mechanism, c.scale)
        m = by_key[k]
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
    from dpcore.survey import poststrat as ps

    rng = np.random.default_rng(1)
    ages = ["0-12", "13-18", "19-39", "40-64", "65+"]
    df = pd.DataFrame({"age": rng.choice(ages, 3000), "sex": rng.choice(["F", "M"], 3000)})
    age = ps.binning("age", ages, {"separate": {a: a for a in ages}, "all": {a: "0+" for a in ages}})
    totals = {"age": {a: 100_000 for a in ages}, "sex": {"F": 260_000, "M": 240_000}}
    ran = _spy(monkeypatch)
    rel = ps.poststratify_release(df, [age, ps.binning("sex", ["F", "M"])], totals, np.ones(3000, bool),
                                  epsilon_select=0.1, epsilon_table=0.5, epsilon_count=2.0, rng=rng)
    mapped = [c for _, c in rel.ledger.charges() if c.mechanism.split(" ")[0] in COUNT_NOISE | {"exponential"}]
    assert Counter(_key(c.mechanism, c.scale) for c in mapped) == Counter(_key(m.name, m.scale) for m, _ in ran)
    for c in mapped:
        m, sens = next((m, s) for m, s in ran if _key(m.name, m.scale) == _key(c.mechanism, c.scale))
        assert c.epsilon == pytest.approx(m.epsilon(c.sensitivity), rel=1e-12)
        assert sens is None or sens == c.sensitivity
    assert {c.label for c in mapped} == {"bins of age", "join table"}
