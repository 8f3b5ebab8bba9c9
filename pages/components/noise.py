"""The expected noise of the design's method against the counts it is added to (Design and
Preview pages), and the method adviser's panel (Design page). The numbers come from one plan of the
release (dpcore.previews.plan_release: the noise check, the tables beneath it, the planned ledger) and
dpcore.studio.adviser (which computes each method's noise the same way); this module lays them out."""
from __future__ import annotations

import dataclasses
import json

import pandas as pd
import streamlit as st

import dpcore
from dpcore.previews import ReleaseDesign, ReleasePlan, plan_release
from dpcore.studio import adviser, design
from dpcore.studio.noise_check import what_passes
from pages.components import glossary as gl
from pages.components import state


def record_count(dom: dpcore.Domain) -> tuple[float, str, bool]:
    """(n, where it comes from, curator-only?) for the noise figures. Under replace-one neighbours n
    is public; else the noisy count of this table's last release (public once released); else the
    table's own count, which only the curator may see."""
    s = st.session_state
    n = len(state.work_df())
    what = "record count"
    if design.is_wide(state.cfg()) and state.unit_column():  # a panel released wide: one record per unit
        unit = state.unit_column()
        n, what = int(state.work_df()[unit].nunique()), f"number of '{unit}' values"
    if state.cfg().get("neighbours") == "replace":
        return float(n), f"the table's {what} (public under replace-one neighbours)", False
    rel = s.get("release")
    if rel and rel.get("key") == state.work_key() and rel.get("main") is not None:
        rc = rel["main"].record_count or {}
        if rc.get("noisy"):
            entry = getattr(rel["main"], "book_entry", None) or getattr(rel["main"], "entry_id", None)
            return float(rc["value"]), ("the noisy record count of your last release"
                                        + (f" (#{entry})" if entry else "")), False
    return float(n), f"your table's own {what} — curator-only: it is not released", True


def _options(opts: dict) -> dict:
    return {k: v for k, v in opts.items() if k != "neighbours"}


@st.cache_data(show_spinner=False, max_entries=64)
def _plan(design_json: str, domain_json: str, n: float) -> ReleasePlan:
    design = ReleaseDesign(**json.loads(design_json))
    return plan_release(design, design.measured_domain(dpcore.Domain.from_json(domain_json)), n)


def release_plan(dom: dpcore.Domain, method: str, opts: dict) -> tuple[ReleasePlan, float, str, bool]:
    """(plan, n, where n comes from, curator-only?): the design's planned figures (dpcore.previews.plan_release) over
    the domain the figures use (state.figures_domain: the last release's own, when it found part of it privately)
    with the record count of :func:`record_count`. The noise check, the table beneath it, the planned ledger and
    the adviser's noise figures all read this one plan."""
    n, source, curator_only = record_count(dom)
    design = state.release_design(dom, method, opts)
    plan = _plan(json.dumps(dataclasses.asdict(design), sort_keys=True, default=str),
                 state.figures_domain(dom).to_json(), n)
    return plan, n, source, curator_only


def noise_rows(dom: dpcore.Domain, method: str, opts: dict) -> tuple[pd.DataFrame, float, str, bool]:
    plan, n, source, curator_only = release_plan(dom, method, opts)
    return pd.DataFrame([r.to_dict() for r in plan.noise]), n, source, curator_only


def noise_panel(dom: dpcore.Domain, method: str, opts: dict, label: str) -> None:
    """The noise check of ``method``: one verdict line (red when the noise is larger than the
    typical count on most released counts) and the table behind it."""
    tab, n, source, curator_only = noise_rows(dom, method, opts)
    st.markdown(f"**Noise against the counts — {label}**", help=gl.help_text("noise-sd", "typical-count"))
    total = int(tab["counts"].sum())
    swamped = int(tab.loc[tab["swamped"], "counts"].sum())
    worst = tab.loc[tab["ratio"].idxmax()]
    about = "about " if worst["estimate"] else ""
    detail = (f"Largest: noise SD {worst['noise_sd']:,.3g} records per count on {worst['what']}, where a count "
              f"holds {about}{worst['typical_count']:,.3g} on average.")
    if swamped == 0:
        st.success(f"The noise is smaller than the typical count on every released count. {detail}",
                   icon=":material/check_circle:")
    elif swamped * 2 > total:
        st.error(f"**Noise larger than the data**: on {_count(swamped)} of {_count(total)} released counts the noise "
                 f"SD exceeds the typical count. {detail} {_remedy(dom, method, opts, n)}", icon=":material/warning:")
    else:
        st.warning(f"The noise is larger than the typical count on {_count(swamped)} of {_count(total)} released "
                   f"counts. {detail}", icon=":material/warning:")
    unit = design.unit_options(state.cfg())
    if unit.get("records_per_unit"):
        k, col = unit["records_per_unit"], unit["privacy_unit"]
        st.caption(f"Privacy unit: each '{col}' with all of its records, up to {k} kept: every count's noise is "
                   f"calibrated to {k} records, {k} times the noise of a release that protects one record.")
    elif unit:
        st.caption(f"Privacy unit: each '{unit['privacy_unit']}', released wide (one record per "
                   f"'{unit['privacy_unit']}', a column group per '{unit['panel_time']}'): the counts are those of "
                   "the wide table.")
    shown = tab.assign(**{"noise larger?": tab["swamped"].map({True: "YES", False: "no"})})
    each = f"{tab['unit'].iloc[0]} each"  # the budget's own unit: ε, or ρ under (ε, δ)
    # the comparison first (noise SD beside the typical count), so a half-width column shows it without scrolling
    shown = shown[["what", "noise_sd", "typical_count", "noise larger?", "budget", "counts"]].rename(columns={
        "what": "released counts", "counts": "how many", "budget": each,
        "noise_sd": "noise SD (records)",
        "typical_count": "typical count (records)"})
    styled = shown.style.apply(lambda r: ["color: #C62828; font-weight: 600" if r["noise larger?"] == "YES" else ""
                                          for _ in r], axis=1)
    with st.expander(f"Noise per kind of released count ({len(tab)} row{'s' if len(tab) != 1 else ''})"):
        st.dataframe(styled, hide_index=True, width="stretch", column_config={
            "released counts": st.column_config.TextColumn(width="medium"),
            each: st.column_config.NumberColumn(format="%.3g"),
            "noise SD (records)": st.column_config.NumberColumn(format="%.3g"),
            "typical count (records)": st.column_config.NumberColumn(format="%.3g")})
    st.caption(f"Typical count = n / cells of the table counted, with n = {n:,.0f} ({source}). "
               + ("“about”: the tables are chosen at release, so their size is a typical one. " if tab["estimate"].any()
                  else "")
               + (":red[Curator-only: computed from the table's own record count.]" if curator_only else ""))


@st.cache_data(show_spinner=False, max_entries=32)
def _remedy_text(method: str, domain_json: str, epsilon: float, sets: int, n: float, neighbours: str,
                 options_json: str) -> str:
    return what_passes(method, dpcore.Domain.from_json(domain_json), epsilon, sets, n=n, neighbours=neighbours,
                       **json.loads(options_json))


def _remedy(dom: dpcore.Domain, method: str, opts: dict, n: float) -> str:
    """The nearest design whose check passes, or why none near it does (public facts and n only), spending on the
    domain first what the release would."""
    c = state.cfg()
    first = state.release_design(dom, method, opts).domain_keywords()
    return _remedy_text(method, state.figures_domain(dom).to_json(), float(c["epsilon"]), int(c["m"]), n,
                        c.get("neighbours", "add_remove"), json.dumps({**_options(opts), **first}, sort_keys=True))


def _count(k: int) -> str:
    return f"{k:,}" if k < 1e12 else f"{k:.2g}"


VERDICT = {"recommended": ":green[**recommended**]", "close": ":green[close]", "good": ":green[good]",
           "weak": ":orange[weak]", "not modelled": "not modelled", "cannot run": ":red[cannot run]"}


def _public_n_input() -> None:
    """The curator's public figure for n (never prefilled from the table: it is theirs to state)."""
    s = st.session_state
    if "w_adviser_n" not in s:
        s["w_adviser_n"] = s.get("adviser_n")
    st.number_input("Records n, a public figure (optional)", min_value=1, step=1000, key="w_adviser_n",
                    placeholder="e.g. the size you would publish",
                    help="A record count you would state publicly (rounded, or from the survey's design). The "
                         "adviser predicts each method's error from it; without one it averages over n from 100 to "
                         "1,000,000. Not taken from your table: that count is private under add/remove neighbours.")
    s["adviser_n"] = s["w_adviser_n"]


def _ranking_table(adv: adviser.Advice) -> pd.DataFrame:
    return pd.DataFrame([{"method": a.name, "verdict": a.verdict, "pred. S_pMSE": a.predicted,
                          "noisy": f"{a.swamped_counts / a.total_counts:.0%}" if a.total_counts else "—"}
                         for a in adv.methods])


def adviser_panel(dom: dpcore.Domain, method: str, opts: dict) -> adviser.Advice:
    """The adviser: its recommendation and why (predicted from public facts), then every method ranked
    with its verdict, its predicted error and its noise against the typical count."""
    n, source, curator_only = record_count(dom)
    adv = state.design_advice(dom, (n, source, curator_only))
    with st.container(border=True, key="adviser_panel"):
        c1, c2 = st.columns([1, 1], gap="large")
        with c1:
            pick = adviser.NAMES[adv.recommended] if adv.recommended else "none can run this design"
            st.markdown(f"**Method adviser** — recommended for this table: **{pick}**",
                        help=gl.help_text("method-adviser"))
            st.write(adv.summary)
            for note in adv.notes:
                st.caption(note)
            _public_n_input()
        with c2:
            st.dataframe(_ranking_table(adv), hide_index=True, width="stretch", column_config={
                "pred. S_pMSE": st.column_config.NumberColumn(width="small",
                    format="%.3g", help="Predicted mean two-way S_pMSE (lower is better), from public facts only: "
                                        "a prediction, not a measurement on your table. " + gl.help_text("spmse")),
                "noisy": st.column_config.TextColumn(
                    help="Share of the released counts whose noise SD is larger than the typical count "
                         "(n / cells of the table counted): the counts that are mostly noise.")})
            st.caption(f"Noise figures use n = {n:,.0f}: {source}."
                       + (" :red[Curator-only.]" if curator_only else "")
                       + " The recommendation itself uses public facts only.")
            if design.unit_options(state.cfg()):
                st.caption(f"Privacy unit: {design.unit_description(state.cfg())}. The predicted errors are those "
                           "of a release that protects one record; the noise figures, each method's check and the "
                           "noise check use the unit's.")
            if adv.delta is not None:
                st.caption("Every method's check “Noise against the counts” uses the (ε, δ) noise (discrete Gaussian "
                           "at its share of ρ).")
        with st.expander("Why, method by method"):
            for a in adv.methods:
                st.markdown(f"**{a.name}** — {VERDICT.get(a.verdict, a.verdict)}")
                for line in a.why:
                    st.markdown(f"- {line}")
    return adv
