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

from dataclasses import dataclass

from dpcore.errors import OptionError, real_number, whole_number
from dpcore.privacy.stability import Norm, Sensitivity, Stability, count_table, records_per_unit

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


def check_neighbours(value: str) -> str:
    if value not in NOTIONS:
        raise OptionError(f"neighbours must be one of {', '.join(NOTIONS)}; got {value!r}")
    return value


@dataclass(frozen=True)
class Neighbours:
    """One neighbour notion and the public facts it relies on.

    ``records_per_unit``: the privacy unit's bound K (1: a record is the unit). Neighbouring tables differ by
    one unit, which after contribution bounding is at most K records: every sensitivity below is the
    K-stable bounding (:func:`dpcore.privacy.stability.records_per_unit`) followed by the query's own
    stability (docs/privacy-model.md, "Stability and the privacy unit")."""

    notion: str = ADD_REMOVE
    max_records: int = DEFAULT_MAX_RECORDS
    records_per_unit: int = 1
    #: the identifier column a unit is (None: the record is the unit)
    unit_column: str | None = None
    #: a panel released wide (one record per unit, a column group per period of this public time column)
    unit_periods: str | None = None

    def __post_init__(self) -> None:
        check_neighbours(self.notion)
        object.__setattr__(self, "max_records", whole_number("max_records", self.max_records, 1, 10**15))
        object.__setattr__(self, "records_per_unit", whole_number("records_per_unit", self.records_per_unit, 1,
                                                                  10**6))

    @property
    def protects_records(self) -> bool:
        """The record is the unit (no identifier column): what every release protected before privacy units."""
        return self.unit_column is None

    @property
    def n_public(self) -> bool:
        return self.notion == REPLACE

    @property
    def unit(self) -> Stability:
        """From neighbouring tables (one unit apart) to records: K-stable (the identity for K = 1)."""
        return records_per_unit(self.records_per_unit)

    @property
    def counts(self) -> Stability:
        """From neighbouring tables to any count table (histogram, margin, cell table, layer nodes)."""
        return self.unit.then(count_table(self.notion))

    def count_sensitivity(self, norm: Norm) -> Sensitivity:
        """A count table's sensitivity in ``norm`` (L1 for Laplace-type noise, L2 for the discrete
        Gaussian): the stability of :attr:`counts`."""
        return self.counts.sensitivity(norm)

    def score_sensitivity(self, per_record: float) -> Sensitivity:
        """The sensitivity of a score whose change when one record changes is ``per_record``: that times K
        (the unit's records; group privacy)."""
        return Sensitivity(self.unit.scale(float(per_record)), "score")

    @property
    def record_count_sensitivity(self) -> float:
        """L1 change of a count table when ONE record changes (1 under add/remove, 2 under replace): what a
        score defined on count tables changes by per record, before :meth:`score_sensitivity` scales it to
        the unit's records."""
        return count_table(self.notion).l1

    @property
    def histogram_sensitivity(self) -> float:
        """L1 change of any count table (histogram, margin, cell table)."""
        return self.count_sensitivity("l1").value

    @property
    def histogram_l2_sensitivity(self) -> float:
        """L2 change of any count table: one cell by 1 (add/remove) or two cells by 1 (replace), times K."""
        return self.count_sensitivity("l2").value

    @property
    def label(self) -> str:
        """The notion as a ledger charge and the budget book record it: the record notions' labels as they
        always were, or e.g. "add/remove one 'id' (up to 7 records)" for a privacy unit."""
        if self.protects_records:
            return NEIGHBOUR_LABELS[self.notion]
        verb = "add/remove" if self.notion == ADD_REMOVE else "replace"
        if self.unit_periods is not None:
            return f"{verb} one '{self.unit_column}' (one wide record: a record per '{self.unit_periods}')"
        return f"{verb} one '{self.unit_column}' (up to {self.records_per_unit} records)"

    def _who(self) -> str:
        if self.protects_records:
            return "one record"
        if self.unit_periods is not None:
            return (f"one '{self.unit_column}' with all of their records (one per '{self.unit_periods}' kept, "
                    f"released together as one wide record)")
        k = self.records_per_unit
        return (f"one '{self.unit_column}' with all of their records (at most {k} kept per '{self.unit_column}')"
                if k > 1 else f"one '{self.unit_column}' (one record kept per '{self.unit_column}')")

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
        who = self._who()
        if self.notion == ADD_REMOVE:
            return (
                f"{head} for neighbouring tables that differ by adding or "
                f"removing {who} (tables of at most {self.max_records:,} records), given {given}; the record "
                "count is released with noise, not exactly"
            )
        if self.protects_records:
            return (
                f"{head} for neighbouring tables that differ by replacing {who}, "
                f"given {given} and the public record count n"
            )
        if self.unit_periods is not None:  # one wide record per unit: n is the number of units
            return (f"{head} for neighbouring tables that differ by replacing the records of {who} by others, "
                    f"given {given} and the public number of '{self.unit_column}'s")
        # a unit's records are replaced by as many others: its number of records is public, as n is
        return (
            f"{head} for neighbouring tables that differ by replacing the records of {who} by as many other "
            f"records, given {given}, the public record count n and each '{self.unit_column}''s number of records"
        )

    def to_dict(self) -> dict[str, object]:
        d: dict[str, object] = {"notion": self.notion, "description": self.label}
        if self.notion == ADD_REMOVE:
            d["max_records"] = self.max_records
        if not self.protects_records:  # record-level manifests are written as they always were
            d["privacy_unit"] = self.unit_column
            d["records_per_unit"] = self.records_per_unit
            if self.unit_periods is not None:
                d["panel_time"] = self.unit_periods
            d["protects"] = self._who()
        return d


def check_count_share(value: object) -> float:
    return real_number("count_share (the share of ε spent on the noisy record count)", value, 0, 1,
                       lo_open=True, hi_open=True)


def book_notion(notion: str, column: str | None) -> str:
    """The neighbour notion as the budget book keeps a table under it: ``add_remove`` / ``replace`` for a record,
    ``add_remove, one 'id'`` for a privacy unit. A table is kept under one notion: a release that protects records
    and one that protects units do not add up in either, so the book refuses to mix them. K is not part of it:
    bounding is inside each release, so a release with K = 3 and one with K = 7 (or a wide one) are each DP for
    one id with all of its records, whatever their number, and their budgets add up."""
    if column is None:
        return notion
    return f"{notion}, one '{column}'"


def check_book_notion(text: str) -> str:
    """``text`` if it is a notion :func:`book_notion` writes (``add_remove``, ``replace``, or either followed by
    ``, one 'id'``), else the one-line refusal of :func:`dpcore.privacy.neighbours.check_neighbours`."""
    if isinstance(text, str) and ", one '" in text and text.endswith("'"):
        notion, _, column = text.partition(", one '")
        check_neighbours(notion)
        if column[:-1]:
            return text
    return check_neighbours(text)


def describe_book_notion(text: str) -> str:
    """A book notion in words: "one record (add/remove)", "one 'id' with all of its records (replace)"."""
    notion, _, column = text.partition(", one '")
    how = "add/remove" if notion == "add_remove" else "replace"
    return f"one '{column[:-1]}' with all of its records ({how})" if column else f"one record ({how})"
