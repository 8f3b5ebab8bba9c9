"""The workspace on disk (dpcore.studio.workspace) and its budget book (dpcore.studio.budget_book):
persistence, fingerprints, isolation, the cap, crash atomicity and concurrent writers."""
from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
import textwrap
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd
import pytest

import dpcore
from dpcore.counting.fingerprint import legacy_table_fingerprint
from dpcore.data.io import read_table
from dpcore.errors import InputError, OptionError
from dpcore.studio.budget_book import BudgetBook, BudgetExceeded, manifest_sha256
from dpcore.studio.workspace import StoredRelease, Workspace, check_workspace_id, table_fingerprint
from tests.studio.test_budget_book import _spend_tenths  # the two-writer worker, shared with the PostgreSQL test

ROOT = Path(__file__).resolve().parents[2]
S7 = ROOT / "assets" / "sd2011_s7.csv"


@pytest.fixture()
def small(s7):
    """Three attributes of S7: a release takes milliseconds."""
    return s7[["sex", "agegr", "marital"]].copy()


def _release(df, epsilon=1.0, **kw):
    dom = dpcore.infer_domain(df).declared()
    return lambda: dpcore.synthesize(df, method="steps", epsilon=epsilon, layers=1, sets=2, seed=kw.pop("seed", 1),
                                     domain=dom, **kw)


# --------------------------------------------------------------------------- fingerprints


def _halves(text: str) -> tuple[int, int]:
    h = hashlib.md5(text.encode()).hexdigest()
    return int(h[:16], 16), int(h[16:], 16)


def test_fingerprint_is_the_sha256_of_the_sums_of_the_rows_md5_by_hand():
    """The content fingerprint written out by hand (dpcore.counting.fingerprint's docstring): rows as canonical
    texts in sorted-column order, their MD5 halves summed mod 2^64, SHA-256 over names, count and sums."""
    df = pd.DataFrame({"b": [2, 1], "a": ["x", "y"]})
    rows = [_halves("t1:x|i2"), _halves("t1:y|i1")]
    sums = f"{sum(r[0] for r in rows) % 2**64:016x}{sum(r[1] for r in rows) % 2**64:016x}"
    canonical = b"dpcore-table/2\x1f" + b"a\x1fb" + f"\x1f2\x1f{sums}".encode()
    assert table_fingerprint(df) == "content-" + hashlib.sha256(canonical).hexdigest()
    old = b"dpcore-table/1\x1f" + b"a\x1fb" + b"\x1f2\x1f" + b"x,2\x1e" + b"y,1\x1e"  # older books' key
    assert legacy_table_fingerprint(df) == hashlib.sha256(old).hexdigest()


def test_fingerprint_ignores_row_and_column_order_but_not_values(small):
    fp = table_fingerprint(small)
    shuffled = small.sample(frac=1.0, random_state=3)[list(reversed(small.columns))].reset_index(drop=True)
    assert table_fingerprint(shuffled) == fp
    changed = small.copy()
    changed.loc[17, "sex"] = "MALE" if changed.loc[17, "sex"] != "MALE" else "FEMALE"
    assert table_fingerprint(changed) != fp
    assert table_fingerprint(small.iloc[:-1]) != fp  # one record fewer is another table
    assert table_fingerprint(small.rename(columns={"sex": "gender"})) != fp


# --------------------------------------------------------------------------- persistence


def test_tables_domains_designs_survive_reopening(tmp_path, small):
    ws = Workspace(tmp_path / "w")
    copy = ws.add_table(small, "upload: small.csv")
    ref = ws.add_table(read_table(S7), "S7 demo", path=S7)
    dom = dpcore.infer_domain(small).declared()
    ws.save_domain(copy.fingerprint, dom.to_json())
    ws.save_design("two layers", {"epsilon": 2.0, "L": 2, "layers": [["sex"], ["agegr"]]})
    ws.save_state("session", {"table_fp": copy.fingerprint, "numeric": {}})
    del ws

    again = Workspace(tmp_path / "w")
    assert {t.fingerprint: t.kind for t in again.tables()} == {copy.fingerprint: "copy", ref.fingerprint: "file"}
    assert (tmp_path / "w" / copy.path).is_file() and ref.path == str(S7.resolve())
    pd.testing.assert_frame_equal(again.load_table(copy.fingerprint), small)
    pd.testing.assert_frame_equal(again.load_table(ref.fingerprint), read_table(S7))
    assert dpcore.Domain.from_json(again.domain(copy.fingerprint)).to_json() == dom.to_json()
    assert again.design("two layers") == {"epsilon": 2.0, "L": 2, "layers": [["sex"], ["agegr"]]}
    assert again.load_state("session") == {"table_fp": copy.fingerprint, "numeric": {}}
    assert again.load_state("missing", "default") == "default"


def test_a_referenced_file_that_changed_is_refused(tmp_path, small):
    path = tmp_path / "t.csv"
    small.to_csv(path, index=False)
    ws = Workspace(tmp_path / "w")
    rec = ws.add_table(read_table(path), "t.csv", path=path)
    small.iloc[:-1].to_csv(path, index=False)
    with pytest.raises(InputError, match="changed since it was added"):
        ws.load_table(rec.fingerprint)
    path.unlink()
    with pytest.raises(InputError, match="is gone"):
        ws.load_table(rec.fingerprint)


def test_designs_export_and_import_as_json(tmp_path):
    a, b = Workspace(tmp_path / "a"), Workspace(tmp_path / "b")
    a.save_design("mine", {"epsilon": 0.5, "mode": "fixed"})
    text = a.export_design("mine")
    assert json.loads(text)["design"] == {"epsilon": 0.5, "mode": "fixed"}
    assert b.import_design(text) == "mine"
    assert b.design("mine") == a.design("mine")
    with pytest.raises(InputError, match="not a saved design"):
        b.import_design('{"epsilon": 1}')
    with pytest.raises(InputError, match="not JSON"):
        b.import_design("{")
    with pytest.raises(OptionError, match="no saved design named 'other'"):
        b.design("other")
    with pytest.raises(OptionError, match="needs a name"):
        b.save_design("  ", {})


def test_a_release_round_trips_with_its_manifest_and_record(tmp_path, small):
    ws = Workspace(tmp_path / "w")
    fp = ws.add_table(small, "small").fingerprint
    entry, rel = ws.release(fp, 1.0, "steps", "add_remove", _release(small), table_name="small")
    stored = Workspace(tmp_path / "w").stored_release(entry)
    assert isinstance(stored, StoredRelease)
    assert stored.manifest_json() == rel.manifest_json()
    assert stored.dp is rel.dp is True and stored.epsilon == 1.0
    assert stored.ledger.epsilon == pytest.approx(rel.ledger.epsilon, abs=1e-12)
    assert len(stored.sets) == 2
    for a, b in zip(stored.sets, rel.sets):
        pd.testing.assert_frame_equal(a, b)
    [rec] = ws.releases(fp)
    assert rec["status"] == "complete" and rec["method"] == "steps" and rec["neighbours"] == "add_remove"
    assert rec["manifest_sha256"] == hashlib.sha256(rel.manifest_json().encode()).hexdigest()
    assert rec["epsilon"] == pytest.approx(1.0) and rec["dp"] == 1 and rec["completed_at"]
    with pytest.raises(OptionError, match="seed is never stored"):
        stored.manifest_json(private=True)  # the seed is never stored


# --------------------------------------------------------------------------- isolation


def test_two_workspaces_never_see_each_others_data_but_share_the_book(tmp_path, small):
    """Changed on purpose with the installation's one book (issue 28): the data, designs, state and
    stored releases stay each workspace's own; the budget book of the table is one."""
    a, b = Workspace.in_root("alice", tmp_path), Workspace.in_root("bob", tmp_path)
    fp = a.add_table(small, "upload: small.csv").fingerprint
    a.save_design("d", {"epsilon": 1})
    a.save_state("session", {"table_fp": fp})
    entry, _ = a.release(fp, 0.5, "steps", "add_remove", _release(small, 0.5))
    a.book.set_cap(fp, 3.0)
    assert b.tables() == [] and b.designs() == [] and b.load_state("session") is None
    assert b.releases() == []  # nothing was released through bob
    assert a.folder != b.folder and not (b.folder / "tables" / f"{fp}.parquet").exists()
    with pytest.raises(OptionError, match="no stored output"):
        b.stored_release(entry)  # alice's sets stay in alice's folder
    assert {k: b.budget(fp)[k] for k in ("spent", "cap", "remaining")} == {"spent": 0.5, "cap": 3.0, "remaining": 2.5}
    [row] = b.book.summary()
    assert row["workspaces"] == ["alice"] and row["spent"] == pytest.approx(0.5)
    assert a.book.db_path == b.book.db_path == tmp_path / "book.sqlite"


def test_a_second_workspace_sees_the_first_ones_spend(tmp_path, small):
    """Done-when (issue 28): a release of one table through a second workspace sees the first's spend."""
    a, b = Workspace.in_root("first", tmp_path, user="ann"), Workspace.in_root("second", tmp_path, user="bo")
    fp = a.add_table(small, "small").fingerprint
    a.release(fp, 1.0, "steps", "add_remove", _release(small, 1.0))
    assert b.add_table(small, "small again").fingerprint == fp
    b.release(fp, 0.5, "steps", "add_remove", _release(small, 0.5, seed=2))
    assert b.budget(fp)["spent"] == pytest.approx(1.5) == a.budget(fp)["spent"]
    history = b.releases(fp)
    assert [(e["workspace"], e["user"], e["epsilon"], e["status"]) for e in history] == [
        ("first", "ann", 1.0, "complete"), ("second", "bo", 0.5, "complete")]


def test_a_cap_set_through_one_workspace_refuses_a_release_through_the_other(tmp_path, small):
    """Done-when (issue 28): caps are per table, whichever workspace sets them."""
    a, b = Workspace.in_root("first", tmp_path), Workspace.in_root("second", tmp_path)
    fp = a.add_table(small, "small").fingerprint
    b.add_table(small, "small")
    a.release(fp, 0.6, "steps", "add_remove", _release(small, 0.6))
    a.book.set_cap(fp, 1.0)
    ran = []
    with pytest.raises(BudgetExceeded, match=r"only ε = 0\.4 of this table's budget remains"):
        b.release(fp, 0.6, "steps", "add_remove", lambda: ran.append(1))
    assert ran == [] and b.budget(fp)["spent"] == pytest.approx(0.6)


def test_entries_name_the_os_user_without_a_login(tmp_path, small):
    import getpass

    ws = Workspace(tmp_path / "w")
    fp = ws.add_table(small, "small").fingerprint
    ws.release(fp, 0.5, "steps", "add_remove", _release(small, 0.5))
    [e] = ws.releases(fp)
    assert e["user"] == getpass.getuser() and e["workspace"] == "w"


@pytest.mark.parametrize("bad", ["", "../etc", "a/b", "x" * 65, "é", None])
def test_workspace_ids_cannot_name_other_folders(bad):
    with pytest.raises(OptionError, match="workspace id"):
        check_workspace_id(bad)


# --------------------------------------------------------------------------- the cap


def test_a_release_over_the_cap_is_refused_before_it_runs_and_spends_nothing(tmp_path, small):
    ws = Workspace(tmp_path / "w")
    fp = ws.add_table(small, "small").fingerprint
    ws.book.set_cap(fp, 1.0)
    ws.release(fp, 0.6, "steps", "add_remove", _release(small, 0.6))
    ran = []

    def run():
        ran.append(1)
        return _release(small, 0.6)()

    with pytest.raises(BudgetExceeded, match=r"needs ε = 0\.6 but only ε = 0\.4 of this table's budget remains"):
        ws.release(fp, 0.6, "steps", "add_remove", run)
    assert ran == []  # no randomness drawn
    assert len(ws.releases(fp)) == 1 and ws.budget(fp)["spent"] == pytest.approx(0.6)
    ws.release(fp, 0.4, "steps", "add_remove", _release(small, 0.4))  # exactly the rest fits
    assert ws.budget(fp)["remaining"] == pytest.approx(0.0, abs=1e-9)
    with pytest.raises(BudgetExceeded, match="only ε = 0 of"):
        ws.book.check(fp, 0.01, "add_remove")


def test_ten_releases_at_a_tenth_fit_a_cap_of_one(tmp_path):
    book = BudgetBook(tmp_path / "b.sqlite")
    book.set_cap("t", 1.0)
    for _ in range(10):
        book.complete(book.reserve("t", 0.1, "m", "add_remove"), "0" * 64, True)
    with pytest.raises(BudgetExceeded):
        book.reserve("t", 0.1, "m", "add_remove")
    assert book.spent("t") == pytest.approx(1.0)


def test_cap_validation_and_removal(tmp_path):
    book = BudgetBook(tmp_path / "b.sqlite")
    for bad in (0, -1, float("nan"), float("inf"), "x", True):
        with pytest.raises(OptionError, match="budget cap"):
            book.set_cap("t", bad)
    book.set_cap("t", 2)
    assert book.cap("t") == 2.0
    book.set_cap("t", None)
    assert book.cap("t") is None and book.remaining("t") is None


def test_the_book_keeps_one_neighbour_notion_per_table(tmp_path, small):
    ws = Workspace(tmp_path / "w")
    fp = ws.add_table(small, "small").fingerprint
    ws.release(fp, 0.5, "steps", "add_remove", _release(small, 0.5))
    with pytest.raises(BudgetExceeded, match="kept under neighbours='add_remove'"):
        ws.release(fp, 0.5, "steps", "replace", _release(small, 0.5, neighbours="replace"))
    assert len(ws.releases(fp)) == 1


# --------------------------------------------------------------------------- crash atomicity


def test_a_failure_between_release_and_record_hands_nothing_out_and_counts_as_spent(tmp_path, small, monkeypatch):
    ws = Workspace(tmp_path / "w")
    fp = ws.add_table(small, "small").fingerprint
    ws.book.set_cap(fp, 1.5)
    handed_out = []

    def crash(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(BudgetBook, "complete", crash)
    with pytest.raises(OSError, match="disk full"):
        handed_out.append(ws.release(fp, 1.0, "steps", "add_remove", _release(small)))
    monkeypatch.undo()
    assert handed_out == []
    [entry] = ws.releases(fp)
    assert entry["status"] == "pending" and entry["manifest_sha256"] is None
    assert ws.budget(fp)["spent"] == pytest.approx(1.0)  # conservative: the pending release counts
    with pytest.raises(BudgetExceeded, match="only ε = 0.5"):
        ws.release(fp, 1.0, "steps", "add_remove", _release(small))


def test_a_release_that_raises_before_any_output_is_aborted_not_spent(tmp_path, small):
    ws = Workspace(tmp_path / "w")
    fp = ws.add_table(small, "small").fingerprint

    def broken():
        raise dpcore.OptionError("layers must be ...")

    with pytest.raises(dpcore.OptionError):
        ws.release(fp, 1.0, "steps", "add_remove", broken)
    [entry] = ws.releases(fp)
    assert entry["status"] == "aborted" and "OptionError" in entry["note"]
    assert ws.budget(fp)["spent"] == 0.0


CRASH_CHILD = textwrap.dedent("""
    import os, sys
    import pandas as pd
    import dpcore
    from dpcore.studio.workspace import Workspace
    folder, where, out = sys.argv[1], sys.argv[2], sys.argv[3]
    df = pd.read_csv({s7!r})[["sex", "agegr", "marital"]]
    ws = Workspace(folder)
    fp = ws.add_table(df, "small").fingerprint
    dom = dpcore.infer_domain(df).declared()

    def run():
        rel = dpcore.synthesize(df, layers=1, sets=2, epsilon=0.7, domain=dom)
        if where == "after_release":
            os._exit(9)          # killed between the release and its recording
        return rel

    if where == "during_store":
        real = ws._store_release
        def store(entry, rel):
            real(entry, rel)     # outputs written inside the workspace, record not yet committed
            os._exit(9)
        ws._store_release = store
    entry, rel = ws.release(fp, 0.7, "steps", "add_remove", run)
    rel.write(out)               # handed out only after the record is committed
""")


@pytest.mark.parametrize("where", ["after_release", "during_store", "never"])
def test_a_killed_process_never_lets_a_release_leave_without_a_record(tmp_path, where):
    folder, out = tmp_path / "w", tmp_path / "out"
    script = CRASH_CHILD.replace("{s7!r}", repr(str(S7)))
    proc = subprocess.run([sys.executable, "-c", script, str(folder), where, str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    ws = Workspace(folder)
    [entry] = ws.releases()
    if where == "never":
        assert proc.returncode == 0, proc.stderr
        assert entry["status"] == "complete"
        manifest = (out / "manifest.json").read_text(encoding="utf-8")
        assert entry["manifest_sha256"] == manifest_sha256(manifest)  # what left is what the book holds
    else:
        assert proc.returncode == 9, proc.stderr
        assert not out.exists()  # nothing was handed out
        assert entry["status"] == "pending"
    assert ws.budget(entry["table_fp"])["spent"] == pytest.approx(0.7)  # every attempt counts
    with sqlite3.connect(ws.db_path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


# --------------------------------------------------------------------------- concurrent writers


def test_concurrent_writers_never_overspend_or_corrupt(tmp_path):
    db = tmp_path / "w.sqlite"
    book = BudgetBook(db)
    book.set_cap("table", 2.0)
    with ProcessPoolExecutor(max_workers=4) as pool:
        done = list(pool.map(_spend_tenths, [str(db)] * 4, [10] * 4))
    assert sum(done) == 20  # 40 attempts, room for exactly 20
    entries = book.entries("table")
    assert len(entries) == 20 and all(e["status"] == "complete" for e in entries)
    assert book.spent("table") == pytest.approx(2.0)
    assert len({e["id"] for e in entries}) == 20
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_an_unwritable_workspace_folder_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(InputError, match="cannot create it"):
        Workspace(blocker / "w")



def test_a_workspace_path_that_is_a_file_is_named_as_such(tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    with pytest.raises(InputError, match="is a file, not a folder"):
        Workspace(f)
    assert f.read_text() == "x"  # untouched
