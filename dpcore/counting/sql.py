"""The declared domain as SQL: column typing, value → code expressions, the GROUP BY.

One text of SQL serves DuckDB and Spark; :class:`Dialect` holds the few functions whose
names differ. The expressions reproduce :meth:`dpcore.data.domain.Attribute.encode` applied to
a table read by :mod:`dpcore.data.io`:

* CSV fields arrive as text. A column is typed as ``dpcore.data.io`` types it, over the whole
  file (:func:`typing_query`): int when every present value is a plain integer within
  int64 with no leading zero, plus sign or "-0"; float when every present value is a
  plain number float64 holds exactly; text otherwise. Missing is the empty field, and in
  int/float columns also NA, NaN, nan.
* A categorical attribute maps the column's key (``dpcore.data.domain.level_key``: the integer's
  digits, a float's value, the text itself, True/False) to its level's code; a numeric
  attribute cuts the float value at the edges: bin i holds ``e_i <= x < e_{i+1}``, the
  last bin also holds its upper edge, and a number outside the edges is clamped into the first
  or last bin. Missing is the NA code when the attribute has one.
* A value the domain does not cover gets code -1, a missing value without an NA level
  code -2: the caller refuses both, naming the column and the value
  (:func:`offending_query`), as ``Attribute.encode`` does.

Privacy: these queries read raw records and return TRUE counts or curator-only facts;
nothing here is released. Proofs of what is released: docs/privacy-model.md.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from dpcore.data.domain import Attribute, level_key

#: missing markers in a column whose other values are numbers (dpcore.data.io.NUMERIC_MISSING)
NUMERIC_MISSING = ("", "NA", "NaN", "nan")
INT_RE = r"^[+-]?(0|[1-9][0-9]*)$"
FLOAT_RE = r"^[+-]?((0|[1-9][0-9]*)(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$"
# dpcore.data.io._leading_zero: "+…", "-0", or a zero followed by a digit after the signs
LEADING_ZERO_RE = r"^([+].*|-0|[+-]*0[0-9].*)$"
# what a numeric attribute accepts from a text column (pandas.to_numeric's plain numbers)
NUMBER_RE = r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$"
INT64_MAX_DIGITS = "9223372036854775807"
DBL_MAX = "1.7976931348623157e308"
OUTSIDE, MISSING = -1, -2

#: column kinds: how a value's key and number are read
INT, FLOAT, TEXT, BOOL, OTHER = "int", "float", "text", "bool", "other"


@dataclass(frozen=True)
class Dialect:
    name: str

    def quote(self, name: str) -> str:
        if self.name == "spark":
            return "`" + name.replace("`", "``") + "`"
        return '"' + name.replace('"', '""') + '"'

    def matches(self, expr: str, pattern: str) -> str:
        """Regular-expression search (the patterns here are anchored where they must be)."""
        if self.name == "spark":
            return f"({expr} RLIKE {literal(pattern, self)})"
        return f"regexp_matches({expr}, {literal(pattern)})"

    def double(self, expr: str) -> str:
        return f"TRY_CAST({expr} AS DOUBLE)"

    def text(self, expr: str) -> str:
        return f"CAST({expr} AS STRING)" if self.name == "spark" else f"CAST({expr} AS VARCHAR)"


DUCKDB, SPARK = Dialect("duckdb"), Dialect("spark")


def literal(text: str, d: Dialect | None = None) -> str:
    """A SQL string literal. DuckDB: quotes doubled, backslashes literal. Spark reads
    backslashes as escapes and two adjacent literals as one, so both are escaped."""
    text = str(text)
    if d is not None and d.name == "spark":
        return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return "'" + text.replace("'", "''") + "'"


def double_literal(x: float) -> str:
    """An exact double: the shortest repr parsed as DOUBLE (never a DECIMAL literal)."""
    return f"CAST({literal(repr(float(x)))} AS DOUBLE)"


def _present(col: str, kind: str, d: Dialect) -> str:
    """Not missing: ``csv``/INT/FLOAT text (numeric markers), ``double`` (NULL or NaN),
    TEXT (CSV: NULL or the empty field), anything else typed (NULL)."""
    if kind in (INT, FLOAT, "csv"):
        return f"({col} IS NOT NULL AND {col} NOT IN ({', '.join(literal(v, d) for v in NUMERIC_MISSING)}))"
    if kind == "double":
        return f"({col} IS NOT NULL AND NOT isnan({col}))"
    if kind == TEXT:
        return f"({col} IS NOT NULL AND {col} <> '')"
    return f"({col} IS NOT NULL)"


def typing_query(columns: list[str], view: str, d: Dialect) -> str:
    """One scan giving, per CSV column, what :func:`csv_kind` needs (see the module docstring)."""
    parts = []
    for i, name in enumerate(columns):
        c = d.quote(name)
        pres = _present(c, "csv", d)
        unsigned = f"regexp_replace({c}, {literal('^[+-]', d)}, '')"
        x = d.double(c)
        mantissa = f"regexp_replace(lower({c}), {literal('e.*$', d)}, '')"
        parts += [
            f"SUM(CASE WHEN {pres} THEN 1 ELSE 0 END) AS p{i}",
            f"SUM(CASE WHEN {pres} AND NOT {d.matches(c, INT_RE)} THEN 1 ELSE 0 END) AS ni{i}",
            f"SUM(CASE WHEN {pres} AND NOT {d.matches(c, FLOAT_RE)} THEN 1 ELSE 0 END) AS nf{i}",
            f"SUM(CASE WHEN {pres} AND {d.matches(c, LEADING_ZERO_RE)} THEN 1 ELSE 0 END) AS lz{i}",
            f"SUM(CASE WHEN {pres} AND {d.matches(c, INT_RE)} AND (length({unsigned}) > 19 OR (length({unsigned}) = 19 "
            f"AND {unsigned} > '{INT64_MAX_DIGITS}')) THEN 1 ELSE 0 END) AS big{i}",
            f"SUM(CASE WHEN {pres} AND {d.matches(c, FLOAT_RE)} AND (NOT (abs({x}) <= "
            f"{double_literal(float(DBL_MAX))}) OR ({x} = 0 AND {d.matches(mantissa, '[1-9]')})) "
            f"THEN 1 ELSE 0 END) AS inexact{i}",
        ]
    parts.append("COUNT(*) AS total")
    return f"SELECT {', '.join(parts)} FROM {view}"


def csv_kinds(columns: list[str], row) -> dict[str, str]:
    """Kinds from :func:`typing_query`'s row, by ``dpcore.data.io._typed_column``'s rule."""
    out = {}
    for i, name in enumerate(columns):
        p, ni, nf, lz, big, inexact = (int(v or 0) for v in row[6 * i: 6 * i + 6])
        if p and not ni:
            out[name] = INT if not lz and not big else TEXT
        elif p and not nf and not lz and not inexact:
            out[name] = FLOAT
        else:
            out[name] = TEXT
    return out


@dataclass(frozen=True)
class Column:
    """A source column: its SQL name, its kind, and whether it is CSV text (``csv``) or typed."""

    name: str
    kind: str
    csv: bool

    def present(self, d: Dialect) -> str:
        c = d.quote(self.name)
        if self.csv:
            return _present(c, self.kind, d)
        return _present(c, "double" if self.kind == FLOAT else "typed", d)

    def number(self, d: Dialect) -> str:
        """The value as DOUBLE (NULL when it is not a plain number)."""
        c = d.quote(self.name)
        if not self.csv and self.kind in (INT, FLOAT):
            return f"CAST({c} AS DOUBLE)"
        if not self.csv and self.kind == BOOL:
            return f"CAST(CAST({c} AS INT) AS DOUBLE)"
        if self.csv and self.kind == TEXT:
            return f"CASE WHEN {d.matches(c, NUMBER_RE)} THEN {d.double(c)} END"
        return d.double(c) if self.csv else d.double(d.text(c))

    def key(self, d: Dialect) -> str:
        """The level key as text (``dpcore.data.domain.level_key``); not used for FLOAT columns."""
        c = d.quote(self.name)
        if self.csv:
            return c
        if self.kind == BOOL:
            return f"CASE WHEN {c} THEN 'True' ELSE 'False' END"
        return d.text(c)


def code_expression(a: Attribute, col: Column, d: Dialect) -> str:
    """The attribute's code of each row: 0..size-1, or OUTSIDE / MISSING (module docstring)."""
    na = str(len(a.levels)) if a.na else str(MISSING)
    parts = [f"WHEN NOT {col.present(d)} THEN {na}"]
    if a.kind == "numeric":
        x = col.number(d)
        e = [float(v) for v in a.edges]
        # NULL: present but not a plain number (refused); a number outside the edges is clamped into the end
        # bins, as Attribute.encode does (NaN is missing here: Column.present)
        parts.append(f"WHEN ({x}) IS NULL THEN {OUTSIDE}")
        parts += [f"WHEN ({x}) < {double_literal(hi)} THEN {i}" for i, hi in enumerate(e[1:-1])]
        parts.append(f"ELSE {len(e) - 2}")
        return "CASE " + " ".join(parts) + " END"
    if col.kind == FLOAT:
        x = col.number(d)
        for code, v in enumerate(a.levels):
            num = _float_of_key(level_key(v))
            if num is not None:
                parts.append(f"WHEN ({x}) = {double_literal(num)} THEN {code}")
    else:
        k = col.key(d)
        keys = [(code, level_key(v)) for code, v in enumerate(a.levels)]
        if col.kind == BOOL:
            keys = [(code, kk) for code, kk in keys if kk in ("True", "False")]
        parts += [f"WHEN {k} = {literal(kk, d)} THEN {code}" for code, kk in keys]
    parts.append(f"ELSE {OUTSIDE}")
    return "CASE " + " ".join(parts) + " END"


def _float_of_key(k: str) -> float | None:
    """The one float whose key is ``k``, if any (a float column matches a level by value)."""
    try:
        x = float(k)
    except ValueError:
        return None
    if not math.isfinite(x) or level_key(x) != k:
        return None
    return x


def _code_columns(domain, columns: dict[str, Column], d: Dialect) -> list[str]:
    return [f"{code_expression(a, columns[a.name], d)} AS c{j}" for j, a in enumerate(domain.attributes)]


def _codes_select(domain, columns: dict[str, Column], view: str, d: Dialect) -> str:
    return f"SELECT {', '.join(_code_columns(domain, columns, d))} FROM {view}"


def count_query(domain, columns: dict[str, Column], view: str, d: Dialect) -> str:
    """``SELECT code_1, …, code_p, COUNT(*) … GROUP BY`` over the domain's columns."""
    exprs = _code_columns(domain, columns, d)
    keys = ", ".join(f"c{j}" for j in range(len(exprs)))
    return f"SELECT {', '.join(exprs)}, COUNT(*) AS n FROM {view} GROUP BY {keys}"


def _any_negative(p: int) -> str:
    return " OR ".join(f"c{j} < 0" for j in range(p))


def key_count_query(domain, columns: dict[str, Column], view: str, d: Dialect) -> str:
    """``SELECT k, COUNT(*) … GROUP BY k``: each row's cell as ONE BIGINT, the mixed-radix key
    of :func:`dpcore.counting.count_table.cell_keys`, or -1 when a code is OUTSIDE or MISSING
    (:func:`negative_codes_query` then names the column). Only for domains whose cell count
    fits in int64. One 8-byte key a group instead of p codes: the engine's hash table and the
    result handed back are 16 bytes a non-empty cell."""
    shape = [int(s) for s in domain.shape]
    strides = [math.prod(shape[j + 1:]) for j in range(len(shape))]
    key = " + ".join(f"CAST(c{j} AS BIGINT) * {s}" if s > 1 else f"CAST(c{j} AS BIGINT)"
                     for j, s in enumerate(strides))
    codes = _codes_select(domain, columns, view, d)
    return (f"SELECT CASE WHEN {_any_negative(len(shape))} THEN -1 ELSE {key} END AS k, COUNT(*) AS n "
            f"FROM ({codes}) t GROUP BY 1")


def negative_codes_query(domain, columns: dict[str, Column], view: str, d: Dialect) -> str:
    """Each column's smallest code over the rows with an OUTSIDE or MISSING code (NULL when none)."""
    mins = ", ".join(f"MIN(c{j})" for j in range(len(domain.attributes)))
    return f"SELECT {mins} FROM ({_codes_select(domain, columns, view, d)}) t WHERE {_any_negative(len(domain))}"


def clamped_query(domain, columns: dict[str, Column], view: str, d: Dialect) -> str | None:
    """One scan counting, per numeric attribute, the present values outside [first edge, last edge]
    (±inf included): those :func:`code_expression` clamps into the end bins, as
    :meth:`dpcore.data.domain.Attribute.clamped_count` counts them. None when the domain has no
    numeric attribute. CURATOR-ONLY, NOT DP: counts of raw records."""
    sums = []
    for j, a in enumerate(domain.attributes):
        if a.kind != "numeric":
            continue
        col = columns[a.name]
        x = col.number(d)
        lo, hi = double_literal(float(a.edges[0])), double_literal(float(a.edges[-1]))
        # a value that is not a plain number is NULL here (the count refuses it); NaN is missing (Column.present)
        sums.append(f"SUM(CASE WHEN {col.present(d)} AND (({x}) < {lo} OR ({x}) > {hi}) THEN 1 ELSE 0 END) AS k{j}")
    return f"SELECT {', '.join(sums)} FROM {view}" if sums else None


def offending_query(a: Attribute, col: Column, view: str, d: Dialect, code: int) -> str:
    """The first raw value of the column that got ``code`` (OUTSIDE or MISSING), and how many."""
    expr = code_expression(a, col, d)
    c = d.quote(col.name)
    return (f"SELECT MIN({d.text(c)}), COUNT(*) FROM (SELECT {c} FROM {view} WHERE ({expr}) = {code} "
            f"LIMIT 1000000) t")
