"""The Survey page's releases through the installation's budget book (dpcore.studio.survey_book).

Each tab names the table its release reads: the table loaded on the Data page (already
registered, charged under the session's ``table_fp``) or a bundled demo file (fingerprinted as
the workspace fingerprints tables, dpcore.studio.workspace.table_fingerprint, and registered
like the Data page registers tables). Every release is reserved against that table's cap
before any randomness is drawn. Without a workspace, releases run as before.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import streamlit as st

from dpcore.errors import DPCoreError
from dpcore.studio.survey_book import record_survey_release
from dpcore.studio.workspace import table_fingerprint
from pages.components import access, workspace


@dataclass(frozen=True)
class SurveyTable:
    """The table a survey release reads: its data as read, a name, its file (demos) and fingerprint;
    ``registered``: the workspace already holds it (the Data page's table)."""

    df: pd.DataFrame
    name: str
    path: Path | None
    fingerprint: str
    registered: bool = False


@st.cache_data(show_spinner=False, max_entries=4)
def _read_file(path: str, mtime: float) -> tuple[pd.DataFrame, str]:
    """The file as read_table reads it (as the Data page does) and its fingerprint."""
    from dpcore.data.io import read_table

    df = read_table(path)
    return df, table_fingerprint(df)


def demo_table(path: Path, name: str) -> SurveyTable:
    """A bundled file as read_table reads it: the whole file, before any filtering a tab does
    (a per-record filter keeps add/remove neighbours neighbours, so the file is what is charged)."""
    df, fp = _read_file(str(path), Path(path).stat().st_mtime)
    return SurveyTable(df, name, Path(path), fp)


def loaded_table(df: pd.DataFrame) -> SurveyTable:
    """The table on the Data page (``df``: its working table), charged to the book of the table the
    Data page registered (``table_fp``), as its synthetic-data releases are."""
    s = st.session_state
    return SurveyTable(df, s.get("data_name") or "", None, s.get("table_fp") or "", registered=True)


def _register(ws, table: SurveyTable) -> None:
    if table.registered:
        return
    try:
        ws.add_table(table.df, table.name, path=table.path, fingerprint=table.fingerprint)
    except DPCoreError as exc:  # an upload that cannot be copied: still charged, not restored
        st.session_state["_ws_notice"] = str(exc)



@dataclass(frozen=True)
class ReadTable:
    """What a Survey tab reads: the data, its cache key, the table the budget book charges, and whether it
    is a bundled demo."""

    df: pd.DataFrame
    key: str
    charged: SurveyTable
    demo: bool


def recorded(run, table: SurveyTable, *, epsilon: float, method: str, dp: bool | None = None,
             not_dp_reason: str = ""):
    """``run()`` through the budget book of ``table``: ``(release, book entry id or None)``.
    Raises BudgetExceeded (one line naming what remains) before anything runs."""
    ws = workspace.ensure()  # created now if the session had kept nothing yet: the release is charged
    if ws is None or not table.fingerprint:
        return run(), None
    _register(ws, table)
    rec = record_survey_release(ws.book, table.fingerprint, run, epsilon=epsilon, method=method,
                                table_name=table.name, dp=dp, not_dp_reason=not_dp_reason, workspace=ws.id,
                                user=ws.user)
    return rec.release, rec.entry_id


def book_panel(table: SurveyTable, key: str) -> None:
    """Spent / cap / remaining of the table this tab reads, and its cap."""
    ws = workspace.ensure()
    if ws is None or not table.fingerprint:
        st.caption(":orange[No workspace is open: survey releases are not recorded in a budget book.]")
        return
    b = ws.budget(table.fingerprint)
    text = (f"**Budget book** of `{table.name}` (every workspace): spent ε = {b['spent']:.4g}"
            + (", no cap set" if b["cap"] is None else f" of the cap {b['cap']:.4g}; remaining {b['remaining']:.4g}")
            + ". Survey releases and synthetic-data releases of this table add up against one cap.")
    with st.expander("Budget book of this table", expanded=False):
        st.caption(text)
        admin = access.may_set_caps()
        c1, c2, c3 = st.columns([2, 1, 1])
        cap = c1.number_input("Cap on this table's total ε", min_value=0.0, value=float(b["cap"] or 0.0), step=0.5,
                              key=f"{key}_cap", disabled=not admin,
                              help="The lifetime budget of this table across every workspace. Setting it below "
                                   "what is spent refuses every further release.")
        if not admin:
            st.caption("Only an admin sets a table's cap; ask one to set or raise it.")
        if c2.button("Set cap", key=f"{key}_cap_set", disabled=not admin):
            if cap <= 0:
                st.error("The cap must be greater than 0; use Remove cap for no cap.", icon=":material/warning:")
            else:
                _register(ws, table)
                ws.book.set_cap(table.fingerprint, cap, user=ws.user)
                st.rerun()
        if c3.button("Remove cap", key=f"{key}_cap_clear", disabled=b["cap"] is None or not admin):
            ws.book.set_cap(table.fingerprint, None, user=ws.user)
            st.rerun()
