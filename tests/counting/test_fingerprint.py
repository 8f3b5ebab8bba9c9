"""The content fingerprint (dpcore.counting.fingerprint, issue 40 [ledger-integrity]): one key per table,
whatever reads it (pandas, DuckDB, Spark) and whatever format holds it (CSV, Parquet)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpcore.counting import duckdb_engine
from dpcore.counting import sql as S
from dpcore.counting.fingerprint import _float_key, frame_fingerprint
from dpcore.data.io import read_table

#: a CSV whose values each reader types differently unless the key is canonical: nullable ints, floats written
#: with trailing zeros, tiny and huge floats, -0.0, text that looks like a missing marker, a combining accent and
#: the row separator inside a value, the largest int64
TRICKY = ("a,b,c,big,neg\n1,0.10,x,9223372036854775807,-2.5\n2,2.5,NA,-9223372036854775807,-0.0\n"
          "3,1e-300,,5,1e300\n,,e\u0301|z,6,-3\n7,4.0,,7,0.30000000000000004\n")


def _python_float_key(x: float) -> str:
    """The canonical text of a float, by hand from its binary form (the docstring's definition)."""
    if math.isinf(x):
        return "f+inf" if x > 0 else "f-inf"
    if x == math.floor(x) and abs(x) < 2.0**63:
        return f"i{int(x)}"
    m, e = math.frexp(x)  # x = m·2^e, 0.5 <= |m| < 1
    return f"f{int(m * 2**53)}e{e - 1}"


def test_the_float_key_in_sql_is_the_exact_binary_form():
    """DuckDB's canonical text of any double is the one Python derives from frexp: no decimal formatting enters
    the key. Seeded: 20,000 doubles drawn uniformly over all bit patterns (so every exponent, subnormals
    included), plus the edges (±0, ±inf, 2^53 ± 1, 2^63 and its neighbours, the smallest subnormal)."""
    rng = np.random.default_rng(40)
    bits = rng.integers(0, 2**64, size=20_000, dtype=np.uint64, endpoint=False)
    values = bits.view(np.float64)
    edges = np.array([0.0, -0.0, np.inf, -np.inf, 2.0**53 - 1, 2.0**53 + 2, 2.0**63, np.nextafter(2.0**63, 0),
                      -(2.0**63), 5e-324, -5e-324, 0.1, 1 / 3, 1e300, -2.5])
    values = np.concatenate([values[~np.isnan(values)], edges])
    with duckdb_engine.connect() as con:
        con.register("t", pa.table({"x": pa.array(values, pa.float64())}))
        got = [r[0] for r in con.execute(f"SELECT {_float_key('x', S.DUCKDB)} FROM t").fetchall()]
    want = [_python_float_key(float(v)) for v in values]
    assert got == want


@pytest.fixture()
def tricky(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text(TRICKY, encoding="utf-8")
    parquet = tmp_path / "t.parquet"
    read_table(csv).to_parquet(parquet, index=False)
    return csv, parquet


def test_one_key_in_memory_and_on_duckdb_from_csv_and_parquet(tricky):
    csv, parquet = tricky
    keys = {frame_fingerprint(read_table(csv)), frame_fingerprint(read_table(parquet)),
            duckdb_engine.fingerprint(csv), duckdb_engine.fingerprint(parquet)}
    assert len(keys) == 1
    (fp,) = keys
    assert fp.key.startswith("content-") and fp.n_rows == 5 and len(fp.column_fps) == 5


def test_typed_parquet_with_nulls_infinities_and_booleans_agrees(tmp_path):
    """int32 with a null (pandas reads float64), float32 with inf, a nullable boolean, an empty string."""
    path = tmp_path / "u.parquet"
    pq.write_table(pa.table({"i": pa.array([1, None, 3], pa.int32()), "f": pa.array([np.inf, 1.5, None], pa.float32()),
                             "b": pa.array([True, None, False]), "s": pa.array(["", "q", None])}), path)
    assert frame_fingerprint(read_table(path)) == duckdb_engine.fingerprint(path)


def test_row_and_column_order_do_not_matter_values_names_and_counts_do():
    df = pd.DataFrame({"a": [1, 2, 2, 3], "b": ["x", "y", "y", None], "c": [0.5, 1.0, 1.0, np.nan]})
    fp = frame_fingerprint(df)
    assert frame_fingerprint(df.iloc[::-1][["c", "a", "b"]].reset_index(drop=True)).key == fp.key
    for other in (df.assign(a=[1, 2, 2, 4]), df.iloc[:3], df.rename(columns={"a": "A"}), pd.concat([df, df.iloc[:1]]),
                  df.drop(columns="c"), df.assign(b=["x", "y", "y", ""])):
        assert frame_fingerprint(other).key != fp.key
    # a value written as 1 in one file and 1.0 in another is the same number: the same key
    assert frame_fingerprint(df.assign(a=df["a"].astype(float))).key == fp.key
    # the column fingerprints leave the name out and follow the table's order
    renamed = frame_fingerprint(df.rename(columns={"a": "A"}))
    assert renamed.column_fps == fp.column_fps


def test_a_duplicated_row_is_not_a_missing_one():
    """The key is a multiset hash: two copies of a row are not one copy, and no pair of rows cancels."""
    one = pd.DataFrame({"a": [1, 2]})
    assert frame_fingerprint(pd.DataFrame({"a": [1, 1, 2]})).key != frame_fingerprint(one).key
    assert frame_fingerprint(pd.DataFrame({"a": [1, 1, 2, 2]})).key != frame_fingerprint(pd.DataFrame({"a": []})).key


@pytest.mark.spark
def test_spark_computes_the_same_key_on_the_cluster(tricky, tmp_path):
    pytest.importorskip("pyspark")
    from dpcore.counting import spark_engine

    spark = spark_engine.session("local[2]")
    csv, parquet = tricky
    expected = frame_fingerprint(read_table(csv))
    assert spark_engine.fingerprint(csv, spark_master=spark) == expected
    assert spark_engine.fingerprint(parquet, spark_master=spark) == expected
