"""The budget book's audit trail: every status event of every entry, and the logs of caps, δ, charging
decisions and migrations, as CSV or JSON (:meth:`dpcore.studio.budget_book.BudgetBook.export`).

Privacy: the trail holds what the book holds (keys, ε / δ / ρ, the manifests' SHA-256, users, times),
never a data value; it is for the curator and the auditor. No Streamlit here.
"""
from __future__ import annotations

import json
from pathlib import Path

from dpcore.errors import InputError, OptionError
from dpcore.studio import book_accounts as A
from dpcore.studio.book_store import entry_dict, now

_PIN = A.PIN
#: The columns of an exported event row (:func:`export_rows`), in order.
EXPORT_COLUMNS = ("event", "entry", "table_fp", "table_name", "released_fp", "workspace", "user", "method",
                  "neighbours", "epsilon", "delta", "rho", "delta_approx", "status", "at", "dp", "manifest_sha256",
                  "note", "reserved_at", "reserved_by")


def export_rows(book, table_fp: str | None = None) -> list[dict]:
    """The book as its audit trail: one row per status event (:data:`EXPORT_COLUMNS`), with the
    entry it belongs to (table, workspace, user, method, ε / δ / ρ, the manifest's SHA-256); all of
    them, or those of the table ``table_fp`` is charged to."""
    sql = ("SELECT v.id AS event, e.id AS entry, e.table_fp, e.table_name, e.released_fp, e.workspace, "
           "v.user_name AS user_name, e.method, e.neighbours, COALESCE(v.epsilon, e.epsilon) AS epsilon, "
           "e.delta, COALESCE(v.rho, e.rho) AS rho, e.delta_approx, v.status, v.at, v.dp, v.manifest_sha256, "
           "v.note, e.reserved_at, e.user_name AS reserved_by FROM book_events v JOIN book_entries e "
           "ON e.id = v.entry_id")
    with book._conn() as conn:
        if table_fp is None:
            rows = conn.all(sql + " ORDER BY v.id")
        else:
            keys = A.members(conn, A.account(conn, table_fp))
            rows = conn.all(sql + f" WHERE e.table_fp IN {A.sql_in(keys)} ORDER BY v.id", keys)
    return [{k: (r["user_name"] if k == "user" else r[k]) for k in EXPORT_COLUMNS} for r in rows]

def export_text(book, fmt: str, table_fp: str | None = None) -> str:
    """The audit trail (of the whole book, or of one table) as ``"csv"`` (one row per event) or
    ``"json"`` (the events, and the logs of caps, δ and charging decisions)."""
    if fmt == "csv":
        import pandas as pd

        return pd.DataFrame(export_rows(book, table_fp), columns=list(EXPORT_COLUMNS)).to_csv(index=False)
    if fmt != "json":
        raise OptionError(f"the book exports as csv or json, not {fmt!r}")
    with book._conn() as conn:
        logs = {t: [entry_dict(r) for r in conn.all(f"SELECT * FROM {t} ORDER BY id")]
                for t in ("book_caps", "book_settings_log", "book_links", "book_migrations")}
        keys = None if table_fp is None else A.members(conn, A.account(conn, table_fp))
    if keys is not None:  # one table: its caps, its δ pin and the decisions that name it
        logs["book_caps"] = [r for r in logs["book_caps"] if r["table_fp"] in keys]
        logs["book_links"] = [r for r in logs["book_links"] if r["table_fp"] in keys or r["charged_to"] in keys]
        logs["book_settings_log"] = [r for r in logs["book_settings_log"]
                                     if r["key"] == "delta" or r["key"] in {_PIN + k for k in keys}]
    doc = {"format": "dpcore-budget-book/2", "exported_at": now(), "book": book.describe(),
           "table_fp": None if keys is None else keys[0] if len(keys) == 1 else book.account(table_fp),
           "events": export_rows(book, table_fp), "caps": logs["book_caps"],
           "settings": logs["book_settings_log"], "charging_decisions": logs["book_links"],
           "migrations": logs["book_migrations"]}
    return json.dumps(doc, indent=2, ensure_ascii=False)

def export(book, path) -> Path:
    """Write the audit trail to ``path``: CSV or JSON by its suffix (.csv, .json)."""
    p = Path(path)
    fmt = p.suffix.lower().lstrip(".")
    if fmt not in ("csv", "json"):
        raise OptionError(f"--export '{p}': name a .csv or .json file")
    try:
        p.write_text(export_text(book, fmt), encoding="utf-8")
    except OSError as exc:
        raise InputError(f"--export '{p}': cannot write it ({exc.strerror})") from None
    return p
