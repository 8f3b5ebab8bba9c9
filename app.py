"""Curator's dashboard of the differential-privacy release studio.

Run with ``make run`` (``streamlit run app.py``). Five pages, in workflow order:
Data → Design → Preview (spends nothing) → Release (spends ε) → Trade-offs.
All computation is done by ``dpcore``; the pages only call it.
"""
from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pages import _common as ui  # noqa: E402
from pages import _workspace as wsui  # noqa: E402

st.set_page_config(page_title="DP release studio", page_icon=":material/lock:", layout="wide")

css = ROOT / "assets" / "styles.css"
if css.exists():
    st.markdown(f"<style>{css.read_text(encoding='utf-8')}</style>", unsafe_allow_html=True)

with ui.guarded("starting the session"):
    ui.init_state()

pages = [
    st.Page("pages/1_data.py", title="1 · Data", icon=":material/table_view:", default=True),
    st.Page("pages/2_design.py", title="2 · Design", icon=":material/account_tree:"),
    st.Page("pages/3_preview.py", title="3 · Preview (spends nothing)", icon=":material/visibility:"),
    st.Page("pages/4_release.py", title="4 · Release (spends ε)", icon=":material/inventory_2:"),
    st.Page("pages/5_tradeoffs.py", title="5 · Trade-offs", icon=":material/monitoring:"),
    st.Page("pages/6_survey.py", title="6 · Survey estimates", icon=":material/query_stats:"),
]
nav = st.navigation(pages)

with st.sidebar, ui.guarded("the sidebar"):
    s = st.session_state
    if "raw_df" in s:
        st.caption(f"**Data:** {s.get('data_name', '')}  \n{len(s['raw_df']):,} rows × {s['raw_df'].shape[1]} columns")
        dom, err = ui.domain_status()
        if err:
            st.caption(":red[Domain needs attention (see Data page)]")
        elif dom.inferred:
            st.caption(":red[Domain inferred from data — not yet confirmed: releases are NOT DP]")
        else:
            st.caption(":green[Domain declared public]")
        c = s["cfg"]
        st.caption(f"**ε = {c['epsilon']:g}**, m = {c['m']} sets, {ui.MODES[c['mode']].split(' (')[0]}")
    st.caption("Curator-only views are marked :red[NOT FOR RELEASE]; only the synthetic sets and the "
               "manifest are covered by ε.")

with st.sidebar, ui.guarded("the workspace"):
    wsui.sidebar()

try:
    with ui.guarded(f"the page '{nav.title}'"):
        nav.run()
finally:  # also after st.stop() / st.rerun(): the workspace keeps the table, domain, design and release
    wsui.persist()
