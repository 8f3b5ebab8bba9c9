"""SPSS, Stata, SAS and Excel input (dpcore.data.formats): value labels become levels, numbers
stay exact, bad files give one clear line.

SAS: pyreadstat cannot write .sas7bdat and no small sample ships with the pinned
packages, so only the bad-file case is tested for SAS; it goes through the same
pyreadstat path and label handling as .sav and .dta, which are tested on real files.
"""
from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.data.io import read_bytes, read_table
from dpcore.errors import InputError

pyreadstat = pytest.importorskip("pyreadstat")
openpyxl = pytest.importorskip("openpyxl")


def _survey() -> pd.DataFrame:
    return pd.DataFrame({
        "sex": [1.0, 2.0, 2.0, 1.0, np.nan, 2.0],
        "region": [1.0, 2.0, 3.0, 9.0, 1.0, 2.0],  # 9 has no label
        "age": [23.0, 45.0, 67.0, 31.0, 52.0, 18.0],
        "income": [1200.5, 3400.25, 0.0, 2200.0, 1800.75, 950.0],
        "note": ["a", "b", "", "c", "a", "b"],
    })


LABELS = {"sex": {1.0: "male", 2.0: "female"}, "region": {1.0: "North", 2.0: "South", 3.0: "East"}}


@pytest.mark.parametrize("suffix, writer", [(".sav", "write_sav"), (".dta", "write_dta")])
def test_value_labels_become_levels_and_numbers_stay_exact(tmp_path, suffix, writer):
    path = tmp_path / f"survey{suffix}"
    getattr(pyreadstat, writer)(_survey(), str(path), variable_value_labels=LABELS)
    df = read_table(path)
    assert list(df.columns) == ["sex", "region", "age", "income", "note"]
    assert df["sex"].tolist() == ["male", "female", "female", "male", None, "female"]
    # an unlabelled code keeps its own text instead of vanishing or becoming NaN
    assert df["region"].tolist() == ["North", "South", "East", "9", "North", "South"]
    assert df["age"].dtype == np.int64 and df["age"].tolist() == [23, 45, 67, 31, 52, 18]
    assert df["income"].dtype == np.float64 and df["income"].tolist() == _survey()["income"].tolist()
    assert df["note"].tolist() == ["a", "b", None, "c", "a", "b"]
    assert df.attrs["value_labels"]["sex"] == {"1": "male", "2": "female"}
    # the labels are the inferred levels, and the table synthesises
    dom = dpcore.infer_domain(df)
    assert set(dom["sex"].levels) == {"male", "female"} and dom["sex"].na
    rel = dpcore.synthesize(df, "flat_laplace", 1.0, seed=1, domain=dom.declared())
    assert set(rel.sets[0]["sex"].dropna()) <= {"male", "female"}


def test_shared_label_keeps_two_codes_apart(tmp_path):
    path = tmp_path / "dup.sav"
    df = pd.DataFrame({"q": [1.0, 2.0, 3.0, 1.0], "x": [1.0, 2.0, 3.0, 4.0]})
    pyreadstat.write_sav(df, str(path), variable_value_labels={"q": {1.0: "no", 2.0: "no", 3.0: "yes"}})
    got = read_table(path)["q"].tolist()
    assert got == ["no (1)", "no (2)", "yes", "no (1)"]


@pytest.mark.parametrize("name, kind", [("bad.sav", "SPSS"), ("bad.dta", "Stata"), ("bad.sas7bdat", "SAS"),
                                        ("bad.xlsx", "Excel")])
def test_bad_file_is_one_clear_line(name, kind):
    with pytest.raises(InputError) as err:
        read_bytes(b"this is not a " + kind.encode() + b" file at all\n" * 20, name)
    msg = str(err.value)
    assert "\n" not in msg and name in msg and kind in msg


@pytest.mark.parametrize("name", ["e.sav", "e.dta", "e.sas7bdat", "e.xlsx"])
def test_empty_file_is_refused(name):
    with pytest.raises(InputError, match="empty"):
        read_bytes(b"", name)


def _xlsx(rows) -> bytes:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "data"
    for r in rows:
        ws.append(r)
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def test_xlsx_columns_typed_exactly():
    import datetime as dt

    data = _xlsx([["id", "score", "flag", "mixed", "when"],
                  ["a", 1, True, 5, dt.date(2024, 1, 2)],
                  ["b", 2.5, False, "x", dt.date(2024, 3, 4)],
                  ["c", None, True, 7, None]])
    df = read_bytes(data, "t.xlsx")
    assert df.attrs["sheet"] == "data"
    assert df["id"].tolist() == ["a", "b", "c"]
    assert df["score"].dtype == np.float64 and df["score"].tolist()[:2] == [1.0, 2.5] and np.isnan(df["score"][2])
    assert df["flag"].dtype == bool and df["flag"].tolist() == [True, False, True]
    assert df["mixed"].tolist() == ["5", "x", "7"]  # numbers and text: text, as stored
    assert df["when"].tolist()[:2] == ["2024-01-02T00:00:00", "2024-03-04T00:00:00"]


def test_xlsx_whole_numbers_are_int64():
    df = read_bytes(_xlsx([["n", "c"], [1, "a"], [2, "b"], [3, "a"]]), "i.xlsx")
    assert df["n"].dtype == np.int64 and df["n"].tolist() == [1, 2, 3]


@pytest.mark.parametrize("rows, match", [
    ([["a", None, "c"], [1, 2, 3]], "without a name"),
    ([["a", "a"], [1, 2]], "duplicate column"),
    ([["a", "b"], [1, 2, 3]], "right of the last named column"),
    ([["a", "b"]], "no rows"),
])
def test_xlsx_structural_problems_are_named(rows, match):
    with pytest.raises(InputError, match=match):
        read_bytes(_xlsx(rows), "s.xlsx")
