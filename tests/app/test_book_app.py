"""The installation's one budget book in the app (issue 28), as a user runs it: two browser sessions,
two workspaces, one table. The second sees the first's spend; a cap set in one refuses a release in
the other; an upload that looks like a known table is charged to it unless the curator says otherwise."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("streamlit.testing.v1")

from dpcore.studio.workspace import Workspace, table_fingerprint
from tests.app.conftest import Upload
from tests.app.test_app import texts
from tests.app.test_workspace_app import click, confirm, goto, small_design, start

ROOT = Path(__file__).resolve().parents[2]
S7 = ROOT / "assets" / "sd2011_s7.csv"


def _book(at) -> pd.DataFrame:
    return next(d.value for d in at.dataframe if "manifest" in d.value.columns)


def test_a_second_workspace_sees_the_first_ones_spend_and_its_cap():
    a = start()
    confirm(a)
    small_design(a, epsilon=1.0)
    goto(a, "pages/4_release.py")
    click(a, "Release (spends ε = 1)")
    assert a.session_state["release"]["main"].dp

    b = start()  # another tab without the id: another workspace, the same table
    assert b.query_params["ws"] != a.query_params["ws"]
    confirm(b)
    small_design(b, epsilon=1.0)
    goto(b, "pages/4_release.py")
    book = _book(b)
    assert list(book["workspace"]) == [a.query_params["ws"]] and list(book["ε"]) == [pytest.approx(1.0)]
    assert list(book["user"]) != ["-"]  # every entry names its user (the OS user without a login)

    a.number_input(key="w_budget_cap").set_value(1.5).run()  # the cap, set through the first workspace
    click(a, "Set cap")
    b.run()
    click(b, "Release (spends ε = 1)")
    assert "needs ε = 1 but only ε = 0.5 of this table's budget remains" in texts(b.error)
    assert "release" not in b.session_state
    fp = b.session_state["table_fp"]
    assert Workspace.in_root(b.query_params["ws"]).budget(fp)["spent"] == pytest.approx(1.0)
    assert [d.label for d in b.get("download_button") if d.label.startswith("Audit trail")] == [
        "Audit trail (CSV)", "Audit trail (JSON)"]


def test_an_upload_that_looks_like_a_known_table_is_charged_to_it_by_default(uploads):
    queued = uploads
    a = start()
    confirm(a)
    small_design(a, epsilon=1.0)
    goto(a, "pages/4_release.py")
    click(a, "Release (spends ε = 1)")
    s7_fp = a.session_state["table_fp"]

    b = start()
    other = pd.read_csv(S7).drop(columns=["sex"])  # one column dropped: another fingerprint
    queued["w_upload"] = Upload("s7_without_sex.csv", other.to_csv(index=False).encode())
    b.run()
    fp = b.session_state["table_fp"]
    assert b.session_state["data_name"] == "upload: s7_without_sex.csv" and fp == table_fingerprint(other) != s7_fp
    warning = texts(b.warning)
    assert "looks like table SD2011 S7" in warning and "ε = 1 spent" in warning and "charge it to SD2011 S7" in warning
    radio = b.radio(key=f"w_charge_{fp[:16]}")
    assert radio.index == 0 and radio.value.startswith("Charge it to SD2011 S7")
    book = Workspace.in_root(b.query_params["ws"]).book
    assert book.account(fp) == s7_fp and book.spent(fp) == pytest.approx(1.0)  # no fresh budget, silently
    radio.set_value("Charge it as a new table").run()
    assert book.account(fp) == fp and book.spent(fp) == 0.0
    decision = book.charging_decision(fp)
    assert decision["charged_to"] is None and decision["reason"] == "the Data page" and decision["user"]


def test_a_cap_set_after_a_duckdb_release_of_the_demo_file_refuses_the_app_release(tmp_path, capsys):
    """[ledger-integrity] One table, one account whatever path: the demo's file released on DuckDB from the
    command line and capped there; the same records in the app are the same account, and are refused."""
    from dpcore.cli.commands import main

    a = start()
    confirm(a)
    fp = a.session_state["table_fp"]
    assert fp == table_fingerprint(pd.read_csv(S7)) or fp.startswith("content-")
    dom = tmp_path / "domain.json"
    assert main(["domain", str(S7), "--out", str(dom)]) == 0
    text = json.loads(dom.read_text())
    text["source"] = "declared public by the curator"
    dom.write_text(json.dumps(text))
    assert main(["synth", str(S7), "--out", str(tmp_path / "r"), "--engine", "duckdb", "--method", "flat_laplace",
                 "--epsilon", "1", "--domain", str(dom), "--seed", "1"]) == 0
    assert main(["budget", "--set-cap", "1.5", "--table", str(S7)]) == 0
    capsys.readouterr()
    small_design(a, epsilon=1.0)
    goto(a, "pages/4_release.py")
    click(a, "Release (spends ε = 1)")
    assert "needs ε = 1 but only ε = 0.5 of this table's budget remains" in texts(a.error)
    assert "release" not in a.session_state
    assert main(["budget", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 1 and rows[0]["spent"] == pytest.approx(1.0) and fp in rows[0]["keys"]
