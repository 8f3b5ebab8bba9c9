"""The sidebar's summary of the session: the table as it will be released (after dropped columns),
the domain's status and the design (ε, m and the method actually used). Drawn after the page has
run (app.py), so it shows what the page just changed, never the previous run's state."""
from __future__ import annotations

import streamlit as st

from dpcore.studio import design
from pages.components import state


def summary() -> None:
    s = st.session_state
    if "raw_df" in s:
        df = state.work_df()
        dropped = len(s["raw_df"].columns) - df.shape[1]
        st.caption(f"**Data:** {s.get('data_name', '')}  \n{len(df):,} rows × {df.shape[1]} columns"
                   + (f" ({dropped} dropped)" if dropped > 0 else ""))
        if design.unit_options(s["cfg"]):
            st.caption(f"**Protects:** {design.unit_description(s['cfg'])}")
        dom, err = state.domain_status()
        if err:
            st.caption(":red[Domain needs attention (see Data page)]")
        elif design.finds_domain_privately(s["cfg"]):
            bins = "PrivTree" if design.domain_bins(s["cfg"]) == "privtree" else "DP quantiles"
            st.caption(f":green[Domain found privately at release (numeric bins: {bins})]")
        elif not state.is_declared(dom):
            st.caption(":red[Domain inferred from data — not yet confirmed: releases are NOT DP]")
        else:
            st.caption(":green[Domain declared public]")
        c = s["cfg"]
        eps = c.get("epsilon")
        eps_text = f"ε = {eps:g}" if state.valid_epsilon(eps) else ":red[ε not valid]"
        if c.get("definition") == "zcdp" and c.get("delta"):  # the guarantee the next release will state
            eps_text += f", δ = {c['delta']:g}"
        method = ""
        if dom is not None:
            name, opts, _ = state.design_call(dom)
            method = state.method_label(name, opts) + (" (the adviser's pick)" if c.get("release_method") == "auto"
                                                      else "")
        st.caption(f"**{eps_text}**, m = {c['m']} sets" + (f", {method}" if method else ""))
    st.caption("Curator-only views are marked :red[NOT FOR RELEASE]; only the synthetic sets and the "
               "manifest are covered by ε.")
