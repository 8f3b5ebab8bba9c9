"""Data page: the column types. Read from the values they are only a proposal (NOT DP, labelled so); the curator
edits a column at a time (type, nullable, a whole number's role, declared levels) and declares them, and the
confirmed types are what the release uses. Widgets only: the rules are dpcore.studio.private_domain's and
dpcore.data.schema's; the session's types are pages/components/schema_state.py's.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dpcore.data.schema import PROPOSED_SCHEMA, TEXT, WHOLE, Schema
from dpcore.errors import DPCoreError
from dpcore.studio import private_domain
from pages.components import guard, schema_state

#: The label of everything read from the values that the release would otherwise take as public.
PROPOSED_LABEL = "NOT DP — types proposed from the values: review and declare them"


def _key(what: str, col: str = "") -> str:
    return f"w_ct_{what}_{col}@{st.session_state.get('data_key', '')}"


def _confirm(sch: Schema) -> None:
    """Declare ``sch``: refused in one line (a column declared not nullable with missing values)."""
    s = st.session_state
    try:
        declared, _, _ = private_domain.declare(sch, schema_state.kept_columns())
    except DPCoreError as exc:
        s["_ct_error"] = str(exc)
        return
    schema_state.set_schema(declared)
    s.pop("_ct_error", None)


def _editor(sch: Schema, disabled: bool) -> None:
    """One column's type, role, nullable and declared levels; "Apply" keeps them as a proposal to confirm."""
    s = st.session_state
    col = st.selectbox("Column", sch.names, key=_key("col"), disabled=disabled)
    now = sch[col]
    types = list(private_domain.TYPE_WORDS)
    c1, c2, c3 = st.columns([1, 2, 1])
    type_ = c1.selectbox(
        "Type",
        types,
        index=types.index(now.type),
        key=_key("type", col),
        format_func=private_domain.TYPE_WORDS.__getitem__,
        disabled=disabled,
    )
    role = None
    if type_ == WHOLE:
        roles = list(private_domain.ROLE_WORDS)
        role = c2.selectbox(
            "A whole number is a",
            roles,
            index=roles.index(now.role or "count"),
            key=_key("role", col),
            format_func=private_domain.ROLE_WORDS.__getitem__,
            disabled=disabled,
            help="A code's values are categories (found or declared as levels); a count or an amount is binned.",
        )
    nullable = c3.checkbox(
        "May be missing",
        value=now.nullable,
        key=_key("nullable", col),
        disabled=disabled,
        help="Missing is then a level of the column, so its share of missing values survives. "
        "A column declared never missing refuses a table where it is.",
    )
    levels = ""
    if type_ == TEXT or role == "code":
        levels = st.text_input(
            "Declared levels (optional, comma-separated: public, e.g. from a codebook)",
            ", ".join(map(str, now.levels or ())),
            key=_key("levels", col),
            disabled=disabled,
            help="Declared levels cost nothing to find; a value outside them becomes "
            "“other” (text) or missing (a code).",
        )
    if st.button("Apply to this column", key="w_ct_apply", disabled=disabled):
        try:
            schema_state.set_schema(private_domain.with_column(sch, col, type_, role, nullable, levels))
            s.pop("_ct_error", None)
        except DPCoreError as exc:
            s["_ct_error"] = str(exc)
        st.rerun()


def render(raw: pd.DataFrame) -> None:
    """The column types section of the Data page."""
    s = st.session_state
    sch = schema_state.table_schema()
    st.subheader("Column types", anchor=False)
    if sch.public:
        st.success(
            "Column types declared by you: public. The release casts each column to its type, record by "
            "record (a value that does not fit becomes missing); nothing about the values changes them.",
            icon=":material/verified:",
        )
        unfit = schema_state.unfit_values()
        if unfit:
            guard.not_dp_label(
                "NOT DP — curator only: values that did not fit their declared type, now missing: "
                + ", ".join(f"{c} {k:,}" for c, k in unfit.items())
            )
    else:
        guard.not_dp_label(PROPOSED_LABEL)
        st.caption(
            "Proposed from the values: a reader typed each column from what it holds, so one added record "
            "can change a type (a text value turns whole numbers into text, 2.5 turns them into numbers, "
            "an empty field makes them nullable). Check each column, edit it below, and declare them: a release "
            "that finds its domain privately is labelled NOT DP until you do."
        )
    st.dataframe(
        private_domain.schema_rows(sch, raw),
        hide_index=True,
        width="stretch",
        column_config={
            "read as": st.column_config.TextColumn(
                help="The type the file's reader gave the column: what the proposal was read from"
            )
        },
    )
    with st.expander("Edit a column's type", expanded=False):
        if sch.public:
            st.caption("Withdraw the declaration to edit the types.")
        _editor(sch, disabled=sch.public)
    if s.get("_ct_error"):
        st.error(s["_ct_error"], icon=":material/warning:")
    if not sch.public:
        if st.button(
            "Declare these column types public",
            type="primary",
            key="w_ct_confirm",
            help="Declares the types (names, type, whether missing, a whole number's role, declared "
            "levels) public knowledge: the release takes them as given, whatever the values.",
        ):
            _confirm(sch)
            st.rerun()
    elif st.button(
        "Withdraw the declared types",
        key="w_ct_withdraw",
        help="Back to a proposal (your edits kept): edit, then declare them again.",
    ):
        schema_state.set_schema(Schema(sch.columns, PROPOSED_SCHEMA))
        st.rerun()
