"""Counting and domain inference on a SQL engine, shared by DuckDB and Spark.

An engine module supplies a :class:`Source`: the file's columns with their kinds, and a
``rows(sql)`` that runs a query on the engine and returns its rows. Everything else is
here: the declared domain applied in SQL (:mod:`dpcore.counting.sql`), the ``GROUP BY``,
the one-line errors naming a column and value, and the facts of each column that domain
inference decides from (:mod:`dpcore.data.inference`: the same rule and refusals as in memory).

Privacy: the count table holds TRUE counts and the inferred domain is read from the
data: both are curator-only (NOT DP) until noised or declared public
(docs/privacy-model.md).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from dpcore.counting import sql as S
from dpcore.counting.count_table import CountTable, fits_int64
from dpcore.data.domain import DEFAULT_NUMERIC_BINS, Attribute, Domain, level_key
from dpcore.data.inference import (
    DEFAULT_MAX_INT_LEVELS,
    DEFAULT_MAX_LEVELS,
    ColumnFacts,
    Limits,
    check_numeric_columns,
    domain_from_facts,
    levels_of,
    reads_levels,
)
from dpcore.errors import DomainError


@dataclass
class Source:
    """A table on an engine: ``columns`` (name → :class:`sql.Column`), the view to query,
    the dialect, a function running a query, and ``dtypes``: the pandas dtype name
    ``dpcore.data.io`` would give each column (the domain's ``dtype``, used to write back)."""

    name: str
    columns: dict
    view: str
    dialect: S.Dialect
    rows: Callable[[str], list]
    dtypes: dict
    codes: Callable[[str, int], tuple] | None = None  # (query, p) -> (codes (k, p) int64, counts (k,))
    keys: Callable[[str], tuple] | None = None  # (query) -> (keys (k,) int64, counts (k,)): the packed GROUP BY


def _progress(progress, message: str) -> None:
    if progress is not None:
        progress(message)


def count_table(src: Source, domain: Domain, progress=None, curator: dict | None = None) -> CountTable:
    """The sparse count table of the source over ``domain``, from one ``GROUP BY``.

    TRUE counts: curator-only. A value outside the domain or a missing value without an NA
    level is a :class:`DomainError` naming the column and the value. ``curator``, if given, gets
    ``"clamped_records"``: :func:`clamped_counts` (one more scan; CURATOR-ONLY, NOT DP).
    """
    table = _count_table(src, domain, progress)
    if curator is not None:
        curator["clamped_records"] = clamped_counts(src, domain, progress)
    return table


def clamped_counts(src: Source, domain: Domain, progress=None) -> dict[str, int]:
    """Records clamped into an end bin per numeric column (only columns with any), counted by the
    engine in one scan (:func:`sql.clamped_query`): the same counts as
    :meth:`dpcore.data.domain.Domain.clamped_counts` on the table read in memory. CURATOR-ONLY,
    NOT DP: counts of raw records, never written to a published manifest."""
    query = S.clamped_query(domain, src.columns, src.view, src.dialect)
    if query is None:
        return {}
    _progress(progress, f"counting the records of {src.name} outside the numeric bin edges (curator-only, NOT DP)")
    row = src.rows(query)[0]
    names = [a.name for a in domain.attributes if a.kind == "numeric"]
    return {name: int(n) for name, n in zip(names, row) if n}


def _count_table(src: Source, domain: Domain, progress=None) -> CountTable:
    extra = [c for c in src.columns if c not in domain.names]
    if extra:
        raise DomainError(f"column(s) {', '.join(map(repr, extra))} are in the data but not in the domain; "
                          "add them to the domain or drop them")
    missing = [n for n in domain.names if n not in src.columns]
    if missing:
        raise DomainError(f"the domain lists column(s) {', '.join(map(repr, missing))} that the data does not have; "
                          "check the file or edit the domain")
    p = len(domain)
    if src.keys is not None and p and fits_int64(domain.shape):
        return _count_by_key(src, domain, progress)
    query = S.count_query(domain, src.columns, src.view, src.dialect)
    _progress(progress, f"counting {src.name} on the engine (GROUP BY over {len(domain)} coded columns)")
    if src.codes is not None:
        codes, counts = src.codes(query, p)
    else:
        rows = src.rows(query)
        arr = np.array(rows, dtype=np.int64).reshape(-1, p + 1)
        codes, counts = arr[:, :p], arr[:, p]
    if len(codes) and (codes < 0).any():
        j = int(np.flatnonzero((codes < 0).any(axis=0))[0])
        raise _domain_error(src, domain.attributes[j], int(codes[:, j][codes[:, j] < 0].min()))
    _check_counted(src, counts, progress)
    return CountTable.from_cells(codes, counts, domain.shape)


def _count_by_key(src: Source, domain: Domain, progress=None) -> CountTable:
    """The count table from a ``GROUP BY`` over one packed BIGINT cell key
    (:func:`sql.key_count_query`): the same table as the p-column ``GROUP BY``, for a
    fraction of the memory (the engine hashes and returns 16 bytes a non-empty cell, and
    the (k, p) codes are decoded once, in place)."""
    _progress(progress, f"counting {src.name} on the engine (GROUP BY over the packed cell key of "
                        f"{len(domain)} coded columns)")
    assert src.keys is not None
    keys, counts = src.keys(S.key_count_query(domain, src.columns, src.view, src.dialect))
    if len(keys) and keys.min() < 0:  # a value outside the domain, or missing without an NA level
        mins = src.rows(S.negative_codes_query(domain, src.columns, src.view, src.dialect))[0]
        j = next(j for j, m in enumerate(mins) if m is not None and int(m) < 0)
        raise _domain_error(src, domain.attributes[j], int(mins[j]))
    _check_counted(src, counts, progress)
    return CountTable.from_keys(keys, counts, domain.shape)


def _check_counted(src: Source, counts: np.ndarray, progress) -> None:
    if not len(counts):
        from dpcore.errors import InputError
        raise InputError(f"{src.name} has a header but no rows; give a file with data")
    _progress(progress, f"{len(counts):,} non-empty cells, {int(counts.sum()):,} records counted "
                        "(exact, curator-only, NOT DP)")


def _domain_error(src: Source, a: Attribute, code: int) -> DomainError:
    col = src.columns[a.name]
    code_found = S.MISSING if code == S.MISSING else S.OUTSIDE
    value, count = src.rows(S.offending_query(a, col, src.view, src.dialect, code_found))[0]
    if code_found == S.MISSING:
        return DomainError(f"column '{a.name}' has {int(count)} missing values but its declared domain has no NA "
                           "level; add \"na\": true for it in the domain file, or remove those rows")
    if a.kind == "numeric":
        try:
            x = float(value)
        except (TypeError, ValueError):
            return DomainError(f"column '{a.name}' is declared numeric but holds non-numeric values such as {value!r}; "
                               "fix the data or declare it categorical")
        e = a.edges
        return DomainError(f"column '{a.name}' has value {x:g} outside its declared bin edges [{e[0]:g}, {e[-1]:g}]; "
                           "widen the edges in the domain file")
    return DomainError(f"column '{a.name}' has value {value!r} that its declared domain does not list ({int(count):,} "
                       "records); add it to the domain's levels (it then becomes public) or recode the data")


def column_facts(src: Source, name: str, limits: Limits, binned_publicly: bool, progress=None) -> ColumnFacts:
    """The :class:`dpcore.data.inference.ColumnFacts` of one column, computed by the engine: its
    present and missing values, infinite values and min/max of a numeric column in one scan; then,
    if the rule reads them (:func:`dpcore.data.inference.reads_levels`), its distinct values, at
    most :meth:`Limits.cap` + 1 of them fetched (the same facts as the column read in memory,
    except that the count stops there). Curator-only, NOT DP."""
    _progress(progress, f"reading the levels of '{name}' (curator-only, NOT DP)")
    d, col = src.dialect, src.columns[name]
    c = d.quote(name)
    pres = col.present(d)
    is_num = col.kind in (S.INT, S.FLOAT)
    n_present, n_all, lo, hi, n_inf = src.rows(
        f"SELECT SUM(CASE WHEN {pres} THEN 1 ELSE 0 END), COUNT(*), "
        + (f"MIN(CASE WHEN {pres} THEN {col.number(d)} END), MAX(CASE WHEN {pres} THEN {col.number(d)} END), "
           f"SUM(CASE WHEN {pres} AND NOT (abs({col.number(d)}) "
           f"<= {S.double_literal(float(S.DBL_MAX))}) THEN 1 ELSE 0 END)"
           if is_num else "NULL, NULL, 0")
        + f" FROM {src.view}")[0]
    n_present, n_inf = int(n_present or 0), int(n_inf or 0)
    facts = ColumnFacts(name, src.dtypes[name], is_num, n_present, int(n_all) - n_present, n_inf,
                        None if lo is None else float(lo), None if hi is None else float(hi))
    if not reads_levels(n_present, n_inf, binned_publicly):
        return facts
    value = col.number(d) if col.kind == S.FLOAT else (f"CAST({c} AS BIGINT)" if col.kind == S.INT and col.csv else
                                                        c if col.kind in (S.INT, S.BOOL) else col.key(d))
    cap = limits.cap(is_num)
    vals = [r[0] for r in src.rows(f"SELECT DISTINCT {value} FROM {src.view} WHERE {pres} LIMIT {cap + 1}")]
    capped = len(vals) > cap
    return replace(facts, n_distinct=len({level_key(v) for v in vals}), distinct_capped=capped,
                   levels=None if capped else levels_of(vals, is_num))


def infer_domain(src: Source, numeric=None, max_levels: int = DEFAULT_MAX_LEVELS,
                 max_int_levels: int = DEFAULT_MAX_INT_LEVELS, numeric_bins: int = DEFAULT_NUMERIC_BINS,
                 progress=None) -> Domain:
    """:func:`dpcore.data.inference.infer_domain` on the engine: each column's facts computed here
    (:func:`column_facts`, one column after the other), the domain decided from them by the same rule
    as in memory (:func:`dpcore.data.inference.domain_from_facts`).

    Privacy: reads the raw data and releases nothing; the domain is marked inferred
    (NOT DP) until the curator declares it public, and bins over a column's own min/max
    are marked ``origin="data_range"``, which can never be declared (docs/privacy-model.md).
    """
    numeric = dict(numeric or {})
    check_numeric_columns(numeric, src.columns)
    limits = Limits(max_levels, max_int_levels, numeric_bins)
    facts = (column_facts(src, name, limits, name in numeric, progress) for name in src.columns)
    return domain_from_facts(facts, numeric, limits)


def expand_records(table: CountTable) -> np.ndarray:
    """Records (n, p) as compact codes from the count table (:meth:`CountTable.records`).

    Every method reads the records only through counts, so this row order gives the same
    release as the file's own order (``tests/counting/test_engines.py``). Memory: n·p bytes for
    attributes of at most 256 levels (10^7 × 15: 150 MB), against 8·n·p for int64 codes.
    """
    return table.records()
