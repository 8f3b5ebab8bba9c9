"""Books written before the installation's one book: merged into it, no entry lost.

Until the book moved to the root of the installation, each workspace kept its own book in its
``workspace.sqlite`` (tables ``budget_entries``, ``budget_caps``, ``book_settings``). When the
installation's book is opened, every such file under the root is merged into it
(:func:`merge_workspace_books`):

* each entry becomes an entry of the installation's book, with its status history as events
  (reserved, then its final status), its ε / δ / ρ, method, notion, manifest hash and note, the
  workspace it was made in, and ``origin`` = ``<workspace>:<old id>``, which makes the merge
  idempotent (an entry already merged is found by its origin, never copied twice);
* a cap becomes the table's cap unless the book holds a smaller one (the stricter cap holds);
  the same for δ (the smaller δ states the larger, safer total);
* in the workspace's file, the stored releases and the saved session are renumbered to the new
  entry ids, release folders move to ``releases/legacy-<old id>`` (so a new id never meets an old
  folder), and the old tables are kept, renamed ``*_merged``, as the record of what was merged.

The merge of the workspaces under the root runs once per installation and is recorded in the book
(``book_migrations``); a workspace opened later from outside the root brings its own book once, recorded
the same way. A legacy book that cannot be read, or holds a row that is not a release (a negative or
text ε, a missing column, an unknown status), is skipped as a whole with one warning that names it
(through :data:`dpcore.studio.book_store.notices`), and is kept on disk untouched: one bad file never stops
the installation, and never half-merges.

Privacy: merging changes no release; it adds up what the separate books counted apart, so a
table's total and cap now cover every workspace's releases (docs/privacy-model.md, "The budget book").
"""
from __future__ import annotations

import json
import math
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from dpcore.errors import DPCoreError
from dpcore.studio.book_store import STATUSES, notices, sqlite_connect

#: the legacy tables, and their names once merged
LEGACY = ("budget_entries", "budget_caps", "book_settings")
WORKSPACE_DB = "workspace.sqlite"
#: files merged in this process (checked once per process and file)
_MERGED: set[str] = set()
#: the migration record of the one-time merge of the workspaces under the root
ROOT_MERGE = "merge the workspaces' own books"
_NOTIONS = ("add_remove", "replace", "add/remove one record", "replace one record")


class MalformedLegacyBook(ValueError):
    """A legacy book holds a row that is not a release; the file is skipped as a whole."""


def _warn(message: str) -> None:
    for n in notices:
        n(message)


def _number(value, what: str, low: float = 0.0, high: float = math.inf, low_open: bool = True) -> float:
    if isinstance(value, (bool, str, bytes)) or value is None:
        raise MalformedLegacyBook(f"{what} is {value!r}, not a number")
    x = float(value)
    if not math.isfinite(x) or (x <= low if low_open else x < low) or x >= high:
        raise MalformedLegacyBook(f"{what} is {value!r}, out of range")
    return x


def _check_entry(e: dict) -> None:
    what = f"release {e['id']}"
    if not isinstance(e["table_fp"], str) or not e["table_fp"]:
        raise MalformedLegacyBook(f"{what} has no table fingerprint")
    _number(e["epsilon"], f"{what}'s ε")
    if e.get("delta") is not None:
        _number(e["delta"], f"{what}'s δ", high=1.0)
    if e.get("rho") is not None:
        _number(e["rho"], f"{what}'s ρ", low_open=False)
    if e["status"] not in STATUSES or not isinstance(e["method"], str) or not isinstance(e["reserved_at"], str):
        raise MalformedLegacyBook(f"{what} has status {e['status']!r} or no method or time")
    if e["neighbours"] not in _NOTIONS:
        raise MalformedLegacyBook(f"{what} has neighbours {e['neighbours']!r}")
    int(e["id"])


def _check_rows(entries: list[dict], caps: list[dict], settings: list[dict]) -> None:
    """Raise :class:`MalformedLegacyBook` naming the first row that is not a release, cap or setting."""
    for e in entries:
        try:
            _check_entry(e)
        except KeyError as exc:
            raise MalformedLegacyBook(f"its releases have no column {exc}") from None
        except MalformedLegacyBook:
            raise
        except (TypeError, ValueError) as exc:
            raise MalformedLegacyBook(f"a release row cannot be read ({exc})") from None
    for c in caps:
        try:
            if not isinstance(c["table_fp"], str):
                raise MalformedLegacyBook("a cap has no table fingerprint")
            _number(c["epsilon"], "a cap")
        except KeyError as exc:
            raise MalformedLegacyBook(f"its caps have no column {exc}") from None
    for st in settings:
        try:
            if st["key"] == "delta":
                _number(st["value"], "its δ setting", high=1.0)
        except KeyError as exc:
            raise MalformedLegacyBook(f"its settings have no column {exc}") from None


def _legacy_rows(path) -> tuple[list[dict], list[dict], list[dict]] | None:
    """(entries, caps, settings) of an unmerged legacy book, or None when the file has none. Read-only:
    a file that is then skipped is left exactly as it was."""
    from urllib.parse import quote

    conn = sqlite3.connect(f"file:{quote(str(Path(path).resolve()))}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        names = {r["name"] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "budget_entries" not in names:
            return None
        entries = [dict(r) for r in conn.execute("SELECT * FROM budget_entries ORDER BY id")]
        caps = [dict(r) for r in conn.execute("SELECT * FROM budget_caps")] if "budget_caps" in names else []
        settings = ([dict(r) for r in conn.execute("SELECT * FROM book_settings")]
                    if "book_settings" in names and "key" in _columns(conn, "book_settings") else [])
        return entries, caps, settings
    finally:
        conn.close()


def _columns(conn, table: str) -> set[str]:
    return {r["name"] for r in conn.execute(f"PRAGMA table_info({table})")}


def _import_entry(conn, e: dict, origin: str, workspace: str) -> int:
    """One legacy entry as an entry and its events, unless its origin is already in the book."""
    known = conn.one("SELECT id FROM book_entries WHERE origin = ?", (origin,))
    if known is not None:
        return int(known["id"])
    new_id = int(conn.one(
        "INSERT INTO book_entries (table_fp, released_fp, table_name, epsilon, delta, rho, method, neighbours, "
        "workspace, user_name, reserved_at, origin) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, '', ?, ?) RETURNING id",
        (e["table_fp"], e["table_fp"], e.get("table_name") or "", float(e["epsilon"]), e.get("delta"), e.get("rho"),
         e["method"], e["neighbours"], workspace, e["reserved_at"], origin))["id"])
    ev = ("INSERT INTO book_events (entry_id, status, at, user_name, epsilon, dp, manifest_sha256, note) "
          "VALUES (?, ?, ?, '', ?, ?, ?, ?)")
    conn.execute(ev, (new_id, "pending", e["reserved_at"], None, None, None, "merged from the workspace's own book"))
    if e["status"] != "pending":
        conn.execute(ev, (new_id, e["status"], e.get("completed_at") or e["reserved_at"], float(e["epsilon"]),
                          e.get("dp"), e.get("manifest_sha256"), e.get("note") or ""))
    return new_id


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _merge_into_book(book, entries, caps, settings, label: str) -> dict[int, int]:
    """The legacy rows into ``book`` (a :class:`dpcore.studio.budget_book.BudgetBook`) under its lock."""
    mapping = {}
    with book._conn() as conn, conn.transaction():
        for e in entries:
            mapping[int(e["id"])] = _import_entry(conn, e, f"{label}:{e['id']}", label)
        for c in caps:
            held = book._cap(conn, c["table_fp"])
            if held is None or float(c["epsilon"]) < held:
                conn.execute("INSERT INTO book_caps (table_fp, epsilon, set_at, user_name, change) "
                             "VALUES (?, ?, ?, '', 'merged from a workspace')",
                             (c["table_fp"], float(c["epsilon"]), c.get("set_at") or _now()))
        for s in settings:
            if s["key"] == "delta" and float(s["value"]) < book._delta(conn):
                conn.execute("INSERT INTO book_settings_log (key, value, set_at, user_name) VALUES ('delta', ?, ?, '')",
                             (float(s["value"]), _now()))
    return mapping


def _renumber_workspace(conn: sqlite3.Connection, folder: Path, mapping: dict[int, int]) -> None:
    """The workspace's stored releases and saved session, moved to the book's new entry ids."""
    names = {r["name"] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "release_files" in names:
        rows = [dict(r) for r in conn.execute("SELECT * FROM release_files")]
        conn.execute("DELETE FROM release_files")
        for r in rows:
            old = int(r["entry_id"])
            folder_name = r["folder"]
            src, dst = folder / folder_name, folder / "releases" / f"legacy-{old}"
            if src.is_dir() and not dst.exists():
                src.rename(dst)
                folder_name = f"releases/legacy-{old}"
            conn.execute("INSERT INTO release_files (entry_id, folder, manifest, n_sets) VALUES (?, ?, ?, ?)",
                         (mapping.get(old, -old), folder_name, r["manifest"], r["n_sets"]))
    if "state" in names:
        for r in [dict(x) for x in conn.execute("SELECT key, value FROM state")]:
            value = json.loads(r["value"])
            rel = value.get("release") if isinstance(value, dict) else None
            if isinstance(rel, dict) and rel.get("main") is not None:
                rel["main"] = mapping.get(int(rel["main"]), rel["main"])
                rel["comparators"] = {k: mapping.get(int(v), v) for k, v in (rel.get("comparators") or {}).items()}
                conn.execute("UPDATE state SET value = ? WHERE key = ?", (json.dumps(value, sort_keys=True), r["key"]))


def merge_legacy_book(book, path, label: str, workspace_folder: Path | None = None) -> dict[int, int]:
    """Merge the legacy book in the SQLite file ``path`` into ``book`` (entries labelled with the
    workspace ``label``); in a workspace's file (``workspace_folder``) its stored releases follow.
    Returns {old entry id: new entry id}; {} when the file holds no unmerged book, or one that cannot be
    merged (skipped with one warning naming it, the file untouched). Idempotent."""
    try:
        rows = _legacy_rows(path)
        if rows is None:
            return {}
        _check_rows(*rows)
    except (sqlite3.Error, MalformedLegacyBook, DPCoreError) as exc:
        _skip(book, path, str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
        return {}
    mapping = _merge_into_book(book, *rows, label)
    conn = sqlite_connect(path)
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            names = {r["name"] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "budget_entries" in names:  # not merged by another process meanwhile
                if workspace_folder is not None:
                    _renumber_workspace(conn, Path(workspace_folder), mapping)
                for t in LEGACY:
                    if t in names and (t != "book_settings" or "key" in _columns(conn, t)):
                        conn.execute(f"ALTER TABLE {t} RENAME TO {t}_merged")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    finally:
        conn.close()
    return mapping


def _skip(book, path, why: str) -> None:
    """One warning naming a legacy book that is skipped (kept on disk, untouched), recorded once."""
    name = f"skipped legacy book {Path(path).resolve()}"
    if not book.migrated(name):
        book.record_migration(name, why)
    _warn(f"warning: the old budget book in {path} was not merged ({why}); it is kept as it is. Its releases are "
          "not counted: repair or remove the file, then open its workspace again")


def merge_workspace_books(book, root) -> int:
    """Merge the book of every workspace folder under ``root`` (``<root>/<id>/workspace.sqlite``) into
    ``book``, once per installation (recorded as :data:`ROOT_MERGE`); the number of entries merged now."""
    root = Path(root)
    key = f"{ROOT_MERGE} under {root.resolve()}"
    if not root.is_dir() or str(root.resolve()) in _MERGED or book.migrated(key):
        return 0
    merged = 0
    for db in sorted(root.glob(f"*/{WORKSPACE_DB}")):
        merged += len(merge_workspace_file(book, db.parent))
    book.record_migration(key, f"{merged} entries merged")
    _MERGED.add(str(root.resolve()))
    return merged


def merge_workspace_file(book, folder) -> dict[int, int]:
    """Merge one workspace folder's own book into ``book`` (see :func:`merge_legacy_book`), once per file."""
    folder = Path(folder)
    db = folder / WORKSPACE_DB
    if not db.is_file() or str(db.resolve()) in _MERGED:
        return {}
    mapping = merge_legacy_book(book, db, folder.name, workspace_folder=folder)
    _MERGED.add(str(db.resolve()))
    return mapping


def merge_own_legacy_tables(book) -> dict[int, int]:
    """A book file written before the event log holds its releases in the legacy tables: merged once."""
    return merge_legacy_book(book, book.location, "")
