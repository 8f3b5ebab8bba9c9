"""Curator's dashboard of the differential-privacy release studio.

Run with ``make run`` (serve.py: ``streamlit run app.py`` on 127.0.0.1). It opens on the Start page; then, in workflow
order: Data → Design → Preview (spends nothing) → Release (spends ε) → Trade-offs / Survey.
All computation is done by ``dpcore``; the pages only call it.

The navigation is drawn here as links (``client.showSidebarNavigation = false`` in
.streamlit/config.toml): Streamlit's automatic list of the ``pages/`` folder would otherwise
show the page files by their file names on the first load after a start. ``pages/`` holds only
the pages registered below; what they share is ``pages/components/`` (tests/test_architecture.py).
With login configured (docs/deploying.md) nothing but the login screen is drawn before the
person has logged in (pages/components/access.py). Nothing heavy is imported before the Start page has
drawn its first lines, so the first screen is never blank for long (bench/speed/cold_load.py); the
imports run once, under a lock (pages/components/imports.py).
"""
from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

st.set_page_config(page_title="DP release studio", page_icon=":material/lock:", layout="wide")

css = ROOT / "assets" / "styles.css"
if css.exists():
    st.markdown(f"<style>{css.read_text(encoding='utf-8')}</style>", unsafe_allow_html=True)

from pages.components import access  # Streamlit and the standard library only

access.gate()  # a network address without login is refused; with login, nothing opens before it

pages = [
    st.Page("pages/0_start.py", title="Start", icon=":material/home:", default=True),
    st.Page("pages/1_data.py", title="1 · Data", icon=":material/table_view:", url_path="data"),
    st.Page("pages/2_design.py", title="2 · Design", icon=":material/account_tree:", url_path="design"),
    st.Page("pages/3_preview.py", title="3 · Preview (spends nothing)", icon=":material/visibility:",
            url_path="preview"),
    st.Page("pages/4_release.py", title="4 · Release (spends ε)", icon=":material/inventory_2:", url_path="release"),
    st.Page("pages/5_tradeoffs.py", title="5 · Trade-offs", icon=":material/monitoring:", url_path="tradeoffs"),
    st.Page("pages/6_survey.py", title="6 · Survey estimates", icon=":material/query_stats:", url_path="survey"),
    st.Page("pages/7_docs.py", title="Docs and glossary", icon=":material/menu_book:", url_path="docs"),
]
nav = st.navigation(pages, position="hidden")

with st.sidebar:
    with st.container(key="studio_nav"):
        for p in pages:
            st.page_link(p, label=p.title, icon=p.icon)
    access.account()
    summary_slot = st.empty()

from pages.components import imports  # light: the heavy imports happen in imports.ready


def sidebar_summary() -> None:
    """The session's summary under the page links; drawn again after the page ran (the page may have
    changed the design or the table), replacing the first drawing."""
    from pages.components import guard, jobs, sidebar, workspace

    with summary_slot.container(), guard.guarded("the sidebar"):
        sidebar.summary()
        jobs.sidebar_notice()
        workspace.sidebar()


if nav.title != "Start":  # the Start page draws its first lines, then waits for the imports itself
    imports.ready()
    from pages.components import guard, session

    with guard.guarded("starting the session"):
        session.init_state()
    sidebar_summary()  # stays if the page stops early (st.stop ends the run: nothing after it is drawn)
    if st.session_state.get("_ws_refused"):  # the address named another's workspace: said on every page
        st.warning(st.session_state["_ws_refused"], icon=":material/block:")
try:
    nav.run()
except Exception as exc:  # never a traceback; Streamlit's rerun/stop are BaseExceptions
    imports.ready()
    from pages.components import guard

    guard.show_error(exc, f"the page '{nav.title}'")
finally:  # also after st.stop() / st.rerun(): the workspace keeps the table, domain, design and release
    imports.ready()
    from pages.components import guard, jobs, workspace

    with guard.guarded("the session"):
        jobs.collect_release()  # a release that finished while the curator was on another page
        workspace.persist()
    sidebar_summary()
