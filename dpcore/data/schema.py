"""The declared schema: each column's name, type and whether it may be missing; public, never read from values.

A release that finds its domain with DP (``domain="dp"``) takes the column types as public. They must then be
*declared*, not read from the values: a reader types a column from what it holds, so one added record flips it
(a text value turns a whole-number column into text, ``2.5`` turns it into floats, one empty CSV field or one
null turns a whole-number or true/false column into floats or text), and the release's structure would depend
on that record. OpenDP and Tumult Analytics require a declared schema for the same reason.

A :class:`Schema` lists, per column: ``type`` (``text``; ``boolean``; ``number``; ``whole`` numbers, with their
``role``: ``code`` (each value a category: a loan term of 6, 12, … 72 months), ``count`` (a number of
things: never negative, so a range found privately starts at 0) or ``amount`` (a quantity of either sign,
binned)), ``nullable`` (missing is a level of the column), and optionally declared ``levels`` (the
candidates of a text or code column). Where it comes from (``source``):

* ``declared``: confirmed by the curator (the Data page, a schema file with ``"source": "declared"``);
* ``dtypes``: in the API, the DataFrame's own dtypes: the caller typed the frame, that is their declaration;
* ``proposed``: read from a file's values for the curator to review: NOT public; a release with it is NOT DP.

:meth:`Schema.conform` casts every column to its declared type, record by record (a stable transformation): a
value that does not fit becomes missing, counted for the curator (NOT DP). A missing value in a column declared
not nullable is refused in one line (nothing is released): the curator declares it nullable or cleans it.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpcore.errors import DomainError, InputError

__all__ = ["ColumnType", "Schema", "TYPES", "ROLES", "DECLARED_SCHEMA", "DTYPES_SCHEMA", "PROPOSED_SCHEMA"]

TEXT, BOOLEAN, NUMBER, WHOLE = "text", "boolean", "number", "whole"
#: the declared types
TYPES = (TEXT, BOOLEAN, NUMBER, WHOLE)
CODE, COUNT, AMOUNT = "code", "count", "amount"
#: what a whole number stands for: a category (levels), a small count, a quantity (binned)
ROLES = (CODE, COUNT, AMOUNT)
DECLARED_SCHEMA, DTYPES_SCHEMA, PROPOSED_SCHEMA = "declared", "dtypes", "proposed"
SOURCES = (DECLARED_SCHEMA, DTYPES_SCHEMA, PROPOSED_SCHEMA)

_TRUE = {"true", "t", "yes", "y", "1"}
_FALSE = {"false", "f", "no", "n", "0"}


@dataclass(frozen=True)
class ColumnType:
    """One column's declared type (see the module docstring)."""

    name: str
    type: str
    nullable: bool = True
    role: str | None = None
    levels: tuple | None = None

    def __post_init__(self) -> None:
        where = f"schema, column '{self.name}'"
        if self.type not in TYPES:
            raise DomainError(f"{where}: \"type\" must be one of {', '.join(TYPES)}; got {self.type!r}")
        if not isinstance(self.nullable, bool):
            raise DomainError(f"{where}: \"nullable\" must be true or false; got {self.nullable!r}")
        if self.type == WHOLE:
            role = COUNT if self.role is None else self.role
            if role not in ROLES:
                raise DomainError(f"{where}: \"role\" of a whole number must be one of {', '.join(ROLES)}; "
                                  f"got {self.role!r}")
            object.__setattr__(self, "role", role)
        elif self.role is not None:
            raise DomainError(f"{where}: \"role\" is for whole numbers (code, count or amount), not {self.type}")
        if self.levels is not None:
            if self.type not in (TEXT, WHOLE) or (self.type == WHOLE and self.role != CODE):
                raise DomainError(f"{where}: declared \"levels\" are for text columns and whole-number codes")
            levels = tuple(self.levels)
            if not levels or len(set(map(str, levels))) != len(levels):
                raise DomainError(f"{where}: declared \"levels\" must be a non-empty list without duplicates")
            if self.type == WHOLE and not all(isinstance(v, int) and not isinstance(v, bool) for v in levels):
                raise DomainError(f"{where}: the levels of a whole-number code must be whole numbers")
            object.__setattr__(self, "levels", levels)

    @property
    def dtype(self) -> str:
        """The pandas dtype the column is cast to (from the type alone)."""
        if self.type == TEXT:
            return "object"
        if self.type == BOOLEAN:
            return "boolean" if self.nullable else "bool"
        if self.type == WHOLE:
            return "Int64" if self.nullable else "int64"
        return "float64"

    @property
    def nonnegative(self) -> bool:
        """Declared never negative: a whole-number count (a number of things). A range found privately for it
        starts at 0 and a value below 0 is clamped to 0 like any value outside a range (counted for the curator);
        a whole number that can be negative is declared an amount."""
        return self.type == WHOLE and self.role == COUNT

    @property
    def levels_column(self) -> bool:
        """A column whose values are categories: text, or a whole-number code."""
        return self.type == TEXT or (self.type == WHOLE and self.role == CODE)

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"name": self.name, "type": self.type, "nullable": self.nullable}
        if self.role is not None:
            d["role"] = self.role
        if self.levels is not None:
            d["levels"] = list(self.levels)
        return d

    @classmethod
    def from_dict(cls, d: Mapping) -> ColumnType:
        if not isinstance(d, Mapping) or not isinstance(d.get("name"), str) or not d.get("name"):
            raise DomainError("schema file: each column must be an object with a \"name\" (a non-empty string)")
        unknown = sorted(set(d) - {"name", "type", "nullable", "role", "levels"})
        if unknown:
            raise DomainError(f"schema file, column '{d['name']}': unknown key(s) {', '.join(map(repr, unknown))}; "
                              "allowed: name, type, nullable, role, levels")
        levels = d.get("levels")
        if levels is not None and not isinstance(levels, list):
            raise DomainError(f"schema file, column '{d['name']}': \"levels\" must be a list")
        return cls(d["name"], d.get("type", TEXT), d.get("nullable", True), d.get("role"),
                   None if levels is None else tuple(levels))

    def cast(self, s: pd.Series, labels: Mapping | None = None) -> tuple[pd.Series, int]:
        """The column in its declared dtype, and how many present values did not fit (now missing). ``labels``:
        the column's value labels (SPSS, Stata: code text -> label), which the reader wrote for the codes."""
        present = s.notna().to_numpy()
        if labels and self.type != TEXT:
            s = _codes(s, labels, self.type == BOOLEAN)
        if self.type == TEXT:
            out = s.astype(object).map(_text, na_action="ignore")
            return out.where(s.notna(), None).astype(object), 0
        if self.type == BOOLEAN:
            out = s.map(_boolean, na_action="ignore")
            fitted = out.notna().to_numpy()
            return out.astype("boolean"), int((present & ~fitted).sum())
        num = _numbers(s)
        fitted = ~np.isnan(num)
        if self.type == WHOLE:
            fitted &= np.isfinite(num) & (np.floor(num) == num) & (np.abs(num) <= 2.0 ** 53)
            ints = pd.array(np.where(fitted, num, 0).astype(np.int64), dtype="Int64")
            ints[~fitted] = pd.NA
            return pd.Series(ints, index=s.index), int((present & ~fitted).sum())
        fitted &= np.isfinite(num)
        return pd.Series(np.where(fitted, num, np.nan), index=s.index, dtype="float64"), int((present & ~fitted).sum())


def _text(v: Any) -> str:
    """A value as text: whole floats as their digits (1.0 read by one reader is "1" read by another)."""
    if isinstance(v, (float, np.floating)) and math.isfinite(float(v)) and float(v) == int(v):
        return str(int(v))
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    return str(v)


def _codes(s: pd.Series, labels: Mapping, boolean: bool) -> pd.Series:
    """A labelled column (the reader wrote each code's label: "strongly agree" for 5) back to its codes, for a
    column declared a number, whole number or true/false: the labels are the file's metadata, the codes its values.
    True/false keeps a label that reads as one ("yes"/"no": SPSS's 1 = yes, 2 = no), else takes the code (0/1)."""
    from dpcore.data.formats import label_names

    back = {name: labels[code] if boolean and _boolean(labels[code]) is not None else code
            for code, name in label_names(dict(labels)).items()}
    return s.map(lambda v: back.get(v, v) if isinstance(v, str) else v, na_action="ignore")


def _boolean(v: Any):
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    t = _text(v).strip().lower()
    return True if t in _TRUE else False if t in _FALSE else None


def _numbers(s: pd.Series) -> np.ndarray:
    if pd.api.types.is_bool_dtype(s.dtype):
        return np.full(len(s), np.nan)  # true/false is not a number
    return pd.to_numeric(s.astype(object).where(s.notna(), None), errors="coerce").to_numpy(dtype=float,
                                                                                           na_value=np.nan)


@dataclass(frozen=True)
class Schema:
    """Every column's declared type, and where the declaration came from (``source``)."""

    columns: tuple[ColumnType, ...]
    source: str = DECLARED_SCHEMA
    unfit: dict = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise DomainError(f"schema: \"source\" must be one of {', '.join(SOURCES)}; got {self.source!r}")
        names = [c.name for c in self.columns]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise DomainError(f"schema: column(s) {', '.join(map(repr, dup))} declared twice")

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def public(self) -> bool:
        """Declared by the curator or by the caller's dtypes: not read from the values."""
        return self.source != PROPOSED_SCHEMA

    def __getitem__(self, name: str) -> ColumnType:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)

    def declared(self) -> Schema:
        """The same types, declared by the curator (after review)."""
        return Schema(self.columns, DECLARED_SCHEMA)

    def project(self, names) -> Schema:
        return Schema(tuple(self[n] for n in names), self.source)

    # ------------------------------------------------------------------ from a frame

    @classmethod
    def from_dtypes(cls, df: pd.DataFrame, source: str = DTYPES_SCHEMA) -> Schema:
        """The frame's own dtypes as the declaration: int64 a non-missing whole count, Int64 a whole count that
        may be missing, float64 a number, bool / boolean true/false, anything text-like text (nullable). A
        dtype that is none of these is refused in one line."""
        cols = []
        for name in df.columns:
            dt = df[name].dtype
            kind = getattr(dt, "kind", "O")
            if str(dt) == "boolean":
                cols.append(ColumnType(str(name), BOOLEAN, True))
            elif kind == "b":
                cols.append(ColumnType(str(name), BOOLEAN, False))
            elif str(dt) in ("Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64"):
                cols.append(ColumnType(str(name), WHOLE, True, COUNT))
            elif kind in "iu":
                cols.append(ColumnType(str(name), WHOLE, False, COUNT))
            elif kind == "f" or str(dt) in ("Float32", "Float64"):
                cols.append(ColumnType(str(name), NUMBER, True))
            elif kind in "OUS" or str(dt) in ("string", "category"):
                cols.append(ColumnType(str(name), TEXT, True))
            else:
                raise InputError(f"column '{name}' has type {dt}; a release takes numbers, true/false and text: "
                                 "convert it or drop it")
        return cls(tuple(cols), source)

    @classmethod
    def propose(cls, df: pd.DataFrame) -> Schema:
        """A proposal for the curator, read from a file's typed values: NOT public until declared. The dtypes'
        types (:meth:`from_dtypes`), and two readings of the values a reader's dtype cannot carry: a float
        column whose values are all whole numbers (a reader makes a whole-number column with a missing value
        float) is proposed a whole number, and a whole number holding a negative value an amount, not a count
        (a count is never negative)."""
        cols = []
        for c in cls.from_dtypes(df, PROPOSED_SCHEMA).columns:
            if c.type in (NUMBER, WHOLE):
                # a numeric dtype (from_dtypes made it a number or a whole number): read as floats directly
                x = pd.to_numeric(df[c.name], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
                x = x[~np.isnan(x)]
                whole = c.type == WHOLE or (x.size > 0 and bool(np.all(np.isfinite(x)))
                                            and bool(np.all(x == np.round(x))) and float(np.abs(x).max()) <= 2.0**53)
                if whole and (c.type == NUMBER or c.role == COUNT):
                    c = ColumnType(c.name, WHOLE, c.nullable, AMOUNT if x.size and x.min() < 0 else COUNT)
            cols.append(c)
        return cls(tuple(cols), PROPOSED_SCHEMA)

    def conform(self, df: pd.DataFrame, what: str = "the table") -> tuple[pd.DataFrame, dict[str, int]]:
        """``df`` with every declared column in its declared dtype, and the number of values per column that did
        not fit their type (now missing; curator-only, NOT DP). A labelled SPSS or Stata column (read as its
        labels, ``df.attrs["value_labels"]``) declared a number, whole number or true/false is cast from its
        codes. One line naming the column otherwise: a declared column the table lacks, a column the schema does
        not declare, a missing value in a column declared not nullable."""
        missing = [n for n in self.names if n not in map(str, df.columns)]
        if missing:
            raise InputError(f"{what} has no column {missing[0]!r}, which the schema declares; check the file or "
                             "the schema")
        extra = [str(c) for c in df.columns if str(c) not in self.names]
        if extra:
            raise InputError(f"{what}'s column {extra[0]!r} is not in the schema; declare its type or drop it")
        out, unfit = {}, {}
        labels = df.attrs.get("value_labels") or {}  # SPSS, Stata: the codes behind a labelled column's text
        for col in self.columns:
            series, bad = col.cast(df[col.name], labels.get(col.name))
            if not col.nullable and series.isna().any():
                raise InputError(f"column '{col.name}' is declared not nullable but {int(series.isna().sum())} of "
                                 f"its values are missing or not {col.type}; declare it nullable, or clean them")
            out[col.name] = series if col.nullable else series.astype(col.dtype)  # int64, bool: no missing
            if bad:
                unfit[col.name] = bad
        return pd.DataFrame(out, index=df.index), unfit

    # ------------------------------------------------------------------ files

    def to_dict(self) -> dict:
        return {"source": self.source, "columns": [c.to_dict() for c in self.columns]}

    def to_json(self, indent: int = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    @classmethod
    def from_dict(cls, d: Mapping) -> Schema:
        if not isinstance(d, Mapping) or not isinstance(d.get("columns"), list):
            raise DomainError("schema file: expected an object with \"columns\": a list of "
                              "{\"name\", \"type\", \"nullable\"}")
        source = d.get("source", PROPOSED_SCHEMA)
        if source == DTYPES_SCHEMA:
            source = PROPOSED_SCHEMA  # a file is declared by saying so, never by a frame's dtypes
        return cls(tuple(ColumnType.from_dict(c) for c in d["columns"]), source)

    @classmethod
    def load(cls, path) -> Schema:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot read the schema file '{path}': {exc.strerror}") from None
        try:
            return cls.from_dict(json.loads(text))
        except json.JSONDecodeError as exc:
            raise DomainError(f"the schema file '{path}' is not valid JSON (line {exc.lineno}: {exc.msg})") from None
