"""The budget book: every release of a table, recorded against the table's fingerprint,
with a per-table cap on the total ε.

Privacy: releases of the same table compose sequentially, so the privacy loss of a
table's releases is at most the sum of their ε (basic sequential composition, Dwork &
Roth 2014, Thm 3.16; docs/privacy-model.md, "The budget book"). The book keeps that sum
and refuses, before any randomness is drawn, a release that would take it above the cap.

Accounting is conservative and crash-safe (reserve, release, commit):

1. :meth:`BudgetBook.reserve` checks the cap and writes a *pending* entry in one
   ``BEGIN IMMEDIATE`` transaction, so two writers can never both pass the check;
2. the release runs (this is where ε is spent);
3. :meth:`BudgetBook.complete` marks the entry complete with the manifest's SHA-256.

A release's outputs are handed out only after step 3 has committed. A pending entry
counts as spent: if the process dies between 2 and 3 the book over-counts, never
under-counts. Only a release that raised before returning any output is marked
*aborted* (nothing left the process, so nothing was spent). A release that writes its output
as it goes (a long table released from a file) and stops after reading the data is marked
*failed*: part of it may have been written, so its ε stays counted (:class:`BookEntry`).

The book is kept in one neighbour notion per table (that of its first release): ε under
add/remove and ε under replace-one neighbours do not add up to a bound in either notion,
so a release under the other notion is refused.

Releases of both privacy definitions compose (docs/privacy-model.md, "The budget book"): a
pure ε-DP release is (ε²/2)-zCDP and a zCDP release is ρ-zCDP, so the table's releases are
(Σρ)-zCDP, which converts to (ε, δ) at the book's δ (default 10⁻⁹). They are also (Σε, Σδ)-DP
by basic composition (pure releases contribute δ = 0). The table's total is the smaller ε of
the two statements that hold at the book's δ; while every release is pure it is Σε, exactly
as before (pure ε, δ = 0), and that is what a cap on a pure book bounds.

Storage is SQLite from the standard library (WAL journal, one file); no Streamlit here.
"""
from __future__ import annotations

import hashlib
import math
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from dpcore.errors import OptionError

#: Relative slack when comparing a sum of ε with the cap (ten releases at 0.1 fit a cap of 1).
CAP_TOLERANCE = 1e-9
#: How long a writer waits for another's transaction before giving up (seconds).
BUSY_TIMEOUT_S = 30.0

PENDING, COMPLETE, ABORTED, FAILED = "pending", "complete", "aborted", "failed"
#: the statuses whose ε counts as spent: a failed release drew its noise (and may have written part
#: of its sets) before it stopped, so it counts like a complete one
SPENT = (PENDING, COMPLETE, FAILED)

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS budget_caps (
    table_fp   TEXT PRIMARY KEY,
    epsilon    REAL NOT NULL CHECK (epsilon > 0),
    set_at     TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS budget_entries (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    table_fp        TEXT NOT NULL,
    table_name      TEXT NOT NULL DEFAULT '',
    epsilon         REAL NOT NULL CHECK (epsilon > 0),
    method          TEXT NOT NULL,
    neighbours      TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('{PENDING}', '{COMPLETE}', '{ABORTED}', '{FAILED}')),
    reserved_at     TEXT NOT NULL,
    completed_at    TEXT,
    dp              INTEGER,
    manifest_sha256 TEXT,
    note            TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS budget_entries_by_table ON budget_entries (table_fp);
CREATE TABLE IF NOT EXISTS book_settings (
    key   TEXT PRIMARY KEY,
    value REAL NOT NULL
);
"""
#: Columns added after the first books were written (added to an old book when it is opened).
_MIGRATIONS = (("delta", "REAL"), ("rho", "REAL"))
#: The book's δ when none is set: where a table's total is stated as (ε, δ).
DEFAULT_DELTA = 1e-9


def release_costs(epsilon: float, delta: float | None) -> tuple[float, float | None, float]:
    """(ε, δ, ρ) of one release: a pure one is (ε²/2)-zCDP; an (ε, δ) one gets the largest ρ
    within (ε, δ) (what its ledger may spend)."""
    from dpcore.privacy.zcdp import check_delta, rho_of_epsilon_delta, rho_of_pure

    if delta is None:
        return epsilon, None, rho_of_pure(epsilon)
    d = check_delta(delta)
    return epsilon, d, rho_of_epsilon_delta(epsilon, d)


def composition_totals(rows, delta: float) -> dict:
    """A table's total over its releases ``rows`` = [(ε, δ or None, ρ or None), ...].

    * ``rho``: Σρ (a pure release as ε²/2): the releases are (Σρ)-zCDP (Bun & Steinke 2016);
    * ``pure_epsilon``: Σε when every release is pure (basic composition, δ = 0), else None;
    * ``epsilon_at_delta``: the smaller ε of the statements that hold at ``delta``: the
      conversion of Σρ (dpcore.privacy.zcdp.epsilon_of_rho) and basic composition (Σε, Σδ)
      when Σδ ≤ ``delta``;
    * ``epsilon``: what the book counts as spent and caps: ``pure_epsilon`` for an all-pure
      table (exactly the pure sum), else ``epsilon_at_delta``.
    """
    from dpcore.privacy.zcdp import epsilon_of_rho, rho_of_pure

    rows = list(rows)
    rho = math.fsum(r if r is not None else rho_of_pure(e) for e, _, r in rows)
    basic_eps = math.fsum(e for e, _, _ in rows)
    basic_delta = math.fsum(d or 0.0 for _, d, _ in rows)
    pure = all(d is None for _, d, _ in rows)
    at_delta = min(epsilon_of_rho(rho, delta) if rho > 0 else 0.0,
                   basic_eps if basic_delta <= delta else math.inf)
    return {"epsilon": basic_eps if pure else at_delta, "pure_epsilon": basic_eps if pure else None, "rho": rho,
            "delta": delta, "epsilon_at_delta": at_delta}


def _allow_failed(conn: sqlite3.Connection) -> None:
    """A book written before the ``failed`` status: its table is rebuilt with the new status
    check (SQLite cannot alter a CHECK), every entry copied as it is, in one transaction."""
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'budget_entries'").fetchone()[0]
    if f"'{FAILED}'" in sql:
        return
    cols = ", ".join(r["name"] for r in conn.execute("PRAGMA table_info(budget_entries)"))
    create = SCHEMA[SCHEMA.index("CREATE TABLE IF NOT EXISTS budget_entries"):]
    create = create[:create.index(");") + 2]
    with transaction(conn):
        conn.execute("ALTER TABLE budget_entries RENAME TO budget_entries_old")
        conn.execute(create)
        for col, kind in _MIGRATIONS:
            conn.execute(f"ALTER TABLE budget_entries ADD COLUMN {col} {kind}")
        conn.execute(f"INSERT INTO budget_entries ({cols}) SELECT {cols} FROM budget_entries_old")
        conn.execute("DROP TABLE budget_entries_old")
        conn.execute("CREATE INDEX IF NOT EXISTS budget_entries_by_table ON budget_entries (table_fp)")


class BudgetExceeded(OptionError):
    """A release would take a table's spent ε above its cap; nothing was spent."""


def connect(db_path) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), WAL journal, and a
    busy timeout so concurrent writers wait for each other instead of failing."""
    conn = sqlite3.connect(str(db_path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")  # a committed record survives a power cut
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``: the write lock is taken up front, so a
    read-check-write inside is never interleaved with another writer's."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def manifest_sha256(manifest_json: str) -> str:
    """SHA-256 of the published manifest's text (UTF-8), as recorded in the book."""
    return hashlib.sha256(manifest_json.encode("utf-8")).hexdigest()


def _positive_epsilon(name: str, value) -> float:
    try:
        e = float(value)
    except (TypeError, ValueError):
        raise OptionError(f"{name} must be a number greater than 0; got {value!r}") from None
    if isinstance(value, bool) or not math.isfinite(e) or e <= 0:
        raise OptionError(f"{name} must be a finite number greater than 0; got {value!r}")
    return e


class BudgetBook:
    """Releases and caps per table fingerprint, in the SQLite file at ``db_path``.

    Every method opens its own short-lived connection, so one book may be used from
    several threads or processes at once.
    """

    def __init__(self, db_path):
        self.db_path = Path(db_path)
        with self._conn() as conn:
            conn.executescript(SCHEMA)
            have = {r["name"] for r in conn.execute("PRAGMA table_info(budget_entries)")}
            for col, kind in _MIGRATIONS:
                if col not in have:  # a book written before (ε, δ) releases: its entries are pure
                    conn.execute(f"ALTER TABLE budget_entries ADD COLUMN {col} {kind}")
            _allow_failed(conn)

    @contextmanager
    def _conn(self) -> Iterator[sqlite3.Connection]:
        conn = connect(self.db_path)
        try:
            yield conn
        finally:
            conn.close()

    # ------------------------------------------------------------------ reading

    @staticmethod
    def _live(conn, table_fp: str) -> list:
        return conn.execute("SELECT epsilon, delta, rho FROM budget_entries WHERE table_fp = ? AND status IN (?, ?, ?)",
                            (table_fp, *SPENT)).fetchall()

    @classmethod
    def _spent(cls, conn, table_fp: str, extra: tuple | None = None) -> float:
        """The table's total ε (:func:`composition_totals`), with ``extra`` = (ε, δ, ρ) of one more release."""
        rows = [(r["epsilon"], r["delta"], r["rho"]) for r in cls._live(conn, table_fp)]
        return composition_totals(rows + ([extra] if extra else []), cls._delta(conn))["epsilon"]

    @staticmethod
    def _delta(conn) -> float:
        row = conn.execute("SELECT value FROM book_settings WHERE key = 'delta'").fetchone()
        return DEFAULT_DELTA if row is None else float(row["value"])

    @staticmethod
    def _cap(conn, table_fp: str) -> float | None:
        row = conn.execute("SELECT epsilon FROM budget_caps WHERE table_fp = ?", (table_fp,)).fetchone()
        return None if row is None else float(row["epsilon"])

    @staticmethod
    def _notion(conn, table_fp: str) -> str | None:
        row = conn.execute("SELECT neighbours FROM budget_entries WHERE table_fp = ? AND status IN (?, ?, ?) "
                           "ORDER BY id LIMIT 1", (table_fp, *SPENT)).fetchone()
        return None if row is None else row["neighbours"]

    def spent(self, table_fp: str) -> float:
        """ε spent on the table: completed releases plus pending ones (conservative); Σε while
        every release is pure, else the (ε, δ) total at the book's δ (:func:`total_epsilon`)."""
        with self._conn() as conn:
            return self._spent(conn, table_fp)

    @property
    def delta(self) -> float:
        """The δ at which a table with (ε, δ) releases states its total."""
        with self._conn() as conn:
            return self._delta(conn)

    def set_delta(self, delta) -> None:
        """Set the book's δ (0 < δ < 1; one line naming delta otherwise)."""
        from dpcore.privacy.zcdp import check_delta

        d = check_delta(delta)
        with self._conn() as conn, transaction(conn):
            conn.execute("INSERT OR REPLACE INTO book_settings VALUES ('delta', ?)", (d,))

    def totals(self, table_fp: str) -> dict:
        """The table's total both ways: ``pure_epsilon`` (Σε, when every release is pure, else
        None), ``rho`` (Σρ, pure releases as ε²/2), and ``epsilon_at_delta`` (its (ε, δ) at the
        book's ``delta``)."""
        with self._conn() as conn:
            rows = [(r["epsilon"], r["delta"], r["rho"]) for r in self._live(conn, table_fp)]
            delta = self._delta(conn)
        return composition_totals(rows, delta)

    def cap(self, table_fp: str) -> float | None:
        """The table's cap on total ε, or None (no cap set)."""
        with self._conn() as conn:
            return self._cap(conn, table_fp)

    def remaining(self, table_fp: str) -> float | None:
        """Cap minus spent (never below 0), or None when no cap is set."""
        with self._conn() as conn:
            cap = self._cap(conn, table_fp)
            return None if cap is None else max(0.0, cap - self._spent(conn, table_fp))

    def entries(self, table_fp: str | None = None) -> list[dict]:
        """Every entry (pending, complete, failed and aborted), oldest first."""
        with self._conn() as conn:
            if table_fp is None:
                rows = conn.execute("SELECT * FROM budget_entries ORDER BY id").fetchall()
            else:
                rows = conn.execute("SELECT * FROM budget_entries WHERE table_fp = ? ORDER BY id",
                                    (table_fp,)).fetchall()
        return [dict(r) for r in rows]

    def entry(self, entry_id: int) -> dict:
        with self._conn() as conn:
            row = conn.execute("SELECT * FROM budget_entries WHERE id = ?", (int(entry_id),)).fetchone()
        if row is None:
            raise OptionError(f"the budget book has no release number {entry_id}")
        return dict(row)

    def summary(self) -> list[dict]:
        """One row per table with a cap or an entry: spent, pending, cap, remaining, releases."""
        with self._conn() as conn:
            fps = [r[0] for r in conn.execute(
                "SELECT table_fp FROM budget_entries UNION SELECT table_fp FROM budget_caps ORDER BY 1")]
            out = []
            delta = self._delta(conn)
            for fp in fps:
                rows = conn.execute("SELECT * FROM budget_entries WHERE table_fp = ? ORDER BY id", (fp,)).fetchall()
                live = [r for r in rows if r["status"] in SPENT]
                cap = self._cap(conn, fp)
                both = composition_totals([(r["epsilon"], r["delta"], r["rho"]) for r in live], delta)
                spent = both["epsilon"]
                out.append({
                    "table_fp": fp,
                    "table_name": next((r["table_name"] for r in reversed(rows) if r["table_name"]), ""),
                    "releases": sum(r["status"] == COMPLETE for r in rows),
                    "pending": sum(r["status"] == PENDING for r in rows),
                    "failed": sum(r["status"] == FAILED for r in rows),
                    "not_dp": sum(r["status"] == COMPLETE and r["dp"] == 0 for r in rows),
                    "neighbours": live[0]["neighbours"] if live else None,
                    "spent": spent,
                    "cap": cap,
                    "remaining": None if cap is None else max(0.0, cap - spent),
                    "pure_epsilon": both["pure_epsilon"], "rho": both["rho"], "delta": both["delta"],
                    "epsilon_at_delta": both["epsilon_at_delta"],
                })
        return out

    # ------------------------------------------------------------------ the cap

    def set_cap(self, table_fp: str, epsilon) -> None:
        """Set (or with ``None`` remove) the table's cap. A cap below what is already spent
        is allowed: every further release of the table is then refused."""
        with self._conn() as conn, transaction(conn):
            if epsilon is None:
                conn.execute("DELETE FROM budget_caps WHERE table_fp = ?", (table_fp,))
                return
            e = _positive_epsilon("the budget cap", epsilon)
            conn.execute("INSERT INTO budget_caps (table_fp, epsilon, set_at) VALUES (?, ?, ?) "
                         "ON CONFLICT (table_fp) DO UPDATE SET epsilon = excluded.epsilon, set_at = excluded.set_at",
                         (table_fp, e, now()))

    # ------------------------------------------------------------------ spending

    def _refusal(self, conn, table_fp: str, epsilon: float, neighbours: str, label: str,
                 delta: float | None = None) -> str | None:
        label = label[:1].upper() + label[1:]
        notion = self._notion(conn, table_fp)
        if notion is not None and notion != neighbours:
            return (f"{label}: this table's budget book is kept under neighbours='{notion}' (its earlier releases); ε "
                    f"under '{neighbours}' does not add up with them. Release with neighbours='{notion}' if the method "
                    "offers it, or keep this table in another workspace")
        cap = self._cap(conn, table_fp)
        if cap is None:
            return None
        spent = self._spent(conn, table_fp)
        after = self._spent(conn, table_fp, release_costs(epsilon, delta))
        if after > cap * (1 + CAP_TOLERANCE):
            remaining = max(0.0, cap - spent)
            pure = delta is None and all(r["delta"] is None for r in self._live(conn, table_fp))
            what = (f"ε = {epsilon:g}" if pure else
                    f"ε = {epsilon:g}{'' if delta is None else f', δ = {delta:g}'}, which would take this table's "
                    f"total to ε = {after:.6g} at δ = {self._delta(conn):g},")
            return (f"{label} needs {what} but only ε = {remaining:.6g} of this table's budget remains "
                    f"(cap {cap:g}, spent {spent:.6g}). Nothing was released or spent; lower ε, or raise the cap "
                    "if your policy allows it")
        return None

    def check(self, table_fp: str, epsilon, neighbours: str, label: str = "this release",
              delta: float | None = None) -> None:
        """Raise :class:`BudgetExceeded` (remaining budget named) if a release of ``epsilon``
        (and ``delta``, for an (ε, δ) release) would not fit. Reads only; :meth:`reserve`
        repeats the check atomically."""
        e = _positive_epsilon("epsilon", epsilon)
        with self._conn() as conn:
            msg = self._refusal(conn, table_fp, e, neighbours, label, delta)
        if msg:
            raise BudgetExceeded(msg)

    def reserve(self, table_fp: str, epsilon, method: str, neighbours: str, table_name: str = "",
                delta: float | None = None) -> int:
        """Check the cap and write a pending entry in one transaction; the entry's id.
        Call this BEFORE the release draws any randomness. ``delta``: an (ε, δ) release
        through zCDP (its ρ is the largest within (ε, δ), what its ledger may spend)."""
        e = _positive_epsilon("epsilon", epsilon)
        _, d, rho = release_costs(e, delta)
        with self._conn() as conn, transaction(conn):
            msg = self._refusal(conn, table_fp, e, neighbours, f"a {method} release", d)
            if msg:
                raise BudgetExceeded(msg)
            cur = conn.execute(
                "INSERT INTO budget_entries (table_fp, table_name, epsilon, method, neighbours, status, reserved_at, "
                "delta, rho) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (table_fp, table_name, e, method, neighbours, PENDING, now(), d, None if d is None else rho))
            return int(cur.lastrowid)

    def complete(self, entry_id: int, manifest_sha: str, dp: bool, epsilon_spent: float | None = None) -> None:
        """Mark a pending entry complete. The recorded ε never goes down (conservative)."""
        with self._conn() as conn, transaction(conn):
            row = conn.execute("SELECT status, epsilon FROM budget_entries WHERE id = ?", (int(entry_id),)).fetchone()
            if row is None or row["status"] != PENDING:
                raise OptionError(f"budget book entry {entry_id} is not pending; it cannot be completed")
            eps = max(float(row["epsilon"]), float(epsilon_spent or 0.0))
            conn.execute("UPDATE budget_entries SET status = ?, completed_at = ?, manifest_sha256 = ?, dp = ?, "
                         "epsilon = ? WHERE id = ?", (COMPLETE, now(), manifest_sha, int(bool(dp)), eps, int(entry_id)))

    def abort(self, entry_id: int, note: str) -> None:
        """Mark a pending entry aborted: only for a release that returned no output."""
        with self._conn() as conn, transaction(conn):
            conn.execute("UPDATE budget_entries SET status = ?, completed_at = ?, note = ? WHERE id = ? AND status = ?",
                         (ABORTED, now(), note[:500], int(entry_id), PENDING))

    def fail(self, entry_id: int, note: str) -> None:
        """Mark a pending entry failed: the release stopped after drawing its noise (or writing part
        of its output). Its ε stays counted as spent."""
        with self._conn() as conn, transaction(conn):
            conn.execute("UPDATE budget_entries SET status = ?, completed_at = ?, note = ? WHERE id = ? AND status = ?",
                         (FAILED, now(), note[:500], int(entry_id), PENDING))

    def record(self, table_fp: str, epsilon, method: str, neighbours: str, run: Callable[[], object],
               store: Callable[[int, object], None] | None = None, table_name: str = "", delta: float | None = None):
        """Reserve, run the release, store it, commit the record; then ``(entry_id, release)``.

        ``run()`` returns an object with ``manifest_json()``, ``dp`` and ``ledger.epsilon``
        (a :class:`dpcore.Release`). ``store(entry_id, release)`` may save its outputs
        before the record is committed. If ``run`` raises, the entry is aborted (no output
        exists); if anything after it raises, the entry stays pending and counts as spent.
        """
        entry_id = self.reserve(table_fp, epsilon, method, neighbours, table_name, delta)
        try:
            release = run()
        except BaseException as exc:
            self.abort(entry_id, f"the release raised {type(exc).__name__}: {exc}")
            raise
        # from here on ε is spent: failures leave the pending entry, which counts
        if store is not None:
            store(entry_id, release)
        self.complete(entry_id, manifest_sha256(release.manifest_json()), release.dp, release.ledger.epsilon)
        return entry_id, release


class BookEntry:
    """One release of a table through the book, step by step, for a release that writes its output
    as it goes (:func:`dpcore.output.synthesize_file`): :meth:`reserve` (refused over the cap),
    then :meth:`complete`, :meth:`abort` (stopped before reading the data: nothing spent) or
    :meth:`fail` (stopped after: counted as spent)."""

    def __init__(self, book: BudgetBook, table_fp: str, epsilon, method: str, neighbours: str, table_name: str = "",
                 delta: float | None = None):
        self.book, self.table_fp, self.epsilon, self.method = book, table_fp, epsilon, method
        self.neighbours, self.table_name, self.delta = neighbours, table_name, delta
        self.entry_id: int | None = None

    def reserve(self) -> None:
        self.entry_id = self.book.reserve(self.table_fp, self.epsilon, self.method, self.neighbours, self.table_name,
                                          self.delta)

    def abort(self, note: str) -> None:
        self.book.abort(self.entry_id, note)

    def fail(self, note: str) -> None:
        self.book.fail(self.entry_id, note)

    def complete(self, release) -> None:
        self.book.complete(self.entry_id, manifest_sha256(release.manifest_json()), release.dp, release.ledger.epsilon)
