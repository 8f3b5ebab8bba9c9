"""The budget book: every release of a table, recorded against the table's fingerprint,
with a per-table cap on the total ε. One book per installation: every workspace, the command
line and the studio API write to it (:func:`dpcore.studio.workspace.installation_book`).

Privacy: releases of the same table compose sequentially, so the privacy loss of a
table's releases is at most the sum of their ε (basic sequential composition, Dwork &
Roth 2014, Thm 3.16; docs/privacy-model.md, "The budget book"). The book keeps that sum
and refuses, before any randomness is drawn, a release that would take it above the cap.

Accounting is conservative and crash-safe (reserve, release, commit):

1. :meth:`BudgetBook.reserve` checks the cap and writes a *pending* entry in one write
   transaction under the store's lock (:mod:`dpcore.studio.book_store`), so two writers can
   never both pass the check;
2. the release runs (this is where ε is spent);
3. :meth:`BudgetBook.complete` records that the entry completed, with the manifest's SHA-256.

A release's outputs are handed out only after step 3 has committed. A pending entry
counts as spent: if the process dies between 2 and 3 the book over-counts, never
under-counts. Only a release that raised before returning any output is marked
*aborted* (nothing left the process, so nothing was spent). A release that writes its output
as it goes (a long table released from a file) and stops after reading the data is marked
*failed*: part of it may have been written, so its ε stays counted (:class:`BookEntry`).

The book is append-only: an entry is written once; each change of its status is a new event
row (the entry's status is its latest event's); a cap, the book's δ and a table's charging
decision are logged the same way (the latest row holds). Every entry names its workspace and
its user (the logged-in identity on a team server, else the local OS user).

The book is kept in one neighbour notion per table (that of its first release): ε under
add/remove and ε under replace-one neighbours do not add up to a bound in either notion,
so a release under the other notion is refused.

Releases of both privacy definitions compose (docs/privacy-model.md, "The budget book"): a
pure ε-DP release is (ε²/2)-zCDP and a zCDP release is ρ-zCDP, so the table's releases are
(Σρ)-zCDP, which converts to (ε, δ) at the book's δ (default 10⁻⁹). They are also (Σε, Σδ)-DP
by basic composition (pure releases contribute δ = 0). The table's total is the smaller ε of
the two statements that hold at the book's δ; while every release is pure it is Σε, exactly
as before (pure ε, δ = 0), and that is what a cap on a pure book bounds.

A table may be charged to another (a copy of a known table's records with columns dropped or
reordered, or in another file format: :mod:`dpcore.studio.table_match`): its releases are then
entries of that table, its cap is that table's cap.

No Streamlit here.
"""
from __future__ import annotations

import getpass
import hashlib
import json
import math
from collections.abc import Callable
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from dpcore.errors import InputError, OptionError
from dpcore.studio.book_merge import merge_legacy_book
from dpcore.studio.book_store import Store, current_entries_sql, sqlite_connect, sqlite_transaction

__all__ = ["ABORTED", "COMPLETE", "FAILED", "PENDING", "SPENT", "CAP_TOLERANCE", "DEFAULT_DELTA",
           "BookEntry", "BudgetBook", "BudgetExceeded", "composition_totals", "connect", "default_user",
           "manifest_sha256", "now", "release_costs", "transaction"]

#: Relative slack when comparing a sum of ε with the cap (ten releases at 0.1 fit a cap of 1).
CAP_TOLERANCE = 1e-9

PENDING, COMPLETE, ABORTED, FAILED = "pending", "complete", "aborted", "failed"
#: the statuses whose ε counts as spent: a failed release drew its noise (and may have written part
#: of its sets) before it stopped, so it counts like a complete one
SPENT = (PENDING, COMPLETE, FAILED)
#: The book's δ when none is set: where a table's total is stated as (ε, δ).
DEFAULT_DELTA = 1e-9
#: The columns of an exported event row (:meth:`BudgetBook.export_rows`), in order.
EXPORT_COLUMNS = ("event", "entry", "table_fp", "table_name", "released_fp", "workspace", "user", "method",
                  "neighbours", "epsilon", "delta", "rho", "status", "at", "dp", "manifest_sha256", "note",
                  "reserved_at", "reserved_by")


def default_user() -> str:
    """Who writes to the book when no login names them: the local OS user name."""
    try:
        return getpass.getuser()
    except (KeyError, OSError, ImportError):  # no passwd entry and no LOGNAME/USER: still recorded as such
        return "unknown"


def _user(user: str | None) -> str:
    return default_user() if user is None else str(user)


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


class BudgetExceeded(OptionError):
    """A release would take a table's spent ε above its cap; nothing was spent."""


#: the workspace's own SQLite file uses the same connection and write transaction as a SQLite book
connect, transaction = sqlite_connect, sqlite_transaction


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


def _entry_dict(row: dict) -> dict:
    """An entry as the book hands it out: ``user`` (stored as user_name), the rest as stored."""
    out = dict(row)
    out["user"] = out.pop("user_name", "")
    return out


_CURRENT = current_entries_sql()
#: how deep a chain of charging decisions may go (a table charged to a table charged to …)
_MAX_LINKS = 32



class BudgetBook:
    """Releases and caps per table fingerprint, in the store at ``location``: a SQLite file
    (a path) or a PostgreSQL database (a ``postgresql://`` URL).

    Every method opens its own short-lived connection, so one book may be used from
    several threads, processes or hosts at once. Every writing method takes ``user`` (the
    logged-in identity; None: the local OS user, :func:`default_user`).
    """

    def __init__(self, location):
        self.store = Store(location)
        self.location = self.store.location
        if not self.store.postgres and Path(self.location).is_file():
            merge_legacy_book(self, self.location, "")  # a book file written before the event log

    @property
    def db_path(self) -> Path | None:
        """The SQLite file of the book (None on PostgreSQL)."""
        return None if self.store.postgres else Path(self.location)

    def describe(self) -> str:
        """Where the book is kept, for messages."""
        return self.store.describe()

    @contextmanager
    def _conn(self):
        with self.store.connect() as conn:
            yield conn

    # ------------------------------------------------------------------ reading

    @staticmethod
    def _account(conn, table_fp: str) -> str:
        """The table whose budget ``table_fp`` is charged to: itself, or the table its latest
        charging decision names (followed through chains)."""
        seen, fp = {table_fp}, table_fp
        for _ in range(_MAX_LINKS):
            row = conn.one("SELECT charged_to FROM book_links WHERE table_fp = ? ORDER BY id DESC LIMIT 1", (fp,))
            if row is None or not row["charged_to"] or row["charged_to"] in seen:
                return fp
            fp = row["charged_to"]
            seen.add(fp)
        return fp

    @staticmethod
    def _live(conn, account: str) -> list:
        return conn.all(f"SELECT epsilon, delta, rho FROM ({_CURRENT}) c WHERE table_fp = ? AND status IN (?, ?, ?)",
                        (account, *SPENT))

    @classmethod
    def _spent(cls, conn, account: str, extra: tuple | None = None) -> float:
        """The table's total ε (:func:`composition_totals`), with ``extra`` = (ε, δ, ρ) of one more release."""
        rows = [(r["epsilon"], r["delta"], r["rho"]) for r in cls._live(conn, account)]
        return composition_totals(rows + ([extra] if extra else []), cls._delta(conn))["epsilon"]

    @staticmethod
    def _delta(conn) -> float:
        row = conn.one("SELECT value FROM book_settings_log WHERE key = 'delta' ORDER BY id DESC LIMIT 1")
        return DEFAULT_DELTA if row is None else float(row["value"])

    @staticmethod
    def _cap(conn, account: str) -> float | None:
        row = conn.one("SELECT epsilon FROM book_caps WHERE table_fp = ? ORDER BY id DESC LIMIT 1", (account,))
        return None if row is None or row["epsilon"] is None else float(row["epsilon"])

    @staticmethod
    def _notion(conn, account: str) -> str | None:
        row = conn.one(f"SELECT neighbours FROM ({_CURRENT}) c WHERE table_fp = ? AND status IN (?, ?, ?) "
                       "ORDER BY id LIMIT 1", (account, *SPENT))
        return None if row is None else row["neighbours"]

    def account(self, table_fp: str) -> str:
        """The fingerprint whose budget a release of ``table_fp`` is charged to."""
        with self._conn() as conn:
            return self._account(conn, table_fp)

    def spent(self, table_fp: str) -> float:
        """ε spent on the table: completed releases plus pending ones (conservative); Σε while
        every release is pure, else the (ε, δ) total at the book's δ (:func:`composition_totals`)."""
        with self._conn() as conn:
            return self._spent(conn, self._account(conn, table_fp))

    @property
    def delta(self) -> float:
        """The δ at which a table with (ε, δ) releases states its total."""
        with self._conn() as conn:
            return self._delta(conn)

    def set_delta(self, delta, user: str | None = None) -> None:
        """Set the book's δ (0 < δ < 1; one line naming delta otherwise)."""
        from dpcore.privacy.zcdp import check_delta

        d = check_delta(delta)
        with self._conn() as conn, conn.transaction():
            conn.execute("INSERT INTO book_settings_log (key, value, set_at, user_name) VALUES ('delta', ?, ?, ?)",
                         (d, now(), _user(user)))

    def totals(self, table_fp: str) -> dict:
        """The table's total both ways: ``pure_epsilon`` (Σε, when every release is pure, else
        None), ``rho`` (Σρ, pure releases as ε²/2), and ``epsilon_at_delta`` (its (ε, δ) at the
        book's ``delta``)."""
        with self._conn() as conn:
            rows = [(r["epsilon"], r["delta"], r["rho"]) for r in self._live(conn, self._account(conn, table_fp))]
            delta = self._delta(conn)
        return composition_totals(rows, delta)

    def cap(self, table_fp: str) -> float | None:
        """The table's cap on total ε, or None (no cap set)."""
        with self._conn() as conn:
            return self._cap(conn, self._account(conn, table_fp))

    def remaining(self, table_fp: str) -> float | None:
        """Cap minus spent (never below 0), or None when no cap is set."""
        with self._conn() as conn:
            account = self._account(conn, table_fp)
            cap = self._cap(conn, account)
            return None if cap is None else max(0.0, cap - self._spent(conn, account))

    def entries(self, table_fp: str | None = None, workspace: str | None = None) -> list[dict]:
        """Every entry (pending, complete, failed and aborted) with its current status, oldest first:
        all of them, those charged to ``table_fp``'s account (its whole history, from every workspace),
        and/or those made through ``workspace``."""
        where, params = [], []
        with self._conn() as conn:
            if table_fp is not None:
                where.append("table_fp = ?")
                params.append(self._account(conn, table_fp))
            if workspace is not None:
                where.append("workspace = ?")
                params.append(workspace)
            sql = f"SELECT * FROM ({_CURRENT}) c" + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY id"
            return [_entry_dict(r) for r in conn.all(sql, params)]

    def entry(self, entry_id: int) -> dict:
        with self._conn() as conn:
            row = conn.one(f"SELECT * FROM ({_CURRENT}) c WHERE id = ?", (int(entry_id),))
        if row is None:
            raise OptionError(f"the budget book has no release number {entry_id}")
        return _entry_dict(row)

    def events(self, entry_id: int | None = None) -> list[dict]:
        """The status events (of one entry, or all), oldest first: the book's audit trail."""
        with self._conn() as conn:
            if entry_id is None:
                rows = conn.all("SELECT * FROM book_events ORDER BY id")
            else:
                rows = conn.all("SELECT * FROM book_events WHERE entry_id = ? ORDER BY id", (int(entry_id),))
        return [_entry_dict(r) for r in rows]

    def summary(self) -> list[dict]:
        """One row per table with a cap or an entry: spent, pending, cap, remaining, releases,
        and the workspaces and users that released it."""
        with self._conn() as conn:
            fps = [r["table_fp"] for r in conn.all(
                "SELECT table_fp FROM book_entries UNION SELECT table_fp FROM book_caps ORDER BY 1")]
            delta = self._delta(conn)
            out = [self._summary_row(conn, fp, delta) for fp in fps]
        return [r for r in out if r is not None]

    def _summary_row(self, conn, fp: str, delta: float) -> dict | None:
        rows = conn.all(f"SELECT * FROM ({_CURRENT}) c WHERE table_fp = ? ORDER BY id", (fp,))
        cap = self._cap(conn, fp)
        if not rows and cap is None:  # a cap set and then removed, never released
            return None
        live = [r for r in rows if r["status"] in SPENT]
        both = composition_totals([(r["epsilon"], r["delta"], r["rho"]) for r in live], delta)
        spent = both["epsilon"]
        known = conn.one("SELECT name FROM book_tables WHERE fingerprint = ?", (fp,))
        return {
            "table_fp": fp,
            "table_name": next((r["table_name"] for r in reversed(rows) if r["table_name"]),
                               known["name"] if known else ""),
            "releases": sum(r["status"] == COMPLETE for r in rows),
            "pending": sum(r["status"] == PENDING for r in rows),
            "failed": sum(r["status"] == FAILED for r in rows),
            "not_dp": sum(r["status"] == COMPLETE and r["dp"] == 0 for r in rows),
            "neighbours": live[0]["neighbours"] if live else None,
            "workspaces": sorted({r["workspace"] for r in rows}),
            "users": sorted({r["user_name"] for r in rows}),
            "spent": spent,
            "cap": cap,
            "remaining": None if cap is None else max(0.0, cap - spent),
            "pure_epsilon": both["pure_epsilon"], "rho": both["rho"], "delta": both["delta"],
            "epsilon_at_delta": both["epsilon_at_delta"],
        }

    # ------------------------------------------------------------------ the cap

    def set_cap(self, table_fp: str, epsilon, user: str | None = None) -> None:
        """Set (or with ``None`` remove) the cap of the table ``table_fp`` is charged to. A cap below
        what is already spent is allowed: every further release of the table is then refused."""
        e = None if epsilon is None else _positive_epsilon("the budget cap", epsilon)
        with self._conn() as conn, conn.transaction():
            conn.execute("INSERT INTO book_caps (table_fp, epsilon, set_at, user_name) VALUES (?, ?, ?, ?)",
                         (self._account(conn, table_fp), e, now(), _user(user)))

    # ------------------------------------------------------------------ tables and charging decisions

    def register_table(self, fingerprint: str, name: str, n_rows: int, n_cols: int,
                       column_fps: list[str] | tuple = ()) -> None:
        """Make a table known to the book (its name, size and per-column fingerprints, for
        :mod:`dpcore.studio.table_match`); the first registration of a fingerprint holds."""
        with self._conn() as conn, conn.transaction():
            conn.execute("INSERT INTO book_tables (fingerprint, name, n_rows, n_cols, column_fps, added_at) "
                         "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (fingerprint) DO NOTHING",
                         (fingerprint, str(name), int(n_rows), int(n_cols), json.dumps(list(column_fps)), now()))

    def known_tables(self) -> list[dict]:
        """Every registered table: fingerprint, name, n_rows, n_cols, column_fps (a list), added_at."""
        with self._conn() as conn:
            rows = conn.all("SELECT * FROM book_tables ORDER BY added_at, fingerprint")
        for r in rows:
            r["column_fps"] = json.loads(r["column_fps"])
        return rows

    def charge_to(self, table_fp: str, account_fp: str | None, user: str | None = None, reason: str = "") -> None:
        """Record that releases of ``table_fp`` are charged to the table ``account_fp`` (None: to itself,
        a table of its own). The latest decision holds; earlier ones stay in the log."""
        if account_fp == table_fp:
            account_fp = None
        with self._conn() as conn, conn.transaction():
            if account_fp is not None and self._account(conn, account_fp) == table_fp:
                raise OptionError("a table cannot be charged to a table that is charged to it; pick another table")
            conn.execute("INSERT INTO book_links (table_fp, charged_to, at, user_name, reason) VALUES (?, ?, ?, ?, ?)",
                         (table_fp, account_fp, now(), _user(user), reason[:500]))

    def charging_decision(self, table_fp: str) -> dict | None:
        """The latest charging decision about ``table_fp`` (charged_to None: a table of its own), or None."""
        with self._conn() as conn:
            row = conn.one("SELECT * FROM book_links WHERE table_fp = ? ORDER BY id DESC LIMIT 1", (table_fp,))
        return None if row is None else _entry_dict(row)

    # ------------------------------------------------------------------ spending

    def _refusal(self, conn, account: str, epsilon: float, neighbours: str, label: str,
                 delta: float | None = None) -> str | None:
        label = label[:1].upper() + label[1:]
        notion = self._notion(conn, account)
        if notion is not None and notion != neighbours:
            return (f"{label}: this table's budget book is kept under neighbours='{notion}' (its earlier releases); ε "
                    f"under '{neighbours}' does not add up with them. Release with neighbours='{notion}' if the method "
                    "offers it, or keep this table in another workspace")
        cap = self._cap(conn, account)
        if cap is None:
            return None
        spent = self._spent(conn, account)
        after = self._spent(conn, account, release_costs(epsilon, delta))
        if after > cap * (1 + CAP_TOLERANCE):
            remaining = max(0.0, cap - spent)
            pure = delta is None and all(r["delta"] is None for r in self._live(conn, account))
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
            msg = self._refusal(conn, self._account(conn, table_fp), e, neighbours, label, delta)
        if msg:
            raise BudgetExceeded(msg)

    def reserve(self, table_fp: str, epsilon, method: str, neighbours: str, table_name: str = "",
                delta: float | None = None, *, workspace: str = "", user: str | None = None) -> int:
        """Check the cap and write a pending entry in one transaction; the entry's id.
        Call this BEFORE the release draws any randomness. ``delta``: an (ε, δ) release
        through zCDP (its ρ is the largest within (ε, δ), what its ledger may spend).
        ``workspace``: the workspace the release is made through ('' for none: the command line
        or the API); ``user``: who makes it."""
        e = _positive_epsilon("epsilon", epsilon)
        _, d, rho = release_costs(e, delta)
        who, at = _user(user), now()
        with self._conn() as conn, conn.transaction():
            account = self._account(conn, table_fp)
            msg = self._refusal(conn, account, e, neighbours, f"a {method} release", d)
            if msg:
                raise BudgetExceeded(msg)
            entry_id = conn.one(
                "INSERT INTO book_entries (table_fp, released_fp, table_name, epsilon, delta, rho, method, neighbours, "
                "workspace, user_name, reserved_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (account, table_fp, table_name, e, d, None if d is None else rho, method, neighbours, workspace, who,
                 at))["id"]
            self._event(conn, entry_id, PENDING, who, at=at)
            return int(entry_id)

    @staticmethod
    def _event(conn, entry_id: int, status: str, user: str, *, at: str | None = None, epsilon: float | None = None,
               dp: bool | None = None, sha: str | None = None, note: str = "") -> None:
        conn.execute("INSERT INTO book_events (entry_id, status, at, user_name, epsilon, dp, manifest_sha256, note) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                     (int(entry_id), status, at or now(), user, epsilon, None if dp is None else int(bool(dp)), sha,
                      note[:500]))

    def _pending(self, conn, entry_id: int) -> dict | None:
        row = conn.one(f"SELECT status, epsilon FROM ({_CURRENT}) c WHERE id = ?", (int(entry_id),))
        return row if row is not None and row["status"] == PENDING else None

    def complete(self, entry_id: int, manifest_sha: str, dp: bool, epsilon_spent: float | None = None,
                 user: str | None = None) -> None:
        """Record that a pending entry completed. The recorded ε never goes down (conservative)."""
        with self._conn() as conn, conn.transaction():
            row = self._pending(conn, entry_id)
            if row is None:
                raise OptionError(f"budget book entry {entry_id} is not pending; it cannot be completed")
            eps = max(float(row["epsilon"]), float(epsilon_spent or 0.0))
            self._event(conn, entry_id, COMPLETE, _user(user), epsilon=eps, dp=dp, sha=manifest_sha)

    def abort(self, entry_id: int, note: str, user: str | None = None) -> None:
        """Record that a pending entry aborted: only for a release that returned no output."""
        with self._conn() as conn, conn.transaction():
            if self._pending(conn, entry_id) is not None:
                self._event(conn, entry_id, ABORTED, _user(user), note=note)

    def fail(self, entry_id: int, note: str, user: str | None = None) -> None:
        """Record that a pending entry failed: the release stopped after drawing its noise (or writing
        part of its output). Its ε stays counted as spent."""
        with self._conn() as conn, conn.transaction():
            if self._pending(conn, entry_id) is not None:
                self._event(conn, entry_id, FAILED, _user(user), note=note)

    def record(self, table_fp: str, epsilon, method: str, neighbours: str, run: Callable[[], object],
               store: Callable[[int, object], None] | None = None, table_name: str = "", delta: float | None = None,
               *, workspace: str = "", user: str | None = None):
        """Reserve, run the release, store it, commit the record; then ``(entry_id, release)``.

        ``run()`` returns an object with ``manifest_json()``, ``dp`` and ``ledger.epsilon``
        (a :class:`dpcore.Release`). ``store(entry_id, release)`` may save its outputs
        before the record is committed. If ``run`` raises, the entry is aborted (no output
        exists); if anything after it raises, the entry stays pending and counts as spent.
        """
        entry_id = self.reserve(table_fp, epsilon, method, neighbours, table_name, delta, workspace=workspace,
                                user=user)
        try:
            release = run()
        except BaseException as exc:
            self.abort(entry_id, f"the release raised {type(exc).__name__}: {exc}", user=user)
            raise
        # from here on ε is spent: failures leave the pending entry, which counts
        if store is not None:
            store(entry_id, release)
        self.complete(entry_id, manifest_sha256(release.manifest_json()), release.dp, release.ledger.epsilon,
                      user=user)
        return entry_id, release

    # ------------------------------------------------------------------ the audit trail

    def export_rows(self, table_fp: str | None = None) -> list[dict]:
        """The book as its audit trail: one row per status event (:data:`EXPORT_COLUMNS`), with the
        entry it belongs to (table, workspace, user, method, ε / δ / ρ, the manifest's SHA-256); all of
        them, or those of the table ``table_fp`` is charged to."""
        sql = ("SELECT v.id AS event, e.id AS entry, e.table_fp, e.table_name, e.released_fp, e.workspace, "
               "v.user_name AS user_name, e.method, e.neighbours, COALESCE(v.epsilon, e.epsilon) AS epsilon, "
               "e.delta, e.rho, v.status, v.at, v.dp, v.manifest_sha256, v.note, e.reserved_at, "
               "e.user_name AS reserved_by FROM book_events v JOIN book_entries e ON e.id = v.entry_id")
        with self._conn() as conn:
            if table_fp is None:
                rows = conn.all(sql + " ORDER BY v.id")
            else:
                rows = conn.all(sql + " WHERE e.table_fp = ? ORDER BY v.id", (self._account(conn, table_fp),))
        return [{k: (r["user_name"] if k == "user" else r[k]) for k in EXPORT_COLUMNS} for r in rows]

    def export_text(self, fmt: str, table_fp: str | None = None) -> str:
        """The audit trail (of the whole book, or of one table) as ``"csv"`` (one row per event) or
        ``"json"`` (the events, and the logs of caps, δ and charging decisions)."""
        if fmt == "csv":
            import pandas as pd

            return pd.DataFrame(self.export_rows(table_fp), columns=list(EXPORT_COLUMNS)).to_csv(index=False)
        if fmt != "json":
            raise OptionError(f"the book exports as csv or json, not {fmt!r}")
        with self._conn() as conn:
            logs = {t: [_entry_dict(r) for r in conn.all(f"SELECT * FROM {t} ORDER BY id")]
                    for t in ("book_caps", "book_settings_log", "book_links")}
            account = None if table_fp is None else self._account(conn, table_fp)
        if account is not None:  # one table: its caps and the decisions that name it
            logs["book_caps"] = [r for r in logs["book_caps"] if r["table_fp"] == account]
            logs["book_links"] = [r for r in logs["book_links"] if account in (r["table_fp"], r["charged_to"])]
        doc = {"format": "dpcore-budget-book/1", "exported_at": now(), "book": self.describe(), "table_fp": account,
               "events": self.export_rows(table_fp), "caps": logs["book_caps"],
               "settings": logs["book_settings_log"], "charging_decisions": logs["book_links"]}
        return json.dumps(doc, indent=2, ensure_ascii=False)

    def export(self, path) -> Path:
        """Write the audit trail to ``path``: CSV or JSON by its suffix (.csv, .json)."""
        p = Path(path)
        fmt = p.suffix.lower().lstrip(".")
        if fmt not in ("csv", "json"):
            raise OptionError(f"--export '{p}': name a .csv or .json file")
        try:
            p.write_text(self.export_text(fmt), encoding="utf-8")
        except OSError as exc:
            raise InputError(f"--export '{p}': cannot write it ({exc.strerror})") from None
        return p

class BookEntry:
    """One release of a table through the book, step by step, for a release that writes its output
    as it goes (:func:`dpcore.output.synthesize_file`): :meth:`reserve` (refused over the cap),
    then :meth:`complete`, :meth:`abort` (stopped before reading the data: nothing spent) or
    :meth:`fail` (stopped after: counted as spent)."""

    def __init__(self, book: BudgetBook, table_fp: str, epsilon, method: str, neighbours: str, table_name: str = "",
                 delta: float | None = None, *, workspace: str = "", user: str | None = None):
        self.book, self.table_fp, self.epsilon, self.method = book, table_fp, epsilon, method
        self.neighbours, self.table_name, self.delta = neighbours, table_name, delta
        self.workspace, self.user = workspace, user
        self.entry_id: int | None = None

    def reserve(self) -> None:
        self.entry_id = self.book.reserve(self.table_fp, self.epsilon, self.method, self.neighbours, self.table_name,
                                          self.delta, workspace=self.workspace, user=self.user)

    def abort(self, note: str) -> None:
        self.book.abort(self.entry_id, note, user=self.user)

    def fail(self, note: str) -> None:
        self.book.fail(self.entry_id, note, user=self.user)

    def complete(self, release) -> None:
        self.book.complete(self.entry_id, manifest_sha256(release.manifest_json()), release.dp, release.ledger.epsilon,
                           user=self.user)
