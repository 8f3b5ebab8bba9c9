"""Generators of hostile inputs for dpcore ([privacy-audit] input safety).

Every case is built by code from a small valid table and a list of mutations, so the
corpus is reproducible and grows by adding a mutation, not a file. Case names are
stable (they become test ids).
"""
from __future__ import annotations

import codecs
import datetime
import decimal
import io
import json
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HEADER = ["sex", "age", "region"]
ROWS = [["F", "31", "north"], ["M", "45", "south"], ["F", "62", "north"], ["M", "27", "east"],
        ["F", "39", "south"], ["M", "51", "east"], ["F", "23", "north"], ["M", "70", "south"]]
DELIMITERS = {"comma": ",", "semicolon": ";", "tab": "\t", "pipe": "|"}
LINE_ENDS = {"lf": "\n", "crlf": "\r\n", "cr": "\r"}


def csv_text(header=HEADER, rows=ROWS, sep=",", end="\n") -> str:
    return end.join(sep.join(r) for r in [header, *rows]) + end


def _with_column(name: str, values: list[str], base_rows: int = 8) -> bytes:
    """The base table plus column ``name`` holding ``values`` (cycled to the row count)."""
    n = max(base_rows, len(values))
    rows = [ROWS[i % len(ROWS)] + [values[i % len(values)]] for i in range(n)]
    return csv_text(HEADER + [name], rows).encode()


# ----------------------------------------------------------------------------- CSV files

#: values of one extra column "v": each exercises one reading rule
VALUE_KINDS: dict[str, list[str]] = {
    "leading_zeros": ["02134", "00501", "10001", "02134"],
    "leading_zero_007": ["007", "7", "12"],
    "negative_leading_zero": ["-02", "3", "4"],
    "big_ints_2p53": [str(2**53 + k) for k in range(3)],
    "big_ints_678": ["12345678901234567678", "12345678901234567679", "12345678901234567680"],
    "int64_max": [str(2**63 - 1), str(-(2**63)), "0"],
    "na_in_numbers": ["31", "NA", "45", ""],
    "nan_in_numbers": ["1.5", "NaN", "nan", "2.5"],
    "na_country": ["NA", "DE", "FR", "NA"],
    "na_lower_text": ["na", "n/a", "None", "null"],
    "booleans": ["true", "TRUE", "false", "False"],
    "yes_no": ["yes", "no", "YES", "No"],
    "mixed_types": ["1", "two", "3.5", ""],
    "inf_strings": ["inf", "-inf", "1.5", "Infinity"],
    "exponents": ["1e3", "2E-2", "3.5e+1", "1e308"],
    "tiny_exponent": ["1e-300", "2e-308", "5e-324"],
    "overflow_float": ["1e309", "2", "3"],
    "plus_sign": ["+1", "+2", "3"],
    "negative_zero": ["-0", "0", "1"],
    "hex_and_underscores": ["0x10", "1_000", "7"],
    "decimal_comma": ["1,5", "2,5", "3,0"],
    "thousands": ["1,000", "2,500", "300"],
    "whitespace_values": [" x", "x ", "x", " x "],
    "unicode_values": ["é", "e\u0301", "ß", "😀"],
    "control_chars": ["a\x01", "b\x1f", "c"],
    "all_empty": ["", "", ""],
    "constant": ["k", "k", "k"],
    "one_level_and_missing": ["k", "", "k"],
    "dates": ["2020-01-02", "2021-03-04", "2020-01-02"],
    "times": ["12:00", "13:30", "12:00"],
    "percent": ["10%", "20%", "10%"],
    "currency": ["$1", "$2", "$1"],
    "huge_field": ["x" * 100_000, "y", "z"],
    "many_levels": [f"id{i}" for i in range(300)],
    "numeric_many": [str(i) for i in range(300)],
    "floats_many": [f"{i / 7:.6f}" for i in range(300)],
    "fraction_edge": ["0.1", "0.2", "0.30000000000000004"],
}

#: encodings of the base table
ENCODINGS: dict[str, Callable[[str], bytes]] = {
    "utf8_bom": lambda t: codecs.BOM_UTF8 + t.encode(),
    "utf16_bom": lambda t: t.encode("utf-16"),
    "utf16le_nobom": lambda t: t.encode("utf-16-le"),
    "utf16be_nobom": lambda t: t.encode("utf-16-be"),
    "utf32_bom": lambda t: t.encode("utf-32"),
    "latin1": lambda t: t.replace("north", "n\u00f6rth").encode("latin-1"),
    "cp1252": lambda t: t.replace("north", "n\u20acrth").encode("cp1252"),
    "invalid_utf8": lambda t: t.encode() + b"\xff\xfe\xfd,1,2\n",
    "double_bom": lambda t: codecs.BOM_UTF8 * 2 + t.encode(),
}

COMMENT_PREFIXES = {"hash": "# exported by X", "hash_fields": "#,a,b", "hash_only": "#"}


def csv_files() -> dict[str, bytes]:
    """name → bytes of hostile CSV files (valid files among them: each must read exactly)."""
    f: dict[str, bytes] = {}
    for dn, d in DELIMITERS.items():
        for en, e in LINE_ENDS.items():
            f[f"delim_{dn}_{en}.csv"] = csv_text(sep=d, end=e).encode()
        f[f"delim_{dn}_bom.csv"] = codecs.BOM_UTF8 + csv_text(sep=d).encode()
    for a, b in (("comma", "semicolon"), ("semicolon", "tab"), ("comma", "pipe")):
        rows = [(DELIMITERS[a] if i % 2 else DELIMITERS[b]).join(r) for i, r in enumerate([HEADER, *ROWS])]
        f[f"mixed_{a}_{b}.csv"] = ("\n".join(rows) + "\n").encode()
    for en, enc in ENCODINGS.items():
        f[f"enc_{en}.csv"] = enc(csv_text())
    lines = csv_text().splitlines()
    for cn, c in COMMENT_PREFIXES.items():
        for pos in (0, 1, 4, len(lines)):
            f[f"comment_{cn}_line{pos}.csv"] = ("\n".join(lines[:pos] + [c] + lines[pos:]) + "\n").encode()
    for k in (1, 4, len(ROWS)):
        short = [r if i != k - 1 else r[:-1] for i, r in enumerate(ROWS)]
        long = [r if i != k - 1 else r + ["extra"] for i, r in enumerate(ROWS)]
        f[f"ragged_short_row{k}.csv"] = csv_text(rows=short).encode()
        f[f"ragged_long_row{k}.csv"] = csv_text(rows=long).encode()
    quoted = [[f'"{v}"' for v in r] for r in ROWS]
    f["quotes_all.csv"] = csv_text(rows=quoted).encode()
    f["quotes_unclosed_first.csv"] = csv_text(rows=[['"F', *ROWS[0][1:]], *ROWS[1:]]).encode()
    f["quotes_unclosed_last.csv"] = (csv_text() + '"M,1,east\n').encode()
    f["quotes_delim_inside.csv"] = csv_text(rows=[['"F,x"', *r[1:]] if i % 2 else r
                                                  for i, r in enumerate(ROWS)]).encode()
    f["quotes_newline_inside.csv"] = csv_text(rows=[['"F\nx"', *r[1:]] if i % 3 == 0 else r
                                                    for i, r in enumerate(ROWS)]).encode()
    f["quotes_doubled.csv"] = csv_text(rows=[['"""F"""', *r[1:]] if i % 2 else r for i, r in enumerate(ROWS)]).encode()
    f["quotes_stray.csv"] = csv_text(rows=[['F"x', *r[1:]] if i % 2 else r for i, r in enumerate(ROWS)]).encode()
    for hn, h in {"dup": ["sex", "sex", "region"], "empty_name": ["sex", "", "region"],
                  "spaces": [" sex ", "age ", " region"], "unicode": ["äöü", "名前", "emoji😀"],
                  "numeric_names": ["1", "2", "3"], "long_name": ["s" * 5000, "age", "region"],
                  "quoted_delim_name": ['"s,ex"', "age", "region"], "na_name": ["NA", "age", "region"],
                  "dup_after_strip": ["sex", "sex ", "region"], "newline_name": ['"se\nx"', "age", "region"]}.items():
        f[f"header_{hn}.csv"] = csv_text(header=h).encode()
    for kn, vals in VALUE_KINDS.items():
        f[f"values_{kn}.csv"] = _with_column("v", vals)
    f["size_empty.csv"] = b""
    f["size_newlines.csv"] = b"\n\n\n"
    f["size_spaces.csv"] = b"   \n  \n"
    f["size_header_only.csv"] = csv_text(rows=[]).encode()
    f["size_one_row.csv"] = csv_text(rows=ROWS[:1]).encode()
    f["size_two_rows.csv"] = csv_text(rows=ROWS[:2]).encode()
    f["size_one_column.csv"] = csv_text(header=["sex"], rows=[[r[0]] for r in ROWS]).encode()
    f["size_one_column_semicolon_name.csv"] = csv_text(header=['"sex;age"'], rows=[[r[0]] for r in ROWS]).encode()
    f["size_only_delims.csv"] = b",,,\n,,,\n"
    f["size_blank_rows.csv"] = csv_text().replace("\n", "\n\n").encode()
    f["size_trailing_delims.csv"] = csv_text(header=HEADER + [""], rows=[r + [""] for r in ROWS]).encode()
    f["size_1001_columns.csv"] = csv_text(header=[f"c{i}" for i in range(1001)],
                                          rows=[["1"] * 1001, ["2"] * 1001]).encode()
    f["size_40_binary_columns.csv"] = csv_text(header=[f"b{i}" for i in range(40)],
                                               rows=[[str((i >> j) & 1) for j in range(40)]
                                                     for i in range(12)]).encode()
    f["junk_binary.csv"] = bytes(range(256)) * 4
    f["junk_html.csv"] = b"<html><body>not a csv</body></html>"
    f["junk_json.csv"] = b'{"a": [1, 2, 3]}'
    f["junk_parquet_bytes.csv"] = parquet_files()["ok.parquet"]
    return f


# ------------------------------------------------------------------------- Parquet files

def _parquet(columns: dict) -> bytes:
    buf = io.BytesIO()
    base = {"sex": ["F", "M", "F", "M"]}
    n = len(base["sex"])
    pq.write_table(pa.table({**base, **{k: v if isinstance(v, pa.Array) else pa.array(v) for k, v in columns.items()}})
                   if columns else pa.table(base), buf)
    assert all(len(v) == n for v in columns.values())
    return buf.getvalue()


PARQUET_COLUMNS: dict[str, Callable[[], pa.Array]] = {
    "list": lambda: pa.array([[1, 2], [3], [], [4]]),
    "large_list": lambda: pa.array([[1], [2], [3], [4]], type=pa.large_list(pa.int64())),
    "struct": lambda: pa.array([{"k": 1}, {"k": 2}, {"k": 1}, {"k": 3}]),
    "map": lambda: pa.array([[("k", 1)], [("k", 2)], [], [("j", 1)]], type=pa.map_(pa.string(), pa.int64())),
    "binary": lambda: pa.array([b"\x00", b"\x01", b"\x00", b"\x02"], type=pa.binary()),
    "large_binary": lambda: pa.array([b"a", b"b", b"a", b"b"], type=pa.large_binary()),
    "fixed_binary": lambda: pa.array([b"ab", b"cd", b"ab", b"cd"], type=pa.binary(2)),
    # (a dictionary of lists cannot be written to Parquet: pyarrow refuses nested dictionaries)
    "dictionary_ints": lambda: pa.array([1, 2, 1, 2]).dictionary_encode(),
    "dictionary_strings": lambda: pa.array(["x", "y", "x", "y"]).dictionary_encode(),
    "timestamp": lambda: pa.array([datetime.datetime(2020, 1, 1), datetime.datetime(2021, 5, 6)] * 2),
    "timestamp_tz": lambda: pa.array([datetime.datetime(2020, 1, 1)] * 3 + [datetime.datetime(2021, 1, 1)],
                                     type=pa.timestamp("us", tz="Europe/Berlin")),
    "date": lambda: pa.array([datetime.date(2020, 1, 2), datetime.date(2021, 3, 4)] * 2),
    "time": lambda: pa.array([datetime.time(12, 0), datetime.time(13, 30)] * 2),
    "duration": lambda: pa.array([datetime.timedelta(seconds=1), datetime.timedelta(seconds=2)] * 2),
    "decimal": lambda: pa.array([decimal.Decimal("1.10"), decimal.Decimal("2.25")] * 2),
    "null": lambda: pa.nulls(4),
    "bool": lambda: pa.array([True, False, True, None]),
    "uint64_big": lambda: pa.array([2**64 - 1, 2**63, 2**64 - 1, 1], type=pa.uint64()),
    "int64_2p53": lambda: pa.array([2**53 + 1, 2**53 + 2, 2**53 + 1, 2**53 + 3]),
    "float_nan_inf": lambda: pa.array([float("nan"), float("inf"), 1.0, -float("inf")]),
    "float16": lambda: pa.array(np.array([1, 2, 1, 2], dtype=np.float16)),
    "large_string": lambda: pa.array(["a", "b", "a", "b"], type=pa.large_string()),
    "list_of_struct": lambda: pa.array([[{"a": 1}], [], [{"a": 2}], [{"a": 1}]]),
}


def parquet_files() -> dict[str, bytes]:
    f = {"ok.parquet": _parquet({"region": ["north", "south", "north", "east"]})}
    for cn, make in PARQUET_COLUMNS.items():
        f[f"col_{cn}.parquet"] = _parquet({cn: make()})
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_arrays([pa.array([1, 2]), pa.array([3, 4])], names=["a", "a"]), buf)
    f["dup_names.parquet"] = buf.getvalue()
    buf = io.BytesIO()
    pq.write_table(pa.table({"a": pa.array([], type=pa.string())}), buf)
    f["zero_rows.parquet"] = buf.getvalue()
    f["truncated.parquet"] = f["ok.parquet"][:-20]
    f["magic_only.parquet"] = b"PAR1 not really parquet PAR1"
    f["csv_as_parquet.parquet"] = csv_text().encode()
    f["empty.parquet"] = b""
    return f


def table_files() -> dict[str, bytes]:
    return {**csv_files(), **parquet_files()}


# -------------------------------------------------------------------------- domain files

GOOD_DOMAIN = {"format": "dpcore-domain/1", "source": "declared", "attributes": [
    {"name": "sex", "type": "categorical", "levels": ["F", "M"], "na": False, "dtype": "object"},
    {"name": "age", "type": "numeric", "edges": [0, 40, 100], "na": False, "dtype": "int64", "origin": "declared"},
    {"name": "region", "type": "categorical", "levels": ["east", "north", "south"], "na": False, "dtype": "object"}]}

_DELETE = object()

#: (attribute index, key) → hostile values for that key
ATTRIBUTE_MUTATIONS: dict[tuple[int, str], list] = {
    (0, "na"): ["false", "true", 1, 0, None, [], {}],
    (0, "levels"): ["FM", None, 5, [["F"], ["M"]], {"F": 1}, [], ["F", "F", "M"], ["F"], ["F", None],
                    ["F", "M", 1.5, True], ["F", "M", ""], ["F", "M", "m"], [1, 1.0], _DELETE],
    (1, "edges"): [["0", "40", "100"], [False, True], [100, 40, 0], [0], None, "0,100", [0, 0], [0, 40],
                   [0, 0.5, 100], [-1e308, 1e308], [0, 10**400], [0, 50, 50, 100], [], _DELETE],
    (0, "dtype"): ["bool", "nonsense", 5, None, "datetime64[ns]", "int64", "category", "float64", "string", "boolean"],
    (1, "dtype"): ["object", "bool", "float64", "uint8", "Int64"],
    # where the edges came from: only declared, public bounds and DP quantiles may be declared public
    (1, "origin"): ["data_range", "unstated", "public_bounds", "dp_quantiles", "DECLARED", "", 5, None, ["declared"],
                    _DELETE],
    (0, "type"): ["ordinal", None, 5, "numeric", "CATEGORICAL"],
    (1, "type"): ["categorical", "Numeric"],
    (0, "name"): [_DELETE, "", 7, None, "gender", "sex ", ["sex"]],
    (2, "colour"): ["red"],
}

SOURCE_VALUES = ["inferred from data — confirm before release", "declared", "DECLARED", " declared ", 1, "trust me",
                 None, True, _DELETE]


def _mutated(change: Callable[[dict], None]) -> bytes:
    d = json.loads(json.dumps(GOOD_DOMAIN))
    change(d)
    return json.dumps(d, allow_nan=True).encode()


def _set_attr(i: int, key: str, value) -> Callable[[dict], None]:
    def change(d):
        if value is _DELETE:
            d["attributes"][i].pop(key, None)
        else:
            d["attributes"][i][key] = value
    return change


def _set_source(value) -> Callable[[dict], None]:
    def change(d):
        if value is _DELETE:
            d.pop("source")
        else:
            d["source"] = value
    return change


def domain_files() -> dict[str, bytes]:
    """name → bytes of domain files for the base table (the valid one is ``ok.json``)."""
    good = json.dumps(GOOD_DOMAIN)
    f = {"ok.json": good.encode()}
    for (i, key), values in ATTRIBUTE_MUTATIONS.items():
        for j, v in enumerate(values):
            f[f"attr{i}_{key}_{j}.json"] = _mutated(_set_attr(i, key, v))
    for j, v in enumerate(SOURCE_VALUES):
        f[f"source_{j}.json"] = _mutated(_set_source(v))
    f["dup_attribute.json"] = _mutated(lambda d: d["attributes"].append(d["attributes"][0]))
    f["missing_attribute.json"] = _mutated(lambda d: d["attributes"].pop(2))
    f["extra_attribute.json"] = _mutated(lambda d: d["attributes"].append({"name": "x", "levels": ["a", "b"]}))
    f["reordered_attributes.json"] = _mutated(lambda d: d["attributes"].reverse())
    f["many_levels.json"] = _mutated(_set_attr(2, "levels",
                                               ["east", "north", "south"] + [f"l{k}" for k in range(20000)]))
    for sn, text in {"empty": "", "spaces": "   ", "not_json": "{not json", "array": "[1, 2]", "null": "null",
                     "string": '"domain"', "number": "3", "attrs_null": '{"attributes": null}',
                     "attrs_dict": '{"attributes": {"sex": ["F", "M"]}}', "attrs_empty": '{"attributes": []}',
                     "attrs_strings": '{"attributes": ["sex", "age"]}', "attrs_number": '{"attributes": 3}',
                     "no_attrs": '{"source": "declared"}',
                     "nan_level": '{"attributes": [{"name": "sex", "levels": ["F", NaN]}]}',
                     "inf_edge": '{"attributes": [{"name": "age", "type": "numeric", "edges": [0, Infinity]}]}',
                     "huge_float_level": '{"attributes": [{"name": "sex", "levels": [1e999, 2]}]}',
                     "huge_int_level": '{"attributes": [{"name": "sex", "levels": [' + "9" * 5000 + "]}]}",
                     "trailing_garbage": good + " trailing", "two_objects": good + good,
                     "single_quotes": good.replace('"', "'"), "comment": "// domain\n" + good,
                     "deep_list": "[" * 100_000 + "]" * 100_000,
                     "deep_dict": '{"a":' * 20_000 + "1" + "}" * 20_000}.items():
        f[f"shape_{sn}.json"] = text.encode()
    for en, enc in {"utf8_bom": lambda t: codecs.BOM_UTF8 + t.encode(), "utf16": lambda t: t.encode("utf-16"),
                    "utf16le_nobom": lambda t: t.encode("utf-16-le"), "utf32": lambda t: t.encode("utf-32"),
                    "latin1": lambda t: t.replace("north", "n\u00f6rth").encode("latin-1"),
                    "binary": lambda t: bytes(range(256))}.items():
        f[f"enc_{en}.json"] = enc(good)
    return f


# ------------------------------------------------------------------ option values (CLI)

HOSTILE_NUMBER_TEXT = ["0", "-1", "-0", "nan", "NaN", "inf", "-inf", "1e308", "1e-300", "abc", "", "true",
                       "2.5", "99999999999999999999", "0x10", "1_000"]

#: synth option → (hostile values, extra arguments the option needs)
SYNTH_OPTIONS: dict[str, tuple[list[str], list[str]]] = {
    "--epsilon": (HOSTILE_NUMBER_TEXT + ["1e-20", "800"], []),
    "--sets": (HOSTILE_NUMBER_TEXT + ["1000000", "1001"], []),
    "--layers": (HOSTILE_NUMBER_TEXT + ["4"], []),
    "--r": (HOSTILE_NUMBER_TEXT + ["1", "0.999999"], []),
    "--seed": (HOSTILE_NUMBER_TEXT + [str(2**70)], []),
    "--count-share": (HOSTILE_NUMBER_TEXT + ["1"], []),
    "--max-records": (HOSTILE_NUMBER_TEXT + ["5"], []),
    "--prior": (HOSTILE_NUMBER_TEXT, ["--method", "flat_laplace"]),
    "--degree": (HOSTILE_NUMBER_TEXT + ["100"], ["--method", "privbayes"]),
    "--method": (["bogus", "", "STEPS", "flat"], []),
    "--select": (["bogus", "", "user", "nonprivate"], []),
    "--utility": (["bogus", ""], []),
    "--consistency": (["bogus", ""], []),
    "--synthesis": (["bogus", ""], []),
    "--noise": (["gaussian", ""], []),
    "--neighbours": (["bogus", "", "replace"], []),
    "--allocation": (["bogus", "0.5,0.5", "1,2,3", "nan,nan,nan", "-1,1,1", "", "inf,0,0"], []),
    "--order": (["sex;sex", "nope", ";", "sex;;age", "sex,age,region", "", ",", "sex;age;region;sex"], []),
    "--margins": (["nope", "sex,sex", ";", "sex;sex", ""], ["--method", "ipf"]),
}

NUMERIC_SPECS = ["age=", "age=0,40,100", "age=100,0", "age=0:100:0", "age=0:100:-1", "age=a:b:c", "age=0:100",
                 "age=nan,1", "age=0,inf", "nope=0,1", "age", "age=0:100:2.5", "age=0,1e400"]


# ------------------------------------------------------------------ API arguments

_HOSTILE_PY = [True, False, None, "1", 2.5, -1, 0, float("nan"), float("inf"), 1e308, 10**30, [1], {}, np.float64(2.0),
               np.int64(2), np.bool_(True)]

#: keyword → values; each (keyword, value) is one call of dpcore.synthesize
API_ARGUMENTS: dict[str, list] = {
    "epsilon": _HOSTILE_PY + [1e-300, "abc", np.float32(1.0)],
    "sets": _HOSTILE_PY + [2.0, 1001, np.int8(1)],  # (1000, the cap, is accepted but takes seconds)
    "seed": _HOSTILE_PY + [2**70, -5],
    "layers": _HOSTILE_PY + [3, 4],
    "r": _HOSTILE_PY + [0.5],
    "count_share": _HOSTILE_PY + [0.5],
    "max_records": _HOSTILE_PY + [5],
    "max_cells": _HOSTILE_PY + ["1e3"],
    "allocation": [5, "x", [True, 1], [0.5, "half"], {"a": 1}, [float("nan"), 1], [], None],
    "order": [3, [["sex"], []], ["nope"], "sex;sex", [["sex", 1]], {"sex": 1}],
    "neighbours": [None, "", "add", 1, True],
    "domain": [{"attributes": None}, {"attributes": []}, 3, "/nonexistent/domain.json", {"x": 1}, [1, 2]],
}


# ------------------------------------------------------------ tiny tables on wide domains

#: name → (records, attributes and their level counts): a handful of records over a domain
#: far wider than the table ([exact-sparse]). The noisy record count is often 0 here, and the
#: leaf layer of STEPS and flat Laplace's table take the sparse path (2^16 cells and more).
TINY_WIDE = {
    "0rec_17bin": (0, [2] * 17),
    "1rec_17bin": (1, [2] * 17),
    "2rec_20bin": (2, [2] * 20),
    "5rec_24bin": (5, [2] * 24),
    "20rec_17bin": (20, [2] * 17),
    "3rec_6x40": (3, [40] * 6),
    "8rec_mixed_na": (8, [2] * 12 + [7, 300]),
}


def tiny_wide_table(name: str, seed: int = 0):
    """(records, declared domain) of a TINY_WIDE case; the last attribute of "…_na" cases allows
    NA and holds it once; levels absent from the records are declared all the same."""
    import pandas as pd

    from dpcore.data.domain import Attribute, Domain

    n, levels = TINY_WIDE[name]
    rng = np.random.default_rng(seed)
    na = name.endswith("_na")
    attrs, cols = [], {}
    for j, k in enumerate(levels):
        col = f"v{j:02d}"
        names = tuple(f"l{i}" for i in range(k))
        values = [names[i] for i in rng.integers(0, k, n)]
        if na and j == len(levels) - 1 and n:
            values[0] = None
        attrs.append(Attribute(col, "categorical", levels=names, na=na and j == len(levels) - 1))
        cols[col] = pd.Series(values, dtype=object)
    return pd.DataFrame(cols), Domain(tuple(attrs)).declared()


def release_or_one_line_error(data, bound_s: float, *args, **kwargs):
    """``dpcore.synthesize(data, *args, **kwargs)``, or None after a one-line error; either within
    ``bound_s`` seconds."""
    import time

    import dpcore

    t = time.perf_counter()
    try:
        return dpcore.synthesize(data, *args, **kwargs)
    except dpcore.DPCoreError as exc:
        msg = str(exc)
        assert len(msg.splitlines()) == 1 and len(msg) < 700, msg
        return None
    finally:
        assert time.perf_counter() - t < bound_s
