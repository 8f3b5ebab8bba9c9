"""The budget book on the pages: the Release page's panel of the current table (spent and remaining
as a bar, every release of the table with its user, its cap, the audit trail to download) and the Data
page's question when a loaded table looks like one the book knows. The book itself is the
installation's (dpcore.studio.budget_book), reached through the session's workspace
(pages/components/workspace.py)."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dpcore.privacy.neighbours import describe_book_notion
from dpcore.studio.table_match import match_known
from dpcore.studio.workspace import Workspace
from pages.components import access, workspace


def panel() -> None:
    """Spent / remaining of the current table as a bar and its whole history (every workspace's
    releases of it, with their users), its cap (set by admins only), and the table's audit trail to download."""
    ws, fp = workspace.ensure(), st.session_state.get("table_fp")
    st.subheader("Budget book of this table", anchor=False)
    if ws is None or not fp:
        st.warning(st.session_state.get("_ws_error", "No workspace is open: releases are not recorded."),
                   icon=":material/warning:")
        return
    entries = [e for e in ws.releases(fp) if e["status"] != "aborted"]
    b = ws.budget(fp)
    done = sum(e["epsilon"] for e in entries if e["status"] == "complete")
    pending = sum(e["epsilon"] for e in entries if e["status"] == "pending")
    st.caption("Every release of this table (same fingerprint, through any workspace of this installation, the "
               "command line or the API) adds its ε: releases compose sequentially, so the table's privacy loss is "
               "at most the sum. A release that would exceed the cap is refused before anything is spent.")
    if ws.book.account(fp) != fp:
        st.caption(f"This table is charged to the table “{_book_name(ws, ws.book.account(fp))}” it looks like "
                   "(see the Data page).")
    notion = next((e["neighbours"] for e in entries if e["status"] in ("complete", "pending")), None)
    if notion:  # the notion the table is kept under: a record, or a privacy unit (never mixed)
        st.caption(f"This table's book is kept for {describe_book_notion(notion)}: every release of it protects "
                   "the same, so their budgets add up.")
    if b.get("pure_epsilon") is None and entries:
        st.caption(f"Some releases are (ε, δ) through zCDP, so the table's total is stated as (ε, δ) at the "
                   f"book's δ = {b['delta']:g}: the smaller ε of basic composition and of the releases' ρ "
                   f"(ρ = {b['rho']:.4g}, a pure ε release counting ε²/2) converted at that δ.")
    _book_bar(b, done, pending, entries)
    if entries:
        _book_history(ws, fp, entries)
    _cap_controls(ws, fp, b)


def _book_name(ws: Workspace, fp: str) -> str:
    return next((t["name"] for t in ws.book.known_tables() if t["fingerprint"] == fp), fp[:12])


def _book_bar(b: dict, done: float, pending: float, entries: list) -> None:
    fig = go.Figure()
    fig.add_bar(y=["ε"], x=[done], name="spent", orientation="h", marker_color="#D55E00",
                hovertemplate="spent %{x:.4g}<extra></extra>")
    if pending:
        fig.add_bar(y=["ε"], x=[pending], name="pending (counted as spent)", orientation="h", marker_color="#E69F00")
    if b["cap"] is not None:
        fig.add_bar(y=["ε"], x=[b["remaining"]], name="remaining", orientation="h", marker_color="#009E73",
                    hovertemplate="remaining %{x:.4g}<extra></extra>")
    title = (f"spent ε = {b['spent']:.4g}" + (" (no cap set)" if b["cap"] is None else
                                              f" of the cap {b['cap']:.4g}; remaining {b['remaining']:.4g}"))
    if b.get("pure_epsilon") is None and entries:  # some release is (ε, δ): the total is stated at the book's δ
        title += f" — as (ε, δ) = ({b['epsilon_at_delta']:.4g}, {b['delta']:g})"
    fig.update_layout(barmode="stack", height=170, title=dict(text=title, y=0.9), margin=dict(l=10, r=10, t=50, b=10),
                      legend=dict(orientation="h", y=-0.35), xaxis_title="ε")
    st.plotly_chart(fig, config={"displaylogo": False}, key="budget_book_bar")


def _book_history(ws: Workspace, fp: str, entries: list) -> None:
    # narrow columns, so that the whole row fits at 1280 px: the minute is enough, the neighbours are
    # abbreviated, and the manifest's hash is its first 12 digits (the audit trail has all of it)
    rows = pd.DataFrame([{
        "#": e["id"], "time (UTC)": str(e["completed_at"] or e["reserved_at"] or "")[:16].replace("T", " "),
        "workspace": ("this one" if e["workspace"] == ws.id else e["workspace"]) or "CLI / API",
        "user": e["user"] or "-", "method": e["method"],
        "ε": e["epsilon"],
        "δ; ρ": "-" if e.get("delta") is None else f"{e['delta']:g}; {e['rho']:.3g}" if e.get("rho") is not None
        else f"{e['delta']:g}",
        "neighbours": _notion_short(e["neighbours"]),
        "status": e["status"], "DP": {1: "yes", 0: "NOT DP"}.get(e["dp"], "-"),
        "manifest": (e["manifest_sha256"] or "")[:12],
    } for e in entries])
    if (rows["δ; ρ"] == "-").all():  # no (ε, δ) release of this table: no column for it
        rows = rows.drop(columns=["δ; ρ"])
    st.dataframe(rows, hide_index=True, width="stretch",
                 column_config={"ε": st.column_config.NumberColumn(format="%.4g", width="small"),
                                "#": st.column_config.NumberColumn(width="small"),
                                "δ; ρ": st.column_config.TextColumn(help="an (ε, δ) release's δ and the ρ of "
                                                                         "zCDP it spent"),
                                "DP": st.column_config.TextColumn(width="small"),
                                "manifest": st.column_config.TextColumn(help="SHA-256 of manifest.json (first 12 "
                                                                             "hex digits; the audit trail has all)")})
    if any(e["dp"] == 0 for e in entries):
        st.caption(":red[Releases marked NOT DP have a privacy loss that ε does not bound.]")
    c1, c2 = st.columns(2)
    c1.download_button("Audit trail (CSV)", ws.book.export_text("csv", fp), f"budget_book_{fp[:12]}.csv", "text/csv",
                       key="w_book_csv", help="Every status event of this table's releases (append-only), with "
                                              "workspace, user, ε / δ / ρ and the manifest's SHA-256.")
    c2.download_button("Audit trail (JSON)", ws.book.export_text("json", fp), f"budget_book_{fp[:12]}.json",
                       "application/json", key="w_book_json",
                       help="The same events, and the logs of this table's caps and charging decisions.")


def _notion_short(notion: str) -> str:
    """A book notion in a narrow column: "add/remove", "replace", or "add/remove, one 'id'" for a privacy unit."""
    base, sep, unit = notion.partition(", ")
    return {"add_remove": "add/remove", "replace": "replace"}.get(base, base) + (sep + unit if sep else "")


def _cap_controls(ws: Workspace, fp: str, b: dict) -> None:
    admin = access.may_set_caps()
    c1, c2, c3 = st.columns([2, 1, 1])
    cap = c1.number_input("Cap on this table's total ε", min_value=0.0,
                          value=None if b["cap"] is None else float(b["cap"]), step=0.5, placeholder="no cap",
                          key="w_budget_cap", disabled=not admin,
                          help="The lifetime budget of this table, across every workspace of this installation. "
                               "Setting it below what is spent refuses every further release.")
    if not admin:
        st.caption("Only an admin sets a table's cap; ask one to set or raise it.")
    if c2.button("Set cap", key="w_budget_set", help="Store the cap in the installation's budget book.",
                 disabled=not admin):
        if cap is None or cap <= 0:
            st.error("The cap must be greater than 0; use Remove cap for no cap.", icon=":material/warning:")
        else:
            ws.book.set_cap(fp, cap, user=ws.user)
            st.rerun()
    if c3.button("Remove cap", key="w_budget_clear", disabled=b["cap"] is None or not admin):
        ws.book.set_cap(fp, None, user=ws.user)
        st.rerun()


def charge_prompt() -> None:
    """The Data page's question when the loaded table looks like a table the book knows (same record
    count, at least half of its columns holding the same values): charge it to that table (the default,
    already in effect) or as a new table. Either answer is logged in the book with the user."""
    ws, fp = workspace.current(), st.session_state.get("table_fp")
    if ws is None or not fp:
        return
    match = match_known(ws.book, fp)
    if match is None:
        return
    charged = ws.book.account(fp) == match.table_fp
    st.warning(f"This table {match.question()} Dropping or reordering columns, or another file format, does not "
               "make the same records a new table for the budget book.", icon=":material/join_inner:")
    options = (f"Charge it to {match.label} (default)", "Charge it as a new table")
    pick = st.radio("Budget book", options, index=0 if charged else 1, key=f"w_charge_{fp[:16]}", horizontal=True,
                    help="Charged to the known table, every release of this one adds to that table's total and "
                         "counts against its cap. A new table starts from zero: choose it only if these are other "
                         "people's records.")
    want = pick == options[0]
    if want != charged:
        ws.book.charge_to(fp, match.table_fp if want else None, user=ws.user, reason="the Data page")
