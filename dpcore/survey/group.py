"""A survey release that protects one unit (a person, a household) with all of its records, by group privacy.

The survey tools' mechanisms are proven for one record (Merrill 2021; docs/survey-privacy.md). For a unit
with several records (a household roster, a panel) the table is first bounded: every unit keeps at most K of
its records, a uniformly random subset, and the identifier is dropped (:func:`dpcore.counting.contributions.
bound_contributions`). Neighbouring tables, one unit apart, are then at most K records apart, and a pure
ε/K-DP mechanism is ε-DP for tables K records apart (group privacy: Dwork & Roth 2014, Thm 2.2, applied K
times along a path of one-record steps). So each of the release's mechanisms runs at 1/K of the ε asked for,
and the release is ε-DP for one unit. The ledger keeps the record-level charges; the unit's ε is K times
their total.

This holds for pure ε only, which every survey release is. Smooth-sensitivity releases need a record-level
ε of at least 2 ln 2 (ch. 6): with a unit of K records the unit's ε must be at least K·2 ln 2, refused below.

Proof: docs/privacy-model.md, "Stability and the privacy unit" (survey tools).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpcore.counting.contributions import RECORD, PrivacyUnit, bound_contributions, check_privacy_unit
from dpcore.privacy.neighbours import ADD_REMOVE

__all__ = ["UnitRelease", "for_unit"]


@dataclass(frozen=True)
class UnitRelease:
    """What a survey release protects: ``unit`` (the record, or one id with at most K records), with what
    bounding did (curator-only, NOT DP)."""

    unit: PrivacyUnit = RECORD
    units: int = 0
    records_dropped: int = 0

    @property
    def k(self) -> int:
        return self.unit.records_per_unit

    def record_epsilon(self, epsilon: float) -> float:
        """The ε each record-level mechanism runs at: ε/K."""
        return float(epsilon) / self.k

    def unit_epsilon(self, record_epsilon: float) -> float:
        """The unit's ε of record-level mechanisms that spent ``record_epsilon``: K times it."""
        return self.k * float(record_epsilon)

    def statement(self, epsilon: float, notion: str, record_statement: str) -> str:
        """The release's statement: the record-level one as it is, or the unit's, naming K and group privacy."""
        if self.unit.is_record:
            return record_statement
        col, k = self.unit.column, self.k
        who = (f"adding or removing one '{col}' with all of its records" if notion == ADD_REMOVE
               else f"replacing the records of one '{col}' by as many other records")
        return (f"ε-differentially private with ε = {epsilon:.6g} for neighbouring tables that differ by {who} (at "
                f"most {k} kept per '{col}'): each mechanism ran at ε/{k} = {epsilon / k:.6g} for one record, and "
                f"is then ε-DP for tables {k} records apart (group privacy). The record-level statement: "
                f"{record_statement}")


def for_unit(data: pd.DataFrame, column: str | None, records_per_unit: int | None,
             rng: np.random.Generator) -> tuple[pd.DataFrame, UnitRelease]:
    """The table a survey release reads (bounded, the identifier dropped) and what it protects. ``column`` None:
    the table as it is and the record."""
    unit = check_privacy_unit(data, column, records_per_unit)
    if unit.is_record:
        return data, UnitRelease()
    bounded = bound_contributions(data, unit, rng)
    return bounded.data, UnitRelease(unit, bounded.units, bounded.dropped_records)
