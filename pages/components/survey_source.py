"""Which table a Survey tab reads (widgets only): the table loaded on the Data page, or a bundled
survey demo. The Data page's table is the default once the curator loaded one of their own (an
upload or a file on the server); while the app's starting demo is loaded, the survey demo is.
A new table on the Data page brings the default back."""
from __future__ import annotations

import streamlit as st

from pages.components import state
from pages.components import survey_session as session

#: The two choices of every tab.
DATA, DEMO = "data", "demo"


def _own_table_loaded() -> bool:
    s = st.session_state
    return "raw_df" in s and s.get("data_name") not in state.DEMOS


def choose(key: str, demo_label: str, demo_available: bool, resets: tuple[str, ...] = ()) -> str | None:
    """The radio "Table" of one tab: DATA, DEMO, or None when neither can be offered. When the
    choice changes, the widgets named in ``resets`` (the other table's columns) start afresh."""
    s = st.session_state
    options = ([DATA] if "raw_df" in s else []) + ([DEMO] if demo_available else [])
    if not options:
        return None
    marker = f"_{key}_table"
    if s.get(marker) != s.get("data_key"):  # another table on the Data page: its default again
        s.pop(key, None)
        s[marker] = s.get("data_key")
    session.keep_if_valid(key, options)
    if key not in s:
        s[key] = DATA if _own_table_loaded() or DEMO not in options else DEMO
    name = s.get("data_name") or "no name"
    labels = {DATA: f"The table on the Data page ({name})", DEMO: demo_label}
    choice = st.radio("Table", options, format_func=labels.get, key=key, horizontal=True,
                      help="The confidential table this tab reads. Its releases are charged to that table's budget "
                           "book. The bundled demo stands in for a survey when you have none loaded.")
    last = f"_{key}_last"
    if s.get(last) not in (None, choice):
        for k in resets:
            s.pop(k, None)
    s[last] = choice
    return choice
