"""The private domain on the Data, Preview and Release pages: before the release, each column's forecast (found,
found coarsely, likely not found at this budget) and what would help; the Release page's refusal of a release with a
column forecast not found, unless the curator accepts it in words; after it, what the release found, column by
column, from its manifest. Widgets only: dpcore.studio.private_domain computes.
"""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from dpcore.measure.dp_domain import NOT_FOUND
from dpcore.studio import design, private_domain
from pages.components import guard, state


@st.cache_data(show_spinner=False, max_entries=16)
def _forecast(_df: pd.DataFrame, key: str, design_json: str, schema_json: str, n: float | None) -> list:
    from dpcore.data.schema import Schema

    return private_domain.design_forecast(_df, json.loads(design_json), Schema.from_dict(json.loads(schema_json)), n)


#: the design's settings the forecast reads
_READS = (
    "epsilon",
    "definition",
    "delta",
    "domain_share",
    "neighbours",
    "privacy_unit",
    "records_per_unit",
    "panel_time",
    "panel_wide",
)


def current() -> tuple[list, float, str | None] | None:
    """(the forecast, the record count it used, where that count comes from: None for the table's own) of the
    current design, or None when it does not find the domain privately. Raises DPCoreError in one line."""
    c = state.cfg()
    if not design.finds_domain_privately(c):
        return None
    sch = state.release_schema()
    n, source = state.public_record_count()
    fc = _forecast(
        state.work_df(),
        state.work_key(),
        json.dumps({k: c.get(k) for k in _READS}, sort_keys=True, default=str),
        sch.to_json(),
        n,
    )
    used = float(n) if n is not None else float(len(state.domain_df()))
    return fc, used, (source or None) if n is not None else None


def panel(title: str = "The private domain: will each column be found?") -> list | None:
    """The forecast, column by column, with what it was made from (NOT DP when it read the table's own record
    count or types proposed from the values); None when the design does not find its domain privately."""
    got = current()
    if got is None:
        return None
    fc, n, source = got
    sch = state.release_schema()
    basis, not_dp = private_domain.forecast_basis(sch.public, n, source)
    share = design.domain_share(state.cfg())
    st.subheader(title, anchor=False)
    if not_dp:
        guard.not_dp_label(
            "NOT DP — curator only: "
            + ("read with the table's own record count" if not source else "")
            + (" and " if not source and not sch.public else "")
            + ("from types proposed from the values" if not sch.public else "")
        )
    st.caption(basis)
    st.table(private_domain.forecast_rows(fc, n, share, sch).set_index("column"))  # a table: its long lines wrap
    summary = private_domain.forecast_summary(fc)
    if private_domain.not_found(fc):
        st.warning(
            summary + " The Release page refuses the release until you drop or declare each column likely "
            "not found, or accept in words what it releases.",
            icon=":material/visibility_off:",
        )
    else:
        st.info(summary, icon=":material/travel_explore:")
    return fc


def release_gate(key: str) -> bool:
    """The Release page's check before the button: True when the release may go. A column forecast not found is
    refused in one line unless the curator ticks the box that says, in words, what the release makes of it.
    Column types still proposed are said too (the release is then labelled NOT DP)."""
    got = current()
    if got is None:
        return True
    fc, _, _ = got
    sch = state.release_schema()
    if not sch.public:
        st.warning(
            "The column types are proposed from the values, not declared: this release will be labelled "
            "NOT DP. Declare them on the Data page (Column types).",
            icon=":material/warning:",
        )
    why = private_domain.refusal(fc)
    if why is None:
        return True
    st.error(why, icon=":material/block:")
    lost = ",".join(f.column for f in private_domain.not_found(fc))
    return st.checkbox(private_domain.accept_label(fc, sch), value=False, key=f"w_accept_not_found@{key}|{lost}")


def release_statuses(manifest: dict) -> None:
    """What a release that found its domain privately found, column by column, from its manifest (its noisy
    outputs only: post-processing, covered by ε); nothing for a declared domain."""
    table = private_domain.release_statuses(manifest)
    if table is None:
        return
    st.subheader("The private domain: what the release found", anchor=False)
    st.caption("From the release's own noisy outputs (post-processing: covered by ε, in the published manifest).")
    summary = private_domain.statuses_summary(manifest) or ""
    lost = private_domain.found_statuses(manifest).get(NOT_FOUND)
    (st.warning if lost else st.success)(summary, icon=":material/travel_explore:")
    st.table(table.set_index("column"))
