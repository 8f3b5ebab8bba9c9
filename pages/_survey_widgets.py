"""Widgets both Survey tabs draw."""
from __future__ import annotations

import streamlit as st

from pages import _common as ui


def show_ledger(ledger, key: str | None = None) -> dict:
    """The ledger's charges as a table, with each charge's note; returns the ledger dict."""
    st.subheader("Ledger")
    led = ledger.to_dict()
    rows = ui.ledger_rows(led)
    show = [c for c in ("component", "epsilon", "mechanism", "subset") if c in rows.columns]
    notes = [ch.get("note", "") for ch in led.get("charges", [])]
    st.dataframe(rows[show].assign(note=notes[: len(rows)]), hide_index=True, width="stretch",
                 column_config={"epsilon": st.column_config.NumberColumn("ε", format="%.4g")}, key=key)
    return led
