"""The Survey page's inputs in the workspace session (saved by pages/components/workspace.py).

Only the curator's choices are kept (query, ε, bounds, columns, candidate bins, …), never
data, uploads or results. Streamlit forgets a widget's value once its page is left, so
the values are copied into ``survey_inputs`` at the end of every Survey page run; the
page's widgets are seeded from it when their keys are absent (a reload, or a return
from another page).
"""
from __future__ import annotations

import streamlit as st

STATE_KEY = "survey_inputs"
#: Widget keys of the imputation tab and of the post-stratification tab.
IMPUTATION_KEYS = ("sv_target", "sv_match", "sv_k", "sv_rule", "sv_query", "sv_ages", "sv_lo", "sv_hi", "sv_thr",
                   "sv_where", "sv_ordinal", "sv_lo_own", "sv_hi_own", "sv_thr_own",
                   "sv_pubsize", "sv_eps", "sv_method", "sv_reps", "sv_rate")
POSTSTRAT_KEYS = ("ps_cols", "ps_outcome", "ps_ages", "ps_sex", "ps_e1", "ps_e2", "ps_e3", "ps_gamma",
                  "ps_glo_demo", "ps_ghi_demo", "ps_glo_up", "ps_ghi_up", "ps_weights", "ps_cols_up", "ps_where")
#: Keys with a name per column (candidate bins of each post-stratification column).
PREFIXES = ("ps_cand_",)
#: Range sliders: JSON gives back a list, the slider's value is a tuple.
RANGES = ("sv_ages", "ps_ages")


def _saved_key(k) -> bool:
    return isinstance(k, str) and (k in IMPUTATION_KEYS or k in POSTSTRAT_KEYS or k.startswith(PREFIXES))


def _plain(v):
    return list(v) if isinstance(v, tuple) else v


def remember() -> None:
    """Copy the page's current inputs into the session's saved dict (end of a Survey page run)."""
    s = st.session_state
    live = {k: _plain(s[k]) for k in list(s.keys()) if _saved_key(k)}
    s[STATE_KEY] = {**(s.get(STATE_KEY) or {}), **live}


def saved() -> dict:
    """What the workspace session stores."""
    return dict(st.session_state.get(STATE_KEY) or {})


def restore(values) -> None:
    """Bring back saved inputs (from the workspace session); the page seeds its widgets from them."""
    s = st.session_state
    s[STATE_KEY] = {k: v for k, v in dict(values or {}).items() if _saved_key(k)}


def seed() -> None:
    """Set every widget key that is absent to its saved value (start of a Survey page run)."""
    s = st.session_state
    for k, v in saved().items():
        if k not in s:
            s[k] = tuple(v) if k in RANGES and isinstance(v, list) else v


def keep_if_valid(key: str, options) -> None:
    """Drop a seeded value that is no longer among the widget's options (e.g. another upload's columns)."""
    s = st.session_state
    if key not in s:
        return
    v, opts = s[key], list(options)
    ok = all(x in opts for x in v) if isinstance(v, (list, tuple)) else v in opts
    if not ok:
        del s[key]
