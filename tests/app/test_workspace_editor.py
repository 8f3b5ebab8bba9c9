"""The domain editor's work survives a reload: a new session with the same ``?ws=`` id sees the
same recodes (renames, merges, missing values recoded), DP-bins settings and ε share, and a
release made before the reload is still current (its data key includes the recodes)."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest

import dpcore
from dpcore.data.editing import recodes_to_json
from dpcore.studio.workspace import Workspace
from tests.app.test_app import click_and_collect

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def start(ws: str | None = None, page: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    if ws is not None:
        at.query_params["ws"] = ws
    at.run()
    if page:
        at.switch_page(page)
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _key(at: AppTest, prefix: str) -> str:
    [key] = [k for k in at.session_state._state.filtered_state if k.startswith(prefix)]
    return key


def _button(at: AppTest, label: str) -> None:
    next(b for b in at.button if b.label.startswith(label)).click()
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.exception] + [e.value for e in at.error]


CPS = "CPS voters (Current Population Survey 1994–2018, 6231 × 10)"


def _level_edit(at: AppTest, attr: str, edits: dict, na: str | None = None, missing_to: str | None = None) -> None:
    at.selectbox(key="w_edit_attr").select(attr).run()
    at.session_state[_key(at, f"w_levels_{attr}_")] = {"edited_rows": edits, "added_rows": [], "deleted_rows": []}
    at.run()
    if na is not None:
        next(r for r in at.radio if r.label == "Missing values").set_value(na).run()
        next(x for x in at.selectbox if x.label == "Missing values become").select(missing_to).run()
    _button(at, "Apply the level edits")


def test_recodes_and_dp_bins_are_restored_by_a_new_session_with_the_same_id():
    a = start(page="pages/1_data.py")
    ws_id = a.query_params["ws"]
    a.selectbox(key="w_demo").select(CPS).run()
    # year becomes a numeric attribute (public edges), so the editor offers DP quantile edges for it
    a.radio(key=f"w_numkind_year@{a.session_state['data_key']}").set_value("codebook edges").run()
    a.text_input(key=f"w_edges_year@{a.session_state['data_key']}").input("1990,2000,2010,2020").run()
    assert a.session_state["numeric"] == {"year": [1990.0, 2000.0, 2010.0, 2020.0]}

    # a rename (FEMALE -> woman), a merge (two residence levels into one) and missing values recoded
    _level_edit(a, "sex", {0: {"new name": "woman"}})
    levels = dpcore.Domain.from_json(a.session_state["domain_override"])["residence"].levels
    first, second = str(levels[0]), str(levels[1])
    _level_edit(a, "residence", {1: {"new name": first}}, na="recode to a level", missing_to=first)
    # DP quantile edges for year over public bounds, with a 0.2 share of ε
    a.selectbox(key="w_edit_attr").select("year").run()
    next(r for r in a.radio if r.label == "Bin edges").set_value("DP quantile edges").run()
    next(x for x in a.number_input if x.label == "public lower bound").set_value(1980.0).run()
    next(x for x in a.number_input if x.label == "public upper bound").set_value(2030.0).run()
    next(x for x in a.number_input if x.label == "bins").set_value(4).run()
    next(x for x in a.slider if x.label.startswith("Share of ε")).set_value(0.2).run()
    _button(a, "Use DP quantile edges")
    _button(a, "Confirm")
    sa = a.session_state
    assert sa["domain_confirmed"] is True
    assert dict(sa["recodes"]["sex"].mapping) == {"FEMALE": "woman"}
    assert sa["recodes"]["residence"].mapping == {second: first} and sa["recodes"]["residence"].missing_to == first
    recodes_before = recodes_to_json(sa["recodes"])
    # the app names the method it was asked for, so a later change of the library's default does not change it
    dp_bins_before = {"year": {"bins": 4, "lower": 1980.0, "upper": 2030.0, "method": "quantiles"}}
    assert sa["dp_bins"] == dp_bins_before

    # release on the edited domain, then reload
    sa["cfg"].update(release_method="flat_laplace", comparators=[], epsilon=1.0, m=1)
    a.switch_page("pages/4_release.py")
    a.run()
    click_and_collect(a, "Release (spends")  # waits for the release job: a busy machine outlives the page's wait
    assert not a.error, [e.value for e in a.error]
    rel = sa["release"]["main"]
    assert rel.dp and "year" in rel.manifest()["diagnostics"]["dp_bin_edges"]

    b = start(ws_id)  # the browser reloads: a new session with the same ?ws=
    sb = b.session_state
    assert sb["data_name"] == CPS
    assert recodes_to_json(sb["recodes"]) == recodes_before
    assert sb["recodes"]["residence"].missing_to == first  # the NA setting of the recode
    assert sb["dp_bins"] == dp_bins_before and sb["bins_share"] == pytest.approx(0.2)
    assert sb["domain_override"] == sa["domain_override"] and sb["domain_confirmed"] is True
    dom = dpcore.Domain.from_json(sb["domain_override"])
    assert "woman" in dom["sex"].levels and second not in map(str, dom["residence"].levels)
    assert not dom["residence"].na  # missing values recoded: no NA level
    # the release is still the current one: the restored recodes give the same data key
    assert sb["release"]["key"] is not None
    b.switch_page("pages/4_release.py")
    b.run()
    assert not b.exception
    assert "The data changed" not in "\n".join(str(i.value) for i in b.info)
    b.switch_page("pages/1_data.py")
    b.run()
    assert not b.exception
    md = "\n".join(str(m.value) for m in b.markdown)
    assert "DP quantile edges at release" in md and "Recodes applied to the data" in md
    # the release made after the reload uses the same recodes and DP-bins settings
    b.switch_page("pages/4_release.py")
    b.run()
    click_and_collect(b, "Release (spends")
    assert not b.error, [e.value for e in b.error]
    again = sb["release"]["main"]
    assert again.dp and "year" in again.manifest()["diagnostics"]["dp_bin_edges"]
    assert set(pd.concat(again.sets)["sex"]) <= {"woman", "MALE"}

    # the saved state is plain JSON in the workspace (no pickles)
    saved = Workspace.in_root(ws_id).load_state("session")
    assert json.loads(saved["recodes"])["recodes"] and saved["dp_bins"] == dp_bins_before


def test_undoing_the_recodes_is_saved_too():
    a = start(page="pages/1_data.py")
    ws_id = a.query_params["ws"]
    a.selectbox(key="w_edit_attr").select("sex").run()
    a.session_state[_key(a, "w_levels_sex")] = {"edited_rows": {0: {"new name": "woman"}}, "added_rows": [],
                                                "deleted_rows": []}
    a.run()
    _button(a, "Apply the level edits")
    assert start(ws_id).session_state["recodes"]
    _button(a, "Undo all recodes")
    b = start(ws_id)
    assert b.session_state["recodes"] == {} and b.session_state["domain_override"] is None
