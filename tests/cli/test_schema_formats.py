"""[private-domain] item 5: neighbouring tables, one record apart, that a file's reader would type differently give
releases of the same structure under the declared schema, for CSV, Parquet, SPSS (.sav) and Stata (.dta).

Each pair is D and D' = D plus one record that flips a type the reader reads from the values, written the way the
format stores it: a text value in a whole-number column (Parquet, SPSS and Stata cannot mix text and numbers in a
column, so the producer writes that column as text), 2.5 in a whole-number column (stored as doubles), a missing
whole number (an empty CSV field, a Parquet null, SPSS's and Stata's system missing) and a missing true/false (a
Parquet boolean null; SPSS and Stata have no booleans: 'owner' is 0/1 numbers, and their files also carry 'insured',
0/1 labelled no/yes; the CSV reader reads true/false as text whatever the record, so CSV has no such flip). Every
release runs `synth --dp-domain --schema declared.json` through the CLI; the published manifest's domain structure
(names, kinds, dtypes, missing flags: everything but the levels and edges, which are DP outputs) must be equal, the
release DP, and the values that did not fit their type counted curator-only (the private manifest and the CLI, never
the published manifest). A negative control without --schema (types read from the values) shows the structures do
differ, and the release is NOT DP.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpcore.cli.commands import main
from dpcore.data.io import read_table
from dpcore.data.schema import Schema

pyreadstat = pytest.importorskip("pyreadstat")

N = 1200
FORMATS = {"csv": ".csv", "parquet": ".parquet", "spss": ".sav", "stata": ".dta"}
#: the labelled no/yes column that SPSS and Stata files carry (value labels: the reader makes them text)
YES_NO = {0: "no", 1: "yes"}
LABELLED = ("spss", "stata")

DECLARED = {"source": "declared", "columns": [
    {"name": "term", "type": "whole", "role": "code", "nullable": False},
    {"name": "income", "type": "number", "nullable": True},
    {"name": "job", "type": "text", "nullable": True},
    {"name": "owner", "type": "boolean", "nullable": True},
    {"name": "kids", "type": "whole", "role": "count", "nullable": True},
]}
INSURED = {"name": "insured", "type": "boolean", "nullable": True}

#: per format, the added record's flipped value (column, value); None is missing (no misfit: nothing counted)
FLIPS = {
    "csv": {"text in a whole column": ("kids", "many"), "2.5 in a whole column": ("kids", 2.5),
            "an empty whole-number field": ("kids", None)},
    "parquet": {"text in a whole column": ("kids", "many"), "2.5 in a whole column": ("kids", 2.5),
                "a null whole number": ("kids", None), "a null boolean": ("owner", None)},
    "spss": {"text in a whole column": ("kids", "many"), "2.5 in a whole column": ("kids", 2.5),
             "a missing whole number": ("kids", None), "a missing 0/1": ("owner", None)},
    "stata": {"text in a whole column": ("kids", "many"), "2.5 in a whole column": ("kids", 2.5),
              "a missing whole number": ("kids", None), "a missing 0/1": ("owner", None)},
}
PAIRS = [(fmt, flip) for fmt, flips in FLIPS.items() for flip in flips]
RELEASE = ["--dp-domain", "--epsilon", "1", "--delta", "1e-9", "--method", "mst", "--seed", "0", "--no-book"]


def _records(fmt: str) -> list[dict]:
    rng = np.random.default_rng(11)
    df = pd.DataFrame({"term": rng.choice([12, 24, 36], N), "income": np.round(rng.lognormal(7, 1, N), 2),
                       "job": rng.choice(["fixed", "freelance", "none"], N), "owner": rng.choice([True, False], N),
                       "kids": rng.integers(0, 4, N)})
    if fmt in LABELLED:
        df["insured"] = rng.integers(0, 2, N)
    return [{k: v.item() if hasattr(v, "item") else v for k, v in r.items()} for r in df.to_dict("records")]


def _neighbour(fmt: str, flip: str) -> list[dict]:
    col, value = FLIPS[fmt][flip]
    rows = _records(fmt)
    return [*rows, {**rows[0], col: value}]


def _is_whole(v) -> bool:
    return isinstance(v, int) or (isinstance(v, float) and math.isfinite(v) and v.is_integer())


def _column(values: list):
    """A column stored as the format's producer would: text if any value is text, doubles if any is not whole."""
    present = [v for v in values if v is not None]
    if any(isinstance(v, str) for v in present):
        return "text", [None if v is None else str(v) for v in values]
    if all(isinstance(v, bool) for v in present):
        return "bool", values
    if all(_is_whole(v) for v in present):
        return "int", values
    return "float", values


def _write_parquet(rows: list[dict], path) -> None:
    arrow = {"text": pa.string(), "bool": pa.bool_(), "int": pa.int64(), "float": pa.float64()}
    cols = {}
    for c in rows[0]:
        kind, values = _column([r[c] for r in rows])
        cols[c] = pa.array(values, arrow[kind])  # a null keeps the column int64 / bool in the file
    pq.write_table(pa.table(cols), path)


def _write_readstat(rows: list[dict], path, writer) -> None:
    """SPSS and Stata: numbers are doubles (or Stata's integer types) with system missing, no booleans (0/1), text
    a string variable; 'insured' carries the value labels no/yes."""
    cols = {}
    for c in rows[0]:
        kind, values = _column([r[c] for r in rows])
        if kind == "text":
            cols[c] = pd.Series(["" if v is None else v for v in values], dtype=object)
        else:
            nums = [np.nan if v is None else float(v) for v in values]
            cols[c] = pd.Series(nums, dtype="float64") if np.isnan(nums).any() or kind == "float" \
                else pd.Series(nums).astype("int64")
    writer(pd.DataFrame(cols), str(path), variable_value_labels={"insured": YES_NO})


def _write(fmt: str, rows: list[dict], path) -> None:
    if fmt == "csv":
        pd.DataFrame(rows, dtype=object).to_csv(path, index=False)  # None: the empty field; 2.5 and "many" as written
    elif fmt == "parquet":
        _write_parquet(rows, path)
    else:
        _write_readstat(rows, path, pyreadstat.write_sav if fmt == "spss" else pyreadstat.write_dta)


def _declared(fmt: str, tmp_path):
    d = json.loads(json.dumps(DECLARED))
    if fmt in LABELLED:
        d["columns"].append(INSURED)
    path = tmp_path / f"declared_{fmt}.json"
    path.write_text(json.dumps(d))
    return path


def _release(data, out, schema=None) -> tuple[dict, dict]:
    """The published and the private manifest of `synth FILE --dp-domain ...`."""
    private = out.parent / f"{out.name}_private.json"
    args = ["synth", str(data), *RELEASE, "--out", str(out), "--private-manifest", str(private)]
    assert main([*args, *(["--schema", str(schema)] if schema else [])]) == 0
    return json.loads((out / "manifest.json").read_text()), json.loads(private.read_text())


def _structure(manifest: dict) -> list[dict]:
    """The domain's structure: every attribute's keys but its levels and edges (DP outputs)."""
    return [{k: v for k, v in a.items() if k not in ("levels", "edges")} for a in manifest["domain"]["attributes"]]


def _unfit(private: dict) -> dict:
    return private.get("curator_only_not_dp", {}).get("values_not_fitting_their_type", {})


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    """Per format: D's file, its declared schema and its release (once for the module)."""
    made = {}
    for fmt, suffix in FORMATS.items():
        tmp = tmp_path_factory.mktemp(f"base_{fmt}")
        data = tmp / f"d{suffix}"
        _write(fmt, _records(fmt), data)
        schema = _declared(fmt, tmp)
        made[fmt] = (data, schema, _release(data, tmp / "out", schema))
    return made


@pytest.mark.parametrize("fmt, flip", PAIRS)
def test_one_record_that_flips_a_readers_type_leaves_the_declared_release_alike(bases, tmp_path, fmt, flip, capsys):
    data, schema, (man_d, priv_d) = bases[fmt]
    data2 = tmp_path / f"d2{FORMATS[fmt]}"
    _write(fmt, _neighbour(fmt, flip), data2)
    col, value = FLIPS[fmt][flip]
    # the pair is a real flip: the reader types the column otherwise (the proposal read from the values differs)
    assert Schema.propose(read_table(data))[col] != Schema.propose(read_table(data2))[col]
    capsys.readouterr()
    man_d2, priv_d2 = _release(data2, tmp_path / "out", schema)
    said = capsys.readouterr().out
    assert man_d["dp"] and man_d2["dp"], man_d2.get("dp_reason")
    assert _structure(man_d) == _structure(man_d2)
    assert [a["name"] for a in man_d["domain"]["attributes"]] == list(pd.read_csv(tmp_path / "out" / "synthetic_1.csv",
                                                                                 nrows=0).columns)
    assert _unfit(priv_d) == {}
    # the value that did not fit its type is missing now, counted for the curator only (a missing value is no misfit)
    assert _unfit(priv_d2) == ({} if value is None else {col: 1})
    assert ("NOT DP, curator-only: values that did not fit their declared type (now missing): kids 1" in said) \
        == (value is not None)
    assert "values_not_fitting_their_type" not in json.dumps(man_d2)


@pytest.mark.parametrize("fmt", FORMATS)
def test_without_a_schema_the_types_read_from_the_values_change_the_structure_and_are_not_dp(tmp_path, fmt, capsys):
    """The negative control: the same pair (text in a whole-number column) released on the reader's types."""
    data, data2 = tmp_path / f"d{FORMATS[fmt]}", tmp_path / f"d2{FORMATS[fmt]}"
    _write(fmt, _records(fmt), data)
    _write(fmt, _neighbour(fmt, "text in a whole column"), data2)
    man_d, _ = _release(data, tmp_path / "out")
    man_d2, _ = _release(data2, tmp_path / "out2")
    assert not man_d["dp"] and not man_d2["dp"] and "proposed schema" in man_d2["dp_reason"]
    assert "NOT DP" in capsys.readouterr().err
    kids = [{a["name"]: (a["type"], a["dtype"]) for a in m["domain"]["attributes"]}["kids"] for m in (man_d, man_d2)]
    assert kids == [("numeric", "int64"), ("categorical", "object")]
    assert _structure(man_d) != _structure(man_d2)


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_schema_command_proposes_what_declared_gives_a_dp_release(tmp_path, fmt, capsys):
    data, proposal = tmp_path / f"d{FORMATS[fmt]}", tmp_path / "schema.json"
    _write(fmt, _records(fmt), data)
    assert main(["schema", str(data), "--out", str(proposal)]) == 0
    d = json.loads(proposal.read_text())
    assert d["source"] == "proposed"
    assert [c["name"] for c in d["columns"]] == list(_records(fmt)[0])
    if fmt in LABELLED:  # value labels: the reader made the column text, and the proposal says so
        assert {c["name"]: c["type"] for c in d["columns"]}["insured"] == "text"
    d["source"] = "declared"
    proposal.write_text(json.dumps(d))
    man, priv = _release(data, tmp_path / "out", proposal)
    assert man["dp"] and _unfit(priv) == {}


LABELS = {"agree": {1: "strongly disagree", 2: "disagree", 3: "neutral", 4: "agree", 5: "strongly agree"},
          "score": {1: "low", 2: "low", 3: "high"},  # two codes share a label: the reader writes "low (1)", "low (2)"
          "insured": {0: "not insured", 1: "insured"},  # labels that do not read as true/false: the codes do
          "smoker": {1: "Yes", 2: "No"},  # SPSS's 1 = yes, 2 = no: the labels do
          "sex": {1: "male", 2: "female"}}  # declared text: the labels are the levels
LABELLED_SCHEMA = {"source": "declared", "columns": [
    {"name": "agree", "type": "whole", "role": "code"}, {"name": "score", "type": "whole", "role": "code"},
    {"name": "insured", "type": "boolean"}, {"name": "smoker", "type": "boolean"}, {"name": "sex", "type": "text"}]}


@pytest.mark.parametrize("fmt", LABELLED)
def test_a_labelled_column_declared_numeric_is_cast_from_its_codes(tmp_path, fmt, capsys):
    """SPSS and Stata value labels: the reader writes a labelled column as its labels (text). Declared a whole
    number or true/false, conform takes the codes back from the labels (the file's metadata): before, every value
    of such a column did not fit and the release had it all missing, labelled DP, said nowhere but in the private
    manifest. An unlabelled code keeps its number (9); true/false keeps a label that reads as one."""
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"agree": rng.integers(1, 6, N), "score": rng.integers(1, 4, N),
                       "insured": rng.integers(0, 2, N), "smoker": rng.integers(1, 3, N), "sex": rng.integers(1, 3, N)})
    df.loc[0, "agree"] = 9
    data, schema = tmp_path / f"d{FORMATS[fmt]}", tmp_path / "declared.json"
    (pyreadstat.write_sav if fmt == "spss" else pyreadstat.write_dta)(df, str(data), variable_value_labels=LABELS)
    schema.write_text(json.dumps(LABELLED_SCHEMA))
    read = read_table(data)
    assert read["score"].iloc[:50].isin(["low (1)", "low (2)", "high"]).all() and read["agree"][0] == "9"
    out, unfit = Schema.load(schema).conform(read)
    assert unfit == {}
    assert out["agree"].tolist() == df["agree"].tolist() and out["score"].tolist() == df["score"].tolist()
    assert out["insured"].tolist() == (df["insured"] == 1).tolist()
    assert out["smoker"].tolist() == (df["smoker"] == 1).tolist()
    assert out["sex"].tolist() == df["sex"].map(LABELS["sex"]).tolist()
    man, priv = _release(data, tmp_path / "out", schema)
    assert man["dp"] and _unfit(priv) == {} and "did not fit" not in capsys.readouterr().out
    synthetic = pd.read_csv(tmp_path / "out" / "synthetic_1.csv")
    assert (synthetic[["agree", "score", "insured", "smoker"]].isna().mean() < 0.05).all()  # missing: a noisy level
    assert set(synthetic["sex"].dropna()) <= {"male", "female", "other"}
    read.attrs.clear()  # without the labels the text does not fit: counted, and said to the curator
    assert Schema.load(schema).conform(read)[1] == {"agree": N - 1, "score": N, "insured": N}
