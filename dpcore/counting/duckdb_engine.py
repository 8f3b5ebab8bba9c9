"""Counting on DuckDB: a CSV or Parquet file by path, larger than memory if need be.

DuckDB (embedded, imported only when used) scans the file, applies the declared domain
in SQL (:mod:`dpcore.counting.sql`: the reading rules of :mod:`dpcore.data.io`, levels to
codes, numbers to bins, missing to NA) and returns the ``GROUP BY`` of the codes (of one
packed BIGINT cell key when the domain's cells fit in int64: :func:`sql.key_count_query`): the
file is never loaded into pandas. ``memory_limit`` (e.g. ``"512MB"``) caps DuckDB's
memory; what does not fit spills to ``temp_directory`` (a fresh temporary folder by
default), so files larger than memory work.

CSV: the delimiter is sniffed from the header line as :func:`dpcore.data.io.sniff_delimiter`
does, every field is read as text, quotes are ``"`` doubled; the file must be UTF-8.
Parquet keeps its declared column types.

Privacy: TRUE counts and curator-only facts (docs/privacy-model.md); nothing is released here.
"""
from __future__ import annotations

import csv
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from dpcore.counting import fingerprint as fp
from dpcore.counting import on_engine
from dpcore.counting import sql as S
from dpcore.counting.count_table import CountTable
from dpcore.counting.fingerprint import TableFingerprint
from dpcore.data.domain import Domain, check_width
from dpcore.data.io import PARQUET_SUFFIXES, decode_bytes, sniff_delimiter
from dpcore.errors import InputError, OptionError

#: DuckDB's memory cap when none is given
DEFAULT_MEMORY_LIMIT = "1GB"
_SNIFF_BYTES = 1 << 16
_INT_TYPES = {"TINYINT": "int8", "SMALLINT": "int16", "INTEGER": "int32", "BIGINT": "int64", "UTINYINT": "uint8",
              "USMALLINT": "uint16", "UINTEGER": "uint32", "UBIGINT": "uint64", "HUGEINT": "object"}
_FLOAT_TYPES = {"FLOAT": "float32", "DOUBLE": "float64"}


def import_duckdb():
    """The ``duckdb`` module, or an OptionError saying how to install it."""
    try:
        import duckdb
    except ImportError:  # pragma: no cover - pinned in requirements.txt
        raise OptionError("engine 'duckdb' needs the duckdb package: pip install -r requirements.txt") from None
    return duckdb


@contextmanager
def connect(memory_limit: str | None = None, temp_directory=None, threads: int | None = None):
    """A DuckDB connection with ``memory_limit`` (default 1GB) and a spill folder."""
    duckdb = import_duckdb()
    own_tmp = temp_directory is None
    tmp = Path(tempfile.mkdtemp(prefix="dpcore-duckdb-")) if own_tmp else Path(temp_directory)
    config = {"memory_limit": str(memory_limit or DEFAULT_MEMORY_LIMIT), "temp_directory": str(tmp),
              "preserve_insertion_order": False}
    if threads:
        config["threads"] = int(threads)
    try:
        con = duckdb.connect(config=config)
        con.execute("SET enable_progress_bar = false")  # a long scan must not draw on the caller's terminal
    except duckdb.Error as exc:
        raise OptionError(f"--memory-limit {memory_limit!r}: DuckDB refused it ({str(exc).splitlines()[0]}); "
                          "write it like 512MB or 4GB") from None
    try:
        yield con
    finally:
        con.close()
        if own_tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def csv_header(path: Path, sep: str | None) -> tuple[str, list[str]]:
    """(separator, column names) of the CSV at ``path``, from its first bytes: the separator
    sniffed when ``sep`` is None; a one-line InputError for an empty file, UTF-16/32 text, or
    duplicate or empty column names."""
    with open(path, "rb") as fh:
        head = fh.read(_SNIFF_BYTES)
    if not head.strip():
        raise InputError(f"'{path.name}' is empty; give a CSV with a header line and at least one row")
    cut = head.rfind(b"\n") if len(head) == _SNIFF_BYTES else len(head)
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(f"'{path.name}' is UTF-16 or UTF-32; the DuckDB engine reads UTF-8: save it as UTF-8")
    text = decode_bytes(head[:cut if cut > 0 else len(head)], f"'{path.name}'").lstrip("\r\n")
    if sep is None:
        sep = sniff_delimiter(text, f"'{path.name}'")
    header = [h.strip() for h in next(csv.reader([text.splitlines()[0]], delimiter=sep))]
    check_width(len(header))
    dup = sorted({h for h in header if header.count(h) > 1})
    if dup:
        raise InputError(f"'{path.name}' has duplicate column name(s) {', '.join(map(repr, dup))}; rename them")
    if any(h == "" for h in header):
        raise InputError(f"'{path.name}' has a column without a name (column "
                         f"{header.index('') + 1}); name every column")
    return sep, header


def _parquet_column(p: Path, name: str, typ, n_null: int) -> tuple[S.Column, str]:
    """The reading rules' column and the pandas dtype of a Parquet column of DuckDB type ``typ``
    (a whole-number or boolean column with missing values widens); a one-line error for a type
    that is not a table value."""
    t = str(typ).upper()
    if t in _INT_TYPES:
        return S.Column(name, S.INT, False), "float64" if n_null else _INT_TYPES[t]
    if t in _FLOAT_TYPES:
        return S.Column(name, S.FLOAT, False), _FLOAT_TYPES[t]
    if t == "BOOLEAN":
        return S.Column(name, S.BOOL, False), "object" if n_null else "bool"
    if t == "VARCHAR":
        return S.Column(name, S.TEXT, False), "str"
    if t.startswith(("DATE", "TIMESTAMP", "TIME", "DECIMAL")):
        return S.Column(name, S.OTHER, False), "object"
    raise InputError(f"'{p.name}': column '{name}' has type {typ}, which is not a table value (lists, "
                     "structs, maps and binary data cannot be synthesised); flatten it or drop it")


def _parquet_view(con, p: Path, lit: str) -> tuple[dict, dict]:
    """The Parquet file as the view ``src``: its columns and pandas dtypes, from its own types."""
    d = S.DUCKDB
    con.execute(f"CREATE OR REPLACE TEMP VIEW src AS SELECT * FROM read_parquet({lit})")
    described = con.execute("DESCRIBE src").fetchall()
    names = [r[0] for r in described]
    check_width(len(names))
    nulls = con.execute("SELECT " + ", ".join(f"COUNT(*) - COUNT({d.quote(n)})" for n in names)
                        + " FROM src").fetchone() if names else ()
    columns, dtypes = {}, {}
    for (name, typ, *_), n_null in zip(described, nulls):
        columns[name], dtypes[name] = _parquet_column(p, name, typ, n_null)
    return columns, dtypes


def _csv_view(con, p: Path, lit: str, sep: str | None, progress) -> tuple[dict, dict]:
    """The CSV file as the view ``src`` of text columns: their kinds and pandas dtypes by the
    reading rules, from one typing scan."""
    d = S.DUCKDB
    sep, header = csv_header(p, sep)
    cols = "{" + ", ".join(f"{S.literal(h, d)}: 'VARCHAR'" for h in header) + "}"
    con.execute(f"CREATE OR REPLACE TEMP VIEW src AS SELECT * FROM read_csv({lit}, header=true, "
                f"delim={S.literal(sep, d)}, quote='\"', escape='\"', columns={cols}, auto_detect=false, "
                "strict_mode=true, null_padding=false, buffer_size=2097152)")
    if progress:
        progress(f"typing the columns of {p.name} (one scan)")
    row = con.execute(S.typing_query(header, "src", d)).fetchone()
    kinds = S.csv_kinds(header, row)
    columns = {h: S.Column(h, kinds[h], True) for h in header}
    dtypes = {h: {S.INT: "Int64" if int(row[6 * i] or 0) < int(row[-1]) else "int64",
                  S.FLOAT: "float64"}.get(kinds[h], "object") for i, h in enumerate(header)}
    return columns, dtypes


def open_source(con, path, sep: str | None = None, progress=None) -> on_engine.Source:
    """The file as a view on ``con`` with its columns typed by the reading rules."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"cannot read '{path}': no such file")
    d = S.DUCKDB
    lit = S.literal(str(p), d)
    duckdb = import_duckdb()
    try:
        if p.suffix.lower() in PARQUET_SUFFIXES:
            columns, dtypes = _parquet_view(con, p, lit)
        else:
            columns, dtypes = _csv_view(con, p, lit, sep, progress)
    except duckdb.Error as exc:
        raise InputError(f"'{p.name}' cannot be read by DuckDB: {duckdb_error_line(exc)}") from None

    def rows(query: str) -> list:
        try:
            return con.execute(query).fetchall()
        except duckdb.Error as exc:
            raise InputError(f"'{p.name}': DuckDB stopped: {duckdb_error_line(exc)}") from None

    def fetch(query: str) -> dict:
        try:
            return con.execute(query).fetchnumpy()
        except duckdb.Error as exc:
            raise InputError(f"'{p.name}': DuckDB stopped: {duckdb_error_line(exc)}") from None

    def codes(query: str, k: int):
        res = fetch(query)
        arr = np.column_stack([np.asarray(res[f"c{j}"], dtype=np.int64) for j in range(k)]) if k else \
            np.zeros((len(res["n"]), 0), np.int64)
        return arr, np.asarray(res["n"], dtype=np.int64)

    def keys(query: str):
        res = fetch(query)
        return np.asarray(res["k"], dtype=np.int64), np.asarray(res["n"], dtype=np.int64)

    return on_engine.Source(f"'{p.name}'", columns, "src", d, rows, dtypes, codes, keys)


def duckdb_error_line(exc) -> str:
    """The first line of a DuckDB error (at most 300 characters), with what to do when DuckDB
    ran out of memory."""
    text = str(exc).strip().splitlines()[0][:300]
    if "Out of Memory" in text:
        return text + "; raise --memory-limit (memory_limit=) or free disk space in the temporary folder"
    return text


def count_table(path, domain: Domain, *, memory_limit: str | None = None, temp_directory=None, threads=None,
                sep: str | None = None, progress=None, curator: dict | None = None) -> CountTable:
    """The sparse count table of the file at ``path`` over ``domain``, counted by DuckDB.

    TRUE counts: curator-only, never released as such. ``curator``, if given, gets the records
    clamped per numeric column (:func:`on_engine.clamped_counts`: CURATOR-ONLY, NOT DP).
    """
    with connect(memory_limit, temp_directory, threads) as con:
        src = open_source(con, path, sep, progress)
        return on_engine.count_table(src, domain, progress, curator)


def infer_domain(path, *, memory_limit: str | None = None, temp_directory=None, sep: str | None = None,
                 progress=None, **kwargs) -> Domain:
    """:func:`dpcore.data.inference.infer_domain` of the file, computed by DuckDB (curator-only, NOT DP)."""
    with connect(memory_limit, temp_directory) as con:
        src = open_source(con, path, sep, progress)
        return on_engine.infer_domain(src, progress=progress, **kwargs)


def fingerprint(path, *, memory_limit: str | None = None, temp_directory=None, sep: str | None = None,
                progress=None) -> TableFingerprint:
    """The budget book's key of the file's records (:mod:`dpcore.counting.fingerprint`), in one DuckDB
    scan: the same key as the table read into memory, or counted by Spark."""
    with connect(memory_limit, temp_directory) as con:
        src = open_source(con, path, sep, progress)
        if progress:
            progress(f"fingerprinting {Path(path).name} for the budget book (one scan)")
        return fp.engine_fingerprint(src.columns, src.view, src.dialect, src.rows)


def engine(source, domain: Domain, **options) -> CountTable:
    """The ``count_table(..., engine="duckdb")`` backend: ``source`` is a file path."""
    if not isinstance(source, (str, Path)):
        raise OptionError("engine 'duckdb' counts a file: give the path of a CSV or Parquet file")
    return count_table(source, domain, **options)
