"""The workspace in the app (AppTest: restore in a new session, isolation, the budget book on
the Release page) and on the command line (``synth --workspace``, ``budget``)."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest

from dpcore.cli.commands import main
from dpcore.studio.workspace import Workspace, root_folder
from tests.app.test_app import click_and_collect, goto, texts  # the same page helpers

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
CPS = "CPS voters (Current Population Survey 1994–2018, 6231 × 10)"


def start(ws: str | None = None, page: str | None = "pages/1_data.py") -> AppTest:
    """A new browser session, then ``page`` (the app opens on its Start page); with ``ws`` it opens that
    workspace, as a reload of ``?ws=<id>`` does."""
    at = AppTest.from_file(APP, default_timeout=60)
    if ws is not None:
        at.query_params["ws"] = ws
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return goto(at, page) if page else at


def click(at: AppTest, prefix: str) -> AppTest:
    """Click the button; a release runs as a background job, so wait for it if it outlived the page's wait."""
    return click_and_collect(at, prefix)


def confirm(at: AppTest) -> None:
    goto(at, "pages/1_data.py")
    click(at, "Confirm")
    assert at.session_state["domain_confirmed"] is True


def small_design(at: AppTest, epsilon: float = 1.0) -> None:
    cfg = at.session_state["cfg"]
    cfg.update(release_method="steps", mode="fixed", L=2, layers=[["sex"], ["agegr"]], epsilon=epsilon, m=2)


# --------------------------------------------------------------------------- restore and isolation


def test_a_new_session_with_the_workspace_id_restores_table_domain_design_and_release():
    a = start()
    ws_id = a.query_params["ws"]
    a.selectbox(key="w_demo").select(CPS).run()
    a.multiselect[0].set_value(["year"]).run()  # drop a column
    confirm(a)
    small_design(a, epsilon=0.5)
    a.session_state["cfg"]["layers"] = [["sex"], ["race"]]
    goto(a, "pages/4_release.py")
    click(a, "Release (spends")
    main_release = a.session_state["release"]["main"]
    assert main_release.dp

    b = start(ws_id)  # the browser reloads: a new session with the same ?ws=
    s = b.session_state
    assert b.query_params["ws"] == ws_id
    assert s["data_name"] == CPS and len(s["raw_df"]) == 6231 and s["drop_cols"] == ["year"]
    assert s["domain_confirmed"] is True
    assert s["cfg"]["epsilon"] == 0.5 and s["cfg"]["layers"] == [["sex"], ["race"]]
    restored = s["release"]["main"]
    assert restored.manifest_json() == main_release.manifest_json()
    for x, y in zip(restored.sets, main_release.sets):
        assert x.to_csv(index=False) == y.to_csv(index=False)  # what the downloads hold
        assert list(x.columns) == list(y.columns) and len(x) == len(y)
    goto(b, "pages/4_release.py")
    assert "ε-differentially private with ε = 0.5" in texts(b.success)
    assert "The data changed" not in texts(b.info)
    goto(b, "pages/1_data.py")
    assert "declared public by the curator" in texts(b.success)
    assert Workspace.in_root(ws_id).domain(s["table_fp"]) is not None  # the confirmed domain is stored

    c = start()  # another tab without the id: its own, empty workspace
    assert c.query_params["ws"] != ws_id
    assert c.session_state["data_name"].startswith("SD2011 S7") and "release" not in c.session_state
    assert c.session_state["domain_confirmed"] is False


def test_two_workspaces_in_parallel_keep_their_own_state():
    a, b = start(), start()
    a.selectbox(key="w_demo").select(CPS).run()
    confirm(b)
    a2, b2 = start(a.query_params["ws"]), start(b.query_params["ws"])
    assert a2.session_state["data_name"] == CPS and a2.session_state["domain_confirmed"] is False
    assert b2.session_state["data_name"].startswith("SD2011 S7") and b2.session_state["domain_confirmed"] is True


def test_a_malformed_workspace_id_opens_a_new_workspace_and_says_so():
    at = start("../../etc", page=None)  # the first run: app.py draws the sidebar with its notice
    assert at.query_params["ws"] != "../../etc"
    assert "workspace id '../../etc' is not valid" in texts(at.caption)
    assert not (root_folder().parent / "etc" / "workspace.sqlite").exists()


def test_saved_designs_load_back():
    at = start()
    small_design(at, epsilon=2.0)
    goto(at, "pages/2_design.py")
    at.text_input(key="w_design_name").input("mine").run()
    click(at, "Save design")
    at.session_state["cfg"]["epsilon"] = 0.3
    at.run()
    click(at, "Load design")
    assert at.session_state["cfg"]["epsilon"] == 2.0
    ws = Workspace.in_root(at.query_params["ws"])
    assert json.loads(ws.export_design("mine"))["design"]["epsilon"] == 2.0


# --------------------------------------------------------------------------- the budget book on the Release page


def test_release_page_records_and_refuses_over_the_cap(monkeypatch):
    import dpcore

    calls = []
    real = dpcore.synthesize

    def counting(*a, **k):
        calls.append(k.get("method"))
        return real(*a, **k)

    monkeypatch.setattr(dpcore, "synthesize", counting)
    at = start()
    confirm(at)
    small_design(at, epsilon=2.0)
    goto(at, "pages/4_release.py")
    at.number_input(key="w_budget_cap").set_value(1.5).run()
    click(at, "Set cap")
    click(at, "Release (spends ε = 2)")  # one release at the button's ε: 2 > 1.5
    assert "needs ε = 2 but only ε = 1.5 of this table's budget remains" in texts(at.error)
    assert "release" not in at.session_state and calls == []  # refused before any randomness
    at.session_state["cfg"]["epsilon"] = 1.0
    at.run()
    click(at, "Release (spends ε = 1)")
    assert at.session_state["release"]["main"].dp
    ws = Workspace.in_root(at.query_params["ws"])
    fp = at.session_state["table_fp"]
    assert {k: ws.budget(fp)[k] for k in ("spent", "cap", "remaining")} == {"spent": pytest.approx(1.0), "cap": 1.5,
                                                                            "remaining": pytest.approx(0.5)}
    first = at.session_state["release"]["main"]
    assert calls == ["steps"]
    click(at, "Release (spends")
    assert "needs ε = 1 but only ε = 0.5" in texts(at.error)
    assert calls == ["steps"]
    assert at.session_state["release"]["main"] is first  # the refused click changed nothing
    assert len([e for e in ws.releases(fp) if e["status"] != "aborted"]) == 1
    assert len(at.get("plotly_chart")) >= 1  # the spent / remaining bar

    b = start(at.query_params["ws"])  # restart: the book is still there
    goto(b, "pages/4_release.py")
    assert b.number_input(key="w_budget_cap").value == 1.5
    book = next(d.value for d in b.dataframe if "manifest" in d.value.columns)
    assert list(book["status"]) == ["complete"] and list(book["ε"]) == [pytest.approx(1.0)]


def test_a_pending_entry_left_by_a_crash_is_shown_and_counted():
    at = start()
    confirm(at)
    small_design(at)
    ws = Workspace.in_root(at.query_params["ws"])
    fp = at.session_state["table_fp"]
    ws.book.set_cap(fp, 1.2)
    ws.book.reserve(fp, 0.5, "steps", "add_remove", "SD2011 S7")  # a release that never recorded completion
    goto(at, "pages/4_release.py")
    book = next(d.value for d in at.dataframe if "manifest" in d.value.columns)
    assert list(book["status"]) == ["pending"]
    click(at, "Release (spends")  # ε = 1 > 1.2 − 0.5
    assert "needs ε = 1 but only ε = 0.7" in texts(at.error)


# --------------------------------------------------------------------------- command line


@pytest.fixture
def declared(tmp_path, capsys):
    src = ROOT / "assets" / "sd2011_s7.csv"
    csv = tmp_path / "s7.csv"
    pd.read_csv(src)[["sex", "agegr", "marital"]].to_csv(csv, index=False)
    assert main(["domain", str(csv), "--out", str(tmp_path / "dom.json")]) == 0
    dom = json.loads((tmp_path / "dom.json").read_text())
    dom["source"] = "declared"
    (tmp_path / "dom.json").write_text(json.dumps(dom))
    capsys.readouterr()
    return csv, tmp_path / "dom.json"


def synth(csv, dom, out, ws, eps="0.6"):
    return main(["synth", str(csv), "--out", str(out), "--workspace", str(ws), "--epsilon", eps, "--layers", "1",
                 "--domain", str(dom)])


def test_cli_synth_records_and_refuses_over_the_cap(declared, tmp_path, capsys):
    csv, dom = declared
    ws_dir = tmp_path / "ws"
    assert synth(csv, dom, tmp_path / "o1", ws_dir) == 0
    assert "recorded as release 1 of s7.csv" in capsys.readouterr().out
    assert main(["budget", "--workspace", str(ws_dir), "--set-cap", "1"]) == 0
    out = capsys.readouterr().out
    assert "cap of s7.csv" in out and "0.4" in out
    assert synth(csv, dom, tmp_path / "o2", ws_dir) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "only ε = 0.4 of this table's budget remains" in err
    assert not (tmp_path / "o2").exists()  # nothing released
    assert main(["budget", "--workspace", str(ws_dir), "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["releases"] == 1 and row["spent"] == pytest.approx(0.6) and row["cap"] == 1.0
    manifest = (tmp_path / "o1" / "manifest.json").read_text(encoding="utf-8")
    [entry] = Workspace(ws_dir).releases()
    import hashlib

    assert entry["manifest_sha256"] == hashlib.sha256(manifest.encode()).hexdigest()
    assert synth(csv, dom, tmp_path / "o3", ws_dir, eps="0.4") == 0  # exactly the rest
    assert main(["budget", "--workspace", str(ws_dir), "--set-cap", "none", "--table", "s7.csv"]) == 0
    assert "ε = " not in capsys.readouterr().out.splitlines()[0]


def test_cli_budget_errors_are_one_line(declared, tmp_path, capsys):
    csv, dom = declared
    ws_dir = tmp_path / "ws"
    for argv, needle in [
        (["budget", "--workspace", str(ws_dir)], "holds no workspace"),
        # changed on purpose (issue 28): a cap is set in the installation's one book, no --workspace needed
        (["budget", "--set-cap", "1"], "--table is needed: there are 0 tables"),
        (["budget", "--workspace", str(ws_dir), "--set-cap", "1"], "holds no workspace"),
    ]:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert needle in err and err.count("\n") == 1
    assert not ws_dir.exists()  # listing created nothing
    Workspace(ws_dir)
    assert main(["budget", "--workspace", str(ws_dir)]) == 0
    assert "no releases" in capsys.readouterr().out
    assert main(["budget", "--workspace", str(ws_dir), "--set-cap", "1"]) == 2
    assert "--table is needed" in capsys.readouterr().err
    assert synth(csv, dom, tmp_path / "o1", ws_dir) == 0
    for value, needle in [("abc", "give a number greater than 0"), ("-1", "budget cap must be a finite number")]:
        assert main(["budget", "--workspace", str(ws_dir), "--set-cap", value]) == 2
        assert needle in capsys.readouterr().err
    assert main(["budget", "--workspace", str(ws_dir), "--set-cap", "1", "--table", "nope"]) == 2
    assert "matches 0 tables" in capsys.readouterr().err
    assert main(["budget", "--workspace", str(ws_dir), "--set-cap", "2", "--table", str(csv)]) == 0  # by its file
    assert "ε = 2" in capsys.readouterr().out


def test_cli_budget_without_workspace_lists_the_apps_workspaces(capsys):
    at = start()
    confirm(at)
    small_design(at)
    goto(at, "pages/4_release.py")
    click(at, "Release (spends")
    assert main(["budget"]) == 0
    out = capsys.readouterr().out
    assert at.query_params["ws"] in out and "SD2011 S7" in out
