"""Data page: the Numeric columns panel and the whole table's private domain (widgets only).

Each numeric column offers "codebook bounds" (lower, upper and bins typed by the curator; empty
for every new table), "find privately" (bounds and bins found by the release under DP, charged
to its ledger), "drop", and "codebook edges"; a column with few values may also stay "levels".
Nothing computed from the data is offered as public. The curator-only figures (the share of
records in the fullest bin, the records clamped into the end bins) are labelled NOT DP.
The rules live in dpcore (dpcore.data.editing.parse_codebook_bounds,
dpcore.metrics.numeric.bin_occupancy, dpcore.studio.design.release_domain_call).
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

import dpcore
from dpcore.data.domain import DEFAULT_NUMERIC_BINS, numeric_spec_attribute, numeric_spec_edges
from dpcore.data.editing import parse_codebook_bounds, replace_attribute
from dpcore.data.inference import DEFAULT_MAX_INT_LEVELS
from dpcore.measure.bounds import REFINE_BINS
from dpcore.measure.dp_domain import BOUNDS_SHARE, MAX_WHOLE_BINS, REFINE_SHARE
from dpcore.measure.privtree import PRIVTREE_MAX_DEPTH, PRIVTREE_THETA_SHARE
from dpcore.measure.quantiles import BIN_METHODS, DEFAULT_BINS_SHARE, DEFAULT_DP_BINS_METHOD, PRIVTREE, QUANTILES
from dpcore.metrics.numeric import CROWDED_SHARE, bin_occupancy
from dpcore.studio import design
from pages.components import state
from pages.components.domain_editor import METHOD_MODE, spec_method

CODEBOOK, PRIVATE, DROP, EDGES, LEVELS = "codebook bounds", "find privately", "drop", "codebook edges", "levels"


def numeric_columns(raw: pd.DataFrame) -> list[str]:
    """The table's numeric columns (dropped ones included: "drop" is one of their choices)."""
    return [str(c) for c in raw.columns
            if pd.api.types.is_numeric_dtype(raw[c].dtype) and not pd.api.types.is_bool_dtype(raw[c].dtype)]


def bins_share() -> float:
    return float(st.session_state.get("bins_share") or DEFAULT_BINS_SHARE)


def private_bins(k: int) -> str:
    """The bins a column found privately gets, in words (dp_bins' default method decides them)."""
    if DEFAULT_DP_BINS_METHOD == PRIVTREE:
        return f"{k} bins at most, by PrivTree (halves split where a noisy count finds records)"
    return f"{k} bins at DP quantiles"


def current_choice(col: str, binned: bool) -> str:
    s = st.session_state
    if col in s.get("drop_cols", []):
        return DROP
    if col in design.private_numeric(s.get("dp_bins")):
        return PRIVATE
    spec = (s.get("numeric") or {}).get(col)
    if isinstance(spec, list):
        return EDGES
    if isinstance(spec, dict):
        return CODEBOOK
    # a choice made before anything was typed (its key names the table, like the widgets')
    picked = s.get(state.numeric_key("picked", col))
    return picked if picked in (CODEBOOK, EDGES) or (picked == LEVELS and not binned) else \
        (CODEBOOK if binned else LEVELS)


def _drop_from_override(col: str) -> None:
    """A dropped column leaves an edited domain; its other edits stay."""
    s = st.session_state
    if not s.get("domain_override"):
        return
    edited = dpcore.Domain.from_json(s["domain_override"], declared=False)
    names = [n for n in edited.names if n != col]
    if col in edited.names:
        s["domain_override"] = edited.project(names).to_json() if names else None


def apply_choice(col: str, choice: str) -> None:
    """Session state for ``col``'s new choice (a widget callback: no rerun). The domain needs
    confirming again; an edited domain keeps its edits unless ``col`` comes back from being
    dropped or loses its codebook bounds or edges (then it is inferred again)."""
    s = st.session_state
    numeric = dict(s.get("numeric") or {})
    dp_bins = dict(s.get("dp_bins") or {})
    was_dropped = col in s.get("drop_cols", [])
    drops = [c for c in s.get("drop_cols", []) if c != col]
    spec = numeric.get(col)
    if choice in (DROP, PRIVATE, LEVELS) or (choice == EDGES) != isinstance(spec, list):
        numeric.pop(col, None)
    dp_bins.pop(col, None)
    if choice == PRIVATE:
        dp_bins[col] = {"bins": int(s.get(state.numeric_key("pbins", col)) or DEFAULT_NUMERIC_BINS)}
    if choice == DROP:
        drops.append(col)
        _drop_from_override(col)
    elif was_dropped or (spec is not None and col not in numeric):
        s["domain_override"] = None
    s["numeric"], s["dp_bins"], s["drop_cols"] = numeric, dp_bins, drops
    s[state.numeric_key("picked", col)] = choice
    s["domain_confirmed"] = False
    s.pop("release", None)


def _on_choice(col: str) -> None:
    apply_choice(col, st.session_state[state.numeric_key("numkind", col)])


def _use(col: str, new) -> None:
    """Keep ``col``'s codebook bounds or edges (an edited domain keeps its other edits)."""
    s = st.session_state
    numeric = dict(s.get("numeric") or {})
    numeric[col] = new
    s["numeric"] = numeric
    override = s.get("domain_override")
    if override:
        edited = dpcore.Domain.from_json(override, declared=False)
        if col in edited.names:
            a = edited[col]
            s["domain_override"] = replace_attribute(
                edited, numeric_spec_attribute(col, new, DEFAULT_NUMERIC_BINS, a.na, a.dtype)).to_json()
        else:
            s["domain_override"] = None
    s["dp_bins"] = {c: v for c, v in (s.get("dp_bins") or {}).items() if c != col}
    s["domain_confirmed"] = False
    st.rerun()


def _init(key: str, value) -> str:
    """A widget's starting value for this table (set once; the key names the table)."""
    if key not in st.session_state:
        st.session_state[key] = value
    return key


def _editor_dp_edges(col: str) -> dict | None:
    """The table editor's DP edges of ``col`` (public bounds, edges found privately at release), or None."""
    spec = (st.session_state.get("dp_bins") or {}).get(col)
    return spec if isinstance(spec, dict) and spec.get("lower") is not None and spec.get("upper") is not None \
        else None


def _codebook_bounds(col: str, spec, cols) -> None:
    c2, c3, c4, c5 = cols
    lo0, hi0 = (f"{x:g}" for x in spec["bounds"]) if isinstance(spec, dict) else ("", "")
    dp = _editor_dp_edges(col)
    if dp is not None and spec is None:
        # the table editor declared these bounds with DP edges: the boxes show them, not empty ones
        lo0, hi0 = f"{float(dp['lower']):g}", f"{float(dp['upper']):g}"
        lo_key, hi_key = state.numeric_key("lo", col), state.numeric_key("hi", col)
        if not st.session_state.get(lo_key) and not st.session_state.get(hi_key):
            # empty boxes (drawn before the editor's edges) show the editor's bounds and bins
            st.session_state[lo_key], st.session_state[hi_key] = lo0, hi0
            st.session_state[state.numeric_key("bins", col)] = int(dp.get("bins", DEFAULT_NUMERIC_BINS))
        st.caption(f"Set in the table editor (below): public bounds [{lo0}, {hi0}] with "
                   f"{METHOD_MODE[spec_method(dp)]} found at release. “Use these bounds” replaces them by "
                   "equal-width bins.")
    lo = c2.text_input("lower bound", key=_init(state.numeric_key("lo", col), lo0), placeholder="from the codebook",
                       help="A lower bound you would publish: from a codebook or the survey's design, never read "
                            "from the data. Values below it are clamped into the first bin.")
    hi = c3.text_input("upper bound", key=_init(state.numeric_key("hi", col), hi0), placeholder="from the codebook",
                       help="An upper bound you would publish. Values above it are clamped into the last bin.")
    k0 = int(spec.get("bins", DEFAULT_NUMERIC_BINS)) if isinstance(spec, dict) else DEFAULT_NUMERIC_BINS
    k = c4.number_input("bins", min_value=1, max_value=200, key=_init(state.numeric_key("bins", col), k0),
                        help="Equal-width bins over [lower, upper].")
    if c5.button("Use these bounds", key=state.numeric_key("usebounds", col),
                 type="primary" if spec is None and dp is None else "secondary",
                 help="Declares [lower, upper] public for this column, cut into equal-width bins. You still confirm "
                      "the whole domain below."):
        try:
            new = parse_codebook_bounds(col, lo, hi, k)
        except dpcore.DPCoreError as exc:
            st.error(str(exc), icon=":material/warning:")
            return
        _use(col, new)


def _codebook_edges(col: str, spec, cols) -> None:
    default = ",".join(f"{x:g}" for x in spec) if isinstance(spec, list) else ""
    txt = cols[0].text_input("edges", key=_init(state.numeric_key("edges", col), default),
                             placeholder="e.g. 0,18,30,65,120",
                             help="Increasing, comma-separated public bin edges covering every value.")
    if txt.strip():
        try:
            new = [float(x) for x in txt.split(",") if x.strip()]
        except ValueError:
            st.error(f"column '{col}': edges must be numbers separated by commas; got {txt!r}")
            return
        if new != spec:
            _use(col, new)


def _private(col: str, cols) -> None:
    s = st.session_state
    spec = design.private_numeric(s.get("dp_bins")).get(col, {})
    k = cols[0].number_input("bins", min_value=2, max_value=100,
                             key=_init(state.numeric_key("pbins", col), int(spec.get("bins", DEFAULT_NUMERIC_BINS))),
                             help="At most how many bins the release cuts this column into, at bounds and edges it "
                                  "finds privately.")
    if spec and int(k) != int(spec.get("bins", 0)):
        s["dp_bins"] = {**(s.get("dp_bins") or {}), col: {"bins": int(k)}}
        s["domain_confirmed"] = False
        st.rerun()
    st.caption(f"The release finds the bounds of {col} under differential privacy, then {private_bins(int(k))} "
               f"inside them, charged to its ledger ({bins_share():.0%} of ε, shared with the other columns binned "
               "privately). Until then the preview uses bins over the data's own range: curator-only, never "
               "released.")


def _curator_checks(col: str, values: pd.Series, spec) -> None:
    """NOT DP (curator-only): the fullest bin's share of the records, and the records clamped."""
    try:
        edges = numeric_spec_edges(col, spec, DEFAULT_NUMERIC_BINS)
    except dpcore.DPCoreError:
        return
    occ = bin_occupancy(values, edges)
    if occ["top_share"] > CROWDED_SHARE:
        lo, hi = occ["top_bin"]
        st.warning(f"NOT DP, curator-only: {occ['top_share']:.0%} of the records of {col} fall in one bin, "
                   f"[{lo:g}, {hi:g}): the release keeps little of this column. Type narrower codebook bounds or "
                   "more bins, or choose “find privately”.", icon=":material/stacked_bar_chart:")
    clamped = occ["below"] + occ["above"]
    if clamped:
        st.caption(f":red[NOT DP, curator-only: {clamped:,} record(s) of {col} lie outside [{edges[0]:g}, "
                   f"{edges[-1]:g}] ({occ['below']:,} below, {occ['above']:,} above) and are clamped into the end "
                   "bins.]")


def render_numeric_columns(raw: pd.DataFrame, status) -> None:
    """The Numeric columns panel; ``status(col)`` is the column's bins in a few words."""
    s = st.session_state
    cols = numeric_columns(raw)
    if not cols:
        return
    binned = {c for c in cols if raw[c].nunique() > DEFAULT_MAX_INT_LEVELS}
    labels = {PRIVATE: f"{PRIVATE} (spends {bins_share():.0%} of ε)"}
    with st.expander(f"Numeric columns ({len(cols)}): codebook bounds, found privately, or dropped",
                     expanded=bool(binned or s.get("numeric"))):
        st.caption(
            f"Numeric columns with more than {DEFAULT_MAX_INT_LEVELS} distinct values are cut into bins whose edges "
            "must be public. For each: type **codebook bounds** (a range you would publish, e.g. a codebook's 0–120 "
            "for age: never one read from the data), let the release **find** the bounds and bins **privately** "
            "(a share of ε, charged to its ledger), or **drop** the column. Until then its bins span the data's own "
            "min–max, which is NOT public, and the domain cannot be confirmed. Values outside the bounds are clamped "
            "into the end bins; values are drawn uniformly inside their bin on release.")
        if design.finds_domain_privately(state.cfg()):
            st.info("The release finds the whole domain privately (below): these choices apply only if you "
                    "declare the domain instead.", icon=":material/lock:")
        for col in cols:
            options = [CODEBOOK, PRIVATE, DROP, EDGES] if col in binned else [LEVELS, CODEBOOK, PRIVATE, DROP, EDGES]
            choice = current_choice(col, col in binned)
            key = state.numeric_key("numkind", col)
            s[key] = choice  # the widget shows the choice as it stands (the drop list may have changed it)
            st.markdown(f"**{col}**: {status(col)}")
            st.radio(f"Bins of {col}", options, key=key, horizontal=True, on_change=_on_choice, args=(col,),
                     format_func=lambda o: labels.get(o, o), help="How this column's domain is declared.")
            spec = (s.get("numeric") or {}).get(col)
            if choice == CODEBOOK:
                _codebook_bounds(col, spec, st.columns([1.4, 1.4, 0.8, 1.6], vertical_alignment="bottom"))
            elif choice == EDGES:
                _codebook_edges(col, spec, st.columns([2, 3]))
            elif choice == PRIVATE:
                _private(col, st.columns([1, 4]))
            elif choice == DROP:
                st.caption(f"{col} is not synthesised and not released.")
            if choice in (CODEBOOK, EDGES) and spec is not None:
                _curator_checks(col, raw[col], spec)


def render_private_domain() -> None:
    """The one click that lets the release find the whole domain privately (under (ε, δ) only)."""
    with st.container(border=True):
        st.markdown("**The whole table, privately**")
        _private_domain(state.cfg())


#: The private domain's two binnings of a numeric column inside its DP bounds, in words (design "domain_bins").
DOMAIN_BINS_LABELS = {
    PRIVTREE: f"PrivTree: the DP bounds are split in halves while a noisy count finds more than about "
              f"{PRIVTREE_THETA_SHARE:.0%} of the records in a half (narrow bins where records crowd, wide ones "
              f"elsewhere; at most {PRIVTREE_MAX_DEPTH} halvings)",
    QUANTILES: f"DP quantiles: {DEFAULT_NUMERIC_BINS} bins whose edges are DP quantiles inside the DP bounds "
                 "(about equal numbers of records in each)",
}
assert set(DOMAIN_BINS_LABELS) == set(BIN_METHODS)


def _on_domain_bins() -> None:
    s = st.session_state
    state.cfg()["domain_bins"] = s["w_domain_bins"]
    s.pop("release", None)  # a release made with the other binning is not this design's


def _domain_bins_choice(c: dict, disabled: bool) -> None:
    """The private domain's binning of numeric columns (passed to synthesize as ``domain_bins``)."""
    share = design.domain_share(c)
    st.session_state["w_domain_bins"] = design.domain_bins(c)  # the radio shows the design as it stands
    st.radio("Numeric columns: bins inside their DP bounds", list(DOMAIN_BINS_LABELS), key="w_domain_bins",
             format_func=DOMAIN_BINS_LABELS.__getitem__, on_change=_on_domain_bins, disabled=disabled,
             help="How the release cuts each numeric column once it has found the column's bounds privately.")
    st.caption(f"Either choice spends the same ε: the domain's {share:.0%} of ε is split by what each column "
               f"needs (a numeric column twice a text column's part; true/false and declared levels nothing: the "
               f"forecast below shows each part); a numeric column spends {BOUNDS_SHARE:.0%} of its part on its DP "
               "bounds, "
               f"{REFINE_SHARE:.0%} on narrowing them ({REFINE_BINS} bins, on tables large enough) and the rest "
               f"on these bins, all charged to the release's ledger (group “DP domain”) and the choice recorded in "
               f"its manifest. A whole-number column whose DP bounds hold at most {MAX_WHOLE_BINS} numbers gets one "
               "bin per number instead, and the bins' share goes to the synthetic sets.")


def _private_domain(c: dict) -> None:
    share = design.domain_share(c)
    if design.finds_domain_privately(c):
        st.success(f"The whole domain (categorical levels, numeric bounds and bins) is found privately at release, "
                   f"spending {share:.0%} of ε under (ε, δ), charged to the release's ledger and shown in its "
                   "manifest. Nothing needs confirming; the tables below are the curator's view of the data.",
                   icon=":material/lock:")
        _domain_bins_choice(c, disabled=False)
        if st.button("Declare the domain instead", key="w_dp_domain_off"):
            c["dp_domain"] = False
            st.rerun()
        return
    zcdp = c.get("definition") == "zcdp"
    if st.button(f"Find the domain privately (spends {share:.0%} of ε)", key="w_dp_domain", disabled=not zcdp,
                 help="The release finds every column's levels, bounds and bins under (ε, δ)-DP: levels whose "
                      "noisy count passes a threshold are kept, the rare ones go to “other”."):
        c["dp_domain"], c["domain_share"] = True, share
        s = st.session_state
        s["domain_confirmed"] = False
        s.pop("release", None)
        st.rerun()
    if not zcdp:
        st.caption("Under pure ε-DP (the design's privacy definition now) categorical levels must still be "
                   "declared: whether a rare level occurs at all tells about the one person who holds it. Releasing "
                   "only the levels whose noisy count passes a threshold lets such a level through with a small "
                   "probability δ, which pure ε does not allow. Numeric columns can still be found privately, one "
                   "by one (Numeric columns, above). Choose (ε, δ) on the Design page to find the whole domain "
                   "privately.")
