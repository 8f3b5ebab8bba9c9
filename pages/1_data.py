"""Data: load a table (upload or demo), review its schema, declare the public domain."""
from __future__ import annotations

import json

import pandas as pd
import streamlit as st

import dpcore
from dpcore.data.inference import DEFAULT_MAX_LEVELS
from dpcore.measure.quantiles import PRIVTREE
from dpcore.studio import design
from pages.components import book_panel, column_types, data_server, domain_forecast, guard, privacy_unit, session, state
from pages.components.domain_editor import METHOD_MODE, render_domain_editor, spec_method
from pages.components.numeric_columns import private_bins, render_numeric_columns, render_private_domain

s = st.session_state
session.init_state()

#: The domain table's "bin edges from" column (dpcore.data.domain.EDGE_ORIGINS, in a few words).
EDGES_FROM = {"declared": "public edges", "public_bounds": "public bounds", "dp_quantiles": "DP quantiles",
              "dp_privtree": "DP PrivTree bins", "dp_bounds": "DP bounds and bins",
              "data_range": "data's min–max: NOT public", "unstated": "not stated: NOT public"}

st.title("1 · Data")
st.caption("The curator is trusted and may see the raw data. Nothing on this page is released; "
           "the domain you confirm here is what the release treats as public.")


def _on_demo():
    try:
        session.load_demo(s["w_demo"])
        s.pop("upload_error", None)
    except Exception as exc:  # callbacks must not raise into the page
        s["load_error"] = str(exc) if isinstance(exc, dpcore.DPCoreError) else f"could not load the demo ({exc})"


def _on_upload():
    f = s.get("w_upload")
    if f is None:
        return
    # the whole load, set_data included, is guarded: a callback must never raise into the page
    try:
        df = state.read_upload(f.getvalue(), f.name)
    except dpcore.DPCoreError as exc:
        s["upload_error"] = _rejected(str(exc))
        return
    except Exception as exc:  # a file the readers did not anticipate
        s["upload_error"] = _rejected(f"'{f.name}' could not be read ({type(exc).__name__}: {exc}). Save it as UTF-8 "
                                      "CSV with a header line, or as Parquet, and upload it again.")
        return
    try:
        session.set_data(df, f"upload: {f.name}")
    except Exception as exc:  # a callback must never raise into the page
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


with guard.guarded("loading data"):
    left, right = st.columns([1, 1])
    with left:
        st.subheader("Demo data")
        names = list(state.DEMOS)
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
            f"CSV, Parquet, SPSS, Stata, SAS or Excel (limit {state.MAX_UPLOAD_MB} MB per file)",
            type=["csv", "parquet", "pq", "sav", "zsav", "dta", "sas7bdat", "xlsx"],
            key="w_upload", on_change=_on_upload,
            help=f"Uploads up to {state.MAX_UPLOAD_MB} MB (server.maxUploadSize in .streamlit/config.toml). "
                 "The file stays on this server in your session only; it is never shared with other sessions.",
        )
        if s.get("upload_error"):
            st.error(s["upload_error"], icon=":material/warning:")
    if s.get("load_error"):
        st.error(s["load_error"], icon=":material/warning:")

data_server.render()  # long files on the server, counted with DuckDB

if "raw_df" not in s:
    st.stop()

raw: pd.DataFrame = s["raw_df"]

with guard.guarded("the budget book's question"):
    book_panel.charge_prompt()  # a table that looks like one the book knows: charged to it unless you say otherwise

with guard.guarded("the schema table"):
    st.subheader(f"Schema: {len(raw):,} rows × {raw.shape[1]} columns")
    for note in design.table_shape_notes(len(raw), raw.shape[1]):
        st.info(note, icon=":material/info:")
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
    # given public bins, or bins found privately: not an identifier
    binned = list(s.get("numeric") or {}) + list(design.private_numeric(s.get("dp_bins")))
    binned_publicly = schema["column"].isin(binned)
    unit = state.unit_column()  # the privacy unit's identifier: never released, so no longer a problem
    idlike = schema.loc[schema["identifier-like"] & ~schema["dropped"] & ~binned_publicly
                        & (schema["column"] != unit), "column"].tolist()
    if idlike:
        st.warning(f"Identifier-like column(s): {', '.join(idlike)} — nearly every value is distinct. "
                   "Drop them (or declare numeric bins) before synthesising.", icon=":material/badge:")

    drop = st.multiselect(
        "Drop columns", list(map(str, raw.columns)), default=[c for c in s.get("drop_cols", []) if c in raw.columns],
        help="Dropped columns are not synthesised and not released. Drop identifiers and free text.",
    )
    if sorted(drop) != sorted(s.get("drop_cols", [])):
        state.set_drops(drop)
        st.rerun()

with guard.guarded("the column types"):
    column_types.render(raw)

with guard.guarded("the privacy unit"):
    privacy_unit.render(raw, state.domain_status()[0])

df = state.domain_df()  # the table the domain describes: the privacy unit's identifier is never released


def _edges_status(col: str, a) -> str:
    """One column's bins in a few words, from the domain as it stands."""
    if col in s.get("drop_cols", []):
        return "dropped: not synthesised, not released"
    private = design.private_numeric(s.get("dp_bins")).get(col)
    if private:
        return f":violet[found privately at release: {private_bins(int(private['bins']))}]"
    if a is None:
        return "not in the domain (see the error below)"
    if a.kind == "categorical":
        return "levels read from the data (confirm below)"
    if not a.edges_public:
        return f":red[{EDGES_FROM[a.origin]}]"
    if a.origin == "declared":
        shown = ", ".join(f"{e:g}" for e in a.edges[:8]) + (", …" if len(a.edges) > 8 else "")
        return f":green[public edges {shown}]"
    spec = (s.get("dp_bins") or {}).get(a.name)
    dp = f" ({METHOD_MODE[spec_method(spec)]} at release)" if spec else ""
    # PrivTree stops splitting where the data are sparse: the release has at most the bins asked for
    most = "at most " if spec and spec_method(spec) == PRIVTREE else ""
    return f":green[public bounds [{a.edges[0]:g}, {a.edges[-1]:g}], {most}{len(a.edges) - 1} bins{dp}]"


with guard.guarded("numeric binning"):
    numeric = {c: v for c, v in (s.get("numeric") or {}).items() if isinstance(v, (list, dict))}
    if numeric != (s.get("numeric") or {}):  # a malformed setting (not edges, not bounds) is forgotten
        s["numeric"], s["domain_override"], s["domain_confirmed"] = numeric, None, False
        st.rerun()
    now, _ = state.domain_status()  # the domain as it stands (edits in the table editor included)
    shown = {a.name: a for a in now.attributes} if now is not None else {}
    unit = state.unit_column()
    render_numeric_columns(raw.drop(columns=[unit]) if unit else raw, lambda col: _edges_status(col, shown.get(col)))

with guard.guarded("the private domain"):
    render_private_domain()

with guard.guarded("the private domain's forecast"):
    domain_forecast.panel()

with guard.guarded("the domain"):
    st.subheader("Public domain")
    dom, err = state.domain_status()
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
        private = design.private_numeric(s.get("dp_bins"))
        for a in dom.attributes:
            found = a.name in private  # its placeholder bins span the data's range: not shown as the domain's
            rows.append({
                "attribute": a.name, "kind": a.kind, "levels": a.size,
                "bin edges from": "found privately at release" if found else EDGES_FROM.get(a.origin, ""),
                "NA level": a.na,
                "values": "bounds and bins found by the release" if found else
                          ", ".join(a.labels[:12]) + (" …" if a.size > 12 else ""),
            })
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
        kind, note = design.cells_note(dom.size, len(df))
        {"warning": lambda t: st.warning(t, icon=":material/grid_on:"), "info": st.info,
         "caption": st.caption}[kind](note)
        from_data = [a.name for a in dom.not_public if a.name not in private]
        if from_data and not design.finds_domain_privately(state.cfg()):  # else the release finds them privately
            st.warning(f"Numeric column(s) {', '.join(from_data)}: bins span the data's observed min–max, which is "
                       "NOT public. Type codebook bounds, find them privately or drop each (Numeric columns, above), "
                       "or use DP edges (table editor, below): until then the domain cannot be confirmed.",
                       icon=":material/warning:")
        if design.finds_domain_privately(state.cfg()):
            st.info("Nothing to confirm: the release finds the whole domain privately (above).",
                    icon=":material/lock:")
        elif not state.is_declared(dom):
            st.warning(f"Levels {dpcore.data.domain.INFERRED}. Levels read from the data leak rare values: a release "
                       "on this domain is labelled NOT DP until you confirm it.", icon=":material/warning:")
            if st.button("Confirm: these names, levels and bin edges are public", type="primary",
                         help="Declares the domain public knowledge. Only confirm levels you would publish anyway "
                              "(codebook categories, fixed age bands); the release's DP guarantee is given this "
                              "domain. Refused while a numeric column's bins come from the data."):
                if from_data:  # edges read from the data are never declared public
                    s["_confirm_refused"] = (
                        f"Not confirmed: the bins of {', '.join(from_data)} span the data's own min–max, which is "
                        "not public. Under Numeric columns, type codebook bounds (then “Use these bounds”) or choose "
                        f"“find privately” for {'it' if len(from_data) == 1 else 'each'} (or DP edges in the "
                        f"table editor), or drop {'it' if len(from_data) == 1 else 'them'}.")
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

with guard.guarded("the domain editor"):
    if dom is not None:
        render_domain_editor(dom, df)

with guard.guarded("the data preview"):
    with st.expander("First rows of the table (curator only)"):
        guard.not_dp_label("NOT FOR RELEASE — raw data, curator only")
        st.dataframe(raw.head(20), width="stretch")
