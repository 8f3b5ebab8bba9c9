"""The privacy unit: keep at most K records of each unit before anything is measured.

A curator's table may hold several records per person (a panel: one row per person and year; a household
roster; a log of visits). Differential privacy for a record then says little about a person: a person with
seven records is protected at 7ε. A release that protects "everything about one X" (X an identifier column:
a person, a household) bounds each unit's contribution first, as Tumult Analytics' ``MaxRowsPerID`` and
Google's per-user contribution bounding do: every unit keeps at most ``records_per_unit`` = K of its records,
a uniformly random subset drawn with the release's generator, and the identifier column itself is dropped
(it is never released). Neighbouring tables, one unit apart, are then at most K records apart: the
transformation is K-stable (:func:`dpcore.privacy.stability.records_per_unit`), and every sensitivity the
release uses is K times the per-record one (:class:`dpcore.privacy.neighbours.Neighbours`).

K is public and chosen by the curator (the panel's length, a household's largest size in the survey's
design), never read from the data: a K taken from the data would itself leak the largest unit.

How many records bounding dropped is a fact about the data: curator-only, NOT DP, never in a published file.

Privacy: this module reads raw records and releases nothing. Proof of the unit-level guarantee:
docs/privacy-model.md, "Stability and the privacy unit".
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpcore.data.inference import DEFAULT_MAX_INT_LEVELS
from dpcore.errors import OptionError, whole_number

__all__ = ["RECORD", "PrivacyUnit", "Bounded", "bound_contributions", "check_privacy_unit", "unit_candidates",
           "unit_summary"]

#: the largest K accepted: beyond it every count's noise is as large as the table itself
MAX_RECORDS_PER_UNIT = 10_000


@dataclass(frozen=True)
class PrivacyUnit:
    """What a release protects: everything about one value of ``column`` (a person, a household), with at most
    ``records_per_unit`` of its records kept. ``column`` None is the record (K = 1)."""

    column: str | None = None
    records_per_unit: int = 1
    #: the public time column of a panel released wide (:mod:`dpcore.counting.panel`): one record per unit
    panel_time: str | None = None

    def __post_init__(self) -> None:
        k = whole_number("records_per_unit (K, the records kept per unit)", self.records_per_unit, 1,
                         MAX_RECORDS_PER_UNIT)
        object.__setattr__(self, "records_per_unit", k)
        if self.column is None and k != 1:
            raise OptionError("records_per_unit is the number of records kept per unit: give privacy_unit (the "
                              "identifier column, e.g. privacy_unit='id') too, or leave records_per_unit at 1")
        if self.column is None and self.panel_time is not None:
            raise OptionError("panel_time releases one wide record per unit: give privacy_unit (the identifier "
                              "column, e.g. privacy_unit='id') too")
        if self.panel_time is not None and k != 1:
            raise OptionError("a wide panel release keeps one record per unit and period: leave records_per_unit "
                              "out (each unit is one wide record)")

    @property
    def is_record(self) -> bool:
        return self.column is None

    def describe(self, noun: str | None = None) -> str:
        """"one record", or "one id (a unit, with up to 7 records)" for statements and labels."""
        if self.is_record:
            return "one record"
        what = noun or f"'{self.column}'"
        if self.panel_time is not None:
            return f"one {what} (with all of its records: one per '{self.panel_time}', released as one wide record)"
        k = self.records_per_unit
        return f"one {what} (with all of its records: up to {k} kept)" if k > 1 else f"one {what} (one record kept)"

    def to_dict(self) -> dict:
        if self.is_record:
            return {}
        if self.panel_time is not None:
            return {"privacy_unit": self.column, "panel_time": self.panel_time}
        return {"privacy_unit": self.column, "records_per_unit": self.records_per_unit}


#: the record as the privacy unit (K = 1): what a release protects unless told otherwise
RECORD = PrivacyUnit()


def check_privacy_unit(data: pd.DataFrame, column, records_per_unit, panel_time=None) -> PrivacyUnit:
    """The release's privacy unit, checked against ``data`` before anything is read or spent: ``column`` names a
    column of the table (one line naming it otherwise); ``records_per_unit`` a whole number >= 1; or
    ``panel_time`` a column too (a wide panel release: :mod:`dpcore.counting.panel`), then no K."""
    if column is None:
        return PrivacyUnit(None, 1 if records_per_unit is None else records_per_unit, panel_time)
    if not isinstance(column, str) or column not in map(str, data.columns):
        raise OptionError(f"privacy_unit {column!r} is not a column of the table; give the identifier column "
                          f"(one of {', '.join(map(str, data.columns[:8]))}{', …' if data.shape[1] > 8 else ''})")
    if panel_time is not None:
        if records_per_unit is not None:
            raise OptionError(f"panel_time='{panel_time}' releases one wide record per '{column}' (one record per "
                              "period kept): leave records_per_unit out")
        return PrivacyUnit(column, 1, str(panel_time))
    if records_per_unit is None:
        raise OptionError(f"privacy_unit='{column}' needs records_per_unit: the most records one {column} may "
                          "contribute (public, e.g. the panel's length); records beyond it are dropped at random")
    if data.shape[1] < 2:
        raise OptionError(f"the table has no column besides the privacy unit '{column}' to release")
    return PrivacyUnit(column, records_per_unit)


@dataclass(frozen=True)
class Bounded:
    """The table after contribution bounding (the identifier dropped), and what bounding did: curator-only,
    NOT DP (``dropped_records``: records beyond K; ``units``: distinct units; ``largest``: the most records one
    unit had)."""

    data: pd.DataFrame
    units: int
    dropped_records: int
    largest: int


def bound_contributions(data: pd.DataFrame, unit: PrivacyUnit, rng: np.random.Generator) -> Bounded:
    """Keep at most K records of every unit: a uniformly random subset of each larger unit (the rows' order
    does not matter: a random permutation, then each unit's first K), drawn from ``rng``; drop the identifier.
    A missing identifier is a unit of its own per record (it cannot be linked to any other record)."""
    if unit.is_record:
        return Bounded(data, len(data), 0, 1)
    ids = data[unit.column]
    key = ids.astype(object).where(ids.notna(), None)
    codes, _ = pd.factorize(key, use_na_sentinel=True)
    codes = np.asarray(codes, dtype=np.int64)
    missing = codes < 0
    codes[missing] = codes.max(initial=-1) + 1 + np.arange(int(missing.sum()))  # each missing id its own unit
    order = rng.permutation(len(data))
    shuffled = codes[order]
    # rank of each row within its unit in the shuffled order: the first K of every unit are kept
    sort = np.argsort(shuffled, kind="stable")
    ranks = np.empty(len(data), dtype=np.int64)
    sorted_codes = shuffled[sort]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_codes)) + 1] if len(data) else np.zeros(0, np.int64)
    run = np.repeat(starts, np.diff(np.r_[starts, len(data)])) if len(data) else np.zeros(0, np.int64)
    ranks[sort] = np.arange(len(data)) - run
    keep = np.sort(order[ranks < unit.records_per_unit])
    sizes = np.bincount(codes) if len(data) else np.zeros(1, np.int64)
    kept = data.iloc[keep].drop(columns=[unit.column]).reset_index(drop=True)
    return Bounded(kept, int((sizes > 0).sum()), int(len(data) - len(keep)), int(sizes.max(initial=0)))


def unit_summary(data: pd.DataFrame, column: str) -> dict:
    """What the Data page shows of a column that looks like an identifier (curator-only, NOT DP): distinct
    values, the most records one value has, and the share of records in values that repeat."""
    counts = data[column].value_counts(dropna=True)
    return {"values": int(len(counts)), "largest": int(counts.max()) if len(counts) else 0,
            "repeated_share": float(counts[counts > 1].sum() / max(1, len(data)))}


#: a column named like an identifier: ``id``, ``pid``, ``person_id``, ``hhid``, ``household``, ``serial``, ``personID``
_ID_NAME = re.compile(r"(^|[^a-z])(id|pid|hhid|serial|person|household|respondent)([^a-z]|$)", re.IGNORECASE)
_ID_SUFFIX = re.compile(r"[a-z](ID|Id)$")
#: a named identifier needs this many distinct values to be asked about (a two-level "case" column is no person)
MIN_NAMED_UNITS = 10


def unit_candidates(data: pd.DataFrame, max_levels: int = DEFAULT_MAX_INT_LEVELS) -> list[str]:
    """The columns that look like an identifier whose values repeat (a person's id in a panel, a household's in a
    roster), for the Data page to ask whether each should be the privacy unit. Curator-only, NOT DP: decided from
    the raw values, and never a decision (the curator chooses the unit and its K).

    A column qualifies when its values are whole numbers or text, some of them repeat, and either its name says
    it is an identifier (``id``, ``person_id``, ``hhid``, …) with at least :data:`MIN_NAMED_UNITS` values, or its
    values look like a panel's: more of them than a categorical column lists (``max_levels``), at least half of
    the records sharing their value with another, more distinct values than records per value, and the records
    spread evenly over the values (the most records one value has at most 1.5 times the median). A measurement's
    common values pile up (an age of 35 in many records, few in others); a panel's identifier has about the
    panel's length each. An unbalanced panel or a household roster is found by its column's name."""
    out = []
    for col in data.columns:
        series = data[col].dropna()
        if not len(series) or pd.api.types.is_bool_dtype(series.dtype) or not _whole_or_text(series):
            continue
        counts = series.value_counts()
        if len(counts) < 2 or int(counts.max()) < 2:
            continue
        named = bool(_ID_NAME.search(str(col)) or _ID_SUFFIX.search(str(col))) and len(counts) >= MIN_NAMED_UNITS
        shared = float(counts[counts > 1].sum()) / len(series)
        looks = (len(counts) > max_levels and shared >= 0.5 and len(counts) ** 2 > len(series)
                 and int(counts.max()) <= 1.5 * float(counts.median()))
        if named or looks:
            out.append(str(col))
    return out


def _whole_or_text(series: pd.Series) -> bool:
    if pd.api.types.is_integer_dtype(series.dtype):
        return True
    if pd.api.types.is_float_dtype(series.dtype):
        return bool(np.all(np.isfinite(series.to_numpy())) and np.all(series.to_numpy() % 1 == 0))
    return pd.api.types.is_object_dtype(series.dtype) or pd.api.types.is_string_dtype(series.dtype)
