"""Where the budget book is stored: one SQLite file (the default) or a PostgreSQL database.

The book's logic (:mod:`dpcore.studio.budget_book`) writes one SQL dialect through a
:class:`Store`: ``?`` placeholders, ``RETURNING id``, ``ON CONFLICT``, rows read by column
name. A store hands out short-lived connections and one kind of write transaction, in
which the read-check-write of a reservation is never interleaved with another writer's:

* SQLite: ``BEGIN IMMEDIATE`` takes the database's write lock up front (WAL journal);
* PostgreSQL: every write transaction first takes one transaction-scoped advisory lock of
  the book (``pg_advisory_xact_lock``), so writers run one after the other, as on SQLite,
  whichever host they run on.

The book is append-only: triggers refuse any UPDATE or DELETE of its entries, their status
events and the logs of caps, settings, table links and migrations (docs/privacy-model.md, "The
budget book"). A book written by an earlier version gets the columns it lacks, added once.

Every failure of the store is one line that names the book and what to do
(:class:`dpcore.errors.InputError`): a damaged, truncated, read-only or missing file, a folder that
cannot be written, a database URL that cannot be reached or read. A book locked by another
writer is waited for (a message after :data:`WAIT_NOTICE_S` seconds, through :data:`notices`), then
refused in one line. No message ever holds a password: URLs are written by :func:`redact_url`.
"""
from __future__ import annotations

import re
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from dpcore.errors import InputError

#: How long a writer waits for another's transaction before giving up (seconds).
BUSY_TIMEOUT_S = 30.0
#: After this long waiting for the book's lock, say so (one line through :data:`notices`).
WAIT_NOTICE_S = 3.0


def _to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


#: Where the store's notices go (a locked book being waited for): standard error by default; the app
#: may point it elsewhere. One argument: the line to show.
notices: list[Callable[[str], None]] = [_to_stderr]
#: The key of the book's advisory lock on PostgreSQL (any fixed 64-bit number; "dpcoreBK").
PG_LOCK_KEY = 0x6470636F72654B
#: The statuses an entry's events may carry.
STATUSES = ("pending", "complete", "aborted", "failed")
#: Tables that are only ever appended to.
APPEND_ONLY = ("book_entries", "book_events", "book_caps", "book_settings_log", "book_links", "book_migrations")
#: Columns added since the first release of the event log: (table, column, SQL type with {real}), added to an
#: older book once, when it is opened.
ADDED_COLUMNS = (("book_entries", "delta_approx", "{real}"), ("book_events", "rho", "{real}"),
                 ("book_caps", "change", "TEXT NOT NULL DEFAULT ''"), ("book_events", "records", "{real}"))


def _tables(id_col: str, real: str) -> list[str]:
    statuses = ", ".join(f"'{s}'" for s in STATUSES)
    return [
        f"""CREATE TABLE IF NOT EXISTS book_entries (
            id           {id_col},
            table_fp     TEXT NOT NULL,
            released_fp  TEXT NOT NULL DEFAULT '',
            table_name   TEXT NOT NULL DEFAULT '',
            epsilon      {real} NOT NULL CHECK (epsilon > 0),
            delta        {real},
            rho          {real},
            delta_approx {real},
            method       TEXT NOT NULL,
            neighbours   TEXT NOT NULL,
            workspace    TEXT NOT NULL DEFAULT '',
            user_name    TEXT NOT NULL DEFAULT '',
            reserved_at  TEXT NOT NULL,
            origin       TEXT UNIQUE
        )""",
        "CREATE INDEX IF NOT EXISTS book_entries_by_table ON book_entries (table_fp)",
        f"""CREATE TABLE IF NOT EXISTS book_events (
            id               {id_col},
            entry_id         BIGINT NOT NULL REFERENCES book_entries (id),
            status           TEXT NOT NULL CHECK (status IN ({statuses})),
            at               TEXT NOT NULL,
            user_name        TEXT NOT NULL DEFAULT '',
            epsilon          {real},
            rho              {real},
            dp               INTEGER,
            manifest_sha256  TEXT,
            note             TEXT NOT NULL DEFAULT '',
            records          {real}
        )""",
        "CREATE INDEX IF NOT EXISTS book_events_by_entry ON book_events (entry_id, id)",
        f"""CREATE TABLE IF NOT EXISTS book_caps (
            id        {id_col},
            table_fp  TEXT NOT NULL,
            epsilon   {real} CHECK (epsilon IS NULL OR epsilon > 0),
            set_at    TEXT NOT NULL,
            user_name TEXT NOT NULL DEFAULT '',
            change    TEXT NOT NULL DEFAULT ''
        )""",
        f"""CREATE TABLE IF NOT EXISTS book_settings_log (
            id        {id_col},
            key       TEXT NOT NULL,
            value     {real} NOT NULL,
            set_at    TEXT NOT NULL,
            user_name TEXT NOT NULL DEFAULT ''
        )""",
        f"""CREATE TABLE IF NOT EXISTS book_links (
            id         {id_col},
            table_fp   TEXT NOT NULL,
            charged_to TEXT,
            at         TEXT NOT NULL,
            user_name  TEXT NOT NULL DEFAULT '',
            reason     TEXT NOT NULL DEFAULT ''
        )""",
        f"""CREATE TABLE IF NOT EXISTS book_migrations (
            id    {id_col},
            name  TEXT NOT NULL,
            at    TEXT NOT NULL,
            note  TEXT NOT NULL DEFAULT ''
        )""",
        """CREATE TABLE IF NOT EXISTS book_tables (
            fingerprint  TEXT PRIMARY KEY,
            name         TEXT NOT NULL,
            n_rows       BIGINT NOT NULL,
            n_cols       INTEGER NOT NULL,
            column_fps   TEXT NOT NULL,
            added_at     TEXT NOT NULL
        )""",
    ]


#: An entry with its latest status event (the entry's current state; its history is book_events).
_CURRENT = """SELECT e.id, e.table_fp, e.released_fp, e.table_name, e.method, e.neighbours, e.workspace,
       e.user_name, e.reserved_at, e.delta, COALESCE(v.rho, e.rho) AS rho, e.delta_approx, e.origin,
       COALESCE(v.epsilon, e.epsilon) AS epsilon, v.status, v.dp, v.manifest_sha256, v.note,
       CASE WHEN v.status = 'pending' THEN NULL ELSE v.at END AS completed_at
  FROM book_entries e
  JOIN book_events v ON v.id = (SELECT MAX(x.id) FROM book_events x WHERE x.entry_id = e.id)"""


class Connection:
    """One connection to the book's store: ``execute(sql, params)`` with ``?`` placeholders,
    rows read by column name, and :meth:`transaction` (the store's write lock)."""

    def __init__(self, raw, postgres: bool, where: str = "the budget book"):
        self.raw, self.postgres, self.where = raw, postgres, where

    def execute(self, sql: str, params: tuple | list = ()):
        if self.postgres:  # psycopg's placeholders; no parameters: the text is sent as it is (a '%' stays)
            return self.raw.execute(sql.replace("?", "%s"), tuple(params)) if params else self.raw.execute(sql)
        return self.raw.execute(sql, tuple(params))

    def all(self, sql: str, params: tuple | list = ()) -> list[dict]:
        return [dict(r) for r in self.execute(sql, params).fetchall()]

    def one(self, sql: str, params: tuple | list = ()) -> dict | None:
        row = self.execute(sql, params).fetchone()
        return None if row is None else dict(row)

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A write transaction holding the book's lock from its first statement to its commit."""
        if self.postgres:
            with self.raw.transaction():
                with _waiting(self.where):
                    self.raw.execute("SELECT pg_advisory_xact_lock(%s)", (PG_LOCK_KEY,))
                yield self
            return
        with sqlite_transaction(self.raw, self.where):
            yield self

    def close(self) -> None:
        self.raw.close()


def redact_url(text: str, url: str | None = None) -> str:
    """``text`` with every password of a ``scheme://user:password@host`` URL (and ``password=`` settings)
    replaced by ``***``; ``url``'s own password, if any, wherever it stands alone in ``text``."""
    out = str(text)
    if url:
        m = re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://[^:@/]*:([^@]*)@", str(url))
        if m and m.group(1):
            from urllib.parse import unquote

            for secret in {m.group(1), unquote(m.group(1))}:  # as written, and percent-decoded as libpq reads it
                out = out.replace(secret, "***")
    out = re.sub(r"([A-Za-z][A-Za-z0-9+.-]*://[^:@/\s]*:)[^@\s]*@", r"\1***@", out)
    return re.sub(r"(password\s*=\s*)('[^']*'|\S+)", r"\1***", out, flags=re.IGNORECASE)


def describe_location(location) -> str:
    """Where a book is, for messages: a file path, or 'PostgreSQL host:port/db' (never the password)."""
    text = str(location)
    if not text.startswith(("postgresql://", "postgres://")):
        return text
    from urllib.parse import urlsplit

    try:
        u = urlsplit(text)
        host = u.hostname or "localhost"
        return f"PostgreSQL {host}{'' if u.port is None else f':{u.port}'}{u.path}"
    except ValueError:  # a port that is not a number, brackets that do not close: say where it came from
        return "PostgreSQL (the URL in DPSTUDIO_DATABASE_URL)"


def sqlite_problem(exc: sqlite3.Error, where: str) -> InputError:
    """One line for a SQLite failure on the book (or a workspace's file) ``where``: what is wrong and
    what to do. Nothing is half-written: SQLite rolls the transaction back."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    low = text.lower()
    if "locked" in low or "busy" in low:
        return InputError(f"{where} is locked by another program (waited {BUSY_TIMEOUT_S:g} s); nothing was "
                          "released or spent: try again when it has finished")
    if "readonly" in low or "read-only" in low:
        return InputError(f"{where} is read-only; give this user write access to it and its folder, or point "
                          "DPSTUDIO_WORKSPACE at a writable folder")
    if "not a database" in low or "malformed" in low or "corrupt" in low:
        return InputError(f"{where} is damaged (not a readable SQLite database: {text}); restore it from a backup, "
                          "or move it aside to start a new book (the releases it holds would then be forgotten)")
    if "unable to open" in low or "cannot open" in low:
        return InputError(f"cannot open {where} (its folder is missing or cannot be written); point "
                          "DPSTUDIO_WORKSPACE at a writable folder")
    if "disk" in low or "full" in low or "i/o" in low:
        return InputError(f"cannot write {where} ({text}); free disk space or point DPSTUDIO_WORKSPACE elsewhere")
    return InputError(f"{where}: SQLite stopped ({text}); check the file, or restore it from a backup")


def postgres_problem(exc: Exception, url: str) -> InputError:
    """One line for a PostgreSQL failure, the password never in it."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return InputError(f"the budget book at {describe_location(url)}: {redact_url(first, url)[:300]}; check "
                      "DPSTUDIO_DATABASE_URL (postgresql://user:password@host:port/database) and the server")


@contextmanager
def _waiting(where: str) -> Iterator[None]:
    """Say once, after :data:`WAIT_NOTICE_S` seconds, that the book's lock is being waited for."""
    timer = threading.Timer(WAIT_NOTICE_S, lambda: [n(f"waiting for {where}: another release holds it (up to "
                                                      f"{BUSY_TIMEOUT_S:g} s)…") for n in notices])
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


class Store:
    """The book's storage: a SQLite file (``location`` a path) or PostgreSQL (``location`` a
    ``postgresql://`` URL). :meth:`connect` opens a connection; the schema is created on first use,
    and the columns an older book lacks are added (:data:`ADDED_COLUMNS`)."""

    def __init__(self, location):
        text = str(location)
        self.postgres = text.startswith(("postgresql://", "postgres://"))
        self.location = text if self.postgres else Path(location)
        with self.connect() as conn, conn.transaction():
            for stmt in self._schema():
                conn.execute(stmt)
            self._add_columns(conn)

    def describe(self) -> str:
        """Where the book is, for messages (a PostgreSQL URL without its password)."""
        return describe_location(self.location)

    def _real(self) -> str:
        return "DOUBLE PRECISION" if self.postgres else "REAL"

    def _add_columns(self, conn: Connection) -> None:
        for table, column, typ in ADDED_COLUMNS:
            if column not in self._columns(conn, table):
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {typ.format(real=self._real())}")

    def _columns(self, conn: Connection, table: str) -> set[str]:
        if self.postgres:
            return {r["column_name"] for r in conn.all(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
                "AND table_schema = current_schema()", (table,))}
        return {r["name"] for r in conn.all(f"PRAGMA table_info({table})")}

    def _schema(self) -> list[str]:
        if self.postgres:
            stmts = _tables("BIGSERIAL PRIMARY KEY", "DOUBLE PRECISION")
            stmts.append("""CREATE OR REPLACE FUNCTION book_append_only() RETURNS trigger AS $f$
                BEGIN RAISE EXCEPTION 'the budget book is append-only: % of %', TG_OP, TG_TABLE_NAME; END
                $f$ LANGUAGE plpgsql""")
            for t in APPEND_ONLY:  # created once (a DO block: no lock on the tables when they exist)
                stmts.append(f"""DO $d$ BEGIN
                    IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = '{t}_append_only') THEN
                        CREATE TRIGGER {t}_append_only BEFORE UPDATE OR DELETE ON {t}
                        FOR EACH ROW EXECUTE FUNCTION book_append_only();
                    END IF; END $d$""")
            return stmts
        stmts = _tables("INTEGER PRIMARY KEY AUTOINCREMENT", "REAL")
        for t in APPEND_ONLY:
            for op in ("UPDATE", "DELETE"):
                stmts.append(f"CREATE TRIGGER IF NOT EXISTS {t}_no_{op.lower()} BEFORE {op} ON {t} BEGIN "
                             f"SELECT RAISE(ABORT, 'the budget book is append-only: {op} of {t}'); END")
        return stmts

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        """A connection; every failure of the store inside the block becomes one line (module docstring).
        The book's own refusals (append-only) pass through as they are."""
        where = f"the budget book {self.describe()}"
        conn = self._open(where)
        try:
            yield conn
        except sqlite3.IntegrityError:
            raise  # the append-only triggers: a program's mistake, kept as it is
        except sqlite3.Error as exc:
            raise sqlite_problem(exc, where) from None
        except Exception as exc:
            if self.postgres and _is_psycopg_error(exc) and not _is_integrity(exc):
                raise postgres_problem(exc, str(self.location)) from None
            raise
        finally:
            try:
                conn.close()
            except Exception:  # a connection that broke cannot be closed twice; nothing to keep
                pass

    def _open(self, where: str) -> Connection:
        if self.postgres:
            try:
                import psycopg
                from psycopg.rows import dict_row
            except ImportError:  # pragma: no cover - psycopg is pinned in requirements.txt
                raise InputError("DPSTUDIO_DATABASE_URL names PostgreSQL but psycopg is not installed; "
                                 "pip install -r requirements.txt") from None
            try:
                raw = psycopg.connect(str(self.location), autocommit=True, row_factory=dict_row)
            except psycopg.Error as exc:
                raise postgres_problem(exc, str(self.location)) from None
            return Connection(raw, postgres=True, where=where)
        try:
            return Connection(sqlite_connect(self.location), postgres=False, where=where)
        except sqlite3.Error as exc:
            raise sqlite_problem(exc, where) from None


def _is_psycopg_error(exc: Exception) -> bool:
    return type(exc).__module__.startswith("psycopg")


def _is_integrity(exc: Exception) -> bool:
    return type(exc).__name__ in ("IntegrityError", "RaiseException")


def sqlite_connect(db_path) -> sqlite3.Connection:
    """A SQLite connection in autocommit mode (transactions are explicit), WAL journal, and a
    busy timeout so concurrent writers wait for each other instead of failing."""
    conn = sqlite3.connect(str(db_path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
    try:
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")  # a committed record survives a power cut
        conn.execute("PRAGMA foreign_keys = ON")
    except BaseException:
        conn.close()
        raise
    return conn


@contextmanager
def sqlite_transaction(conn: sqlite3.Connection, where: str = "the budget book") -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` on a SQLite connection: the write lock is taken up front,
    so a read-check-write inside is never interleaved with another writer's. A lock held by another
    writer is waited for (said once after :data:`WAIT_NOTICE_S` seconds)."""
    with _waiting(where):
        conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def now() -> str:
    """The time a book row is written: UTC, to the second, ISO 8601."""
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds")


def entry_dict(row: dict) -> dict:
    """A row as the book hands it out: ``user`` (stored as user_name), the rest as stored."""
    out = dict(row)
    out["user"] = out.pop("user_name", "")
    return out


def current_entries_sql() -> str:
    """SELECT of every entry with its current status (the latest of its events)."""
    return _CURRENT
