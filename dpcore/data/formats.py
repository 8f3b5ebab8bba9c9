"""Reading survey and spreadsheet files: SPSS (.sav), Stata (.dta), SAS (.sas7bdat), Excel (.xlsx).

Privacy: reading releases nothing; the table stays with the curator.

Reading rules (as for CSV in :mod:`dpcore.data.io`: nothing is silently altered):

* A column with value labels becomes text: each value is replaced by its label, so the
  labels become the attribute's levels. A value without a label keeps its own text
  ("7"), and two values that share a label stay apart as "label (value)". The labels
  of every column are kept in ``df.attrs["value_labels"]``: a column a schema declares a
  number, whole number or true/false gets its codes back from them
  (:meth:`dpcore.data.schema.Schema.conform`).
* Other numeric columns stay numbers: int64 when every present value is a whole
  number below 2^53 in magnitude (exact in a double), float64 otherwise.
* Dates and times become ISO text; system- and user-defined missing values are missing.
* Excel: the first sheet is read (its name is kept in ``df.attrs["sheet"]``); the first
  row is the header. A column mixing numbers and text becomes text, each cell written
  as it is stored; ``TRUE``/``FALSE`` cells alone make a boolean column.
* A file that cannot be read is one :class:`~dpcore.errors.InputError` naming it.
"""
from __future__ import annotations

import datetime as _dt
import io
import math
import os
import tempfile

import numpy as np
import pandas as pd

from dpcore.data.domain import check_table, check_width
from dpcore.errors import InputError

READSTAT_SUFFIXES = {".sav": "SPSS", ".zsav": "SPSS", ".dta": "Stata", ".sas7bdat": "SAS"}
EXCEL_SUFFIXES = (".xlsx",)
STAT_SUFFIXES = tuple(READSTAT_SUFFIXES) + EXCEL_SUFFIXES
#: whole numbers beyond this are not exact in the doubles SPSS and SAS store
_EXACT_INT = 2**53


def read_stat_bytes(data: bytes, filename: str) -> pd.DataFrame:
    """Read the bytes of a .sav/.zsav/.dta/.sas7bdat/.xlsx file by its suffix."""
    suffix = os.path.splitext(filename)[1].lower()
    if not data:
        raise InputError(f"'{filename}' is empty; upload the file again")
    if suffix in EXCEL_SUFFIXES:
        return read_xlsx_bytes(data, filename)
    if suffix not in READSTAT_SUFFIXES:
        raise InputError(f"'{filename}': unknown file type {suffix!r}; use CSV, Parquet, "
                         ".sav, .dta, .sas7bdat or .xlsx")
    return read_readstat_bytes(data, filename)


def read_readstat_bytes(data: bytes, filename: str) -> pd.DataFrame:
    """SPSS, Stata or SAS via pyreadstat (which reads from a path: the bytes go to a
    private temporary file, removed at once)."""
    import pyreadstat

    suffix = os.path.splitext(filename)[1].lower()
    kind = READSTAT_SUFFIXES[suffix]
    reader = {".sav": pyreadstat.read_sav, ".zsav": pyreadstat.read_sav, ".dta": pyreadstat.read_dta,
              ".sas7bdat": pyreadstat.read_sas7bdat}[suffix]
    fd, tmp = tempfile.mkstemp(suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        try:
            df, meta = reader(tmp, apply_value_formats=False)
        except Exception as exc:  # pyreadstat raises its own and C-level errors
            first = (str(exc).splitlines() or [type(exc).__name__])[0]
            raise InputError(f"'{filename}' is not a readable {kind} file ({first}); export it again from {kind} "
                             "or save it as CSV") from None
    finally:
        os.unlink(tmp)
    check_width(df.shape[1])
    labels = {c: meta.variable_value_labels[c] for c in df.columns if meta.variable_value_labels.get(c)}
    cols = {}
    for c in df.columns:
        cols[c] = _labelled(df[c], labels[c]) if c in labels else _plain(df[c])
    out = pd.DataFrame(cols, columns=list(df.columns))
    check_table(out)
    out.attrs["value_labels"] = {c: {str(_num_text(k)): str(v) for k, v in lab.items()} for c, lab in labels.items()}
    out.attrs["format"] = kind
    return out


def _num_text(v) -> str:
    """1.0 -> "1", 2.5 -> "2.5", "a" -> "a": a value as the text a person types."""
    if isinstance(v, (float, np.floating)) and math.isfinite(v) and float(v).is_integer():
        return str(int(v))
    return str(v)


def label_names(labels: dict) -> dict[str, str]:
    """Each labelled code as text ("1") and the value the reader writes for it: its label, or "label (code)" when
    codes share a label. :meth:`dpcore.data.schema.Schema.conform` inverts it for a column declared numeric."""
    by_label: dict[str, list] = {}
    for k, v in labels.items():
        by_label.setdefault(str(v), []).append(k)
    names = {}
    for lab, keys in by_label.items():
        for k in keys:
            # two codes sharing one label must stay two levels: merging them would alter the data
            names[_num_text(k)] = lab if len(keys) == 1 else f"{lab} ({_num_text(k)})"
    return names


def _labelled(s: pd.Series, labels: dict) -> pd.Series:
    """Values replaced by their labels; unlabelled values keep their own text."""
    names = label_names(labels)
    return pd.Series([None if _missing(v) else names.get(_num_text(v), _num_text(v)) for v in s], dtype=object)


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NaT


def _plain(s: pd.Series) -> pd.Series:
    """A column without labels: numbers exact, dates as ISO text, text as text."""
    if pd.api.types.is_bool_dtype(s.dtype):
        return s
    if pd.api.types.is_numeric_dtype(s.dtype):
        f = s.astype("float64")
        present = f.dropna()
        if len(present) and np.all(np.floor(present) == present) and np.all(np.abs(present) < _EXACT_INT):
            out = f.astype("Int64")
            return out.astype("int64") if len(present) == len(f) else out
        return f
    if pd.api.types.is_datetime64_any_dtype(s.dtype):
        return pd.Series([None if _missing(v) else v.isoformat() for v in s], dtype=object)
    return pd.Series([None if _missing(v) or v == "" else _cell_text(v) for v in s], dtype=object)


def _cell_text(v) -> str:
    if isinstance(v, (_dt.datetime, _dt.date, _dt.time)):
        return v.isoformat()
    return _num_text(v)


def read_xlsx_bytes(data: bytes, filename: str) -> pd.DataFrame:
    """The first sheet of an Excel workbook, header in the first row."""
    import openpyxl

    try:
        wb = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except Exception as exc:  # zipfile, XML and openpyxl errors alike
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise InputError(f"'{filename}' is not a readable Excel .xlsx file ({first}); save it again as .xlsx "
                         "(not .xls) or as CSV") from None
    try:
        ws = wb.worksheets[0]
        rows = [r for r in ws.iter_rows(values_only=True) if any(v is not None and v != "" for v in r)]
        sheet = ws.title
    finally:
        wb.close()
    if not rows:
        raise InputError(f"'{filename}': the first sheet is empty; put the table in the first sheet with a header row")
    header = list(rows[0])
    while header and header[-1] in (None, ""):
        header.pop()
    check_width(len(header))
    if any(h in (None, "") for h in header):
        i = next(i for i, h in enumerate(header) if h in (None, ""))
        raise InputError(f"'{filename}' has a column without a name (column {i + 1} of the header row); "
                         "name every column")
    names = [_cell_text(h).strip() for h in header]
    dup = sorted({h for h in names if names.count(h) > 1})
    if dup:
        raise InputError(f"'{filename}' has duplicate column name(s) {', '.join(map(repr, dup))}; rename them so each "
                         "column is unique")
    width = len(names)
    body = rows[1:]
    for i, r in enumerate(body, 2):
        if any(v not in (None, "") for v in r[width:]):
            raise InputError(f"'{filename}': row {i} has a value right of the last named column; name that column "
                             "or delete the value")
    cols = {h: _excel_column([r[j] if j < len(r) else None for r in body]) for j, h in enumerate(names)}
    out = pd.DataFrame(cols, columns=names)
    check_table(out)
    out.attrs["sheet"] = sheet
    out.attrs["format"] = "Excel"
    return out


def _excel_column(values: list) -> pd.Series:
    present = [v for v in values if v not in (None, "")]
    if present and all(isinstance(v, bool) for v in present):
        if len(present) == len(values):
            return pd.Series(values, dtype=bool)
        return pd.Series([None if v in (None, "") else v for v in values], dtype="boolean")
    numeric = [v for v in present if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if present and len(numeric) == len(present):
        if (all(isinstance(v, int) or float(v).is_integer() for v in numeric)
                and all(abs(v) < _EXACT_INT for v in numeric)):
            out = pd.array([None if v in (None, "") else int(v) for v in values], dtype="Int64")
            return pd.Series(out).astype("int64") if len(present) == len(values) else pd.Series(out)
        return pd.Series([np.nan if v in (None, "") else float(v) for v in values], dtype="float64")
    return pd.Series([None if v in (None, "") else _cell_text(v) for v in values], dtype=object)
