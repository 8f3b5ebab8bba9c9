"""Preview: the phantom-padded hierarchy and its expected error. Spends no budget."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dpcore.studio import design
from pages.components import charts, domain_forecast, guard, noise, privacy_unit, session, state
from pages.components import glossary as gl


def _delta_text(plan: dict) -> str:
    """", δ = 1e-09 (zCDP: ρ = …; budgets below are shares of ρ)" for an (ε, δ) design, else nothing."""
    if plan.get("budget_unit") != "rho":
        return ""
    return f", δ = {plan['delta']:g} (zCDP: ρ = {plan['rho']:.4g}; the budgets below are shares of ρ)"


s = st.session_state
session.init_state()
cfg = state.cfg()

st.title("3 · Preview", anchor=False)
st.caption("Spends no budget. The structure and the expected errors depend only on the design, the public "
           "domain and ε; the panels marked NOT FOR RELEASE read the raw data and are for you, the curator, only.")

dom = state.need_domain()
if dom is None:
    st.stop()

with guard.guarded("the private domain's forecast"):
    domain_forecast.panel()

pv = None
with guard.guarded("the preview"):
    pv, method, opts = state.preview_for_design(dom)
    privacy_unit.preview_note(pv.plan)  # a record, or a person's records: and kept together or not
    if state.figures_domain(dom) is not dom:
        st.caption(":material/inventory_2: Every figure here uses the domain your last release found privately (the "
                   "one its manifest states), not the placeholder bins.")
    elif design.finds_domain_privately(cfg) or state.dp_bins_options(dom).get("dp_bins"):
        st.caption(":material/info: Planned from the share of ε the domain is given. A whole-number column whose "
                   "private bounds turn out to hold only a few numbers gets one level per number, and its bins' part "
                   "of that share goes to the synthetic sets: the release may then spend a little less on the domain "
                   "and add a little less noise than planned here (its manifest says what it spent).")
    with guard.guarded("the noise check"):
        noise.noise_panel(dom, method, opts, state.method_label(method, opts))
    if state.is_margin_preview(pv):
        # margin methods: what will be measured, with the noise per table: the noise check's plan (public facts and
        # its n; ipf's one_way_share="auto" is decided from that n: curator-only when it is the table's own)
        plan, _, _, _ = noise.release_plan(dom, method, opts)
        st.markdown(f"**{state.method_label(method, opts)}**, ε = {cfg['epsilon']:g}{_delta_text(pv.plan)}, "
                    f"m = {cfg['m']}: the noisy tables each set measures")
        st.dataframe(pd.DataFrame(list(plan.tables or ())), hide_index=True, width="stretch",
                     column_config={"table": st.column_config.TextColumn(width="large")})
        if plan.split.domain.value:
            st.caption(f"Before the sets: {plan.split.domain.value:.4g} ({plan.design.domain_share:.3g} of the "
                       f"budget) finds the domain privately; the tables share what the record count and it leave.")
        if pv.plan.get("one_way_share_auto"):
            st.caption(f"One-way share {pv.plan['one_way_share']:g} (auto): decided here from the table's own "
                       "record count (curator-only); the release decides from its noisy record count, so the two "
                       "differ only for a table right at the threshold.")
        if "empty_cell_share" in pv.plan:
            st.metric("Expected share of synthetic records from cells empty in the data",
                      f"{pv.plan['empty_cell_share']:.0%}",
                      help="From the domain size, the table's size and the noise scale (curator-only).")
        if pv.plan.get("empty_cell_warning"):
            st.warning(pv.plan["empty_cell_warning"], icon=":material/warning:")
    else:
        st.markdown(f"**{state.method_label(method, opts)}**, ε = {cfg['epsilon']:g}{_delta_text(pv.plan)}, "
                    f"m = {cfg['m']}, fan-out after padding b = {pv.tree.b}",
                    help=gl.help_text("fan-out", "phantom-padding"))
        if pv.plan.get("private_selection"):
            st.info("Private selection: the release draws the tree with the exponential mechanism, so the actual "
                    "tree may differ. Shown here is the most likely attribute at each node.", icon=":material/casino:")

# the tree's sections (STEPS and its variants); no st.stop(), so the sidebar is drawn after the page
tree_preview = pv is not None and not state.is_margin_preview(pv)

if tree_preview:
    with guard.guarded("the hierarchy chart"):
        fig, note = charts.icicle_figure(pv, dom)
        st.plotly_chart(fig, config={"displaylogo": False})
        st.caption("Blue/green/orange: real nodes by layer; **grey: phantom** nodes that pad every node to the same "
                   "fan-out b. Phantoms are publicly empty: not noised, pinned at 0, never output. Yellow: the leaf "
                   "cells under each last-layer node." + (f" {note}" if note else ""))

    with guard.guarded("the per-layer table"):
        st.subheader("Per noised layer", anchor=False)
        tab = pv.layers.rename(columns={
            "layer": "layer", "attributes": "attributes", "real": "real nodes", "phantom": "phantom nodes",
            "epsilon": "ε per set", "rho": "ρ per set (zCDP)",
            # discrete Laplace of scale Δ/ε under pure ε; under zCDP the scale is the discrete Gaussian's σ
            "noise_scale": "noise scale σ (Gaussian)" if "rho" in pv.layers.columns else "noise scale (Δ/ε)",
            "noise_sd": "noise SD (records)",
            "expected_se": "expected SE (records)",
        })
        st.dataframe(tab, hide_index=True, width="stretch", column_config={
            c: st.column_config.NumberColumn(format="%.4g") for c in tab.columns if tab[c].dtype.kind == "f"})
        st.caption("Expected SE: the standard error of a node's count after consistency, in records; they depend only "
                   "on the structure and the noise scales, not on the data, "
                   "and use the WLS variance of the consistency step.")
        fig = go.Figure()
        fig.add_bar(x=[f"layer {v}" for v in pv.layers["layer"]], y=pv.layers["noise_sd"],
                    name="noise SD before consistency", marker_color=charts.OKABE_ITO[0])
        fig.add_bar(x=[f"layer {v}" for v in pv.layers["layer"]], y=pv.layers["expected_se"],
                    name="expected SE after consistency", marker_color=charts.OKABE_ITO[3])
        fig.update_layout(barmode="group", height=300, margin=dict(l=10, r=10, t=30, b=10),
                          yaxis_title="error (records per node)", xaxis_title="noised layer",
                          title="Noise per node, before and after consistency")
        st.plotly_chart(fig, config={"displaylogo": False})

    if pv.selection is not None and len(pv.selection):
        with guard.guarded("the selection probabilities"):
            st.subheader("Selection probabilities per node", anchor=False)
            guard.not_dp_label("NOT FOR RELEASE — computed from the raw data, curator only")
            sel = pv.selection
            for layer, sub in sel.groupby("layer"):
                piv = sub.pivot_table(index="node", columns="attribute", values="probability",
                                      aggfunc="first").fillna(0.0)
                piv = piv.head(40)
                fig = go.Figure(go.Heatmap(z=piv.to_numpy(), x=list(piv.columns), y=list(piv.index), colorscale="Blues",
                                           zmin=0, zmax=1, colorbar=dict(title="P(chosen)"),
                                           hovertemplate="node %{y}<br>%{x}: %{z:.3f}<extra></extra>"))
                fig.update_layout(height=max(200, 120 + 22 * len(piv)), margin=dict(l=10, r=10, t=30, b=10),
                                  title=f"Layer {layer}: probability each attribute splits the node",
                                  xaxis_title="attribute", yaxis_title="node")
                st.plotly_chart(fig, config={"displaylogo": False})

    with guard.guarded("the true counts"):
        with st.expander("True node counts", expanded=False):
            guard.not_dp_label("NOT FOR RELEASE — true counts, curator only")
            rows = []
            for k, counts in enumerate(pv.true_counts):
                if k == 0:
                    continue
                lay = pv.tree.layers[k]
                for r in range(min(lay.n_real, 500)):
                    rows.append({"layer": k, "node": dom.path_label(lay.fixed[r]), "true count": int(counts[r])})
            st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
            st.caption("Shown to compare with the expected errors above. Never export or publish these numbers.")

st.page_link("pages/4_release.py", label="Go to Release (spends ε)", icon=":material/inventory_2:")
