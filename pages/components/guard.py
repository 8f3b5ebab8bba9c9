"""The pages' error guard and the NOT DP label.

:func:`guarded` shows dpcore's one-line message for a DPCoreError and a friendly error for
anything else, never a traceback; :func:`not_dp_label` marks what ε does not cover. Session
state and the dpcore calls are in ``pages/components/state.py`` and ``pages/components/session.py``, the figures in
``pages/components/charts.py``.

Not a page: ``app.py`` registers the pages explicitly with ``st.navigation``, so
this file is never listed in the sidebar.
"""
from __future__ import annotations

import contextlib
import logging

import streamlit as st

from dpcore.errors import DPCoreError

log = logging.getLogger("dpcore.app")


@contextlib.contextmanager
def guarded(what: str = "this page"):
    """Show dpcore's message for a DPCoreError, a friendly error otherwise; never a traceback.

    Streamlit's own control flow (rerun, stop, switch_page) derives from
    BaseException and passes through untouched.
    """
    try:
        yield
    except Exception as exc:  # the page must never show a traceback
        show_error(exc, what)


def show_error(exc: Exception, what: str = "this page") -> None:
    """dpcore's one-line message for a DPCoreError, a friendly error otherwise (logged)."""
    if isinstance(exc, DPCoreError):
        st.error(str(exc), icon=":material/warning:")
        return
    log.exception("unexpected error in %s", what, exc_info=exc)
    st.error(
        f"Something went wrong in {what} ({type(exc).__name__}: {exc}). "
        "Nothing was released. Check the inputs above, or reload the page; "
        "the full details are in the server log.",
        icon=":material/error:",
    )


def not_dp_label(text: str) -> None:
    """A red label for anything that is not covered by ε."""
    st.markdown(f":red[**{text}**]")
