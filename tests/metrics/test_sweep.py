"""Tests for dpcore.metrics.sweep and the evaluate/sweep CLI helpers.  Fixed seeds."""

from __future__ import annotations

import argparse
import json
import threading

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.cli.metrics import add_evaluate_parser, add_sweep_parser
from dpcore.metrics import sweep as sweep_mod
from dpcore.metrics.sweep import clear_cache, run_seed, sweep

METHODS = [("STEPS-2", "steps", {"layers": 2}), ("flat", "flat_laplace", {})]
EPS = [0.5, 2.0]
MEASURES = ("s_pmse", "ru", "l1")


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    n = 300
    a = rng.integers(0, 3, n)
    return pd.DataFrame({
        "a": np.array(["x", "y", "z"])[a],
        "b": np.where(rng.random(n) < 0.7, a % 2, 1 - a % 2).astype(str),
        "c": rng.choice(["p", "q", "r", "s"], n),
    })


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()
    yield
    clear_cache()


def _counting(monkeypatch):
    calls = []
    real = dpcore.synthesize

    def counted(*args, **kwargs):
        calls.append(kwargs.get("seed"))
        return real(*args, **kwargs)

    monkeypatch.setattr(dpcore, "synthesize", counted)
    return calls


def test_sweep_shape_columns_and_progress(data):
    seen = []
    df = sweep(data, METHODS, EPS, reps=2, measures=MEASURES,
               progress=lambda done, total, msg: seen.append((done, total, msg)))
    assert list(df.columns) == ["method", "options", "epsilon", "rep", "measure", "value"]
    assert len(df) == len(METHODS) * len(EPS) * 2 * len(MEASURES)  # 24 rows
    assert set(df["method"]) == {"STEPS-2", "flat"}
    assert set(df["measure"]) == set(MEASURES)
    assert json.loads(df.loc[df["method"] == "STEPS-2", "options"].iloc[0]) == {"layers": 2}
    assert df.groupby(["method", "epsilon", "rep"]).size().eq(len(MEASURES)).all()
    assert df["value"].notna().all()
    # progress: once per run, done = 1, 2, …, total
    total = len(METHODS) * len(EPS) * 2
    assert [d for d, _, _ in seen] == list(range(1, total + 1))
    assert all(t == total for _, t, _ in seen)
    assert df.attrs["cancelled"] is False and df.attrs["done"] == total
    assert "NOT differentially private" in df.attrs["not_dp"]


def test_sweep_cancel_midway_returns_partial_and_flags(data):
    stop = threading.Event()

    def progress(done, total, msg):
        if done == 3:
            stop.set()

    df = sweep(data, METHODS, EPS, reps=2, measures=MEASURES, progress=progress, cancel=stop)
    assert df.attrs["cancelled"] is True
    assert df.attrs["done"] == 3 and df.attrs["total"] == 8
    assert len(df) == 3 * len(MEASURES)  # fewer than the 24 of a full sweep


def test_sweep_cancel_before_start_returns_empty(data):
    stop = threading.Event()
    stop.set()
    df = sweep(data, METHODS, EPS, reps=2, measures=MEASURES, cancel=stop)
    assert df.empty and df.attrs["cancelled"] is True
    assert list(df.columns) == ["method", "options", "epsilon", "rep", "measure", "value"]


def test_sweep_cache_hit_makes_no_new_release(data, monkeypatch, tmp_path):
    calls = _counting(monkeypatch)
    first = sweep(data, METHODS, EPS, reps=2, measures=MEASURES, seed=7, cache_dir=tmp_path)
    assert len(calls) == 8 and first.attrs["releases"] == 8
    second = sweep(data, METHODS, EPS, reps=2, measures=MEASURES, seed=7, cache_dir=tmp_path)
    assert len(calls) == 8  # every run came from the in-memory cache
    assert second.attrs["cache_hits"] == 8 and second.attrs["releases"] == 0
    pd.testing.assert_frame_equal(first, second)
    # on-disk cache alone (memory cleared) also avoids new releases
    clear_cache()
    third = sweep(data, METHODS, EPS, reps=2, measures=MEASURES, seed=7, cache_dir=tmp_path)
    assert len(calls) == 8
    pd.testing.assert_frame_equal(first, third)
    assert len(list(tmp_path.glob("*.json"))) == 8
    # a different base seed is a different key: new releases
    sweep(data, METHODS[:1], EPS[:1], reps=1, measures=MEASURES, seed=8)
    assert len(calls) == 9
    # a new measure for cached runs needs the release again; cached ones are reused
    sweep(data, METHODS[:1], EPS[:1], reps=1, measures=("s_pmse", "p1"), seed=7)
    assert len(calls) == 10


def test_sweep_is_reproducible_and_run_seeds_differ(data, monkeypatch):
    calls = _counting(monkeypatch)
    a = sweep(data, METHODS, EPS, reps=2, measures=MEASURES, seed=3)
    clear_cache()
    b = sweep(data, METHODS, EPS, reps=2, measures=MEASURES, seed=3)
    pd.testing.assert_frame_equal(a, b)
    assert len(calls) == 16 and len(set(calls)) == 8  # 8 distinct run seeds, each used twice
    assert run_seed(3, "steps", {"layers": 2}, 0.5, 1) == run_seed(3, "steps", {"layers": 2}, 0.5, 1)
    assert run_seed(3, "steps", {"layers": 2}, 0.5, 1) != run_seed(3, "steps", {"layers": 2}, 0.5, 2)
    assert 0 <= run_seed(3, "steps", {}, 0.5, 1) < 2**63


def test_sweep_method_names_options_and_specks(data):
    df = sweep(data, ["steps", "flat_laplace"], [1.0], reps=1, measures=("specks", "pmse"),
               method_options={"steps": {"layers": 1}})
    assert len(df) == 2 * 2
    assert json.loads(df.loc[df["method"] == "steps", "options"].iloc[0]) == {"layers": 1}
    assert df["value"].between(0, 1).all()


def test_sweep_rejects_bad_input(data):
    from dpcore.errors import OptionError

    with pytest.raises(OptionError, match="method"):
        sweep(data, ["nope"], [1.0], reps=1)
    with pytest.raises(OptionError, match="measure"):
        sweep(data, ["steps"], [1.0], reps=1, measures=("bogus",))
    with pytest.raises(OptionError, match="epsilon"):
        sweep(data, ["steps"], [0.0], reps=1)


def _parser():
    p = argparse.ArgumentParser(prog="dpcore")
    sub = p.add_subparsers(dest="command", required=True)
    add_evaluate_parser(sub)
    add_sweep_parser(sub)
    return p


def test_cli_evaluate_json_and_table(data, tmp_path, capsys):
    orig = tmp_path / "orig.csv"
    syn1, syn2 = tmp_path / "s1.csv", tmp_path / "s2.csv"
    data.to_csv(orig, index=False)
    data.sample(frac=1.0, replace=True, random_state=1).to_csv(syn1, index=False)
    data.sample(frac=1.0, replace=True, random_state=2).to_csv(syn2, index=False)
    args = _parser().parse_args(["evaluate", str(orig), str(syn1), str(syn2), "--json"])
    assert args.func(args) == 0
    out = json.loads(capsys.readouterr().out)
    for k in ("s_pmse_2way_mean", "s_pmse_2way_worst", "p0", "p1", "ru", "ru_pct_of_p1", "specks", "pmse"):
        assert k in out
    assert len(out["per_set"]) == 2
    args = _parser().parse_args(["evaluate", str(orig), str(syn1), "--measures", "ru,l1"])
    assert args.func(args) == 0
    text = capsys.readouterr().out
    assert "ru" in text and "l1" in text and "NOT differentially private" in text


def test_cli_sweep_writes_tidy_csv(data, tmp_path, capsys):
    inp, out = tmp_path / "in.csv", tmp_path / "res.csv"
    data.to_csv(inp, index=False)
    args = _parser().parse_args(["sweep", str(inp), "--methods", "steps,flat_laplace", "--epsilons", "0.5,1",
                                 "--reps", "2", "--out", str(out), "--layers", "1", "--measures", "s_pmse,ru"])
    assert args.func(args) == 0
    res = pd.read_csv(out)
    assert len(res) == 2 * 2 * 2 * 2
    assert json.loads(res.loc[res["method"] == "steps", "options"].iloc[0]) == {"layers": 1}
    assert "[8/8]" in capsys.readouterr().err
    from dpcore.cli.commands import main

    assert main(["sweep", str(inp), "--methods", "nope", "--epsilons", "1", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "nope" in err[0]
    assert sweep_mod is not None


def test_cli_sweep_at_the_designs_m_and_delta(data, tmp_path, capsys, monkeypatch):
    """[real-tables] item 5: a sweep can release as the design does: m sets, under (ε, δ)."""
    import dpcore

    inp, out = tmp_path / "in.csv", tmp_path / "res.csv"
    data.to_csv(inp, index=False)
    seen = {}
    real = dpcore.synthesize

    def spy(*a, **k):
        seen.update(k)
        return real(*a, **k)

    monkeypatch.setattr(dpcore, "synthesize", spy)
    args = _parser().parse_args(["sweep", str(inp), "--methods", "flat_laplace", "--epsilons", "1", "--reps", "1",
                                 "--out", str(out), "--sets", "3", "--delta", "1e-9", "--measures", "s_pmse"])
    assert args.func(args) == 0
    res = pd.read_csv(out)
    assert json.loads(res["options"].iloc[0]) == {"delta": 1e-9} and len(res) == 1
    assert seen["sets"] == 3 and seen["delta"] == 1e-9
    capsys.readouterr()


def test_sweep_measures_numeric_columns_on_their_bins():
    """[honest-flow] item 7: synthetic numeric values are drawn inside their bins, so compared value by
    value they never match an original value and SPECKS sat at 1 for every ε. On the domain's cells the
    measure separates: a large ε gives a SPECKS far below 1, and far below a tiny ε's."""
    from dpcore.metrics.evaluate import compute_measures, domain_cells

    rng = np.random.default_rng(3)
    n = 1500
    df = pd.DataFrame({"age": rng.integers(18, 90, n).astype(float), "sex": rng.choice(["F", "M"], n),
                       "region": rng.choice(list("NSEW"), n)})
    dom = dpcore.infer_domain(df, numeric={"age": [18, 30, 45, 60, 90]}).declared()
    res = sweep(df, [("ipf", "ipf", {})], [0.02, 20.0], reps=1, measures=("specks",), domain=dom,
                specks_model="main")
    by_eps = dict(zip(res["epsilon"], res["value"]))
    assert by_eps[20.0] < 0.2 and by_eps[20.0] < by_eps[0.02]
    # the raw-value comparison this replaces: every synthetic age is new, the groups separate
    rel = dpcore.synthesize(df, method="ipf", epsilon=20.0, sets=1, seed=1, domain=dom)
    raw, _, _ = compute_measures(df, rel.sets, ["specks"], specks_model="main")
    cells, _, _ = compute_measures(domain_cells(df, dom), [domain_cells(s, dom) for s in rel.sets], ["specks"],
                                   specks_model="main")
    assert raw["specks"] > 0.99 and cells["specks"] < 0.2
    # a table of categorical columns: the same figures either way
    cat = df.drop(columns="age")
    cdom = dpcore.infer_domain(cat).declared()
    crel = dpcore.synthesize(cat, method="ipf", epsilon=1.0, sets=1, seed=2, domain=cdom)
    a, _, _ = compute_measures(cat, crel.sets, ["s_pmse", "ru"])
    b, _, _ = compute_measures(domain_cells(cat, cdom), [domain_cells(s, cdom) for s in crel.sets], ["s_pmse", "ru"])
    assert a == pytest.approx(b)
