"""Reading tables (CSV, Parquet) with errors a curator can act on.

Privacy: reading releases nothing; the table stays with the curator.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .domain import check_table
from .errors import InputError

PARQUET_SUFFIXES = (".parquet", ".pq")


def _duplicate_header(first_line: str, sep: str) -> list[str]:
    names = next(csv.reader([first_line], delimiter=sep))
    names = [n.strip() for n in names]
    return sorted({n for n in names if names.count(n) > 1})


def read_csv_bytes(data: bytes, name: str = "the file", sep: str = ",") -> pd.DataFrame:
    """Parse CSV bytes; refuse empty, header-only, ragged and duplicate-header files clearly."""
    if not data or not data.strip():
        raise InputError(f"{name} is empty; upload a CSV with a header line and at least one row")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{name} is not UTF-8 text; save it as UTF-8 CSV (or Parquet) and try again") from None
    first = text.splitlines()[0]
    dup = _duplicate_header(first, sep)
    if dup:
        raise InputError(f"{name} has duplicate column name(s) {', '.join(map(repr, dup))}; rename them so each column is unique")
    try:
        df = pd.read_csv(io.StringIO(text), sep=sep, engine="c")
    except pd.errors.ParserError as exc:
        msg = str(exc).strip().splitlines()[-1]
        raise InputError(
            f"{name} has ragged rows ({msg}); every row must have as many fields as the header. "
            "Check for unquoted commas or a missing field"
        ) from None
    except pd.errors.EmptyDataError:
        raise InputError(f"{name} has no columns; check the header line and the delimiter") from None
    check_table(df)
    return df


def read_parquet_bytes(data: bytes, name: str = "the file") -> pd.DataFrame:
    try:
        table = pq.read_table(pa.BufferReader(data))
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"{name} is not a readable Parquet file ({exc}); export it again or upload CSV") from None
    names = table.column_names
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InputError(f"{name} has duplicate column name(s) {', '.join(map(repr, dup))}; rename them so each column is unique")
    df = table.to_pandas()
    check_table(df)
    return df


def read_table(path, sep: str = ",") -> pd.DataFrame:
    """Read a CSV or Parquet file (by suffix) into a DataFrame, or raise :class:`InputError`."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read '{path}': {exc.strerror}") from None
    if p.suffix.lower() in PARQUET_SUFFIXES:
        return read_parquet_bytes(data, f"'{p.name}'")
    return read_csv_bytes(data, f"'{p.name}'", sep)
