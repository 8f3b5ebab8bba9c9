"""Neighbour notions: what "one person's data" means for a release.

Every release is differentially private for exactly one notion, stated in its ledger,
its manifest and its DP statement (proofs: docs/privacy-model.md).

* ``add_remove`` (default, unbounded DP): neighbouring tables differ by adding or
  removing one record. The record count n is private: a release spends a documented
  share of ε on a noisy count and synthesizes that many records. A count table has L1
  sensitivity 1. Score sensitivities that grow with n use the public bound
  ``max_records`` on the size of any table the release may be run on.
* ``replace`` (bounded DP): neighbouring tables have the same n and differ in one
  record's values. n is public; a count table has L1 sensitivity 2 (one record leaves a
  cell and enters another), and every score sensitivity is the replace-one one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from dpcore.errors import OptionError, real_number, whole_number

ADD_REMOVE = "add_remove"
REPLACE = "replace"
NOTIONS = (ADD_REMOVE, REPLACE)
#: Public upper bound on a table's record count under add/remove (sensitivities of
#: AIC-type scores grow like ln n, so they need one). A larger table is refused.
DEFAULT_MAX_RECORDS = 10**9
#: Share of ε spent on the noisy record count under add/remove.
DEFAULT_COUNT_SHARE = 0.05

#: The text a ledger charge records for each neighbour notion (``Charge.neighbours``).
NEIGHBOUR_LABELS = {
    ADD_REMOVE: "add/remove one record",
    REPLACE: "replace one record (n public)",
}


def check_neighbours(value) -> str:
    if value not in NOTIONS:
        raise OptionError(f"neighbours must be one of {', '.join(NOTIONS)}; got {value!r}")
    return value


@dataclass(frozen=True)
class Neighbours:
    """One neighbour notion and the public facts it relies on."""

    notion: str = ADD_REMOVE
    max_records: int = DEFAULT_MAX_RECORDS

    def __post_init__(self):
        check_neighbours(self.notion)
        object.__setattr__(self, "max_records", whole_number("max_records", self.max_records, 1, 10**15))

    @property
    def n_public(self) -> bool:
        return self.notion == REPLACE

    @property
    def histogram_sensitivity(self) -> float:
        """L1 change of any count table (histogram, margin, cell table)."""
        return 1.0 if self.notion == ADD_REMOVE else 2.0

    @property
    def histogram_l2_sensitivity(self) -> float:
        """L2 change of any count table: one cell by 1 (add/remove) or two cells by 1 (replace)."""
        return 1.0 if self.notion == ADD_REMOVE else math.sqrt(2.0)

    def count_sensitivity(self, mechanism) -> float:
        """A count table's sensitivity in the norm ``mechanism``'s privacy map takes (L1 for
        Laplace-type noise, L2 for the discrete Gaussian)."""
        return self.histogram_l2_sensitivity if getattr(mechanism, "norm", "l1") == "l2" else self.histogram_sensitivity

    @property
    def label(self) -> str:
        return NEIGHBOUR_LABELS[self.notion]

    def records_bound(self, n: int) -> int:
        """The public bound on the record count used inside score sensitivities."""
        return self.max_records if self.notion == ADD_REMOVE else int(n)

    def check_size(self, n: int) -> None:
        if self.notion == ADD_REMOVE and n > self.max_records:
            raise OptionError(
                f"the table has more records than max_records={self.max_records:,}, the public bound the "
                "sensitivities are computed for; raise max_records"
            )

    def statement(self, epsilon: float, delta: float | None = None, rho: float | None = None,
                  given: str = "the declared public domain") -> str:
        """The DP statement: ε-DP (``delta`` None), or (ε, δ)-DP through ρ-zCDP, ``given`` the public inputs
        (the declared domain, or what was public when parts of it were found privately in the release)."""
        if delta is None:
            head = f"ε-differentially private with ε = {epsilon:g}"
        else:
            head = f"(ε, δ)-differentially private with ε = {epsilon:g}, δ = {delta:g} (ρ-zCDP, ρ = {rho:.6g})"
        if self.notion == ADD_REMOVE:
            return (
                f"{head} for neighbouring tables that differ by adding or "
                f"removing one record (tables of at most {self.max_records:,} records), given {given}; the record "
                "count is released with noise, not exactly"
            )
        return (
            f"{head} for neighbouring tables that differ by replacing one "
            f"record, given {given} and the public record count n"
        )

    def to_dict(self) -> dict:
        d: dict[str, object] = {"notion": self.notion, "description": self.label}
        if self.notion == ADD_REMOVE:
            d["max_records"] = self.max_records
        return d


def check_count_share(value) -> float:
    return real_number("count_share (the share of ε spent on the noisy record count)", value, 0, 1,
                       lo_open=True, hi_open=True)
