"""Start: what the studio does, the flow of its pages, the demo, where the workspace lives (its
folder only on a local server or to an admin), and for an admin every workspace of the server.

Its first lines need nothing but Streamlit, so the first screen after a cold start is never
blank for long; the session (workspace, demo table) is opened after them."""
from __future__ import annotations

import streamlit as st

st.title("DP release studio", anchor=False)
st.markdown(
    "Release **differentially private synthetic copies** of a sensitive table: you declare what is public "
    "(the columns' levels and bin edges), choose a method and a privacy budget **ε**, and download synthetic "
    "sets with a manifest that says where every part of ε went. Every release is recorded in the table's "
    "**budget book**, and a cap on the total ε refuses a release that would pass it.")

STEPS = [
    ("1 · Data", "Upload a table or open a demo; confirm what is public.", "pages/1_data.py"),
    ("2 · Design", "Method (the adviser recommends one), ε, sets; noise check.", "pages/2_design.py"),
    ("3 · Preview", "What the release will measure and its noise. Spends nothing.", "pages/3_preview.py"),
    ("4 · Release", "One click, one release at the ε on the button.", "pages/4_release.py"),
    ("5 · Trade-offs", "Compare methods over ε: curator-only, never released.", "pages/5_tradeoffs.py"),
    ("6 · Survey", "Survey estimates from the same table, charged to its budget book.", "pages/6_survey.py"),
]
cols = st.container(key="step_cards").columns(len(STEPS), gap="small")  # equal heights: assets/styles.css
for k, (col, (title, text, page)) in enumerate(zip(cols, STEPS)):
    with col.container(border=True, key=f"step_card_{k}"):
        st.page_link(page, label=title)
        st.caption(text)

from pages.components import imports

imports.ready()  # the heavy imports, after the first lines are on screen
from pages.components import guard, session, state

session.init_state()
s = st.session_state
from pages.components import access, workspace

c1, c2 = st.columns([1, 2], gap="large")
with c1:
    st.subheader("Try it on the demo", anchor=False)
    st.caption(f"{state.DEFAULT_DEMO}: a public extract of a social survey, with its provenance in assets/README.md.")
    if st.button("Open the demo", type="primary", key="start_demo",
                 help="Loads the demo table and opens the Data page; your workspace keeps it."):
        with guard.guarded("opening the demo"):
            if s.get("data_name") != state.DEFAULT_DEMO:
                session.load_demo(state.DEFAULT_DEMO)
            else:  # the demo the studio opened is now the curator's table: keep it
                workspace.ensure()
            st.switch_page("pages/1_data.py")
    st.page_link("pages/7_docs.py", label="Docs and glossary", icon=":material/menu_book:")

with c2:
    st.subheader("Where your work is kept", anchor=False)
    if s.get("_ws_refused") and workspace.current() is None:  # the address named someone else's workspace
        st.warning(s["_ws_refused"], icon=":material/block:")
    ws, ws_id = workspace.current(), workspace.session_id()
    if ws is not None:
        st.markdown(
            f"This browser tab works in the workspace **`{ws.id}`**: its id is in the page address "
            f"(`?ws={ws.id}`), so a reload or a bookmark comes back to the same table, design, releases and "
            "budget book. A tab opened without the id does not open it: it starts on the demo and keeps nothing "
            "until you load a table or change something.")
        if access.may_see_paths():
            from dpcore.studio.workspace import ENV_VAR

            st.caption(f"On this server it is the folder `{ws.folder}`, under the folder named by `{ENV_VAR}`.")
    elif ws_id:
        st.markdown(
            "Nothing is kept yet: this tab shows the demo, and its workspace is created when you **load a table** "
            "(or change the demo's domain, design or cap, or release). From then on its id is in the page address "
            "(`?ws=…`), so a reload or a bookmark comes back to the same table, design, releases and budget book.")
    else:
        st.warning(s.get("_ws_error", "No workspace is open: nothing is saved across reloads."),
                   icon=":material/warning:")
    if access.login_on():
        st.caption("A workspace belongs to the person who created it: its id alone opens nothing for anyone else; "
                   "admins open every workspace and set the tables' caps.")
    else:
        st.caption("The id is a random token, not a password: this server has no login, so keep it on this "
                   "machine (`make run` listens on 127.0.0.1 only; docs/deploying.md for a team server).")
    if "raw_df" in s:
        st.caption(f"Table now: **{s.get('data_name', '')}** — continue on the Data page.")

who = access.identity()
if access.login_on() and who is not None and who.admin:
    from pages.components import admin

    admin.every_workspace()
