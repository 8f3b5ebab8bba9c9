"""Data page: the per-attribute domain editor (st.data_editor).

Widgets only; the rules live in dpcore.data.editing (validation, recodes) and
dpcore.measure.quantiles (DP bin edges). Every applied edit leaves the domain unconfirmed, so a
release on it is NOT DP until the curator confirms it again.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

import dpcore
from dpcore.data.editing import (
    NA_CHOICES,
    NA_LEVEL_CHOICE,
    NA_NONE_CHOICE,
    NA_RECODE_CHOICE,
    Recode,
    apply_edges_table,
    apply_level_table,
    check_edit,
    edges_table,
    edit_summary,
    level_table,
    placeholder_attribute,
    recodes_to_json,
    replace_attribute,
)
from dpcore.measure.quantiles import DEFAULT_BINS_SHARE, PRIVTREE, QUANTILES, BinSpec
from dpcore.studio import design
from pages.components import state

EDGE_MODES = ("public edges", "DP quantile edges", "DP PrivTree edges")
#: the dp_bins method of each DP mode, and back
MODE_METHOD = {EDGE_MODES[1]: QUANTILES, EDGE_MODES[2]: PRIVTREE}
METHOD_MODE = {v: k for k, v in MODE_METHOD.items()}


def spec_method(spec: dict) -> str:
    """A dp_bins entry's method: its own; an entry without one was written by "Use DP quantile edges" before
    the app offered PrivTree (dpcore.studio.design.release_domain_call releases it so)."""
    return str(spec.get("method") or QUANTILES)


def _unrecoded() -> pd.DataFrame:
    """The table the domain describes, before the recodes: without the dropped columns and the privacy unit's
    identifier (never released, so not in the domain)."""
    s = st.session_state
    df = s["raw_df"]
    unit = state.unit_column()
    drop = [c for c in s.get("drop_cols", []) if c in df.columns] + ([unit] if unit else [])
    return df.drop(columns=drop) if drop else df


def _commit(new_dom: dpcore.Domain, recodes: dict) -> None:
    """Check the edit against the data (with every recode), then keep it, unconfirmed."""
    check_edit(new_dom, _unrecoded(), recodes)
    s = st.session_state
    s["recodes"] = recodes
    s["domain_override"] = new_dom.to_json()
    s["domain_confirmed"] = False
    s.pop("release", None)
    s["_edit_msg"] = "Edit applied. Review it, then confirm the domain again: until then a release is NOT DP."


def render_domain_editor(dom: dpcore.Domain, data: pd.DataFrame) -> None:
    """The editor for ``dom``; ``data`` is the table as the release will see it (recodes applied)."""
    s = st.session_state
    with st.expander("Edit the domain (table editor)", expanded=bool(s.get("_edit_open"))):
        st.caption("Pick an attribute. Categorical: rename a level by typing a new name; give several levels the "
                   "same name to merge them; add a row with only a new name for a public level the data lack. "
                   "Numeric: edit the public bin edges, or let the release compute DP edges inside public "
                   "bounds, by DP quantiles or PrivTree (their ε is charged to the release). Renames and merges "
                   "recode the data explicitly: the mapping is listed below and can be downloaded or undone.")
        name = st.selectbox("Attribute", dom.names, key="w_edit_attr")
        attr = dom[name]
        tag = f"{name}_{abs(hash(attr.to_dict().__repr__()))}"
        if attr.kind == "categorical":
            _levels_editor(dom, attr, data, tag)
        else:
            _edges_editor(dom, attr, tag)
        if s.get("_edit_msg"):
            st.info(s.pop("_edit_msg"), icon=":material/edit_note:")
        _recodes_panel()


def _levels_editor(dom, attr, data, tag) -> None:
    s = st.session_state
    table = level_table(attr, data[attr.name])
    edited = st.data_editor(
        table, key=f"w_levels_{tag}", num_rows="dynamic", hide_index=True, width="stretch",
        column_config={
            "level": st.column_config.TextColumn("level", disabled=True, help="The level now in the domain."),
            "new name": st.column_config.TextColumn("new name", help="Type a new name to rename; the same name on "
                                                    "several rows merges them; a new row adds a level."),
            "in data": st.column_config.CheckboxColumn("in data (curator only)", disabled=True,
                                                       help="Whether the raw data hold this level: NOT for release."),
        })
    c1, c2 = st.columns(2)
    na0 = NA_LEVEL_CHOICE if attr.na else NA_NONE_CHOICE
    na = c1.radio("Missing values", NA_CHOICES, index=NA_CHOICES.index(na0), key=f"w_na_{tag}", horizontal=True,
                  help="Own level: missing is the level 'NA'. None allowed: a missing value is an error. "
                       "Recode: missing values become one of the levels (recorded with the recodes).")
    missing_to = None
    if na == NA_RECODE_CHOICE:
        names = [str(v) for v in edited["new name"].dropna() if str(v).strip()]
        missing_to = c2.selectbox("Missing values become", list(dict.fromkeys(names)), key=f"w_na_to_{tag}")
    if st.button("Apply the level edits", key=f"w_apply_levels_{tag}", type="primary"):
        s["_edit_open"] = True
        new_attr, rc = apply_level_table(attr, edited, na, missing_to)
        recodes = dict(s.get("recodes") or {})
        recodes[attr.name] = recodes.get(attr.name, Recode(attr.name)).then(rc)
        _commit(replace_attribute(dom, new_attr), recodes)
        st.rerun()


def _edges_editor(dom, attr, tag) -> None:
    s = st.session_state
    dp_bins = dict(s.get("dp_bins") or {})
    if attr.name in design.private_numeric(dp_bins):  # bounds and bins found by the release: nothing to edit
        st.caption(f"{attr.name}: the release finds its bounds and bins privately (Numeric columns, above).")
        return
    spec = dp_bins.get(attr.name)
    mode = st.radio("Bin edges", EDGE_MODES, index=EDGE_MODES.index(METHOD_MODE[spec_method(spec)]) if spec else 0,
                    key=f"w_edge_mode_{tag}", horizontal=True,
                    help="Public edges: you declare them. DP quantile edges: the release computes edges at the "
                         "data's quantiles with differential privacy inside bounds you declare public. DP PrivTree "
                         "edges: the release halves the bounds where the data are dense (PrivTree, differentially "
                         "private).")
    na = st.checkbox("Missing values are their own level 'NA'", value=attr.na, key=f"w_num_na_{tag}")
    if mode == EDGE_MODES[0]:
        _public_edges(dom, attr, tag, na, dp_bins)
        return
    _dp_edges(dom, attr, tag, na, dp_bins, MODE_METHOD[mode])


def _public_edges(dom, attr, tag, na: bool, dp_bins: dict) -> None:
    s = st.session_state
    if not attr.edges_public:
        st.caption(f":red[The bins of {attr.name} now span the data's own min–max, which is not public: they are "
                   "not offered for editing.] Type public edges (add rows), from the lowest to the highest "
                   "value a record may have.")
    edited = st.data_editor(edges_table(attr), key=f"w_edges_{tag}", num_rows="dynamic", hide_index=True,
                            column_config={"edge": st.column_config.NumberColumn("edge",
                                                                                 help="A public bin edge.")})
    if st.button("Apply the edges", key=f"w_apply_edges_{tag}", type="primary"):
        s["_edit_open"] = True
        new_attr = apply_edges_table(attr, edited, na)
        dp_bins.pop(attr.name, None)
        s["dp_bins"] = dp_bins
        _commit(replace_attribute(dom, new_attr), dict(s.get("recodes") or {}))
        st.rerun()


def dp_edges_caption(method: str, name: str, bins: int, share: float) -> str:
    """What the release does with a column's DP edges inside its public bounds, and what it spends."""
    spend = (f"It spends {share:.0%} of the release's ε (shared evenly with the other DP-binned columns), charged "
             "to its ledger; the total stays ε. Values outside the bounds are clamped into the end bins.")
    if method == PRIVTREE:
        return (f"The release splits {name}'s public bounds in halves, again and again, where a noisy count says "
                f"the records are dense (PrivTree, differentially private), into at most {bins} bins. " + spend)
    return (f"The release places {bins - 1} edges at {name}'s quantiles, each chosen with differential privacy "
            f"(exponential mechanism), so at most {bins} bins. " + spend)


def _dp_edges(dom, attr, tag, na: bool, dp_bins: dict, method: str) -> None:
    s = st.session_state
    spec = dp_bins.get(attr.name)
    c1, c2, c3 = st.columns(3)
    # No default from the domain: an inferred domain's outer edges are the data's own min and max,
    # which would then be published as "public" bounds of a DP release.
    # a whole-number column's bounds show as whole numbers ("0.00" reads as a fraction) and step by 1
    whole = bool(attr.dtype) and str(attr.dtype).startswith(("int", "uint", "Int", "UInt"))
    fmt, step = ("%g", 1.0) if whole else (None, None)
    lo = c1.number_input("public lower bound", value=float(spec["lower"]) if spec else None, format=fmt, step=step,
                         key=f"w_dp_lo_{tag}", placeholder="type a public bound",
                         help="A bound you would publish (not the data's minimum).")
    hi = c2.number_input("public upper bound", value=float(spec["upper"]) if spec else None, format=fmt, step=step,
                         key=f"w_dp_hi_{tag}", placeholder="type a public bound",
                         help="A bound you would publish (not the data's maximum).")
    k = c3.number_input("at most this many bins" if method == PRIVTREE else "bins", min_value=2, max_value=100,
                        value=int(spec["bins"] if spec else max(2, attr.size - attr.na)), key=f"w_dp_bins_{tag}",
                        help="PrivTree splits only where a noisy count says the records are dense, so the release "
                             "may have fewer bins." if method == PRIVTREE else
                             "How many bins the DP quantiles cut [lower, upper] into.")
    share = st.slider("Share of ε for the DP edges (all DP-binned columns together)", 0.01, 0.5,
                      float(s.get("bins_share") or DEFAULT_BINS_SHARE), 0.01, key=f"w_dp_share_{tag}",
                      help="Taken from the release's ε and charged to its ledger; the total stays ε.")
    st.caption(dp_edges_caption(method, attr.name, int(k), float(share)))
    st.caption("Until the release, the domain holds equal-width placeholder edges over these bounds (what the "
               "preview shows); the release replaces them by its DP edges and records them in its manifest.")
    what = METHOD_MODE[method]
    if st.button(f"Use {what}", key=f"w_apply_dp_{tag}", type="primary"):
        s["_edit_open"] = True
        if lo is None or hi is None:
            raise dpcore.DomainError(f"'{attr.name}': type the public lower and upper bounds for the {what} "
                                     "(bounds you would publish, not the data's min and max)")
        new = {"bins": int(k), "lower": float(lo), "upper": float(hi), "method": method}
        try:
            BinSpec.parse(attr.name, new)
        except dpcore.OptionError as exc:
            raise dpcore.DomainError(str(exc)) from None
        new_attr = placeholder_attribute(attr, float(lo), float(hi), int(k), na)
        dp_bins[attr.name] = new
        s["dp_bins"] = dp_bins
        s["bins_share"] = float(share)
        _commit(replace_attribute(dom, new_attr), dict(s.get("recodes") or {}))
        st.rerun()


def _recodes_panel() -> None:
    s = st.session_state
    recodes = {k: v for k, v in (s.get("recodes") or {}).items() if not v.empty}
    private = design.private_numeric(s.get("dp_bins"))
    dp_bins = {c: v for c, v in (s.get("dp_bins") or {}).items() if c not in private}
    if private:
        st.markdown("**Found privately at release** (bounds and bins): " + "; ".join(
            f"{c}: {v['bins']} bins" for c, v in private.items())
            + f" ({float(s.get('bins_share') or DEFAULT_BINS_SHARE):.0%} of ε)")
    for method, mode in METHOD_MODE.items():
        these = {c: v for c, v in dp_bins.items() if spec_method(v) == method}
        if these:
            most = "at most " if method == PRIVTREE else ""
            st.markdown(f"**{mode} at release:** " + "; ".join(
                f"{c}: {most}{v['bins']} bins over [{v['lower']:g}, {v['upper']:g}]" for c, v in these.items())
                + f" ({float(s.get('bins_share') or DEFAULT_BINS_SHARE):.0%} of ε)")
    if not recodes:
        return
    st.markdown("**Recodes applied to the data before release** (renames and merges):")
    st.dataframe(edit_summary(recodes), hide_index=True, width="stretch")
    c1, c2 = st.columns(2)
    c1.download_button("Download recodes.json", recodes_to_json(recodes), "recodes.json", "application/json",
                       key="dl_recodes", help="The mapping from the data's values to the domain's levels.")
    if c2.button("Undo all recodes", key="w_undo_recodes",
                 help="Back to the data's own values; the domain is inferred again."):
        s["recodes"] = {}
        s["domain_override"] = None
        s["domain_confirmed"] = False
        st.rerun()
