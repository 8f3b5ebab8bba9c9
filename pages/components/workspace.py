"""Glue between a browser session and the curator's workspace on disk (dpcore.studio.workspace).

A Streamlit session is new on every reload, so the workspace id travels in the URL
(``?ws=<id>``) and the workspace lives in ``$DPSTUDIO_WORKSPACE/<id>/``. A session without an
id gets a fresh random one, but no folder: the workspace is created when there is something to
keep (a table the curator loads, a change to the demo the studio opened, a release, a cap, a saved
design), so a visit leaves nothing on the server. A workspace belongs to the identity that created
it (dpcore.studio.access): on a server with login, an id opens only its owner's workspace (or any,
for an admin). At the end of every run the session's table, domain, design and last release are saved,
with the domain editor's recodes and DP-bins settings and the Survey page's inputs; a new session with the same id
restores them. Releases go through the installation's one
budget book (dpcore.studio.workspace.installation_book: every workspace's releases of a table add up;
refused over the table's cap before anything is spent).

The budget book's panels are pages/components/book_panel.py, the Design page's saved designs
pages/components/saved_designs.py; both read the session's workspace from here.
"""
from __future__ import annotations

import json
import logging
import sqlite3

import pandas as pd
import streamlit as st

from dpcore.data.editing import recodes_from_json, recodes_to_json
from dpcore.errors import DPCoreError
from dpcore.studio import design as studio_design
from dpcore.studio.access import Registry
from dpcore.studio.workspace import (
    ENV_VAR,
    Workspace,
    check_workspace_id,
    new_workspace_id,
    root_folder,
    table_fingerprint,
)
from pages.components import access, state, survey_session

log = logging.getLogger("dpcore.app")

QUERY_PARAM = "ws"
STATE_KEY = "session"
#: Session-state keys of the curator's work that a reload restores.
SAVED_KEYS = ("data_name", "drop_cols", "numeric", "domain_override", "domain_confirmed")
#: The domain editor's work (pages/components/domain_editor.py): DP-bins specs and their ε share, and the column types
#: (pages/components/column_types.py), saved as they are;
#: the recodes (renames, merges, missing values recoded) are saved as their JSON document.
EDITOR_KEYS = ("dp_bins", "bins_share", "schema")


# --------------------------------------------------------------------------- open and restore


def current() -> Workspace | None:
    """The session's workspace, or None while nothing has been kept yet (or it is unusable)."""
    return st.session_state.get("_ws")


def session_id() -> str | None:
    """The session's workspace id (in the address), created or not yet."""
    return st.session_state.get("_ws_id")


def open_session() -> Workspace | None:
    """The session's workspace on its first run: the address's id if its workspace exists and the
    person may open it (restored then), else a fresh id whose folder is made only when needed."""
    s = st.session_state
    if "_ws_id" in s:
        if s["_ws_id"]:
            # every run, also after st.navigation: the browser's address must keep the id across page
            # switches and the first load (a value set before st.navigation can be replaced by the page's URL)
            st.query_params[QUERY_PARAM] = s["_ws_id"]
        persist()  # what callbacks and the previous run changed (app.py also saves at the end of a run)
        return current()
    s["_ws"] = None
    ws_id = _requested_id()
    if ws_id and (root_folder() / ws_id).is_dir():
        who = access.identity()
        refusal = ("log in to open it" if who is None  # app.py's gate stops before this; a page run alone does not
                   else Registry(root_folder()).refusal(ws_id, who))
        if refusal:
            s["_ws_notice"] = s["_ws_refused"] = f"{refusal}. This tab opened the demo instead."
            log.warning("workspace %s refused to %s", ws_id, who.user if who else "nobody logged in")
            ws_id = None
        else:
            return _open_existing(ws_id)
    s["_ws_id"] = ws_id or new_workspace_id()
    st.query_params[QUERY_PARAM] = s["_ws_id"]
    return None


def _requested_id() -> str | None:
    ws_id = st.query_params.get(QUERY_PARAM)
    if not ws_id:
        return None
    try:
        return check_workspace_id(ws_id)
    except DPCoreError as exc:
        st.session_state["_ws_notice"] = f"{exc}; a new workspace was opened instead."
        return None


def _open_existing(ws_id: str) -> Workspace | None:
    s = st.session_state
    try:
        ws = Workspace.in_root(ws_id, user=book_user() or None)
    except (DPCoreError, OSError, sqlite3.Error) as exc:
        return _unusable(exc)
    s["_ws"], s["_ws_id"] = ws, ws.id
    st.query_params[QUERY_PARAM] = ws.id
    try:
        restore(ws)
    except (DPCoreError, OSError, sqlite3.Error, ValueError, KeyError) as exc:
        s["_ws_notice"] = f"The saved state of this workspace could not be restored ({exc}); start from the Data page."
        for k in ("raw_df", "release"):
            s.pop(k, None)
    return ws


def _unusable(exc) -> None:
    s = st.session_state
    s["_ws"], s["_ws_id"] = None, None
    s["_ws_error"] = (f"The workspace folder is not usable ({exc}). Nothing is saved across reloads and the budget "
                      f"book is off; set {ENV_VAR} to a writable folder.")
    log.warning("workspace unavailable: %s", exc)
    return None


def ensure() -> Workspace | None:
    """The session's workspace, created now if it was not yet (owned by the person using the session,
    with the session's table registered); None only if the workspace root is unusable."""
    s = st.session_state
    if current() is not None or not s.get("_ws_id"):
        return current()
    who = access.identity()
    if who is None:  # nobody logged in (app.py's gate shows the login screen first): nothing is kept
        return None
    try:
        registry = Registry(root_folder())
        ws_id = s["_ws_id"]
        if registry.claim(ws_id, who.user) != who.user:  # the id was taken meanwhile: another one
            ws_id = new_workspace_id()
            registry.claim(ws_id, who.user)
        ws = Workspace.in_root(ws_id, user=book_user() or None)
    except (DPCoreError, OSError, sqlite3.Error) as exc:
        return _unusable(exc)
    s["_ws"], s["_ws_id"] = ws, ws.id
    st.query_params[QUERY_PARAM] = ws.id
    if "raw_df" in s:
        on_table_loaded(s["raw_df"], s.get("data_name", ""))
    return ws


def restore(ws: Workspace) -> bool:
    """Bring back the saved table, domain, design and last release; False if nothing was saved."""
    snap = ws.load_state(STATE_KEY)
    if not snap:
        return False
    s = st.session_state
    df = ws.load_table(snap["table_fp"], reader=state.read_table_cached)
    s["raw_df"] = df
    s["data_key"] = state.data_hash(df)
    s["table_fp"] = snap["table_fp"]
    for k in SAVED_KEYS:
        s[k] = snap[k]
    _restore_editor(snap)  # before work_key() below: the recodes are part of it
    survey_session.restore(snap.get("survey"))  # the Survey page's inputs (absent in older snapshots)
    s["cfg"] = studio_design.migrate(snap["cfg"])
    rel = snap.get("release")
    if rel:
        try:
            s["release"] = {
                "main": ws.stored_release(rel["main"]),
                # sessions saved before comparators left the Release page may name some: still restored
                "comparators": {n: ws.stored_release(i) for n, i in (rel.get("comparators") or {}).items()},
                "errors": rel.get("errors", {}), "times": rel.get("times", {}), "label": rel.get("label"),
                # the release was made on this table and these columns (checked when it was saved)
                "key": state.work_key() if rel.get("current") else None,
            }
        except (DPCoreError, OSError, ValueError) as exc:  # its files were removed: the rest still restores
            s["_ws_notice"] = f"The last release could not be restored ({exc}); it is still in the budget book."
    known = [rel["main"], *(rel.get("comparators") or {}).values()] if rel else [0]
    _restore_newer_release(ws, snap["table_fp"], max(known))
    s["_ws_saved"] = _text(snapshot())
    return True


def _restore_newer_release(ws: Workspace, table_fp: str, saved_id: int) -> None:
    """A release of this table that completed after the session was last saved (the tab was closed
    or reloaded while it ran) is brought back as the last release, with a notice."""
    for e in reversed(ws.releases(table_fp)):
        if e["status"] != "complete" or e["id"] <= int(saved_id or 0) or e.get("workspace") != ws.id:
            continue
        try:
            stored = ws.stored_release(e["id"])
        except (DPCoreError, OSError, ValueError):  # e.g. a survey estimate: no synthetic sets to show
            continue
        s = st.session_state
        s["release"] = {"main": stored, "comparators": {}, "errors": {}, "times": {}, "label": e["method"],
                        "key": state.work_key()}
        s["_ws_notice"] = (f"Release {e['id']} finished after this page was last open; it is shown on the "
                           "Release page.")
        return


def _restore_editor(snap: dict) -> None:
    """The domain editor's recodes and DP-bins settings (absent in snapshots saved before they were kept)."""
    s = st.session_state
    text = snap.get("recodes")
    s["recodes"] = recodes_from_json(text) if text else {}
    s["dp_bins"] = dict(snap.get("dp_bins") or {})
    s["schema"] = snap.get("schema")  # the column types as the curator left them (None: the proposal)
    if snap.get("bins_share") is not None:
        s["bins_share"] = float(snap["bins_share"])
    else:
        s.pop("bins_share", None)


# --------------------------------------------------------------------------- save


def _entry(release) -> int | None:
    return getattr(release, "book_entry", None) or getattr(release, "entry_id", None)


def snapshot() -> dict | None:
    """The session's work as JSON-ready data (None before a table is loaded)."""
    s = st.session_state
    if "raw_df" not in s or not s.get("table_fp"):
        return None
    snap = {"table_fp": s["table_fp"], "cfg": s["cfg"], **{k: s.get(k) for k in SAVED_KEYS}, "release": None,
            **{k: s.get(k) for k in EDITOR_KEYS}}
    recodes = {k: v for k, v in (s.get("recodes") or {}).items() if not v.empty}
    snap["recodes"] = recodes_to_json(recodes) if recodes else None
    snap["survey"] = survey_session.saved()  # the Survey page's inputs (choices only, no data or results)
    rel = s.get("release")
    if rel and rel.get("main") is not None and _entry(rel["main"]) is not None:
        comps = {n: _entry(r) for n, r in rel.get("comparators", {}).items()}
        snap["release"] = {
            "main": _entry(rel["main"]), "comparators": {n: i for n, i in comps.items() if i is not None},
            "errors": rel.get("errors", {}), "times": rel.get("times", {}), "label": rel.get("label"),
            "current": rel.get("key") == state.work_key(),
        }
    return snap


def _text(snap) -> str:
    return json.dumps(snap, sort_keys=True, default=str)


def persist() -> None:
    """Save the session's work if it changed since the last save (called after every run)."""
    s = st.session_state
    ws = current()
    if ws is None and not session_id():
        return
    try:
        snap = snapshot()
        if snap is None:
            return
        text = _text(snap)
        if ws is None:  # nothing kept yet: a workspace only once the session differs from how it opened
            if _text(_comparable(snap)) == s.get("_ws_initial"):
                return
            ws = ensure()
            if ws is None:
                return
        if text != s.get("_ws_saved"):
            ws.save_state(STATE_KEY, snap)
            s["_ws_saved"] = text
        if s.get("domain_confirmed"):
            dom, err = state.domain_status()
            if dom is not None and not dom.inferred:
                dj = dom.to_json()
                if s.get("_ws_domain_saved") != (snap["table_fp"], dj):
                    ws.save_domain(snap["table_fp"], dj)
                    s["_ws_domain_saved"] = (snap["table_fp"], dj)
    except (DPCoreError, OSError, sqlite3.Error, TypeError, ValueError) as exc:
        log.warning("could not save the workspace state: %s", exc)
        s["_ws_notice"] = f"The workspace could not save this session's state ({exc})."


def mark_initial() -> None:
    """The session as it opened (the demo and the default design): persist() keeps nothing until it differs."""
    snap = snapshot()
    st.session_state["_ws_initial"] = None if snap is None else _text(_comparable(snap))


def _comparable(snap: dict) -> dict:
    """The snapshot without what pages fill in by merely being visited (a method's empty options)."""
    cfg = dict(snap["cfg"])
    cfg["options"] = {m: o for m, o in (cfg.get("options") or {}).items() if o}
    return {**snap, "cfg": cfg}


def on_table_loaded(df: pd.DataFrame, name: str, keep: bool = True) -> None:
    """A new table in the session: register it (demo files by reference, uploads as a copy). With
    ``keep`` (a table the curator loaded) the workspace is created if it was not yet; the demo the
    studio opens by itself on a first visit is not kept until something changes."""
    s = st.session_state
    ws = ensure() if keep else current()
    if ws is None:
        s["table_fp"] = table_fingerprint(df) if session_id() else None
        return
    path = state.DEMOS.get(name)
    try:
        s["table_fp"] = ws.add_table(df, name, path=path).fingerprint
    except DPCoreError as exc:
        s["table_fp"] = table_fingerprint(df)
        s["_ws_notice"] = str(exc)


# --------------------------------------------------------------------------- releases through the book


def check_budget(epsilon: float, label: str, delta: float | None = None) -> None:
    """Refuse (BudgetExceeded, remaining budget named) before anything runs."""
    ws, fp = ensure(), st.session_state.get("table_fp")
    if ws is not None and fp:
        ws.book.check(fp, epsilon, studio_design.book_neighbours(state.cfg()), label, delta)


def release_recorder(method: str, epsilon: float, neighbours: str, delta: float | None = None):
    """A function ``record(run)`` that runs ``run()`` through this session's budget book, under ``neighbours``:
    the book's notion (dpcore.privacy.neighbours.book_notion, the privacy unit's column included). It reads
    the session now, so it may be called later from a job thread (pages/components/jobs.py)."""
    ws, fp, name = ensure(), st.session_state.get("table_fp"), st.session_state.get("data_name", "")
    user = book_user()

    def record(run, delta_approx: float = 0.0):
        if ws is None or not fp:
            return run()
        entry, rel = ws.release(fp, epsilon, method, neighbours, run, table_name=name, delta=delta, user=user,
                                delta_approx=delta_approx)
        rel.book_entry = entry
        return rel

    return record


def book_user() -> str:
    """The name every budget-book entry of this session carries: the login email, else the machine's user."""
    who = access.identity()
    return who.user if who is not None else ""


# --------------------------------------------------------------------------- the sidebar


def sidebar() -> None:
    s = st.session_state
    ws = current()
    if ws is not None:
        where = f" — saved in {ws.folder}" if access.may_see_paths() else ""
        st.caption(f"**Workspace** `{ws.id}`{where}. Bookmark this page's address to come back to it.")
    elif session_id():
        st.caption("**Workspace**: nothing kept yet. It is created when you load a table or change the design, "
                   "domain or cap; then this page's address brings you back to it.")
    elif s.get("_ws_error"):
        st.caption(f":red[{s['_ws_error']}]")
    if s.get("_ws_notice"):
        st.caption(f":orange[{s['_ws_notice']}]")
