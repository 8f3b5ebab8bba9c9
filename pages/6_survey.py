"""Survey estimates: DP releases from k-NN-imputed survey data, and DP noise in context.

All computation is done by ``dpcore.survey`` (Merrill 2021, ch. 4–7); this page only
collects the curator's choices, calls it, and shows the value, its ledger and the
simulation "sampling noise vs sampling + DP noise".
"""
from __future__ import annotations

import io
import json
import math
import warnings

import numpy as np
import pandas as pd
import streamlit as st

import dpcore
from dpcore.datasets import SD2011_LEVELS
from pages import _common as ui

s = st.session_state
ui.init_state()

LN2 = math.log(2.0)
SD2011 = ui.ASSETS / "sd2011.csv"
CPS_FULL = ui.ROOT.parent / "shared" / "data" / "cps_vrs_10k.csv"

#: ordinal matching attributes; their public levels (lowest first) are dpcore.datasets.SD2011_LEVELS
ORDINAL = ("agegr", "edu", "placesize")
DEFAULT_MATCH = ["sex", "agegr", "edu", "socprof", "placesize"]

METHODS = {
    "smooth": "Smooth sensitivity on the imputed data (DP)",
    "ignore": "Ignore missing records + Laplace (DP)",
    "global": ":red[**Impute + 'global' Laplace — NOT DP** (comparator)]",
}
IMPUTE_RULES = {"copy": "copy the nearest donor (k = 1)", "mean": "mean of the k donors",
                "majority": "most common value of the k donors"}


# --------------------------------------------------------------------------- cached dpcore calls


@st.cache_data(show_spinner=False, max_entries=4)
def load_sd2011(path: str) -> pd.DataFrame:
    from dpcore.io import read_table

    return read_table(path)


@st.cache_data(show_spinner=False, max_entries=16)
def cached_impute(path: str, target: str, match: tuple, k: int, rule: str, levels_json: str):
    """k-NN imputation and L_1(D) (releases nothing); keyed on every input."""
    from dpcore.survey import knn_impute

    df = load_sd2011(path)
    ordinal = [c for c in match if c in ORDINAL and c in json.loads(levels_json)]
    return knn_impute(df, target, list(match), k=k, method=rule, ordinal=ordinal, levels=json.loads(levels_json))


def parts_of(query: str, method: str, public_size: bool) -> int:
    """How many equal shares of ε the smooth release splits into (size, centre, value)."""
    if method != "smooth" or query == "count":
        return 1
    return 1 + (not public_size) + (query == "variance")


def release_once(imp, query: str, method: str, eps: float, rng, *, bounds, where, threshold, public_size: bool):
    """One dpcore.survey release (spends ε). Returns the release object."""
    from dpcore.survey import imputation as I

    target_where = None
    if query == "count":
        def target_where(values, _t=threshold):
            return (pd.to_numeric(values, errors="coerce") < _t).to_numpy()

        fn = {"smooth": I.release_count, "ignore": I.release_count_ignoring_missing,
              "global": I.release_count_global}[method]
        return fn(imp, eps, rng, where=where, target_where=target_where)
    if query == "mean":
        if method == "smooth":
            size = float(where.sum()) if public_size else None
            return I.release_mean(imp, eps, rng, bounds=bounds, where=where, size=size)
        if method == "ignore":
            size = float((where & ~imp.incomplete).sum()) if public_size else None
            return I.release_mean_ignoring_missing(imp, eps, rng, bounds=bounds, where=where, size=size)
        size = float(where.sum()) if public_size else None
        return I.release_mean_global(imp, eps, rng, bounds=bounds, where=where, size=size)
    if method != "smooth":
        raise dpcore.OptionError("a variance is only released with the smooth-sensitivity method (Cor 6.4.9); "
                                 "choose it, or ask for a count or a mean")
    size = float(where.sum()) if public_size else None
    return I.release_variance(imp, eps, rng, bounds=bounds, where=where, size=size)


def exact_on(values: pd.Series, mask: np.ndarray, query: str, bounds, threshold) -> float:
    """The non-private value of the query on imputed values (curator only)."""
    if query == "count":
        return float((mask & (pd.to_numeric(values, errors="coerce") < threshold).to_numpy()).sum())
    y = np.clip(pd.to_numeric(values, errors="coerce").to_numpy(float), *bounds)[mask]
    if query == "mean":
        return float(y.mean()) if len(y) else float("nan")
    return float(y.var(ddof=1)) if len(y) > 1 else float("nan")


@st.cache_data(show_spinner=False, max_entries=8)
def cached_context(path: str, target: str, match: tuple, k: int, rule: str, levels_json: str, query: str,
                   method: str, bounds: tuple, ages: tuple, threshold: float, public_size: bool, eps_grid: tuple,
                   reps: int, rate: float, seed: int) -> pd.DataFrame:
    """Simulation of ch. 4: SD2011 as the population, R SRS samples at ``rate``; per sample the
    non-private estimate and one DP release per ε (no ε spent on anything published)."""
    from dpcore.survey import context as C
    from dpcore.survey import knn_impute

    pop = load_sd2011(path)
    levels = json.loads(levels_json)
    ordinal = [c for c in match if c in ORDINAL and c in levels]
    scale = 1.0 / rate if query == "count" else 1.0  # a sample count → population count (design weight)

    def where(df):
        return df["age"].between(*ages).to_numpy()

    def impute(df):
        return knn_impute(df.drop(columns=[C.WEIGHT], errors="ignore"), target, list(match), k=k, method=rule,
                          ordinal=ordinal, levels=levels)

    def estimator(sample):
        imp = impute(sample)
        return scale * exact_on(imp.values, where(sample.reset_index(drop=True)), query, bounds, threshold)

    def release(sample, eps, rng):
        imp = impute(sample)
        rel = release_once(imp, query, method, eps, rng, bounds=bounds, where=where(sample.reset_index(drop=True)),
                           threshold=threshold, public_size=public_size)
        return scale * float(rel.value)

    full = cached_impute(path, target, match, k, rule, levels_json)
    truth = exact_on(full.values, where(pop), query, bounds, threshold)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # infinite variance: the page warns about it
        return C.noise_in_context(pop, C.Design(rate), None, list(eps_grid), reps, np.random.default_rng(seed),
                                  release=release, estimator=estimator, truth=truth)


# --------------------------------------------------------------------------- post-stratification

PS_TOTALS = ui.ASSETS / "cps_poststrat_totals.csv"
#: Fixed public age edges of the CPS demo (base levels; candidate sets of bins merge them).
PS_AGE_EDGES = [18, 25, 30, 35, 45, 55, 65, 75, 200]
PS_AGE_LEVELS = ["18-24", "25-29", "30-34", "35-44", "45-54", "55-64", "65-74", "75+"]
PS_RACE = {"WHITE": "WHITE", "BLACK": "BLACK"}  # every other CPS race code → OTHER
#: Candidate sets of bins per column (public definitions, Merrill Example 7.5.5). A column not
#: listed keeps every base level as its own bin.
PS_CANDIDATES = {
    "agegr": {
        "8 groups (base levels)": {x: x for x in PS_AGE_LEVELS},
        "10-year groups": dict(zip(PS_AGE_LEVELS, ["18-24", "25-34", "25-34", "35-44", "45-54", "55-64", "65+",
                                                   "65+"])),
        "4 life stages": dict(zip(PS_AGE_LEVELS, ["18-29", "18-29", "30-44", "30-44", "45-64", "45-64", "65+",
                                                  "65+"])),
        "2 halves": dict(zip(PS_AGE_LEVELS, ["18-44"] * 4 + ["45+"] * 4)),
    },
    "race": {
        "3 groups (base levels)": {"WHITE": "WHITE", "BLACK": "BLACK", "OTHER": "OTHER"},
        "white / not white": {"WHITE": "WHITE", "BLACK": "NOT WHITE", "OTHER": "NOT WHITE"},
    },
}
PS_COLUMNS = {"agegr": "age group", "sex": "sex", "race": "race", "hispanic": "Hispanic origin",
              "year": "election year"}
PS_OUTCOMES = {"YES": "voted (turnout = YES)", "NO": "did not vote (turnout = NO)",
               "ALL": "everyone (estimated population)"}


@st.cache_data(show_spinner=False, max_entries=2)
def load_cps_poststrat(path: str) -> tuple[pd.DataFrame, dict]:
    """The CPS demo sample for post-stratification: rows with a positive WEIGHT in the voting-supplement
    universe (age ≥ 18, asked the voting questions), with the binning columns derived by fixed public
    definitions (the same lines as in assets/README.md). Returns (data, row counts)."""
    from dpcore.io import read_table

    raw = read_table(path)
    w = pd.to_numeric(raw["WEIGHT"], errors="coerce")
    n_missing, n_nonpos = int(w.isna().sum()), int((w <= 0).sum())
    d = raw[w > 0]
    n_pos = len(d)
    d = d[(pd.to_numeric(d["AGE"], errors="coerce") >= 18) & d["cps_turnout"].notna()]
    out = pd.DataFrame({
        "agegr": pd.cut(d["AGE"], PS_AGE_EDGES, right=False, labels=PS_AGE_LEVELS).astype(str),
        "sex": d["SEX"].astype(str),
        "race": d["RACE"].map(PS_RACE).fillna("OTHER"),
        "hispanic": d["HISPANIC"].astype(str),
        "year": d["YEAR"].astype(int).astype(str),
        "age": d["AGE"].astype(int),
        "turnout": d["cps_turnout"].astype(str),
        "WEIGHT": d["WEIGHT"].astype(float),
    }).reset_index(drop=True)
    return out, {"raw": len(raw), "missing_weight": n_missing, "nonpositive_weight": n_nonpos,
                 "outside_universe": n_pos - len(out), "kept": len(out)}


def parse_totals(t: pd.DataFrame) -> dict:
    """{column: {level: total}} from a column,level,total table (as ``poststrat-release --totals``)."""
    from dpcore.errors import InputError

    if not {"column", "level", "total"} <= set(t.columns):
        raise InputError(f"the totals file must have the columns column,level,total; it has {list(t.columns)}")
    tot = pd.to_numeric(t["total"], errors="coerce")
    if tot.isna().any():
        bad = t.loc[tot.isna(), "column"].astype(str).unique().tolist()
        raise InputError(f"the totals for column(s) {bad} must be numbers")
    out: dict = {}
    for c, lv, v in zip(t["column"].astype(str), t["level"].astype(str), tot.astype(float)):
        out.setdefault(c, {})[lv] = v
    return out


@st.cache_data(show_spinner=False, max_entries=4)
def read_totals_file(path: str) -> pd.DataFrame:
    return pd.read_csv(path, dtype={"column": str, "level": str})


@st.cache_data(show_spinner=False, max_entries=4)
def read_upload_cached(data: bytes, name: str) -> pd.DataFrame:
    return ui.read_upload(data, name)


def show_ledger(ledger, key: str | None = None) -> dict:
    """The ledger's charges as a table, with each charge's note; returns the ledger dict."""
    st.subheader("Ledger")
    led = ledger.to_dict()
    rows = ui.ledger_rows(led)
    show = [c for c in ("component", "epsilon", "mechanism", "subset") if c in rows.columns]
    notes = [ch.get("note", "") for ch in led.get("charges", [])]
    st.dataframe(rows[show].assign(note=notes[: len(rows)]), hide_index=True, width="stretch",
                 column_config={"epsilon": st.column_config.NumberColumn("ε", format="%.4g")}, key=key)
    return led


def poststrat_release(data: pd.DataFrame, cols: list, totals: dict, cands: dict, mask: np.ndarray, *,
                      eps_select, eps_table, eps_count: float, gamma: float, weights: str, weight_range):
    """One dpcore.survey.poststrat release (spends ε), set up as ``poststrat-release`` does."""
    from dpcore.survey import poststrat as P

    data, binnings = P.binnings_for(data, cols, totals, cands)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # infinite variance: warned on the page
        return P.poststratify_release(data, binnings, totals, mask, epsilon_select=eps_select,
                                      epsilon_table=eps_table, epsilon_count=eps_count, gamma=gamma,
                                      weights=weights, weight_range=weight_range, rng=np.random.default_rng())


# --------------------------------------------------------------------------- page

st.title("6 · Survey estimates")
st.caption("DP estimates from a survey sample with missing values (Merrill 2021, *Privacy in complex sample based "
           "surveys*). The demo is Social Diagnosis 2011 (SD2011, 5,000 respondents; income missing for 683 of "
           "them). Each **Compute release** click spends ε again: publish one release only.")

tab_imp, tab_ps = st.tabs(["Imputed estimate (k-NN)", "Post-stratification (weights)"])

with tab_imp:
    with ui.guarded("the imputation controls"):
        if not SD2011.exists():
            st.error(f"The SD2011 demo file is missing ({SD2011.name} in assets/); nothing to show.")
            st.stop()
        df = load_sd2011(str(SD2011))
        numeric_missing = [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c]) and df[c].isna().any()]
        candidates = [c for c in df.columns if not pd.api.types.is_numeric_dtype(df[c])]
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
        c1, c2, c3 = st.columns([1, 1, 2])
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
        c1, c2, c3, c4 = st.columns(4)
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
        problems = []
        if not (isinstance(eps, (int, float)) and math.isfinite(eps) and eps > 0):
            problems.append(f"ε must be a finite number greater than 0; got {eps!r}.")
        elif method == "smooth" and eps / parts < 2 * LN2 * (1 - 1e-12):
            split = f" (split into {parts} equal parts, ε/{parts} = {eps / parts:.4g} each)" if parts > 1 else ""
            problems.append(
                f"ε = {eps:g}{split} is too small for the smooth-sensitivity release: it is only proven DP for "
                f"ε ≥ 2 ln 2 ≈ {2 * LN2:.4f} per part, so this needs ε ≥ {parts * 2 * LN2:.4f}. Raise ε, "
                "or use the 'ignore missing' Laplace baseline. Nothing was released.")
        if query != "count" and not hi > lo:
            problems.append(f"The upper bound ({hi:g}) must be above the lower bound ({lo:g}).")
        if query == "variance" and method != "smooth":
            problems.append("A variance is only released with the smooth-sensitivity method (Cor 6.4.9).")
        if not match:
            problems.append("Choose at least one matching attribute.")
        for p in problems:
            st.error(p, icon=":material/warning:")
        if not problems and method == "smooth" and eps / parts <= 4 * LN2:
            st.warning(f"ε per part = {eps / parts:.4g} ≤ 4 ln 2 ≈ {4 * LN2:.4f}: the generalized Cauchy noise "
                       f"(γ = {1 + eps / parts / (2 * LN2):.3g} ≤ 3) has **infinite variance** — single releases "
                       "can be far off. Use ε > " + f"{parts * 4 * LN2:.4f} for finite variance.",
                       icon=":material/error:")

        levels = {c: SD2011_LEVELS[c] for c in match if c in SD2011_LEVELS}
        levels_json = json.dumps(levels, sort_keys=True)
        key = json.dumps([target, match, k, rule, query, list(ages), lo, hi, threshold, public_size, eps, method],
                         default=str)
        clicked = st.button(f"Compute release (spends ε = {eps:g})", type="primary", disabled=bool(problems),
                            key="sv_go", help="Imputes (cached, spends nothing) and releases the estimate with "
                                              "fresh noise. Every click spends ε again.")

    if clicked:
        with ui.guarded("the imputation release"):
            with st.spinner("Imputing and releasing …"):
                imp = cached_impute(str(SD2011), target, tuple(match), k, rule, levels_json)
                where = df["age"].between(*ages).to_numpy()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # infinite variance: warned on the page
                    rel = release_once(imp, query, method, float(eps), np.random.default_rng(), bounds=(lo, hi),
                                       where=where, threshold=threshold, public_size=public_size)
            s["survey_release"] = {"key": key, "rel": rel, "dp_method": getattr(rel, "dp", True),
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
        if method == "smooth":
            base = [2, 3, 4.5, 6, 10, 16]
            grid = [parts * g * LN2 for g in base]
        else:
            grid = [0.5, 1.0, 2.0, 4.0, 8.0]
        if not problems and all(abs(g - eps) > 1e-3 * eps for g in grid):
            grid = sorted(grid + [float(eps)])
        c3.caption("ε grid: " + ", ".join(f"{g:.3g}" for g in grid) + (" (multiples of ln 2)" if method == "smooth" else ""))
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

            fig = context_figure(ctx["frame"], title=f"{query} of {target}{f' < {threshold:g}' if query == 'count' else ''}, ages {ages[0]}–{ages[1]}: "
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

with tab_ps:
    st.subheader("DP post-stratification")
    st.caption("A post-stratified weighted count (Merrill 2021, ch. 7): the curator's base weights are scaled so "
               "that the weighted sample reproduces **known population totals** per bin. Three parts spend ε: "
               "ε₁ chooses the bins (exponential mechanism), ε₂ buys a noisy join table that IPF rakes to the "
               "known totals (two or more columns), ε₃ the weighted count itself (smooth sensitivity, "
               "generalized Cauchy noise). The release is (ε₁ + ε₂ + ε₃)-DP. Each **Compute release** click spends ε again.")
    ps_ready = False
    with ui.guarded("the post-stratification controls"):
        sources = (["CPS demo (November voting supplement)"] if CPS_FULL.exists() else []) + [
            "Upload a weighted survey file"]
        source = st.radio("Data", sources, key="ps_source", horizontal=True,
                          help="The confidential weighted sample. The demo uses the CPS voting-supplement "
                               "file with its survey weights; or upload a CSV/Parquet with a weights column.")
        demo = source.startswith("CPS")
        if not CPS_FULL.exists():
            st.info("The CPS demo needs the weighted survey file `cps_vrs_10k.csv` (with its WEIGHT column) in "
                    f"`{CPS_FULL.parent}`, which is not on this server. The shipped `assets/cps_voters.csv` has no "
                    "weights, so post-stratification cannot be shown on it: upload a weighted survey file and a "
                    "table of known population totals instead.", icon=":material/info:")
        if demo:
            data, counts = load_cps_poststrat(str(CPS_FULL))
            st.caption(
                f"Sample: `{CPS_FULL.name}`, {counts['raw']:,} records. Dropped **{counts['nonpositive_weight']:,}** "
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
            totals_df = pd.read_csv(io.BytesIO(tot_up.getvalue()), dtype={"column": str, "level": str})
            totals = parse_totals(totals_df)
            num = [c for c in data.columns if pd.api.types.is_numeric_dtype(data[c])]
            if not num:
                st.error("The survey file has no numeric column to use as base weights.")
                st.stop()
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

        multi = any(len(v) > 1 for v in cands.values())
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

        eps_select = float(e1) if multi else None
        eps_table = float(e2) if len(cols) >= 2 else None
        ps_problems = []
        from dpcore.budget import check_epsilon
        from dpcore.errors import DPCoreError
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
        total_eps = (eps_select or 0.0) + (eps_table or 0.0) + float(e3)
        ps_key = json.dumps([source, cols, {c: list(v) for c, v in cands.items()}, query_label, eps_select,
                             eps_table, e3, gamma, g_lo, g_hi, weights, int(mask.sum()),
                             totals_df.to_csv(index=False)], default=str)
        ps_clicked = st.button(f"Compute release (spends ε = {total_eps:g})", type="primary",
                               disabled=bool(ps_problems), key="ps_go",
                               help="Chooses bins, rakes, and releases the weighted count with fresh noise. Every "
                                    "click spends ε₁ + ε₂ + ε₃ again.")
        ps_ready = True

    if ps_ready and ps_clicked:
        with ui.guarded("the post-stratification release"):
            with st.spinner("Selecting bins, raking and releasing …"):
                rel = poststrat_release(data, cols, totals, cands, mask, eps_select=eps_select, eps_table=eps_table,
                                        eps_count=float(e3), gamma=float(gamma), weights=weights,
                                        weight_range=(float(g_lo), float(g_hi)))
            s["poststrat_release"] = {"key": ps_key, "rel": rel, "label": query_label,
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
