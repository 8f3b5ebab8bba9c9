"""The app's heavy imports (pandas, plotly, dpcore, the page helpers), once per process and in one
thread at a time.

Streamlit's fast reruns start a new script thread when the curator clicks while a run is still
going, so on a cold start two threads can import dpcore at once; a package with imports between
its modules then hands one of them a half-initialised module (seen: "cannot import name
'MIN_EPSILON' from partially initialized module 'dpcore.privacy.ledger'"). :func:`ready` imports them
under one lock; app.py calls it before any page that needs them, and the Start page after its
first lines (so the first screen is drawn before the imports).
"""
from __future__ import annotations

import importlib
import threading

_LOCK = threading.Lock()
_DONE = threading.Event()

MODULES = ("pandas", "numpy", "plotly.graph_objects", "dpcore", "dpcore.metrics", "dpcore.survey",
           "dpcore.studio.report", "dpcore.studio.workspace", "dpcore.studio.adviser", "dpcore.studio.jobs",
           "dpcore.studio.glossary", "dpcore.studio.access",
           *(f"pages.components.{name}" for name in ("guard", "state", "charts", "session", "workspace", "book_panel",
                                                      "saved_designs", "jobs", "noise", "glossary", "sidebar")))


def ready() -> None:
    """Import :data:`MODULES` (the first caller does; the others wait for it, then return at once)."""
    if _DONE.is_set():
        return
    with _LOCK:
        if not _DONE.is_set():
            for name in MODULES:
                importlib.import_module(name)
            _DONE.set()


def through_app() -> None:
    """Make the very first run after a server start go through app.py.

    A ``pages/`` folder next to app.py makes Streamlit run that first run in its old multipage
    mode until app.py has called ``st.navigation``: opened on a page's own address (a bookmark of
    ``/release?ws=…`` after a restart), the page file then runs alone, without app.py's page links
    and summary. Every page calls this first (through ``init_state``): in that case it switches
    the mode off and reruns, now through app.py. AppTest, which always runs a page file alone,
    is left as it is (its runtime is a stand-in, not Streamlit's server).
    """
    import streamlit as st
    from streamlit.runtime import Runtime
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory and type(Runtime._instance) is Runtime:
        PagesManager.uses_pages_directory = False
        st.rerun()
