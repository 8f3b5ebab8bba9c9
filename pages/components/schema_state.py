"""The session's column types: the reader's proposal, the curator's edits, their confirmation, and the table cast to
them. Session state only (``schema``: the curator's types as a :class:`dpcore.data.schema.Schema` dict, None for the
proposal); no widgets here (pages/components/column_types.py draws them). :mod:`pages.components.state` reads this
module (the table the design releases is cast to the declared types), so this one never imports it.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dpcore.data.schema import Schema
from dpcore.errors import DPCoreError
from dpcore.studio import private_domain


def table_schema() -> Schema:
    """The column types of the loaded table (every column): the curator's, edited or confirmed (``schema``), else
    the reader's proposal (:func:`dpcore.studio.private_domain.proposal`: read from the values, NOT public)."""
    s = st.session_state
    raw = s["raw_df"]
    saved = s.get("schema")
    if saved:
        try:
            sch = Schema.from_dict(saved)
            if sorted(sch.names) == sorted(map(str, raw.columns)):
                return sch
        except DPCoreError:  # a saved schema that no longer reads: proposed again
            pass
    return private_domain.proposal(raw)


def declared_schema() -> Schema | None:
    """The column types the curator confirmed (public), or None while they are a proposal."""
    if "raw_df" not in st.session_state:
        return None
    sch = table_schema()
    return sch if sch.public else None


def conformed(df: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, int]]:
    """``df`` cast to the declared types record by record, and the values per column that did not fit (now missing:
    curator-only, NOT DP); kept for the session while the table, its columns and the types stay the same."""
    s = st.session_state
    declared = declared_schema()
    assert declared is not None
    key = (s.get("data_key"), tuple(map(str, df.columns)), declared.to_json())
    kept = s.get("_conformed")
    if not kept or kept[0] != key:
        _, cast, unfit = private_domain.declare(declared, df)
        cast.attrs = dict(df.attrs)
        kept = s["_conformed"] = (key, cast, unfit)
    return kept[1], kept[2]


def kept_columns() -> pd.DataFrame:
    """The loaded table without the dropped columns, as read (before the types are applied)."""
    s = st.session_state
    df = s["raw_df"]
    drop = [c for c in s.get("drop_cols", []) if c in df.columns]
    return df.drop(columns=drop) if drop else df


def unfit_values() -> dict[str, int]:
    """Curator-only, NOT DP: per column, the values that did not fit its declared type (now missing)."""
    if declared_schema() is None:
        return {}
    return conformed(kept_columns())[1]


def set_schema(schema: Schema | None) -> None:
    """Keep the curator's column types (None: back to the proposal). Declaring, changing or withdrawing declared
    types changes the table the domain describes, so the domain must be confirmed again."""
    s = st.session_state
    was = declared_schema()
    s["schema"] = None if schema is None else schema.to_dict()
    now = declared_schema()
    if was != now:
        s["domain_override"] = None
        s["domain_confirmed"] = False
        s.pop("release", None)
