"""Data page, "table on the server": a long file inside the configured data folder,
counted with DuckDB and released to the output folder without loading it into pandas.

Configured by ``DPSTUDIO_DATA_DIR`` (and optionally ``DPSTUDIO_OUTPUT_DIR``): see the
README, section "Tables on the server". Paths outside the data folder are refused.
"""
from __future__ import annotations

import datetime as dt

import streamlit as st

import dpcore
from dpcore.counting import duckdb_engine as duckdb_counts
from dpcore.data import server_files
from dpcore.data.domain import Domain, not_public_message
from dpcore.output import synthesize_file
from dpcore.release import curator_only_lines
from pages.components import guard


def render() -> None:
    """The "table on the server" expander (a no-op note when no data folder is configured)."""
    s = st.session_state
    with st.expander("Table on the server (long files, counted with DuckDB)", expanded=bool(s.get("srv_release"))):
        with guard.guarded("the table on the server"):
            folder = server_files.data_dir()
            if folder is None:
                st.info("Files too large for an upload are read on the server from one data folder. Set "
                        f"`{server_files.DATA_DIR_ENV}` to that folder and restart the app "
                        "(README: Tables on the server).")
                return
            _form(s, folder)


def _form(s, folder) -> None:
    st.caption(f"Data folder: `{folder}`. The file is counted where it lies by DuckDB (larger than memory if need be); "
               "only the count table reaches the release. Paths outside the folder are refused.")
    tables = server_files.list_tables(folder)
    c1, c2 = st.columns([2, 1])
    picked = c1.selectbox("Table in the data folder", [""] + tables, key="w_srv_table",
                          help="CSV or Parquet files found in the data folder.")
    typed = c1.text_input("or a path inside the data folder", key="w_srv_path", placeholder="e.g. census/2021.parquet")
    memory = c2.text_input("DuckDB memory limit", value="1GB", key="w_srv_memory",
                           help="DuckDB's memory cap; what does not fit spills to a temporary folder.")
    choice = typed.strip() or picked
    if not choice:
        return
    path = server_files.resolve_inside(folder, choice)
    st.write(f"`{path.relative_to(folder)}`: {path.stat().st_size / 2**20:,.1f} MB")

    if st.button("Infer a domain on DuckDB (curator-only, NOT DP)", key="w_srv_infer"):
        with st.status("Reading levels and ranges with DuckDB", expanded=True) as status:
            dom = duckdb_counts.infer_domain(path, memory_limit=memory, progress=status.write)
            status.update(label=f"Domain inferred: {len(dom)} attributes", state="complete")
        s["srv_domain_json"] = dom.to_json()
        s["w_srv_domain"] = s["srv_domain_json"]
    guard.not_dp_label("An inferred domain shows levels and ranges seen in the data: "
                    "NOT DP until you review and declare it.")
    text = st.text_area("Domain (JSON): review, edit, then declare", key="w_srv_domain", height=200)
    try:
        shown = Domain.from_json(text, declared=False) if text.strip() else None
    except dpcore.DPCoreError:
        shown = None  # the release button says what is wrong with the text
    if shown is not None and shown.not_public:
        st.caption(f":red[{not_public_message(shown.not_public)}: they cannot be declared public.] Give each public "
                   "edges (\"edges\": [...], \"origin\": \"declared\") in the JSON, or remove the column.")
    declared = st.checkbox("I declare these levels and bin edges public", key="w_srv_declared")

    c1, c2, c3, c4, c5 = st.columns(5)
    method = c1.selectbox("Method", list(dpcore.METHODS), key="w_srv_method")
    epsilon = c2.number_input("ε", min_value=0.01, max_value=100.0, value=1.0, key="w_srv_eps")
    sets = c3.number_input("sets m", min_value=1, max_value=100, value=1, step=1, key="w_srv_sets")
    fmt = c4.selectbox("format", ["parquet", "csv"], key="w_srv_format")
    seed = c5.number_input("seed (optional)", min_value=0, value=None, step=1, key="w_srv_seed")
    if st.button("Count and release", type="primary", key="w_srv_release", disabled=not text.strip()):
        dom = Domain.from_json(text, declared=bool(declared))
        if declared and dom.not_public:  # refused before anything is counted or spent
            raise dpcore.DomainError(
                f"Not declared: {not_public_message(dom.not_public)}. In the JSON above give each of them public "
                "edges with \"origin\": \"declared\", or remove the column from the file; nothing was released")
        out = server_files.output_dir() / f"{path.stem}-{method}-{dt.datetime.now():%Y%m%d-%H%M%S}"
        with st.status("Counting with DuckDB and releasing", expanded=True) as status:
            rel = synthesize_file(path, out, method, float(epsilon), sets=int(sets), domain=dom,
                                  seed=None if seed is None else int(seed), engine="duckdb", memory_limit=memory,
                                  format=fmt, progress=status.write)
            status.update(label=f"Released to {out}", state="complete")
        s["srv_release"] = {"out": str(out), "files": [str(p) for p in rel.sets], "dp": rel.dp,
                            "reason": rel.dp_reason, "epsilon": rel.ledger.epsilon,
                            "records": rel.record_count["value"], "timings": rel.timings,
                            "manifest": rel.manifest_json(),
                            "curator_only": curator_only_lines(rel.curator_only)}
    last = s.get("srv_release")
    if last:
        st.success(f"{len(last['files'])} set(s) of {last['records']:,} records written to `{last['out']}`; "
                   f"ε spent {last['epsilon']:g}. Counting took {last['timings'].get('count', 0):.1f} s.")
        if last["dp"]:
            st.write("DP: " + last["reason"])
        else:
            guard.not_dp_label(last["reason"])
        for line in last.get("curator_only") or []:  # counted in DuckDB's SQL from the raw records: never published
            st.caption(f":red[{line}.]")
        st.download_button("manifest.json", last["manifest"], file_name="manifest.json", key="w_srv_manifest")
