"""Design: the hierarchy (dragged layers or private selection), ε and the release options."""
from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from dpcore.errors import DPCoreError
from dpcore.privacy.ledger import check_epsilon, epsilon_warning
from dpcore.studio import adviser, design
from dpcore.synthesizers import REGISTRY
from pages.components import charts, guard, noise, options, saved_designs, session, state
from pages.components import glossary as gl

s = st.session_state
session.init_state()
cfg = state.cfg()

st.title("2 · Design", anchor=False)
st.caption("Choose the release method, ε and the method's options. Nothing is spent on this page: the adviser, "
           "the noise check and the ledger chart show what the release would do.")

dom = state.need_domain()
if dom is None:
    st.stop()


def bind(name: str) -> str:
    """Widget key for a design setting, seeded from the persistent cfg (widget state is per page)."""
    wk = f"w_{name}"
    if wk not in s:
        s[wk] = cfg[name]
    return wk


#: what each privacy definition promises, in plain words (dpcore.privacy.definitions)
DEFINITIONS = {
    "pure": "Pure ε (strongest): the bound holds for every possible result, with no exception",
    "zcdp": "(ε, δ) through zCDP: more accurate when a method makes many measurements (AIM, MST, ipf); "
            "the bound may fail with a tiny probability δ",
}
#: the δ offered, well below 1/n for any table the studio releases
DELTAS = [1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-12]


def _definition_controls() -> None:
    """Pure ε or (ε, δ) through zCDP, and δ with its warning (dpcore.privacy.zcdp.delta_warning)."""
    st.radio("Privacy guarantee", list(DEFINITIONS), key=bind("definition"), format_func=DEFINITIONS.get,
             help=gl.help_text("epsilon", lead="Pure ε is the default. (ε, δ) through zero-concentrated DP lets "
                                               "noise over many measurements grow like √T instead of T; δ is the "
                                               "chance the ε bound may fail, so it must be far below 1/n."))
    cfg["definition"] = s["w_definition"]
    if cfg["definition"] != "zcdp":
        return
    from dpcore.privacy.zcdp import delta_warning

    if cfg.get("delta") not in DELTAS:
        cfg["delta"] = 1e-9
    st.selectbox("δ", DELTAS, key=bind("delta"), format_func=lambda d: f"{d:.0e}",
                 help="Recommended 1e-9, and in any case well below 1/n (one over the number of records).")
    cfg["delta"] = float(s["w_delta"])
    warning = delta_warning(cfg["delta"], len(state.work_df()))  # the curator's own n: shown to the curator only
    if warning:
        st.warning(warning, icon=":material/warning:")


def _not(*names: str) -> tuple:
    """Every option of STEPS but ``names`` (to draw just those)."""
    return tuple(o.name for o in design.tree_options() if o.name not in names)


def nearest_grid(v: float) -> float:
    if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
        return 1.0
    return min(state.EPS_GRID, key=lambda g: abs(math.log(g) - math.log(v)))


def _eps_from_slider():
    cfg["epsilon"] = float(s["w_eps_slider"])
    s["w_eps_typed"] = float(s["w_eps_slider"])


def _eps_from_typed():
    v = s["w_eps_typed"]
    cfg["epsilon"] = float(v) if v is not None else float("nan")
    if v is not None and math.isfinite(v) and v > 0:
        s["w_eps_slider"] = nearest_grid(v)


def _ledger_table(plan, pv) -> None:
    """The planned ledger (dpcore.previews.plan_release, the noise check's plan): the domain found privately and
    the record count before the sets, then one row per noisy table or layer per set (no data values)."""
    zc = plan.budget_key == "rho"  # an (ε, δ) design: the budgets are shares of ρ
    u = "ρ" if zc else "ε"
    rows = pd.DataFrame(plan.ledger_rows())
    st.plotly_chart(charts.ledger_figure(rows, plan.split.budget.value, state.method_label(plan.design.method,
                                                                                           plan.design.options), u),
                    config={"displaylogo": False})
    tab = pd.DataFrame(plan.ledger_table()).rename(columns={"per_set": f"{u} per set",
                                                            "over_sets": f"{u} over m sets"})
    number = st.column_config.NumberColumn(format="scientific" if zc else "%.4g")
    st.dataframe(tab, hide_index=True, width="stretch",
                 column_config={"part": st.column_config.TextColumn(width="medium"), f"{u} per set": number,
                                f"{u} over m sets": number, "noise_scale": st.column_config.NumberColumn(format="%.4g"),
                                "noise_sd": st.column_config.NumberColumn(format="%.4g")})
    m = plan.design.sets
    first = (f"{u} on the domain found privately: {plan.split.domain.value:.4g}; " if plan.split.domain.value else "")
    st.caption(f"{first}{u} for the record count: {plan.split.record_count.value:.4g}; then {m} set"
               f"{'s' if m != 1 else ''} (sequential composition), {u}/m = {plan.per_set.value:.4g} each."
               + ("" if plan.tables is not None else " Nodes within a layer are disjoint (parallel composition: paid "
                  f"once); layers and sets add up. Fan-out after phantom padding b = {pv.plan.get('fan_out')}."))
    if pv.plan.get("empty_cell_warning"):
        st.warning(pv.plan["empty_cell_warning"], icon=":material/warning:")


p = len(dom)
eps_ok = True
try:
    check_epsilon(cfg["epsilon"])
except DPCoreError:
    eps_ok = False
adviser_box = st.container()  # filled at the end, from the settings chosen below
left, right = st.columns([1, 1], gap="large")

with left:
    with guard.guarded("the release method"):
        st.subheader("Release method", anchor=False)
        if cfg.get("release_method") not in state.RELEASE_METHODS:
            cfg["release_method"] = "auto"
        picked = state.resolved_method(dom)

        def method_name(k: str) -> str:
            if k == "auto":
                return f"Recommended for this table: {adviser.NAMES.get(picked, picked)}"
            return state.RELEASE_METHODS[k]

        st.selectbox("Method of the release", list(state.RELEASE_METHODS), key=bind("release_method"),
                     format_func=method_name,
                     help=gl.help_text("method-adviser", lead="The first entry follows the adviser's pick for this "
                                                                "table and design (public facts only); choose a "
                                                                "method by name to fix it."))
        cfg["release_method"] = s["w_release_method"]
        method_now = state.resolved_method(dom)
        st.caption(REGISTRY[method_now].summary + " " + gl.method_link(method_now))
        hierarchical = REGISTRY[method_now].hierarchical
        if not hierarchical:  # every option of the method, from its schema (STEPS's are in its sections below)
            options.option_widgets(cfg, method_now)
            with st.expander("Advanced options"):
                options.option_widgets(cfg, method_now, advanced=True)

    tree_method = design.tree_method(cfg.get("mode"))
    if hierarchical:
        with guard.guarded("the hierarchy controls"):
            st.subheader("Hierarchy", anchor=False)
            gl.terms_line("layers-l", "mosda", "lesda", "uh-random-tree", "share-r", "phantom-padding", "fan-out")
            keys = list(state.MODES)
            st.radio("How the tree is chosen", keys, format_func=state.MODES.get, key=bind("mode"),
                     help=gl.help_text("mosda", "lesda", "uh-random-tree",
                                       lead="Fixed order: you choose, nothing is spent on the tree."))
            cfg["mode"] = s["w_mode"]
            fixed_by_pick = design.auto_tree_mode(cfg, method_now)
            if fixed_by_pick and fixed_by_pick != cfg["mode"]:
                st.caption(f"The adviser's pick, {adviser.NAMES[method_now]}, chooses the tree "
                           f"({state.MODES[fixed_by_pick]}); choose STEPS by name to use the selection above.")
            if s.get("w_L") is not None and not 1 <= int(s["w_L"]) <= p:
                s["w_L"] = max(1, min(p, int(s["w_L"])))
            cfg["L"] = max(1, min(p, int(cfg["L"])))
            st.number_input("Layers L", min_value=1, max_value=p, step=1, key=bind("L"),
                            help=gl.help_text("layers-l"))
            cfg["L"] = int(s["w_L"])
            L = cfg["L"]

            if cfg["mode"] == "fixed":
                try:
                    from streamlit_sortables import sort_items
                except ImportError:  # pragma: no cover - pinned in requirements.txt
                    sort_items = None
                groups = [[a for a in g if a in dom.names] for g in state.layer_groups()]
                groups = (groups + [[] for _ in range(L)])[:L]
                used = {a for g in groups for a in g}
                leaves = [a for a in dom.names if a not in used]
                containers = [{"header": f"Layer {k}", "items": g} for k, g in enumerate(groups, 1)]
                containers.append({"header": "Leaves", "items": leaves})
                st.caption("Drag attributes from **Leaves** into the layers (several per layer allowed: they split "
                           "together into every combination). Attributes left in Leaves form the leaf cells.")
                if sort_items is None:
                    st.error("streamlit-sortables is not installed; `make venv` installs it.")
                else:
                    result = sort_items(containers, multi_containers=True, direction="horizontal",
                                        key=f"sortables_{state.work_key()}_{L}_{s.get('sort_reset', 0)}")
                    if result:
                        new = [list(c["items"]) for c in result[:-1]]
                        if new != groups:
                            cfg["layers"] = new
                            st.rerun()
                        cfg["layers"] = new
                c1, c2 = st.columns([3, 1])
                c1.caption("Order: " + (" → ".join("{" + ", ".join(g) + "}" if g else "(empty)" for g in cfg["layers"])
                                        or "(none)"))
                if c2.button("Reset layers", help="Move every attribute back to Leaves."):
                    cfg["layers"] = [[] for _ in range(L)]
                    s["sort_reset"] = s.get("sort_reset", 0) + 1
                    st.rerun()
            elif cfg["mode"] in ("mosda", "lesda"):
                options.option_widgets(cfg, tree_method, skip=_not("utility"))
                st.slider("Share r of ε spent choosing the tree", 0.01, 0.5, step=0.01, key=bind("r"),
                          help=gl.help_text("share-r", lead="Larger r: a better tree, noisier counts."))
                cfg["r"] = float(s["w_r"])
            else:
                st.caption("Random selection reads no data to choose the tree, so it spends nothing on it (r = 0).")

    with guard.guarded("the budget controls"):
        st.subheader("Privacy budget", anchor=False)
        if "w_eps_slider" not in s:
            s["w_eps_slider"] = nearest_grid(cfg["epsilon"])
        if "w_eps_typed" not in s:
            s["w_eps_typed"] = float(cfg["epsilon"])
        c1, c2 = st.columns([3, 1])
        c1.select_slider("ε (log scale)", options=state.EPS_GRID, key="w_eps_slider", on_change=_eps_from_slider,
                         format_func=lambda v: f"{v:g}",
                         help=gl.help_text("epsilon", lead="The whole release (all m sets) spends ε."))
        c2.number_input("or type ε", key="w_eps_typed", on_change=_eps_from_typed, step=0.1, format="%.4g",
                        help="Any ε > 0. Typical: 0.1 (strong privacy) … 1 … 10 (weak).")
        try:  # the one place an invalid ε is reported (the panels that need ε wait for a valid one)
            check_epsilon(cfg["epsilon"])
            eps_ok = True
            if warning := epsilon_warning(cfg["epsilon"]):
                st.warning(warning, icon=":material/warning:")
        except DPCoreError as exc:
            eps_ok = False
            st.error(str(exc), icon=":material/warning:")
        _definition_controls()
        st.radio("Neighbouring tables (what one person's data means)", list(state.NEIGHBOURS), key=bind("neighbours"),
                 format_func=state.NEIGHBOURS.get, horizontal=False,
                 help=gl.help_text("neighbouring-tables",
                                   lead="Add/remove (default): 5% of ε buys a noisy record count, and every set has "
                                        "that many records. Replace: every count moves by up to 2, so it gets twice "
                                        "the noise."))
        cfg["neighbours"] = s["w_neighbours"]
        if design.unit_options(cfg):  # chosen on the Data page, where the identifier column is
            st.caption(f"Privacy unit (chosen on the Data page): the release protects "
                       f"{design.unit_description(cfg)}, so neighbouring tables differ by all of one "
                       f"{cfg['privacy_unit']}'s records.")
        st.number_input("Synthetic sets m", min_value=1, max_value=50, step=1, key=bind("m"),
                        help=gl.help_text("synthetic-sets-m"))
        cfg["m"] = int(s["w_m"])

    with guard.guarded("the amplification calculator"):
        from dpcore.survey import amplified_epsilon, max_useful_beta

        with st.expander("If you release only a random share β of the records to each non-colluding user…"):
            st.number_input("Share β of the records each user's release is computed on", min_value=0.001,
                            max_value=0.999, value=0.1, step=0.05, format="%.3g", key="w_amp_beta",
                            help=gl.help_text("amplification-by-sampling",
                                              lead="β = n_i/n: a secret random permutation cuts the records into "
                                                   "pieces of sizes fixed in advance (Merrill 2021, Thm 5.5.1)."))
            eps_now, beta = float(cfg["epsilon"]), float(s["w_amp_beta"])
            if not eps_ok:
                st.caption("Set a valid ε above to see what sampling saves.")
            else:
                eps_amp = amplified_epsilon(eps_now, beta)
                c1, c2, c3 = st.columns(3)
                c1.metric("ε' (amplified)", f"{eps_amp:.4g}",
                          help="ε' = ln((e^ε·β + 1 − β)/(1 − β)) for the current design ε.")
                c2.metric("min(ε, ε')", f"{min(eps_now, eps_amp):.4g}",
                          help="The release is ε-DP anyway; sampling makes it ε'-DP too, so the smaller one holds.")
                c3.metric("Max useful β", f"{max_useful_beta(eps_now):.4g}",
                          help="(e^ε − 1)/(2e^ε − 1): for a larger β, ε' ≥ ε and sampling saves nothing.")
                st.caption(f"At ε = {eps_now:g} and β = {beta:g}: ε' = {eps_amp:.4f}"
                           + ("." if eps_amp < eps_now else " — no saving at this β.")
                           + " Assumes the users of different pieces do **not** pool their answers: users who "
                             "collude count as one user with their total share β, and the permutation must stay "
                             "secret.")

    if hierarchical:
        with guard.guarded("the allocation controls"):
            st.subheader("Allocation, consistency, synthesis", anchor=False)
            gl.terms_line("allocation", "nonneg", "wls", "uh-consistency", "synthesis")
            alloc_opts = ["half", "equal", "custom"]
            st.radio("Allocation of the count budget over layers", alloc_opts, key=bind("allocation"), horizontal=True,
                     help=gl.help_text("allocation", lead="A layer with a larger share gets less noise."))
            cfg["allocation"] = s["w_allocation"]
            n_layers, leaf = state.noised_layers(dom)
            n_noised = n_layers + int(leaf)
            if cfg["allocation"] == "custom":
                if n_noised == 0:
                    st.info("Put attributes into layers first; then set their weights.")
                else:
                    raw = (list(cfg.get("custom_weights", [])) + [1.0 / n_noised] * n_noised)[:n_noised]
                    names = [f"layer {k}" for k in range(1, n_layers + 1)] + (["leaf cells"] if leaf else [])
                    cols = st.columns(min(n_noised, 4))
                    new = []
                    for i, nm in enumerate(names):
                        wk = f"w_cw_{n_noised}_{i}"
                        if wk not in s:
                            s[wk] = float(min(1.0, max(0.0, raw[i])))
                        new.append(cols[i % len(cols)].slider(
                            f"weight: {nm}", 0.0, 1.0, step=0.05, key=wk,
                            help="Relative share of the count budget. Weights are normalised to sum to 1."))
                    cfg["custom_weights"] = new
                    norm = state.normalised_weights(new, n_noised)
                    if norm is None:
                        st.error("Custom allocation: at least one weight must be above 0.")
                    else:
                        st.caption("Normalised (sum = 1): " + ", ".join(f"{nm} **{w:.3f}**"
                                                                        for nm, w in zip(names, norm)))
            # consistency, synthesis and the rest of STEPS's options, from its schema
            options.option_widgets(cfg, tree_method, skip=design.HIERARCHY_OPTIONS + ("utility",))
            with st.expander("Advanced options"):
                options.option_widgets(cfg, tree_method, advanced=True)

method, opts, problems = state.design_call(dom)

with adviser_box, guard.guarded("the method adviser"):
    if eps_ok:
        noise.adviser_panel(dom, method, opts)

with right:
    if not eps_ok:
        st.info("Set a valid ε on the left: the adviser, the noise check and the ledger need one.",
                icon=":material/info:")
    elif not problems:
        with guard.guarded("the noise check"):
            noise.noise_panel(dom, method, opts, state.method_label(method, opts))
    with guard.guarded("the budget ledger"):
        st.subheader("Budget ledger (planned)", anchor=False)
        for msg in problems:
            st.warning(msg, icon=":material/account_tree:")
        if not problems and eps_ok:
            pv, method, opts = state.preview_for_design(dom)
            plan, _, _, _ = noise.release_plan(dom, method, opts)
            _ledger_table(plan, pv)
            st.page_link("pages/3_preview.py", label="Preview the hierarchy (spends nothing)",
                         icon=":material/visibility:")

with guard.guarded("the saved designs"):
    saved_designs.panel()
