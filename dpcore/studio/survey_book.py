"""Survey releases in the budget book (:mod:`dpcore.studio.budget_book`).

A survey estimate (DP imputation, DP post-stratification) reads a table and spends ε
just as a synthetic-data release does, so it is charged to the same table's budget:
the book reserves its ε and checks the table's cap BEFORE the release draws any
randomness (a refusal raises :class:`~dpcore.studio.budget_book.BudgetExceeded`, nothing is
drawn or spent), and completes the entry after, with the release's ledger total, its
neighbour notion and a method label such as ``"survey: dp imputation"``.

Privacy: recording changes no release. Releases of one table compose sequentially, so the
book's sum bounds the table's privacy loss (docs/privacy-model.md, "The budget book";
the survey releases' own guarantees: docs/survey-privacy.md).
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dpcore.errors import OptionError
from dpcore.privacy.ledger import check_epsilon
from dpcore.privacy.neighbours import ADD_REMOVE, book_notion, check_neighbours
from dpcore.studio.budget_book import CAP_TOLERANCE, BudgetBook

#: Method labels in the budget book.
IMPUTATION = "survey: dp imputation"
POSTSTRAT = "survey: post-stratification"
#: ``format`` of the published record whose SHA-256 the book keeps.
FORMAT = "dpcore-survey-release/1"
#: DP outputs of a release published next to ``value`` (when the release has them).
_PUBLISHED = ("query", "grid", "selected", "bins")

__all__ = ["IMPUTATION", "POSTSTRAT", "FORMAT", "RecordedSurveyRelease", "record_survey_release"]


def _clean(o):
    """Strict JSON: non-finite floats (data-dependent fields the ledger does not record) become null."""
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {str(k): _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    if hasattr(o, "item"):  # numpy scalars
        return _clean(o.item())
    return o


@dataclass(frozen=True)
class RecordedSurveyRelease:
    """A survey release as the budget book records it: ``release`` is the dpcore.survey
    release object (value, ledger, statement), ``dp`` whether its ε bounds its privacy loss."""

    release: Any  # a survey release (dpcore.survey): its value, ledger, neighbours and statement
    method: str
    dp: bool
    not_dp_reason: str = ""
    entry_id: int | None = field(default=None, compare=False)

    @property
    def ledger(self):
        return self.release.ledger

    @property
    def statement(self) -> str:
        if self.dp:
            return self.release.statement
        return "NOT differentially private: " + (self.not_dp_reason or self.release.statement)

    def manifest(self) -> dict:
        """What may be published: the value, the DP outputs, ε, the notion, the ledger (no data values)."""
        out = {"format": FORMAT, "method": self.method, "value": self.release.value,
               "epsilon": self.ledger.epsilon, "neighbours": self.release.neighbours, "dp": self.dp,
               "statement": self.statement, "ledger": self.ledger.to_dict()}
        out.update({k: getattr(self.release, k) for k in _PUBLISHED if hasattr(self.release, k)})
        return _clean(out)

    def manifest_json(self) -> str:
        return json.dumps(self.manifest(), sort_keys=True, ensure_ascii=False, allow_nan=False)


def record_survey_release(book: BudgetBook, table_fp: str, run: Callable[[], Any], *, epsilon: float,
                          method: str, neighbours: str = ADD_REMOVE, table_name: str = "", dp: bool | None = None,
                          not_dp_reason: str = "", workspace: str = "",
                          user: str | None = None, unit_column: str | None = None,
                          records_per_unit: int = 1) -> RecordedSurveyRelease:
    """Run the survey release ``run()`` through ``book`` for the table ``table_fp``.

    ``epsilon`` is the release's total ε (what its ledger will add up to) and is reserved
    before ``run`` is called: over the table's cap, or under the other neighbour notion
    than the table's book, :class:`~dpcore.studio.budget_book.BudgetExceeded` is raised and
    ``run`` never runs. A release whose ledger spends more than was reserved, or under
    another notion, is withheld (OptionError; the entry is aborted, nothing left the
    process). ``dp=False`` records a NOT-DP release (e.g. the 'global' comparator).
    ``workspace`` and ``user`` are named in the book's entry (None: the local OS user).
    ``unit_column``, ``records_per_unit``: a release that protects one unit of at most K records by group
    privacy (:mod:`dpcore.survey.group`): booked under the unit's notion, its ε K times its ledger's.
    Returns the release with its book entry id.
    """
    eps, notion = check_epsilon(epsilon), check_neighbours(neighbours)
    booked = book_notion(notion, unit_column)

    def recorded():
        rel = run()
        spent = float(rel.ledger.epsilon) * int(records_per_unit)  # group privacy: K times the record's ε
        if spent > eps * (1 + CAP_TOLERANCE):
            raise OptionError(f"the {method} release spent ε = {spent:g} but only ε = {eps:g} was reserved in the "
                              "budget book; it was withheld. Pass its total ε as epsilon")
        if check_neighbours(rel.neighbours) != notion:
            raise OptionError(f"the {method} release holds under neighbours='{rel.neighbours}' but was booked under "
                              f"'{notion}'; it was withheld")
        ok = bool(getattr(rel, "dp", True)) if dp is None else bool(dp) and bool(getattr(rel, "dp", True))
        return RecordedSurveyRelease(rel, method, ok, not_dp_reason if not ok else "")

    entry_id, out = book.record(table_fp, eps, method, booked, recorded, table_name=table_name, workspace=workspace,
                                user=user)
    return RecordedSurveyRelease(out.release, out.method, out.dp, out.not_dp_reason, entry_id)
