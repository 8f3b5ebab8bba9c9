"""Trade-offs: utility and disclosure risk against ε, per method, over repeated releases.

All numbers come from dpcore.metrics (sweep, utility_tables, chisq_consistency,
regression_overlap), measured on the public domain's cells. They read the raw data:
curator-only, NOT covered by ε, and the evaluation releases are discarded (never downloadable,
never in the budget book). The sweep runs as a background job (dpcore.studio.jobs) with
progress, the time left and a Cancel button.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import dpcore
import dpcore.metrics as metrics
from dpcore.data.domain import DP_FOUND, FOUND_IN_RELEASE
from dpcore.metrics.evaluate import release_two_way
from dpcore.metrics.registry import RISK_UTILITY, headline
from dpcore.studio import adviser, design, jobs
from dpcore.studio.report import RAW_BANNER, figures_html
from pages.components import charts, guard, session, state
from pages.components import glossary as gl
from pages.components.charts import band_figure, ci_figure, risk_utility_figure, specks_saturated
from pages.components.jobs import job_panel

s = st.session_state
session.init_state()
cfg = state.cfg()

st.title("5 · Trade-offs", anchor=False)
guard.not_dp_label("Curator evaluation — every measure here reads the raw data: NOT covered by ε, not for publication "
                "as part of the release. The sweep's releases are for this comparison only: they are discarded, "
                "never downloadable and not in the budget book.")

dom = state.need_domain()
if dom is None:
    st.stop()

sweep_fn = getattr(metrics, "sweep", None)
#: The default sweep: short on the demo (about 12 releases); the full grid is one click away.
DEFAULT_EPS, DEFAULT_REPS = [0.1, 1.0, 10.0], 2
FULL_EPS, FULL_REPS = [0.1, 0.5, 1.0, 2.0, 5.0], 3
#: The measures swept and plotted against ε, in the charts' order (dpcore.metrics.registry).
HEADLINE = headline()

# --------------------------------------------------------------------------- controls

method, main_opts, problems = state.design_call(dom)
choices = design.comparison_choices(cfg, method, main_opts, problems)


def _default_methods(labels: list[str]) -> list[str]:
    """The design's method and the adviser's best-ranked other method for this table (predicted from
    public facts, among the methods that can run the design)."""
    out = labels[:1]
    ranked = [a.method for a in state.design_advice(dom).methods if a.verdict != "cannot run"]
    for name in ranked:
        lab = next((lab for lab in labels if choices[lab][0] == name and lab not in out), None)
        if lab is not None:
            out.append(lab)
            break
    return out


with guard.guarded("the sweep controls"):
    # under an (ε, δ) design every release of the sweep is (ε, δ)-DP at the design's δ (design._privacy_options)
    at_delta = f", δ = {cfg['delta']:g}" if cfg.get("definition") == "zcdp" and cfg.get("delta") else ""
    design_m = max(1, int(cfg.get("m") or 1))
    st.subheader(f"Sweep over ε at the design's m = {design_m}{at_delta}", anchor=False)
    c1, c2, c3, c4, c5 = st.columns([3, 3, 1, 1, 2])
    labels = list(choices)
    if "w_sw_methods" not in s:
        s["w_sw_methods"] = s.get("sw_methods", _default_methods(labels))
    s["w_sw_methods"] = [x for x in s["w_sw_methods"] if x in labels]
    picked = c1.multiselect("Methods", labels, key="w_sw_methods",
                            help="Your design (first) and other methods, each with the design's shared options. "
                                 "By default the adviser's best-measured alternative for this table.")
    s["sw_methods"] = picked
    if "w_sw_eps" not in s:
        s["w_sw_eps"] = s.get("sw_eps", DEFAULT_EPS)
    eps_grid = c2.multiselect("ε grid", state.EPS_GRID, key="w_sw_eps", format_func=lambda v: f"{v:g}",
                              help="Each method is released at every ε of the grid, reps times.")
    s["sw_eps"] = eps_grid
    if "w_sw_reps" not in s:
        s["w_sw_reps"] = s.get("sw_reps", DEFAULT_REPS)
    reps = c3.number_input("reps", 1, 50, step=1, key="w_sw_reps",
                           help="Independent releases per (method, ε); the bands show their range.")
    s["sw_reps"] = int(reps)
    if s.get("sw_sets_for") != design_m:  # the design's m changed (or first visit): the sweep follows it
        s["w_sw_sets"], s["sw_sets_for"] = design_m, design_m
    elif "w_sw_sets" not in s:
        s["w_sw_sets"] = s.get("sw_sets", design_m)
    sets = c4.number_input("sets m", 1, max(20, design_m), step=1, key="w_sw_sets",
                           help="Synthetic sets per release (each gets ε/m); measures are averaged over the sets. "
                                "By default the design's m, so the errors are the ones your release would have; "
                                "1 is faster but spends all of ε on one set.")
    s["sw_sets"] = int(sets)
    if "w_sw_model" not in s:
        s["w_sw_model"] = s.get("sw_model", "main")
    model = c5.selectbox("SPECKS model", ["main", "interactions"], key="w_sw_model",
                         format_func={"main": "main effects (fast)",
                                      "interactions": "pairwise interactions (slow)"}.get,
                         help=gl.help_text("specks", lead="The propensity model: main effects (fast), or with all "
                                                          "pairwise interactions (the 2021 paper's choice; several "
                                                          "seconds per release)."))
    s["sw_model"] = model
    if int(sets) != design_m:
        st.caption(f":orange[This sweep releases m = {int(sets)} set(s) where the design releases {design_m}: its "
                   "errors are not the ones your release would have.]")
    n_runs = len(picked) * len(eps_grid) * int(reps)
    full_runs = len(picked) * len(FULL_EPS) * FULL_REPS
    st.caption(f"{n_runs} releases in total. The default is short ({len(DEFAULT_EPS)} ε × {DEFAULT_REPS} reps); the "
               f"full grid ({', '.join(f'{e:g}' for e in FULL_EPS)} × {FULL_REPS} reps) is {full_runs} releases. "
               "Results are cached per data, domain and settings for this session.")


def _full_grid():
    s["w_sw_eps"], s["w_sw_reps"] = list(FULL_EPS), FULL_REPS

params = {
    "data": state.work_key(), "domain": dom.to_json(), "methods": [(lab, *choices[lab]) for lab in picked],
    "epsilons": sorted(float(e) for e in eps_grid), "reps": int(reps), "measures": [m.name for m in HEADLINE],
    "sets": int(sets), "specks_model": model,
}
pkey = hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:16]
cache = s.setdefault("sweep_cache", {})
job = s.get("sweep_job")
running = bool(job and not job.finished)


def start_sweep() -> jobs.Job:
    j = jobs.start_sweep(state.work_df(), dom, dict(params), key=pkey, seconds_per_run=s.get("_sweep_seconds_per_run"))
    s["sweep_job"] = j
    return j


with guard.guarded("the sweep"):
    if sweep_fn is None:
        st.warning("Sweep unavailable: this dpcore has no `dpcore.metrics.sweep` yet, so the ε curves are "
                   "measure unavailable. The per-table heat map below works from the last release.",
                   icon=":material/construction:")
    b1, b3, b2 = st.columns([1, 1, 3])
    b3.button("Use the full grid", key="w_sw_full", on_click=_full_grid, disabled=running,
              help=f"ε = {', '.join(f'{e:g}' for e in FULL_EPS)}, {FULL_REPS} reps: tighter bands, a longer sweep.")
    go_clicked = b1.button("Run sweep", type="primary",
                           disabled=sweep_fn is None or running or n_runs == 0 or bool(problems and not picked),
                           help="Releases every method at every ε, reps times, and measures each release. Spends "
                                "nothing publishable: these releases are for evaluation only and are discarded.")
    if go_clicked:
        if pkey in cache:
            b2.caption("Cached: same data, domain and settings as an earlier sweep.")
        else:
            job = start_sweep()
            running = True

if running:
    job_panel("sweep_job", "Sweep", "Cancel sweep",
              "Stops after the release in progress; keeps the results so far.",
              "You can open other pages meanwhile; the sweep goes on and its charts appear here.",
              "Cancelling after the release in progress …")

collected = jobs.collect_sweep(job, cache) if job else None
if collected:
    s["sweep_last"], per_run = collected
    if per_run:
        s["_sweep_seconds_per_run"] = per_run
if job and job.finished and job.state == jobs.DONE and job.result is not None and job.result.attrs.get("cancelled"):
    st.warning(f"Sweep cancelled after {job.result.attrs.get('done', 0)} of {job.result.attrs.get('total', '?')} "
               "releases" + (": the charts show the partial results." if len(job.result) else "."),
               icon=":material/stop_circle:")
if job and job.finished and job.state == jobs.FAILED:
    err = job.error
    st.error(str(err) if isinstance(err, dpcore.DPCoreError) else f"The sweep failed ({type(err).__name__}: {err}).",
             icon=":material/warning:")

res = cache.get(pkey, s.get("sweep_last"))
stale = res is not None and pkey not in cache and not running


# --------------------------------------------------------------------------- charts

PLOT_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}
figures: dict[str, go.Figure] = {}

with guard.guarded("the trade-off charts"):
    if res is not None and len(res):
        if stale:
            st.caption("Showing the last sweep; the settings above changed since. Run the sweep again to update.")
        meths = list(dict.fromkeys(res["method"]))
        colours = charts.colour_map(meths)
        fmt = st.radio("Image format for the charts' camera button", ["png", "svg"], horizontal=True,
                       help="Each chart's toolbar (top right) has a camera button that saves the chart as an image "
                            "in your browser.")
        PLOT_CONFIG["toImageButtonOptions"]["format"] = fmt
        slots = st.columns(2)  # the charts two by two, the risk–utility scatter last
        for i, entry in enumerate(HEADLINE):
            mkey = entry.name
            with slots[i % 2]:
                fig = band_figure(res, mkey, colours) if mkey in set(res["measure"]) else None
                if fig is None:
                    st.info(f"{entry.label}: measure unavailable in these results.")
                else:
                    figures[mkey] = fig
                    st.plotly_chart(fig, config=PLOT_CONFIG, key=f"chart_{mkey}")
                    if mkey == "specks" and specks_saturated(res):
                        st.caption(":orange[SPECKS is near 1 for every method and ε here: the propensity model "
                                   "tells the synthetic records from the original ones almost perfectly, so it "
                                   "cannot rank these releases.] S_pMSE (right) still separates them. This happens "
                                   "when every release misses the table's joint structure (many cells per record) "
                                   "— the noise check on the Design page says where.")
        with slots[len(HEADLINE) % 2]:
            fig = risk_utility_figure(res, colours)
            if fig is None:
                st.info(f"Risk–utility scatter: measure unavailable (needs {' and '.join(RISK_UTILITY)}).")
            else:
                figures["risk_utility"] = fig
                st.plotly_chart(fig, config=PLOT_CONFIG, key="chart_ru")
        terms = dict.fromkeys(m.glossary for m in HEADLINE if m.glossary)  # each term once, in the charts' order
        st.caption("Measured on the public domain's cells (numeric values as their bins): what a release can "
                   "reproduce. " + " · ".join(gl.link(k) for k in terms))
        st.download_button("Results (CSV)", res.to_csv(index=False), "tradeoffs.csv", "text/csv",
                           help="Tidy table: method, options, epsilon, rep, measure, value. Curator-only.")
    elif sweep_fn is not None:
        st.info("Run a sweep to see SPECKS, S_pMSE and replicated uniques against ε.")

with guard.guarded("the adviser's check against the sweep"):
    if res is not None and len(res) and not stale and "s_pmse" in set(res["measure"]):
        label_method = {lab: name for lab, name, _ in params["methods"]}
        lines = adviser.sweep_disagreements(
            res, label_method, lambda e: state.design_advice(dom, epsilon=e, sets=int(sets)).recommended)
        if lines:
            st.warning("**The adviser and this sweep disagree on your table** (curator-only: the sweep reads the "
                       "raw data; the adviser predicts from public facts)\n\n" + "\n".join(f"- {x}" for x in lines),
                       icon=":material/compare_arrows:")
        else:
            st.caption("At every ε of this sweep, its lowest S_pMSE is the method the adviser recommends.")


# --------------------------------------------------------------------------- per-release measures

rel = s.get("release")
if rel and rel.get("key") != state.work_key():
    rel = None

with guard.guarded("the per-table heat map"):
    st.subheader("Two-way S_pMSE per table (last release)", anchor=False)
    if not rel or rel.get("main") is None:
        st.info("Release once on the **Release** page to see which pairs of attributes are reproduced worst.")
    else:
        releases = {rel.get("label", rel["main"].method): rel["main"], **(rel.get("comparators") or {})}
        which = st.selectbox("Release", list(releases),
                             help="The last release from the Release page (and, in a session saved before "
                                  "comparators left that page, its comparators).")
        ut_cache = rel.setdefault("utility_tables", {})
        if which not in ut_cache:
            with st.status(f"{which}: two-way S_pMSE over {len(releases[which].sets)} set(s) …") as status:
                # scored on the release's own domain (its manifest's): bins found privately, not the placeholders
                ut_cache[which] = release_two_way(state.work_df(), releases[which])
                status.update(label=f"{which}: two-way S_pMSE computed", state="complete")
        ut, scored_on = ut_cache[which]
        fig = charts.two_way_heatmap(ut, list(scored_on.names),
                                     f"{which}: mean over sets of each two-way table's S_pMSE (lower is better)")
        figures["heatmap"] = fig
        st.plotly_chart(fig, config=PLOT_CONFIG, key="chart_heat")
        found = [a.name for a in scored_on.attributes if a.origin in FOUND_IN_RELEASE] or (
            list(scored_on.names) if scored_on.source == DP_FOUND else [])
        st.caption(f"Mean over all tables {ut.mean_s_pmse:.3g}; worst table {' × '.join(ut.worst.variables)} "
                   f"({ut.worst.s_pmse:.3g})."
                   + (f" Scored on the release's own bins (its manifest's domain), found privately for "
                      f"{', '.join(found)}." if found else ""))


with guard.guarded("the analysis-specific measures"):
    st.subheader("Analysis-specific utility (last release)", anchor=False)
    if rel and rel.get("main") is not None:
        binary = [a.name for a in dom.attributes if a.size == 2]
        if not binary:
            st.info("No binary attribute to use as a logistic-regression outcome in this domain.")
        outcome = st.selectbox("Outcome", ["(choose an outcome)"] + binary,
                               help="Binary outcome of a logistic regression on all other attributes. Shown: the "
                                    "share of attribute pairs whose chi-square test of independence agrees in "
                                    "significance (synthetic sets combined by the D2 rule), and the CI overlap "
                                    "of each coefficient (Karr et al. 2006; 1 = identical intervals).")
        if outcome != "(choose an outcome)":
            releases = {rel.get("label", rel["main"].method): rel["main"], **(rel.get("comparators") or {})}
            orig = state.work_df()
            chisq_fn = getattr(metrics, "chisq_consistency", None)
            reg_fn = getattr(metrics, "regression_overlap", None)
            an_cache = rel.setdefault("analysis", {})
            summary = []
            todo = [lab for lab in releases if (lab, outcome) not in an_cache]
            status = st.status(f"Analysis-specific utility of {len(todo)} release(s) …") if todo else None
            for lab, r in releases.items():
                key = (lab, outcome)
                if key not in an_cache:
                    status.update(label=f"{lab}: chi-square tests and the logistic regression of {outcome} "
                                        f"({todo.index(lab) + 1}/{len(todo)}) …")
                    res_c = res_r = None
                    err = []
                    try:
                        res_c = chisq_fn(orig, r.sets) if chisq_fn else None
                    except dpcore.DPCoreError as exc:
                        err.append(f"chi-square: {exc}")
                    try:
                        res_r = reg_fn(orig, r.sets, outcome) if reg_fn else None
                    except dpcore.DPCoreError as exc:
                        err.append(f"regression: {exc}")
                    an_cache[key] = (res_c, res_r, err)
                    if lab == todo[-1]:
                        status.update(label=f"Analysis-specific utility of {len(todo)} release(s) computed",
                                      state="complete")
                res_c, res_r, err = an_cache[key]
                row = {"release": lab}
                if res_c is not None:
                    for alpha, share in sorted(res_c.agreement.items()):
                        row[f"χ² agreement α={alpha:g}"] = share
                else:
                    row["χ² agreement"] = "measure unavailable"
                row["mean CI overlap"] = res_r.mean_overlap if res_r is not None else "measure unavailable"
                row["sign agreement"] = res_r.sign_agreement if res_r is not None else "measure unavailable"
                summary.append(row)
                for e in err:
                    st.error(f"{lab}: {e}", icon=":material/warning:")
            st.dataframe(pd.DataFrame(summary), hide_index=True, width="stretch")
            cols = st.columns(min(len(releases), 2))
            for i, (lab, _r) in enumerate(releases.items()):
                res_c, res_r, _ = an_cache[(lab, outcome)]
                if res_r is not None and len(res_r.table):
                    fig = ci_figure(res_r.table, f"{lab}: logistic regression of {outcome}")
                    figures[f"ci_{lab}"] = fig
                    cols[i % len(cols)].plotly_chart(fig, config=PLOT_CONFIG, key=f"chart_ci_{i}")
                if res_c is not None:
                    with cols[i % len(cols)].expander(f"{lab}: chi-square tests per pair"):
                        st.dataframe(res_c.table, hide_index=True, width="stretch")
    else:
        st.info("Release once on the **Release** page first.")

with guard.guarded("the chart export"):
    if figures:
        st.subheader("Export", anchor=False)
        st.caption("Each chart's toolbar (top right) has a camera button that saves it as PNG or SVG (choose above). "
                   "The HTML file holds every chart on this page, interactive. Both are curator-only: they are "
                   "computed from the raw data.")
        # plotly.js embedded once: the file opens offline (no CDN)
        html = figures_html(list(figures.values()), "Trade-offs (curator only, NOT DP)", RAW_BANNER)
        st.download_button("All charts (interactive HTML)", html, "tradeoffs.html", "text/html",
                           help="Opens in any browser, offline: plotly.js is embedded in the file.")
        if importlib.util.find_spec("kaleido") is not None:  # optional: server-side images
            c1, c2 = st.columns(2)
            which = c1.selectbox("Chart", list(figures), help="Render one chart on the server with kaleido.")
            fmt_srv = c2.radio("Format", ["png", "svg"], horizontal=True, key="w_srv_fmt")
            if st.button("Render image", help="Renders the chart on the server with kaleido (a few seconds)."):
                try:
                    with st.spinner(f"Rendering {which} as {fmt_srv} with kaleido …"):
                        s["_chart_img"] = (f"{which}.{fmt_srv}", figures[which].to_image(format=fmt_srv, scale=2))
                except Exception as exc:
                    st.info(f"Server-side image export unavailable ({type(exc).__name__}); use the camera button.")
            if s.get("_chart_img"):
                name, data = s["_chart_img"]
                st.download_button(f"Download {name}", data, name, key="dl_chart_img")
