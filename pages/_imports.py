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

MODULES = ("pandas", "numpy", "plotly.graph_objects", "dpcore", "dpcore.metrics", "dpcore.survey", "dpcore.studio.report",
           "dpcore.studio.workspace", "dpcore.studio.adviser", "dpcore.studio.jobs", "dpcore.studio.glossary",
           "pages._common", "pages._workspace", "pages._jobs", "pages._noise", "pages._glossary", "pages._sidebar")


def ready() -> None:
    """Import :data:`MODULES` (the first caller does; the others wait for it, then return at once)."""
    if _DONE.is_set():
        return
    with _LOCK:
        if not _DONE.is_set():
            for name in MODULES:
                importlib.import_module(name)
            _DONE.set()
