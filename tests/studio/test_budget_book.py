"""The installation's one budget book (dpcore.studio.budget_book, issue 28): append-only entries and
events, the merge of the workspaces' own books, tables that look like known ones, the audit trail's
export, and the same guarantees on PostgreSQL (a real server the tests start)."""
from __future__ import annotations

import csv
import io
import json
import sqlite3
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd
import pytest

from dpcore.cli.commands import main
from dpcore.studio.book_merge import merge_workspace_books
from dpcore.studio.budget_book import BudgetBook, BudgetExceeded, manifest_sha256
from dpcore.studio.table_match import column_fingerprints, find_match, match_known, settle_table
from dpcore.studio.workspace import Workspace, installation_book, table_fingerprint
from tests.studio.pg_server import pg_server, pg_url  # noqa: F401  (fixtures)

ROOT = Path(__file__).resolve().parents[2]
S7 = ROOT / "assets" / "sd2011_s7.csv"


@pytest.fixture()
def small(s7):
    return s7[["sex", "agegr", "marital", "edu"]].copy()


# --------------------------------------------------------------------------- append-only


def test_a_status_change_is_a_new_event_and_no_row_is_ever_rewritten(tmp_path):
    book = BudgetBook(tmp_path / "b.sqlite")
    e = book.reserve("t", 0.5, "steps", "add_remove", "t.csv", user="ann")
    book.complete(e, "ab" * 32, True, 0.5, user="ann")
    assert [(v["status"], v["user"]) for v in book.events(e)] == [("pending", "ann"), ("complete", "ann")]
    entry = book.entry(e)
    assert entry["status"] == "complete" and entry["manifest_sha256"] == "ab" * 32 and entry["user"] == "ann"
    with pytest.raises(Exception, match="not pending"):
        book.complete(e, "cd" * 32, True)  # a completed entry is never completed again
    book.set_cap("t", 1.0)
    conn = sqlite3.connect(tmp_path / "b.sqlite")
    for sql in ("UPDATE book_entries SET epsilon = 0.1", "DELETE FROM book_entries",
                "UPDATE book_events SET status = 'aborted'", "DELETE FROM book_events", "DELETE FROM book_caps"):
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute(sql)
    conn.close()
    assert book.spent("t") == pytest.approx(0.5) and len(book.events()) == 2 and book.cap("t") == 1.0


def test_caps_and_delta_are_logged_the_latest_holds(tmp_path):
    book = BudgetBook(tmp_path / "b.sqlite")
    book.set_cap("t", 2.0, user="ann")
    book.set_cap("t", 1.0, user="bo")
    book.set_cap("t", None, user="ann")
    assert book.cap("t") is None
    book.set_cap("t", 3.0, user="bo")
    assert book.cap("t") == 3.0
    doc = json.loads(book.export_text("json"))
    assert [(c["epsilon"], c["user"]) for c in doc["caps"]] == [(2.0, "ann"), (1.0, "bo"), (None, "ann"), (3.0, "bo")]


# --------------------------------------------------------------------------- the audit trail's export


def test_the_book_exports_every_event_with_the_manifest_hash(tmp_path, small):
    ws = Workspace(tmp_path / "w", user="ann")
    fp = ws.add_table(small, "small").fingerprint
    import dpcore

    dom = dpcore.infer_domain(small).declared()
    entry, rel = ws.release(fp, 0.5, "steps", "add_remove",
                            lambda: dpcore.synthesize(small, epsilon=0.5, layers=1, seed=1, domain=dom))
    broken = ws.book.reserve(fp, 0.25, "aim", "add_remove", user="bo")
    ws.book.abort(broken, "stopped", user="bo")
    rows = list(csv.DictReader(io.StringIO(ws.book.export_text("csv"))))
    assert [(int(r["entry"]), r["status"], r["user"]) for r in rows] == [
        (entry, "pending", "ann"), (entry, "complete", "ann"), (broken, "pending", "bo"), (broken, "aborted", "bo")]
    assert rows[1]["manifest_sha256"] == manifest_sha256(rel.manifest_json())
    assert rows[1]["workspace"] == "w" and rows[1]["table_fp"] == fp and float(rows[1]["epsilon"]) == 0.5
    assert main(["budget", "--export", str(tmp_path / "book.json")]) == 0
    doc = json.loads((tmp_path / "book.json").read_text(encoding="utf-8"))
    assert doc["format"] == "dpcore-budget-book/2" and len(doc["events"]) == 4
    assert main(["budget", "--export", str(tmp_path / "book.csv")]) == 0
    assert len(pd.read_csv(tmp_path / "book.csv")) == 4
    assert main(["budget", "--export", str(tmp_path / "book.txt")]) == 2  # one line naming .csv or .json


# --------------------------------------------------------------------------- the merge of the workspaces' books

_LEGACY = """
CREATE TABLE budget_caps (table_fp TEXT PRIMARY KEY, epsilon REAL NOT NULL, set_at TEXT NOT NULL);
CREATE TABLE budget_entries (id INTEGER PRIMARY KEY AUTOINCREMENT, table_fp TEXT NOT NULL,
    table_name TEXT NOT NULL DEFAULT '', epsilon REAL NOT NULL, method TEXT NOT NULL, neighbours TEXT NOT NULL,
    status TEXT NOT NULL, reserved_at TEXT NOT NULL, completed_at TEXT, dp INTEGER, manifest_sha256 TEXT,
    note TEXT NOT NULL DEFAULT '', delta REAL, rho REAL);
CREATE TABLE book_settings (key TEXT PRIMARY KEY, value REAL NOT NULL);
CREATE TABLE release_files (entry_id INTEGER PRIMARY KEY, folder TEXT NOT NULL, manifest TEXT NOT NULL,
    n_sets INTEGER NOT NULL);
CREATE TABLE state (key TEXT PRIMARY KEY, value TEXT NOT NULL, updated_at TEXT NOT NULL);
"""


def _legacy_workspace(root: Path, ws_id: str, entries: list[tuple], cap: float | None = None,
                      delta: float | None = None) -> Path:
    """A workspace folder as the app wrote it before the installation's book: its own book, a stored
    release of its first entry, and a saved session naming that release."""
    folder = root / ws_id
    (folder / "releases" / "1").mkdir(parents=True)
    (folder / "releases" / "1" / "manifest.json").write_text("{}", encoding="utf-8")
    conn = sqlite3.connect(folder / "workspace.sqlite")
    conn.executescript(_LEGACY)
    for fp, eps, status, sha in entries:
        conn.execute("INSERT INTO budget_entries (table_fp, table_name, epsilon, method, neighbours, status, "
                     "reserved_at, completed_at, dp, manifest_sha256) VALUES (?, 'S7', ?, 'steps', 'add_remove', ?, "
                     "'2026-01-01T00:00:00+00:00', '2026-01-01T00:01:00+00:00', 1, ?)", (fp, eps, status, sha))
    if cap is not None:
        conn.execute("INSERT INTO budget_caps VALUES (?, ?, 'x')", (entries[0][0], cap))
    if delta is not None:
        conn.execute("INSERT INTO book_settings VALUES ('delta', ?)", (delta,))
    conn.execute("INSERT INTO release_files VALUES (1, 'releases/1', '{}', 0)")
    conn.execute("INSERT INTO state VALUES ('session', ?, 'x')",
                 (json.dumps({"table_fp": entries[0][0], "release": {"main": 1, "comparators": {}}}),))
    conn.commit()
    conn.close()
    return folder


def test_the_workspaces_own_books_are_merged_and_no_entry_is_lost(tmp_path):
    root = tmp_path / "root"
    a = _legacy_workspace(root, "alice", [("T", 1.0, "complete", "a1"), ("T", 0.5, "pending", None),
                                         ("U", 2.0, "aborted", None)], cap=4.0, delta=1e-8)
    _legacy_workspace(root, "bob", [("T", 0.25, "complete", "b1"), ("T", 0.25, "failed", None)], cap=3.0,
                      delta=1e-10)
    book = installation_book(root)
    entries = book.entries()
    assert len(entries) == 5
    assert sorted((e["workspace"], e["epsilon"], e["status"], e["manifest_sha256"]) for e in entries) == [
        ("alice", 0.5, "pending", None), ("alice", 1.0, "complete", "a1"), ("alice", 2.0, "aborted", None),
        ("bob", 0.25, "complete", "b1"), ("bob", 0.25, "failed", None)]
    assert book.spent("T") == pytest.approx(2.0)  # 1 + 0.5 (pending) + 0.25 + 0.25 (failed): every workspace's
    assert book.cap("T") == 3.0 and book.delta == 1e-10  # the stricter cap and δ hold
    assert installation_book(root).entries() == entries  # opened again: nothing copied twice
    merge_workspace_books.__globals__["_MERGED"].clear()  # a new process: the files are looked at again
    assert merge_workspace_books(book, root) == 0 and len(book.entries()) == 5
    # the workspace's stored release follows its entry's new id
    ws = Workspace.in_root("alice", root)
    new_id = next(e["id"] for e in entries if e["manifest_sha256"] == "a1")
    assert ws.load_state("session")["release"]["main"] == new_id
    assert ws.stored_release(new_id).manifest_text == "{}"
    assert (a / "releases" / "legacy-1").is_dir() and not (a / "releases" / "1").exists()
    conn = sqlite3.connect(a / "workspace.sqlite")
    assert conn.execute("SELECT COUNT(*) FROM budget_entries_merged").fetchone()[0] == 3  # kept, renamed
    conn.close()


def test_a_workspace_outside_the_root_brings_its_own_book_when_opened(tmp_path):
    """A workspace folder given to the command line (``--workspace DIR``) that kept its own book."""
    folder = _legacy_workspace(tmp_path / "elsewhere", "mine", [("T", 0.75, "complete", "m1")], cap=2.0)
    ws = Workspace(folder)  # the installation's book (this test's root), not one under "elsewhere"
    [entry] = installation_book().entries("T")
    assert entry["workspace"] == "mine" and entry["manifest_sha256"] == "m1" and ws.budget("T")["cap"] == 2.0
    assert ws.stored_release(entry["id"]).manifest_text == "{}"
    assert len(Workspace(folder).book.entries()) == 1  # opened again: nothing twice


# --------------------------------------------------------------------------- same records, other bytes


def test_column_fingerprints_ignore_names_and_order_not_values(small):
    fps = column_fingerprints(small)
    assert len(set(fps)) == 4
    assert column_fingerprints(small.rename(columns={"sex": "gender"})) == fps
    assert column_fingerprints(small.sample(frac=1, random_state=1)[list(reversed(small.columns))]) == fps[::-1]
    changed = small.copy()
    changed.loc[3, "sex"] = "MALE" if changed.loc[3, "sex"] != "MALE" else "FEMALE"
    assert column_fingerprints(changed)[0] != fps[0]


@pytest.mark.parametrize("change", ["drop a column", "drop two columns", "rename a column", "parquet"])
def test_a_table_that_looks_like_a_known_one_is_charged_to_it_by_default(tmp_path, small, change):
    book = BudgetBook(tmp_path / "b.sqlite")
    fp = table_fingerprint(small)
    assert settle_table(book, small, fp, "S7 small") is None
    book.record(fp, 1.0, "steps", "add_remove", lambda: _Done(1.0), table_name="S7 small")
    if change == "parquet":
        small.to_parquet(tmp_path / "t.parquet", index=False)
        from dpcore.data.io import read_table

        other = read_table(tmp_path / "t.parquet").drop(columns=["edu"])
    else:
        other = {"drop a column": small.drop(columns=["edu"]), "drop two columns": small[["agegr", "sex"]],
                 "rename a column": small.rename(columns={"marital": "status"})}[change]
    ofp = table_fingerprint(other)
    assert ofp != fp
    match = settle_table(book, other, ofp, "other")
    assert match is not None and match.table_fp == fp and match.spent == pytest.approx(1.0)
    assert match.question().startswith("looks like table S7 small (") and "charge it to S7 small?" in match.question()
    assert book.account(ofp) == fp and book.spent(ofp) == pytest.approx(1.0)  # no fresh budget
    book.set_cap(fp, 1.5)
    with pytest.raises(BudgetExceeded, match=r"only ε = 0\.5"):
        book.reserve(ofp, 1.0, "steps", "add_remove")
    book.charge_to(ofp, None, user="ann")  # the curator says: a table of its own
    assert book.account(ofp) == ofp and book.spent(ofp) == 0.0 and match_known(book, ofp).table_fp == fp
    assert settle_table(book, other, ofp, "other") is not None and book.account(ofp) == ofp  # the decision holds


def test_another_record_count_or_too_few_columns_is_another_table(tmp_path, small):
    book = BudgetBook(tmp_path / "b.sqlite")
    settle_table(book, small, table_fingerprint(small), "small")
    fewer = small.iloc[:-1]
    assert find_match(book, table_fingerprint(fewer), len(fewer), column_fingerprints(fewer)) is None
    mostly_new = small.assign(edu=small["edu"] + "x", marital=small["marital"] + "x", agegr="y")
    assert find_match(book, table_fingerprint(mostly_new), len(mostly_new), column_fingerprints(mostly_new)) is None


def test_the_cli_charges_a_look_alike_to_the_known_table_and_says_so(tmp_path, small, capsys):
    small.to_csv(tmp_path / "a.csv", index=False)
    small[["marital", "sex", "agegr"]].to_parquet(tmp_path / "b.parquet", index=False)
    common = ["--method", "flat_laplace", "--epsilon", "0.5", "--seed", "1"]
    assert main(["synth", str(tmp_path / "a.csv"), "--out", str(tmp_path / "r1"), *common]) == 0
    out = capsys.readouterr().out
    assert "recorded as release 1 of a.csv in the budget book of" in out and "spent ε = 0.5" in out
    assert main(["synth", str(tmp_path / "b.parquet"), "--out", str(tmp_path / "r2"), *common]) == 0
    out = capsys.readouterr().out
    assert "b.parquet looks like table a.csv (3 of 3 columns" in out and "charged to a.csv" in out
    assert "(charged to table a.csv)" in out and "spent ε = 1" in out
    assert main(["synth", str(tmp_path / "b.parquet"), "--out", str(tmp_path / "r3"), *common, "--new-table"]) == 0
    out = capsys.readouterr().out
    assert "charged as a new table (--new-table)" in out and "spent ε = 0.5" in out
    assert main(["synth", str(tmp_path / "a.csv"), "--out", str(tmp_path / "r4"), *common, "--no-book"]) == 0
    out = capsys.readouterr().out
    assert "UNACCOUNTED (--no-book)" in out and "recorded as" not in out
    assert len(installation_book().entries()) == 3


class _Done:
    """A stand-in release for the book's record(): what it reads of a dpcore.Release."""

    def __init__(self, eps):
        self.dp = True
        self.ledger = type("L", (), {"epsilon": eps})()

    def manifest_json(self):
        return "{}"


# --------------------------------------------------------------------------- two writers, both stores


def _spend_tenths(location: str, attempts: int) -> int:
    book = BudgetBook(location)
    done = 0
    for _ in range(attempts):
        try:
            entry = book.reserve("table", 0.1, "steps", "add_remove")
        except BudgetExceeded:
            continue
        book.complete(entry, "0" * 64, True)
        done += 1
    return done


def _two_writers_never_both_pass_the_cap(location: str) -> BudgetBook:
    book = BudgetBook(location)
    book.set_cap("table", 2.0)
    with ProcessPoolExecutor(max_workers=4) as pool:
        done = list(pool.map(_spend_tenths, [location] * 4, [10] * 4))
    assert sum(done) == 20  # 40 attempts, room for exactly 20
    entries = book.entries("table")
    assert len(entries) == 20 and all(e["status"] == "complete" for e in entries)
    assert book.spent("table") == pytest.approx(2.0)
    return book


def test_concurrent_writers_never_overspend_on_sqlite(tmp_path):
    _two_writers_never_both_pass_the_cap(str(tmp_path / "book.sqlite"))


def test_concurrent_writers_never_overspend_on_postgresql(pg_url):  # noqa: F811
    book = _two_writers_never_both_pass_the_cap(pg_url)
    assert book.store.postgres and len(book.events()) == 40


def test_the_book_on_postgresql_is_the_same_book(pg_url, monkeypatch, tmp_path, small):  # noqa: F811
    """DPSTUDIO_DATABASE_URL moves the installation's book to PostgreSQL: two workspaces share it,
    caps refuse across them, it is append-only, and it exports."""
    import psycopg

    monkeypatch.setenv("DPSTUDIO_DATABASE_URL", pg_url)
    a, b = Workspace.in_root("first", tmp_path), Workspace.in_root("second", tmp_path)
    assert a.book.store.postgres and not (tmp_path / "book.sqlite").exists()
    fp = a.add_table(small, "small").fingerprint
    a.book.record(fp, 0.6, "steps", "add_remove", lambda: _Done(0.6), workspace="first", user="ann")
    a.book.set_cap(fp, 1.0)
    assert b.budget(fp)["spent"] == pytest.approx(0.6)
    with pytest.raises(BudgetExceeded, match=r"only ε = 0\.4"):
        b.release(fp, 0.6, "steps", "add_remove", lambda: pytest.fail("must not run"))
    other = small.drop(columns=["edu"])
    b.add_table(other, "small without edu")
    assert b.book.account(table_fingerprint(other)) == fp
    with psycopg.connect(pg_url, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
            conn.execute("UPDATE book_entries SET epsilon = 0.01")
    rows = list(csv.DictReader(io.StringIO(b.book.export_text("csv"))))
    assert [r["status"] for r in rows] == ["pending", "complete"] and rows[0]["user"] == "ann"
    assert "password" not in b.book.describe() and b.book.describe().startswith("PostgreSQL")
