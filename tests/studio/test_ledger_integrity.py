"""One table, one account, whatever path a release takes; a book that nothing can reprice, overwrite or
break (issue 40, [ledger-integrity]). The fuzz cases that found these are kept here as tests."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

import dpcore
from dpcore.api import planned_delta_approx
from dpcore.cli.commands import main
from dpcore.counting.fingerprint import file_sha256, legacy_table_fingerprint
from dpcore.data.domain import DECLARED, Domain
from dpcore.data.io import read_table
from dpcore.errors import InputError
from dpcore.studio import book_store
from dpcore.studio.budget_book import BudgetBook, BudgetExceeded
from dpcore.studio.survey import public_levels
from dpcore.studio.workspace import installation_book, root_folder, table_fingerprint
from dpcore.synthesizers import REGISTRY

ROOT = Path(__file__).resolve().parents[2]
COMMON = ["--method", "flat_laplace", "--epsilon", "1", "--seed", "1"]


@pytest.fixture()
def table(tmp_path, s7):
    """A small table as CSV, its Parquet copy, and the domain both are released over."""
    df = s7[["sex", "agegr", "marital"]].copy()
    csv = tmp_path / "t.csv"
    df.to_csv(csv, index=False)
    parquet = tmp_path / "copy.parquet"
    read_table(csv).to_parquet(parquet, index=False)
    dom = tmp_path / "domain.json"
    dom.write_text(dpcore.infer_domain(read_table(csv)).declared().to_json(), encoding="utf-8")
    return csv, parquet, dom


def _synth(src, out, dom, *extra) -> int:
    return main(["synth", str(src), "--out", str(out), "--domain", str(dom), *COMMON, *extra])


def _rows() -> list[dict]:
    return installation_book().summary()


# --------------------------------------------------------------------------- one account on every path


@pytest.mark.parametrize("path", ["memory", "duckdb", "parquet copy", "--format parquet", "duckdb parquet"])
def test_a_cap_refuses_the_same_records_on_every_path_and_the_book_shows_one_row(table, tmp_path, capsys, path):
    csv, parquet, dom = table
    assert _synth(csv, tmp_path / "r1", dom) == 0
    assert main(["budget", "--set-cap", "1.5", "--table", str(csv)]) == 0
    capsys.readouterr()
    src, extra = {"memory": (csv, []), "duckdb": (csv, ["--engine", "duckdb"]), "parquet copy": (parquet, []),
                  "--format parquet": (csv, ["--format", "parquet"]),
                  "duckdb parquet": (parquet, ["--engine", "duckdb"])}[path]
    assert _synth(src, tmp_path / "r2", dom, *extra) == 2
    err = capsys.readouterr().err
    assert "only ε = 0.5 of this table's budget remains (cap 1.5, spent 1)" in err and "Nothing was released" in err
    rows = _rows()
    assert len(rows) == 1 and rows[0]["spent"] == pytest.approx(1.0) and rows[0]["cap"] == 1.5
    assert main(["budget"]) == 0 and capsys.readouterr().out.count("t.csv") == 1


def test_an_engine_release_is_charged_where_an_in_memory_one_of_the_same_records_is(table, tmp_path, capsys):
    """The other way round: DuckDB first (the key computed in SQL), then pandas; both entries, one account."""
    csv, parquet, dom = table
    assert _synth(parquet, tmp_path / "r1", dom, "--engine", "duckdb") == 0
    assert _synth(csv, tmp_path / "r2", dom) == 0
    (row,) = _rows()
    assert row["releases"] == 2 and row["spent"] == pytest.approx(2.0)
    assert row["table_fp"] == table_fingerprint(read_table(csv))


@pytest.mark.spark
def test_a_cap_refuses_the_same_records_on_spark(table, tmp_path, capsys):
    pytest.importorskip("pyspark")
    csv, _, dom = table
    assert _synth(csv, tmp_path / "r1", dom) == 0
    assert main(["budget", "--set-cap", "1.5", "--table", str(csv)]) == 0
    capsys.readouterr()
    assert _synth(csv, tmp_path / "r2", dom, "--engine", "spark", "--spark-master", "local[1]") == 2
    assert "only ε = 0.5 of this table's budget remains" in capsys.readouterr().err
    assert len(_rows()) == 1


def test_an_older_books_file_key_joins_the_table_when_the_same_content_is_seen(table, tmp_path, capsys):
    """A book that keyed a DuckDB release by the file's bytes (file-sha256:…) and capped it there: the next
    release of the same records, on any path, is charged to that account, its cap holds, nothing is lost."""
    csv, parquet, dom = table
    book = installation_book()
    old = file_sha256(csv)
    entry = book.reserve(old, 1.0, "steps", "add_remove", "t.csv")
    book.complete(entry, "0" * 64, True, 1.0)
    book.set_cap(old, 1.5)
    assert _synth(csv, tmp_path / "r", dom) == 2  # the same file in memory: one account, 0.5 remains
    assert "only ε = 0.5 of this table's budget remains" in capsys.readouterr().err
    (row,) = _rows()
    assert row["spent"] == pytest.approx(1.0) and row["cap"] == 1.5 and old in row["keys"]
    assert book.spent(table_fingerprint(read_table(parquet))) == pytest.approx(1.0)  # the Parquet copy too
    links = [x for x in book.export_text("json") and json.loads(book.export_text("json"))["charging_decisions"]]
    assert links and links[-1]["reason"].startswith("same content")
    with pytest.raises(dpcore.OptionError, match="same records"):  # never undone
        book.charge_to(links[-1]["table_fp"], None)


def test_an_older_books_unprefixed_key_joins_the_table(table, tmp_path):
    csv, _, dom = table
    df = read_table(csv)
    book = installation_book()
    old = legacy_table_fingerprint(df)
    e = book.reserve(old, 0.5, "steps", "add_remove", "t.csv")
    book.complete(e, "0" * 64, True, 0.5)
    assert _synth(csv, tmp_path / "r", dom) == 0
    (row,) = _rows()
    assert row["releases"] == 2 and row["spent"] == pytest.approx(1.5)


# --------------------------------------------------------------------------- what was spent never shrinks


def _with_income(s7, n: int) -> pd.DataFrame:
    """S7's categorical columns and a numeric income (seeded), ``n`` records."""
    import numpy as np

    df = s7[["sex", "agegr", "marital"]].head(n).reset_index(drop=True)
    df["income"] = np.random.default_rng(40).gamma(2.0, 1500.0, n).round()
    return df


def _zcdp_spend(book: BudgetBook, fp: str, eps: float = 1.5) -> None:
    e = book.reserve(fp, eps, "aim", "add_remove", delta=1e-9)
    book.complete(e, "0" * 64, True, eps)


def test_raising_delta_after_an_eps_delta_spend_reprices_nothing(tmp_path, capsys):
    book = installation_book()
    book.set_cap("T", 1.5)
    _zcdp_spend(book, "T")
    spent = book.spent("T")
    assert spent == pytest.approx(1.5, rel=1e-6) and book.remaining("T") == pytest.approx(0.0, abs=1e-6)
    assert main(["budget", "--set-delta", "0.5"]) == 0
    assert "keep their lower δ" in capsys.readouterr().out
    assert book.spent("T") == spent and book.table_delta("T") == 1e-9
    with pytest.raises(BudgetExceeded):
        book.reserve("T", 0.1, "aim", "add_remove", delta=1e-9)
    book.set_delta(1e-12)  # a lower δ applies: the same ρ states a larger ε
    assert book.spent("T") > spent and book.table_delta("T") == 1e-12
    book.set_delta(1e-9)  # and going back up does not undo it
    assert book.table_delta("T") == 1e-12


def test_no_budget_setting_enlarges_what_remains_except_an_explicit_cap_raise(tmp_path):
    """A seeded walk of settings (δ up and down, other tables' releases, caps on other tables) after an (ε, δ)
    spend: what remains never grows; only set_cap on the table raises it, and the trail says 'raised'."""
    import numpy as np

    rng = np.random.default_rng(40)
    book = installation_book()
    book.set_cap("T", 4.0)
    _zcdp_spend(book, "T", 1.0)
    before = book.remaining("T")
    for _ in range(40):
        step = rng.integers(4)
        if step == 0:
            book.set_delta(float(10.0 ** rng.uniform(-12, -0.5)))
        elif step == 1:
            _zcdp_spend(book, "U", 0.1)
        elif step == 2:
            book.set_cap("U", float(rng.uniform(1, 5)))
        else:
            e = book.reserve("T", 0.05, "steps", "add_remove")  # a pure spend on T
            book.complete(e, "0" * 64, True, 0.05)
        now = book.remaining("T")
        assert now <= before + 1e-12
        before = now
    assert book.set_cap("T", 9.0) == "raised" and book.remaining("T") > before
    caps = json.loads(book.export_text("json", "T"))["caps"]
    assert [c["change"] for c in caps] == ["set", "raised"]


def test_the_book_states_what_the_manifest_states_for_every_method_definition_and_domain(s7, tmp_path):
    """Book entry, manifest and statement agree to the last digit: every method, pure ε and (ε, δ), a declared
    domain, DP bins, and (under (ε, δ)) a domain found privately, which spends part of δ outside ρ."""
    df = _with_income(s7, 1500)
    book = installation_book()
    dom = dpcore.infer_domain(df, numeric={"income": {"bins": 4, "bounds": [0, 8000]}}).declared()
    cases = []
    for method in REGISTRY:
        for delta in (None, 1e-9):
            if ("zcdp" if delta else "pure") not in REGISTRY[method].definitions:
                continue
            cases.append((method, delta, {"domain": dom}))
            cases.append((method, delta, {"domain": dom, "dp_bins": {"income": {"bins": 4, "lower": 0,
                                                                               "upper": 8000}}}))
            if delta:
                cases.append((method, delta, {"domain": "dp"}))
    checked: list = []
    for i, (method, delta, kw) in enumerate(cases):
        opts = {"layers": 1} if "layers" in {o.name for o in REGISTRY[method].options} else {}
        fp = f"table-{i}"
        approx = planned_delta_approx(df, kw.get("domain"), delta)

        def run(method=method, delta=delta, kw=kw, opts=opts, seed=i):
            return dpcore.synthesize(df, method, 1.0, seed=seed, delta=delta, **kw, **opts)

        entry, rel = book.record(fp, 1.0, method, "add_remove", run, delta=delta, delta_approx=approx)
        booked = book.entry(entry)
        checked.append((method, delta, "dp" if kw["domain"] == "dp" else "dp_bins" if "dp_bins" in kw else "declared"))
        manifest = json.loads(rel.manifest_json())
        if delta is None:
            assert booked["epsilon"] == manifest["ledger"]["epsilon_total"] == 1.0, (method, kw)
            assert booked["rho"] is None
        else:
            stated = manifest["privacy_definition"]
            assert booked["rho"] == stated["rho"] == rel.ledger.rho, (method, kw)
            assert (booked["delta_approx"] or 0.0) == stated.get("delta_of_level_thresholds", 0.0), (method, kw)
            assert booked["epsilon"] == 1.0 and book.totals(fp)["epsilon_at_delta"] <= 1.0 + 1e-9
    assert len(checked) == len(cases) and {c[2] for c in checked} == {"declared", "dp_bins", "dp"}


# --------------------------------------------------------------------------- nothing writes over the book


@pytest.mark.parametrize("where", ["book", "wal", "root", "workspace file", "inside a workspace"])
def test_no_output_may_be_or_be_inside_the_book_or_a_workspace(table, tmp_path, capsys, where):
    csv, _, dom = table
    assert _synth(csv, tmp_path / "r1", dom, "--workspace", str(root_folder() / "ws1")) == 0
    before = installation_book().entries()
    root = root_folder()
    target = {"book": root / "book.sqlite", "wal": root / "book.sqlite-wal", "root": root,
              "workspace file": root / "ws1" / "workspace.sqlite",
              "inside a workspace": root / "ws1" / "releases" / "x"}[where]
    capsys.readouterr()
    for argv in (["synth", str(csv), "--out", str(tmp_path / "r2"), "--domain", str(dom), *COMMON,
                  "--private-manifest", str(target)],
                 ["synth", str(csv), "--out", str(target), "--domain", str(dom), *COMMON],
                 ["budget", "--export", str(target) + (".csv" if where == "inside a workspace" else "")],
                 ["domain", str(csv), "--out", str(target)]):
        if where == "wal" and argv[0] == "budget":
            argv[-1] = str(target)
        assert main(argv) == 2, argv
        err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
        assert len(err) == 1 and ("budget book" in err[0] or "workspace" in err[0]), err
    assert installation_book().entries() == before  # nothing lost, nothing spent
    assert main(["budget"]) == 0


# --------------------------------------------------------------------------- one bad file never stops it


def _legacy(folder: Path, entries_sql: str, caps_sql: str = "") -> Path:
    folder.mkdir(parents=True)
    db = folder / "workspace.sqlite"
    conn = sqlite3.connect(db)
    conn.executescript(entries_sql + caps_sql)
    conn.commit()
    conn.close()
    return db


_ENTRIES = ("CREATE TABLE budget_entries (id INTEGER PRIMARY KEY, table_fp TEXT, table_name TEXT, epsilon, delta, "
            "rho, method TEXT, neighbours TEXT, status TEXT, reserved_at TEXT, completed_at TEXT, manifest_sha256 "
            "TEXT, dp INTEGER, note TEXT);")


@pytest.mark.parametrize("bad", ["negative epsilon", "text cap", "missing column", "not a database"])
def test_a_malformed_legacy_book_is_skipped_with_one_warning_and_kept(table, tmp_path, capsys, bad):
    csv, _, dom = table
    folder = root_folder() / "old"
    if bad == "not a database":
        folder.mkdir(parents=True)
        db = folder / "workspace.sqlite"
        db.write_bytes(b"this is not sqlite" * 100)
    elif bad == "missing column":
        db = _legacy(folder, "CREATE TABLE budget_entries (id INTEGER PRIMARY KEY, table_fp TEXT, epsilon REAL);"
                             "INSERT INTO budget_entries VALUES (1, 'T', 1.0);")
    else:
        rows = ("INSERT INTO budget_entries VALUES (1, 'T', 't', -1.0, NULL, NULL, 'steps', 'add_remove', "
                "'complete', '2026-01-01', NULL, NULL, 1, '');" if bad == "negative epsilon" else
                "INSERT INTO budget_entries VALUES (1, 'T', 't', 1.0, NULL, NULL, 'steps', 'add_remove', "
                "'complete', '2026-01-01', NULL, NULL, 1, '');")
        caps = ("CREATE TABLE budget_caps (table_fp TEXT, epsilon, set_at TEXT);"
                "INSERT INTO budget_caps VALUES ('T', 'lots', '2026-01-01');" if bad == "text cap" else "")
        db = _legacy(folder, _ENTRIES + rows, caps)
    data = db.read_bytes()
    assert _synth(csv, tmp_path / "r", dom) == 0
    err = capsys.readouterr().err
    warnings = [ln for ln in err.splitlines() if "was not merged" in ln]
    assert len(warnings) == 1 and str(db) in warnings[0] and "unexpected" not in err
    assert db.read_bytes() == data  # kept on disk, untouched
    assert main(["budget"]) == 0 and "was not merged" not in capsys.readouterr().err  # the merge ran once
    assert installation_book().migrated(f"skipped legacy book {db.resolve()}")


def test_the_merge_of_the_workspaces_runs_once_and_is_recorded(tmp_path):
    folder = root_folder() / "old"
    _legacy(folder, _ENTRIES + "INSERT INTO budget_entries VALUES (1, 'T', 't', 1.0, NULL, NULL, 'steps', "
                               "'add_remove', 'complete', '2026-01-01', NULL, 'ab', 1, '');")
    book = installation_book()
    assert book.spent("T") == 1.0
    [m] = [x for x in json.loads(book.export_text("json"))["migrations"] if "merge the workspaces" in x["name"]]
    assert m["note"] == "1 entries merged"
    from dpcore.studio import book_merge

    book_merge._MERGED.clear()  # a new process: the book's own record stops a second run
    _legacy(root_folder() / "later", _ENTRIES + "INSERT INTO budget_entries VALUES (1, 'T', 't', 5.0, NULL, NULL, "
                                                "'steps', 'add_remove', 'complete', '2026-01-01', NULL, 'cd', 1, '');")
    assert installation_book().spent("T") == 1.0


# --------------------------------------------------------------------------- one line for every store failure


def _one_line(capsys, argv=("budget",)) -> str:
    assert main(list(argv)) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("error: ") and "unexpected" not in err[0], err
    return err[0]


def test_a_corrupt_or_truncated_book_is_one_line_naming_it(tmp_path, capsys):
    book = root_folder() / "book.sqlite"
    installation_book()
    e = installation_book().reserve("T", 1.0, "steps", "add_remove")
    installation_book().complete(e, "0" * 64, True)
    data = book.read_bytes()
    book.write_bytes(data[: len(data) // 3])  # truncated
    for side in ("-wal", "-shm"):
        Path(str(book) + side).unlink(missing_ok=True)
    line = _one_line(capsys)
    assert str(book) in line and ("damaged" in line or "SQLite" in line)
    book.write_bytes(b"\x00garbage" * 512)
    line = _one_line(capsys)
    assert str(book) in line and "damaged" in line


def test_a_read_only_book_is_one_line(monkeypatch, capsys):
    installation_book()
    real = book_store.sqlite_connect

    def read_only(path):  # as root nothing is read-only by permissions: open it as SQLite's read-only mode does
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
        conn.row_factory = sqlite3.Row
        return conn

    monkeypatch.setattr(book_store, "sqlite_connect", read_only)
    line = _one_line(capsys, ("budget", "--set-delta", "1e-8"))
    assert "read-only" in line and "book.sqlite" in line
    monkeypatch.setattr(book_store, "sqlite_connect", real)


def test_a_locked_book_waits_says_so_then_refuses_in_one_line(monkeypatch, capsys):
    book = installation_book()
    monkeypatch.setattr(book_store, "BUSY_TIMEOUT_S", 2.0)
    monkeypatch.setattr(book_store, "WAIT_NOTICE_S", 0.3)
    holder = sqlite3.connect(book.db_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    try:
        assert main(["budget", "--set-cap", "1", "--table", "T"]) == 2
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert err[0].startswith("waiting for the budget book") and err[-1].startswith("error: ")
    assert "locked by another program" in err[-1] and "unexpected" not in err[-1] and len(err) == 2


def test_an_unwritable_root_is_one_line(monkeypatch, tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    monkeypatch.setenv("DPSTUDIO_WORKSPACE", str(blocker / "root"))
    line = _one_line(capsys)
    assert "DPSTUDIO_WORKSPACE" in line


@pytest.mark.parametrize("url", ["postgresql://ann:s3cr%40t-pw@localhost:notaport/book",
                                 "postgresql://ann:s3cr%40t-pw@[::1/book",
                                 "postgresql://ann:s3cr%40t-pw@127.0.0.1:1/book",
                                 "postgres://ann:s3cr%40t-pw@127.0.0.1:1/book?sslmode=bogus",
                                 "postgresql://ann:s3cr%40t-pw@127.0.0.1:1/book?password=s3cr%40t-pw"])
def test_a_bad_database_url_is_one_line_without_the_password(monkeypatch, capsys, url):
    monkeypatch.setenv("DPSTUDIO_DATABASE_URL", url)
    line = _one_line(capsys)
    assert "s3cr" not in line and "t-pw" not in line and "DPSTUDIO_DATABASE_URL" in line


def test_redaction_covers_every_form_of_the_password():
    url = "postgresql://ann:s3cr%40t@db/book"
    text = "missing = after 'postgresql://ann:s3cr%40t@db/book'; password=s3cr@t; s3cr@t again"
    out = book_store.redact_url(text, url)
    assert "s3cr" not in out and out.count("***") >= 3


# --------------------------------------------------------------------------- labels from the right facts


def test_survey_levels_are_public_when_the_curator_confirmed_the_domain(s7):
    """A confirmed domain with a numeric column found privately (a data-range placeholder until the release)
    still makes the matching attributes' levels public: the label reads the confirmation, not 'inferred'."""
    df = _with_income(s7, 500).drop(columns="marital")
    dom = dpcore.infer_domain(df)
    assert dom.not_public  # income's placeholder edges: the domain reads 'inferred'
    confirmed = Domain(dom.attributes, DECLARED)
    assert confirmed.inferred  # the old check would have said NOT DP
    assert public_levels(confirmed, ["sex", "agegr"]) == {"sex": list(dom["sex"].levels),
                                                          "agegr": list(dom["agegr"].levels)}
    assert public_levels(dom, ["sex"]) is None  # not confirmed: NOT DP


def test_a_not_dp_release_is_in_no_dp_total(capsys):
    book = installation_book()
    for dp in (True, False):
        e = book.reserve("T", 1.0, "steps", "add_remove")
        book.complete(e, "0" * 64, dp, 1.0)
    (row,) = book.summary()
    assert row["dp_epsilon"] == 1.0 and row["not_dp_epsilon"] == 1.0 and row["spent"] == 2.0
    assert main(["budget"]) == 0
    out = capsys.readouterr().out
    assert "NOT DP ε" in out and "in no DP total" in out
    with pytest.raises(InputError):
        raise InputError("x")
