"""The Start page's list of every workspace on the server, with its owner and tables: for admins
of a server with login (a local server's one user sees their own workspace's folder instead)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from dpcore.studio.access import Registry
from dpcore.studio.workspace import DB_NAME, Workspace, root_folder


def _rows() -> list[dict]:
    root = root_folder()
    owners = {w["id"]: w for w in Registry(root).workspaces()}
    folders = sorted(p.name for p in root.iterdir() if (p / DB_NAME).is_file()) if root.is_dir() else []
    rows = []
    for ws_id in folders:
        ws = Workspace(root / ws_id)
        owner = owners.get(ws_id, {})
        tables = ws.tables() or [None]
        for t in tables:
            budget = ws.budget(t.fingerprint) if t is not None else {}
            rows.append({"workspace": f"?ws={ws_id}", "owner": owner.get("owner", "(none on record)"),
                         "created (UTC)": owner.get("created_at", ""), "table": "" if t is None else t.name,
                         "spent ε": budget.get("spent"), "cap": budget.get("cap"), "folder": str(ws.folder)})
    return rows


def every_workspace() -> None:
    st.subheader("Every workspace on this server (admin)", anchor=False)
    rows = _rows()
    if not rows:
        st.caption("No workspace yet.")
        return
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="admin_workspaces",
                 column_config={"workspace": st.column_config.LinkColumn("workspace", display_text=r"\?ws=(.*)"),
                                "spent ε": st.column_config.NumberColumn(format="%.4g")})
    st.caption("A workspace's link opens it in this tab (admins open every workspace). Caps are set on the "
               "Release page of the table's workspace.")
