"""One release of a table through the budget book, step by step, for a release that writes its output as it
goes (:func:`dpcore.output.synthesize_file`). The book's guarantee is the same as for a one-call release
(docs/privacy-model.md, "The budget book"): the ε is reserved before the data are read and refused over the cap."""

from __future__ import annotations

from dpcore.studio.budget_book import BudgetBook

__all__ = ["BookEntry"]


class BookEntry:
    """One release of a table through the book, step by step, for a release that writes its output
    as it goes (:func:`dpcore.output.synthesize_file`): :meth:`reserve` (refused over the cap),
    then :meth:`complete`, :meth:`abort` (stopped before reading the data: nothing spent) or
    :meth:`fail` (stopped after: counted as spent)."""

    def __init__(self, book: BudgetBook, table_fp: str, epsilon, method: str, neighbours: str, table_name: str = "",
                 delta: float | None = None, *, workspace: str = "", user: str | None = None,
                 delta_approx: float = 0.0):
        self.book, self.table_fp, self.epsilon, self.method = book, table_fp, epsilon, method
        self.neighbours, self.table_name, self.delta = neighbours, table_name, delta
        self.workspace, self.user, self.delta_approx = workspace, user, delta_approx
        self.entry_id: int | None = None

    def reserve(self) -> None:
        self.entry_id = self.book.reserve(self.table_fp, self.epsilon, self.method, self.neighbours, self.table_name,
                                          self.delta, workspace=self.workspace, user=self.user,
                                          delta_approx=self.delta_approx)

    def _reserved(self) -> int:
        assert self.entry_id is not None, "reserve() comes first"
        return self.entry_id

    def abort(self, note: str) -> None:
        self.book.abort(self._reserved(), note, user=self.user)

    def fail(self, note: str) -> None:
        self.book.fail(self._reserved(), note, user=self.user)

    def complete(self, release) -> None:
        self.book.complete_release(self._reserved(), release, user=self.user)
