"""Data: load a table (upload or demo), review its schema, declare the public domain."""
from __future__ import annotations

import json

import pandas as pd
import streamlit as st

import dpcore
from dpcore.data.domain import (
    DEFAULT_MAX_INT_LEVELS,
    DEFAULT_MAX_LEVELS,
    DEFAULT_NUMERIC_BINS,
    numeric_spec_attribute,
)
from dpcore.data.editing import replace_attribute
from dpcore.synthesizers.cells import DEFAULT_MAX_CELLS
from pages import _common as ui
from pages import _data_server
from pages._domain_editor import render_domain_editor

s = st.session_state
ui.init_state()

#: The numeric-column choice of k equal-width bins over public bounds.
BOUNDS = "public bounds"
#: The domain table's "bin edges from" column (dpcore.data.domain.EDGE_ORIGINS, in a few words).
EDGES_FROM = {"declared": "public edges", "public_bounds": "public bounds", "dp_quantiles": "DP quantiles",
              "data_range": "data's min–max: NOT public", "unstated": "not stated: NOT public"}

st.title("1 · Data")
st.caption("The curator is trusted and may see the raw data. Nothing on this page is released; "
           "the domain you confirm here is what the release treats as public.")


def _on_demo():
    try:
        ui.load_demo(s["w_demo"])
        s.pop("upload_error", None)
    except Exception as exc:  # noqa: BLE001 - callbacks must not raise into the page
        s["load_error"] = str(exc) if isinstance(exc, dpcore.DPCoreError) else f"could not load the demo ({exc})"


def _on_upload():
    f = s.get("w_upload")
    if f is None:
        return
    # the whole load, set_data included, is guarded: a callback must never raise into the page
    try:
        df = ui.read_upload(f.getvalue(), f.name)
    except dpcore.DPCoreError as exc:
        s["upload_error"] = _rejected(str(exc))
        return
    except Exception as exc:  # noqa: BLE001 - a file the readers did not anticipate
        s["upload_error"] = _rejected(f"'{f.name}' could not be read ({type(exc).__name__}: {exc}). Save it as UTF-8 "
                                      "CSV with a header line, or as Parquet, and upload it again.")
        return
    try:
        ui.set_data(df, f"upload: {f.name}")
    except Exception as exc:  # noqa: BLE001 - a callback must never raise into the page
        s["upload_error"] = (str(exc) if isinstance(exc, dpcore.DPCoreError) else
                             f"'{f.name}' could not be loaded ({type(exc).__name__}: {exc}); upload it again")
        return
    s.pop("upload_error", None)


def _rejected(message: str) -> str:
    """The reader's one-line refusal, and which table stays in use (the uploader still shows the
    rejected file's name, so the page says plainly that it was not loaded)."""
    message = message.rstrip(". ")
    if "raw_df" not in s:
        return f"{message}. No table is loaded."
    raw = s["raw_df"]
    return (f"{message}. Not loaded: the table in use is still “{s.get('data_name', '')}” "
            f"({len(raw):,} rows × {raw.shape[1]} columns).")


with ui.guarded("loading data"):
    left, right = st.columns([1, 1])
    with left:
        st.subheader("Demo data")
        names = list(ui.DEMOS)
        current = s.get("data_name")
        st.selectbox(
            "Bundled demo", names, index=names.index(current) if current in names else 0, key="w_demo",
            on_change=_on_demo,
            help="Public extracts shipped in assets/ (provenance in assets/README.md). They stand in for a "
                 "confidential table: the raw rows are visible to you, the curator, only.",
        )
        if st.button("Load this demo", help="Replace the current table with the selected demo."):
            _on_demo()
    with right:
        st.subheader("Upload")
        st.file_uploader(
            f"CSV, Parquet, SPSS, Stata, SAS or Excel (limit {ui.MAX_UPLOAD_MB} MB per file)",
            type=["csv", "parquet", "pq", "sav", "zsav", "dta", "sas7bdat", "xlsx"],
            key="w_upload", on_change=_on_upload,
            help=f"Uploads up to {ui.MAX_UPLOAD_MB} MB (server.maxUploadSize in .streamlit/config.toml). "
                 "The file stays on this server in your session only; it is never shared with other sessions.",
        )
        if s.get("upload_error"):
            st.error(s["upload_error"], icon=":material/warning:")
    if s.get("load_error"):
        st.error(s["load_error"], icon=":material/warning:")

_data_server.render()  # long files on the server, counted with DuckDB

if "raw_df" not in s:
    st.stop()

raw: pd.DataFrame = s["raw_df"]

with ui.guarded("the schema table"):
    st.subheader(f"Schema: {len(raw):,} rows × {raw.shape[1]} columns")
    if raw.attrs.get("delimiter", "comma") != "comma":
        st.caption(f"Read as {raw.attrs['delimiter']}-separated values.")
    if raw.attrs.get("format"):  # SPSS, Stata, SAS or Excel (dpcore.data.formats)
        labelled = ", ".join(raw.attrs.get("value_labels") or {})
        st.caption(f"Read as a {raw.attrs['format']} file"
                   + (f" (sheet '{raw.attrs['sheet']}')" if raw.attrs.get("sheet") else "")
                   + (f"; value labels became the levels of: {labelled}." if labelled else "."))
    schema = pd.DataFrame({
        "column": [str(c) for c in raw.columns],
        "type": [str(t) for t in raw.dtypes],
        "levels": [int(raw[c].nunique(dropna=True)) for c in raw.columns],
        "missing": [int(raw[c].isna().sum()) for c in raw.columns],
    })
    n = max(len(raw), 1)
    is_num = pd.Series([pd.api.types.is_numeric_dtype(t) and not pd.api.types.is_bool_dtype(t) for t in raw.dtypes])
    non_missing = n - schema["missing"]
    # numeric columns get bins, so only an all-distinct one (a running number) looks like an identifier
    schema["identifier-like"] = (
        (~is_num & ((schema["levels"] > DEFAULT_MAX_LEVELS) | ((schema["levels"] >= 0.9 * n) & (n >= 20))))
        | (is_num & (schema["levels"] == non_missing) & (n >= 20))
    )
    schema["dropped"] = schema["column"].isin(s.get("drop_cols", []))
    st.dataframe(schema, hide_index=True, width="stretch")
    binned_publicly = schema["column"].isin(list(s.get("numeric") or {}))  # given public bins: not an identifier
    idlike = schema.loc[schema["identifier-like"] & ~schema["dropped"] & ~binned_publicly, "column"].tolist()
    if idlike:
        st.warning(f"Identifier-like column(s): {', '.join(idlike)} — nearly every value is distinct. "
                   "Drop them (or declare numeric bins) before synthesising.", icon=":material/badge:")

    drop = st.multiselect(
        "Drop columns", list(map(str, raw.columns)), default=[c for c in s.get("drop_cols", []) if c in raw.columns],
        help="Dropped columns are not synthesised and not released. Drop identifiers and free text.",
    )
    if sorted(drop) != sorted(s.get("drop_cols", [])):
        s["drop_cols"] = drop
        s["domain_override"] = None
        s["domain_confirmed"] = False
        s.pop("release", None)
        st.rerun()

df = ui.work_df()


def _edges_status(a) -> str:
    """One column's bins in a few words, from the domain as it stands."""
    if a is None:
        return "not in the domain (see the error below)"
    if a.kind == "categorical":
        return "levels read from the data (confirm below)"
    if not a.edges_public:
        return f":red[{EDGES_FROM[a.origin]}]"
    if a.origin == "declared":
        shown = ", ".join(f"{e:g}" for e in a.edges[:8]) + (", …" if len(a.edges) > 8 else "")
        return f":green[public edges {shown}]"
    dp = " (DP quantile edges at release)" if a.name in (s.get("dp_bins") or {}) else ""
    return f":green[public bounds [{a.edges[0]:g}, {a.edges[-1]:g}], {len(a.edges) - 1} bins{dp}]"


def _use_numeric(numeric: dict, col: str | None = None) -> None:
    """Keep the columns' public edges or bounds; the domain needs confirming again. An edited
    domain (table editor, JSON) keeps its other edits: only ``col``'s attribute is replaced."""
    s["numeric"] = numeric
    override = s.get("domain_override")
    if override and col in numeric:
        edited = dpcore.Domain.from_json(override, declared=False)
        if col in edited.names:
            a = edited[col]
            s["domain_override"] = replace_attribute(
                edited, numeric_spec_attribute(col, numeric[col], DEFAULT_NUMERIC_BINS, a.na, a.dtype)).to_json()
            s["dp_bins"] = {c: v for c, v in (s.get("dp_bins") or {}).items() if c != col}
        else:
            s["domain_override"] = None
    else:
        s["domain_override"] = None
    s["domain_confirmed"] = False
    st.rerun()


with ui.guarded("numeric binning"):
    num_cols = [str(c) for c in df.columns
                if pd.api.types.is_numeric_dtype(df[c].dtype) and not pd.api.types.is_bool_dtype(df[c].dtype)]
    if num_cols:
        numeric = {c: v for c, v in (s.get("numeric") or {}).items() if isinstance(v, (list, dict))}
        if numeric != (s.get("numeric") or {}):  # a malformed setting (not edges, not bounds) is forgotten
            _use_numeric(numeric)
        binned = {c for c in num_cols if df[c].nunique() > DEFAULT_MAX_INT_LEVELS}
        # open while any column is binned: its status (data range or public bounds) is shown inside
        with st.expander(f"Numeric columns ({len(num_cols)}): public bin edges or bounds",
                         expanded=bool(binned or numeric)):
            st.caption(
                f"Numeric columns with more than {DEFAULT_MAX_INT_LEVELS} distinct values are cut into bins, whose "
                "edges must be public. Until you give a column public bounds (or edges), its bins span the data's "
                "own min–max, which is NOT public, and the domain cannot be confirmed. The suggested bounds are "
                "the data's range rounded outward to a power of ten: they still come from the data (curator-side), "
                "so use them only if that range is public knowledge, e.g. a codebook's. Values are drawn uniformly "
                "inside their bin on release.")
            now, _ = ui.domain_status()  # the domain as it stands (edits in the table editor included)
            shown = {a.name: a for a in now.attributes} if now is not None else {}
            for col in num_cols:
                spec = numeric.get(col)
                kinds = ([BOUNDS, "public edges"] if col in binned else ["levels", "public edges", BOUNDS])
                kind0 = (kinds.index("public edges") if isinstance(spec, list)
                         else kinds.index(BOUNDS) if isinstance(spec, dict) else 0)
                st.markdown(f"**{col}**: {_edges_status(shown.get(col))}")
                c1, c2, c3, c4, c5 = st.columns([1.6, 1.7, 1.7, 0.8, 2], vertical_alignment="bottom")
                kind = c1.selectbox(f"Bins of {col}", kinds, index=kind0, key=f"w_numkind_{col}",
                                    help="How this column's domain is declared.")
                if kind == "public edges":
                    default = ",".join(f"{x:g}" for x in spec) if isinstance(spec, list) else ""
                    txt = c2.text_input("edges", value=default, key=f"w_edges_{col}", placeholder="e.g. 0,18,30,65,120",
                                        help="Increasing, comma-separated public bin edges covering every value.")
                    if txt.strip():
                        try:
                            new = [float(x) for x in txt.split(",") if x.strip()]
                        except ValueError:
                            st.error(f"column '{col}': edges must be numbers separated by commas; got {txt!r}")
                            new = spec
                        if new != spec:
                            numeric[col] = new
                            _use_numeric(numeric, col)
                elif kind == BOUNDS:
                    lo0, hi0 = spec["bounds"] if isinstance(spec, dict) else (None, None)
                    lo = c2.number_input("lower bound", value=lo0, key=f"w_lo_{col}",
                                         help="Public lower bound (values below it are refused, not clipped).")
                    hi = c3.number_input("upper bound", value=hi0, key=f"w_hi_{col}",
                                         help="Public upper bound.")
                    k = c4.number_input("bins", min_value=1, max_value=200,
                                        value=int(spec.get("bins", DEFAULT_NUMERIC_BINS) if isinstance(spec, dict)
                                                  else DEFAULT_NUMERIC_BINS),
                                        key=f"w_bins_{col}", help="Equal-width bins over [lower, upper].")
                    new = {"bounds": [float(lo), float(hi)], "bins": int(k)}
                    if c5.button("Use these public bounds", key=f"w_usebounds_{col}", disabled=new == spec,
                                 type="primary" if spec is None else "secondary",
                                 help="Declares [lower, upper] public for this column, cut into equal-width bins. "
                                      "You still confirm the whole domain below."):
                        numeric[col] = new
                        _use_numeric(numeric, col)
                elif spec is not None:  # back to levels
                    numeric.pop(col, None)
                    _use_numeric(numeric)

with ui.guarded("the domain"):
    st.subheader("Public domain")
    dom, err = ui.domain_status()
    if err:
        st.error(err, icon=":material/warning:")
        if s.get("domain_override"):
            if st.button("Reset to the domain inferred from the data",
                         help="Forget the uploaded or edited domain and infer one from the data again."):
                s["domain_override"] = None
                s["domain_confirmed"] = False
                st.rerun()
    else:
        rows = []
        for a in dom.attributes:
            rows.append({
                "attribute": a.name, "kind": a.kind, "levels": a.size,
                "bin edges from": EDGES_FROM.get(a.origin, ""), "NA level": a.na,
                "values": ", ".join(a.labels[:12]) + (" …" if a.size > 12 else ""),
            })
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
        cells = dom.size
        msg = f"Full cross-tabulation: **{cells:,} cells** ({len(df):,} records)."
        if cells > DEFAULT_MAX_CELLS:
            st.warning(msg + f" That is above the {DEFAULT_MAX_CELLS:,}-cell limit of a dense leaf layer: STEPS "
                       "with few layers and flat Laplace will refuse. Drop or coarsen attributes.",
                       icon=":material/grid_on:")
        elif cells > 100 * len(df):
            st.info(msg + " Most cells are empty: a hierarchy (STEPS) spends the budget better than a flat table.")
        else:
            st.caption(msg)
        from_data = [a.name for a in dom.not_public]
        if from_data:
            st.warning(f"Numeric column(s) {', '.join(from_data)}: bins span the data's observed min–max, which is "
                       "NOT public. Use public bounds or edges for each (Numeric columns, above) or DP quantile edges "
                       "(table editor, below), or drop it: until then the domain cannot be confirmed.",
                       icon=":material/warning:")
        if dom.inferred:
            st.warning(f"Levels {dpcore.data.domain.INFERRED}. Levels read from the data leak rare values: a release "
                       "on this domain is labelled NOT DP until you confirm it.", icon=":material/warning:")
            if st.button("Confirm: these names, levels and bin edges are public", type="primary",
                         help="Declares the domain public knowledge. Only confirm levels you would publish anyway "
                              "(codebook categories, fixed age bands); the release's DP guarantee is given this "
                              "domain. Refused while a numeric column's bins come from the data."):
                if from_data:  # edges read from the data are never declared public
                    s["_confirm_refused"] = (
                        f"Not confirmed: the bins of {', '.join(from_data)} span the data's own min–max, which is "
                        "not public. Click “Use these public bounds” for "
                        f"{'it' if len(from_data) == 1 else 'each'} under Numeric columns (or give public edges, or "
                        f"DP quantile edges in the table editor), or drop {'it' if len(from_data) == 1 else 'them'}.")
                else:
                    s["domain_confirmed"] = True
                    s.pop("_confirm_refused", None)
                st.rerun()
            if s.get("_confirm_refused") and from_data:
                st.error(s["_confirm_refused"], icon=":material/block:")
        else:
            st.success(f"Domain {dpcore.data.domain.DECLARED}.", icon=":material/verified:")
            if st.button("Withdraw confirmation",
                         help="Mark the domain as not yet confirmed; releases are then labelled NOT DP."):
                s["domain_confirmed"] = False
                if s.get("domain_override"):
                    d = json.loads(s["domain_override"])
                    d["source"] = dpcore.data.domain.INFERRED
                    s["domain_override"] = json.dumps(d)
                st.rerun()

    c1, c2 = st.columns(2)
    with c1:
        if dom is not None:
            st.download_button("Download domain.json", dom.to_json(), "domain.json", "application/json",
                               help="Save, review and publish the domain; upload it again to declare it.")
        up = st.file_uploader("Upload domain.json", type=["json"], key="w_domain_upload",
                              help="A domain file you reviewed and marked \"source\": \"declared\" is taken as your "
                                   "declaration that it is public; "
                                   "a file still marked inferred must be confirmed here.")
        if up is not None and s.get("_domain_upload_id") != getattr(up, "file_id", up.name):
            s["_domain_upload_id"] = getattr(up, "file_id", up.name)
            try:
                # the file's own "source" decides: an inferred file uploaded back still needs confirming
                new = dpcore.Domain.from_json(dpcore.data.domain.decode_text(up.getvalue(), "the domain file"))
                s["domain_override"] = new.to_json()
                s["domain_confirmed"] = not new.inferred
                s.pop("domain_upload_error", None)
            except dpcore.DPCoreError as exc:
                s["domain_upload_error"] = str(exc)
            st.rerun()
        if s.get("domain_upload_error"):
            st.error(s["domain_upload_error"], icon=":material/warning:")
    with c2:
        with st.expander("Edit the domain (JSON)"):
            base = dom.to_json() if dom is not None else (s.get("domain_override") or "")
            txt = st.text_area("domain JSON", base, height=260, key=f"w_domain_text_{hash(base)}",
                               help="Add levels that are public but absent from the data, remove rare levels you "
                                    "will recode, or change bin edges. Apply, then confirm.")
            if st.button("Apply edits", help="Check the edited domain against the data. It still needs confirming."):
                try:
                    new = dpcore.Domain.from_json(txt, declared=False)
                    new = dpcore.Domain(new.attributes, dpcore.data.domain.INFERRED)  # edits need confirming
                    s["domain_override"] = new.to_json()
                    s["domain_confirmed"] = False
                    st.rerun()
                except dpcore.DPCoreError as exc:
                    st.error(str(exc), icon=":material/warning:")

with ui.guarded("the domain editor"):
    if dom is not None:
        render_domain_editor(dom, df)

with ui.guarded("the data preview"):
    with st.expander("First rows of the table (curator only)"):
        ui.not_dp_label("NOT FOR RELEASE — raw data, curator only")
        st.dataframe(raw.head(20), width="stretch")
