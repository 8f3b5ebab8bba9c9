"""Survey page, first tab: DP estimates from k-NN-imputed data, with the noise in context (widgets only)."""
from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import streamlit as st

from dpcore.data.datasets import SD2011_LEVELS
from dpcore.manifest_summary import epsilon_phrase
from dpcore.studio.survey import (
    LN2,
    context_grid,
    imputation_problems,
    infinite_variance_warning,
    parts_of,
    release_imputed,
)
from dpcore.studio.survey_book import IMPUTATION
from pages import _common as ui
from pages import _survey_book as book
from pages import _survey_session as session
from pages._survey_state import (
    DEFAULT_MATCH,
    IMPUTE_RULES,
    METHODS,
    SD2011,
    cached_context,
    cached_impute,
    load_sd2011,
    show_ledger,
)

s = st.session_state
#: the table the imputation tab reads, as the budget book names it
SD2011_NAME = "sd2011.csv (survey demo)"


def render() -> None:
    with ui.guarded("the imputation controls"):
        if not SD2011.exists():
            st.error(f"The SD2011 demo file is missing ({SD2011.name} in assets/); nothing to show.")
            st.stop()
        df = load_sd2011(str(SD2011))
        loaded = s.get("data_name")
        st.info(f"This tab reads the **SD2011 survey demo** ({SD2011.name}, {len(df):,} respondents), not the "
                "table on the Data page"
                + (f" (“{loaded}”)" if loaded else "")
                + ": its subpopulation filter (age) and public matching levels are SD2011's codebook. Its releases "
                  f"are charged to the budget book of {SD2011_NAME}.", icon=":material/dataset:")
        numeric_missing = [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c]) and df[c].isna().any()]
        candidates = [c for c in df.columns if not pd.api.types.is_numeric_dtype(df[c])]
        session.keep_if_valid("sv_target", numeric_missing)  # a saved choice comes back only if still offered
        session.keep_if_valid("sv_match", candidates)
        c1, c2, c3 = st.columns([1, 3, 1])
        target = c1.selectbox(
            "Target (to impute)", numeric_missing,
            index=numeric_missing.index("income") if "income" in numeric_missing else 0, key="sv_target",
            help="The survey variable with missing answers. Each missing value is filled from the k most similar "
                 "complete records (donors). One person's record can be the donor of many others, which is why "
                 "imputation needs its own sensitivity analysis (L_1(D), Merrill ch. 6).")
        match = c2.multiselect(
            "Matching attributes", candidates, default=[c for c in DEFAULT_MATCH if c in candidates],
            key="sv_match",
            help="Attributes used to find similar donors. Their levels must be public (declared, not read from the "
                 "data): levels of attributes outside the SD2011 codebook are inferred from the data, which makes "
                 "the release NOT DP. Ordinal ones (age group, education, place size) are matched by distance.")
        k = int(c3.number_input(
            "k (donors)", min_value=1, max_value=20, value=1, step=1, key="sv_k",
            help="Number of donors per missing value. A larger k spreads each donor's influence but a donor can "
                 "serve more donees; the smooth sensitivity reflects the actual worst case."))
        c1, c2, c3 = st.columns([1.5, 0.8, 2])  # the rule names need ~210 px at 1280
        rule_opts = ["copy"] if k == 1 else ["mean", "majority"]
        if s.get("sv_rule") not in rule_opts:
            s["sv_rule"] = rule_opts[0]
        rule = c1.selectbox("Imputation rule", rule_opts, format_func=IMPUTE_RULES.get, key="sv_rule",
                            help="How the k donors' values become the imputed value. Imputation itself spends no "
                                 "ε; its effect on every release is counted in the sensitivity.")
        query = c2.radio("Query", ["count", "mean", "variance"], key="sv_query", horizontal=False,
                         help="count: respondents in the subpopulation whose (imputed) target is below a threshold. "
                              "mean / variance: of the target, clipped to the public bounds.")
        ages = c3.slider("Subpopulation: age", int(df["age"].min()), int(df["age"].max()), (20, 59), key="sv_ages",
                         help="Which respondents the estimate is about. The filter uses age only (never the "
                              "imputed target), so whether someone is in it does not depend on another "
                              "person's record.")
        c1, c2, c3, c4 = st.columns([1, 1, 1, 1.4])  # room for "Subpopulation size is public"
        lo = c1.number_input("Lower bound", value=0.0, step=100.0, key="sv_lo",
                             help="Public lower bound of the target. Values are clipped into [lower, upper] before "
                                  "the release; choose the bounds without looking at the data — they set how much "
                                  "one person can move the answer.")
        hi = c2.number_input("Upper bound", value=20000.0, step=100.0, key="sv_hi",
                             help="Public upper bound of the target (clipping). Wider bounds: less bias, more noise.")
        threshold = c3.number_input("Count: target below", value=658.0, step=50.0, key="sv_thr",
                                    disabled=query != "count",
                                    help="For a count: respondents whose (imputed) target is below this value. "
                                         "The threshold is public; inclusion depends on imputed values, which "
                                         "the sensitivity accounts for (Cor 6.4.3).")
        public_size = c4.checkbox("Subpopulation size is public", value=True, key="sv_pubsize",
                                  disabled=query == "count",
                                  help="Treat the number of respondents in the subpopulation as known (e.g. from "
                                       "the design), as Merrill §6.5.3 does. Untick: a share of ε buys a noisy "
                                       "size first (Remark 6.4.7).")
        c1, c2 = st.columns([1, 2])
        eps = c1.number_input("ε", value=6 * LN2, step=0.1, format="%.4f", key="sv_eps",
                              help="Privacy budget of this one release: smaller means stronger privacy and more "
                                   "noise. Default 6 ln 2 ≈ 4.16. The smooth release needs ε ≥ 2 ln 2 ≈ 1.39 per "
                                   "part and gives finite-variance noise only for ε > 4 ln 2 ≈ 2.77 per part.")
        method = c2.radio("Method", list(METHODS), format_func=METHODS.get, key="sv_method",
                          help="Smooth: noise scaled to a smooth upper bound of the imputed query's sensitivity "
                               "(generalized Cauchy; Merrill Cor 6.4.3/6.4.6/6.4.9) — DP. Ignore missing: drop the "
                               "records with a missing target and add Laplace noise — DP but biased if missingness "
                               "is informative. Global: the thesis's optimistic 'global' sensitivity read from the "
                               "data — NOT DP, shown only as a comparator.")
        if method == "global":
            ui.not_dp_label("NOT DP: the 'global' baseline reads its sensitivity from the data (the true global "
                            "sensitivity of imputation is unbounded). Comparator only — never publish it.")

        parts = parts_of(query, method, public_size)
        problems = imputation_problems(eps, parts, method=method, query=query, lo=lo, hi=hi, match=match)
        for p in problems:
            st.error(p, icon=":material/warning:")
        warning = None if problems else infinite_variance_warning(eps, parts, method)
        if warning:
            st.warning(warning, icon=":material/error:")

        levels = {c: SD2011_LEVELS[c] for c in match if c in SD2011_LEVELS}
        levels_json = json.dumps(levels, sort_keys=True)
        key = json.dumps([target, match, k, rule, query, list(ages), lo, hi, threshold, public_size, eps, method],
                         default=str)
        clicked = st.button(f"Compute release (spends ε {epsilon_phrase(eps)})", type="primary",
                            disabled=bool(problems),
                            key="sv_go", help="Imputes (cached, spends nothing) and releases the estimate with "
                                              "fresh noise. Every click spends ε again.")
        table = book.demo_table(SD2011, SD2011_NAME)
        book.book_panel(table, "sv_book")

    if clicked:
        with ui.guarded("the imputation release"):
            with st.spinner("Imputing and releasing …"):
                imp = cached_impute(str(SD2011), target, tuple(match), k, rule, levels_json)
                where = df["age"].between(*ages).to_numpy()

                def run():
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", RuntimeWarning)  # infinite variance: warned on the page
                        return release_imputed(imp, query, method, float(eps), np.random.default_rng(), bounds=(lo, hi),
                                               where=where, threshold=threshold, public_size=public_size)

                # charged to SD2011's budget book: refused over its cap before any randomness
                rel, entry = book.recorded(run, table, epsilon=float(eps), method=IMPUTATION,
                                           dp=False if imp.domain_inferred else None,
                                           not_dp_reason="levels of some matching attributes were inferred from "
                                                         "the data")
            s["survey_release"] = {"key": key, "rel": rel, "dp_method": getattr(rel, "dp", True), "entry": entry,
                                   "domain_inferred": imp.domain_inferred, "L1": imp.L1,
                                   "n_donees": imp.n_donees, "subpop": int(where.sum())}

    out = s.get("survey_release")
    if out and out["key"] != key:
        st.info("The settings changed since the last release; compute again to see a release for them.")
        out = None
    if out:
        with ui.guarded("the release result"):
            rel = out["rel"]
            dp = out["dp_method"] and not out["domain_inferred"]
            c1, c2, c3 = st.columns([1, 1, 2])
            label = {"count": f"DP count of {target} < {threshold:g}", "mean": f"DP mean of {target}",
                     "variance": f"DP variance of {target}"}[query]
            c1.metric(label if dp else label.replace("DP ", "") + " (NOT DP)", f"{rel.value:,.4g}")
            c2.metric("ε spent", f"{rel.ledger.epsilon:.4g}")
            if dp:
                c3.success("Differentially private release: publish this value with its ledger.",
                           icon=":material/lock:")
                st.caption(rel.statement)  # the notion and exactly what holds (ideal mechanism or as run)
            else:
                why = []
                if not out["dp_method"]:
                    why.append("the 'global' comparator reads its sensitivity from the data")
                if out["domain_inferred"]:
                    why.append("levels of some matching attributes were inferred from the data")
                c3.error("NOT DP — " + "; ".join(why) + ".", icon=":material/dangerous:")
            if getattr(rel, "gamma", None) is not None and not rel.finite_variance:
                st.warning(f"γ = {rel.gamma:.3g} ≤ 3: this release's noise has infinite variance.",
                           icon=":material/error:")
            led = show_ledger(rel.ledger)
            if out.get("entry") is not None:
                st.caption(f"Recorded as release {out['entry']} in the installation's budget book ({SD2011_NAME}).")
            st.caption(f"Total ε = {led['epsilon_total']:.6g}. Smooth sensitivity and noise scale depend on the "
                       "data and are not recorded in the ledger.")
            with st.expander("Curator view — NOT FOR RELEASE"):
                ui.not_dp_label("Computed from the confidential data: NOT FOR RELEASE")
                noise_sd = getattr(rel, "noise_sd", float("nan"))
                st.write(pd.DataFrame([{
                    "exact (no noise)": rel.exact, "noise scale": rel.scale,
                    "noise sd": noise_sd if math.isfinite(noise_sd) else "infinite",
                    "L_1(D)": out["L1"], "imputed rows": out["n_donees"], "subpopulation rows": out["subpop"],
                }]).astype(str))

    st.divider()
    st.subheader("DP noise in context")
    with ui.guarded("the noise-in-context controls"):
        st.caption("Treat SD2011 as the population, draw R simple random samples, and on each compare the "
                   "non-private estimate (sampling noise only) with the DP release (sampling + DP noise) over a "
                   "grid of ε (Merrill ch. 4). A simulation on data the curator holds: nothing here is published.")
        c1, c2, c3 = st.columns(3)
        reps = int(c1.number_input("Repetitions R", min_value=5, max_value=500, value=30, step=5, key="sv_reps",
                                   help="Samples drawn. More: smoother boxes, longer wait (each needs an "
                                        "imputation per ε)."))
        rate = float(c2.select_slider("Sampling rate", [0.05, 0.1, 0.2, 0.3, 0.5], value=0.2, key="sv_rate",
                                      help="Share of the population in each sample (public design). Smaller "
                                           "samples: more sampling noise and more DP noise per estimate."))
        grid = context_grid(method, parts, None if problems else float(eps))
        c3.caption("ε grid: " + ", ".join(f"{g:.3g}" for g in grid)
                   + (" (multiples of ln 2)" if method == "smooth" else ""))
        run = st.button("Run the simulation", key="sv_ctx_go", disabled=bool(problems),
                        help="Runs R × (grid size) releases on simulated samples; cached for the same inputs.")
    if run:
        with ui.guarded("the noise-in-context simulation"):
            with st.status(f"Simulating {reps} samples × {len(grid)} ε values …", expanded=True) as status:
                st.write("Drawing samples, imputing each, releasing at every ε …")
                frame = cached_context(str(SD2011), target, tuple(match), k, rule, levels_json, query, method,
                                       (float(lo), float(hi)), tuple(ages), float(threshold), bool(public_size),
                                       tuple(grid), reps, rate, 2011)
                status.update(label=f"Simulated {reps} samples × {len(grid)} ε values", state="complete",
                              expanded=False)
            s["survey_context"] = {"key": key + json.dumps([reps, rate, grid]), "frame": frame}
    ctx = s.get("survey_context")
    if ctx and ctx["key"] == key + json.dumps([reps, rate, grid]):
        with ui.guarded("the noise-in-context figure"):
            from dpcore.survey.context import context_figure, summarize

            below = f" < {threshold:g}" if query == "count" else ""
            fig = context_figure(ctx["frame"], title=f"{query} of {target}{below}, ages {ages[0]}–{ages[1]}: "
                                                     f"sampling vs sampling + DP")
            fig.update_xaxes(type="category", title="ε")
            fig.update_layout(height=460, margin=dict(l=10, r=10, t=60, b=10),
                              legend=dict(orientation="h", yanchor="top", y=-0.18, x=0, title_text=""))
            st.plotly_chart(fig, config={"displaylogo": False}, key="sv_ctx_fig")
            st.caption("Boxes: interquartile range; whiskers: 5th–95th percentile; dashed line: the value on the "
                       "whole (imputed) population. Where the red box is as narrow as the blue one, DP noise is "
                       "small next to sampling noise.")
            with st.expander("Summary table"):
                st.dataframe(summarize(ctx["frame"]), hide_index=True, width="stretch")
