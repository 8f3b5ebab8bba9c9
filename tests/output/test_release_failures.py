"""A release from a file that fails ([scale-out] item 5): one line, a marked folder, an honest budget book.

A full disk is simulated by a file-size limit on the process (``RLIMIT_FSIZE``): the writer's
``write`` then fails at the operating system as on a full disk (EFBIG instead of ENOSPC).
A cancelled job is an interrupt raised while the sets are written.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpcore.data.io import read_table
from dpcore.errors import DomainError
from dpcore.output import synthesize_file
from dpcore.output.file_release import FAILED, SUCCESS
from dpcore.studio.book_entry import BookEntry
from dpcore.studio.workspace import Workspace, file_fingerprint, table_fingerprint

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(0)
    n = 20_000
    df = pd.DataFrame({c: rng.choice(["alpha", "beta", "gamma"], n) for c in "abcde"})
    df["x"] = np.round(rng.random(n), 3)  # numeric: its released values are drawn inside bins (incompressible)
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    dom = {"source": "declared", "attributes": [{"name": c, "type": "categorical", "levels": ["alpha", "beta", "gamma"]}
                                                for c in "abcde"]
           + [{"name": "x", "type": "numeric", "edges": [0, 0.5, 1], "origin": "declared"}]}
    (tmp_path / "domain.json").write_text(json.dumps(dom))
    return path, tmp_path / "domain.json"


def _markers(out: Path) -> set:
    return {p.name for p in out.iterdir() if p.name.startswith("_")}


@pytest.mark.parametrize("engine, fmt", [("duckdb", "csv"), ("pandas", "parquet")])
def test_a_full_disk_is_one_line_a_failed_folder_and_a_failed_book_entry(table, tmp_path, engine, fmt):
    path, domain = table
    out, ws = tmp_path / f"out-{engine}", tmp_path / "ws"
    argv = ["synth", str(path), "--out", str(out), "--domain", str(domain), "--engine", engine, "--format", fmt,
            "--seed", "1", "--workspace", str(ws), "--epsilon", "0.5"]
    code = ("import resource, signal, sys\n"
            "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
            "resource.setrlimit(resource.RLIMIT_FSIZE, (150_000, 150_000))\n"
            "from dpcore.cli.commands import main\n"
            f"sys.exit(main({argv!r}))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                               # the installation's book is under the root folder (this test's own)
                               "DPSTUDIO_WORKSPACE": os.environ["DPSTUDIO_WORKSPACE"]})
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: cannot write") and f"synthetic_1.{fmt}" in lines[0]
    assert _markers(out) == {FAILED}  # no _SUCCESS, no _INCOMPLETE left
    assert "the release failed: cannot write" in (out / FAILED).read_text()
    assert not (out / f"synthetic_1.{fmt}").exists()  # the partly written set was removed
    book = Workspace(ws).book
    (entry,) = book.entries()
    # keyed by the records' content fingerprint, whatever engine and format (one account per table)
    assert entry["status"] == "failed" and entry["table_fp"] == table_fingerprint(read_table(path))
    assert book.spent(entry["table_fp"]) == pytest.approx(0.5)  # its noise was drawn: counted as spent


def test_a_cancelled_write_is_marked_and_counted(table, tmp_path):
    path, domain = table
    ws = Workspace(tmp_path / "ws")
    record = BookEntry(ws.book, file_fingerprint(path), 1.0, "steps", "add_remove", "t.csv")

    def progress(msg):
        if msg.startswith("set 2: wrote"):
            raise KeyboardInterrupt  # the curator stops the job while set 2 is written

    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        synthesize_file(path, out, "steps", 1.0, sets=2, seed=3, domain=domain, engine="duckdb", format="parquet",
                        chunk_rows=5000, progress=progress, record=record)
    assert _markers(out) == {FAILED}
    assert "cancelled" in (out / FAILED).read_text()
    assert not list(out.glob("synthetic_*")) and not (out / "manifest.json").exists()
    assert ws.book.entry(record.entry_id)["status"] == "failed"
    assert ws.book.spent(record.table_fp) == pytest.approx(1.0)


def test_a_release_stopped_before_counting_spends_nothing(table, tmp_path):
    path, _ = table
    ws = Workspace(tmp_path / "ws")
    bad = {"source": "declared", "attributes": [{"name": c, "type": "categorical", "levels": ["alpha", "beta"]}
                                                for c in "abcde"]
           + [{"name": "x", "type": "numeric", "edges": [0, 0.5, 1], "origin": "declared"}]}
    record = BookEntry(ws.book, file_fingerprint(path), 1.0, "steps", "add_remove", "t.csv")
    out = tmp_path / "out"
    with pytest.raises(DomainError, match="column 'a' has value 'gamma'"):
        synthesize_file(path, out, "steps", 1.0, domain=bad, engine="duckdb", record=record)
    assert ws.book.entry(record.entry_id)["status"] == "aborted"
    assert ws.book.spent(record.table_fp) == 0.0
    assert _markers(out) == {FAILED}


def test_success_leaves_only_success_and_replaces_stale_markers(table, tmp_path):
    path, domain = table
    out = tmp_path / "out"
    out.mkdir()
    (out / FAILED).write_text("an earlier attempt")
    ws = Workspace(tmp_path / "ws")
    record = BookEntry(ws.book, file_fingerprint(path), 1.0, "flat_laplace", "add_remove", "t.csv")
    rel = synthesize_file(path, out, "flat_laplace", 1.0, seed=2, domain=domain, engine="duckdb", record=record)
    assert _markers(out) == {SUCCESS}
    entry = ws.book.entry(record.entry_id)
    assert entry["status"] == "complete" and entry["dp"] == 1
    assert (out / "manifest.json").exists() and rel.sets == [out / "synthetic_1.csv"]


def test_cli_records_a_file_release_in_the_budget_book_and_refuses_over_the_cap(table, tmp_path, capsys):
    from dpcore.cli import commands as cli

    path, domain = table
    ws = tmp_path / "ws"
    common = [str(path), "--domain", str(domain), "--engine", "duckdb", "--workspace", str(ws), "--epsilon", "0.6"]
    assert cli.main(["synth", *common, "--out", str(tmp_path / "a")]) == 0
    assert "recorded as release 1 of t.csv in the budget book" in capsys.readouterr().out
    assert cli.main(["budget", "--workspace", str(ws), "--table", "t.csv", "--set-cap", "1"]) == 0
    assert cli.main(["synth", *common, "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert "remains" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "b" / "synthetic_1.csv").exists()


def test_old_books_learn_the_failed_status(tmp_path):
    """A book written before the 'failed' status (and before the event log): its entries are kept
    (merged into the book's event log when it is opened), and a new entry may fail."""
    import sqlite3

    from dpcore.studio import budget_book as B

    db = tmp_path / "old.sqlite"
    conn = sqlite3.connect(db)
    conn.executescript("""
        CREATE TABLE budget_caps (table_fp TEXT PRIMARY KEY, epsilon REAL NOT NULL, set_at TEXT NOT NULL);
        CREATE TABLE budget_entries (id INTEGER PRIMARY KEY AUTOINCREMENT, table_fp TEXT NOT NULL,
            table_name TEXT NOT NULL DEFAULT '', epsilon REAL NOT NULL, method TEXT NOT NULL,
            neighbours TEXT NOT NULL, status TEXT NOT NULL CHECK (status IN ('pending', 'complete', 'aborted')),
            reserved_at TEXT NOT NULL, completed_at TEXT, dp INTEGER, manifest_sha256 TEXT,
            note TEXT NOT NULL DEFAULT '');
    """)
    conn.execute("INSERT INTO budget_entries (table_fp, epsilon, method, neighbours, status, reserved_at) "
                 "VALUES ('t', 0.5, 'steps', 'add_remove', 'complete', 'x')")
    conn.commit()
    conn.close()
    book = B.BudgetBook(db)
    assert book.spent("t") == pytest.approx(0.5)
    e = book.reserve("t", 0.25, "steps", "add_remove")
    book.fail(e, "disk full")
    assert book.entry(e)["status"] == "failed" and book.spent("t") == pytest.approx(0.75)
    assert len(B.BudgetBook(db).entries("t")) == 2  # opened again: merged once, not twice
