"""The budget book's key for a table: one fingerprint of its records, computed where they are.

A table released in memory, from a file on DuckDB, or on Spark, and from CSV or Parquet, must
be one account in the budget book (docs/privacy-model.md, "The budget book"). So the key is a
function of the records only, written as one SQL text that every engine runs (pandas tables are
handed to an embedded DuckDB as Arrow, files are scanned where they lie):

1. every value becomes a canonical text, the same whichever reader produced it
   (:func:`canonical_value`): ``n`` for missing; ``i<digits>`` for a whole number (an int64, or a
   float that is whole: ``1`` in a CSV and ``1.0`` in Parquet agree); ``f<M>e<E>`` for any other
   float, from its exact binary form x = M·2^(E−52) (no decimal formatting, which differs between
   engines); ``b0`` / ``b1`` for booleans; ``t<bytes>:<text>`` for text (prefixed by its UTF-8 length, so no
   two rows join into the same text);
2. a row is its values in the order of the sorted column names, joined by ``|``; its MD5 splits
   into two 64-bit halves;
3. the table's key is SHA-256 over the sorted column names, the row count and the two sums of
   the halves mod 2^64 (a multiset hash: row order does not matter, as it does not for a table);
4. each column's own fingerprint (the look-alike check of :mod:`dpcore.studio.table_match`) is the
   same sums over the column's values alone, without its name: in the same scan, a grouping set per
   column counts each distinct value, whose MD5 is then taken once (:func:`fingerprint_query`).

Re-saving the same records in another row or column order or format gives the same key; a
changed value, an added or dropped record or column, or a renamed column gives another.
Collision resistance is that of a 128-bit sum of MD5 halves: ample against accident, and the
book never needs more (a curator who wants a fresh budget can always rename a column; the
look-alike check is what catches that).

Privacy: reads raw records; the fingerprints stay in the book (curator-only) and nothing here is
released.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpcore.counting import sql as S

#: the prefix of a content fingerprint (older books hold unprefixed ones: :func:`legacy_table_fingerprint`)
CONTENT_PREFIX = "content-"
#: the prefix of a file's key in books written before content fingerprints (:func:`file_sha256`)
FILE_PREFIX = "file-sha256:"
_MOD = 1 << 64
#: 2^63 as a DOUBLE: a whole float below it in magnitude is written as an int64
_TWO_63 = "9223372036854775808.0"
_DBL_MAX = "1.7976931348623157e308"


@dataclass(frozen=True)
class TableFingerprint:
    """A table's key in the budget book, its record count and its columns' own fingerprints
    (in the table's column order)."""

    key: str
    n_rows: int
    column_fps: tuple[str, ...]


def _int_text(expr: str, d: S.Dialect) -> str:
    # TRY_CAST: Spark may evaluate a CASE branch that is not taken (shared subexpressions), and in ANSI mode a
    # plain CAST of an out-of-range value there would fail the query; taken branches are always in range
    return d.text(f"TRY_CAST({expr} AS BIGINT)")


def _float_key(x: str, d: S.Dialect) -> str:
    """The canonical text of a present, non-NaN DOUBLE ``x`` (module docstring, step 1)."""
    ax = f"abs({x})"
    e0 = f"TRY_CAST(floor(log2({ax})) AS INT)"
    # floor(log2) can be one off near powers of two; the exact comparisons with 2^e0 put it right
    e = (f"({e0} - CASE WHEN pow(2, {e0}) > {ax} THEN 1 WHEN pow(2, {e0} + 1) <= {ax} THEN -1 ELSE 0 END)")
    k1 = f"TRY_CAST(floor((52 - {e}) / 2.0) AS INT)"
    mantissa = f"({x} * pow(2, {k1}) * pow(2, (52 - {e}) - {k1}))"  # exact: two powers of two, no overflow
    # whole: x % 1 = 0 (Spark's floor() of a DOUBLE is a BIGINT, which overflows on 1e300)
    return (f"CASE WHEN {x} % 1 = 0 AND {ax} < {_TWO_63} THEN concat('i', {_int_text(x, d)}) "
            f"WHEN {x} > {_DBL_MAX} THEN 'f+inf' WHEN {x} < -{_DBL_MAX} THEN 'f-inf' "
            f"ELSE concat('f', {_int_text(mantissa, d)}, 'e', {d.text(e)}) END")


def canonical_value(col: S.Column, d: S.Dialect) -> str:
    """SQL: the canonical text of ``col``'s value in each row (module docstring, step 1)."""
    present = col.present(d)
    c = d.quote(col.name)
    if col.kind == S.INT:
        value = f"concat('i', {c if col.csv else d.text(c)})"  # CSV ints are canonical digits by the reading rules
    elif col.kind == S.FLOAT:
        value = _float_key(col.number(d), d)
    elif col.kind == S.BOOL:
        value = f"CASE WHEN {c} THEN 'b1' ELSE 'b0' END"
    else:
        text = c if col.csv else d.text(c)
        nbytes = f"octet_length({text})" if d.name == "spark" else f"strlen({text})"  # UTF-8 bytes on both
        value = f"concat('t', {d.text(nbytes)}, ':', {text})"
    return f"CASE WHEN {present} THEN {value} ELSE 'n' END"


def _halves(text: str, d: S.Dialect) -> tuple[str, str]:
    """SQL: the two 64-bit halves of MD5(``text``), as exact unsigned integers."""
    h = f"md5({text})"
    if d.name == "spark":
        return tuple(f"CAST(conv(substr({h}, {i}, 16), 16, 10) AS DECIMAL(20, 0))" for i in (1, 17))
    return tuple(f"CAST(concat('0x', substr({h}, {i}, 16)) AS UBIGINT)" for i in (1, 17))


#: columns per scan: the grouping sets of one query (Spark numbers them in a 64-bit mask)
COLUMNS_PER_SCAN = 48


def fingerprint_query(columns: dict, view: str, d: S.Dialect, part: list[str] | None = None) -> str:
    """One scan: the row count and the two sums of the rows' halves (the grouping set ``()``), and, for
    each column of ``part`` (default: all), the two sums over its values: each distinct value's MD5
    halves times its count (a grouping set per column, so an MD5 per distinct value, not per record).
    Rows: ``(col, n, h0, h1)`` with ``col`` −1 for the whole table, else the column's place in ``part``."""
    names = list(columns)
    part = names if part is None else part
    canon = {n: canonical_value(columns[n], d) for n in names}
    row = f"concat_ws('|', {', '.join(canon[n] for n in sorted(names))})" if names else "''"
    rh = _halves(row, d)
    inner = ", ".join([f"{canon[n]} AS v{j}" for j, n in enumerate(part)] + [f"{rh[0]} AS r0", f"{rh[1]} AS r1"])
    sets = ", ".join(["()"] + [f"(v{j})" for j in range(len(part))])
    keys = ", ".join([f"v{j}" for j in range(len(part))] + ["COUNT(*) AS n", "SUM(r0) AS s0", "SUM(r1) AS s1"])
    grouped = f"SELECT {keys} FROM (SELECT {inner} FROM {view}) t GROUP BY GROUPING SETS ({sets})"
    which = ("CASE " + " ".join(f"WHEN v{j} IS NOT NULL THEN {j}" for j in range(len(part))) + " ELSE -1 END"
             if part else "-1")
    value = f"coalesce({', '.join(f'v{j}' for j in range(len(part)))})" if part else "''"
    vh = _halves(value, d)
    return (f"SELECT col, SUM(n) AS n, SUM(CASE WHEN col < 0 THEN s0 ELSE n * {vh[0]} END) AS h0, "
            f"SUM(CASE WHEN col < 0 THEN s1 ELSE n * {vh[1]} END) AS h1 "
            f"FROM (SELECT {which} AS col, g.* FROM ({grouped}) g) x GROUP BY col")


def engine_fingerprint(columns: dict, view: str, d: S.Dialect, rows) -> TableFingerprint:
    """The fingerprint of the table ``view`` on an engine: :func:`fingerprint_query` over the columns in
    parts of :data:`COLUMNS_PER_SCAN` (one scan each), ``rows(sql)`` running a query."""
    names = list(columns)
    parts = [names[i:i + COLUMNS_PER_SCAN] for i in range(0, len(names), COLUMNS_PER_SCAN)] or [[]]
    n, table_sums, col_sums = 0, (0, 0), {}
    for part in parts:
        for col, count, h0, h1 in rows(fingerprint_query(columns, view, d, part)):
            if int(col) < 0:
                n, table_sums = int(count or 0), (int(h0 or 0), int(h1 or 0))
            else:
                col_sums[part[int(col)]] = (int(h0 or 0), int(h1 or 0))
    return finish(names, n, table_sums, [col_sums.get(c, (0, 0)) for c in names])


def _hex(a, b) -> str:
    return f"{int(a or 0) % _MOD:016x}{int(b or 0) % _MOD:016x}"


def finish(names: list[str], n: int, table_sums: tuple, column_sums: list[tuple]) -> TableFingerprint:
    """The fingerprint from the row count and the sums (names and column sums in the table's order)."""
    h = hashlib.sha256(b"dpcore-table/2\x1f")
    h.update("\x1f".join(sorted(names)).encode("utf-8"))
    h.update(f"\x1f{n}\x1f{_hex(*table_sums)}".encode())
    cols = tuple(hashlib.sha256(f"dpcore-column/2\x1f{n}\x1f{_hex(*c)}".encode()).hexdigest() for c in column_sums)
    return TableFingerprint(CONTENT_PREFIX + h.hexdigest(), n, cols)


def _arrow_column(s: pd.Series):
    """(Arrow array, column kind) of one in-memory column, typed as the reading rules type it."""
    import pyarrow as pa

    dt = s.dtype
    if pd.api.types.is_bool_dtype(dt):
        return pa.array(s, type=pa.bool_(), from_pandas=True), S.BOOL
    if pd.api.types.is_integer_dtype(dt):
        return pa.array(s, type=pa.int64() if not pd.api.types.is_unsigned_integer_dtype(dt) else pa.uint64(),
                        from_pandas=True), S.INT
    if pd.api.types.is_float_dtype(dt):
        return pa.array(s.astype("float64"), type=pa.float64(), from_pandas=True), S.FLOAT
    values = s.to_numpy(dtype=object, na_value=None)
    present = [v for v in values if v is not None and not (isinstance(v, float) and np.isnan(v))]
    if present and all(isinstance(v, (bool, np.bool_)) for v in present):  # a nullable boolean column
        return pa.array([None if v is None else bool(v) for v in values], type=pa.bool_()), S.BOOL
    return pa.array([None if v is None or (isinstance(v, float) and np.isnan(v)) else str(v) for v in values],
                    type=pa.string()), S.TEXT


def frame_fingerprint(df: pd.DataFrame) -> TableFingerprint:
    """The fingerprint of a table in memory (by the embedded DuckDB, the same SQL as on a file)."""
    import duckdb
    import pyarrow as pa

    names = [str(c) for c in df.columns]
    arrays, columns = [], {}
    for i, name in enumerate(names):
        arr, kind = _arrow_column(df.iloc[:, i])
        arrays.append(arr)
        columns[name] = S.Column(name, kind, False)
    table = pa.Table.from_arrays(arrays, names=names) if names else pa.table({"_": pa.array([None] * len(df))})
    con = duckdb.connect()  # in memory: the Arrow table is scanned where it lies
    try:
        con.execute("SET enable_progress_bar = false")
        con.register("dpcore_fp_src", table)
        return engine_fingerprint(columns, "dpcore_fp_src", S.DUCKDB, lambda q: con.execute(q).fetchall())
    finally:
        con.close()


def legacy_table_fingerprint(df: pd.DataFrame) -> str:
    """The key books written before content fingerprints hold (``dpcore-table/1``: the column names
    sorted, then the rows as CSV text sorted). Only used to find such a book's account for a table."""
    cols = sorted(map(str, df.columns))
    frame = df.copy(deep=False)
    frame.columns = list(map(str, frame.columns))
    text = frame[cols].to_csv(index=False, header=False, lineterminator="\x1e")
    rows = sorted(text.split("\x1e")[:-1]) if text else []
    h = hashlib.sha256()
    h.update(b"dpcore-table/1\x1f")
    h.update("\x1f".join(cols).encode("utf-8"))
    h.update(f"\x1f{len(df)}\x1f".encode())
    h.update("".join(r + "\x1e" for r in rows).encode("utf-8"))
    return h.hexdigest()


def file_sha256(path, block: int = 1 << 22) -> str:
    """SHA-256 of a file's bytes, as older books keyed a file released on an engine (``file-sha256:``);
    only used to find such a book's account for a file; "" when the file cannot be read."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for piece in iter(lambda: fh.read(block), b""):
                h.update(piece)
    except OSError:
        return ""
    return FILE_PREFIX + h.hexdigest()
