"""A domain inferred from raw data, for the curator to confirm: one rule for every engine.

Privacy: a domain inferred from the data leaks rare levels and the range of numeric columns, so
it is marked ``"inferred from data — confirm before release"`` (:data:`dpcore.data.domain.INFERRED`),
and a release built on it is reported as not DP by its manifest until the curator declares it
public (docs/privacy-model.md#what-is-public). Bins over a column's own min and max get the origin
``"data_range"``, which can never be declared. Nothing here is released.

Inference is two steps. Whoever holds the records gathers the :class:`ColumnFacts` of each column:
:func:`series_facts` for a table in memory (pandas), :func:`dpcore.counting.on_engine.column_facts`
for a file on DuckDB or Spark (SQL). :func:`domain_from_facts` then decides every column from its
facts alone — public bins asked for, bins over the data's range, categorical levels — and makes
every refusal (an empty column, infinite values, too many levels, a single level, binning asked for
a column the data lacks), so the in-memory and the engine paths infer the same domain with the same
messages.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from dpcore.data.domain import (
    DATA_RANGE,
    DEFAULT_NUMERIC_BINS,
    INFERRED,
    Attribute,
    Domain,
    check_table,
    equal_width_edges,
    json_scalar,
    level_key,
    numeric_attribute,
    numeric_spec_attribute,
    series_level_keys,
)
from dpcore.errors import DomainError

#: A column with more distinct values than this is refused (an identifier or free text).
DEFAULT_MAX_LEVELS = 200
#: Integer columns with at most this many distinct values are treated as categorical.
DEFAULT_MAX_INT_LEVELS = 25


@dataclass(frozen=True)
class Limits:
    """The thresholds of inference: ``max_levels`` distinct values at most (more is an identifier),
    numbers with more than ``max_int_levels`` distinct values cut into ``numeric_bins`` bins."""

    max_levels: int = DEFAULT_MAX_LEVELS
    max_int_levels: int = DEFAULT_MAX_INT_LEVELS
    numeric_bins: int = DEFAULT_NUMERIC_BINS

    def cap(self, numeric: bool) -> int:
        """How many distinct values the rule may need listed: an engine fetches one more, and a
        column beyond it keeps only its count (:attr:`ColumnFacts.levels` is None)."""
        return max(self.max_levels, self.max_int_levels) if numeric else self.max_levels


@dataclass(frozen=True)
class ColumnFacts:
    """What the rule needs to know of one column, gathered where the records are (curator-only, NOT DP).

    ``dtype`` is the pandas dtype the reading rules give the column (the domain's ``dtype``);
    ``numeric``: its values are numbers (not booleans), so many distinct ones are binned. ``low``
    and ``high`` are the smallest and largest present number (numeric columns only). The distinct
    values are read only when the rule needs them (:func:`reads_levels`; otherwise
    ``n_distinct`` is None): ``n_distinct`` counts distinct level keys
    (:func:`dpcore.data.domain.level_key`), and ``levels`` lists them as the domain's levels when
    there are at most :meth:`Limits.cap`. An engine stops counting after the cap
    (``distinct_capped``); in memory every distinct value is counted.
    """

    name: Any
    dtype: str
    numeric: bool
    n_present: int
    n_missing: int
    n_infinite: int = 0
    low: float | None = None
    high: float | None = None
    n_distinct: int | None = None
    distinct_capped: bool = False
    levels: tuple | None = None


def reads_levels(n_present: int, n_infinite: int, binned_publicly: bool) -> bool:
    """Whether the rule reads a column's distinct values: not for a column it refuses first (empty,
    or holding infinite values), nor for one the curator gave public bins."""
    return n_present > 0 and not n_infinite and not binned_publicly


def levels_of(values: Iterable, numeric: bool) -> tuple:
    """The domain's levels from a column's distinct present values: numbers sorted as JSON
    numbers; anything else one level per :func:`dpcore.data.domain.level_key` (booleans and numbers
    kept, other values as text), ordered by that key."""
    if numeric:
        return tuple(sorted({json_scalar(v) for v in values}))
    uniq: dict[str, Any] = {}
    for v in values:
        uniq.setdefault(level_key(v), json_scalar(v) if isinstance(v, (bool, np.bool_, np.integer, np.floating))
                        else str(v))
    return tuple(uniq[k] for k in sorted(uniq))


def series_facts(s: pd.Series, name: Any, limits: Limits, binned_publicly: bool) -> ColumnFacts:
    """The :class:`ColumnFacts` of a column held in memory (read by :mod:`dpcore.data.io` or given
    as a DataFrame). Complex numbers have no order: their ``low`` and ``high`` are None."""
    numeric = pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype)
    n_missing = int(s.isna().sum())
    n_present = len(s) - n_missing
    n_infinite = (int(np.isinf(s.to_numpy(dtype=float, na_value=np.nan)).sum())
                  if pd.api.types.is_float_dtype(s.dtype) else 0)
    ordered = numeric and n_present > 0 and s.dtype.kind != "c"
    facts = ColumnFacts(name, str(s.dtype), numeric, n_present, n_missing, n_infinite,
                        float(s.min()) if ordered else None, float(s.max()) if ordered else None)
    if not reads_levels(n_present, n_infinite, binned_publicly):
        return facts
    n_distinct = len(pd.unique(series_level_keys(s)))
    levels = levels_of(s.dropna().unique(), numeric) if n_distinct <= limits.cap(numeric) else None
    return replace(facts, n_distinct=n_distinct, levels=levels)


def check_numeric_columns(numeric: Mapping, columns: Iterable) -> None:
    """Refuse public binning given for a column the data does not have."""
    have = set(columns)
    unknown = [c for c in numeric if c not in have]
    if unknown:
        raise DomainError("numeric binning given for column(s) "
                          f"{', '.join(map(repr, unknown))} that the data does not have")


def data_range_attribute(name: str, lo, hi, bins: int, na: bool, dtype: str) -> Attribute:
    """A numeric attribute of ``bins`` equal-width bins over the data's own [lo, hi] (a one-point
    range becomes [lo, lo + 1]). The edges are read from the data (origin ``"data_range"``): the
    attribute cannot be declared public, and a release with it is NOT DP."""
    lo, hi = float(lo), float(hi)
    if hi == lo:
        hi = lo + 1.0
    return numeric_attribute(name, equal_width_edges(lo, hi, bins), na, dtype, origin=DATA_RANGE)


def column_attribute(f: ColumnFacts, numeric: Mapping, limits: Limits) -> Attribute:
    """The attribute the facts of one column decide, or the :class:`DomainError` refusing it.

    In order: an empty column and infinite values are refused; a column the curator gave public
    bins (``numeric``) gets them; numbers with more than ``max_int_levels`` distinct values get
    ``numeric_bins`` bins over the data's own range (``"data_range"``: NOT public); a column with
    more than ``max_levels`` distinct values is refused as an identifier; a single level (with no
    missing value) is refused; anything else is categorical with its distinct values as levels.
    """
    name, has_na = f.name, f.n_missing > 0
    if f.n_present == 0:
        raise DomainError(f"column '{name}' is empty (all values missing); drop it before synthesising")
    if f.n_infinite:
        # an infinite value is neither a level nor inside a bin: refuse it rather than bin or drop it
        raise DomainError(f"column '{name}' holds infinite values (inf); replace them with a public bound or "
                          "mark them missing, then try again")
    if name in numeric:
        return numeric_spec_attribute(name, numeric[name], limits.numeric_bins, has_na, f.dtype)
    assert f.n_distinct is not None, f"the facts of column '{name}' hold no distinct count (reads_levels)"
    if f.numeric and f.n_distinct > limits.max_int_levels:
        return data_range_attribute(name, f.low, f.high, limits.numeric_bins, has_na, f.dtype)
    if f.n_distinct > limits.max_levels:
        counted = (f"more than {limits.max_levels} distinct values" if f.distinct_capped else
                   f"{f.n_distinct:,} distinct values (limit {limits.max_levels})")
        raise DomainError(f"column '{name}' has {counted}; it looks like an identifier or free text. Drop it, "
                          "or declare it numeric with public bin edges")
    levels = f.levels
    assert levels is not None  # at most max_levels distinct values: within the cap, so listed
    if len(levels) + int(has_na) < 2:
        raise DomainError(f"column '{name}' has a single level ({levels[0]!r}); it carries no information. "
                          "Drop it before synthesising")
    return Attribute(str(name), "categorical", levels, has_na, None, f.dtype)


def domain_from_facts(facts: Iterable[ColumnFacts], numeric: Mapping, limits: Limits,
                      check: Callable[[Attribute], None] | None = None) -> Domain:
    """The inferred domain of the columns whose facts ``facts`` yields, in order (an engine
    gathers a column's facts only once the columns before it are decided). ``check``, if given,
    sees each attribute as it is decided (the in-memory path encodes a column given public bins,
    to refuse non-numeric text early)."""
    attrs = []
    for f in facts:
        a = column_attribute(f, numeric, limits)
        if check is not None:
            check(a)
        attrs.append(a)
    return Domain(tuple(attrs), INFERRED)


def infer_domain(
    df: pd.DataFrame,
    numeric: Mapping[str, Any] | None = None,
    max_levels: int = DEFAULT_MAX_LEVELS,
    max_int_levels: int = DEFAULT_MAX_INT_LEVELS,
    numeric_bins: int = DEFAULT_NUMERIC_BINS,
) -> Domain:
    """Infer a domain from the data, for the curator to confirm.

    ``numeric`` maps a column to its public bin edges (a list of numbers) or to
    ``{"bounds": [lo, hi], "bins": k}`` for equal-width bins. Other numeric columns
    with more than ``max_int_levels`` distinct values get ``numeric_bins``
    equal-width bins over their observed range, which is *not* public: those attributes
    are marked ``origin="data_range"`` and the domain cannot be declared until they get
    public bounds or edges, DP quantile edges, or are dropped. Columns that are empty, constant, or have more than
    ``max_levels`` levels (identifiers) are refused with a remedy (:func:`column_attribute`).

    Privacy: reads the raw data and releases nothing; the result is curator-only
    until declared public.
    """
    check_table(df)
    numeric = dict(numeric or {})
    check_numeric_columns(numeric, df.columns)
    limits = Limits(max_levels, max_int_levels, numeric_bins)

    def encodes(a: Attribute) -> None:
        if a.name in numeric:
            a.encode(df[a.name])  # fail early on non-numeric text (values outside the edges are clamped)

    facts = (series_facts(df[name], name, limits, name in numeric) for name in df.columns)
    return domain_from_facts(facts, numeric, limits, encodes)
