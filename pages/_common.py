"""Shared UI plumbing for the dashboard pages: session state, caching, guards, charts.

No algorithms here: every number shown comes from ``dpcore``. This module only
keeps per-session state (``st.session_state``; never module globals, so two
browser sessions never see each other's data), wraps dpcore calls in Streamlit
caches keyed on the data hash, the domain JSON and the options, and draws charts.

Not a page: ``app.py`` registers the pages explicitly with ``st.navigation``, so
this file is never listed in the sidebar.
"""
from __future__ import annotations

import contextlib
import logging

import streamlit as st

from dpcore.errors import DPCoreError
from pages._charts import *  # noqa: F403 - the pages reach everything as ui.<name>
from pages._charts import NOT_DP_RED, OKABE_ITO, PHANTOM_GREY  # noqa: F401
from pages._session import init_state, load_demo, set_data  # noqa: F401 - the pages call them as ui.<name>
from pages._state import *  # noqa: F403
from pages._state import (  # noqa: F401
    ASSETS,
    DEFAULT_CFG,
    DEFAULT_DEMO,
    DEMOS,
    MAX_UPLOAD_MB,
    MODES,
    NEIGHBOURS,
    ROOT,
    read_table_cached,
)

log = logging.getLogger("dpcore.app")

EPS_GRID = [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0, 20.0]

UTILITY_HELP = {
    "aic": "−AIC of the attribute's one-way table at the node (2021 paper). Sensitivity 2·ln(N+1)+4, N the public "
           "bound on table size (add/remove) or n (replace).",
    "aic_gain": "AIC drop against a uniform distribution (2018 paper). Sensitivity 2·max(ln(N+1), ln K)+4.",
    "l1_uniform": "L1 distance of the node's counts from uniform. Sensitivity 2: the least noisy score.",
}



# --------------------------------------------------------------------------- guards


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


