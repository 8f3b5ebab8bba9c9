"""Release page: the release report (dpcore.studio.report) as HTML and PDF downloads.

Two variants, because what may leave the curator's desk differs: the publishable
report (the default) holds only what the release published (statement, ledger, design);
the curator's report, only when ticked, adds utility and risk figures from the raw data,
each under the "curator-only — NOT DP" banner, and says CURATOR-ONLY in its file name
and on every page.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

import dpcore
from dpcore.studio.report import release_report_html, report_filename
from dpcore.studio.report_pdf import find_chromium, html_to_pdf


def render_report_section(release, original: pd.DataFrame) -> None:
    s = st.session_state
    st.subheader("Release report")
    st.caption("One self-contained file for a manager or a data-protection officer: the privacy statement in plain "
               "words, the ledger, the method and design. It opens offline (plotly.js is embedded).")
    raw = st.checkbox("Include utility and risk figures (they read the raw data: curator-only, not covered by ε)",
                      value=False, key="w_report_raw",
                      help="Adds original-vs-synthetic bars, the two-way S_pMSE heat map, SPECKS and replicated "
                           "uniques, each under a curator-only banner; the report is then marked CURATOR-ONLY on "
                           "every page and in its file name. Unticked (the default): a report you may publish.")
    if raw:
        st.caption(":red[The report will be CURATOR-ONLY — NOT DP: do not publish it.]")
    key = (id(release), raw)
    if st.button("Build the report", key="w_report_build",
                 help="Builds the HTML report (a few seconds with the raw-data figures)."):
        with st.status("Building the report …", expanded=False) as status:
            st.write("privacy statement, ledger and design" + (", utility and risk figures" if raw else ""))
            html = release_report_html(release, original if raw else None)
            s["_report"] = {"key": key, "html": html, "pdf": None}
            status.update(label="Report ready", state="complete")
    rep = s.get("_report")
    if not rep or rep.get("key") != key:
        return
    c1, c2 = st.columns(2)
    c1.download_button("Download report (HTML)", rep["html"], report_filename(raw, "html"), "text/html",
                       key="dl_report_html", help="Self-contained; opens in any browser without a network.")
    if find_chromium() is None:
        c2.caption("PDF: needs Chromium on the server (Debian package 'chromium'); the HTML prints to PDF from "
                   "any browser.")
        return
    if rep.get("pdf") is None and c2.button("Make the PDF", key="w_report_pdf",
                                            help="Prints the report with headless Chromium (a few seconds)."):
        import tempfile
        from pathlib import Path

        with st.spinner("Printing the PDF …"):
            with tempfile.TemporaryDirectory() as tmp:
                try:
                    rep["pdf"] = html_to_pdf(rep["html"], Path(tmp) / "report.pdf").read_bytes()
                except dpcore.DPCoreError as exc:
                    st.error(str(exc), icon=":material/warning:")
    if rep.get("pdf") is not None:
        c2.download_button("Download report (PDF)", rep["pdf"], report_filename(raw, "pdf"), "application/pdf",
                           key="dl_report_pdf")
