"""The Survey page and the workspace (AppTest): its releases are charged to the budget book of
the table they read, refused over the cap with nothing drawn, and its inputs survive a reload."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest

from dpcore.data.io import read_table
from dpcore.studio.workspace import Workspace, table_fingerprint

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
SURVEY = "pages/6_survey.py"
SD2011 = ROOT / "assets" / "sd2011.csv"
CPS_WEIGHTED = ROOT / "assets" / "cps_vrs_weighted.csv"


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


def survey_page(ws: str | None = None) -> AppTest:
    """A new browser session on the Survey page; with ``ws``, a reload of ``?ws=<id>``."""
    at = AppTest.from_file(APP, default_timeout=60)
    if ws is not None:
        at.query_params["ws"] = ws
    at.run()
    at.switch_page(SURVEY)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def run(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def click(at: AppTest, key: str) -> AppTest:
    at.button(key=key).click()
    return run(at)


def test_an_imputation_release_is_charged_to_sd2011s_budget_book():
    at = survey_page()
    at.radio(key="sv_query").set_value("mean")
    click(at, "sv_go")
    assert not at.error, texts(at.error)
    rel = at.session_state["survey_release"]["rel"]
    ws = Workspace.in_root(at.query_params["ws"])
    fp = table_fingerprint(read_table(SD2011))  # the table the tab read, fingerprinted as the workspace does
    [entry] = ws.releases(fp)
    assert entry["method"] == "survey: dp imputation" and entry["status"] == "complete"
    assert entry["epsilon"] == pytest.approx(rel.ledger.epsilon, rel=1e-12)
    assert entry["epsilon"] == pytest.approx(6 * math.log(2), rel=1e-9)
    assert entry["neighbours"] == "add_remove" and entry["dp"] == 1
    assert ws.table(fp).kind == "file" and ws.table(fp).n_rows == 5000  # registered like a Data page demo
    assert f"Recorded as release {entry['id']} in the installation's budget book" in texts(at.caption)


def test_over_a_tiny_cap_the_page_refuses_and_draws_nothing(monkeypatch):
    import pages.components.survey_imputation as tab

    calls = []
    real = tab.release_imputed

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(tab, "release_imputed", counting)
    at = survey_page()
    at.number_input(key="sv_book_cap").set_value(1.0)
    click(at, "sv_book_cap_set")
    ws = Workspace.in_root(at.query_params["ws"])
    fp = table_fingerprint(read_table(SD2011))
    assert ws.budget(fp)["cap"] == 1.0
    click(at, "sv_go")
    err = texts(at.error)
    assert "survey: dp imputation release needs ε = 4.15888 but only ε = 1 of this table's budget remains" in err
    assert err.count("\n") == 0  # one line
    assert calls == [] and "survey_release" not in at.session_state and not at.metric  # nothing drawn, no result
    assert ws.releases(fp) == [] and ws.budget(fp)["spent"] == 0.0


def test_a_poststrat_release_is_charged_to_the_cps_file_and_shares_its_cap():
    at = survey_page()
    at.number_input(key="ps_e1").set_value(0.3)
    at.number_input(key="ps_e2").set_value(0.2)
    at.number_input(key="ps_e3").set_value(1.5)
    click(at, "ps_go")
    assert not at.error, texts(at.error)
    ws = Workspace.in_root(at.query_params["ws"])
    fp = table_fingerprint(read_table(CPS_WEIGHTED))  # the file, not the filtered sample
    [entry] = ws.releases(fp)
    assert entry["method"] == "survey: post-stratification" and entry["status"] == "complete"
    assert entry["epsilon"] == pytest.approx(2.0, rel=1e-9)
    assert entry["epsilon"] == pytest.approx(at.session_state["poststrat_release"]["rel"].ledger.epsilon, rel=1e-12)
    ws.book.set_cap(fp, 3.0)  # 1 of 3 left: a second release at ε = 2 is refused
    first = at.session_state["poststrat_release"]["rel"]
    click(at, "ps_go")
    assert "needs ε = 2 but only ε = 1 of this table's budget remains" in texts(at.error)
    assert at.session_state["poststrat_release"]["rel"] is first  # the refused click changed nothing
    assert [e["status"] for e in ws.releases(fp)] == ["complete"]


def test_survey_inputs_come_back_after_a_reload_and_a_page_switch():
    at = survey_page()
    ws_id = at.query_params["ws"]
    at.radio(key="sv_query").set_value("variance")
    at.number_input(key="sv_eps").set_value(7.5)
    at.number_input(key="sv_k").set_value(3)
    at.slider(key="sv_ages").set_value((30, 50))
    at.number_input(key="sv_hi").set_value(12000.0)
    at.multiselect(key="ps_cols").set_value(["agegr", "sex", "race"])
    run(at)
    at.multiselect(key="ps_cand_agegr").set_value(["2 halves"])
    at.number_input(key="ps_e3").set_value(1.25)
    at.slider(key="ps_ages").set_value((30, 64))
    run(at)
    at.switch_page("pages/1_data.py")  # leaving the page: Streamlit forgets its widgets
    run(at)
    at.switch_page(SURVEY)
    run(at)
    assert at.radio(key="sv_query").value == "variance" and at.number_input(key="sv_k").value == 3

    b = survey_page(ws_id)  # the browser reloads
    assert b.radio(key="sv_query").value == "variance"
    assert b.number_input(key="sv_eps").value == 7.5
    assert b.number_input(key="sv_k").value == 3
    assert b.selectbox(key="sv_rule").value == "mean"  # k > 1: the rule the page chose
    assert tuple(b.slider(key="sv_ages").value) == (30, 50)
    assert b.number_input(key="sv_hi").value == 12000.0
    assert b.multiselect(key="ps_cols").value == ["agegr", "sex", "race"]
    assert b.multiselect(key="ps_cand_agegr").value == ["2 halves"]
    assert b.number_input(key="ps_e3").value == 1.25
    assert tuple(b.slider(key="ps_ages").value) == (30, 64)
    assert not b.error, texts(b.error)
    saved = Workspace.in_root(ws_id).load_state("session")["survey"]
    assert saved["sv_eps"] == 7.5 and "survey_release" not in saved  # choices only, never results
    assert set(saved) <= {k for k in saved if k.startswith(("sv_", "ps_"))}

    c = survey_page()  # another workspace: the defaults
    assert c.radio(key="sv_query").value == "count" and c.number_input(key="sv_k").value == 1
