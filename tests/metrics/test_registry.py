"""The metric registry (dpcore.metrics.registry): each measure once, and what the evaluation, the sweep,
the charts and the Trade-offs page use is what it holds ([typed-contracts] item 5). The page's side is
tests/app/test_app.py::test_the_tradeoffs_page_sweeps_and_plots_the_registrys_headline_measures."""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.errors import OptionError
from dpcore.metrics import evaluate as evaluate_mod
from dpcore.metrics.evaluate import DEFAULT_MEASURES, MEASURES, compute_measures, evaluate
from dpcore.metrics.registry import (
    METRICS,
    RISK_UTILITY,
    compute_functions,
    disclosure_risk,
    headline,
    metric,
    propensity,
    two_way_tables,
)
from dpcore.metrics.sweep import clear_cache, sweep


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    n = 240
    a = rng.integers(0, 3, n)
    return pd.DataFrame({"a": np.array(["x", "y", "z"])[a], "b": np.where(rng.random(n) < 0.7, a % 2, 1 - a % 2)
                         .astype(str), "c": rng.choice(["p", "q", "r"], n)})


def test_each_measure_is_registered_once_with_everything_the_app_shows():
    assert len({m.key for m in METRICS.values()}) == len(METRICS)
    assert all(name == m.name for name, m in METRICS.items())
    for m in METRICS.values():
        assert m.label and m.title and m.description and m.unit and m.symbol and callable(m.compute), m.name
        assert m.kind in ("utility", "risk"), m.name
        assert m.axis_title().startswith(f"{m.label} ({m.unit}")
    assert metric("s_pmse").axis_title() == "mean two-way S_pMSE (ratio, log scale)"
    with pytest.raises(OptionError, match="unknown measure 'nope'; choose from s_pmse"):
        metric("nope")


def test_the_headline_measures_are_numbered_from_one_and_the_trade_off_axes_are_registered():
    places = [m.headline for m in headline()]
    assert places == list(range(1, len(places) + 1)), places
    assert [m.name for m in headline()] == ["specks", "s_pmse", "ru_pct_of_p1"]  # the page's three, in its order
    utility, risk = (metric(n) for n in RISK_UTILITY)
    assert (utility.kind, risk.kind) == ("utility", "risk") and utility.log_scale


def test_every_glossary_term_of_a_measure_exists():
    from dpcore.studio.glossary import term

    for m in METRICS.values():
        if m.glossary:
            assert term(m.glossary).title, m.name


def test_evaluate_names_and_defaults_come_from_the_registry():
    assert MEASURES == {m.name: m.key for m in METRICS.values()}
    assert DEFAULT_MEASURES == tuple(n for n, m in METRICS.items() if m.default)
    assert "l1" not in DEFAULT_MEASURES
    for m in METRICS.values():  # the module's table of keys lists every one
        assert f"``{m.key}``" in evaluate_mod.__doc__, m.key


def test_each_computing_function_runs_once_for_the_measures_it_owns(data, monkeypatch):
    assert compute_functions(["ru", "s_pmse_worst", "s_pmse", "pmse"]) == [two_way_tables, disclosure_risk,
                                                                          propensity]
    calls = []
    for name, real in (("two_way_tables", two_way_tables), ("disclosure_risk", disclosure_risk)):

        def counted(*args, _real=real, _name=name, **kwargs):
            calls.append(_name)
            return _real(*args, **kwargs)

        for m in [m for m in METRICS.values() if m.compute is real]:  # the family's entries share one function
            monkeypatch.setitem(METRICS, m.name, dataclasses.replace(m, compute=counted))
    syn = [data.sample(frac=1, replace=True, random_state=i) for i in range(2)]
    means, per_set, _ = compute_measures(data, syn, ["s_pmse", "ru", "s_pmse_worst", "p1"])
    assert sorted(calls) == ["disclosure_risk", "two_way_tables"]
    assert list(means) == ["s_pmse", "ru", "s_pmse_worst", "p1"]


def test_every_registered_measure_is_computed_by_the_evaluation_and_the_sweep(data):
    """A measure added to the registry is computed, evaluated and swept; one the evaluation computes is
    registered (the evaluation has no measure of its own: it calls the registry's functions)."""
    names = list(METRICS)
    rel = dpcore.synthesize(data, method="flat_laplace", epsilon=2.0, sets=2, seed=1)
    means, per_set, _ = compute_measures(data, rel.sets, names, specks_model="main")
    assert list(means) == names and all(list(p) == ["set", *names] for p in per_set)
    out = evaluate(data, rel.sets, measures=names, specks_model="main")
    assert {m.key for m in METRICS.values()} <= set(out)
    clear_cache()
    df = sweep(data, ["flat_laplace"], [1.0], reps=1, measures=names, specks_model="main")
    assert list(df["measure"]) == names and df["value"].notna().any()
