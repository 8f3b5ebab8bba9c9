"""Accounts in the budget book: which keys count together, the table's δ, and what a table has spent.

A table's *account* is the key its releases are charged to: itself, or the table its latest charging
decision names (a look-alike charged to a known table, or an older key of the same records linked for
good). An account's *members* are every key whose releases count in it, so a release booked under an
older key (``file-sha256:``, a fingerprint from before content fingerprints) counts once the key is
linked, with nothing copied or rewritten (the book is append-only).

A table's δ is the book's δ until its first (ε, δ) release pins it (a settings row ``delta@<account>``);
from then on it is the smallest of the pin and any book δ set after it: lowered by a later setting, never
raised, so no setting makes what was spent smaller (docs/privacy-model.md, "The budget book").

Functions of an open store connection (:class:`dpcore.studio.book_store.Connection`), used by
:class:`dpcore.studio.budget_book.BudgetBook`. No Streamlit here.
"""
from __future__ import annotations

from dpcore.privacy.neighbours import describe_book_notion
from dpcore.studio.book_store import current_entries_sql
from dpcore.studio.book_totals import DEFAULT_DELTA, usage

#: the statuses whose ε counts as spent (dpcore.studio.budget_book.SPENT)
SPENT = ("pending", "complete", "failed")
#: how deep a chain of charging decisions may go (a table charged to a table charged to …)
MAX_LINKS = 32
#: the settings-log key prefix that pins a table's δ at its first (ε, δ) release
PIN = "delta@"
_CURRENT = current_entries_sql()
_LIVE_COLS = "epsilon, delta, rho, delta_approx, dp, status"


def links(conn) -> dict[str, str | None]:
    """Every table's latest charging decision: {table_fp: charged_to or None}."""
    rows = conn.all("SELECT l.table_fp, l.charged_to FROM book_links l WHERE l.id = "
                    "(SELECT MAX(x.id) FROM book_links x WHERE x.table_fp = l.table_fp)")
    return {r["table_fp"]: r["charged_to"] or None for r in rows}


def follow(decisions: dict, table_fp: str) -> str:
    """The account of ``table_fp`` under ``decisions`` (:func:`links`), followed through chains."""
    seen, fp = {table_fp}, table_fp
    for _ in range(MAX_LINKS):
        nxt = decisions.get(fp)
        if not nxt or nxt in seen:
            return fp
        fp = nxt
        seen.add(fp)
    return fp


def account(conn, table_fp: str) -> str:
    """The table whose budget ``table_fp`` is charged to."""
    return follow(links(conn), table_fp)


def members(conn, acct: str) -> list[str]:
    """Every key whose releases count in the account ``acct``: itself and every key charged to it."""
    decisions = links(conn)
    return sorted({acct} | {fp for fp in decisions if follow(decisions, fp) == acct})


def sql_in(keys: list[str]) -> str:
    """``(?, ?, …)`` for ``keys``."""
    return "(" + ", ".join("?" for _ in keys) + ")"


def live(conn, acct: str) -> list[dict]:
    """The account's entries whose ε counts (pending, complete, failed), with their costs and labels."""
    keys = members(conn, acct)
    return conn.all(f"SELECT {_LIVE_COLS} FROM ({_CURRENT}) c WHERE table_fp IN {sql_in(keys)} "
                    "AND status IN (?, ?, ?)", (*keys, *SPENT))


def book_delta(conn) -> float:
    """The book's δ: the latest set, else :data:`DEFAULT_DELTA`."""
    row = conn.one("SELECT value FROM book_settings_log WHERE key = 'delta' ORDER BY id DESC LIMIT 1")
    return DEFAULT_DELTA if row is None else float(row["value"])


def table_delta(conn, acct: str) -> float:
    """The δ the account's total is stated at (module docstring). An account with (ε, δ) releases from
    before pins existed takes the smallest δ the book ever had (conservative)."""
    keys = members(conn, acct)
    pins = conn.all(f"SELECT id, value FROM book_settings_log WHERE key IN {sql_in(keys)} ORDER BY id",
                    tuple(PIN + k for k in keys))
    if pins:
        later = conn.one("SELECT MIN(value) AS v FROM book_settings_log WHERE key = 'delta' AND id > ?",
                         (pins[0]["id"],))
        values = [float(p["value"]) for p in pins] + ([float(later["v"])] if later and later["v"] else [])
        return min(values)
    if any(r["delta"] is not None for r in live(conn, acct)):
        ever = conn.one("SELECT MIN(value) AS v FROM book_settings_log WHERE key = 'delta'")
        return min(DEFAULT_DELTA, float(ever["v"])) if ever and ever["v"] else DEFAULT_DELTA
    return book_delta(conn)


def pin_delta(conn, acct: str, user: str, at: str) -> None:
    """Pin the account's δ at its first (ε, δ) release (nothing when it is pinned already)."""
    keys = members(conn, acct)
    if conn.one(f"SELECT 1 AS x FROM book_settings_log WHERE key IN {sql_in(keys)} LIMIT 1",
                tuple(PIN + k for k in keys)) is None:
        conn.execute("INSERT INTO book_settings_log (key, value, set_at, user_name) VALUES (?, ?, ?, ?)",
                     (PIN + acct, table_delta(conn, acct), at, user))


def spent(conn, acct: str, extra: tuple | None = None) -> float:
    """What the account's cap counts (:func:`dpcore.studio.book_totals.usage`), with ``extra`` =
    (ε, δ, ρ, δ_approx) of one more release."""
    return usage(live(conn, acct), table_delta(conn, acct), extra)["used"]


def cap(conn, acct: str) -> float | None:
    """The account's cap on total ε (the latest set), or None."""
    row = conn.one("SELECT epsilon FROM book_caps WHERE table_fp = ? ORDER BY id DESC LIMIT 1", (acct,))
    return None if row is None or row["epsilon"] is None else float(row["epsilon"])


def notion(conn, acct: str) -> str | None:
    """The neighbour notion the account is kept in: that of its first release that counts."""
    keys = members(conn, acct)
    row = conn.one(f"SELECT neighbours FROM ({_CURRENT}) c WHERE table_fp IN {sql_in(keys)} "
                   "AND status IN (?, ?, ?) ORDER BY id LIMIT 1", (*keys, *SPENT))
    return None if row is None else row["neighbours"]


def knows(conn, fp: str) -> bool:
    """True when the book has anything under ``fp``: a registration, an entry, a cap or a link."""
    return any(conn.one(sql, (fp,)) is not None for sql in (
        "SELECT 1 AS x FROM book_tables WHERE fingerprint = ?",
        "SELECT 1 AS x FROM book_entries WHERE table_fp = ?",
        "SELECT 1 AS x FROM book_caps WHERE table_fp = ?", "SELECT 1 AS x FROM book_links WHERE table_fp = ?"))


def link_same_content(conn, key: str, old_key: str, user: str, at: str, reason: str) -> bool:
    """Make ``old_key`` and ``key`` (two keys of the same records) one account, for good. When ``key``'s
    account has nothing of its own it is charged to ``old_key``'s; else ``old_key``'s account is charged to
    ``key``'s, which takes the stricter of the two caps. Nothing is lost: every entry of either counts in the
    one account. True when a link was made."""
    if not knows(conn, old_key):
        return False
    mine, theirs = account(conn, key), account(conn, old_key)
    if mine == theirs:
        return False
    keys = members(conn, mine)
    fresh = (conn.one(f"SELECT 1 AS x FROM book_entries WHERE table_fp IN {sql_in(keys)} LIMIT 1", keys) is None
             and cap(conn, mine) is None)
    src, dst = (mine, theirs) if fresh else (theirs, mine)
    conn.execute("INSERT INTO book_links (table_fp, charged_to, at, user_name, reason) VALUES (?, ?, ?, ?, ?)",
                 (src, dst, at, user, reason[:500]))
    held, other = cap(conn, dst), cap(conn, src)
    if other is not None and (held is None or other < held):
        conn.execute("INSERT INTO book_caps (table_fp, epsilon, set_at, user_name, change) VALUES (?, ?, ?, ?, ?)",
                     (dst, other, at, user, "merged: the stricter cap"))
    return True


def notion_refusal(label: str, notion: str, neighbours: str) -> str:
    """Why a release under ``neighbours`` cannot be charged to a table kept under ``notion``: ε under two
    notions (add/remove and replace, or a record and a privacy unit) does not add up to a bound in either."""
    if ", one '" in notion + neighbours:
        return (f"{label}: this table's budget book is kept for {describe_book_notion(notion)} (its earlier "
                f"releases); a release that protects {describe_book_notion(neighbours)} does not add up with "
                "them. Release with the same privacy unit and neighbours, or keep this table in another workspace")
    return (f"{label}: this table's budget book is kept under neighbours='{notion}' (its earlier releases); ε "
            f"under '{neighbours}' does not add up with them. Release with neighbours='{notion}' if the method "
            "offers it, or keep this table in another workspace")


def published_records(conn, acct: str) -> float | None:
    """The record count the account's latest complete DP release published (its manifest's: noisy under
    add/remove, exact and public under replace), or None."""
    keys = members(conn, acct)
    row = conn.one(f"SELECT e.records AS r FROM book_events e JOIN book_entries b ON e.entry_id = b.id WHERE "
                   f"b.table_fp IN {sql_in(keys)} AND e.status = 'complete' AND e.dp = 1 AND e.records IS NOT NULL "
                   "ORDER BY e.id DESC LIMIT 1", tuple(keys))
    return None if row is None else float(row["r"])
