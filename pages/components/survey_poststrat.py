"""Survey page, second tab: DP post-stratification of survey weights (widgets only).

The tab reads the table on the Data page (the curator chooses its weight and stratum columns and
uploads the known totals) or the bundled weighted CPS sample; dpcore.studio.survey checks them.
"""
from __future__ import annotations

import io
import json
import math

import pandas as pd
import streamlit as st

from dpcore.manifest_summary import epsilon_phrase
from dpcore.studio.survey import (
    poststrat_epsilon,
    poststrat_parts,
    poststrat_problems,
    poststrat_release,
    selects_bins,
    strata_problems,
    subpopulation_mask,
    subpopulation_problems,
    weight_problems,
)
from dpcore.studio.survey_book import POSTSTRAT
from pages.components import guard, state
from pages.components import survey_book as book
from pages.components import survey_session as session
from pages.components import survey_source as source
from pages.components.survey_state import (
    CPS_WEIGHTED,
    PS_CANDIDATES,
    PS_COLUMNS,
    PS_OUTCOMES,
    PS_TOTALS,
    load_cps_poststrat,
    parse_totals,
    read_totals_file,
    show_ledger,
)

s = st.session_state
#: the CPS demo file as the budget book names it
CPS_NAME = "cps_vrs_weighted.csv (survey demo)"


def render() -> None:
    st.subheader("DP post-stratification")
    st.caption("A post-stratified weighted count (Merrill 2021, ch. 7): the curator's base weights are scaled so "
               "that the weighted sample reproduces **known population totals** per bin. Three parts spend ε: "
               "ε₁ chooses the bins (exponential mechanism), ε₂ buys a noisy join table that IPF rakes to the "
               "known totals (two or more columns), ε₃ the weighted count itself (smooth sensitivity, "
               "generalized Cauchy noise). The release is (ε₁ + ε₂ + ε₃)-DP. Each **Compute release** click spends ε "
               "again.")
    inp: dict = {}
    with guard.guarded("the post-stratification controls"):
        t = _table()
        if t is None:
            return
        inp.update(_demo_inputs(t) if t.demo else _own_inputs(t))
        inp.update(_budget(t, inp))
        clicked = _button(t, inp)
    if not inp.get("key"):
        return
    if clicked:
        with guard.guarded("the post-stratification release"):
            _release(t, inp)
    _result(inp)


# --------------------------------------------------------------------------- the table


def _table() -> book.ReadTable | None:
    demo_ok = CPS_WEIGHTED.exists()
    choice = source.choose("ps_source", "Bundled demo: CPS November voting supplement (weighted)", demo_ok)
    if not demo_ok:
        st.info(f"The CPS demo's weighted sample `assets/{CPS_WEIGHTED.name}` is missing from this installation (it "
                "ships with the repository; see assets/README.md). Post-stratify the table on the Data page instead.",
                icon=":material/info:")
    if choice is None:
        return None
    if choice == source.DEMO:
        data, counts = load_cps_poststrat(str(CPS_WEIGHTED))
        st.caption(
            f"Sample: `{CPS_WEIGHTED.name}`, {counts['raw']:,} records. Dropped **{counts['nonpositive_weight']:,}** "
            f"with a zero or negative WEIGHT and {counts['missing_weight']:,} with a missing one (base weights must be "
            f"> 0), then {counts['outside_universe']:,} outside the voting-supplement universe (under 18 or not asked "
            f"the voting questions): **{counts['kept']:,} records** kept, 13 November elections 1994–2018 pooled. "
            "Binning columns use fixed public definitions (assets/README.md).")
        # the file read: the budget book charges it
        return book.ReadTable(data, f"demo:{CPS_WEIGHTED}", book.demo_table(CPS_WEIGHTED, CPS_NAME), True)
    df = state.work_df()
    t = book.loaded_table(df)
    st.caption(f"**{t.name}** ({len(df):,} rows × {df.shape[1]} columns, as on the Data page): choose its base-weight "
               "column and the columns to post-stratify on, and upload their known population totals. Releases are "
               "charged to this table's budget book.")
    return book.ReadTable(df, state.work_key(), t, False)


# --------------------------------------------------------------------------- the demo's inputs


def _demo_totals() -> pd.DataFrame:
    tot_up = st.file_uploader(
        "Known population totals (optional: replaces the shipped ones)", type=["csv"], key="ps_totals_up",
        help="CSV with columns column,level,total — the known population total of every base level. Totals are "
             "public inputs: they must not be computed from the confidential sample.")
    if tot_up is not None:
        totals_df, src = pd.read_csv(io.BytesIO(tot_up.getvalue()), dtype={"column": str, "level": str}), tot_up.name
    else:
        totals_df, src = read_totals_file(str(PS_TOTALS)), "assets/cps_poststrat_totals.csv"
    with st.expander(f"Known population totals ({src})"):
        st.caption("Stand-ins for the Census Bureau's population controls, to which CPS weights are raked: the "
                   "weighted totals of this sample per base level (how they were computed, and why a real release "
                   "uses the published controls instead: assets/README.md).")
        st.dataframe(totals_df, hide_index=True, width="stretch")
    return totals_df


def _demo_candidates(cols) -> dict:
    """The ticked candidate sets of bins of every demo column that has several (PS_CANDIDATES)."""
    cands = {}
    with_cands = [c for c in cols if c in PS_CANDIDATES]
    for box, c in zip(st.columns(max(1, len(with_cands))), with_cands):
        names = list(PS_CANDIDATES[c])
        session.keep_if_valid(f"ps_cand_{c}", names)
        chosen = box.multiselect(
            f"Candidate bins: {PS_COLUMNS[c]}", names, default=names[:3] if c == "agegr" else names,
            key=f"ps_cand_{c}",
            help="Candidate sets of bins (public). With two or more, the exponential mechanism picks one at ε₁, "
                 "favouring many bins with a small max potential weight W₀ (a weight no record can dominate). With "
                 "one, nothing is spent on the choice.")
        cands[c] = {n: PS_CANDIDATES[c][n] for n in chosen}
    return cands


def _demo_inputs(t: book.ReadTable) -> dict:
    data = t.df
    st.text_input("Weights column", value="WEIGHT", disabled=True, key="ps_weights_demo",
                  help="The base weight of each record, from the sampling design (here the CPS person weight). Every "
                       "base weight must be > 0 and lie in the declared range below. It is confidential data: its "
                       "influence is bounded by the range, not read off.")
    totals_df = _demo_totals()
    col_opts = list(PS_COLUMNS)
    session.keep_if_valid("ps_cols", col_opts)
    cols = st.multiselect(
        "Post-stratify on", col_opts, default=["agegr", "sex"], format_func=lambda c: PS_COLUMNS.get(c, c),
        key="ps_cols",
        help="Columns whose bins get known totals. The bins' levels are public (fixed definitions). With two or more "
             "columns the weights are raked (IPF) to every column's totals, which needs a noisy join table (ε₂).")
    cands = _demo_candidates(cols)
    outcome = st.selectbox(
        "Count", list(PS_OUTCOMES), format_func=PS_OUTCOMES.get, key="ps_outcome",
        help="The counting query: the post-stratified weighted count of records with this answer in the "
             "subpopulation, i.e. an estimate of how many people (in this sample's scale) it describes.")
    c1, c2 = st.columns(2)
    ages = c1.slider("Subpopulation: age", 18, 90, (18, 90), key="ps_ages",
                     help="Only records in this age range are counted (every record still gets its post-stratified "
                          "weight). Age 90 is the CPS top code.")
    sex = c2.radio("Subpopulation: sex", ["both", "FEMALE", "MALE"], horizontal=True, key="ps_sex",
                   help="Only records of this sex are counted.")
    mask = data["age"].between(*ages).to_numpy()
    if sex != "both":
        mask = mask & (data["sex"] == sex).to_numpy()
    if outcome != "ALL":
        mask = mask & (data["turnout"] == outcome).to_numpy()
    label = (f"{PS_OUTCOMES[outcome].split(' (')[0]}, ages {ages[0]}–{ages[1]}"
             + ("" if sex == "both" else f", {sex.lower()}"))
    totals = parse_totals(totals_df)
    return {"weights": "WEIGHT", "totals_df": totals_df, "totals": totals, "cols": cols, "cands": cands,
            "mask": mask, "label": label, "range_default": (100.0, 15000.0),
            "problems": strata_problems(data, cols, totals, "WEIGHT") if cols else [],
            "no_candidates": [c for c in cols if c in PS_CANDIDATES and not cands.get(c)]}


# --------------------------------------------------------------------------- the curator's table


def _own_inputs(t: book.ReadTable) -> dict:
    df = t.df
    columns = list(map(str, df.columns))
    session.keep_if_valid("ps_weights", columns)  # saved with another table: its columns may differ
    c1, c2 = st.columns([1, 2])
    weights = c1.selectbox(
        "Weights column", columns, index=None, placeholder="choose a column", key="ps_weights",
        help="Base weight of each record from the sampling design; every one must be > 0 (rows with a missing, zero "
             "or negative weight are refused, not dropped silently) and lie in the declared range below.")
    strata_opts = [c for c in columns if c != weights]
    session.keep_if_valid("ps_cols_up", strata_opts)
    cols = c2.multiselect(
        "Post-stratify on", strata_opts, key="ps_cols_up",
        help="Columns with known population totals (the strata). Each level is its own bin. Two or more columns: DP "
             "IPF with a noisy join table (ε₂).")
    tot_up = st.file_uploader(
        "Known population totals (CSV: column,level,total)", type=["csv"], key="ps_totals_up2",
        help="The known population total of every level of every column you post-stratify on. Public input (e.g. "
             "census controls): never computed from the sample.")
    totals_df = (pd.read_csv(io.BytesIO(tot_up.getvalue()), dtype={"column": str, "level": str})
                 if tot_up is not None else None)
    totals = parse_totals(totals_df) if totals_df is not None else None
    expr = st.text_input(
        "Count rows where (pandas expression; empty: every row)", key="ps_where", placeholder="e.g. voted == 'YES'",
        help='The counting query, e.g. "voted == \'YES\' and age >= 65". Counted records get their post-stratified '
             "weight.")
    problems = weight_problems(df, weights) + strata_problems(df, cols, totals, weights)
    problems += subpopulation_problems(df, expr, allow_empty=True)
    mask = subpopulation_mask(df, expr) if not subpopulation_problems(df, expr, allow_empty=True) else None
    return {"weights": weights, "totals_df": totals_df, "totals": totals, "cols": cols, "cands": {}, "mask": mask,
            "label": expr.strip() or "every row", "range_default": (1.0, 10000.0), "problems": problems,
            "no_candidates": []}


# --------------------------------------------------------------------------- ε and the button


def _budget(t: book.ReadTable, inp: dict) -> dict:
    cols, cands = inp["cols"], inp["cands"]
    st.markdown("**Privacy budget**")
    c1, c2, c3, c4 = st.columns(4)
    e1 = c1.number_input(
        "ε₁ bin selection", min_value=0.0, value=0.5, step=0.1, format="%.4g", key="ps_e1",
        disabled=not selects_bins(cands),
        help="Spent by the exponential mechanism choosing among candidate sets of bins (Thm 7.1.3), split equally "
             "over the columns with several candidates. Its sensitivity grows with G/G' of the declared weight "
             "range, so a small ε₁ chooses almost uniformly. Not spent with one candidate.")
    e2 = c2.number_input(
        "ε₂ join table (IPF)", min_value=0.0, value=0.5, step=0.1, format="%.4g", key="ps_e2", disabled=len(cols) < 2,
        help="Spent on noisy counts of the join cells of the chosen bins; IPF then rakes the table to the known "
             "totals (post-processing, Thm 7.3.2). One record is in one cell, so the cells share ε₂ in parallel. "
             "Only used with two or more columns.")
    e3 = c3.number_input(
        "ε₃ weighted count", min_value=0.0, value=1.0, step=0.1, format="%.4g", key="ps_e3",
        help="Spent on the weighted count: noise scaled to the smooth bound SS_β of the largest weight one record "
             "can carry (Prop 7.4.2). Smaller ε₃: stronger privacy, more noise.")
    gamma = c4.number_input(
        "γ (noise tail)", min_value=1.0, value=4.0, step=0.5, format="%.3g", key="ps_gamma",
        help="Generalized Cauchy noise with density ∝ 1/(1 + |x|^γ). The smooth-sensitivity calibration (Thm 2.2.5) "
             "is only proven ε-DP for γ ≥ 2: for γ < 2 the noise is too light-tailed relative to how fast SS_β may "
             "change between neighbouring samples. γ ≤ 3 has infinite variance; γ = 4 gives unit-variance noise.")
    g_lo, g_hi = _weight_range(t, inp["range_default"])
    eps_select, eps_table, _ = poststrat_parts(e1, e2, e3, candidates=cands, columns=cols)
    problems = inp["problems"] + poststrat_problems(eps_select, eps_table, e3, gamma, (g_lo, g_hi), cols,
                                                    inp["no_candidates"])
    if inp["weights"] is not None and not inp["problems"]:
        problems += weight_problems(t.df, inp["weights"], (g_lo, g_hi))
    problems = list(dict.fromkeys(problems))
    for p in problems:
        st.error(p, icon=":material/warning:")
    if not problems and gamma <= 3:
        st.warning(f"γ = {gamma:g} ≤ 3: the weighted count's noise has **infinite variance** — single releases can be "
                   "far off. γ = 4 gives unit variance.", icon=":material/error:")
    mask = inp["mask"]
    key = json.dumps([t.key, cols, {c: list(v) for c, v in cands.items()}, inp["label"], eps_select, eps_table, e3,
                      gamma, g_lo, g_hi, inp["weights"], None if mask is None else int(mask.sum()),
                      None if inp["totals_df"] is None else inp["totals_df"].to_csv(index=False)], default=str)
    return {"eps_select": eps_select, "eps_table": eps_table, "e3": float(e3), "gamma": float(gamma),
            "weight_range": (float(g_lo), float(g_hi)), "problems": problems, "key": key,
            "total_eps": poststrat_epsilon(eps_select, eps_table, e3)}


def _weight_range(t: book.ReadTable, default: tuple[float, float]) -> tuple[float, float]:
    c1, c2 = st.columns(2)
    sfx = "demo" if t.demo else "up"
    g_lo = c1.number_input(
        "Base-weight range: smallest G'", min_value=0.0, value=default[0], step=10.0, key=f"ps_glo_{sfx}",
        help="Public, declared from the sampling design — not read from the data. It bounds how heavy an added or "
             "removed record can be (W_k, AW_k) and the selection sensitivity (∝ G/G'). For the CPS demo we declare "
             "[100, 15000]; a real release takes it from the design documentation.")
    g_hi = c2.number_input(
        "Base-weight range: largest G", min_value=0.0, value=default[1], step=100.0, key=f"ps_ghi_{sfx}",
        help="Largest base weight the design allows (public). Every base weight in the table must lie in [G', G]; a "
             "wider range means more noise.")
    return g_lo, g_hi


def _button(t: book.ReadTable, inp: dict) -> bool:
    clicked = st.button(f"Compute release (spends ε {epsilon_phrase(inp['total_eps'])})", type="primary",
                        disabled=bool(inp["problems"]), key="ps_go",
                        help="Chooses bins, rakes, and releases the weighted count with fresh noise. Every click "
                             "spends ε₁ + ε₂ + ε₃ again.")
    book.book_panel(t.charged, "ps_book")
    return clicked and not inp["problems"]


# --------------------------------------------------------------------------- the release and its result


def _release(t: book.ReadTable, inp: dict) -> None:
    with st.spinner("Selecting bins, raking and releasing …"):
        def run():
            return poststrat_release(t.df, inp["cols"], inp["totals"], inp["cands"], inp["mask"],
                                     eps_select=inp["eps_select"], eps_table=inp["eps_table"], eps_count=inp["e3"],
                                     gamma=inp["gamma"], weights=inp["weights"], weight_range=inp["weight_range"])

        # charged to the read table's budget book: refused over its cap before any randomness
        rel, entry = book.recorded(run, t.charged, epsilon=inp["total_eps"], method=POSTSTRAT)
    s["poststrat_release"] = {"key": inp["key"], "rel": rel, "label": inp["label"], "entry": entry,
                              "table": t.charged.name,
                              "parts": (inp["eps_select"] or 0.0, inp["eps_table"] or 0.0, inp["e3"])}


def _result(inp: dict) -> None:
    out = s.get("poststrat_release")
    if out and out["key"] != inp["key"]:
        st.info("The settings changed since the last release; compute again to see a release for them.")
        return
    if not out:
        return
    with guard.guarded("the post-stratification result"):
        rel = out["rel"]
        c1, c2, c3 = st.columns([2, 1, 2])
        c1.metric(f"DP weighted count: {out['label']}", f"{rel.value:,.0f}")
        c2.metric("ε spent", f"{rel.ledger.epsilon:.4g}")
        c3.success("Differentially private release: publish the count, the chosen bins and the ledger.",
                   icon=":material/lock:")
        st.caption(rel.statement)
        if not rel.finite_variance:
            st.warning(f"γ = {rel.gamma:g} ≤ 3: this release's noise has infinite variance.", icon=":material/error:")
        _bins_and_ipf(rel, chosen=out["parts"][0] > 0)
        led = show_ledger(rel.ledger, key="ps_ledger")
        if out.get("entry") is not None:
            st.caption(f"Recorded as release {out['entry']} in the installation's budget book ({out['table']}).")
        p1, p2, p3 = out["parts"]
        st.caption(f"Total ε = ε₁ + ε₂ + ε₃ = {p1:g} + {p2:g} + {p3:g} = {led['epsilon_total']:.6g} (sequential "
                   "composition). The smooth sensitivity depends on the data and is not recorded.")
        _curator_view(rel)


def _bins_and_ipf(rel, chosen: bool) -> None:
    st.markdown("**Selected bins** (DP: chosen by the exponential mechanism; merged groups come from the non-negative "
                "collapse of the noisy table)" if chosen else
                "**Bins** (one candidate per column: nothing was chosen and no ε₁ spent; merged groups come from the "
                "non-negative collapse of the noisy table)")
    st.dataframe(pd.DataFrame([{"column": c, "candidate": rel.selected[c],
                                "bins": " | ".join("+".join(map(str, g)) for g in rel.bins[c])}
                               for c in rel.selected]), hide_index=True, width="stretch")
    if rel.ipf is None:
        st.caption("IPF: not used (one column — the bins' known totals are used directly).")
    elif rel.ipf["converged"]:
        st.caption(f"IPF: :green[converged] after {rel.ipf['iterations']} sweeps (raked to every known margin).")
    else:
        st.warning(f"IPF did NOT converge after {rel.ipf['iterations']} sweeps (max change "
                   f"{rel.ipf['max_change']:.3g}); the join-bin totals are approximate.", icon=":material/error:")


def _curator_view(rel) -> None:
    with st.expander("Curator view — NOT FOR RELEASE"):
        guard.not_dp_label("Computed from the confidential data: NOT FOR RELEASE")
        st.write(pd.DataFrame([{
            "non-private weighted estimate": f"{rel.exact:,.1f}",
            "DP − non-private": f"{rel.value - rel.exact:,.1f}",
            "smooth bound SS_β": f"{rel.smooth_sensitivity:,.1f}", "β": f"{rel.beta:.4g}",
            "noise scale": f"{rel.scale:,.1f}",
            "noise sd": f"{rel.noise_sd:,.1f}" if math.isfinite(rel.noise_sd) else "infinite",
        }]).astype(str))
        probs = [{"column": c, "candidate": n, "selection probability": p}
                 for c, d_ in rel.selection_probabilities.items() for n, p in d_.items()]
        st.dataframe(pd.DataFrame(probs), hide_index=True, width="stretch")
