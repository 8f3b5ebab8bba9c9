"""Docs and glossary: the documentation pages of docs/ (the method, its proofs, the glossary) inside
the app, so a term's tooltip can link to its explanation. ``?doc=methods/aim.md`` opens a page,
``&term=mosda`` puts that glossary entry on top."""
from __future__ import annotations

import streamlit as st

from dpcore.errors import DPCoreError
from dpcore.studio.glossary import DOCS, doc_text, rewrite_links, term
from pages.components import glossary as gl
from pages.components import session

session.init_state()

st.title("Docs and glossary", anchor=False)

pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
first = ["glossary.md", "methods/adviser.md", "privacy-model.md"]
pages = [p for p in first if p in pages] + [p for p in pages if p not in first]
wanted = st.query_params.get("doc") or "glossary.md"
if wanted not in pages:
    st.warning(f"No documentation page '{wanted}'; showing the glossary.", icon=":material/warning:")
    wanted = "glossary.md"
choice = st.selectbox("Page", pages, index=pages.index(wanted), key=f"w_doc_{wanted}",
                      help="Every page of the documentation (docs/ in the repository; "
                           "`make docs` builds it as a site).")
if choice != wanted:
    st.query_params["doc"] = choice
    st.query_params.pop("term", None)
    st.rerun()

key = st.query_params.get("term")
if key:
    try:
        t = term(key)
        with st.container(border=True):
            st.markdown(f"**{t.title}** — {t.sentence}")
            st.caption(f"Explained in full in {t.doc_label} ({t.doc}" + (f", section #{t.anchor}" if t.anchor else "")
                       + "), below.")
    except DPCoreError as exc:
        st.warning(str(exc), icon=":material/warning:")

try:
    st.markdown(rewrite_links(doc_text(choice), choice, lambda page, anchor: gl.docs_url(page, anchor)))
except DPCoreError as exc:
    st.error(str(exc), icon=":material/warning:")
