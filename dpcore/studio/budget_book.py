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

Each entry is kept in its own definition's unit: ε for a pure ε-DP release, ρ for an (ε, δ)
release through zCDP (the ρ its ledger spent, the manifest's to the last digit, and the part of
δ it spent outside ρ, ``delta_approx``: the thresholds of levels found privately). Releases of both
definitions compose (docs/privacy-model.md, "The budget book"): a pure ε-DP release is
(ε²/2)-zCDP, so the table's releases are (Σρ, Σδ_approx)-approximate zCDP, which converts to
(ε, δ) at the table's δ. They are also (Σε, Σδ)-DP by basic composition (pure releases contribute
δ = 0). The table's total is the smaller ε of the two statements that hold at the table's δ;
while every release is pure it is Σε, exactly as before, and that is what a cap on a pure table
bounds.

What was spent never shrinks. A table's δ is the book's δ (default 10⁻⁹) until the table's first
(ε, δ) release pins it; from then on it can only go down (a later, lower book δ applies; a higher
one does not), so no setting makes a table's total ε smaller. A cap is raised only by setting it,
an entry of its own in the audit trail (``change``: set, raised, lowered, removed).

One table, one account: the book keys a table by its content fingerprint
(:mod:`dpcore.counting.fingerprint`), the same in memory, on DuckDB and on Spark, from any format.
A key an older book used for the same records (an unprefixed fingerprint, or ``file-sha256:`` of a
file released on an engine) is linked to it when the same content is next seen
(:meth:`BudgetBook.link_same_content`): the two accounts become one, their releases and the
stricter cap kept, and the link can never be undone.

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
from pathlib import Path

from dpcore.errors import OptionError
from dpcore.studio import book_accounts as A
from dpcore.studio.book_accounts import notion_refusal
from dpcore.studio.book_store import Store, current_entries_sql, entry_dict, now, sqlite_connect, sqlite_transaction
from dpcore.studio.book_totals import DEFAULT_DELTA, composition_totals, release_costs
from dpcore.studio.book_totals import usage as _usage

__all__ = ["ABORTED", "COMPLETE", "FAILED", "PENDING", "SPENT", "CAP_TOLERANCE", "DEFAULT_DELTA",
           "BudgetBook", "BudgetExceeded", "composition_totals", "connect", "default_user",
           "manifest_sha256", "now", "release_costs", "transaction"]

#: Relative slack when comparing a sum of ε with the cap (ten releases at 0.1 fit a cap of 1).
CAP_TOLERANCE = 1e-9

PENDING, COMPLETE, ABORTED, FAILED = "pending", "complete", "aborted", "failed"
#: the statuses whose ε counts as spent: a failed release drew its noise (and may have written part
#: of its sets) before it stopped, so it counts like a complete one
SPENT = (PENDING, COMPLETE, FAILED)


def default_user() -> str:
    """Who writes to the book when no login names them: the local OS user name."""
    try:
        return getpass.getuser()
    except (KeyError, OSError, ImportError):  # no passwd entry and no LOGNAME/USER: still recorded as such
        return "unknown"


def _user(user: str | None) -> str:
    return default_user() if user is None else str(user)


class BudgetExceeded(OptionError):
    """A release would take a table's spent ε above its cap; nothing was spent."""


#: the workspace's own SQLite file uses the same connection and write transaction as a SQLite book
connect, transaction = sqlite_connect, sqlite_transaction


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


_CURRENT = current_entries_sql()
#: the reason that marks a link between two keys of the same records (never undone)
SAME_CONTENT = "same content"
_PIN = A.PIN


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
            from dpcore.studio.book_merge import merge_own_legacy_tables

            merge_own_legacy_tables(self)  # a book file written before the event log (once; recorded)

    @property
    def db_path(self) -> Path | None:
        """The SQLite file of the book (None on PostgreSQL)."""
        return None if self.store.postgres else Path(self.location)

    def describe(self) -> str:
        """Where the book is, for messages."""
        return self.store.describe()

    @contextmanager
    def _conn(self):
        with self.store.connect() as conn:
            yield conn

    # ------------------------------------------------------------------ accounts (dpcore.studio.book_accounts)

    _account = staticmethod(A.account)
    _members = staticmethod(A.members)
    _in = staticmethod(A.sql_in)
    _live = staticmethod(A.live)
    _spent = staticmethod(A.spent)
    _delta = staticmethod(A.book_delta)
    _table_delta = staticmethod(A.table_delta)
    _cap = staticmethod(A.cap)

    def account(self, table_fp: str) -> str:
        """The fingerprint whose budget a release of ``table_fp`` is charged to."""
        with self._conn() as conn:
            return self._account(conn, table_fp)

    def spent(self, table_fp: str) -> float:
        """ε spent on the table: completed releases plus pending ones (conservative); Σε while
        every release is pure, else the (ε, δ) total at the table's δ (:func:`composition_totals`)."""
        with self._conn() as conn:
            return self._spent(conn, self._account(conn, table_fp))

    @property
    def delta(self) -> float:
        """The book's δ: where a table with (ε, δ) releases states its total, until its first such
        release pins the table's own (:meth:`table_delta`)."""
        with self._conn() as conn:
            return self._delta(conn)

    def table_delta(self, table_fp: str) -> float:
        """The δ the table's total is stated at (see :meth:`_table_delta`)."""
        with self._conn() as conn:
            return self._table_delta(conn, self._account(conn, table_fp))

    def set_delta(self, delta, user: str | None = None) -> list[str]:
        """Set the book's δ (0 < δ < 1; one line naming delta otherwise). A table that has (ε, δ)
        releases keeps its pinned δ when the new one is higher; the accounts so kept are returned."""
        from dpcore.privacy.zcdp import check_delta

        d = check_delta(delta)
        with self._conn() as conn, conn.transaction():
            conn.execute("INSERT INTO book_settings_log (key, value, set_at, user_name) VALUES ('delta', ?, ?, ?)",
                         (d, now(), _user(user)))
            accounts = {self._account(conn, r["table_fp"]) for r in conn.all(
                f"SELECT DISTINCT table_fp FROM ({_CURRENT}) c WHERE delta IS NOT NULL AND status IN (?, ?, ?)",
                SPENT)}
            return sorted(a for a in accounts if self._table_delta(conn, a) < d)

    def totals(self, table_fp: str) -> dict:
        """The table's DP total both ways: ``pure_epsilon`` (Σε, when every release is pure, else
        None), ``rho`` (Σρ, pure releases as ε²/2), and ``epsilon_at_delta`` (its (ε, δ) at the
        table's ``delta``); ``not_dp_epsilon``, the ε of releases labelled NOT DP (in no DP total)."""
        with self._conn() as conn:
            account = self._account(conn, table_fp)
            return _usage(self._live(conn, account), self._table_delta(conn, account))

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
                keys = self._members(conn, self._account(conn, table_fp))
                where.append(f"table_fp IN {self._in(keys)}")
                params += keys
            if workspace is not None:
                where.append("workspace = ?")
                params.append(workspace)
            sql = f"SELECT * FROM ({_CURRENT}) c" + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY id"
            return [entry_dict(r) for r in conn.all(sql, params)]

    def entry(self, entry_id: int) -> dict:
        with self._conn() as conn:
            row = conn.one(f"SELECT * FROM ({_CURRENT}) c WHERE id = ?", (int(entry_id),))
        if row is None:
            raise OptionError(f"the budget book has no release number {entry_id}")
        return entry_dict(row)

    def events(self, entry_id: int | None = None) -> list[dict]:
        """The status events (of one entry, or all), oldest first: the book's audit trail."""
        with self._conn() as conn:
            if entry_id is None:
                rows = conn.all("SELECT * FROM book_events ORDER BY id")
            else:
                rows = conn.all("SELECT * FROM book_events WHERE entry_id = ? ORDER BY id", (int(entry_id),))
        return [entry_dict(r) for r in rows]

    def summary(self) -> list[dict]:
        """One row per account (a table, with every key charged to it) with a cap or an entry: spent,
        pending, cap, remaining, releases, and the workspaces and users that released it."""
        with self._conn() as conn:
            links = A.links(conn)
            fps = [r["table_fp"] for r in conn.all(
                "SELECT table_fp FROM book_entries UNION SELECT table_fp FROM book_caps ORDER BY 1")]
            accounts = sorted({A.follow(links, fp) for fp in fps})
            out = [self._summary_row(conn, fp) for fp in accounts]
        return [r for r in out if r is not None]

    def _summary_row(self, conn, fp: str) -> dict | None:
        keys = self._members(conn, fp)
        rows = conn.all(f"SELECT * FROM ({_CURRENT}) c WHERE table_fp IN {self._in(keys)} ORDER BY id", keys)
        cap = self._cap(conn, fp)
        if not rows and cap is None:  # a cap set and then removed, never released
            return None
        live = [r for r in rows if r["status"] in SPENT]
        both = _usage(live, self._table_delta(conn, fp))
        spent = both["used"]
        known = conn.one("SELECT name FROM book_tables WHERE fingerprint = ?", (fp,))
        return {
            "table_fp": fp,
            "keys": keys,
            "table_name": known["name"] if known and known["name"] else
            next((r["table_name"] for r in rows if r["table_name"]), ""),
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
            "dp_epsilon": both["epsilon"], "not_dp_epsilon": both["not_dp_epsilon"],
            "pure_epsilon": both["pure_epsilon"], "rho": both["rho"], "delta": both["delta"],
            "delta_approx": both["delta_approx"], "epsilon_at_delta": both["epsilon_at_delta"],
        }

    # ------------------------------------------------------------------ the cap

    def set_cap(self, table_fp: str, epsilon, user: str | None = None) -> str:
        """Set (or with ``None`` remove) the cap of the table ``table_fp`` is charged to. A cap below
        what is already spent is allowed: every further release of the table is then refused. The
        change is an entry of its own in the audit trail; what it was is returned ("set", "raised",
        "lowered", "removed" or "unchanged")."""
        e = None if epsilon is None else _positive_epsilon("the budget cap", epsilon)
        with self._conn() as conn, conn.transaction():
            account = self._account(conn, table_fp)
            held = self._cap(conn, account)
            change = ("removed" if e is None else "set" if held is None else "raised" if e > held else
                      "lowered" if e < held else "unchanged")
            if held is None and e is None:
                change = "unchanged"
            conn.execute("INSERT INTO book_caps (table_fp, epsilon, set_at, user_name, change) VALUES (?, ?, ?, ?, ?)",
                         (account, e, now(), _user(user), change))
            return change

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

    def knows(self, table_fp: str) -> bool:
        """True when the book has anything under ``table_fp``: a registration, an entry, a cap or a link."""
        with self._conn() as conn:
            return A.knows(conn, table_fp)

    def legacy_keys(self, prefix: str | None = None) -> bool:
        """Whether the book holds keys of an older kind: ``prefix`` (e.g. ``file-sha256:``), or with None
        unprefixed ones (fingerprints from before content fingerprints)."""
        from dpcore.counting.fingerprint import CONTENT_PREFIX, FILE_PREFIX

        with self._conn() as conn:
            for table, col in (("book_tables", "fingerprint"), ("book_entries", "table_fp"), ("book_caps", "table_fp")):
                if prefix is not None:
                    row = conn.one(f"SELECT 1 AS x FROM {table} WHERE {col} LIKE ? LIMIT 1", (prefix + "%",))
                else:
                    row = conn.one(f"SELECT 1 AS x FROM {table} WHERE {col} NOT LIKE ? AND {col} NOT LIKE ? "
                                   "LIMIT 1", (CONTENT_PREFIX + "%", FILE_PREFIX + "%"))
                if row is not None:
                    return True
        return False

    def charge_to(self, table_fp: str, account_fp: str | None, user: str | None = None, reason: str = "") -> None:
        """Record that releases of ``table_fp`` are charged to the table ``account_fp`` (None: to itself,
        a table of its own). The latest decision holds; earlier ones stay in the log. A link between two
        keys of the same records (:meth:`link_same_content`) is never undone."""
        if account_fp == table_fp:
            account_fp = None
        with self._conn() as conn, conn.transaction():
            latest = conn.one("SELECT reason FROM book_links WHERE table_fp = ? ORDER BY id DESC LIMIT 1", (table_fp,))
            if latest is not None and str(latest["reason"]).startswith(SAME_CONTENT):
                raise OptionError("this table holds the same records as the table it is charged to (an older key "
                                  "of the same content); it stays charged to it")
            if account_fp is not None and self._account(conn, account_fp) == table_fp:
                raise OptionError("a table cannot be charged to a table that is charged to it; pick another table")
            conn.execute("INSERT INTO book_links (table_fp, charged_to, at, user_name, reason) VALUES (?, ?, ?, ?, ?)",
                         (table_fp, account_fp, now(), _user(user), reason[:500]))

    def link_same_content(self, key: str, old_key: str, user: str | None = None, what: str = "") -> bool:
        """Make ``old_key`` (a key an older book gave the same records) and ``key`` one account, for good
        (:func:`dpcore.studio.book_accounts.link_same_content`). Returns True when a link was made."""
        with self._conn() as conn, conn.transaction():
            return A.link_same_content(conn, key, old_key, _user(user), now(), f"{SAME_CONTENT}: "
                                       f"{what or 'an older key of the same records'}")

    def charging_decision(self, table_fp: str) -> dict | None:
        """The latest charging decision about ``table_fp`` (charged_to None: a table of its own), or None."""
        with self._conn() as conn:
            row = conn.one("SELECT * FROM book_links WHERE table_fp = ? ORDER BY id DESC LIMIT 1", (table_fp,))
        return None if row is None else entry_dict(row)

    # ------------------------------------------------------------------ spending

    def _refusal(self, conn, account: str, cost: tuple, neighbours: str, label: str) -> str | None:
        epsilon, delta = cost[0], cost[1]
        label = label[:1].upper() + label[1:]
        notion = A.notion(conn, account)
        if notion is not None and notion != neighbours:
            return notion_refusal(label, notion, neighbours)
        cap = self._cap(conn, account)
        if cap is None:
            return None
        spent = self._spent(conn, account)
        after = self._spent(conn, account, cost)
        if after > cap * (1 + CAP_TOLERANCE):
            remaining = max(0.0, cap - spent)
            pure = delta is None and all(r["delta"] is None for r in self._live(conn, account))
            what = (f"ε = {epsilon:g}" if pure else
                    f"ε = {epsilon:g}{'' if delta is None else f', δ = {delta:g}'}, which would take this table's "
                    f"total to ε = {after:.6g} at δ = {self._table_delta(conn, account):g},")
            return (f"{label} needs {what} but only ε = {remaining:.6g} of this table's budget remains "
                    f"(cap {cap:g}, spent {spent:.6g}). Nothing was released or spent; lower ε, or raise the cap "
                    "if your policy allows it")
        return None

    def check(self, table_fp: str, epsilon, neighbours: str, label: str = "this release",
              delta: float | None = None, delta_approx: float = 0.0) -> None:
        """Raise :class:`BudgetExceeded` (remaining budget named) if a release of ``epsilon``
        (and ``delta``, for an (ε, δ) release; ``delta_approx`` the part of δ it spends outside ρ) would
        not fit. Reads only; :meth:`reserve` repeats the check atomically."""
        e = _positive_epsilon("epsilon", epsilon)
        with self._conn() as conn:
            account = self._account(conn, table_fp)
            msg = self._refusal(conn, account, (*release_costs(e, delta, delta_approx), delta_approx or None),
                                neighbours, label)
        if msg:
            raise BudgetExceeded(msg)

    def reserve(self, table_fp: str, epsilon, method: str, neighbours: str, table_name: str = "",
                delta: float | None = None, *, workspace: str = "", user: str | None = None,
                delta_approx: float = 0.0) -> int:
        """Check the cap and write a pending entry in one transaction; the entry's id.
        Call this BEFORE the release draws any randomness. ``delta``: an (ε, δ) release
        through zCDP (its ρ is the largest within (ε, δ − ``delta_approx``), what its ledger may spend;
        ``delta_approx``: the part of δ it spends outside ρ, :func:`dpcore.api.planned_delta_approx`).
        ``workspace``: the workspace the release is made through ('' for none: the command line
        or the API); ``user``: who makes it. The table's first (ε, δ) release pins its δ."""
        e = _positive_epsilon("epsilon", epsilon)
        approx = float(delta_approx or 0.0) if delta is not None else 0.0
        _, d, rho = release_costs(e, delta, approx)
        who, at = _user(user), now()
        with self._conn() as conn, conn.transaction():
            account = self._account(conn, table_fp)
            msg = self._refusal(conn, account, (e, d, None if d is None else rho, approx or None), neighbours,
                                f"a {method} release")
            if msg:
                raise BudgetExceeded(msg)
            if d is not None:
                A.pin_delta(conn, account, who, at)
            entry_id = conn.one(
                "INSERT INTO book_entries (table_fp, released_fp, table_name, epsilon, delta, rho, delta_approx, "
                "method, neighbours, workspace, user_name, reserved_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "RETURNING id",
                (account, table_fp, table_name, e, d, None if d is None else rho, approx or None, method, neighbours,
                 workspace, who, at))["id"]
            self._event(conn, entry_id, PENDING, who, at=at)
            return int(entry_id)

    @staticmethod
    def _event(conn, entry_id: int, status: str, user: str, *, at: str | None = None, epsilon: float | None = None,
               rho: float | None = None, dp: bool | None = None, sha: str | None = None, note: str = "",
               records: float | None = None) -> None:
        conn.execute("INSERT INTO book_events (entry_id, status, at, user_name, epsilon, rho, dp, manifest_sha256, "
                     "note, records) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     (int(entry_id), status, at or now(), user, epsilon, rho, None if dp is None else int(bool(dp)),
                      sha, note[:500], records))

    def _pending(self, conn, entry_id: int) -> dict | None:
        row = conn.one(f"SELECT status, epsilon, rho FROM ({_CURRENT}) c WHERE id = ?", (int(entry_id),))
        return row if row is not None and row["status"] == PENDING else None

    def complete(self, entry_id: int, manifest_sha: str, dp: bool, epsilon_spent: float | None = None,
                 user: str | None = None, rho_spent: float | None = None, records: float | None = None) -> None:
        """Record that a pending entry completed. What the entry counts never goes down (conservative): a
        release that spent more than was reserved (ε, or ρ under zCDP) is counted at what it spent; under
        zCDP the entry then holds exactly the ρ the release's manifest states. ``records``: the record count
        the release published (noisy under add/remove; public either way)."""
        with self._conn() as conn, conn.transaction():
            row = self._pending(conn, entry_id)
            if row is None:
                raise OptionError(f"budget book entry {entry_id} is not pending; it cannot be completed")
            eps = max(float(row["epsilon"]), float(epsilon_spent or 0.0))
            rho = None
            # the ρ the release's ledger spent, as its manifest states it: its exact sum of shares, which may
            # differ from the reservation in the last bits only; a release that spent less is counted as reserved
            if row["rho"] is not None and rho_spent is not None and \
                    float(rho_spent) >= float(row["rho"]) * (1 - CAP_TOLERANCE):
                rho = float(rho_spent)
            self._event(conn, entry_id, COMPLETE, _user(user), epsilon=eps, rho=rho, dp=dp, sha=manifest_sha,
                        records=records if dp else None)

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
               *, workspace: str = "", user: str | None = None, delta_approx: float = 0.0):
        """Reserve, run the release, store it, commit the record; then ``(entry_id, release)``.

        ``run()`` returns an object with ``manifest_json()``, ``dp`` and ``ledger`` (a
        :class:`dpcore.Release`). ``store(entry_id, release)`` may save its outputs
        before the record is committed. If ``run`` raises, the entry is aborted (no output
        exists); if anything after it raises, the entry stays pending and counts as spent.
        """
        entry_id = self.reserve(table_fp, epsilon, method, neighbours, table_name, delta, workspace=workspace,
                                user=user, delta_approx=delta_approx)
        try:
            release = run()
        except BaseException as exc:
            self.abort(entry_id, f"the release raised {type(exc).__name__}: {exc}", user=user)
            raise
        # from here on ε is spent: failures leave the pending entry, which counts
        if store is not None:
            store(entry_id, release)
        self.complete_release(entry_id, release, user=user)
        return entry_id, release

    def complete_release(self, entry_id: int, release, user: str | None = None) -> None:
        """:meth:`complete` with what ``release`` (a :class:`dpcore.Release`) spent, from its ledger."""
        ledger, published = release.ledger, (getattr(release, "record_count", None) or {}).get("value")
        rho = getattr(ledger, "rho", None) if getattr(ledger, "delta", None) is not None else None
        self.complete(entry_id, manifest_sha256(release.manifest_json()), release.dp, ledger.epsilon, user=user,
                      rho_spent=rho, records=None if published is None else float(published))

    def public_record_count(self, table_fp: str) -> float | None:
        """The record count the table's latest DP release published (noisy under add/remove): public."""
        with self._conn() as conn:
            return A.published_records(conn, self._account(conn, table_fp))

    # ------------------------------------------------------------------ the audit trail (dpcore.studio.book_export)

    def export_rows(self, table_fp: str | None = None) -> list[dict]:
        """The book as its audit trail: one row per status event (:data:`EXPORT_COLUMNS`); all of them, or
        those of the table ``table_fp`` is charged to (:func:`dpcore.studio.book_export.export_rows`)."""
        from dpcore.studio.book_export import export_rows

        return export_rows(self, table_fp)

    def export_text(self, fmt: str, table_fp: str | None = None) -> str:
        """The audit trail as ``"csv"`` or ``"json"`` (:func:`dpcore.studio.book_export.export_text`)."""
        from dpcore.studio.book_export import export_text

        return export_text(self, fmt, table_fp)

    def export(self, path) -> Path:
        """Write the audit trail to ``path``: CSV or JSON by its suffix (.csv, .json)."""
        from dpcore.studio.book_export import export

        return export(self, path)

    # ------------------------------------------------------------------ migrations

    def migrated(self, name: str) -> bool:
        """Whether the one-time migration ``name`` ran (recorded in ``book_migrations``)."""
        with self._conn() as conn:
            return conn.one("SELECT 1 AS x FROM book_migrations WHERE name = ? LIMIT 1", (name,)) is not None

    def record_migration(self, name: str, note: str = "") -> None:
        with self._conn() as conn, conn.transaction():
            conn.execute("INSERT INTO book_migrations (name, at, note) VALUES (?, ?, ?)", (name, now(), note[:2000]))
