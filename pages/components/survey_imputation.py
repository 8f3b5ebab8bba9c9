"""Survey page, first tab: DP estimates from k-NN-imputed data, with the noise in context (widgets only).

The tab reads the table on the Data page or the bundled SD2011 demo (pages/components/survey_source.py);
what can be released on it is checked by dpcore.studio.survey, which names the column and the fix.
"""
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
    matching_problems,
    parts_of,
    public_levels,
    release_imputed,
    subpopulation_mask,
    subpopulation_problems,
    target_problems,
)
from dpcore.studio.survey_book import IMPUTATION
from pages.components import guard, state
from pages.components import survey_book as book
from pages.components import survey_session as session
from pages.components import survey_source as source
from pages.components.survey_state import (
    DEFAULT_MATCH,
    IMPUTE_RULES,
    METHODS,
    ORDINAL,
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
    inp: dict = {}
    with guard.guarded("the imputation controls"):
        table = _table()
        if table is None:
            return
        inp.update(_columns(table))
        inp.update(_query(table, inp))
        inp.update(_budget(table, inp))
        clicked = _button(table, inp)
    if not inp.get("key"):
        return
    if clicked:
        with guard.guarded("the imputation release"):
            _release(table, inp)
    _result(table, inp)
    st.divider()
    st.subheader("DP noise in context")
    _context(table, inp)


# --------------------------------------------------------------------------- the table


def _table() -> book.ReadTable | None:
    """The table chosen in the tab's "Table" radio, with a line saying what it is."""
    demo_ok = SD2011.exists()
    choice = source.choose("sv_source", f"Bundled demo: SD2011 survey ({SD2011.name})", demo_ok,
                           resets=("sv_target", "sv_match", "sv_ordinal"))
    if choice is None:
        st.error(f"No table is loaded and the SD2011 demo file is missing ({SD2011.name} in assets/): load a table "
                 "on the Data page.", icon=":material/warning:")
        return None
    if not demo_ok:
        st.caption(f"The SD2011 demo file ({SD2011.name} in assets/) is missing from this installation.")
    if choice == source.DEMO:
        df = load_sd2011(str(SD2011))
        st.caption(f"The **SD2011 survey demo** ({len(df):,} respondents): its subpopulation filter (age) and public "
                   f"matching levels are SD2011's codebook. Releases are charged to the budget book of {SD2011_NAME}.")
        return book.ReadTable(df, f"demo:{SD2011}", book.demo_table(SD2011, SD2011_NAME), True)
    df = state.work_df()
    t = book.loaded_table(df)
    st.caption(f"**{t.name}** ({len(df):,} rows × {df.shape[1]} columns, as on the Data page). Releases are charged "
               "to this table's budget book, with its synthetic-data releases.")
    return book.ReadTable(df, state.work_key(), t, False)


# --------------------------------------------------------------------------- the variables


def _columns(t: book.ReadTable) -> dict:
    """Target, matching attributes (and their public levels), k and the imputation rule."""
    df = t.df
    if t.demo:
        targets = [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c]) and df[c].isna().any()]
        candidates = [c for c in df.columns if not pd.api.types.is_numeric_dtype(df[c])]
    else:
        targets = candidates = list(map(str, df.columns))
    session.keep_if_valid("sv_target", targets)  # a saved choice comes back only if still offered
    c1, c2, c3 = st.columns([1, 3, 1])
    target = c1.selectbox(
        "Target (to impute)", targets, index=(targets.index("income") if "income" in targets else 0) if t.demo
        else None, placeholder="choose a column", key="sv_target",
        help="The survey variable with missing answers (numeric). Each missing value is filled from the k most "
             "similar complete records (donors). One person's record can be the donor of many others, which is why "
             "imputation needs its own sensitivity analysis (L_1(D), Merrill ch. 6).")
    options = [c for c in candidates if c != target]
    session.keep_if_valid("sv_match", options)
    match = c2.multiselect(
        "Matching attributes", options, default=[c for c in DEFAULT_MATCH if c in options] if t.demo else [],
        key="sv_match",
        help="Categorical attributes used to find similar donors. Their levels must be public: the demo's come from "
             "the SD2011 codebook, your table's from its domain once confirmed on the Data page; levels inferred "
             "from the data make the release NOT DP.")
    k = int(c3.number_input(
        "k (donors)", min_value=1, max_value=20, value=1, step=1, key="sv_k",
        help="Number of donors per missing value. A larger k spreads each donor's influence but a donor can serve "
             "more donees; the smooth sensitivity reflects the actual worst case."))
    c1, c2 = st.columns([1.5, 2.8])  # the rule names need ~210 px at 1280
    rule_opts = ["copy"] if k == 1 else ["mean", "majority"]
    if s.get("sv_rule") not in rule_opts:
        s["sv_rule"] = rule_opts[0]
    rule = c1.selectbox("Imputation rule", rule_opts, format_func=IMPUTE_RULES.get, key="sv_rule",
                        help="How the k donors' values become the imputed value. Imputation itself spends no ε; its "
                             "effect on every release is counted in the sensitivity.")
    if t.demo:
        levels = {c: SD2011_LEVELS[c] for c in match if c in SD2011_LEVELS}
        ordinal = [c for c in match if c in ORDINAL and c in levels]
    else:
        dom, _ = state.domain_status()
        levels = public_levels(dom, match)
        session.keep_if_valid("sv_ordinal", match)
        ordinal = c2.multiselect(
            "Ordered attributes (matched by distance)", match, default=[], key="sv_ordinal",
            help="Matching attributes whose levels have an order (age group, education): donors one level away are "
                 "nearer than two levels away. The order is the confirmed domain's level order.")
    problems = target_problems(df, target, k) + matching_problems(df, target, match, levels, ordinal)
    return {"target": target, "match": list(match), "k": k, "rule": rule, "levels": levels, "ordinal": list(ordinal),
            "problems": problems}


# --------------------------------------------------------------------------- the query


def _query(t: book.ReadTable, inp: dict) -> dict:
    """The query (count, mean, variance), the subpopulation and the public bounds and threshold."""
    c1, c2 = st.columns([0.8, 3.5])
    query = c1.radio("Query", ["count", "mean", "variance"], key="sv_query", horizontal=False,
                     help="count: respondents in the subpopulation whose (imputed) target is below a threshold. "
                          "mean / variance: of the target, clipped to the public bounds.")
    if t.demo:
        ages = c2.slider("Subpopulation: age", int(t.df["age"].min()), int(t.df["age"].max()), (20, 59),
                         key="sv_ages", help="Which respondents the estimate is about. The filter uses age only "
                                             "(never the imputed target), so whether someone is in it does not "
                                             "depend on another person's record.")
        subpop = {"ages": list(ages)}
        where_label, sub_problems = f"ages {ages[0]}–{ages[1]}", []
    else:
        expr = c2.text_input(
            "Subpopulation (rows where …; empty: every row)", key="sv_where", placeholder="e.g. sex == 'F'",
            help="A pandas expression on the table's columns. It may not use the imputed target, so whether "
                 "someone is in it does not depend on another person's record.")
        subpop = {"expr": expr, "target": inp["target"]}
        where_label = expr.strip() or "every row"
        sub_problems = subpopulation_problems(t.df, expr, inp["target"]) if inp["target"] in t.df.columns else []
    sfx = "" if t.demo else "_own"  # the demo's bounds are its codebook's; your table's start empty
    d_lo, d_hi, d_thr = (0.0, 20000.0, 658.0) if t.demo else (None, None, None)
    c1, c2, c3, c4 = st.columns([1, 1, 1, 1.4])  # room for "Subpopulation size is public"
    lo = c1.number_input("Lower bound", value=d_lo, step=100.0, key="sv_lo" + sfx,
                         help="Public lower bound of the target. Values are clipped into [lower, upper] before the "
                              "release; choose the bounds without looking at the data — they set how much one person "
                              "can move the answer.")
    hi = c2.number_input("Upper bound", value=d_hi, step=100.0, key="sv_hi" + sfx,
                         help="Public upper bound of the target (clipping). Wider bounds: less bias, more noise.")
    threshold = c3.number_input("Count: target below", value=d_thr, step=50.0, key="sv_thr" + sfx,
                                disabled=query != "count",
                                help="For a count: respondents whose (imputed) target is below this value. The "
                                     "threshold is public; inclusion depends on imputed values, which the "
                                     "sensitivity accounts for (Cor 6.4.3).")
    public_size = c4.checkbox("Subpopulation size is public", value=True, key="sv_pubsize", disabled=query == "count",
                              help="Treat the number of respondents in the subpopulation as known (e.g. from the "
                                   "design), as Merrill §6.5.3 does. Untick: a share of ε buys a noisy size first "
                                   "(Remark 6.4.7).")
    return {"query": query, "subpop": subpop, "where_label": where_label, "lo": lo, "hi": hi, "threshold": threshold,
            "public_size": public_size, "problems": inp["problems"] + sub_problems}


# --------------------------------------------------------------------------- ε, method and the button


def _budget(t: book.ReadTable, inp: dict) -> dict:
    c1, c2 = st.columns([1, 2])
    eps = c1.number_input("ε", value=6 * LN2, step=0.1, format="%.4f", key="sv_eps",
                          help="Privacy budget of this one release: smaller means stronger privacy and more noise. "
                               "Default 6 ln 2 ≈ 4.16. The smooth release needs ε ≥ 2 ln 2 ≈ 1.39 per part and gives "
                               "finite-variance noise only for ε > 4 ln 2 ≈ 2.77 per part.")
    method = c2.radio("Method", list(METHODS), format_func=METHODS.get, key="sv_method",
                      help="Smooth: noise scaled to a smooth upper bound of the imputed query's sensitivity "
                           "(generalized Cauchy; Merrill Cor 6.4.3/6.4.6/6.4.9) — DP. Ignore missing: drop the "
                           "records with a missing target and add Laplace noise — DP but biased if missingness is "
                           "informative. Global: the thesis's optimistic 'global' sensitivity read from the data — "
                           "NOT DP, shown only as a comparator.")
    if method == "global":
        guard.not_dp_label("NOT DP: the 'global' baseline reads its sensitivity from the data (the true global "
                        "sensitivity of imputation is unbounded). Comparator only — never publish it.")
    parts = parts_of(inp["query"], method, inp["public_size"])
    problems = inp["problems"] + imputation_problems(
        eps, parts, method=method, query=inp["query"], lo=inp["lo"], hi=inp["hi"], match=inp["match"],
        threshold=inp["threshold"], target=inp["target"] or "the target")
    for p in dict.fromkeys(problems):
        st.error(p, icon=":material/warning:")
    warning = None if problems else infinite_variance_warning(eps, parts, method)
    if warning:
        st.warning(warning, icon=":material/error:")
    if not t.demo and not problems and inp["levels"] is None:
        st.caption(":red[The table's domain is not confirmed on the Data page: the matching levels are read from the "
                   "data, so this release is NOT DP.]")
    key = json.dumps([t.key, inp["target"], inp["match"], inp["ordinal"], inp["k"], inp["rule"], inp["query"],
                      inp["subpop"], inp["lo"], inp["hi"], inp["threshold"], inp["public_size"], eps, method],
                     default=str)
    return {"eps": eps, "method": method, "parts": parts, "problems": problems, "key": key,
            "levels_json": json.dumps(inp["levels"], sort_keys=True)}


def _button(t: book.ReadTable, inp: dict) -> bool:
    clicked = st.button(f"Compute release (spends ε {epsilon_phrase(inp['eps'])})", type="primary",
                        disabled=bool(inp["problems"]), key="sv_go",
                        help="Imputes (cached, spends nothing) and releases the estimate with fresh noise. Every "
                             "click spends ε again.")
    book.book_panel(t.charged, "sv_book")
    return clicked and not inp["problems"]


def _impute(t: book.ReadTable, inp: dict):
    return cached_impute(t.df, t.key, inp["target"], tuple(inp["match"]), inp["k"], inp["rule"], inp["levels_json"],
                         tuple(inp["ordinal"]))


def _where(t: book.ReadTable, inp: dict) -> np.ndarray:
    if "ages" in inp["subpop"]:
        return t.df["age"].between(*inp["subpop"]["ages"]).to_numpy()
    return subpopulation_mask(t.df, inp["subpop"]["expr"], inp["target"])


# --------------------------------------------------------------------------- the release and its result


def _release(t: book.ReadTable, inp: dict) -> None:
    with st.spinner("Imputing and releasing …"):
        imp = _impute(t, inp)
        where = _where(t, inp)

        def run():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # infinite variance: warned on the page
                return release_imputed(imp, inp["query"], inp["method"], float(inp["eps"]), np.random.default_rng(),
                                       bounds=(inp["lo"], inp["hi"]), where=where, threshold=inp["threshold"],
                                       public_size=inp["public_size"])

        # charged to the read table's budget book: refused over its cap before any randomness
        rel, entry = book.recorded(run, t.charged, epsilon=float(inp["eps"]), method=IMPUTATION,
                                   dp=False if imp.domain_inferred else None,
                                   not_dp_reason="levels of some matching attributes were inferred from the data")
    s["survey_release"] = {"key": inp["key"], "rel": rel, "dp_method": getattr(rel, "dp", True), "entry": entry,
                           "domain_inferred": imp.domain_inferred, "L1": imp.L1, "n_donees": imp.n_donees,
                           "subpop": int(where.sum()), "table": t.charged.name}


def _result(t: book.ReadTable, inp: dict) -> None:
    out = s.get("survey_release")
    if out and out["key"] != inp["key"]:
        st.info("The settings changed since the last release; compute again to see a release for them.")
        return
    if not out:
        return
    with guard.guarded("the release result"):
        rel = out["rel"]
        dp = out["dp_method"] and not out["domain_inferred"]
        target, threshold = inp["target"], inp["threshold"]
        c1, c2, c3 = st.columns([1, 1, 2])
        label = {"count": f"DP count of {target} < {threshold or 0:g}", "mean": f"DP mean of {target}",
                 "variance": f"DP variance of {target}"}[inp["query"]]
        c1.metric(label if dp else label.replace("DP ", "") + " (NOT DP)", f"{rel.value:,.4g}")
        c2.metric("ε spent", f"{rel.ledger.epsilon:.4g}")
        if dp:
            c3.success("Differentially private release: publish this value with its ledger.", icon=":material/lock:")
            st.caption(rel.statement)  # the notion and exactly what holds (ideal mechanism or as run)
        else:
            why = (["the 'global' comparator reads its sensitivity from the data"] if not out["dp_method"] else []) + (
                ["levels of some matching attributes were inferred from the data"] if out["domain_inferred"] else [])
            c3.error("NOT DP — " + "; ".join(why) + ".", icon=":material/dangerous:")
        if getattr(rel, "gamma", None) is not None and not rel.finite_variance:
            st.warning(f"γ = {rel.gamma:.3g} ≤ 3: this release's noise has infinite variance.", icon=":material/error:")
        led = show_ledger(rel.ledger)
        if out.get("entry") is not None:
            st.caption(f"Recorded as release {out['entry']} in the installation's budget book ({out['table']}).")
        st.caption(f"Total ε = {led['epsilon_total']:.6g}. Smooth sensitivity and noise scale depend on the data and "
                   "are not recorded in the ledger.")
        with st.expander("Curator view — NOT FOR RELEASE"):
            guard.not_dp_label("Computed from the confidential data: NOT FOR RELEASE")
            noise_sd = getattr(rel, "noise_sd", float("nan"))
            st.write(pd.DataFrame([{
                "exact (no noise)": rel.exact, "noise scale": rel.scale,
                "noise sd": noise_sd if math.isfinite(noise_sd) else "infinite",
                "L_1(D)": out["L1"], "imputed rows": out["n_donees"], "subpopulation rows": out["subpop"],
            }]).astype(str))


# --------------------------------------------------------------------------- noise in context


def _context(t: book.ReadTable, inp: dict) -> None:
    with guard.guarded("the noise-in-context controls"):
        st.caption("Treat the table as the population, draw R simple random samples, and on each compare the "
                   "non-private estimate (sampling noise only) with the DP release (sampling + DP noise) over a grid "
                   "of ε (Merrill ch. 4). A simulation on data the curator holds: nothing here is published.")
        c1, c2, c3 = st.columns(3)
        reps = int(c1.number_input("Repetitions R", min_value=5, max_value=500, value=30, step=5, key="sv_reps",
                                   help="Samples drawn. More: smoother boxes, longer wait (each needs an imputation "
                                        "per ε)."))
        rate = float(c2.select_slider("Sampling rate", [0.05, 0.1, 0.2, 0.3, 0.5], value=0.2, key="sv_rate",
                                      help="Share of the population in each sample (public design). Smaller samples: "
                                           "more sampling noise and more DP noise per estimate."))
        grid = context_grid(inp["method"], inp["parts"], None if inp["problems"] else float(inp["eps"]))
        c3.caption("ε grid: " + ", ".join(f"{g:.3g}" for g in grid)
                   + (" (multiples of ln 2)" if inp["method"] == "smooth" else ""))
        run = st.button("Run the simulation", key="sv_ctx_go", disabled=bool(inp["problems"]),
                        help="Runs R × (grid size) releases on simulated samples; cached for the same inputs.")
    ctx_key = inp["key"] + json.dumps([reps, rate, grid])
    if run and not inp["problems"]:
        with guard.guarded("the noise-in-context simulation"):
            with st.status(f"Simulating {reps} samples × {len(grid)} ε values …", expanded=True) as status:
                st.write("Drawing samples, imputing each, releasing at every ε …")
                frame = cached_context(
                    t.df, t.key, inp["target"], tuple(inp["match"]), inp["k"], inp["rule"], inp["levels_json"],
                    tuple(inp["ordinal"]), inp["query"], inp["method"], (float(inp["lo"] or 0), float(inp["hi"] or 0)),
                    json.dumps(inp["subpop"]), float(inp["threshold"] or 0), bool(inp["public_size"]), tuple(grid),
                    reps, rate, 2011)
                status.update(label=f"Simulated {reps} samples × {len(grid)} ε values", state="complete",
                              expanded=False)
            s["survey_context"] = {"key": ctx_key, "frame": frame}
    ctx = s.get("survey_context")
    if ctx and ctx["key"] == ctx_key:
        with guard.guarded("the noise-in-context figure"):
            _context_figure(ctx["frame"], inp)


def _context_figure(frame: pd.DataFrame, inp: dict) -> None:
    from dpcore.survey.context import context_figure, summarize

    below = f" < {inp['threshold']:g}" if inp["query"] == "count" else ""
    fig = context_figure(frame, title=f"{inp['query']} of {inp['target']}{below}, {inp['where_label']}: "
                                      "sampling vs sampling + DP")
    fig.update_xaxes(type="category", title="ε")
    fig.update_layout(height=460, margin=dict(l=10, r=10, t=60, b=10),
                      legend=dict(orientation="h", yanchor="top", y=-0.18, x=0, title_text=""))
    st.plotly_chart(fig, config={"displaylogo": False}, key="sv_ctx_fig")
    st.caption("Boxes: interquartile range; whiskers: 5th–95th percentile; dashed line: the value on the whole "
               "(imputed) population. Where the red box is as narrow as the blue one, DP noise is small next to "
               "sampling noise.")
    with st.expander("Summary table"):
        st.dataframe(summarize(frame), hide_index=True, width="stretch")
