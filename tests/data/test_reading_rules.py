"""[privacy-audit] reading rules: nothing in a file is silently altered on the way to a
DP-labelled release (dpcore/data/io.py states the rules)."""
import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpcore
from dpcore.data.io import read_csv_bytes, read_parquet_bytes
from dpcore.errors import InputError


def _release_values(df, col, eps=50.0):
    dom = dpcore.infer_domain(df).declared()
    rel = dpcore.synthesize(df, "flat_laplace", eps, seed=3, domain=dom, neighbours="replace", prior=0)
    return rel, set(rel.sets[0][col].dropna())


def test_leading_zeros_survive_reading_and_release():
    df = read_csv_bytes(b"zip,x\n02134,a\n10001,b\n02134,b\n00501,a\n", "zips.csv")
    assert list(df["zip"]) == ["02134", "10001", "02134", "00501"]
    rel, vals = _release_values(df, "zip")
    assert vals <= {"02134", "10001", "00501"} and "02134" in vals
    out = io.StringIO()
    rel.sets[0].to_csv(out, index=False)
    assert "02134" in out.getvalue()


def test_the_string_NA_is_a_value_in_a_text_column():
    df = read_csv_bytes(b"country,x\nNA,a\nDE,b\nNA,b\nFR,a\n", "c.csv")
    assert df["country"].isna().sum() == 0 and (df["country"] == "NA").sum() == 2
    dom = dpcore.infer_domain(df)
    assert "NA" in dom["country"].levels and not dom["country"].na


def test_NA_in_an_otherwise_numeric_column_is_missing():
    df = read_csv_bytes(b"age,x\n31,a\nNA,b\n45,a\n,b\n", "r.csv")
    assert df["age"].isna().sum() == 2 and df["age"].dropna().tolist() == [31, 45]


def test_true_TRUE_stay_as_written():
    df = read_csv_bytes(b"flag,x\ntrue,a\nTRUE,b\nfalse,b\n", "b.csv")
    assert list(df["flag"]) == ["true", "TRUE", "false"]
    _, vals = _release_values(df, "flag")
    assert vals <= {"true", "TRUE", "false"}


def test_integers_above_2_53_stay_exact():
    ids = [9007199254740993, 9007199254740994, 9007199254740995]
    text = "id,x\n" + "\n".join(f"{i},{c}" for i, c in zip(ids * 2, "ababab"))
    df = read_csv_bytes(text.encode(), "ids.csv")
    assert df["id"].dtype == np.int64 and sorted(set(df["id"])) == ids
    dom = dpcore.infer_domain(df)
    assert dom["id"].levels == tuple(ids)
    _, vals = _release_values(df, "id")
    assert vals <= set(ids) and len(vals) >= 2
    huge = read_csv_bytes(b"id\n123456789012345678901\n123456789012345678902\n", "h.csv")
    assert list(huge["id"]) == ["123456789012345678901", "123456789012345678902"]  # beyond int64: exact text


@pytest.mark.parametrize("sep,name", [(";", "semicolon"), ("\t", "tab"), ("|", "pipe"), (",", "comma")])
def test_delimiter_is_sniffed_and_reported(sep, name):
    text = sep.join(["a", "b", "c"]) + "\n" + sep.join(["1", "x", "2.5"]) + "\n" + sep.join(["3", "y", "4"]) + "\n"
    df = read_csv_bytes(text.encode(), "d.csv")
    assert list(df.columns) == ["a", "b", "c"] and df.attrs["delimiter"] == name
    assert df["a"].tolist() == [1, 3] and df["b"].tolist() == ["x", "y"]


def test_ambiguous_delimiter_is_refused_naming_the_candidates():
    with pytest.raises(InputError, match="semicolon.*comma|comma.*semicolon"):
        read_csv_bytes(b"a;b,c\n1;2,3\n4,5;6\n", "amb.csv")


@pytest.mark.parametrize("data", [b"# exported by X\na,b\n1,2\n", b"a,b\n1,2\n# note\n3,4\n"])
def test_comment_lines_are_refused_not_shifted(data):
    with pytest.raises(InputError, match="comment"):
        read_csv_bytes(data, "c.csv")


@pytest.mark.parametrize("data", [b"a,b,c\n1,2\n", b"a,b\n1,2,3\n"])
def test_short_and_long_rows_are_refused(data):
    with pytest.raises(InputError, match="ragged rows: line 2"):
        read_csv_bytes(data, "r.csv")


def test_utf16_with_bom_is_read():
    df = read_csv_bytes("a,b\nä,1\nö,2\n".encode("utf-16"), "u.csv")
    assert list(df["a"]) == ["ä", "ö"]


def _parquet(table):
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


@pytest.mark.parametrize("col", [
    pa.array([[1, 2], [3]]),
    pa.array([{"x": 1}, {"x": 2}]),
    pa.array([b"\x00", b"\x01"], type=pa.binary()),
    pa.array([[("k", 1)], [("k", 2)]], type=pa.map_(pa.string(), pa.int64())),
])
def test_parquet_nested_columns_are_refused_naming_the_column(col):
    data = _parquet(pa.table({"ok": ["a", "b"], "bad": col}))
    with pytest.raises(InputError, match="column 'bad'"):
        read_parquet_bytes(data, "p.parquet")


def test_parquet_dates_and_decimals_become_exact_text():
    import datetime
    import decimal

    t = pa.table({"d": pa.array([datetime.date(2020, 1, 2), datetime.date(2021, 3, 4)]),
                  "m": pa.array([decimal.Decimal("1.10"), decimal.Decimal("2.25")]),
                  "big": pa.array([9007199254740993, 9007199254740995], type=pa.int64())})
    df = read_parquet_bytes(_parquet(t), "p.parquet")
    assert list(df["d"]) == ["2020-01-02", "2021-03-04"] and list(df["m"]) == ["1.10", "2.25"]
    assert df["big"].tolist() == [9007199254740993, 9007199254740995]
