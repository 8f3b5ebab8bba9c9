"""The adviser on the Design page and the Trade-offs sweep at the design's m (AppTest, no browser)."""
from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("streamlit.testing.v1")
import streamlit as st
from streamlit.testing.v1 import AppTest

import dpcore
import dpcore.metrics
from dpcore.synthesizers import REGISTRY
from tests.app.test_app import JOB_CEILING_S

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")


@pytest.fixture(autouse=True)
def fresh_caches():
    st.cache_data.clear()  # the adviser's answer is cached per design: a monkeypatched preview must be seen
    yield
    st.cache_data.clear()


def goto(at: AppTest, page: str) -> AppTest:
    at.switch_page(page)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def start() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception
    return at


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


def _ranking(at: AppTest) -> pd.DataFrame:
    return next(d.value for d in at.dataframe if "pred. S_pMSE" in d.value.columns)


def test_the_design_page_ranks_every_method_by_predicted_error():
    at = goto(start(), "pages/2_design.py")
    ranking = _ranking(at)
    assert set(ranking["method"]) == {s.display_name for s in REGISTRY.values()}
    pred = ranking["pred. S_pMSE"].dropna().tolist()
    assert pred == sorted(pred) and ranking.iloc[0]["verdict"] == "recommended"
    head = texts(at.markdown)
    assert f"recommended for this table: **{ranking.iloc[0]['method']}**" in head
    assert "These are predictions from public facts" in head
    assert "No public record count is known" in texts(at.caption)
    # the menu is the registry's (one entry per method family) after the adviser's pick
    menu = next(s for s in at.selectbox if s.label == "Method of the release")
    assert menu.options[0].startswith("Recommended for this table")
    assert len(menu.options) == 1 + sum(1 for s in REGISTRY.values() if s.tree_select is None)


def test_a_public_n_given_by_the_curator_is_used_and_said():
    at = goto(start(), "pages/2_design.py")
    box = at.number_input(key="w_adviser_n")
    assert box.value is None  # never prefilled from the table
    box.set_value(4000).run()
    assert not at.exception
    assert "Predictions use n = 4,000: the figure you gave as public on the Design page" in texts(at.caption)


def test_a_method_whose_preview_fails_is_shown_as_cannot_run_and_not_recommended(monkeypatch):
    at = start()
    at = goto(at, "pages/2_design.py")
    first = _ranking(at).iloc[0]["method"]
    name = next(n for n, s in REGISTRY.items() if s.display_name == first)
    real = dpcore.preview

    def failing(data, method="steps", **kw):
        if method == name:
            raise dpcore.OptionError(f"{method}: refused by this test")
        return real(data, method=method, **kw)

    monkeypatch.setattr(dpcore, "preview", failing)
    st.cache_data.clear()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    ranking = _ranking(at)
    row = ranking[ranking["method"] == first].iloc[0]
    assert row["verdict"] == "cannot run" and ranking.iloc[0]["method"] != first
    assert "refused by this test" in texts(at.markdown)
    assert at.session_state["cfg"]["release_method"] == "auto"


def _wait(at: AppTest) -> None:
    job = at.session_state["sweep_job"]
    assert job.wait(JOB_CEILING_S)
    time.sleep(0.05)
    at.run()
    assert not at.exception, [e.value for e in at.exception]


def test_tradeoffs_sweeps_at_the_designs_m_and_says_where_the_adviser_disagrees(monkeypatch):
    seen = {}

    def fake_sweep(data, methods, epsilons, reps, measures=(), progress=None, cancel=None, domain=None, sets=1,
                   **kw):
        seen["sets"], seen["methods"] = sets, methods
        rows = []
        for i, (label, _name, _opts) in enumerate(methods):
            for eps in epsilons:  # the last method listed wins at every ε
                rows += [(label, "{}", float(eps), 1, m, 10.0 - i) for m in measures]
        df = pd.DataFrame(rows, columns=["method", "options", "epsilon", "rep", "measure", "value"])
        df.attrs.update(cancelled=False, done=len(rows), total=len(rows))
        return df

    monkeypatch.setattr(dpcore.metrics, "sweep", fake_sweep)
    at = start()
    at.session_state["cfg"]["m"] = 3
    at = goto(at, "pages/5_tradeoffs.py")
    assert at.number_input(key="w_sw_sets").value == 3
    assert "at the design's m = 3" in texts(at.subheader)
    # the design's method (the adviser's pick) and one other; the other one wins in the fake sweep
    at.multiselect(key="w_sw_eps").set_value([1.0]).run()
    labels = at.multiselect(key="w_sw_methods").value
    assert len(labels) == 2
    next(b for b in at.button if b.label == "Run sweep").click()
    at.run()
    _wait(at)
    assert seen["sets"] == 3
    warning = texts(at.warning)
    assert "The adviser and this sweep disagree on your table" in warning and "ε = 1" in warning
    assert labels[1] in warning
    # m changed on the Design page: the sweep follows
    at.session_state["cfg"]["m"] = 1
    at.run()
    assert at.number_input(key="w_sw_sets").value == 1
