"""``synth`` and the budget book: the installation's one book, by default (``--no-book`` opts out).

The input table is registered in the book; when it looks like a table the book knows (same record
count, at least half of its columns holding the same values: :mod:`dpcore.studio.table_match`),
it is charged to that table, and the command says so (``--new-table`` charges it as a new table).
The release is reserved before anything is drawn and refused over the table's cap.
"""
from __future__ import annotations

from pathlib import Path

from dpcore.privacy.ledger import check_epsilon
from dpcore.privacy.neighbours import check_neighbours
from dpcore.studio.book_entry import BookEntry
from dpcore.studio.budget_book import BudgetBook


def _book_and_workspace(args):
    from dpcore.studio.workspace import Workspace, installation_book

    if args.workspace:
        ws = Workspace(args.workspace)
        return ws.book, ws
    return installation_book(), None


def _charging(args, book: BudgetBook, fp: str, name: str) -> str | None:
    """--new-table, and the line that says which table the input is charged to (None: its own, no look-alike)."""
    from dpcore.studio.table_match import match_known

    match = match_known(book, fp)
    if match is None:
        return None
    if getattr(args, "new_table", False):
        decision = book.charging_decision(fp)
        if decision is None or decision["charged_to"] is not None:
            book.charge_to(fp, None, reason="--new-table")
        return f"{name} {match.described()}: charged as a new table (--new-table), not to {match.label}"
    if book.account(fp) == match.table_fp:
        return f"{name} {match.described()}: charged to {match.label} (give --new-table to charge it as a new table)"
    return None


def book_table(args, df, name: str) -> tuple[BudgetBook, object, str, str | None]:
    """(book, workspace or None, fingerprint, the line saying which table it is charged to or None) of
    the input table, registered in the book and charged."""
    from dpcore.counting.fingerprint import frame_fingerprint
    from dpcore.studio.table_match import settle_table

    book, ws = _book_and_workspace(args)
    if ws is not None:
        fp = ws.add_table(df, name, path=args.input).fingerprint
    else:
        tfp = frame_fingerprint(df)
        fp = tfp.key
        settle_table(book, df, fp, name, fingerprint=tfp, path=args.input)
    return book, ws, fp, _charging(args, book, fp, name)


def record_release(args, book: BudgetBook, ws, fp: str, name: str, run, delta_approx: float = 0.0):
    """``(entry, release)``: ``run()`` through the book (and stored in the workspace, if given).
    ``delta_approx``: the part of δ the release spends outside ρ (:func:`dpcore.api.planned_delta_approx`)."""
    from dpcore.privacy.neighbours import book_notion

    eps = check_epsilon(args.epsilon)
    notion = book_notion(check_neighbours(args.neighbours), getattr(args, "privacy_unit", None))
    if ws is not None:
        return ws.release(fp, eps, args.method, notion, run, name, delta=args.delta, delta_approx=delta_approx)
    return book.record(fp, eps, args.method, notion, run, table_name=name, delta=args.delta,
                       delta_approx=delta_approx)


def file_entry(args, opts: dict | None = None) -> tuple[BudgetBook, BookEntry, str | None]:
    """The book's entry for a release from a file on an engine, keyed by the content fingerprint of its
    records computed on that engine (the same key as in memory: one account per table), and the line
    saying which table it is charged to, or None."""
    from dpcore.output.file_release import content_fingerprint
    from dpcore.studio.table_match import settle_fingerprint

    book, ws = _book_and_workspace(args)
    name = Path(args.input).name
    tfp = content_fingerprint(args.input, args.engine, **(opts or {}))
    if ws is not None:
        fp = ws.add_file_table(args.input, tfp, name).fingerprint
    else:
        fp = tfp.key
        settle_fingerprint(book, tfp, name, path=args.input)
    entry = BookEntry(book, fp, check_epsilon(args.epsilon), args.method, check_neighbours(args.neighbours),
                      name, delta=args.delta, workspace="" if ws is None else ws.id)
    return book, entry, _charging(args, book, fp, name)


def recorded_line(book: BudgetBook, entry: int, fp: str, name: str) -> str:
    """What the book now holds for the table: the entry, the total, the cap."""
    spent, cap = book.spent(fp), book.cap(fp)
    account = book.account(fp)
    charged = "" if account == fp else f" (charged to table {_name(book, account)})"
    return (f"recorded as release {entry} of {name}{charged} in the budget book of {book.describe()}: spent ε = "
            f"{spent:g}" + ("" if cap is None else f" of the cap {cap:g} (remaining {max(0.0, cap - spent):g})"))


def _name(book: BudgetBook, fp: str) -> str:
    return next((t["name"] for t in book.known_tables() if t["fingerprint"] == fp), fp[:12])
