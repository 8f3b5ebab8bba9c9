"""Reading tables (CSV, Parquet) exactly as written, with errors a curator can act on.

Privacy: reading releases nothing; the table stays with the curator.

Reading rules (nothing is silently altered):

* Every CSV field is read as text first. A column becomes numbers only when every
  non-missing value is a plain number that converts exactly: integers become int64
  (exact up to 2^63, never through float64), other numbers float64. A value with a
  leading zero ("02134", "007"), a plus sign ("+44") or "-0" keeps the whole column as
  text, so codes survive; so does a float literal float64 cannot hold ("1e309", "1e-400").
* Missing is the empty field. In a column that is otherwise numeric, R's and pandas'
  missing markers ``NA``, ``NaN`` and ``nan`` are missing too; in a text column they
  are ordinary values ("NA" is Namibia's country code), and so are "true"/"TRUE".
* The delimiter is found from the header line among ``,`` ``;`` tab and ``|`` and
  reported in ``df.attrs["delimiter"]``; an ambiguous header is refused, naming the
  candidates.
* A line starting with ``#`` is refused (comment lines would shift the columns), and
  so is a row with more or fewer fields than the header.
* Parquet keeps its declared column types; list, struct, map and binary columns are
  refused naming the column; dates and timestamps become ISO text.
* SPSS (.sav), Stata (.dta) and SAS (.sas7bdat) files are read with pyreadstat and
  Excel (.xlsx, first sheet) with openpyxl by :mod:`dpcore.data.formats`: value labels
  become the levels, numbers stay numbers (int64 only when every value is a whole
  number), dates become ISO text, and a file that cannot be read is one clear error.
"""
from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from dpcore.data.domain import check_table, check_width, decode_text
from dpcore.errors import InputError

PARQUET_SUFFIXES = (".parquet", ".pq")
DELIMITERS = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}
#: markers of a missing value in a column whose other values are all numbers
NUMERIC_MISSING = frozenset({"", "NA", "NaN", "nan"})
_INT = re.compile(r"^[+-]?(0|[1-9][0-9]*)$")
_FLOAT = re.compile(r"^[+-]?((0|[1-9][0-9]*)(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$")
_INT64_MAX = 2**63 - 1
#: characters sniffed for the delimiter
_SNIFF_LINES = 50


def decode_bytes(data: bytes, name: str) -> str:
    """UTF-8 (BOM or not) or UTF-16/32 with its BOM; anything else is a clear error."""
    return decode_text(data, name, InputError)


def sniff_delimiter(text: str, name: str) -> str:
    """The delimiter of the header line, among , ; tab | (quotes respected)."""
    lines = text.splitlines()[:_SNIFF_LINES]
    header = lines[0]
    counts = {d: len(next(csv.reader([header], delimiter=d))) - 1 for d in DELIMITERS}
    found = [d for d, c in counts.items() if c > 0]
    if len(found) <= 1:
        return found[0] if found else ","
    # several candidates in the header: keep those that split every sniffed line alike
    consistent = [d for d in found
                  if len({len(r) for r in csv.reader(lines, delimiter=d)}) == 1]
    if len(consistent) == 1:
        return consistent[0]
    names = ", ".join(f"{DELIMITERS[d]} ({counts[d] + 1} columns)" for d in found)
    raise InputError(
        f"{name}: cannot tell the delimiter from the header line: it splits by {names}. "
        "Save the file with one delimiter (comma-separated is standard)"
    )


def _rows(text: str, sep: str, name: str) -> tuple[list[str], list[list[str]]]:
    for i, line in enumerate(text.splitlines(), 1):
        if line.startswith("#"):
            raise InputError(
                f"{name}: line {i} starts with '#' (a comment?): comment lines shift the columns; "
                "remove them and keep only the header and the data rows"
            )
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep, strict=True)
    try:
        rows = [r for r in reader if r]
    except csv.Error:
        raise InputError(f"{name}: malformed CSV near line {reader.line_num}: a quote is not closed or a quoted field "
                         "is broken; check the quoting") from None
    header = [h.strip() for h in rows[0]]
    width = len(header)
    for i, r in enumerate(rows[1:], 2):
        if len(r) != width:
            raise InputError(
                f"{name} has ragged rows: line {i} has {len(r)} fields but the header has {width}; every row must "
                "have as many fields as the header. Check for an unquoted delimiter or a missing field"
            )
    return header, rows[1:]


def _typed_column(values: list[str]) -> pd.Series:
    """A column of text fields as int64, float64 or text: numbers only when exact."""
    present = [v for v in values if v not in NUMERIC_MISSING]
    if present and all(_INT.match(v) for v in present):
        ints = [int(v) for v in present]
        if all(abs(x) <= _INT64_MAX for x in ints) and not any(_leading_zero(v) for v in present):
            out = pd.array([None if v in NUMERIC_MISSING else int(v) for v in values], dtype="Int64")
            return pd.Series(out).astype("int64") if len(present) == len(values) else pd.Series(out)
    elif (present and all(_FLOAT.match(v) for v in present) and not any(_leading_zero(v) for v in present)
          and all(_exact_float(v) for v in present)):
        return pd.Series([np.nan if v in NUMERIC_MISSING else float(v) for v in values], dtype="float64")
    # text: only the empty field is missing; "NA", "true", "02134" stay as written
    return pd.Series([None if v == "" else v for v in values], dtype=object)


def _exact_float(v: str) -> bool:
    """False for a literal float64 cannot hold: "1e309" (overflows to inf) or "1e-400" (underflows to 0)."""
    x = float(v)
    mantissa = v.lower().split("e")[0]
    return math.isfinite(x) and (x != 0 or not any(c in "123456789" for c in mantissa))


def _leading_zero(v: str) -> bool:
    """True for text a number would not write back: a leading zero ("007", "-02", "00.5"; not
    "0" or "0.5"), a plus sign ("+44", a calling code) or a negative integer zero ("-0")."""
    if v.startswith("+") or v == "-0":
        return True
    digits = v.lstrip("+-")
    return len(digits) > 1 and digits[0] == "0" and digits[1].isdigit()


def read_csv_bytes(data: bytes, name: str = "the file", sep: str | None = None) -> pd.DataFrame:
    """Parse CSV bytes by the reading rules of this module; refuse what cannot be read exactly."""
    if not data or not data.strip():
        raise InputError(f"{name} is empty; upload a CSV with a header line and at least one row")
    text = decode_bytes(data, name)
    if not text.strip():
        raise InputError(f"{name} is empty; upload a CSV with a header line and at least one row")
    if sep is None:
        sep = sniff_delimiter(text.lstrip("\r\n"), name)
    elif sep not in DELIMITERS:
        raise InputError(f"delimiter {sep!r} is not supported; use one of {', '.join(map(repr, DELIMITERS))}")
    header, rows = _rows(text, sep, name)
    check_width(len(header))
    others = [DELIMITERS[d] for d in DELIMITERS if d != sep and d in header[0]]
    if len(header) == 1 and others:
        # one column whose name holds another delimiter: the file was split wrongly, not a 1-attribute table
        raise InputError(
            f"{name} was read as {DELIMITERS[sep]}-separated into one column named {header[0][:60]!r}, which contains "
            f"a {others[0]}; save the file with one unquoted delimiter in the header (comma-separated is standard)"
        )
    dup = sorted({h for h in header if header.count(h) > 1})
    if dup:
        raise InputError(f"{name} has duplicate column name(s) {', '.join(map(repr, dup))}; "
                         "rename them so each column is unique")
    odd = [h for h in header if h[:1] in ("\ufeff", "\u200b")]
    if odd:
        raise InputError(f"{name}: column name {odd[0]!r} starts with an invisible character (a second byte-order "
                         "mark?); remove it, or save the file as UTF-8 again")
    if any(h == "" for h in header):
        raise InputError(f"{name} has a column without a name (column {header.index('') + 1}); "
                         "name every column in the header")
    cols = list(zip(*rows)) if rows else [()] * len(header)
    df = pd.DataFrame({h: _typed_column(list(c)) for h, c in zip(header, cols)})
    check_table(df)
    df.attrs["delimiter"] = DELIMITERS[sep]
    return df


_SUPPORTED = (pa.types.is_integer, pa.types.is_floating, pa.types.is_boolean, pa.types.is_string,
              pa.types.is_large_string, pa.types.is_null)
_AS_TEXT = (pa.types.is_timestamp, pa.types.is_date, pa.types.is_time, pa.types.is_decimal)


def read_parquet_bytes(data: bytes, name: str = "the file") -> pd.DataFrame:
    try:
        table = pq.read_table(pa.BufferReader(data))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as exc:
        raise InputError(f"{name} is not a readable Parquet file "
                         f"({str(exc).splitlines()[0]}); export it again or upload CSV") from None
    names = table.column_names
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InputError(f"{name} has duplicate column name(s) {', '.join(map(repr, dup))}; "
                         "rename them so each column is unique")
    check_width(len(names))
    cols = {}
    for field, col in zip(table.schema, table.columns):
        t = field.type
        if pa.types.is_dictionary(t):
            t = t.value_type
            col = col.cast(t)
        if any(ok(t) for ok in _SUPPORTED):
            cols[field.name] = col.to_pandas()
        elif any(ok(t) for ok in _AS_TEXT):
            # dates, times and decimals as their exact ISO / decimal text: the domain then decides
            cols[field.name] = pd.Series(col.cast(pa.string()).to_pylist(), dtype=object)
        else:
            raise InputError(
                f"{name}: column '{field.name}' has type {t}, which is not a table value (lists, structs, maps and "
                "binary data cannot be synthesised); flatten it into plain columns or drop it"
            )
    df = pd.DataFrame(cols, columns=names)
    check_table(df)
    return df


def read_table(path, sep: str | None = None) -> pd.DataFrame:
    """Read a CSV, Parquet, SPSS, Stata, SAS or Excel file (by suffix) into a DataFrame,
    or raise :class:`InputError`."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read '{path}': {exc.strerror}") from None
    return read_bytes(data, p.name, sep)


def read_bytes(data: bytes, filename: str, sep: str | None = None) -> pd.DataFrame:
    """Read an uploaded file's bytes by its name's suffix (CSV is the default)."""
    from dpcore.data.formats import STAT_SUFFIXES, read_stat_bytes

    suffix = Path(filename).suffix.lower()
    if suffix in PARQUET_SUFFIXES:
        return read_parquet_bytes(data, f"'{filename}'")
    if suffix in STAT_SUFFIXES:
        return read_stat_bytes(data, filename)
    return read_csv_bytes(data, f"'{filename}'", sep)
