"""Same records, other bytes: a table that looks like a table the budget book knows.

The book keys a table by its content fingerprint (:mod:`dpcore.counting.fingerprint`, the same in
memory and on an engine): the same records in another row or column order or file format share
it, but dropping a column, renaming one or re-coding a value makes another fingerprint, and so a
fresh budget. To keep that from happening silently, the book also keeps a fingerprint per column
(:func:`column_fingerprints`: the column's values alone, without its name, computed in the same
scan, on the engine for a file released there) and the record count of every table it has seen.
A new table whose record count equals a known table's and at least half of whose columns have
a fingerprint among that table's columns *looks like* it (:func:`find_match`); :func:`settle_table` then charges it
to that table by default (a charging decision in the book, with the user who made it), and
the curator may say otherwise explicitly (:meth:`dpcore.studio.budget_book.BudgetBook.charge_to`).

Privacy: nothing here is released; the column fingerprints stay in the book (curator-only,
like the table fingerprint). Charging a table to a known one only makes the book count more
(docs/privacy-model.md, "The budget book").
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from dpcore.counting.fingerprint import (
    FILE_PREFIX,
    TableFingerprint,
    file_sha256,
    frame_fingerprint,
    legacy_table_fingerprint,
)
from dpcore.studio.budget_book import BudgetBook

#: Share of the new table's columns that must match a known table's (with the same record count).
MATCH_SHARE = 0.5


def column_fingerprints(df: pd.DataFrame) -> list[str]:
    """One fingerprint per column, in the table's column order: the column's values alone
    (:mod:`dpcore.counting.fingerprint`). The name is left out, so a renamed column still matches."""
    return list(frame_fingerprint(df).column_fps)


@dataclass(frozen=True)
class TableMatch:
    """A known table that a new one looks like: ``table_fp`` (the book's account it is charged to),
    ``name``, ``spent`` ε, and ``matched`` of the new table's ``n_cols`` columns found among its columns."""

    table_fp: str
    name: str
    spent: float
    matched: int
    n_cols: int

    @property
    def label(self) -> str:
        return self.name or self.table_fp[:12]

    def described(self) -> str:
        """'looks like table X (…; ε … spent)'."""
        return (f"looks like table {self.label} ({self.matched} of {self.n_cols} columns hold the same values, same "
                f"record count; ε = {self.spent:.4g} spent)")

    def question(self) -> str:
        """The one line the app shows: 'looks like table X (ε … spent); charge it to X?'."""
        return f"{self.described()}; charge it to {self.label}?"


def find_match(book: BudgetBook, table_fp: str, n_rows: int, column_fps: list[str]) -> TableMatch | None:
    """The known table ``table_fp`` most looks like (the most matching columns, then the most spent),
    or None: same record count and at least :data:`MATCH_SHARE` of its columns matching."""
    if not column_fps or n_rows < 0:
        return None
    best: tuple | None = None
    for t in book.known_tables():
        if t["fingerprint"] == table_fp or int(t["n_rows"]) != int(n_rows) or not t["column_fps"]:
            continue
        account = book.account(t["fingerprint"])
        if account == table_fp:  # a table charged to this one
            continue
        theirs = list(t["column_fps"])
        matched = 0
        for fp in column_fps:  # each of their columns matches at most one of ours
            if fp in theirs:
                theirs.remove(fp)
                matched += 1
        if matched < max(1, MATCH_SHARE * len(column_fps)):
            continue
        spent = book.spent(account)
        key = (matched, spent)
        if best is None or key > best[0]:
            best = (key, TableMatch(account, _name(book, account, t["name"]), spent, matched, len(column_fps)))
    return None if best is None else best[1]


def match_known(book: BudgetBook, table_fp: str) -> TableMatch | None:
    """:func:`find_match` for a table already registered in the book (its size and column fingerprints)."""
    known = next((t for t in book.known_tables() if t["fingerprint"] == table_fp), None)
    if known is None:
        return None
    return find_match(book, table_fp, int(known["n_rows"]), list(known["column_fps"]))


def _name(book: BudgetBook, account: str, fallback: str) -> str:
    for t in book.known_tables():
        if t["fingerprint"] == account:
            return t["name"]
    return fallback


def settle_table(book: BudgetBook, df: pd.DataFrame, table_fp: str, name: str, user: str | None = None,
                 fingerprint: TableFingerprint | None = None, path=None) -> TableMatch | None:
    """Register a loaded table in the book (:func:`settle_fingerprint`), and link it to the key an older
    book gave the same records (its CSV-text fingerprint) when the book holds such keys."""
    tfp = fingerprint if fingerprint is not None and fingerprint.key == table_fp else frame_fingerprint(df)
    if tfp.key != table_fp:  # a key given by the caller (an older one kept by a workspace): registered as it is
        tfp = TableFingerprint(table_fp, tfp.n_rows, tfp.column_fps)
    if book.legacy_keys(None):
        book.link_same_content(table_fp, legacy_table_fingerprint(df), user=user,
                               what="the table's fingerprint before content fingerprints")
    return settle_fingerprint(book, tfp, name, user=user, path=path)


def settle_fingerprint(book: BudgetBook, fingerprint: TableFingerprint, name: str, user: str | None = None,
                       path=None) -> TableMatch | None:
    """Register a table in the book by its fingerprint (in memory or on an engine) and, when it looks
    like a known table and no charging decision was made for it yet, charge it to that table (the
    default; the caller shows :meth:`TableMatch.question` so the curator can charge it as a new table
    instead). A file (``path``) an older book keyed by its bytes (``file-sha256:``) is linked to it.
    The match, or None."""
    key, columns = fingerprint.key, list(fingerprint.column_fps)
    book.register_table(key, name, fingerprint.n_rows, len(columns), columns)
    if path is not None and book.legacy_keys(FILE_PREFIX):
        old = file_sha256(path)
        if old:
            book.link_same_content(key, old, user=user, what="the file's bytes, as a release on an engine keyed it")
    match = find_match(book, key, fingerprint.n_rows, columns)
    if match is not None and book.charging_decision(key) is None:
        book.charge_to(key, match.table_fp, user=user,
                       reason=f"default: {match.matched} of {match.n_cols} columns match, same record count")
    return match
