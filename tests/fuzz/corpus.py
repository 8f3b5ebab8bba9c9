"""A generated corpus of hostile inputs ([privacy-audit] item 6).

Every case must end in valid output or a one-line error naming the column, option or
value, within a time bound; never an internal error, never silently altered data.
Cases are built by code so the corpus is reproducible and easy to extend.
"""
from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

GOOD = "sex,age,region\nF,31,north\nM,45,south\nF,62,north\nM,27,east\nF,39,south\nM,51,east\n"


def _parquet(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def csv_files() -> dict[str, bytes]:
    """Hostile table files (name → bytes); the suffix decides the reader."""
    f: dict[str, bytes] = {}
    f["empty.csv"] = b""
    f["blank_lines.csv"] = b"\n\n\n"
    f["header_only.csv"] = b"a,b,c\n"
    f["one_row.csv"] = b"a,b\nx,1\n"
    f["one_column.csv"] = b"a\nx\ny\nx\n"
    f["bom.csv"] = b"\xef\xbb\xbf" + GOOD.encode()
    f["utf16.csv"] = GOOD.encode("utf-16")
    f["latin1.csv"] = "name,x\nJos\xe9,1\nAna,2\n".encode("latin-1")
    f["binary_garbage.csv"] = bytes(range(256)) * 4
    f["nul_bytes.csv"] = b"a,b\nx\x00,1\ny,2\n"
    f["crlf.csv"] = GOOD.replace("\n", "\r\n").encode()
    f["cr_only.csv"] = GOOD.replace("\n", "\r").encode()
    for sep, nm in ((";", "semicolon"), ("\t", "tab"), ("|", "pipe")):
        f[f"{nm}.csv"] = GOOD.replace(",", sep).encode()
    f["mixed_delims.csv"] = b"a;b,c\n1;2,3\n4,5;6\n"
    f["comment_first.csv"] = b"# exported 2026\n" + GOOD.encode()
    f["comment_middle.csv"] = (GOOD + "# trailer\n").encode()
    f["ragged_long.csv"] = b"a,b\n1,2\n3,4,5\n"
    f["ragged_short.csv"] = b"a,b,c\n1,2,3\n4,5\n"
    f["unclosed_quote.csv"] = b'a,b\n"x,1\ny,2\n'
    f["quoted_delims.csv"] = b'a,b\n"x,y",1\n"z,w",2\n"x,y",3\n'
    f["embedded_newline.csv"] = b'a,b\n"line\nbreak",1\nplain,2\n'
    f["dup_header.csv"] = b"a,a,b\n1,2,3\n4,5,6\n"
    f["empty_header_name.csv"] = b"a,,b\n1,2,3\n4,5,6\n"
    f["whitespace_header.csv"] = b" a , b \n1,2\n3,4\n"
    f["unicode_names.csv"] = "äöü,名前,emoji😀\nx,y,z\nx,w,z\n".encode()
    f["leading_zeros.csv"] = b"zip,x\n02134,a\n00501,b\n10001,a\n02134,b\n"
    f["country_na.csv"] = b"country,x\nNA,a\nDE,b\nNA,a\nFR,b\n"
    f["booleans.csv"] = b"flag,x\ntrue,a\nTRUE,b\nfalse,a\nFalse,b\n"
    f["big_ints.csv"] = b"id,x\n9007199254740993,a\n9007199254740994,b\n9007199254740995,a\n"
    f["huge_ints.csv"] = b"id,x\n123456789012345678901234,a\n123456789012345678901235,b\n"
    f["mixed_types.csv"] = b"v,x\n1,a\ntwo,b\n3.5,a\n,b\n"
    f["nan_strings.csv"] = b"v,x\nNaN,a\nnan,b\n1.5,a\n2.5,b\n"
    f["inf_values.csv"] = b"v,x\ninf,a\n-inf,b\n1.5,a\n"
    f["all_missing_col.csv"] = b"a,b\n,x\n,y\n"
    f["constant_col.csv"] = b"a,b\nk,x\nk,y\nk,x\n"
    f["identifier_col.csv"] = ("id,x\n" + "".join(f"id{i},{'ab'[i % 2]}\n" for i in range(400))).encode()
    f["huge_field.csv"] = b"a,b\n" + b"x" * 200_000 + b",1\ny,2\n"
    f["many_columns.csv"] = (",".join(f"c{i}" for i in range(1200)) + "\n" + ",".join("1" for _ in range(1200)) + "\n").encode()
    f["negative_numbers.csv"] = b"v,x\n-1,a\n-2,b\n-3,a\n"
    f["exponents.csv"] = b"v,x\n1e3,a\n2E-2,b\n3.5e+1,a\n"
    f["plus_sign.csv"] = b"v,x\n+1,a\n+2,b\n3,a\n"
    f["trailing_delim.csv"] = b"a,b,\n1,2,\n3,4,\n"
    f["spaces_values.csv"] = b"a,b\n x ,1\nx,2\n"
    f["only_delims.csv"] = b",,,\n,,,\n"
    f["html.csv"] = b"<html><body>not a csv</body></html>"
    f["json.csv"] = b'{"a": [1, 2, 3]}'
    f["deep_quotes.csv"] = b'a,b\n"""x""",1\n"y",2\n'
    f["long_header.csv"] = ("a" * 5000 + ",b\n1,2\n3,4\n").encode()
    f["ok.parquet"] = _parquet(pa.table({"a": ["x", "y", "x"], "b": [1, 2, 3]}))
    f["list.parquet"] = _parquet(pa.table({"a": ["x", "y"], "l": pa.array([[1, 2], [3]])}))
    f["struct.parquet"] = _parquet(pa.table({"a": ["x", "y"], "s": pa.array([{"k": 1}, {"k": 2}])}))
    f["binary.parquet"] = _parquet(pa.table({"a": ["x", "y"], "b": pa.array([b"\x00", b"\x01"])}))
    f["map.parquet"] = _parquet(pa.table({"a": ["x", "y"],
                                          "m": pa.array([[("k", 1)], [("k", 2)]], type=pa.map_(pa.string(), pa.int64()))}))
    f["dict.parquet"] = _parquet(pa.table({"a": pa.array(["x", "y", "x"]).dictionary_encode(), "b": [1, 2, 1]}))
    f["timestamps.parquet"] = _parquet(pa.table({"t": pa.array(pd.to_datetime(["2020-01-01", "2021-05-06", "2020-01-01"])),
                                                 "b": ["x", "y", "x"]}))
    f["nulltype.parquet"] = _parquet(pa.table({"a": pa.nulls(3), "b": ["x", "y", "x"]}))
    f["empty_table.parquet"] = _parquet(pa.table({"a": pa.array([], type=pa.string())}))
    f["truncated.parquet"] = _parquet(pa.table({"a": ["x", "y"]}))[:-20]
    f["not_parquet.parquet"] = b"PAR1 this is not parquet"
    f["bools.parquet"] = _parquet(pa.table({"b": [True, False, True], "a": ["x", "y", "x"]}))
    f["bigint.parquet"] = _parquet(pa.table({"id": pa.array([9007199254740993, 9007199254740995, 9007199254740993]),
                                             "a": ["x", "y", "x"]}))
    f["dup_cols.parquet"] = _parquet(pa.Table.from_arrays([pa.array([1, 2]), pa.array([3, 4])], names=["a", "a"]))
    return f


def domain_files() -> dict[str, bytes]:
    """Hostile domain.json files for the GOOD table (sex, age, region)."""
    ok = {"format": "dpcore-domain/1", "source": "declared", "attributes": [
        {"name": "sex", "type": "categorical", "levels": ["F", "M"], "na": False, "dtype": "object"},
        {"name": "age", "type": "numeric", "edges": [0, 40, 100], "na": False, "dtype": "int64"},
        {"name": "region", "type": "categorical", "levels": ["east", "north", "south"], "na": False, "dtype": "object"}]}

    def variant(change) -> bytes:
        d = json.loads(json.dumps(ok))
        change(d)
        return json.dumps(d).encode()

    def attr(i, **kw):
        def change(d):
            for k, v in kw.items():
                if v is _DEL:
                    d["attributes"][i].pop(k, None)
                else:
                    d["attributes"][i][k] = v
        return change

    f: dict[str, bytes] = {"ok.json": json.dumps(ok).encode()}
    f["empty.json"] = b""
    f["not_json.json"] = b"{not json"
    f["array.json"] = b"[1, 2, 3]"
    f["null.json"] = b"null"
    f["string.json"] = b'"domain"'
    f["attributes_null.json"] = b'{"attributes": null}'
    f["attributes_dict.json"] = b'{"attributes": {"sex": ["F", "M"]}}'
    f["attributes_empty.json"] = b'{"attributes": []}'
    f["attributes_strings.json"] = b'{"attributes": ["sex", "age"]}'
    f["deep.json"] = b"[" * 50_000 + b"]" * 50_000
    f["deep_dict.json"] = b'{"a":' * 5000 + b"1" + b"}" * 5000
    f["utf16.json"] = json.dumps(ok).encode("utf-16")
    f["latin1.json"] = json.dumps(ok).replace("north", "n\u00f6rth").encode("latin-1")
    f["na_string_false.json"] = variant(attr(0, na="false"))
    f["na_string_true.json"] = variant(attr(0, na="true"))
    f["na_int.json"] = variant(attr(0, na=1))
    f["levels_string.json"] = variant(attr(0, levels="FM"))
    f["levels_null.json"] = variant(attr(0, levels=None))
    f["levels_nested.json"] = variant(attr(0, levels=[["F"], ["M"]]))
    f["levels_dict.json"] = variant(attr(0, levels={"F": 1}))
    f["levels_empty.json"] = variant(attr(0, levels=[]))
    f["levels_dup.json"] = variant(attr(0, levels=["F", "F", "M"]))
    f["levels_missing_value.json"] = variant(attr(0, levels=["F"]))
    f["levels_nan.json"] = b'{"attributes": [{"name": "sex", "levels": ["F", NaN]}]}'
    f["dtype_bool_strings.json"] = variant(attr(0, dtype="bool"))
    f["dtype_nonsense.json"] = variant(attr(0, dtype="nonsense"))
    f["dtype_int.json"] = variant(attr(0, dtype=5))
    f["type_unknown.json"] = variant(attr(0, type="ordinal"))
    f["name_missing.json"] = variant(attr(0, name=_DEL))
    f["name_empty.json"] = variant(attr(0, name=""))
    f["name_number.json"] = variant(attr(0, name=7))
    f["name_unknown_col.json"] = variant(attr(0, name="gender"))
    f["unknown_key.json"] = variant(attr(0, colour="red"))
    f["edges_strings.json"] = variant(attr(1, edges=["0", "40", "100"]))
    f["edges_bools.json"] = variant(attr(1, edges=[False, True]))
    f["edges_decreasing.json"] = variant(attr(1, edges=[100, 40, 0]))
    f["edges_single.json"] = variant(attr(1, edges=[0]))
    f["edges_null.json"] = variant(attr(1, edges=None))
    f["edges_inf.json"] = b'{"attributes": [{"name": "age", "type": "numeric", "edges": [0, Infinity]}]}'
    f["edges_nan.json"] = b'{"attributes": [{"name": "age", "type": "numeric", "edges": [0, NaN, 5]}]}'
    f["edges_too_narrow.json"] = variant(attr(1, edges=[0, 40]))
    f["edges_int_empty_bin.json"] = variant(attr(1, edges=[0, 0.5, 100]))
    f["edges_huge.json"] = variant(attr(1, edges=[-1e308, 1e308]))
    f["source_inferred.json"] = variant(lambda d: d.update(source="inferred from data — confirm before release"))
    f["source_number.json"] = variant(lambda d: d.update(source=1))
    f["source_other.json"] = variant(lambda d: d.update(source="trust me"))
    f["dup_attribute.json"] = variant(lambda d: d["attributes"].append(d["attributes"][0]))
    f["missing_attribute.json"] = variant(lambda d: d["attributes"].pop(2))
    f["extra_attribute.json"] = variant(lambda d: d["attributes"].append(
        {"name": "extra", "levels": ["a", "b"]}))
    f["many_levels.json"] = variant(attr(2, levels=["east", "north", "south"] + [f"l{i}" for i in range(5000)]))
    f["trailing_garbage.json"] = json.dumps(ok).encode() + b" trailing"
    f["huge_number.json"] = b'{"attributes": [{"name": "sex", "levels": [1e999, 2]}]}'
    return f


class _Del:
    pass


_DEL = _Del()


def table(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"sex": rng.choice(["F", "M"], n), "age": rng.integers(18, 90, n),
                         "region": rng.choice(["east", "north", "south"], n)})


HOSTILE_NUMBERS = ["0", "-1", "nan", "inf", "1e308", "1e-300", "abc", "", "99999999999999999999", "0.5"]

#: (option, values) for `python -m dpcore synth`
SYNTH_OPTIONS = {
    "--epsilon": HOSTILE_NUMBERS + ["1e-20", "1e-9"],
    "--sets": HOSTILE_NUMBERS + ["1000000", "2.5"],
    "--layers": HOSTILE_NUMBERS + ["3", "4"],
    "--r": HOSTILE_NUMBERS + ["1", "0.99"],
    "--seed": HOSTILE_NUMBERS + ["-5"],
    "--allocation": ["nonsense", "0.5,0.5", "1,2,3", "nan,nan,nan", "-1,1,1", ""],
    "--order": ["sex;sex", "nope", ";", "sex;;age", "sex,age,region", ""],
    "--select": ["bogus", "", "user"],
    "--utility": ["bogus", ""],
    "--consistency": ["bogus", ""],
    "--synthesis": ["bogus", ""],
    "--noise": ["gaussian", ""],
    "--method": ["bogus", "", "STEPS"],
    "--neighbours": ["bogus", "", "replace"],
    "--count-share": HOSTILE_NUMBERS,
    "--max-records": HOSTILE_NUMBERS + ["5"],
    "--prior": HOSTILE_NUMBERS,
    "--margins": ["nope", "sex,sex", ";", "sex;sex"],
    "--degree": HOSTILE_NUMBERS,
}

#: direct API calls: keyword arguments for dpcore.synthesize on table()
API_KWARGS = (
    [{"epsilon": v} for v in (True, False, None, "1", [1], -1, 0, float("nan"), float("inf"), 1e-300, 1e-19, np.float64(1))]
    + [{"sets": v} for v in (True, 2.5, "2", None, np.int64(2), np.int8(1), 0, -3, 10**7, float("nan"))]
    + [{"seed": v} for v in (True, 1.5, "7", -1, np.int64(3), 2**70)]
    + [{"method": v} for v in (None, "", "STEPS", 3, "nope")]
    + [{"neighbours": v} for v in (None, "", "add", 1, "replace")]
    + [{"count_share": v} for v in (True, 0, 1, -0.1, float("nan"), "0.1", 0.5)]
    + [{"max_records": v} for v in (0, True, 2.5, 10**20, 5, "9")]
    + [{"layers": v} for v in (0, -1, True, 1.5, 4, "2", np.int64(2))]
    + [{"order": v} for v in ("sex;sex", [["sex"], []], 3, ["nope"], [["sex", "age"]])]
    + [{"domain": v} for v in ({"attributes": None}, {"attributes": []}, 3, "/nonexistent.json", {"x": 1})]
    + [{"method": "flat_laplace", "prior": v} for v in (-1, float("inf"), "1", None)]
    + [{"method": "ipf", "margins": v} for v in ("nope", [], [[]], 3, "sex;sex")]
    + [{"method": "privbayes", "degree": v} for v in (0, True, 2.5, 100)]
    + [{"bogus_option": 1}, {"method": "flat_laplace", "layers": 2}]
)
