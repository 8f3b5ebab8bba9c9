"""[numeric-columns] on the file engines: the records clamped into the end bins, counted in DuckDB's SQL
(curator-only, NOT DP), equal the in-memory path's counts on the same table, reach the CLI's
curator-only line and the private manifest, and never the published manifest."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpcore
from dpcore.cli import commands as cli
from dpcore.counting import duckdb_engine as duckdb_counts
from dpcore.counting.engines import count_table
from dpcore.data.domain import Domain, numeric_attribute
from dpcore.data.io import read_table
from dpcore.output import synthesize_file

DECLARED = "declared public by the curator"


def out_of_bounds_table(seed: int, n: int = 600) -> pd.DataFrame:
    """Whole numbers and decimals with values below, on and above the declared edges, and missing ones."""
    rng = np.random.default_rng(seed)
    age = rng.integers(-5, 111, n).astype(float)  # edges [0, 100]: below 0 and above 100 are clamped
    age[rng.random(n) < 0.05] = np.nan
    wage = np.round(rng.lognormal(2.0, 1.2, n), 2)  # edges [1, 50]: both tails clamped
    wage[:3] = [1.0, 50.0, 0.5]  # on both edges (not clamped) and just below
    return pd.DataFrame({"age": pd.array(age, dtype="Int64"), "wage": wage,
                         "kind": rng.choice(["a", "b"], n)})


def declared_domain() -> Domain:
    from dpcore.data.domain import Attribute

    return Domain((numeric_attribute("age", [0, 25, 50, 100], na=True, dtype="Int64"),
                   numeric_attribute("wage", [1, 5, 20, 50]),
                   Attribute("kind", "categorical", ("a", "b"), False, None, "object")), DECLARED)


@pytest.fixture(params=["csv", "parquet"])
def table_file(request, tmp_path):
    df = out_of_bounds_table(11)
    if request.param == "csv":
        path = tmp_path / "t.csv"
        df.to_csv(path, index=False)
    else:
        path = tmp_path / "t.parquet"
        pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path)
    return path


def test_duckdb_clamped_counts_equal_the_in_memory_counts(table_file):
    dom = declared_domain()
    expected = dom.clamped_counts(read_table(table_file))
    assert expected["age"] > 0 and expected["wage"] > 0  # the table does hold out-of-bounds values
    curator: dict = {}
    table = duckdb_counts.count_table(table_file, dom, curator=curator)
    assert curator["clamped_records"] == expected
    # the engine's count table is the in-memory one (the clamping itself is unchanged)
    mem = count_table(read_table(table_file), dom)
    assert np.array_equal(table.codes, mem.codes) and np.array_equal(table.counts, mem.counts)


def test_pandas_engine_fills_the_same_curator_counts(table_file):
    dom = declared_domain()
    curator: dict = {}
    count_table(read_table(table_file), dom, curator=curator)
    assert curator["clamped_records"] == dom.clamped_counts(read_table(table_file))


def test_no_clamped_column_is_left_out(tmp_path):
    df = pd.DataFrame({"wage": [1.0, 2.0, 49.0, 50.0], "age": [0.0, 200.0, 50.0, 99.0]})
    path = tmp_path / "in.csv"
    df.to_csv(path, index=False)
    dom = Domain((numeric_attribute("wage", [1, 50]), numeric_attribute("age", [0, 100])), DECLARED)
    curator: dict = {}
    duckdb_counts.count_table(path, dom, curator=curator)
    assert curator["clamped_records"] == {"age": 1}


def test_file_release_records_the_in_memory_curator_only_counts(table_file, tmp_path):
    dom = declared_domain()
    mem = dpcore.synthesize(read_table(table_file), method="mst", epsilon=1.0, seed=2, domain=dom)
    rel = synthesize_file(table_file, tmp_path / "out", "mst", 1.0, seed=2, domain=dom, engine="duckdb")
    assert rel.curator_only["clamped_records"] == mem.curator_only["clamped_records"]
    assert json.loads(rel.manifest_json(private=True))["curator_only_not_dp"] == mem.curator_only
    published = (tmp_path / "out" / "manifest.json").read_text()
    assert "curator_only_not_dp" not in published and "clamped" not in published


def test_cli_duckdb_prints_the_curator_only_line_as_in_memory(tmp_path, capsys):
    path = tmp_path / "t.csv"
    out_of_bounds_table(3).to_csv(path, index=False)
    (tmp_path / "domain.json").write_text(declared_domain().to_json())
    common = [str(path), "--domain", str(tmp_path / "domain.json"), "--seed", "4", "--method", "mst", "--no-book"]
    assert cli.main(["synth", *common, "--out", str(tmp_path / "a")]) == 0
    mem_lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("NOT DP, curator-only")]
    assert cli.main(["synth", *common, "--out", str(tmp_path / "b"), "--engine", "duckdb",
                     "--private-manifest", str(tmp_path / "private.json")]) == 0
    engine_lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("NOT DP, curator-only")]
    assert mem_lines and engine_lines == mem_lines
    assert "records clamped into the end bins: age " in engine_lines[0]
    private = json.loads((tmp_path / "private.json").read_text())
    assert private["curator_only_not_dp"]["clamped_records"] == declared_domain().clamped_counts(read_table(path))
    assert "curator_only_not_dp" not in json.loads((tmp_path / "b" / "manifest.json").read_text())
