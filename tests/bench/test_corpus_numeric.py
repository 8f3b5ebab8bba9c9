"""bench/accuracy/corpus_numeric.py's pure helpers: what dpmm is given and how its output is read back, the scores per
numeric column, the results file, the win count against dpmm, and the capped child. No dpmm needed."""
from __future__ import annotations

import csv
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "bench" / "accuracy"), str(ROOT / "bench" / "tools")]

import corpus_numeric as cn

import dpcore


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(0)
    n = 400
    income = rng.gamma(2.0, 10.0, n)
    income[rng.random(n) < 0.1] = np.nan
    df = pd.DataFrame({"group": rng.choice(["a", "b", "c"], n), "age": rng.integers(18, 80, n),
                       "income": income})
    df["spend"] = 0.5 * np.nan_to_num(income, nan=20.0) + rng.normal(0, 2, n)
    dom = dpcore.infer_domain(df, numeric={"age": [0, 20, 40, 60, 100], "income": [0, 10, 20, 50, 200],
                                           "spend": [-20, 0, 20, 120]}).declared()
    return df, dom


def test_dpmm_is_given_the_declared_bounds_the_codes_and_a_missingness_column(table):
    df, dom = table
    frame, domain, dtypes = cn.dpmm_input(df, dom)
    assert domain["age"] == {"lower": 0, "upper": 100} and dtypes["age"] == "int64"
    assert domain["income"] == {"lower": 0.0, "upper": 200.0} and dtypes["income"] == "float64"
    assert domain["group"] == {"categories": [f"x{c}" for c in range(dom["group"].size)]}
    assert domain["income__na"] == {"categories": ["no", "yes"]} and "age__na" not in frame
    missing = df["income"].isna().to_numpy()
    assert (frame["income__na"].to_numpy() == np.where(missing, "yes", "no")).all()
    assert (frame.loc[missing, "income"] == 0.0).all() and not frame["income"].isna().any()  # the public lower bound
    np.testing.assert_array_equal(frame.loc[~missing, "income"], df.loc[~missing, "income"])
    assert set(frame["group"]) <= set(domain["group"]["categories"])


def test_dpmm_output_is_read_back_into_the_tables_columns(table):
    df, dom = table
    frame, _, _ = cn.dpmm_input(df, dom)
    back = cn.dpmm_output(frame, dom, np.random.default_rng(1))
    assert list(back.columns) == dom.names
    assert (back["group"].astype(str) == df["group"].astype(str)).all()
    np.testing.assert_array_equal(back["income"].isna(), df["income"].isna())
    np.testing.assert_allclose(back["income"].dropna(), df["income"].dropna())
    np.testing.assert_allclose(back["age"], df["age"])


def test_span_is_the_1st_to_99th_percentile_range_or_the_declared_one():
    s = pd.Series(np.arange(101, dtype=float))
    assert cn.column_span(s, 0, 500) == pytest.approx(98.0)
    assert cn.column_span(pd.Series([3.0] * 50 + [np.nan]), 0, 10) == 10.0


def test_scores_are_zero_for_the_original_and_grow_with_a_shift(table):
    df, dom = table
    same = cn.numeric_scores(df, df.copy(), dom)
    assert set(same) == {"age", "income", "spend"}
    for c, s in same.items():
        assert s["w1"] == 0 and s["q10_error"] == s["q50_error"] == s["q90_error"] == 0, c
        assert s["reg_overlap"] == pytest.approx(1.0)
    shifted = df.copy()
    shifted["spend"] = shifted["spend"] + 5.0
    sc = cn.numeric_scores(df, shifted, dom)["spend"]
    assert sc["w1"] == pytest.approx(5.0 / sc["span"]) and sc["q50_error"] == pytest.approx(5.0 / sc["span"])
    assert sc["reg_overlap"] < 1.0


def test_rows_per_column_rerun_keys_and_timeouts(tmp_path):
    out = tmp_path / "r.csv"
    run = {"table": "t", "method": "aim", "variant": "dp", "seed": 0}
    ok = {"status": "ok", "seconds": 1.5, "columns": {"x": {"span": 2.0, "w1": 0.1, "q10_error": 0.0,
                                                            "q50_error": 0.2, "q90_error": 0.3, "reg_overlap": 0.5}}}
    cn.append_rows(out, cn.result_rows(run, ok, ["x", "y"], {"n_records": 10}))
    cn.append_rows(out, cn.result_rows({**run, "method": "dpmm_aim", "variant": "public_bounds"},
                                       {"status": "timeout", "message": "over"}, ["x", "y"], {"n_records": 10}))
    with out.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == cn.FIELDS and len(rows) == 4
    assert rows[0]["w1"] == "0.1" and rows[1]["w1"] == "" and rows[1]["status"] == "ok"
    done, over = cn.recorded(out, cn.KEY)
    assert done == {("t", "aim", "dp", "0"), ("t", "dpmm_aim", "public_bounds", "0")}
    assert over == {("t", "dpmm_aim", "public_bounds")}


def test_plan_runs_every_table_at_a_seed_before_the_next():
    p = cn.plan(["small", "big"], ["aim:declared", "dpmm_aim:public_bounds"], [0, 1])
    assert [(r["seed"], r["table"], r["method"]) for r in p][:4] == [
        (0, "small", "aim"), (0, "small", "dpmm_aim"), (0, "big", "aim"), (0, "big", "dpmm_aim")]
    assert len(p) == 8 and p[4]["seed"] == 1


def _row(table, column, method, variant, seed, w1, status="ok"):
    return {"table": table, "column": column, "method": method, "variant": variant, "seed": str(seed),
            "status": status, "w1": "" if w1 is None else str(w1), "n_records": "100"}


def test_wins_count_median_over_seeds_where_dpmm_finished():
    rows = [_row("t", "x", "aim", "dp", s, w) for s, w in enumerate([0.1, 0.9, 0.2])]  # median 0.2
    rows += [_row("t", "x", "dpmm_aim", "public_bounds", s, w) for s, w in enumerate([0.3, 0.25])]  # 0.275
    rows += [_row("t", "y", "aim", "dp", 0, 0.5), _row("t", "y", "dpmm_aim", "public_bounds", 0, 0.4)]
    rows += [_row("t", "z", "aim", "dp", 0, 0.01), _row("t", "z", "dpmm_aim", "public_bounds", 0, None, "timeout")]
    med = cn.medians(rows)
    assert med[("t", "x", "aim:dp")] == pytest.approx(0.2)
    assert ("t", "z", "dpmm_aim:public_bounds") not in med
    won, n, lost = cn.wins(med, "aim:dp", "dpmm_aim:public_bounds")
    assert (won, n, lost) == (1, 2, [("t", "y")])
    text = cn.report(rows)
    assert "| aim:dp | 2 | 1 | 50% |" in text and "timeout" in text
    assert "| aim:dp, columns whose DP bounds never fell back | 2 | 1 | 50% |" in text
    rows[5]["note"] = "fallback bounds: y z"  # the lost column y fell back: without it, 1 of 1
    assert "| aim:dp, columns whose DP bounds never fell back | 1 | 1 | 100% |" in cn.report(rows)
    classes = {("t", "x"): {"n": 100, "skew": 0.1, "tail": 0.0}, ("t", "y"): {"n": 50_000, "skew": 3.0, "tail": 1.0}}
    text = cn.report(rows, classes=classes)
    assert "| n < 1,000 | 1 of 1 |" in text and "| n ≥ 10,000 | 0 of 1 |" in text
    assert "| abs(skew) ≥ 2 (heavy-tailed) | 0 of 1 |" in text and "| 1,000 ≤ n < 10,000 | — |" in text


def _sleep():
    time.sleep(60)
    return {"status": "ok"}


def test_the_capped_child_returns_its_result_or_is_killed():
    assert cn.fork_call(lambda: {"status": "ok", "v": 3}, timeout=30) == {"status": "ok", "v": 3}
    t0 = time.monotonic()
    assert cn.fork_call(_sleep, timeout=1.0)["status"] == "timeout" and time.monotonic() - t0 < 10
    res = cn.fork_call(lambda: 1 / 0, timeout=30)
    assert res["status"] == "error" and "ZeroDivisionError" in res["message"]


def test_a_code_column_released_as_numbers_is_snapped_to_its_levels_for_the_regression(table):
    df, dom = table
    coded = df.assign(size=np.resize([1, 2, 5], len(df)))
    dom2 = dpcore.infer_domain(coded, numeric={"age": [0, 20, 40, 60, 100], "income": [0, 10, 20, 50, 200],
                                               "spend": [-20, 0, 20, 120]}).declared()
    assert dom2["size"].kind == "categorical"
    syn = coded.assign(size=np.resize([0.7, 1.6, 3.4, 9.0], len(df)))
    snapped = cn.snap_to_levels(syn, dom2, coded)
    assert snapped["size"].dtype == coded["size"].dtype
    assert list(snapped["size"][:4]) == [1, 2, 2, 5]
    pd.testing.assert_series_equal(snapped["spend"], syn["spend"])  # numeric columns untouched
    assert (snapped["group"] == syn["group"]).all()


def test_bounds_variants_bin_every_numeric_column_inside_its_declared_bounds(table):
    df, dom = table
    got = cn.bounds_bins(dom, "bounds_privtree")
    assert got == {"age": {"lower": 0.0, "upper": 100.0, "method": "privtree"},
                   "income": {"lower": 0.0, "upper": 200.0, "method": "privtree"},
                   "spend": {"lower": -20.0, "upper": 120.0, "method": "privtree"}}
    assert cn.bounds_bins(dom, "bounds_privtree_k")["age"]["bins"] == 4  # the declared number of bins
    assert cn.bounds_bins(dom, "bounds_privtree_16")["spend"]["bins"] == 16
    assert cn.bounds_bins(dom, "bounds_quantiles")["spend"] == {"lower": -20.0, "upper": 120.0,
                                                                "method": "quantiles", "bins": 3}
    with pytest.raises(ValueError, match="unknown variant"):
        cn.bounds_bins(dom, "bounds_kmeans")
    # the release the bench makes from it: the declared domain, the edges DP inside the same bounds
    rel = dpcore.synthesize(df, "aim", 1.0, seed=0, domain=dom, delta=1e-9, dp_bins=got)
    assert rel.dp and all(rel.domain[c].origin == "dp_privtree" for c in got)
    assert [(rel.domain[c].edges[0], rel.domain[c].edges[-1]) for c in got] == [(0, 100), (0, 200), (-20, 120)]


def test_all_stands_for_every_registered_method_at_its_variant():
    from dpcore.synthesizers import REGISTRY
    got = cn.expand_runs(["all:declared", "aim:declared", "dpmm_aim:public_bounds", "all:bounds_privtree"])
    assert got[:len(REGISTRY)] == [f"{m}:declared" for m in REGISTRY]  # aim:declared is not repeated
    assert got[len(REGISTRY)] == "dpmm_aim:public_bounds"
    assert got[len(REGISTRY) + 1:] == [f"{m}:bounds_privtree" for m in REGISTRY]
    assert cn.expand_runs(["all:dp"], registry={"x": None, "y": None}) == ["x:dp", "y:dp"]


@pytest.mark.parametrize("method", ["steps", "uh_random", "steps_lesda", "flat_laplace", "ipf", "privbayes",
                                    "aim", "mst"])
def test_every_method_releases_the_bounds_variant_inside_the_declared_bounds(table, method):
    df, dom = table
    syn, secs, note = cn.release(df, dom, method, "bounds_privtree", 0)
    assert secs > 0 and note == "" and len(syn) > 0  # some methods release a noisy record count
    for c, (lo, hi) in {"age": (0, 100), "income": (0, 200), "spend": (-20, 120)}.items():
        v = syn[c].dropna().astype(float)
        assert len(v) and v.min() >= lo and v.max() <= hi, (method, c)
    scores = cn.numeric_scores(df, syn, dom)
    bounds = {"age": 100.0, "income": 200.0, "spend": 140.0}
    # both tables' values lie inside the declared range, so W1 is at most its width (in units of the span)
    assert all(0 <= s["w1"] <= bounds[c] / s["span"] for c, s in scores.items()), (method, scores)


def _scored(table, column, run, seed, w1, q50):
    method, variant = run.split(":")
    return {**_row(table, column, method, variant, seed, w1), "q10_error": str(q50 / 2), "q50_error": str(q50),
            "q90_error": str(q50 * 2)}


def test_the_every_method_table_shares_medians_and_all_columns():
    peer = "dpmm_aim:public_bounds"
    rows = [_scored("t", "x", peer, 0, 0.30, 0.1), _scored("t", "y", peer, 0, 0.10, 0.1)]
    rows += [_scored("t", "z", peer, 0, 0.5, 0.1) | {"status": "timeout", "w1": ""}]  # dpmm did not finish z
    # steps: x at 0.2 (median of 0.1, 0.2, 0.9) ≤ 0.30; y at 0.2 > 0.10; z (no dpmm) at 0.05
    rows += [_scored("t", "x", "steps:declared", s, w, 0.4) for s, w in enumerate([0.1, 0.9, 0.2])]
    rows += [_scored("t", "y", "steps:declared", 0, 0.2, 0.2), _scored("t", "z", "steps:declared", 0, 0.05, 0.0)]
    # mst:bounds_privtree: x only, under dpmm; a failed seed is not counted
    rows += [_scored("t", "x", "mst:bounds_privtree", 0, 0.25, 0.3),
             _scored("t", "x", "mst:bounds_privtree", 1, None, 0.3) | {"status": "error", "w1": ""}]
    text = cn.every_method(rows, peer)
    lines = text.splitlines()
    # ordered by variant, then method
    # 2 dpmm columns, 1 at or under; median W1 over them (0.2, 0.2); q errors (0.4, 0.2) → medians 0.3 etc.;
    # every column: x 0.2, y 0.2, z 0.05 → 3 columns, median 0.2
    assert lines[3] == "| steps:declared | 2 | 1 | 50% | 0.2000 | 0.1500 | 0.3000 | 0.6000 | 3 | 0.2000 |"
    assert lines[2] == "| mst:bounds_privtree | 1 | 1 | 100% | 0.2500 | 0.1500 | 0.3000 | 0.6000 | 1 | 0.2500 |"
    assert peer not in text
    assert text in cn.report(rows, peer=peer)
