"""The Design page's saved designs: save the current design under a name in the session's workspace
(which creates it: a saved design is something to keep), load a saved one, export it as JSON and import
one exported from another workspace."""
from __future__ import annotations

import streamlit as st

from dpcore.errors import DPCoreError
from dpcore.studio import design as studio_design
from pages.components import state, workspace


def _load_design(name: str) -> None:
    s = st.session_state
    try:
        design = workspace.current().design(name)
    except DPCoreError as exc:  # a callback must not raise into the page
        s["_ws_notice"] = str(exc)
        return
    s["cfg"] = studio_design.migrate(design)
    for k in [k for k in s.keys() if isinstance(k, str) and k.startswith("w_") and k[2:] in s["cfg"]]:
        del s[k]  # Design page widgets are seeded from cfg again
    for k in ("w_eps_slider", "w_eps_typed", "layers_items"):
        s.pop(k, None)


def panel() -> None:
    """Save the current design under a name, load a saved one, export it as JSON (Design page)."""
    ws = workspace.current()
    if ws is None and not workspace.session_id():
        return
    st.subheader("Saved designs", anchor=False)
    with st.container(border=True):
        name = st.text_input("Name", key="w_design_name", placeholder="e.g. S7 two layers",
                             help="Saves ε, m, the method and the hierarchy settings of the Design page.")
        if st.button("Save design", key="w_design_save", disabled=not (name or "").strip()):
            ws = workspace.ensure()  # a saved design is something to keep: the workspace exists from now on
            if ws is not None:
                ws.save_design(name, state.cfg())
                st.caption(f"Saved '{name.strip()}'.")
        names = ws.designs() if ws is not None else []
        if names:
            pick = st.selectbox("Saved", names, key="w_design_pick")
            st.button("Load design", key="w_design_load", on_click=_load_design, args=(pick,),
                      help="Replace the current design with this one.")
            st.download_button("Export as JSON", ws.export_design(pick), f"design_{pick}.json", "application/json",
                               key="w_design_export", help="Import it into another workspace below.")
        st.file_uploader("Import a design (JSON)", type=["json"], key="w_design_import", on_change=_import_design,
                         help="A design exported from a workspace; it is saved here under its name.")
        if s_notice := st.session_state.get("_design_import_msg"):
            st.caption(s_notice)


def _import_design() -> None:
    s = st.session_state
    f = s.get("w_design_import")
    if f is None:
        return
    ws = workspace.ensure()
    if ws is None:
        return
    try:
        name = ws.import_design(f.getvalue().decode("utf-8", errors="replace"))
        s["_design_import_msg"] = f"Imported '{name}': pick it above and load it."
    except DPCoreError as exc:
        s["_design_import_msg"] = f":red[{exc}]"
