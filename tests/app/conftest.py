"""What the AppTests of an upload share: AppTest cannot drive ``st.file_uploader``, so a fake one hands
the Data page's upload handler a queued file, as a real upload does (set_data forgets the previous table)."""
from __future__ import annotations

import pandas as pd
import pytest


class Upload:
    """An uploaded file as the Data page's handler reads it: a name, an id and its bytes (a DataFrame is
    written as CSV)."""

    def __init__(self, name: str, data: bytes | pd.DataFrame):
        self.name, self.file_id = name, name
        self._data = data.to_csv(index=False).encode() if isinstance(data, pd.DataFrame) else data

    def getvalue(self) -> bytes:
        return self._data


@pytest.fixture
def uploads(monkeypatch) -> dict:
    """Queue a file under the uploader's key (``uploads["w_upload"] = Upload(...)``); the next run loads it."""
    import streamlit as st

    queued: dict = {}

    def fake(label, *args, key=None, on_change=None, **kwargs):
        f = queued.pop(key, None)
        if f is not None and key == "w_upload":
            st.session_state[key] = f
            on_change()
        return f if f is not None else (None if key != "w_upload" else st.session_state.get(key))

    monkeypatch.setattr(st, "file_uploader", fake)
    return queued
