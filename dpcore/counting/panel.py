"""A panel released wide: one synthetic record per unit, one column group per declared period.

A panel holds one record per unit (a person) and period (a year, a wave). Released record by record under the
unit's guarantee (:mod:`dpcore.counting.contributions`), every count is measured at K times a record's
sensitivity and a person's path through the years is lost: each synthetic record is a person-year of its own.
When the periods are public (the time column's levels are declared), the panel can instead be pivoted to one
record per unit with a column group per period (``wage@1976``, ``wage@1977``, …). The unit is then one record of
the wide table: every count of it has a record's sensitivity, and the release's dependencies between periods
are a person's path. The synthetic wide records are turned back into a long table, one row per synthetic unit
and period it has, with a fresh identifier (``1``, ``2``, … : nothing of the real identifiers is released).

The pivot is a 1-stable transformation from tables of units to tables of wide records: adding or removing one
unit (with all of its records) adds or removes one wide record, and keeping at most one record per unit and
period (a uniformly random one, drawn with the release's generator) changes nothing of that. A record whose
period the domain does not declare, or whose period is missing, cannot be placed: it is dropped (counted for the
curator: NOT DP). A period a unit lacks is missing in every column of its group ("NA", a level each of those
columns has), and on the way back a unit has a row for a period exactly when some value of its group is present.

Privacy: this module reads raw records and releases nothing. Proof: docs/privacy-model.md, "Stability and the
privacy unit" (the wide release).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpcore.data.domain import Attribute, Domain
from dpcore.errors import OptionError

__all__ = ["PanelLayout", "Wide", "panel_layout", "to_long", "to_wide", "wide_column", "wide_domain"]

#: joins a column's name and a period's label in the wide table's column names
SEPARATOR = "@"


def wide_column(column: str, period_label: str) -> str:
    """The wide table's name for ``column`` in one period: ``wage@1976``."""
    return f"{column}{SEPARATOR}{period_label}"


@dataclass(frozen=True)
class PanelLayout:
    """How a panel is pivoted: the identifier column ``unit``, the public time column ``time`` (its declared
    attribute ``periods``: one column group per level), and the other columns, in the table's order."""

    unit: str
    time: str
    periods: Attribute
    columns: tuple[str, ...]
    #: whether each of ``columns`` has a missing level of its own in the declared domain
    missing_allowed: tuple[bool, ...] = ()
    #: the table's columns in their order (the released panel keeps it)
    order: tuple[str, ...] = ()

    @property
    def labels(self) -> list[str]:
        return [str(v) for v in self.periods.levels]

    def describe(self) -> str:
        """What a preview says of the layout: which records the release keeps together."""
        return (f"one synthetic record per '{self.unit}', wide: {len(self.labels)} periods of '{self.time}' × "
                f"{len(self.columns)} columns = {len(self.labels) * len(self.columns)} columns, so each synthetic "
                f"'{self.unit}' keeps its path through the periods")


def panel_layout(data: pd.DataFrame, domain: Domain, unit: str, time: str) -> PanelLayout:
    """The layout of ``data`` (with its identifier ``unit``) pivoted on ``time``, whose periods are the levels
    the public ``domain`` declares for it (``domain`` describes the table without the identifier). One line
    naming the column and what to do otherwise."""
    if not isinstance(time, str) or time not in map(str, data.columns):
        raise OptionError(f"panel_time {time!r} is not a column of the table; give the public time column "
                          "(the year or wave), or leave panel_time out to release records")
    if time == unit:
        raise OptionError(f"panel_time '{time}' is the privacy unit's identifier; give the time column (the year or "
                          "wave)")
    if time not in domain.names:
        raise OptionError(f"panel_time '{time}' is not in the domain; declare its periods (levels)")
    periods = domain[time]
    if periods.kind != "categorical" or not periods.levels:
        raise OptionError(f"panel_time '{time}' must be declared categorical, one level per period (e.g. 1976, "
                          "1977, …), so that each period is a column group; declare its levels")
    columns = tuple(str(c) for c in data.columns if str(c) not in (unit, time))
    if not columns:
        raise OptionError(f"the table has no column besides '{unit}' and '{time}' to release")
    return PanelLayout(unit, time, periods, columns, tuple(bool(domain[c].na) for c in columns),
                       tuple(str(c) for c in data.columns))


def wide_domain(domain: Domain, layout: PanelLayout) -> Domain:
    """The public domain of the wide table: each column's declared attribute once per period, with the level
    "NA" (a period the unit lacks). Derived from the declared domain alone: nothing read from the data."""
    attrs = []
    for label in layout.labels:
        for col in layout.columns:
            attrs.append(dataclasses.replace(domain[col], name=wide_column(col, label), na=True))
    return Domain(tuple(attrs), domain.source)


@dataclass(frozen=True)
class Wide:
    """The wide table (one record per unit) and what the pivot did, curator-only (NOT DP): units, records that
    could not be placed (period missing or not declared), records beyond one per unit and period."""

    data: pd.DataFrame
    units: int
    unplaced_records: int
    dropped_records: int


def to_wide(data: pd.DataFrame, layout: PanelLayout, rng: np.random.Generator) -> Wide:
    """One row per unit, a column group per declared period; of a unit's several records in one period, one
    uniformly random record is kept (a random permutation, then the first of each unit and period), drawn from
    ``rng``. A missing identifier is a unit of its own per record."""
    ids = data[layout.unit]
    key = ids.astype(object).where(ids.notna(), None)
    unit_codes, _ = pd.factorize(key, use_na_sentinel=True)
    unit_codes = np.asarray(unit_codes, dtype=np.int64)
    missing = unit_codes < 0
    unit_codes[missing] = unit_codes.max(initial=-1) + 1 + np.arange(int(missing.sum()))
    labels = layout.labels
    time_text = data[layout.time].astype(object).map(lambda v: None if pd.isna(v) else str(v))
    period = time_text.map({lab: i for i, lab in enumerate(labels)})
    placed = period.notna().to_numpy()
    order = rng.permutation(len(data))
    frame = pd.DataFrame({"u": unit_codes, "p": period.to_numpy()}).iloc[order]
    frame = frame[placed[order]]
    first = ~frame.duplicated(["u", "p"], keep="first")
    kept = frame[first]
    units = np.unique(unit_codes)
    row_of = {u: i for i, u in enumerate(units)}
    rows = kept["u"].map(row_of).to_numpy()
    periods = kept["p"].astype(np.int64).to_numpy()
    source = kept.index.to_numpy()
    out = {}
    for j, label in enumerate(labels):
        at = periods == j
        for col in layout.columns:
            values = data[col]
            column = pd.Series([None] * len(units), dtype=object)
            column.iloc[rows[at]] = values.iloc[source[at]].to_numpy(dtype=object)
            # object values as they were (an int stays an int): the wide attribute encodes them as the long one
            out[wide_column(col, label)] = column.where(column.notna(), None)
    wide = pd.DataFrame(out)
    return Wide(wide, len(units), int((~placed).sum()), int(placed.sum() - len(kept)))


def to_long(wide: pd.DataFrame, layout: PanelLayout, rng: np.random.Generator) -> pd.DataFrame:
    """The synthetic wide records as a panel (post-processing of released records, public rules only).

    A synthetic unit has a row for a period when at least half of its group's values are present (in a wide
    record "missing" mostly means "the unit lacks this period"; a lone missing value among present ones is
    noise). A missing value left in a column whose declared domain has no missing level is filled with the value
    of a uniformly random synthetic record of the same period that has one (hot deck within the synthetic set),
    or, when no record of that period has one, of any period. The identifier is a fresh 1, 2, …; the columns keep
    the table's order."""
    parts = []
    for j, label in enumerate(layout.labels):
        group = wide[[wide_column(c, label) for c in layout.columns]]
        present = (group.notna().sum(axis=1) * 2 >= len(layout.columns)).to_numpy()
        part = group[present].copy()
        part.columns = list(layout.columns)
        for col, allowed in zip(layout.columns, layout.missing_allowed):
            if not allowed:
                _fill_gaps(part, col, part[col].dropna(), rng)
        part.insert(0, layout.time, layout.periods.decode(np.full(int(present.sum()), j), rng).to_numpy())
        part.insert(0, layout.unit, np.flatnonzero(present) + 1)
        part["__period"] = j
        parts.append(part)
    long = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=[layout.unit, layout.time])
    for col, allowed in zip(layout.columns, layout.missing_allowed):  # a period with no donor: any period's
        if not allowed and col in long.columns:
            _fill_gaps(long, col, long[col].dropna(), rng)
    long = long.sort_values([layout.unit, "__period"], kind="stable").drop(columns="__period")
    order = [c for c in layout.order if c in long.columns] or list(long.columns)
    return long[order].reset_index(drop=True)


def _fill_gaps(part: pd.DataFrame, col: str, donors: pd.Series, rng: np.random.Generator) -> None:
    """Fill ``part[col]``'s missing values with uniformly random ``donors`` (synthetic values), in place."""
    gaps = part[col].isna().to_numpy()
    if not gaps.any() or not len(donors):
        return
    filled = np.array(part[col].to_numpy(dtype=object), dtype=object, copy=True)
    filled[gaps] = donors.to_numpy(dtype=object)[rng.integers(0, len(donors), int(gaps.sum()))]
    part[col] = pd.Series(filled, index=part.index).astype(donors.dtype)
