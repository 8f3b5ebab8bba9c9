"""One domain inference ([typed-contracts] item 4): each engine gathers a column's facts, one rule decides.

The same file read in memory (``dpcore.data.inference.series_facts``) and by DuckDB
(``dpcore.counting.on_engine.column_facts``) gives the same :class:`ColumnFacts`, column by column,
and so the same domain. The table holds what the reading rules and the rule care about: leading
zeros and "NA" as text, whole numbers with missing values, floats with a NaN marker and -0.0,
numbers beyond 2^53, true/false text, a single level with missing values, numbers with more
distinct values than binning starts at (listed both ways), and more than an engine fetches (there the
engine stops counting; in memory every value is counted).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpcore.counting import duckdb_engine as duckdb_counts
from dpcore.counting.on_engine import column_facts
from dpcore.data.inference import (
    ColumnFacts,
    Limits,
    column_attribute,
    domain_from_facts,
    infer_domain,
    series_facts,
)
from dpcore.data.io import read_table
from dpcore.errors import DomainError

LIMITS = Limits()
#: beyond what an engine fetches for a numeric column
MANY = LIMITS.cap(True) + 60


def tricky_table(seed: int = 3, n: int = 400) -> pd.DataFrame:
    """Raw text fields, as a CSV holds them."""
    rng = np.random.default_rng(seed)
    blank = rng.random(n) < 0.1
    return pd.DataFrame({
        "code": rng.choice(["007", "02134", "NA", "x", "true", "0"], n),
        "small": np.where(blank, "", rng.integers(-3, 4, n).astype(str)),
        "ratio": np.where(rng.random(n) < 0.1, "NaN", rng.choice(["1.5", "2", "-0.0", "0", "3e2"], n)),
        "wide": rng.integers(0, 150, n).astype(str),                  # binned, but within the cap: listed
        "many": rng.permutation(np.arange(n))[:n].astype(str),        # beyond the cap: counted, not listed
        "big": (2**60 + rng.integers(0, 3, n)).astype(str),           # whole numbers beyond 2^53
        "flag": rng.choice(["True", "False"], n),
        "note": rng.choice(["a", "b", ""], n),                        # empty fields are missing
        "one_na": np.where(blank, "", "k"),                           # one level and NA: two codes
    })


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("facts")
    csv = d / "t.csv"
    raw = tricky_table()
    assert raw["many"].nunique() == 400 > MANY
    raw.to_csv(csv, index=False)
    parquet = d / "t.parquet"
    typed = read_table(csv)
    typed["flag"] = typed["flag"] == "True"  # Parquet holds real booleans
    pq.write_table(pa.Table.from_pandas(typed, preserve_index=False), parquet)
    return csv, parquet


def memory_facts(path, binned=()) -> list[ColumnFacts]:
    df = read_table(path)
    return [series_facts(df[name], name, LIMITS, name in binned) for name in df.columns]


def engine_facts(path, binned=()) -> list[ColumnFacts]:
    with duckdb_counts.connect() as con:
        src = duckdb_counts.open_source(con, path)
        return [column_facts(src, name, LIMITS, name in binned) for name in src.columns]


def up_to_cap(f: ColumnFacts, engine: ColumnFacts) -> ColumnFacts:
    """The in-memory facts as an engine that stops counting distinct values at its cap states them."""
    if f.n_distinct is not None and f.n_distinct > LIMITS.cap(f.numeric):
        return replace(f, n_distinct=engine.n_distinct, distinct_capped=True)
    return f


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_the_same_facts_in_memory_and_on_duckdb(files, fmt):
    path = files[0] if fmt == "csv" else files[1]
    mem, eng = memory_facts(path), engine_facts(path)
    assert [f.name for f in mem] == [f.name for f in eng] == list(tricky_table().columns)
    by_name = {f.name: f for f in eng}
    for f in mem:
        if f.name != "many":
            assert f == by_name[f.name], f.name  # every fact, the listed levels included
    many_mem, many_eng = next(f for f in mem if f.name == "many"), by_name["many"]
    assert many_mem.n_distinct == 400 and not many_mem.distinct_capped and many_mem.levels is None
    assert many_eng.n_distinct == LIMITS.cap(True) + 1 and many_eng.distinct_capped and many_eng.levels is None
    assert up_to_cap(many_mem, many_eng) == many_eng
    # what the facts say of this table
    facts = {f.name: f for f in mem}
    assert facts["code"].levels == ("0", "007", "02134", "NA", "true", "x") and not facts["code"].numeric
    assert facts["small"].numeric and facts["small"].n_missing == int((tricky_table()["small"] == "").sum())
    assert facts["wide"].numeric and 25 < facts["wide"].n_distinct <= 150 and len(facts["wide"].levels) == \
        facts["wide"].n_distinct
    assert facts["big"].low == float(2**60) and facts["big"].levels == (2**60, 2**60 + 1, 2**60 + 2)
    assert facts["one_na"].levels == ("k",) and facts["one_na"].n_missing > 0
    # the same domain from either set of facts, and from each path's own infer_domain
    dom = domain_from_facts(mem, {}, LIMITS).to_dict()
    assert dom == domain_from_facts(eng, {}, LIMITS).to_dict() == infer_domain(read_table(path)).to_dict() == \
        duckdb_counts.infer_domain(path).to_dict()
    kinds = {a["name"]: a["type"] for a in dom["attributes"]}
    assert kinds["wide"] == kinds["many"] == "numeric" and kinds["code"] == kinds["one_na"] == "categorical"
    assert facts["ratio"].levels == (0, 1.5, 2, 300) and facts["ratio"].n_missing > 0  # -0.0 is 0, NaN missing
    assert facts["flag"].levels == ((False, True) if fmt == "parquet" else ("False", "True"))


def test_a_column_given_public_bins_has_no_distinct_facts_on_either_path(files):
    csv, _ = files
    binned = {"many", "wide"}
    for mem, eng in zip(memory_facts(csv, binned), engine_facts(csv, binned)):
        assert mem == eng, mem.name
        assert (mem.n_distinct is None) == (mem.name in binned)
    spec = {"many": {"bounds": [0, 400], "bins": 4}, "wide": [0, 50, 150]}
    assert domain_from_facts(memory_facts(csv, binned), spec, LIMITS).to_dict() == \
        duckdb_counts.infer_domain(csv, numeric=spec).to_dict() == infer_domain(read_table(csv), numeric=spec).to_dict()


def test_infinite_values_are_counted_and_refused_alike(tmp_path):
    path = tmp_path / "inf.parquet"
    pq.write_table(pa.table({"x": [1.0, np.inf, -np.inf, np.nan, 2.0], "g": ["a", "b", "a", "b", "a"]}), path)
    mem, eng = memory_facts(path), engine_facts(path)
    assert mem == eng and mem[0].n_infinite == 2 and mem[0].n_missing == 1 and mem[0].n_distinct is None
    messages = set()
    for infer in (lambda: infer_domain(read_table(path)), lambda: duckdb_counts.infer_domain(path)):
        with pytest.raises(DomainError, match="column 'x' holds infinite values") as exc:
            infer()
        messages.add(str(exc.value))
    assert len(messages) == 1


def test_one_rule_refuses_for_both_paths():
    """The refusals come from the facts alone: the same text whichever engine gathered them; an
    identifier counted in full names its count, one an engine stopped counting says "more than"."""
    base = ColumnFacts("id", "object", False, n_present=500, n_missing=0, n_distinct=500)
    with pytest.raises(DomainError, match=r"^column 'id' has 500 distinct values \(limit 200\); it looks like an "
                                          r"identifier or free text"):
        column_attribute(base, {}, LIMITS)
    with pytest.raises(DomainError, match=r"^column 'id' has more than 200 distinct values; it looks like an "
                                          r"identifier or free text"):
        column_attribute(replace(base, n_distinct=201, distinct_capped=True), {}, LIMITS)
    for facts, match in ((replace(base, n_present=0, n_missing=500, n_distinct=None), "is empty"),
                         (replace(base, numeric=True, n_infinite=2, n_distinct=None), "holds infinite values"),
                         (replace(base, n_distinct=1, levels=("k",)), r"has a single level \('k'\)")):
        with pytest.raises(DomainError, match=f"^column 'id' {match}"):
            column_attribute(facts, {}, LIMITS)
