"""Data page: the privacy unit (widgets only). A column that looks like an identifier with repeated values (a
person's id in a panel) is flagged, curator-only, with what the raw data say of it; the curator chooses what the
release protects (one record, or each value of a column with all of its records), K (their own public figure,
never prefilled from the data) and, for a panel whose time column is declared, whether to release it wide.

The rules live in dpcore: :func:`dpcore.counting.contributions.unit_candidates` and ``unit_summary`` (what is
shown, NOT DP), :func:`dpcore.studio.design.unit_options` / ``unit_problems`` (the design's call and its one-line
refusals); the choices are kept in the design (pages/components/state.py).
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

import dpcore
from dpcore.counting.contributions import MAX_RECORDS_PER_UNIT, unit_candidates, unit_summary
from dpcore.studio import design
from pages.components import guard, state


@st.cache_data(show_spinner=False, max_entries=8)
def _candidates(_raw: pd.DataFrame, key: str) -> list[str]:
    return unit_candidates(_raw)


@st.cache_data(show_spinner=False, max_entries=32)
def _summary(_raw: pd.DataFrame, key: str, column: str) -> dict:
    return unit_summary(_raw, column)


def _key(name: str) -> str:
    """A widget's key, per table: a new table starts with its own (pages/components/state.py drops the old)."""
    return f"w_{name}@{st.session_state.get('data_key', '')}"


def _whole(value) -> int | None:
    """K as the number box can show it: a whole number from 1, else nothing (the refusal says why)."""
    try:
        k = int(value)
    except (TypeError, ValueError):
        return None
    return k if k == value and 1 <= k <= MAX_RECORDS_PER_UNIT else None


#: the select boxes' choice of no column (a select box shows None as no choice at all)
NONE = ""


def _on_unit(key: str) -> None:
    state.set_unit(st.session_state[key] or None)


def _on_k(key: str) -> None:
    value = st.session_state[key]
    state.cfg()["records_per_unit"] = None if value is None else int(value)


def _on_time(key: str) -> None:
    c = state.cfg()
    c["panel_time"] = st.session_state[key] or None
    if not c["panel_time"]:
        c["panel_wide"] = False


def _on_layout(key: str) -> None:
    state.cfg()["panel_wide"] = st.session_state[key] == "wide"


def _sync(key: str, value) -> str:
    """The widget shows the design's value: its callback wrote the design, or the design changed elsewhere (a
    saved design loaded, a session restored)."""
    if st.session_state.get(key, object()) != value:
        st.session_state[key] = value
    return key


def render(raw: pd.DataFrame, dom: dpcore.Domain | None) -> None:
    """The privacy unit's panel: the flags, the choice of unit, K, and a panel's time column and layout. ``dom``:
    the domain as it stands (None while it has an error): a panel's periods are its time column's levels."""
    s, c = st.session_state, state.cfg()
    work = state.work_df()
    columns = [str(col) for col in work.columns]
    flagged = [col for col in _candidates(raw, s.get("data_key", "")) if col in columns]
    st.subheader("Privacy unit", anchor=False)
    for col in flagged:
        facts = _summary(raw, s.get("data_key", ""), col)
        st.info(f"`{col}` repeats: {facts['values']:,} values, up to {facts['largest']:,} records each. "
                f"Protect each {col}?", icon=":material/group:")
    if flagged:
        guard.not_dp_label("NOT DP — counted in the raw data, curator only: the release never uses these counts")
    unit_key = _sync(_key("unit"), c.get("privacy_unit") if c.get("privacy_unit") in columns else NONE)
    options = [NONE, *flagged, *(col for col in columns if col not in flagged)]
    st.selectbox("What the release protects", options, key=unit_key, on_change=_on_unit, args=(unit_key,),
                 format_func=lambda col: "one record (each row of the table)" if col == NONE
                 else f"each '{col}' with all of its records",
                 help="A person with several records (a panel: one per year) is protected at their number of "
                      "records × ε when the release protects one record. Protecting each value of an identifier "
                      "column protects the person: the release keeps at most K of their records (chosen at random), "
                      "never releases the identifier, and calibrates every noise to K records.")
    unit = state.unit_column()
    if unit is not None:
        _time_and_layout(unit, columns, dom)
        if not design.is_wide(c):
            _records_per_unit(unit, dom)
        st.caption(f"The release protects {design.unit_description(c)}. The column '{unit}' is never released and "
                   "is left out of the domain below.")
    for problem in design.unit_problems(c, columns, dom):  # a unit the table lacks, K missing or not a number
        st.error(problem, icon=":material/warning:")


def _time_and_layout(unit: str, columns: list[str], dom: dpcore.Domain | None) -> None:
    """The panel's time column (a categorical column of the domain, named by the curator) and, with one, the
    choice of releasing the panel record by record or wide."""
    c = state.cfg()
    periods = [a.name for a in (dom.attributes if dom is not None else ()) if a.kind == "categorical"]
    if dom is not None and c.get("panel_time") not in periods:  # not a categorical column of the domain (any more)
        c.update(panel_time=None, panel_wide=False)
    elif c.get("panel_time") and c["panel_time"] not in periods:  # the domain has an error now: kept meanwhile
        periods.append(c["panel_time"])
    time_key = _sync(_key("panel_time"), c.get("panel_time") or NONE)
    c1, c2 = st.columns([1, 1])
    c1.selectbox("Time column of the panel (optional)", [NONE, *periods], key=time_key, on_change=_on_time,
                 args=(time_key,), format_func=lambda col: "none" if col == NONE else col,
                 help="The column that says which period (year, wave) a record belongs to, with its periods "
                      "declared as its levels (public). It lets the studio suggest K and release the panel wide.")
    time = c.get("panel_time")
    if not time:
        return
    layout_key = _sync(_key("panel_layout"), "wide" if c.get("panel_wide") else "records")
    labels = {"records": f"records, at most K per '{unit}' (each synthetic record stands alone)",
              "wide": f"the panel wide: one synthetic record per '{unit}', a column group per {time}"}
    c2.radio("Release the panel as", list(labels), key=layout_key, format_func=labels.get, on_change=_on_layout,
             args=(layout_key,),
             help="Records: every count's noise is K times a record's, and the synthetic records of one "
                  f"'{unit}' are not kept together. Wide: each '{unit}' is one record of a table with a column "
                  f"group per declared {time} (a record's noise), so each synthetic '{unit}' keeps its path "
                  "through the periods; the sets come back as a panel with fresh ids.")


def _records_per_unit(unit: str, dom: dpcore.Domain | None) -> None:
    """K: the curator's own figure (never prefilled from the data), with a suggestion from public facts only:
    the number of periods the declared domain lists for the panel's time column."""
    c = state.cfg()
    k_key = _sync(_key("records_per_unit"), _whole(c.get("records_per_unit")))
    c1, c2 = st.columns([1, 1], vertical_alignment="bottom")
    c1.number_input(f"Records kept per '{unit}' (K)", min_value=1, max_value=MAX_RECORDS_PER_UNIT, step=1,
                    key=k_key, on_change=_on_k, args=(k_key,),
                    placeholder="your public figure, e.g. the panel's length",
                    help=f"The most records one '{unit}' may contribute: public, your own figure (the panel's "
                         "length, the survey design's largest household), never read from the data, which would "
                         f"publish the largest '{unit}'. Records beyond K are dropped at random; every noise is "
                         "K times a record's.")
    time = c.get("panel_time")
    if not time or dom is None or time not in dom.names:
        return
    periods = len(dom[time].levels)  # the declared periods (a missing period is no period)
    if not state.is_declared(dom):
        c2.caption(f"Once the domain is confirmed (below), its periods of '{time}' suggest K.")
        return
    c2.button(f"Use K = {periods}: the {periods} declared periods of '{time}'", key=_key("use_periods"),
              on_click=_use_periods, args=(k_key, periods),
              help="A panel of that many periods holds at most that many records per person: a public fact of the "
                   "declared domain.")


def _use_periods(key: str, periods: int) -> None:
    st.session_state[key] = periods
    state.cfg()["records_per_unit"] = periods


def preview_note(plan: dict) -> None:
    """The Preview page's two lines on the privacy unit: what the release protects (the neighbour notion of
    ``plan["protects"]``) and which records a synthetic record keeps together (``plan["layout"]``)."""
    protects = plan.get("protects") or {}
    who = protects.get("protects") or "one record"
    how = "add/remove" if protects.get("notion", "add_remove") == "add_remove" else "replace"
    text = (f"**The release protects** {who}, under {how} neighbours.  \n"
            f"**Layout of the synthetic records:** {plan.get('layout', 'records, as in the table')}.")
    if protects.get("privacy_unit"):
        st.info(text, icon=":material/group:")
    else:
        st.markdown(text)
