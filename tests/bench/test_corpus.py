"""bench/tools/corpus.py: the [real-tables] corpus file, its loader's contract and its cache, on a few small tables."""
from __future__ import annotations

import csv
import json
import re
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "tools"))  # bench scripts import their shared helpers by name

import corpus

from dpcore.data.domain import PUBLIC_ORIGINS

SMALL = ["birthwt", "titanic_survival", "penguins"]


@pytest.fixture(scope="module")
def specs():
    return corpus.corpus_specs()


@pytest.fixture(scope="module")
def facts():
    with (ROOT / "bench" / "data" / "corpus_tables.csv").open(newline="", encoding="utf-8") as f:
        return {row["table"]: row for row in csv.DictReader(f)}


def test_the_corpus_has_the_shapes_the_issue_asks_for(specs, facts):
    assert len(specs) >= 30
    assert set(facts) == set(specs), "bench/data/corpus_tables.csv is out of date: run python bench/tools/corpus.py"
    n = [int(r["n_records"]) for r in facts.values()]
    p = [int(r["n_attributes"]) for r in facts.values()]
    assert min(n) >= 100 and max(n) <= 10**6
    assert sum(x >= 10**5 for x in n) >= 3
    assert min(p) >= 3 and max(p) <= 30
    assert sum(int(r["n_numeric"]) > 0 for r in facts.values()) >= 20
    assert sum(int(r["n_with_missing"]) > 0 for r in facts.values()) >= 8
    for s in specs.values():
        assert s.source and s.licence, f"{s.name}: name its source and licence"


def test_every_numeric_entry_is_bounds_and_bins_or_edges(specs):
    for s in specs.values():
        for col, v in s.numeric.items():
            assert ("edges" in v) != ("bounds" in v and "bins" in v), f"{s.name}.{col}: {v}"
            e = v.get("edges") or v["bounds"]
            assert all(b > a for a, b in zip(e, e[1:])), f"{s.name}.{col}: edges must increase"


@pytest.mark.parametrize("name", SMALL)
def test_loader_contract(name, specs, facts, tmp_path):
    df, dom = corpus.load_table(name, cache_dir=tmp_path, specs=specs)
    row = facts[name]
    assert df.shape == (int(row["n_records"]), int(row["n_attributes"]))
    assert list(df.columns) == dom.names
    assert json.loads(row["levels"]) == dict(zip(dom.names, dom.shape))
    assert not dom.inferred, "the corpus domain is declared public (by the benchmark)"
    assert all(a.origin in PUBLIC_ORIGINS for a in dom.attributes if a.kind == "numeric")
    codes = dom.encode(df)  # every record inside the declared domain
    assert codes.shape == df.shape and (codes >= 0).all() and (codes < np.array(dom.shape)).all()
    # numeric columns as the corpus file declares them, levels as the data has them
    for col in specs[name].numeric:
        assert dom[col].kind == "numeric"
    assert dom[col].na == bool(df[col].isna().any())


def test_cache_is_read_back_without_the_package(specs, tmp_path, monkeypatch):
    first, dom1 = corpus.load_table("birthwt", cache_dir=tmp_path, specs=specs)
    assert (tmp_path / "birthwt.parquet").exists() and (tmp_path / "birthwt.domain.json").exists()

    def no_source(spec):
        raise AssertionError("read the package although the cache is fresh")
    monkeypatch.setattr(corpus, "read_source", no_source)
    again, dom2 = corpus.load_table("birthwt", cache_dir=tmp_path, specs=specs)
    pd.testing.assert_frame_equal(first, again)
    assert dom2 == dom1


def test_a_changed_entry_rebuilds_the_cache(specs, tmp_path):
    corpus.load_table("birthwt", cache_dir=tmp_path, specs=specs)
    cut = dict(specs, birthwt=replace(specs["birthwt"], rows=50))
    df, dom = corpus.load_table("birthwt", cache_dir=tmp_path, specs=cut)
    assert len(df) == 50
    again, _ = corpus.load_table("birthwt", cache_dir=tmp_path / "other", specs=cut)
    pd.testing.assert_frame_equal(df, again)  # the cut is a fixed-seed sample: the same records every time


def test_the_cut_is_a_sample_of_the_source_records(specs):
    spec = replace(specs["birthwt"], rows=60)
    raw = corpus.read_source(spec)
    df = corpus.prepare(spec, raw)
    full = corpus.prepare(replace(spec, rows=None), raw)
    assert len(df) == 60 and len(full) == 189
    merged = df.merge(full.drop_duplicates(), how="left", indicator=True)
    assert (merged["_merge"] == "both").all()


def test_text_columns_become_labels(specs):
    spec = replace(specs["birthwt"], text=("race",))
    df = corpus.prepare(spec, corpus.read_source(spec))
    assert set(df["race"]) == {"1", "2", "3"}


def test_the_aim_options_probe_stops_with_its_usage_on_bad_arguments():
    from bench.accuracy import aim_options_probe

    for argv in ([], ["movies", "3", "zcdp"], ["movies", "3", "approximate", "1", "aim"]):
        with pytest.raises(SystemExit, match=re.escape("aim_options_probe.py TABLE EPSILON pure|zcdp SETS")):
            aim_options_probe.main(argv)


def test_the_final_fit_trace_stops_with_its_usage_and_prints_non_increasing_losses(capsys):
    """bench/accuracy/final_fit.py: bad arguments give its usage line; on a small corpus table both fits print a
    line per checkpoint, and neither's loss rises from 5 to 20 iterations (both never raise L)."""
    from bench.accuracy import final_fit

    for argv in ([], ["titanic_survival", "x", "0"], ["titanic_survival", "1", "0", "0,5"]):
        with pytest.raises(SystemExit, match=re.escape("final_fit.py TABLE EPSILON SEED")):
            final_fit.main(argv)
    assert final_fit.main(["titanic_survival", "1", "0", "5,20"]) == 0
    out = capsys.readouterr().out
    for label in ("plain", "accelerated"):
        losses = [float(m.replace(",", "")) for m in re.findall(rf"  {label} \d+ iterations: .* loss ([\d,.]+) ", out)]
        assert len(losses) == 2 and losses[1] <= losses[0], (label, out)
    assert "accelerated with its stop rule" in out


def test_corpus_compare_reports_the_ratio_and_the_best_counts_of_both_worlds():
    """bench/accuracy/corpus_compare.py on two hand-made results: AIM halves on table a and stays on b, so the
    geometric mean is √0.5; before, ipf beat it on a; now it is best on both. A table whose AIM lost
    seeds is left out."""
    import pandas as pd

    from bench.accuracy import corpus_compare

    def runs(aim_a, aim_c_seeds=3):
        rows = []
        for seed in range(3):
            rows += [("a", "aim", aim_a), ("a", "ipf", 4.0), ("b", "aim", 2.0), ("b", "ipf", 5.0)]
            rows[-4:] = [(t, m, v, seed) for t, m, v in rows[-4:]]
        rows += [("c", "aim", 1.0, s) for s in range(aim_c_seeds)] + [("c", "ipf", 2.0, s) for s in range(3)]
        df = pd.DataFrame(rows, columns=["table", "method", "spmse", "seed"])
        return df.assign(definition="zcdp", epsilon=1.0, sets=1, status="ok")

    rows = corpus_compare.compare(runs(6.0), runs(3.0, aim_c_seeds=2), "aim", "zcdp")
    assert len(rows) == 1
    r = rows[0]
    assert r["tables"] == 2 and r["geo_mean"] == pytest.approx(0.5 ** 0.5) and r["lower"] == 1
    assert r["min"] == (0.5, "a") and r["max"] == (1.0, "b")
    assert r["best"] == (1, 2) and r["within_15"] == (1, 2)
    assert "| 1 | 1 | 2 | 0.707 | 1 |" in corpus_compare.markdown(rows, "aim", "zcdp")


def test_corpus_compare_stops_with_one_line_on_a_missing_or_foreign_file(tmp_path):
    from bench.accuracy import corpus_compare

    with pytest.raises(SystemExit, match="cannot read .*nowhere.csv.*results CSV of bench/accuracy/corpus_run.py"):
        corpus_compare.main([str(tmp_path / "nowhere.csv")])
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(SystemExit, match=r"other.csv has no column\(s\) definition, epsilon, method"):
        corpus_compare.main([str(other), "--now", str(other)])
