"""Release: run dpcore.synthesize with the design's method (spends ε), inspect the sets, download them
with the manifest. One click is one release at the ε on the button: comparing methods is the
Trade-offs page's job (curator-only evaluation, never in the budget book)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

import dpcore
from dpcore.metrics.numeric import crowded_found_bins
from dpcore.privacy.ledger import check_epsilon
from dpcore.release import curator_only_lines
from dpcore.studio import design
from dpcore.studio.design import app_dp_reason
from dpcore.studio.private_domain import compared_on
from dpcore.studio.report import oneway_rows
from pages.components import book_panel, charts, domain_forecast, guard, jobs, session, state, workspace
from pages.components.report import render_report_section

s = st.session_state
session.init_state()
cfg = state.cfg()


def _pick_note(method: str) -> str:
    """Under "auto" the method is the adviser's pick, which can change once a release has made the noisy
    record count public: say so, rather than change the method beside the button without a word."""
    if (cfg.get("release_method") or "auto") != "auto":
        return ""
    rel = st.session_state.get("release")
    last = rel["main"].method if rel and rel.get("key") == state.work_key() and rel.get("main") is not None else None
    if last and last != method:
        return (f" (the adviser's pick; your last release used {state.method_label(last, {})}: the adviser now "
                "knows that release's noisy record count)")
    return " (the adviser's pick)"


jobs.collect_release()  # a release that finished while the curator was away is shown below

st.title("4 · Release", anchor=False)
st.caption("This page spends the privacy budget. Every click on Release draws fresh noise and is one release of "
           "the design's method at the ε on the button; publish one release only, since each extra release of "
           "the same data spends ε again.")

dom = state.need_domain()
if dom is None:
    st.stop()

method, opts, problems = state.design_call(dom)
for msg in problems:
    st.warning(msg, icon=":material/account_tree:")
label = state.method_label(method, opts)
gate_open = False
with guard.guarded("the private domain's forecast"):
    gate_open = domain_forecast.release_gate(state.work_key())  # a column forecast not found: refused unless accepted
running = jobs.running_job()
c1, c2 = st.columns([1, 3])
spends = f"ε = {cfg['epsilon']:g}" + (f", δ = {opts['delta']:g}" if opts.get("delta") else "")
blocked = bool(problems) or bool(running) or not gate_open
clicked = c1.button(f"Release (spends {spends})", type="primary", disabled=blocked,
                    help="One release of the design's method: the m synthetic sets together spend exactly this budget, "
                         "recorded in the table's budget book.")
c2.markdown(f"**{label}**{_pick_note(method)}, {spends}"
            + (" ((ε, δ) through zCDP)" if opts.get("delta") else " (pure ε)")
            + f", m = {cfg['m']}"
            + (f", protecting {design.unit_description(cfg)}" if design.unit_options(cfg) else "")
            + "".join(f", {k} {opts[k]}" for k in ("consistency", "synthesis") if k in opts)
            + ". Change it on the Design page.")
refused = False
if clicked:
    with guard.guarded("the release"):
        try:
            if problems:
                raise dpcore.OptionError(" ".join(problems))
            eps, m = float(cfg["epsilon"]), int(cfg["m"])
            check_epsilon(eps)
            workspace.check_budget(eps, f"this release (ε = {eps:g})", opts.get("delta"))  # before any randomness
        except dpcore.DPCoreError:
            refused = True
            raise
        job = jobs.start_release(dom, method, opts, eps, m, label)
        jobs.wait_briefly(job)
        if job.finished:
            jobs.collect_release()
        running = jobs.running_job()

if running is not None:
    jobs.progress_panel()

notice = jobs.notice_for(state.work_key())
if notice and not refused:
    kind, text = notice
    {"success": st.success, "warning": st.warning, "error": st.error}[kind](
        text, icon={"success": ":material/check_circle:", "warning": ":material/stop_circle:",
                    "error": ":material/warning:"}[kind])

with guard.guarded("the budget book"):
    book_panel.panel()


def _curator_only_bins(release, orig: pd.DataFrame) -> None:
    """NOT DP, curator-only: a numeric column whose bins the release found privately with one bin holding
    more than half of the records, and the records clamped into the end bins (never released). A release
    restored from the workspace (its manifest and sets, no domain object) has neither to show."""
    domain = getattr(release, "domain", None)
    for col, occ in (crowded_found_bins(orig, domain) if domain is not None else {}).items():
        lo, hi = occ["top_bin"]
        st.warning(f"NOT DP, curator-only: {occ['top_share']:.0%} of the records of {col} fall in one of the bins "
                   f"the release found privately, [{lo:g}, {hi:g}]: the release keeps little of this column. Raise "
                   "ε or the domain's share, choose the other binning, or declare codebook bounds.",
                   icon=":material/stacked_bar_chart:")
    for line in curator_only_lines(getattr(release, "curator_only", None) or {}):
        st.caption(f":red[{line} (from the raw data; never in the published manifest).]")


def _show_release(rel: dict) -> None:
    """The last release: its DP statement, downloads, report, sets, one-way charts and ledger (folded
    under a note when this click was refused)."""
    entry = getattr(rel["main"], "book_entry", None) or getattr(rel["main"], "entry_id", None)
    if refused:  # the refusal above is this click's answer: the earlier release is marked as such, no green banner
        box = st.container(border=True, key="previous_release")
        # the number is the budget book's entry (the book panel's "#"), not a count of this table's releases
        box.markdown(f"**Your previous release{f' (budget book entry #{entry})' if entry else ''}** "
                     f"({rel.get('label', rel['main'].method)}), made before this refusal and unchanged by it:")
    else:
        box = st.container()
        box.subheader(f"Release: {rel.get('label', rel['main'].method)}"
                      f"{f' (budget book entry #{entry})' if entry else ''}", anchor=False)

    with box:
        release = rel["main"]
        orig = state.work_df()

        with guard.guarded("the release status"):
            if release.dp and refused:
                st.caption(f"{release.dp_reason}.")
            elif release.dp:
                st.success(f"{release.dp_reason}.", icon=":material/lock:")
            else:
                st.markdown(
                    f'<div class="not-dp" style="border:2px solid {charts.NOT_DP_RED};border-radius:6px;'
                    f'padding:0.6rem 0.9rem;color:{charts.NOT_DP_RED};font-weight:600">'
                    f'NOT DP — {app_dp_reason(release.dp_reason)}</div>',
                    unsafe_allow_html=True)
                st.error("This release is NOT differentially private; the manifest records why. Fix the cause and "
                         "release again before publishing.", icon=":material/dangerous:")
            led = release.ledger.to_dict()
            _curator_only_bins(release, orig)
        with guard.guarded("what the private domain found"):
            domain_forecast.release_statuses(release.manifest())
        with guard.guarded("the release status"):
            st.caption(f"Released in {rel['times'].get('main', 0):.2f} s. Ledger total ε = {led['epsilon_total']:.6g} "
                       f"(requested {release.epsilon:g}).")

        with guard.guarded("the downloads"):
            st.subheader("Downloads", anchor=False)
            st.caption("What you publish: the synthetic sets and manifest.json (options, declared domain, ledger, DP "
                       "status; no seed, no raw counts).")
            zips = rel.setdefault("zips", {})  # built once per release, not on every rerun
            if "main" not in zips:
                zips["main"] = state.release_zip(release)
            st.download_button("All sets + manifest (zip)", zips["main"], "release.zip", "application/zip",
                               type="primary", key="dl_zip",
                               help="synthetic_1.csv … synthetic_m.csv and manifest.json: everything covered by ε.")
            with st.expander(f"Each set alone ({len(release.sets)} CSV files)"):
                cols = st.columns(min(len(release.sets), 5))
                for i, df in enumerate(release.sets, 1):
                    cols[(i - 1) % len(cols)].download_button(
                        f"synthetic_{i}.csv", df.to_csv(index=False), f"synthetic_{i}.csv", "text/csv",
                        key=f"dl_set_{i}",
                        help=f"Synthetic set {i} alone (spent ε/m = {release.epsilon / len(release.sets):g}).")

        with guard.guarded("the release report"):
            # the report: HTML (offline, plotly.js embedded) and PDF; built on request, the figures take seconds
            render_report_section(release, orig)

        with guard.guarded("the synthetic sets"):
            st.subheader("Synthetic sets (first rows)", anchor=False)
            tabs = st.tabs([f"set {i}" for i in range(1, len(release.sets) + 1)])
            for t, df in zip(tabs, release.sets):
                t.dataframe(charts.shown_rows(df.head(10)), hide_index=True, width="stretch")

        with guard.guarded("the one-way charts"):
            st.subheader("One-way distributions: original vs synthetic", anchor=False)
            guard.not_dp_label("Curator view: the 'original' bars come from the raw data — NOT FOR RELEASE")
            # a domain found privately: compared on it, the source recoded to it as the release recoded it
            cdom, corig = compared_on(release.manifest(), dom, orig)
            series = {"original": [corig], rel.get("label", release.method): release.sets}
            attrs = list(cdom.names)
            pick = st.multiselect("Attributes", attrs, default=attrs[: min(6, len(attrs))],
                                  help="Share of records per level; synthetic bars average the m sets, the whiskers "
                                       "show the lowest and highest set.")
            labels = list(series)
            colours = ["#000000"] + [charts.OKABE_ITO[i % 7] for i in range(len(labels) - 1)]
            grid = st.columns(2)
            for i, a in enumerate(pick):
                # dpcore's own encoding: numeric values fall into their public bins, missing into "NA"
                rows = oneway_rows(cdom[a], {lab: [f[a] for f in frames] for lab, frames in series.items()})
                fig = charts.oneway_figure(a, rows, [str(x) for x in cdom[a].labels], labels, colours,
                                           {lab: len(frames) for lab, frames in series.items()})
                grid[i % 2].plotly_chart(fig, config={"displaylogo": False}, key=f"oneway_{a}")

        with guard.guarded("the ledger"):
            st.subheader("Budget ledger (spent)", anchor=False)
            rows = charts.ledger_rows(led)
            zc = led.get("unit") == "rho"
            st.plotly_chart(charts.ledger_figure(rows, led["rho_total"] if zc else led["epsilon_total"],
                                             rel.get("label", release.method), "ρ" if zc else "ε"),
                            config={"displaylogo": False})
            with st.expander("All charges"):
                st.dataframe(rows, hide_index=True, width="stretch",
                             column_config={"epsilon": st.column_config.NumberColumn("ε"),
                                            "rho": st.column_config.NumberColumn("ρ", format="scientific")})


rel = s.get("release")
if rel and rel.get("key") != state.work_key():
    st.info("The data changed since the last release; release again.")
    rel = None
if rel and rel.get("main") is not None:
    _show_release(rel)

