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
events and the logs of caps, settings and table links (docs/privacy-model.md, "The budget book").
"""
from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dpcore.errors import InputError

#: How long a writer waits for another's transaction before giving up (seconds).
BUSY_TIMEOUT_S = 30.0
#: The key of the book's advisory lock on PostgreSQL (any fixed 64-bit number; "dpcoreBK").
PG_LOCK_KEY = 0x6470636F72654B
#: The statuses an entry's events may carry.
STATUSES = ("pending", "complete", "aborted", "failed")
#: Tables that are only ever appended to.
APPEND_ONLY = ("book_entries", "book_events", "book_caps", "book_settings_log", "book_links")


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
            dp               INTEGER,
            manifest_sha256  TEXT,
            note             TEXT NOT NULL DEFAULT ''
        )""",
        "CREATE INDEX IF NOT EXISTS book_events_by_entry ON book_events (entry_id, id)",
        f"""CREATE TABLE IF NOT EXISTS book_caps (
            id        {id_col},
            table_fp  TEXT NOT NULL,
            epsilon   {real} CHECK (epsilon IS NULL OR epsilon > 0),
            set_at    TEXT NOT NULL,
            user_name TEXT NOT NULL DEFAULT ''
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
       e.user_name, e.reserved_at, e.delta, e.rho, e.origin,
       COALESCE(v.epsilon, e.epsilon) AS epsilon, v.status, v.dp, v.manifest_sha256, v.note,
       CASE WHEN v.status = 'pending' THEN NULL ELSE v.at END AS completed_at
  FROM book_entries e
  JOIN book_events v ON v.id = (SELECT MAX(x.id) FROM book_events x WHERE x.entry_id = e.id)"""


class Connection:
    """One connection to the book's store: ``execute(sql, params)`` with ``?`` placeholders,
    rows read by column name, and :meth:`transaction` (the store's write lock)."""

    def __init__(self, raw, postgres: bool):
        self.raw, self.postgres = raw, postgres

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
                self.raw.execute("SELECT pg_advisory_xact_lock(%s)", (PG_LOCK_KEY,))
                yield self
            return
        with sqlite_transaction(self.raw):
            yield self

    def close(self) -> None:
        self.raw.close()


class Store:
    """The book's storage: a SQLite file (``location`` a path) or PostgreSQL (``location`` a
    ``postgresql://`` URL). :meth:`connect` opens a connection; the schema is created on first use."""

    def __init__(self, location):
        text = str(location)
        self.postgres = text.startswith(("postgresql://", "postgres://"))
        self.location = text if self.postgres else Path(location)
        with self.connect() as conn, conn.transaction():
            for stmt in self._schema():
                conn.execute(stmt)

    def describe(self) -> str:
        """Where the book is, for messages (a PostgreSQL URL without its password)."""
        if not self.postgres:
            return str(self.location)
        from urllib.parse import urlsplit

        u = urlsplit(self.location)
        host = u.hostname or "localhost"
        return f"PostgreSQL {host}{'' if u.port is None else f':{u.port}'}{u.path}"

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
        conn = self._open()
        try:
            yield conn
        finally:
            conn.close()

    def _open(self) -> Connection:
        if self.postgres:
            try:
                import psycopg
                from psycopg.rows import dict_row
            except ImportError:  # pragma: no cover - psycopg is pinned in requirements.txt
                raise InputError("DPSTUDIO_DATABASE_URL names PostgreSQL but psycopg is not installed; "
                                 "pip install -r requirements.txt") from None
            try:
                raw = psycopg.connect(self.location, autocommit=True, row_factory=dict_row)
            except psycopg.OperationalError as exc:
                raise InputError(f"cannot reach the budget book at {self.describe()} "
                                 f"({str(exc).strip().splitlines()[0]}); check DPSTUDIO_DATABASE_URL") from None
            return Connection(raw, postgres=True)
        return Connection(sqlite_connect(self.location), postgres=False)


def sqlite_connect(db_path) -> sqlite3.Connection:
    """A SQLite connection in autocommit mode (transactions are explicit), WAL journal, and a
    busy timeout so concurrent writers wait for each other instead of failing."""
    conn = sqlite3.connect(str(db_path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")  # a committed record survives a power cut
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


@contextmanager
def sqlite_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` on a SQLite connection: the write lock is taken up front,
    so a read-check-write inside is never interleaved with another writer's."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def current_entries_sql() -> str:
    """SELECT of every entry with its current status (the latest of its events)."""
    return _CURRENT
