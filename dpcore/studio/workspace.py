"""A curator's workspace on disk: the tables, confirmed domains, saved designs and every
release with its manifest, in one SQLite file per workspace folder; and the installation's
one budget book beside them.

Layout of the root folder ``$DPSTUDIO_WORKSPACE`` (default ``./.dpstudio``)::

    book.sqlite               the budget book of the installation (unless DPSTUDIO_DATABASE_URL
                              names a PostgreSQL database)
    <id>/workspace.sqlite     a workspace's tables, domains, designs, state, stored releases
    <id>/tables/<fingerprint>.parquet   stored copies of uploaded tables
    <id>/releases/<entry>/    synthetic_<i>.parquet and manifest.json of each release

The app keeps many workspaces under the root, one sub-folder per workspace id; the CLI
takes a workspace folder with ``--workspace``. Nothing here is released: a workspace holds
raw data (stored copies) and is for the curator only.

Releases go through the installation's budget book (:mod:`dpcore.studio.budget_book`,
:func:`installation_book`): the ε of every release of a table, through any workspace, the
command line or the API, adds up against the table's cap by sequential composition
(docs/privacy-model.md, "The budget book"), and a release is handed out only after its
record is committed. Books that workspaces kept in their own file before are merged into it
(:mod:`dpcore.studio.book_merge`).
"""
from __future__ import annotations

import json
import math
import os
import re
import secrets
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from dpcore.errors import InputError, OptionError
from dpcore.studio.budget_book import BudgetBook, connect, now, transaction

#: Environment variable naming the root folder of the app's workspaces.
ENV_VAR = "DPSTUDIO_WORKSPACE"
#: Environment variable naming a PostgreSQL database for the budget book (``postgresql://…``).
DATABASE_ENV = "DPSTUDIO_DATABASE_URL"
#: The budget book's file under the root when it is kept in SQLite (the default).
BOOK_NAME = "book.sqlite"
#: Default root folder (relative to the working directory; git-ignored).
DEFAULT_ROOT = ".dpstudio"
DB_NAME = "workspace.sqlite"
#: Workspace ids: letters, digits, "-" and "_" (they name a folder and sit in a URL).
ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
DESIGN_FORMAT = "dpstudio-design/1"

SCHEMA = """
CREATE TABLE IF NOT EXISTS tables (
    fingerprint TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('file', 'copy')),
    path        TEXT NOT NULL,
    n_rows      INTEGER NOT NULL,
    n_cols      INTEGER NOT NULL,
    added_at    TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS domains (
    table_fp     TEXT PRIMARY KEY REFERENCES tables (fingerprint),
    domain_json  TEXT NOT NULL,
    confirmed_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS designs (
    name      TEXT PRIMARY KEY,
    design    TEXT NOT NULL,
    saved_at  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS release_files (
    entry_id  INTEGER PRIMARY KEY,
    folder    TEXT NOT NULL,
    manifest  TEXT NOT NULL,
    n_sets    INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS state (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
"""


def root_folder() -> Path:
    """The folder holding the app's workspaces: ``$DPSTUDIO_WORKSPACE`` or ``./.dpstudio``."""
    return Path(os.environ.get(ENV_VAR) or DEFAULT_ROOT).expanduser()


def book_location(root=None) -> str | Path:
    """Where the installation's book is: ``$DPSTUDIO_DATABASE_URL`` if set, else
    ``<root>/book.sqlite`` (root: ``$DPSTUDIO_WORKSPACE`` or ``./.dpstudio``)."""
    url = os.environ.get(DATABASE_ENV, "").strip()
    if url:
        if not url.startswith(("postgresql://", "postgres://")):
            raise OptionError(f"{DATABASE_ENV}={url.split(':')[0]}:…: give a postgresql:// URL, or unset it for the "
                              f"SQLite book under {ENV_VAR}")
        return url
    return Path(root if root is not None else root_folder()).expanduser() / BOOK_NAME


def installation_book(root=None) -> BudgetBook:
    """The installation's one budget book (:func:`book_location`), with the books that workspaces
    under ``root`` kept in their own file merged into it (idempotent; no entry lost)."""
    from dpcore.studio.book_merge import merge_workspace_books

    root = Path(root if root is not None else root_folder()).expanduser()
    location = book_location(root)
    if isinstance(location, Path):
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"the budget book's folder '{root}': cannot create it ({exc.strerror}); set {ENV_VAR} "
                             "to a writable folder") from None
    book = BudgetBook(location)
    merge_workspace_books(book, root)
    return book


def check_output_path(path, option: str, root=None) -> Path:
    """Refuse, in one line naming ``option``, an output path that is, or is inside, the budget book's store
    (its SQLite file with the files SQLite keeps beside it, or the root folder itself) or a workspace's own
    files (any folder holding a ``workspace.sqlite``): an output there could overwrite the record of every
    release. Nothing is written; the path is returned."""
    p = Path(path).expanduser().resolve()
    root = Path(root if root is not None else root_folder()).expanduser().resolve()
    book = root / BOOK_NAME
    if p == root or p in {book, *(book.with_name(book.name + x) for x in ("-wal", "-shm", "-journal"))}:
        what = "the folder of the budget book" if p == root else "the budget book's own file"
        raise InputError(f"{option} '{path}' is {what} ({root}): an output there could overwrite the record of "
                         "every release; choose a path outside it")
    for folder in (p, *p.parents):
        if (folder / DB_NAME).is_file():
            raise InputError(f"{option} '{path}' is inside the workspace {folder}: an output there could overwrite "
                             "its stored releases and its record in the budget book; choose a path outside it")
    return Path(path)


def new_workspace_id() -> str:
    """A fresh random id (72 bits): hard to guess, so one id never stumbles on another's data."""
    return secrets.token_urlsafe(9)


def check_workspace_id(ws_id) -> str:
    if not isinstance(ws_id, str) or not ID_PATTERN.fullmatch(ws_id):
        raise OptionError(f"workspace id {ws_id!r} is not valid: use 1 to 64 letters, digits, '-' or '_'")
    return ws_id


def table_fingerprint(df: pd.DataFrame) -> str:
    """The budget book's key of a table in memory: its content fingerprint
    (:mod:`dpcore.counting.fingerprint`). Re-saving the same records in another row or column order
    or another file format gives the same key, and a file released on DuckDB or Spark gets it too
    (:func:`dpcore.counting.duckdb_engine.fingerprint`), so the book charges them as one table."""
    from dpcore.counting.fingerprint import frame_fingerprint

    return frame_fingerprint(df).key


#: the prefix of a file's key in books written before content fingerprints
FILE_FINGERPRINT = "file-sha256:"


def file_fingerprint(path) -> str:
    """SHA-256 of a file's bytes (``file-sha256:…``): how books before content fingerprints keyed a file
    released on an engine. Only used to find such a book's account, and to check that a file a workspace
    refers to by that key has not changed."""
    from dpcore.counting.fingerprint import file_sha256

    key = file_sha256(path)
    if not key:
        raise InputError(f"cannot read '{path}' to fingerprint it for the budget book")
    return key


def _key_of(df: pd.DataFrame, like: str) -> str:
    """The key of ``df`` of the same kind as ``like`` (a content fingerprint, or an older book's)."""
    from dpcore.counting.fingerprint import CONTENT_PREFIX, legacy_table_fingerprint

    return table_fingerprint(df) if like.startswith(CONTENT_PREFIX) else legacy_table_fingerprint(df)


@dataclass(frozen=True)
class TableRecord:
    """A table known to the workspace: a reference to its file, or a stored copy."""

    fingerprint: str
    name: str
    kind: str  # "file" (a reference) or "copy" (stored in the workspace)
    path: str
    n_rows: int
    n_cols: int
    added_at: str


@dataclass
class LedgerRecord:
    """The ledger of a stored release, as its manifest has it (read-only)."""

    data: dict

    @property
    def epsilon(self) -> float:
        return float(self.data.get("epsilon_total", 0.0))

    def to_dict(self) -> dict:
        return self.data


@dataclass
class StoredRelease:
    """A release read back from the workspace: its published manifest and its sets.

    Offers what the app shows of a :class:`dpcore.Release` (``sets``, ``dp``,
    ``dp_reason``, ``method``, ``epsilon``, ``ledger``, ``manifest_json()``); the seed
    was never stored, so there is no private manifest.
    """

    entry_id: int
    manifest_text: str
    sets: list = field(default_factory=list)

    @property
    def manifest_dict(self) -> dict:
        return json.loads(self.manifest_text)

    def manifest(self, private: bool = False) -> dict:
        if private:
            raise OptionError("a stored release keeps only its published manifest (the seed is never stored)")
        return self.manifest_dict

    def manifest_json(self, private: bool = False) -> str:
        self.manifest(private)
        return self.manifest_text

    @property
    def method(self) -> str:
        return self.manifest_dict["method"]

    @property
    def epsilon(self) -> float:
        return float(self.manifest_dict["epsilon"])

    @property
    def dp(self) -> bool:
        return bool(self.manifest_dict["dp"])

    @property
    def dp_reason(self) -> str:
        return self.manifest_dict["dp_reason"]

    @property
    def ledger(self) -> LedgerRecord:
        return LedgerRecord(self.manifest_dict["ledger"])

    @property
    def record_count(self) -> dict:
        return self.manifest_dict.get("record_count", {})


class Workspace:
    """One workspace folder. Safe to open from several threads or processes at once:
    every operation uses its own short SQLite transaction.

    ``book``: the budget book its releases are charged to (default: :func:`installation_book`);
    ``user``: who works in it (the logged-in identity; None: the local OS user), named in every
    book entry it writes."""

    def __init__(self, folder, book: BudgetBook | None = None, user: str | None = None):
        self.folder = Path(folder).expanduser()
        if self.folder.exists() and not self.folder.is_dir():
            raise InputError(f"workspace folder '{self.folder}' is a file, not a folder; set {ENV_VAR} or "
                             "--workspace to a folder (it is created if missing)")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            (self.folder / "tables").mkdir(exist_ok=True)
            (self.folder / "releases").mkdir(exist_ok=True)
        except OSError as exc:
            raise InputError(f"workspace folder '{self.folder}': cannot create it ({exc.strerror}); "
                             f"set {ENV_VAR} or --workspace to a writable folder") from None
        self.db_path = self.folder / DB_NAME
        conn = connect(self.db_path)
        try:
            conn.executescript(SCHEMA)
        finally:
            conn.close()
        self.user = user
        self.book = book if book is not None else installation_book()
        from dpcore.studio.book_merge import merge_workspace_file

        merge_workspace_file(self.book, self.folder)  # its own book of before, if any (a folder outside the root)

    @classmethod
    def in_root(cls, ws_id: str, root=None, user: str | None = None, book: BudgetBook | None = None) -> Workspace:
        """The workspace ``ws_id`` under the app's root folder (created if new), charging the
        root's book (:func:`installation_book`)."""
        root = Path(root if root is not None else root_folder())
        folder = root / check_workspace_id(ws_id)
        return cls(folder, book=book if book is not None else installation_book(root), user=user)

    @property
    def id(self) -> str:
        return self.folder.name

    def _conn(self):
        return _Closing(connect(self.db_path))

    # ------------------------------------------------------------------ tables

    def add_table(self, df: pd.DataFrame, name: str, path=None, fingerprint: str | None = None) -> TableRecord:
        """Register a table: a reference to ``path`` if given (a file that stays where it
        is), else a stored copy inside the workspace (uploads). Idempotent per fingerprint."""
        from dpcore.counting.fingerprint import frame_fingerprint

        tfp = frame_fingerprint(df) if fingerprint is None else None
        fp = tfp.key if tfp is not None else fingerprint
        assert fp  # a fingerprint given, or the frame's
        known = self.table(fp)
        if known is not None and (known.kind == "copy" or path is not None):
            self._settle(df, fp, known.name, tfp, path)  # known here; perhaps not yet in the book (a merged workspace)
            return known
        if path is not None:
            kind, where = "file", str(Path(path).resolve())
        else:
            kind, where = "copy", f"tables/{fp}.parquet"
            target = self.folder / where
            tmp = target.with_suffix(".parquet.tmp")
            try:
                df.to_parquet(tmp, index=False)
                os.replace(tmp, target)
            except Exception as exc:  # pyarrow raises many types for odd columns
                tmp.unlink(missing_ok=True)
                raise InputError(f"table '{name}': cannot store a copy in the workspace ({type(exc).__name__}: "
                                 f"{exc}); it will not be restored after a reload") from None
        rec = TableRecord(fp, str(name), kind, where, int(len(df)), int(df.shape[1]), now())
        with self._conn() as conn, transaction(conn):
            conn.execute("INSERT OR REPLACE INTO tables VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (rec.fingerprint, rec.name, rec.kind, rec.path, rec.n_rows, rec.n_cols, rec.added_at))
        self._settle(df, fp, str(name), tfp, path)
        return rec

    def _settle(self, df: pd.DataFrame, fp: str, name: str, tfp=None, path=None) -> None:
        """The table in the book: registered with its column fingerprints, linked to the key an older
        book gave the same records, charged by default to a known table it looks like
        (:func:`dpcore.studio.table_match.settle_table`)."""
        from dpcore.studio.table_match import settle_table

        settle_table(self.book, df, fp, name, user=self.user, fingerprint=tfp, path=path)

    def add_file_table(self, path, fingerprint, name: str | None = None) -> TableRecord:
        """Register a file released on an engine (DuckDB, Spark) by reference, keyed by its content
        fingerprint ``fingerprint`` (a :class:`dpcore.counting.fingerprint.TableFingerprint` computed on the
        engine: the file is never read into pandas). Idempotent per fingerprint."""
        from dpcore.studio.table_match import settle_fingerprint

        fp = fingerprint.key
        known = self.table(fp)
        rec = known or TableRecord(fp, str(name or Path(path).name), "file", str(Path(path).resolve()),
                                   fingerprint.n_rows, len(fingerprint.column_fps), now())
        if known is None:
            with self._conn() as conn, transaction(conn):
                conn.execute("INSERT OR REPLACE INTO tables VALUES (?, ?, ?, ?, ?, ?, ?)",
                             (rec.fingerprint, rec.name, rec.kind, rec.path, rec.n_rows, rec.n_cols, rec.added_at))
        settle_fingerprint(self.book, fingerprint, rec.name, user=self.user, path=path)
        return rec

    def table(self, fingerprint: str) -> TableRecord | None:
        with self._conn() as conn:
            row = conn.execute("SELECT * FROM tables WHERE fingerprint = ?", (fingerprint,)).fetchone()
        return None if row is None else TableRecord(**dict(row))

    def tables(self) -> list[TableRecord]:
        with self._conn() as conn:
            rows = conn.execute("SELECT * FROM tables ORDER BY added_at, name").fetchall()
        return [TableRecord(**dict(r)) for r in rows]

    def load_table(self, fingerprint: str, reader: Callable[[str], pd.DataFrame] | None = None,
                   verify: bool = True) -> pd.DataFrame:
        """The table's data. A referenced file is read with ``reader`` (default
        :func:`dpcore.data.io.read_table`) and, with ``verify``, checked against the fingerprint:
        a file changed since it was added is refused, never silently used."""
        rec = self.table(fingerprint)
        if rec is None:
            raise InputError(f"the workspace has no table with fingerprint {fingerprint[:12]}…; load it again")
        if rec.kind == "copy":
            try:
                return pd.read_parquet(self.folder / rec.path)
            except OSError as exc:
                raise InputError(f"table '{rec.name}': its stored copy is missing from the workspace "
                                 f"({exc.strerror}); load it again") from None
        if reader is None:
            from dpcore.data.io import read_table

            reader = read_table
        if not Path(rec.path).exists():
            raise InputError(f"table '{rec.name}': the file {rec.path} is gone; load it again")
        if verify and fingerprint.startswith(FILE_FINGERPRINT) and file_fingerprint(rec.path) != fingerprint:
            raise InputError(f"table '{rec.name}': the file {rec.path} changed since it was added (its fingerprint "
                             "differs); load it again: it is a new table for the budget book")
        df = reader(rec.path)
        if verify and not fingerprint.startswith(FILE_FINGERPRINT) and _key_of(df, fingerprint) != fingerprint:
            raise InputError(f"table '{rec.name}': the file {rec.path} changed since it was added (its fingerprint "
                             "differs); load it again: it is a new table for the budget book")
        return df

    # ------------------------------------------------------------------ domains

    def save_domain(self, table_fp: str, domain_json: str) -> None:
        """Store the table's confirmed domain (the latest confirmation wins)."""
        with self._conn() as conn, transaction(conn):
            conn.execute("INSERT OR REPLACE INTO domains VALUES (?, ?, ?)", (table_fp, domain_json, now()))

    def domain(self, table_fp: str) -> str | None:
        with self._conn() as conn:
            row = conn.execute("SELECT domain_json FROM domains WHERE table_fp = ?", (table_fp,)).fetchone()
        return None if row is None else row["domain_json"]

    # ------------------------------------------------------------------ designs

    def save_design(self, name: str, design: dict) -> None:
        name = str(name).strip()
        if not name:
            raise OptionError("a saved design needs a name; type one")
        text = json.dumps(design, sort_keys=True, allow_nan=False)
        with self._conn() as conn, transaction(conn):
            conn.execute("INSERT OR REPLACE INTO designs VALUES (?, ?, ?)", (name, text, now()))

    def design(self, name: str) -> dict:
        with self._conn() as conn:
            row = conn.execute("SELECT design FROM designs WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise OptionError(f"no saved design named {name!r}; pick one of: {', '.join(self.designs()) or '(none)'}")
        return json.loads(row["design"])

    def designs(self) -> list[str]:
        with self._conn() as conn:
            return [r["name"] for r in conn.execute("SELECT name FROM designs ORDER BY name")]

    def delete_design(self, name: str) -> None:
        with self._conn() as conn, transaction(conn):
            conn.execute("DELETE FROM designs WHERE name = ?", (name,))

    def export_design(self, name: str) -> str:
        """The saved design as a JSON document another workspace can import."""
        return json.dumps({"format": DESIGN_FORMAT, "name": name, "design": self.design(name)}, indent=2,
                          sort_keys=True)

    def import_design(self, text: str) -> str:
        """Save a design exported by :meth:`export_design`; its name."""
        try:
            doc = json.loads(text)
        except (TypeError, ValueError) as exc:
            raise InputError(f"the design file is not JSON ({exc}); export it again from a workspace") from None
        if not isinstance(doc, dict) or doc.get("format") != DESIGN_FORMAT or not isinstance(doc.get("design"), dict):
            raise InputError(f"the design file is not a saved design (expected \"format\": \"{DESIGN_FORMAT}\" "
                             "and a \"design\" object); export it again from a workspace")
        self.save_design(doc.get("name") or "imported", doc["design"])
        return str(doc.get("name") or "imported")

    # ------------------------------------------------------------------ releases

    def release(self, table_fp: str, epsilon: float, method: str, neighbours: str,
                run: Callable[[], object], table_name: str = "", delta: float | None = None,
                user: str | None = None, delta_approx: float = 0.0) -> tuple[int, object]:
        """Run ``run()`` (a :func:`dpcore.synthesize` call) through the budget book:
        refused before any randomness if it would exceed the table's cap; the sets and
        manifest are stored and the record committed before the release is returned.
        The entry names this workspace and ``user`` (default: the workspace's user).
        Returns ``(entry_id, release)``."""
        from dpcore.privacy.ledger import check_epsilon
        from dpcore.privacy.neighbours import check_book_notion

        epsilon, neighbours = check_epsilon(epsilon), check_book_notion(neighbours)
        return self.book.record(table_fp, epsilon, method, neighbours, run, store=self._store_release,
                                table_name=table_name, delta=delta, workspace=self.id,
                                user=user if user is not None else self.user, delta_approx=delta_approx)

    def _store_release(self, entry_id: int, release) -> None:
        folder = self.folder / "releases" / str(entry_id)
        if folder.exists():  # left by a crashed earlier attempt with the same id: never reuse it
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        for i, df in enumerate(release.sets, 1):
            df.to_parquet(folder / f"synthetic_{i}.parquet", index=False)
        text = release.manifest_json()
        (folder / "manifest.json").write_text(text, encoding="utf-8")
        with self._conn() as conn, transaction(conn):
            conn.execute("INSERT OR REPLACE INTO release_files VALUES (?, ?, ?, ?)",
                         (int(entry_id), f"releases/{entry_id}", text, len(release.sets)))

    def stored_release(self, entry_id: int) -> StoredRelease:
        """A completed release read back: manifest and sets."""
        entry = self.book.entry(entry_id)
        with self._conn() as conn:
            row = conn.execute("SELECT * FROM release_files WHERE entry_id = ?", (int(entry_id),)).fetchone()
        if row is None or entry["status"] != "complete":
            raise OptionError(f"release {entry_id} has no stored output (status {entry['status']})")
        folder = self.folder / row["folder"]
        sets = [pd.read_parquet(folder / f"synthetic_{i}.parquet") for i in range(1, row["n_sets"] + 1)]
        return StoredRelease(int(entry_id), row["manifest"], sets)

    def releases(self, table_fp: str | None = None) -> list[dict]:
        """Budget-book entries (with status), oldest first: a table's whole history (every workspace's
        releases of it, each naming its workspace and user), or without ``table_fp`` the entries made
        through this workspace."""
        if table_fp is None:
            return self.book.entries(workspace=self.id)
        return self.book.entries(table_fp)

    def budget(self, table_fp: str) -> dict:
        """Spent, cap and remaining ε of one table."""
        spent = self.book.spent(table_fp)
        cap = self.book.cap(table_fp)
        return {"spent": spent, "cap": cap, "remaining": None if cap is None else max(0.0, cap - spent),
                **{k: v for k, v in self.book.totals(table_fp).items() if k != "epsilon"}}

    # ------------------------------------------------------------------ session state

    def save_state(self, key: str, value) -> None:
        """Store a JSON-ready value (the app's current table, domain and design)."""
        text = json.dumps(value, sort_keys=True, allow_nan=False, default=_json_default)
        with self._conn() as conn, transaction(conn):
            conn.execute("INSERT OR REPLACE INTO state VALUES (?, ?, ?)", (key, text, now()))

    def load_state(self, key: str, default=None):
        with self._conn() as conn:
            row = conn.execute("SELECT value FROM state WHERE key = ?", (key,)).fetchone()
        return default if row is None else json.loads(row["value"])


class _Closing:
    """``with`` a connection: close it afterwards (sqlite3's own ``with`` only commits)."""

    def __init__(self, conn):
        self.conn = conn

    def __enter__(self):
        return self.conn

    def __exit__(self, *exc):
        self.conn.close()
        return False


def _json_default(o):
    if hasattr(o, "item"):
        return o.item()
    if isinstance(o, (set, tuple)):
        return list(o)
    if isinstance(o, float) and not math.isfinite(o):
        return str(o)
    raise TypeError(f"{type(o).__name__} is not JSON-ready")
