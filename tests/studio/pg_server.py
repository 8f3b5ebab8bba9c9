"""A throw-away PostgreSQL server for the budget book's tests: Debian's ``postgresql`` package
(``make postgresql`` installs it; ``make test`` does), a cluster made with ``initdb`` in a temporary
folder and started with ``pg_ctl`` on a Unix socket only (no TCP port is opened).

PostgreSQL refuses to run as root, so as root the cluster belongs to the ``postgres`` system user
(created by the Debian package) and its commands run through ``runuser``.
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest


def postgres_bin() -> Path | None:
    """The newest installed PostgreSQL's bin folder (Debian: /usr/lib/postgresql/<major>/bin), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _as_owner(cmd: list[str], owner: str | None) -> list[str]:
    return cmd if owner is None else ["runuser", "-u", owner, "--", *cmd]


class Server:
    """One running cluster; :meth:`new_database` gives each test its own database's URL."""

    def __init__(self, bindir: Path):
        self.bindir = bindir
        self.owner = None
        self.folder = Path(tempfile.mkdtemp(prefix="dpcore-pg-"))
        if os.geteuid() == 0:
            try:
                entry = pwd.getpwnam("postgres")
            except KeyError:
                pytest.skip("running as root and there is no 'postgres' user to run PostgreSQL as")
            self.owner = "postgres"
            os.chown(self.folder, entry.pw_uid, entry.pw_gid)
        self.data = self.folder / "data"
        self.port = 5432 + (os.getpid() % 1000) + 100
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
        opts = f"-k {self.folder} -p {self.port} -c listen_addresses='' -c fsync=off"
        self._run("pg_ctl", "-D", str(self.data), "-o", opts, "-l", str(self.folder / "log"), "-w", "start")
        self.url = f"postgresql://postgres@/postgres?host={self.folder}&port={self.port}"

    def _run(self, tool: str, *args: str) -> None:
        proc = subprocess.run(_as_owner([str(self.bindir / tool), *args], self.owner), capture_output=True, text=True,
                              timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(f"{tool} failed: {proc.stdout}\n{proc.stderr}")

    def new_database(self) -> str:
        import psycopg

        name = "book_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return f"postgresql://postgres@/{name}?host={self.folder}&port={self.port}"

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server():
    bindir = postgres_bin()
    if bindir is None:
        pytest.skip("PostgreSQL is not installed (Debian package 'postgresql'; `make postgresql` installs it, and "
                    "`make test` does)")
    pytest.importorskip("psycopg", reason="psycopg is pinned in requirements.txt; pip install -r requirements.txt")
    server = Server(bindir)
    yield server
    server.stop()


@pytest.fixture()
def pg_url(pg_server) -> str:
    """A fresh, empty database on the session's server."""
    return pg_server.new_database()
