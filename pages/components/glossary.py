"""Tooltips and links for the terms the pages use, from the glossary (docs/glossary.md via
dpcore.studio.glossary), and links into the app's docs viewer (pages/7_docs.py).

A link keeps the workspace id (``ws``), so the docs open in the same workspace in a new tab."""
from __future__ import annotations

from urllib.parse import quote

import streamlit as st

from dpcore.studio.glossary import term

DOCS_PAGE = "docs"  # url_path of pages/7_docs.py in app.py


def docs_url(doc: str, anchor: str = "", key: str = "") -> str:
    """Address of the docs viewer showing ``doc`` (relative to docs/), and the glossary entry ``key``."""
    ws = st.query_params.get("ws")
    url = (f"{DOCS_PAGE}?doc={quote(doc, safe='/')}" + (f"&term={quote(key)}" if key else "")
           + (f"&ws={quote(ws)}" if ws else ""))
    return url + (f"#{anchor}" if anchor else "")


def link(key: str, label: str | None = None) -> str:
    """A Markdown link to the glossary entry ``key`` (the viewer opens its docs page)."""
    t = term(key)
    return f"[{label or t.title}]({docs_url(t.doc, t.anchor, key)})"


def help_text(*keys: str, lead: str = "") -> str:
    """Tooltip text: ``lead``, then each term's sentence with a link to its docs page."""
    parts = [lead] if lead else []
    for key in keys:
        t = term(key)
        parts.append(f"**{t.title}**: {t.sentence} [More: {t.doc_label}]({docs_url(t.doc, t.anchor, key)})")
    return "\n\n".join(parts)


def terms_line(*keys: str) -> None:
    """A caption listing the terms of a section, each a link to its explanation."""
    st.caption("Terms: " + " · ".join(link(k) for k in keys))


def method_link(method: str, label: str = "More about this method") -> str:
    """A link to a release method's glossary entry (the registry's ``glossary``, dpcore.synthesizers)."""
    from dpcore.synthesizers import REGISTRY

    return link(REGISTRY[method].glossary, label)


#: glossary entries of the options whose entry is not named after the option
_OPTION_TERMS = {"degree": ("degree-k",), "rounds": ("rounds-t",), "max_model_size": ("largest-model",),
                 "consistency": ("nonneg", "wls", "uh-consistency"), "utility": ("aic", "aicgain", "l1uniform"),
                 "layers": ("layers-l",), "r": ("share-r",)}


def option_help(option) -> str:
    """Tooltip of a method option (dpcore.synthesizers.schema.Option): its sentence, default and
    choices, then its glossary entry when the glossary has one, else a link to its docs page."""
    from dpcore.studio.glossary import terms

    keys = _OPTION_TERMS.get(option.name, (option.name.replace("_", "-"),))
    if all(k in terms() for k in keys):
        return help_text(*keys, lead=option.describe())
    doc, _, anchor = option.docs.partition("#")
    return option.describe() + (f"\n\n[More: {doc}]({docs_url(doc, anchor)})" if doc else "")
