"""Survey page, second tab: DP post-stratification of survey weights (widgets only)."""
from __future__ import annotations

import io
import json
import math

import pandas as pd
import streamlit as st

from dpcore.manifest_summary import epsilon_phrase
from dpcore.studio.survey import poststrat_epsilon, poststrat_parts, poststrat_release, selects_bins
from dpcore.studio.survey_book import POSTSTRAT
from pages import _common as ui
from pages import _survey_book as book
from pages import _survey_session as session
from pages._survey_state import (
    CPS_WEIGHTED,
    PS_CANDIDATES,
    PS_COLUMNS,
    PS_OUTCOMES,
    PS_TOTALS,
    load_cps_poststrat,
    parse_totals,
    read_totals_file,
    read_upload_cached,
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
    ps_ready = False
    with ui.guarded("the post-stratification controls"):
        sources = (["CPS demo (November voting supplement)"] if CPS_WEIGHTED.exists() else []) + [
            "Upload a weighted survey file"]
        session.keep_if_valid("ps_source", sources)  # a saved choice comes back only if still offered
        source = st.radio("Data", sources, key="ps_source", horizontal=True,
                          help="The confidential weighted sample. The demo uses the CPS voting-supplement "
                               "file with its survey weights; or upload a CSV/Parquet with a weights column.")
        demo = source.startswith("CPS")
        if not CPS_WEIGHTED.exists():
            st.info(f"The CPS demo's weighted sample `assets/{CPS_WEIGHTED.name}` is missing from this installation "
                    "(it ships with the repository; see assets/README.md). Upload a weighted survey file and a "
                    "table of known population totals instead.", icon=":material/info:")
        if demo:
            data, counts = load_cps_poststrat(str(CPS_WEIGHTED))
            table = book.demo_table(CPS_WEIGHTED, CPS_NAME)  # the file read: the budget book charges it
            st.caption(
                f"Sample: `{CPS_WEIGHTED.name}`, {counts['raw']:,} records. Dropped "
                f"**{counts['nonpositive_weight']:,}** "
                f"with a zero or negative WEIGHT and {counts['missing_weight']:,} with a missing one (base weights "
                f"must be > 0), then {counts['outside_universe']:,} outside the voting-supplement universe "
                f"(under 18 or not asked the voting questions): **{counts['kept']:,} records** kept, 13 November "
                "elections 1994–2018 pooled. Binning columns use fixed public definitions (assets/README.md).")
            weights = "WEIGHT"
            st.text_input("Weights column", value="WEIGHT", disabled=True, key="ps_weights_demo",
                          help="The base weight of each record, from the sampling design (here the CPS person "
                               "weight). Every base weight must be > 0 and lie in the declared range below. "
                               "It is confidential data: its influence is bounded by the range, not read off.")
            tot_up = st.file_uploader(
                "Known population totals (optional: replaces the shipped ones)", type=["csv"], key="ps_totals_up",
                help="CSV with columns column,level,total — the known population total of every base level. "
                     "Totals are public inputs: they must not be computed from the confidential sample.")
            if tot_up is not None:
                totals_df = pd.read_csv(io.BytesIO(tot_up.getvalue()), dtype={"column": str, "level": str})
                totals_src = tot_up.name
            else:
                totals_df = read_totals_file(str(PS_TOTALS))
                totals_src = "assets/cps_poststrat_totals.csv"
            totals = parse_totals(totals_df)
            with st.expander(f"Known population totals ({totals_src})"):
                st.caption("Stand-ins for the Census Bureau's population controls, to which CPS weights are "
                           "raked: the weighted totals of this sample per base level (how they were computed, "
                           "and why a real release uses the published controls instead: assets/README.md).")
                st.dataframe(totals_df, hide_index=True, width="stretch")
            col_opts = list(PS_COLUMNS)
            session.keep_if_valid("ps_cols", col_opts)
            cols = st.multiselect(
                "Post-stratify on", col_opts, default=["agegr", "sex"], format_func=lambda c: PS_COLUMNS.get(c, c),
                key="ps_cols",
                help="Columns whose bins get known totals. The bins' levels are public (fixed definitions). With "
                     "two or more columns the weights are raked (IPF) to every column's totals, which needs a "
                     "noisy join table (ε₂).")
            cands = {}
            cc = st.columns(max(1, sum(c in PS_CANDIDATES for c in cols)))
            j = 0
            for c in cols:
                if c in PS_CANDIDATES:
                    names = list(PS_CANDIDATES[c])
                    session.keep_if_valid(f"ps_cand_{c}", names)
                    chosen = cc[j].multiselect(
                        f"Candidate bins: {PS_COLUMNS[c]}", names, default=names[:3] if c == "agegr" else names,
                        key=f"ps_cand_{c}",
                        help="Candidate sets of bins (public). With two or more, the exponential mechanism picks "
                             "one at ε₁, favouring many bins with a small max potential weight W₀ (a weight no "
                             "record can dominate). With one, nothing is spent on the choice.")
                    j += 1
                    if chosen:
                        cands[c] = {n: PS_CANDIDATES[c][n] for n in chosen}
            outcome = st.selectbox(
                "Count", list(PS_OUTCOMES), format_func=PS_OUTCOMES.get, key="ps_outcome",
                help="The counting query: the post-stratified weighted count of records with this answer in the "
                     "subpopulation, i.e. an estimate of how many people (in this sample's scale) it describes.")
            c1, c2 = st.columns(2)
            ps_ages = c1.slider("Subpopulation: age", 18, 90, (18, 90), key="ps_ages",
                                help="Only records in this age range are counted (every record still gets its "
                                     "post-stratified weight). Age 90 is the CPS top code.")
            ps_sex = c2.radio("Subpopulation: sex", ["both", "FEMALE", "MALE"], horizontal=True, key="ps_sex",
                              help="Only records of this sex are counted.")
            mask = data["age"].between(*ps_ages).to_numpy()
            if ps_sex != "both":
                mask = mask & (data["sex"] == ps_sex).to_numpy()
            if outcome != "ALL":
                mask = mask & (data["turnout"] == outcome).to_numpy()
            query_label = (f"{PS_OUTCOMES[outcome].split(' (')[0]}, ages {ps_ages[0]}–{ps_ages[1]}"
                           + ("" if ps_sex == "both" else f", {ps_sex.lower()}"))
            wr_default = (100.0, 15000.0)
        else:
            up = st.file_uploader("Weighted survey file (CSV or Parquet)", type=["csv", "parquet", "pq"],
                                  key="ps_data_up", help="The confidential sample, one row per respondent, with "
                                                         "a base-weight column from the design.")
            tot_up = st.file_uploader("Known population totals (CSV: column,level,total)", type=["csv"],
                                      key="ps_totals_up2",
                                      help="The known population total of every base level of every column you "
                                           "post-stratify on. Public input: never computed from the sample.")
            if up is None or tot_up is None:
                st.info("Upload the weighted survey file and its known population totals to continue.")
                st.stop()
            data = read_upload_cached(up.getvalue(), up.name)
            table = book.upload_table(data, up.getvalue(), up.name)
            totals_df = pd.read_csv(io.BytesIO(tot_up.getvalue()), dtype={"column": str, "level": str})
            totals = parse_totals(totals_df)
            num = [c for c in data.columns if pd.api.types.is_numeric_dtype(data[c])]
            if not num:
                st.error("The survey file has no numeric column to use as base weights.")
                st.stop()
            session.keep_if_valid("ps_weights", num)  # saved with another upload: its columns may differ
            session.keep_if_valid("ps_cols_up", [c for c in data.columns if c in totals])
            weights = st.selectbox("Weights column", num, key="ps_weights",
                                   help="Base weight of each record from the sampling design; every one must be > 0 "
                                        "(rows with a missing, zero or negative weight are refused, not dropped "
                                        "silently) and lie in the declared range below.")
            cols = st.multiselect("Post-stratify on", [c for c in data.columns if c in totals], key="ps_cols_up",
                                  help="Columns with known totals (listed in the totals file). Each base level "
                                       "is its own bin. Two or more columns: DP IPF with a noisy join table (ε₂).")
            cands = {}
            expr = st.text_input("Count rows where (pandas expression)", key="ps_where",
                                 help='The counting query, e.g. "voted == \'YES\' and age >= 65". Counted records '
                                      "get their post-stratified weight.")
            if not expr.strip():
                st.info("Enter the rows to count.")
                st.stop()
            from dpcore.survey.expressions import row_mask

            mask = row_mask(data, expr, "the count expression")
            query_label = expr
            wr_default = (1.0, 10000.0)

        multi = selects_bins(cands)
        st.markdown("**Privacy budget**")
        c1, c2, c3, c4 = st.columns(4)
        e1 = c1.number_input(
            "ε₁ bin selection", min_value=0.0, value=0.5, step=0.1, format="%.4g", key="ps_e1", disabled=not multi,
            help="Spent by the exponential mechanism choosing among candidate sets of bins (Thm 7.1.3), split "
                 "equally over the columns with several candidates. Its sensitivity grows with G/G' of the "
                 "declared weight range, so a small ε₁ chooses almost uniformly. Not spent with one candidate.")
        e2 = c2.number_input(
            "ε₂ join table (IPF)", min_value=0.0, value=0.5, step=0.1, format="%.4g", key="ps_e2",
            disabled=len(cols) < 2,
            help="Spent on noisy counts of the join cells of the chosen bins; IPF then rakes the table to the "
                 "known totals (post-processing, Thm 7.3.2). One record is in one cell, so the cells share ε₂ "
                 "in parallel. Only used with two or more columns.")
        e3 = c3.number_input(
            "ε₃ weighted count", min_value=0.0, value=1.0, step=0.1, format="%.4g", key="ps_e3",
            help="Spent on the weighted count: noise scaled to the smooth bound SS_β of the largest weight one "
                 "record can carry (Prop 7.4.2). Smaller ε₃: stronger privacy, more noise.")
        gamma = c4.number_input(
            "γ (noise tail)", min_value=1.0, value=4.0, step=0.5, format="%.3g", key="ps_gamma",
            help="Generalized Cauchy noise with density ∝ 1/(1 + |x|^γ). The smooth-sensitivity calibration "
                 "(Thm 2.2.5) is only proven ε-DP for γ ≥ 2: for γ < 2 the noise is too light-tailed relative to "
                 "how fast SS_β may change between neighbouring samples. γ ≤ 3 has infinite variance; γ = 4 "
                 "gives unit-variance noise.")
        c1, c2 = st.columns(2)
        g_lo = c1.number_input(
            "Base-weight range: smallest G'", min_value=0.0, value=wr_default[0], step=10.0,
            key="ps_glo_demo" if demo else "ps_glo_up",
            help="Public, declared from the sampling design — not read from the data. It bounds how heavy an "
                 "added or removed record can be (W_k, AW_k) and the selection sensitivity (∝ G/G'). For the CPS "
                 "demo we declare [100, 15000]; a real release takes it from the design documentation.")
        g_hi = c2.number_input(
            "Base-weight range: largest G", min_value=0.0, value=wr_default[1], step=100.0,
            key="ps_ghi_demo" if demo else "ps_ghi_up",
            help="Largest base weight the design allows (public). Every base weight in the file must lie in "
                 "[G', G]; a wider range means more noise.")

        eps_select, eps_table, _ = poststrat_parts(e1, e2, e3, candidates=cands, columns=cols)
        ps_problems = []
        from dpcore.errors import DPCoreError
        from dpcore.privacy.ledger import check_epsilon
        from dpcore.survey import check_gamma
        from dpcore.survey.poststrat import check_weight_range

        for what, fn, arg in [("ε₁", check_epsilon, eps_select), ("ε₂", check_epsilon, eps_table),
                              ("ε₃", check_epsilon, e3), ("γ", check_gamma, gamma),
                              ("base-weight range", check_weight_range, (g_lo, g_hi))]:
            if arg is None:
                continue
            try:
                fn(arg)
            except DPCoreError as exc:
                ps_problems.append(f"{what}: {exc}")
        if not cols:
            ps_problems.append("Choose at least one column to post-stratify on.")
        if any(not cands.get(c) for c in cols if demo and c in PS_CANDIDATES):
            ps_problems.append("Choose at least one candidate set of bins for every column.")
        for p_ in ps_problems:
            st.error(p_, icon=":material/warning:")
        if not ps_problems and gamma <= 3:
            st.warning(f"γ = {gamma:g} ≤ 3: the weighted count's noise has **infinite variance** — single "
                       "releases can be far off. γ = 4 gives unit variance.", icon=":material/error:")
        total_eps = poststrat_epsilon(eps_select, eps_table, e3)
        ps_key = json.dumps([source, cols, {c: list(v) for c, v in cands.items()}, query_label, eps_select,
                             eps_table, e3, gamma, g_lo, g_hi, weights, int(mask.sum()),
                             totals_df.to_csv(index=False)], default=str)
        ps_clicked = st.button(f"Compute release (spends ε {epsilon_phrase(total_eps)})", type="primary",
                               disabled=bool(ps_problems), key="ps_go",
                               help="Chooses bins, rakes, and releases the weighted count with fresh noise. Every "
                                    "click spends ε₁ + ε₂ + ε₃ again.")
        book.book_panel(table, "ps_book")
        ps_ready = True

    if ps_ready and ps_clicked:
        with ui.guarded("the post-stratification release"):
            with st.spinner("Selecting bins, raking and releasing …"):
                def run():
                    return poststrat_release(data, cols, totals, cands, mask, eps_select=eps_select,
                                             eps_table=eps_table, eps_count=float(e3), gamma=float(gamma),
                                             weights=weights, weight_range=(float(g_lo), float(g_hi)))

                # charged to the read table's budget book: refused over its cap before any randomness
                rel, entry = book.recorded(run, table, epsilon=total_eps, method=POSTSTRAT)
            s["poststrat_release"] = {"key": ps_key, "rel": rel, "label": query_label, "entry": entry,
                                      "table": table.name,
                                      "parts": (eps_select or 0.0, eps_table or 0.0, float(e3))}

    ps_out = s.get("poststrat_release")
    if ps_out and ps_ready and ps_out["key"] != ps_key:
        st.info("The settings changed since the last release; compute again to see a release for them.")
        ps_out = None
    if ps_out and ps_ready:
        with ui.guarded("the post-stratification result"):
            rel = ps_out["rel"]
            c1, c2, c3 = st.columns([2, 1, 2])
            c1.metric(f"DP weighted count: {ps_out['label']}", f"{rel.value:,.0f}")
            c2.metric("ε spent", f"{rel.ledger.epsilon:.4g}")
            c3.success("Differentially private release: publish the count, the chosen bins and the ledger.",
                       icon=":material/lock:")
            st.caption(rel.statement)
            if not rel.finite_variance:
                st.warning(f"γ = {rel.gamma:g} ≤ 3: this release's noise has infinite variance.",
                           icon=":material/error:")
            st.markdown("**Selected bins** (DP: chosen by the exponential mechanism; merged groups come from the "
                        "non-negative collapse of the noisy table)")
            st.dataframe(pd.DataFrame([{"column": c, "candidate": rel.selected[c],
                                        "bins": " | ".join("+".join(map(str, g)) for g in rel.bins[c])}
                                       for c in rel.selected]), hide_index=True, width="stretch")
            if rel.ipf is None:
                st.caption("IPF: not used (one column — the bins' known totals are used directly).")
            elif rel.ipf["converged"]:
                st.caption(f"IPF: :green[converged] after {rel.ipf['iterations']} sweeps (raked to every known "
                           "margin).")
            else:
                st.warning(f"IPF did NOT converge after {rel.ipf['iterations']} sweeps (max change "
                           f"{rel.ipf['max_change']:.3g}); the join-bin totals are approximate.",
                           icon=":material/error:")
            led = show_ledger(rel.ledger, key="ps_ledger")
            if ps_out.get("entry") is not None:
                st.caption(f"Recorded as release {ps_out['entry']} in the installation's budget book "
                           f"({ps_out['table']}).")
            p1, p2, p3 = ps_out["parts"]
            st.caption(f"Total ε = ε₁ + ε₂ + ε₃ = {p1:g} + {p2:g} + {p3:g} = {led['epsilon_total']:.6g} "
                       "(sequential composition). The smooth sensitivity depends on the data and is not recorded.")
            with st.expander("Curator view — NOT FOR RELEASE"):
                ui.not_dp_label("Computed from the confidential data: NOT FOR RELEASE")
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
