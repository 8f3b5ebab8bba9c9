"""Who may open a workspace: each workspace belongs to the identity that created it, and admins
open every one.

The registry is one SQLite file at the root of the installation's workspaces
(``$DPSTUDIO_WORKSPACE/access.sqlite``), beside the workspace folders: a workspace id alone opens
nothing on a server with login, because the id must also belong to the person asking. Two roles:

* **curator**: opens the workspaces they created;
* **admin**: the emails listed in ``$DPSTUDIO_ADMINS`` (or the app's secrets); opens every
  workspace and sets the tables' caps.

Without login (a local server on the loopback address) the one person at the keyboard is the
machine's user (:func:`local_user`), who holds both roles. Nothing here reads data or spends ε.
"""
from __future__ import annotations

import getpass
import os
import re
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

REGISTRY_NAME = "access.sqlite"
#: Environment variable listing the admins' emails (commas or spaces between them).
ADMINS_ENV = "DPSTUDIO_ADMINS"

SCHEMA = """
CREATE TABLE IF NOT EXISTS workspaces (
    id          TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
"""


def parse_admins(text) -> frozenset[str]:
    """Emails from a text (commas, semicolons or spaces between them) or a list, lower-cased."""
    items = re.split(r"[\s,;]+", text) if isinstance(text, str) else list(text or ())
    return frozenset(str(e).strip().lower() for e in items if str(e).strip())


def configured_admins(extra=()) -> frozenset[str]:
    """The admins: ``$DPSTUDIO_ADMINS`` and ``extra`` (the app passes its secrets' list)."""
    return parse_admins(os.environ.get(ADMINS_ENV, "")) | parse_admins(extra)


def local_user() -> str:
    """The machine's user name: the identity on a local server without login."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (some containers)
        return "local user"


@dataclass(frozen=True)
class Identity:
    """The person using the studio: an email from the login provider, or the local user."""

    user: str
    admin: bool
    logged_in: bool

    @property
    def role(self) -> str:
        return "admin" if self.admin else "curator"


def logged_in_identity(email: str, admins=()) -> Identity:
    email = str(email).strip().lower()
    return Identity(email, email in configured_admins(admins), True)


def local_identity() -> Identity:
    return Identity(local_user(), True, False)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Registry:
    """workspace id → owner, at the root of the installation's workspaces."""

    def __init__(self, root):
        self.root = Path(root).expanduser()
        self.path = self.root / REGISTRY_NAME

    def _connect(self) -> sqlite3.Connection:
        self.root.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        conn.row_factory = sqlite3.Row
        conn.executescript(SCHEMA)
        return conn

    def claim(self, ws_id: str, owner: str) -> str:
        """Record ``owner`` as the owner of ``ws_id`` unless it has one; the owner now on record."""
        conn = self._connect()
        try:
            conn.execute("BEGIN IMMEDIATE")  # two tabs creating one id: the first claim stands
            conn.execute("INSERT OR IGNORE INTO workspaces VALUES (?, ?, ?)", (ws_id, str(owner), _now()))
            row = conn.execute("SELECT owner FROM workspaces WHERE id = ?", (ws_id,)).fetchone()
            conn.execute("COMMIT")
        finally:
            conn.close()
        return row["owner"]

    def owner(self, ws_id: str) -> str | None:
        if not self.path.exists():
            return None
        conn = self._connect()
        try:
            row = conn.execute("SELECT owner FROM workspaces WHERE id = ?", (ws_id,)).fetchone()
        finally:
            conn.close()
        return None if row is None else row["owner"]

    def workspaces(self, owner: str | None = None) -> list[dict]:
        """Every registered workspace (or one owner's), oldest first: id, owner, created_at."""
        if not self.path.exists():
            return []
        conn = self._connect()
        try:
            sql = "SELECT * FROM workspaces" + (" WHERE owner = ?" if owner is not None else "")
            rows = conn.execute(sql + " ORDER BY created_at, id", (() if owner is None else (owner,))).fetchall()
        finally:
            conn.close()
        return [dict(r) for r in rows]

    def refusal(self, ws_id: str, who: Identity) -> str | None:
        """Why ``who`` may not open the workspace ``ws_id`` (None: they may). Admins open every
        workspace; a curator only their own; a workspace with no owner on record (made before
        workspaces had owners) only an admin."""
        if who.admin:
            return None
        owner = self.owner(ws_id)
        if owner == who.user:
            return None
        if owner is None:
            return f"workspace '{ws_id}' has no owner on record; ask an admin to open it"
        return f"workspace '{ws_id}' belongs to another curator; open one of yours or ask an admin"
