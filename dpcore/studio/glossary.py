"""The studio's glossary: one sentence per term and the docs page that explains it, read from
docs/glossary.md (the single source: the app's tooltips and the documentation never differ).

Each entry of docs/glossary.md is a ``### Title`` heading followed by one paragraph: the
sentence the app shows as the term's tooltip, then ``More: [label](page.md#anchor).``.
:func:`terms` reads them; :func:`doc_text` reads a docs page for the app's docs viewer and
:func:`rewrite_links` points its links between docs pages at the viewer.
No Streamlit here.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from dpcore.errors import InputError

__all__ = ["Term", "DOCS", "slug", "terms", "term", "doc_text", "rewrite_links"]

DOCS = Path(__file__).resolve().parents[2] / "docs"
_ENTRY = re.compile(r"^###\s+(.+?)\s*\n(.+?)(?=^#|\Z)", re.M | re.S)
_MORE = re.compile(r"\s*More:\s*\[([^\]]+)\]\(([^)\s]+)\)\.?\s*$", re.S)
_LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")


@dataclass(frozen=True)
class Term:
    """A glossary entry: ``key`` (the heading's anchor), ``title``, the one-sentence ``sentence``,
    and the docs page (``doc``, relative to docs/, with its ``anchor``) that explains it."""

    key: str
    title: str
    sentence: str
    doc: str
    anchor: str
    doc_label: str


def slug(heading: str) -> str:
    """A heading's anchor, as tests/test_docs.py computes it (MkDocs' toc, markup removed)."""
    text = re.sub(r"[`*_]", "", heading)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


@lru_cache(maxsize=4)
def terms(path: str | None = None) -> dict[str, Term]:
    """Every entry of the glossary, by key (the heading's anchor)."""
    text = Path(path or DOCS / "glossary.md").read_text(encoding="utf-8")
    out = {}
    for title, body in _ENTRY.findall(text):
        body = " ".join(body.split())
        more = _MORE.search(body)
        if more is None:
            raise InputError(f"docs/glossary.md: the entry '{title}' has no 'More: [page](file.md)' link at its end")
        target = more.group(2)
        doc, _, anchor = target.partition("#")
        out[slug(title)] = Term(slug(title), title, body[:more.start()].strip(), doc, anchor, more.group(1))
    return out


def term(key: str) -> Term:
    """One entry; an error naming the key when the glossary lacks it."""
    found = terms().get(key)
    if found is None:
        raise InputError(f"the glossary (docs/glossary.md) has no entry '{key}'")
    return found


def doc_text(doc: str) -> str:
    """The text of one docs page (``methods/aim.md``), refusing any path outside docs/."""
    path = (DOCS / doc).resolve()
    if DOCS not in path.parents or path.suffix != ".md" or not path.is_file():
        raise InputError(f"no documentation page '{doc}'; pick one from the list")
    return path.read_text(encoding="utf-8")


def rewrite_links(text: str, doc: str, url: Callable[[str, str], str]) -> str:
    """``text`` of the docs page ``doc`` with every relative link to another docs page replaced by
    ``url(page, anchor)`` (page relative to docs/); other links stay as they are."""
    base = (DOCS / doc).parent

    def fix(m: re.Match) -> str:
        label, target = m.group(1), m.group(2)
        if target.startswith(("http://", "https://", "mailto:")):
            return m.group(0)
        file, _, anchor = target.partition("#")
        if not file:
            return f"[{label}]({url(doc, anchor)})"
        page = (base / file).resolve()
        if page.suffix != ".md" or DOCS not in page.parents:
            return label  # a file outside the docs (code, data): named, not linked
        return f"[{label}]({url(str(page.relative_to(DOCS)), anchor)})"

    return _LINK.sub(fix, text)
