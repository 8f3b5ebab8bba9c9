"""A session's first run and its table changes: the two steps that touch both the session state
(pages/components/state.py) and the workspace (pages/components/workspace.py). They live here, above both, so that the
workspace may read the state and the state never imports the workspace (no import circle)."""
from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from dpcore.errors import DPCoreError
from pages.components import imports, state, workspace


def init_state() -> None:
    """First load of a session: the workspace's saved state, else the S7 demo and the default design."""
    imports.through_app()  # the first run after a start, opened on a page's address: rerun through app.py
    s = st.session_state
    workspace.open_session()
    if "cfg" not in s:
        s["cfg"] = json.loads(json.dumps(state.DEFAULT_CFG))
    if "raw_df" not in s:
        try:
            load_demo(state.DEFAULT_DEMO, keep=False)  # opened by the studio, not the curator: nothing kept yet
        except DPCoreError as exc:  # assets missing: the Data page will say so
            s["load_error"] = str(exc)
        workspace.mark_initial()


def set_data(df: pd.DataFrame, name: str, keep: bool = True) -> None:
    """Replace the session's table (forgetting everything derived from the previous one); the
    workspace remembers it (created now, with ``keep``) and the budget book charges it."""
    state.reset_data(df, name)
    if keep:  # a table the curator loaded: the refusal of another's workspace is behind
        st.session_state.pop("_ws_refused", None)
    workspace.on_table_loaded(df, name, keep=keep)


def load_demo(name: str, keep: bool = True) -> None:
    set_data(state.read_table_cached(str(state.DEMOS[name])), name, keep=keep)
