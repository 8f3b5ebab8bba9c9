"""Release: run dpcore.synthesize (spends ε), inspect the sets, download them with the manifest."""
from __future__ import annotations

import time

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import dpcore
from pages import _common as ui
from pages import _workspace as wsui
from pages._report import render_report_section

s = st.session_state
ui.init_state()
cfg = ui.cfg()

st.title("4 · Release")
st.caption("This page spends the privacy budget. Every click on Release draws fresh noise: publish one release "
           "only, since each extra release of the same data spends ε again.")

dom = ui.need_domain()
if dom is None:
    st.stop()


def _run(dom):
    method, opts, problems = ui.design_call(dom)
    if problems:
        raise dpcore.OptionError(" ".join(problems))
    eps, m = float(cfg["epsilon"]), int(cfg["m"])
    n_runs = 1 + len(cfg.get("comparators", []))
    wsui.check_budget(eps * n_runs, f"this click ({n_runs} release(s) at ε = {eps:g})")  # before any randomness
    out = {"main": None, "comparators": {}, "errors": {}, "times": {}}
    with st.status(f"Releasing {m} set(s) with {ui.method_label(method, opts)} at ε = {eps:g} …", expanded=True) as status:
        t0 = time.perf_counter()
        st.write(f"{ui.method_label(method, opts)}: noising counts, consistency, sampling …")
        out["main"] = ui.run_release(dom, method, opts, eps, m)
        if getattr(out["main"], "book_entry", None):
            st.write(f"Recorded as release {out['main'].book_entry} in the workspace's budget book.")
        out["times"]["main"] = time.perf_counter() - t0
        out["label"] = ui.method_label(method, opts)
        for name in cfg.get("comparators", []):
            st.write(f"Comparator {name} …")
            t1 = time.perf_counter()
            try:
                out["comparators"][name] = ui.run_release(dom, name, ui.comparator_call(name, opts, dom), eps, m)
            except dpcore.DPCoreError as exc:
                out["errors"][name] = str(exc)
            out["times"][name] = time.perf_counter() - t1
        status.update(label=f"Released {m} set(s) in {time.perf_counter() - t0:.1f} s", state="complete", expanded=False)
    out["key"] = ui.work_key()
    s["release"] = out
    wsui.persist()  # a reload now brings this release back


method, opts, problems = ui.design_call(dom)
for msg in problems:
    st.warning(msg, icon=":material/account_tree:")
c1, c2 = st.columns([1, 3])
clicked = c1.button(f"Release (spends ε = {cfg['epsilon']:g})", type="primary", disabled=bool(problems),
                    help="Runs dpcore.synthesize with the design's options. Spends the whole ε over the m sets.")
c2.markdown(f"**{ui.method_label(method, opts)}**, ε = {cfg['epsilon']:g}, m = {cfg['m']}, "
            f"consistency {cfg['consistency']}, synthesis {cfg['synthesis']}"
            + (f"; comparators: {', '.join(cfg['comparators'])}" if cfg.get("comparators") else ""))
if clicked:
    with ui.guarded("the release"):
        _run(dom)

with ui.guarded("the budget book"):
    wsui.book_panel()

rel = s.get("release")
if rel and rel.get("key") != ui.work_key():
    st.info("The data changed since the last release; release again.")
    rel = None
if not rel or rel.get("main") is None:
    st.stop()

release = rel["main"]
orig = ui.work_df()

with ui.guarded("the release status"):
    if release.dp:
        st.success(f"{release.dp_reason}.", icon=":material/lock:")
    else:
        st.markdown(
            f'<div class="not-dp" style="border:2px solid {ui.NOT_DP_RED};border-radius:6px;padding:0.6rem 0.9rem;'
            f'color:{ui.NOT_DP_RED};font-weight:600">NOT DP — {release.dp_reason}</div>',
            unsafe_allow_html=True)
        st.error("This release is NOT differentially private; the manifest records why. Fix the cause and release "
                 "again before publishing.", icon=":material/dangerous:")
    led = release.ledger.to_dict()
    st.caption(f"Released in {rel['times'].get('main', 0):.2f} s. Ledger total ε = {led['epsilon_total']:.6g} "
               f"(requested {release.epsilon:g}).")

with ui.guarded("the downloads"):
    st.subheader("Downloads")
    st.caption("What you publish: the synthetic sets and manifest.json (options, declared domain, ledger, DP status; "
               "no seed, no raw counts).")
    cols = st.columns(min(len(release.sets), 6) + 1)
    zips = rel.setdefault("zips", {})  # built once per release, not on every rerun
    if "main" not in zips:
        zips["main"] = ui.release_zip(release)
    cols[0].download_button("All sets + manifest (zip)", zips["main"], "release.zip", "application/zip",
                            type="primary", key="dl_zip",
                            help="synthetic_1.csv … synthetic_m.csv and manifest.json: everything covered by ε.")
    for i, df in enumerate(release.sets, 1):
        cols[min(i, len(cols) - 1)].download_button(f"synthetic_{i}.csv", df.to_csv(index=False), f"synthetic_{i}.csv",
                                                     "text/csv", key=f"dl_set_{i}",
                                                     help=f"Synthetic set {i} alone (spent ε/m = {release.epsilon / len(release.sets):g}).")

with ui.guarded("the release report"):
    # the report: HTML (offline, plotly.js embedded) and PDF; built on request, the figures take seconds
    render_report_section(release, orig)

with ui.guarded("the synthetic sets"):
    st.subheader("Synthetic sets (first rows)")
    tabs = st.tabs([f"set {i}" for i in range(1, len(release.sets) + 1)])
    for t, df in zip(tabs, release.sets):
        t.dataframe(df.head(10), hide_index=True, width="stretch")

with ui.guarded("the one-way charts"):
    st.subheader("One-way distributions: original vs synthetic")
    ui.not_dp_label("Curator view: the 'original' bars come from the raw data — NOT FOR RELEASE")
    series = {"original": [orig], rel.get("label", release.method): release.sets}
    for name, r in rel["comparators"].items():
        series[name] = r.sets
    attrs = list(dom.names)
    pick = st.multiselect("Attributes", attrs, default=attrs[: min(6, len(attrs))],
                          help="Share of records per level; synthetic bars average the m sets, the whiskers show "
                               "the lowest and highest set.")
    labels = list(series)
    colours = ["#000000"] + [ui.OKABE_ITO[i % 7] for i in range(len(labels) - 1)]
    grid = st.columns(2)
    for i, a in enumerate(pick):
        rows = []
        attr = dom[a]
        for lab, frames in series.items():
            # dpcore's own encoding: numeric values fall into their public bins, missing into "NA"
            shares = np.array([np.bincount(attr.encode(f[a]), minlength=attr.size) / max(len(f), 1) * 100
                               for f in frames])
            for lev, col in zip(attr.labels, shares.T):
                rows.append({"level": lev, "source": lab, "percent": col.mean(), "lo": col.min(), "hi": col.max()})
        d = pd.DataFrame(rows)
        order = [lev for lev in (str(x) for x in dom[a].labels) if lev in set(d["level"])]
        fig = go.Figure()
        for lab, col in zip(labels, colours):
            sub = d[d["source"] == lab].set_index("level").reindex(order)
            err = None
            if len(series[lab]) > 1:
                err = dict(type="data", symmetric=False, array=(sub["hi"] - sub["percent"]).fillna(0),
                           arrayminus=(sub["percent"] - sub["lo"]).fillna(0), color="#333333", thickness=1.2)
            fig.add_bar(x=order, y=sub["percent"], name=lab, marker_color=col, error_y=err,
                        hovertemplate=lab + "<br>%{x}: %{y:.2f} %<extra></extra>")
        fig.update_layout(barmode="group", height=360, title=dict(text=f"{a}: share of records by level", y=0.97),
                          margin=dict(l=10, r=10, t=80, b=10),
                          legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0, font=dict(size=11)))
        fig.update_xaxes(title=None, type="category", tickangle=-25, automargin=True)
        fig.update_yaxes(title="records (%)")
        grid[i % 2].plotly_chart(fig, config={"displaylogo": False}, key=f"oneway_{a}")

with ui.guarded("the ledger"):
    st.subheader("Budget ledger (spent)")
    rows = ui.ledger_rows(led)
    st.plotly_chart(ui.ledger_figure(rows, led["epsilon_total"], rel.get("label", release.method)),
                    config={"displaylogo": False})
    with st.expander("All charges"):
        st.dataframe(rows, hide_index=True, width="stretch")

if rel["comparators"] or rel["errors"]:
    with ui.guarded("the comparators"):
        st.subheader("Comparators")
        st.caption("Each comparator is a separate release at the same ε: downloading and publishing more than one "
                   "of them spends ε once per release.")
        for name, r in rel["comparators"].items():
            with st.expander(f"{name} — {'DP' if r.dp else 'NOT DP'} ({rel['times'].get(name, 0):.2f} s)"):
                if not r.dp:
                    ui.not_dp_label(f"NOT DP — {r.dp_reason}")
                st.dataframe(r.sets[0].head(10), hide_index=True, width="stretch")
                if name not in zips:
                    zips[name] = ui.release_zip(r)
                st.download_button(f"{name}: all sets + manifest (zip)", zips[name], f"release_{name}.zip",
                                   "application/zip", key=f"dl_cmp_{name}")
        for name, err in rel["errors"].items():
            st.error(f"Comparator {name}: {err}", icon=":material/warning:")
