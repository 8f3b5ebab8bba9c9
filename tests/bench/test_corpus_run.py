"""bench/accuracy/corpus_run.py: one forked child per run, its statuses (ok, cannot_run, error, timeout, skipped), the
results file's columns, and that a rerun skips the runs already recorded."""
from __future__ import annotations

import csv
import math
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "bench" / "accuracy"), str(ROOT / "bench" / "tools")]

import corpus
import corpus_run

from dpcore.errors import OptionError


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    cache = tmp_path_factory.mktemp("corpus-cache")
    df, dom = corpus.load_table("titanic_survival", cache_dir=cache)
    return df, dom, pd.DataFrame(dom.encode(df), columns=dom.names)


def _run(**kw):
    return {"table": "titanic_survival", "method": "flat_laplace", "definition": "pure", "epsilon": 1.0,
            "delta": "", "sets": 1, "seed": 0, **kw}


def test_a_run_in_a_child_scores_the_release(table):
    df, dom, codes = table
    res = corpus_run.fork_run(df, dom, codes, _run(), timeout=120)
    assert res["status"] == "ok", res
    assert math.isfinite(res["spmse"]) and res["spmse"] >= 0
    assert 0 <= res["ru_pct"] <= 100
    assert res["seconds"] > 0 and res["peak_mb"] >= res["base_mb"] > 0


def test_the_same_seed_gives_the_same_scores_and_m_sets_are_scored_together(table):
    df, dom, codes = table
    a = corpus_run.fork_run(df, dom, codes, _run(definition="zcdp", delta=1e-9, seed=3), timeout=120)
    b = corpus_run.fork_run(df, dom, codes, _run(definition="zcdp", delta=1e-9, seed=3), timeout=120)
    assert a["status"] == b["status"] == "ok" and a["spmse"] == b["spmse"]
    five = corpus_run.fork_run(df, dom, codes, _run(sets=5, seed=3), timeout=120)
    assert five["status"] == "ok" and five["spmse"] != a["spmse"]


def test_a_refusal_is_cannot_run_and_a_crash_is_error(table, monkeypatch):
    df, dom, codes = table

    def refuse(*a, **k):
        raise OptionError("option 'x' cannot take this design")
    monkeypatch.setattr(corpus_run, "release_sets", refuse)  # the forked child inherits the patch
    res = corpus_run.fork_run(df, dom, codes, _run(), timeout=60)
    assert res == {"status": "cannot_run", "message": "option 'x' cannot take this design"}

    def crash(*a, **k):
        raise ZeroDivisionError("boom")
    monkeypatch.setattr(corpus_run, "release_sets", crash)
    res = corpus_run.fork_run(df, dom, codes, _run(), timeout=60)
    assert res["status"] == "error" and "ZeroDivisionError: boom" in res["message"]


def test_a_run_over_the_cap_is_killed(table, monkeypatch):
    df, dom, codes = table
    monkeypatch.setattr(corpus_run, "release_sets", lambda *a, **k: time.sleep(60))
    t0 = time.monotonic()
    res = corpus_run.fork_run(df, dom, codes, _run(), timeout=1.0)
    assert res["status"] == "timeout" and time.monotonic() - t0 < 10


def test_results_file_and_rerun(tmp_path, monkeypatch):
    out = tmp_path / "results.csv"
    argv = ["corpus_run.py", "--tables", "titanic_survival", "--methods", "flat_laplace", "ipf", "--seeds", "0", "1",
            "--out", str(out)]
    monkeypatch.setattr(sys, "argv", argv)
    corpus_run.main()
    with out.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == corpus_run.FIELDS
    assert len(rows) == 2 * 2 * 2  # methods × definitions × seeds
    assert {r["status"] for r in rows} == {"ok"}
    assert {(r["definition"], r["delta"]) for r in rows} == {("pure", ""), ("zcdp", "1e-09")}
    corpus_run.main()  # everything is recorded: nothing runs again
    with out.open(newline="") as f:
        assert len(list(csv.DictReader(f))) == 8


def test_after_a_timeout_the_later_seeds_are_skipped(tmp_path, monkeypatch):
    out = tmp_path / "results.csv"
    monkeypatch.setattr(corpus_run, "release_sets", lambda *a, **k: time.sleep(60))
    monkeypatch.setattr(sys, "argv", ["corpus_run.py", "--tables", "titanic_survival", "--methods", "mst",
                                      "--definitions", "pure", "--seeds", "0", "1", "2", "--timeout", "1",
                                      "--out", str(out)])
    monkeypatch.setattr(corpus_run, "warm_up", lambda methods: None)
    corpus_run.main()
    with out.open(newline="") as f:
        assert [r["status"] for r in csv.DictReader(f)] == ["timeout", "skipped", "skipped"]
    # a later session asking for more seeds skips them too: the timeout is read back from the file
    sys.argv[sys.argv.index("2") + 1:sys.argv.index("2") + 1] = ["3"]
    corpus_run.main()
    with out.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["seed"], r["status"]) for r in rows][3:] == [("3", "skipped")]
