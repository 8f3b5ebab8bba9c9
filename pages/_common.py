"""What every page shares: the error guard, the NOT DP label, the "no data yet" check and
the labels of the design options.

Not a page: ``app.py`` registers the pages explicitly with ``st.navigation``, so files in
``pages/`` starting with ``_`` are never listed in the sidebar. Session state and data
handling are in :mod:`pages._state`, charts in :mod:`pages._charts`; their names are
re-exported here so a page needs one import.
"""
from __future__ import annotations

import contextlib
import logging

import streamlit as st

import dpcore
from dpcore.errors import DPCoreError
from pages._charts import (NOT_DP_RED, OKABE_ITO, PHANTOM_GREY, colour_map, icicle_figure,
                           ledger_figure, ledger_rows, log_ticks, plan_rows, preview_layer_names)
from pages._state import (ASSETS, DEFAULT_CFG, DEFAULT_DEMO, DEMOS, MAX_UPLOAD_MB, ROOT, cfg,
                          comparator_call, current_domain, data_hash, design_call, domain_status, init_state,
                          layer_groups, load_demo, method_label, methods, noised_layers, normalised_weights,
                          preview_for_design, read_upload, release_zip, run_release, set_data, ss, work_df,
                          work_key)


#: this module's own names, then those re-exported from _state and _charts (so a page needs one import)
__all__ = [
    "guarded", "not_dp_label", "need_domain", "EPS_GRID", "MODES", "NEIGHBOURS", "UTILITY_HELP",
    "ASSETS", "DEFAULT_CFG", "DEFAULT_DEMO", "DEMOS", "MAX_UPLOAD_MB", "ROOT", "cfg", "comparator_call",
    "current_domain", "data_hash", "design_call", "domain_status", "init_state", "layer_groups", "load_demo",
    "method_label", "methods", "noised_layers", "normalised_weights", "preview_for_design", "read_upload",
    "release_zip", "run_release", "set_data", "ss", "work_df", "work_key",
    "NOT_DP_RED", "OKABE_ITO", "PHANTOM_GREY", "colour_map", "icicle_figure", "ledger_figure", "ledger_rows",
    "log_ticks", "plan_rows", "preview_layer_names",
]

log = logging.getLogger("dpcore.app")

EPS_GRID = [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0, 20.0]

MODES = {
    "fixed": "Fixed order (drag attributes into layers)",
    "mosda": "Private selection: MoSDA (most informative first)",
    "lesda": "Private selection: LeSDA (least informative first)",
    "random": "Random selection (data-independent, spends nothing)",
}

NEIGHBOURS = {
    "add_remove": "Add or remove one person's record (the record count stays private)",
    "replace": "Replace one person's record (the record count n is public)",
}

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
    except DPCoreError as exc:
        st.error(str(exc), icon=":material/warning:")
    except Exception as exc:  # noqa: BLE001 - the page must never show a traceback
        log.exception("unexpected error in %s", what)
        st.error(
            f"Something went wrong in {what} ({type(exc).__name__}: {exc}). "
            "Nothing was released. Check the inputs above, or reload the page; "
            "the full details are in the server log.",
            icon=":material/error:",
        )


def not_dp_label(text: str) -> None:
    """A red label for anything that is not covered by ε."""
    st.markdown(f":red[**{text}**]")


def need_domain() -> dpcore.Domain | None:
    """For pages after Data: the domain, or an explanation and None."""
    if "raw_df" not in st.session_state:
        st.info("No data loaded yet: pick a demo or upload a file on the **Data** page.")
        return None
    dom, err = domain_status()
    if err:
        st.error(f"The data's domain is not usable yet: {err}", icon=":material/warning:")
        st.page_link("pages/1_data.py", label="Fix it on the Data page", icon=":material/table_view:")
        return None
    return dom
