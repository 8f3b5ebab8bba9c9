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

    def __post_init__(self) -> None:
        check_neighbours(self.notion)
        object.__setattr__(self, "max_records", whole_number("max_records", self.max_records, 1, 10**15))
        object.__setattr__(self, "records_per_unit", whole_number("records_per_unit", self.records_per_unit, 1,
                                                                  10**6))

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

    def to_dict(self) -> dict[str, object]:
        d: dict[str, object] = {"notion": self.notion, "description": self.label}
        if self.notion == ADD_REMOVE:
            d["max_records"] = self.max_records
        return d


def check_count_share(value: object) -> float:
    return real_number("count_share (the share of ε spent on the noisy record count)", value, 0, 1,
                       lo_open=True, hi_open=True)
