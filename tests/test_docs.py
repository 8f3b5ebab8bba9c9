"""The documentation resolves ([docs-architecture]): every relative link in docs/ and the
README points at a file in the repository, every code reference in docs/ names something
that exists, and the docstrings' pointers to docs pages lead somewhere."""
from __future__ import annotations

import importlib
import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").rglob("*.md"))
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`\n]+)`")
FENCE = re.compile(r"```.*?```", re.S)
DOTTED = re.compile(r"^dpcore(\.[A-Za-z_][A-Za-z0-9_]*)+$")
PATH = re.compile(r"^(dpcore|tests|bench|pages|assets|docs)/[\w./-]+\.(py|md|csv|txt)(::\w+)?$")


def test_docs_exist_and_mkdocs_lists_every_page():
    assert len(DOCS) >= 10
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in DOCS:
        assert str(page.relative_to(ROOT / "docs")) in nav, page


@pytest.mark.parametrize("doc", DOCS + [ROOT / "README.md"], ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc):
    text = doc.read_text(encoding="utf-8")
    for target in LINK.findall(text):
        if target.startswith(("http://", "https://", "mailto:", "#")):
            assert doc.name != "README.md" or target.startswith("#"), f"README links outside the repo: {target}"
            continue
        file, _, anchor = target.partition("#")
        path = (doc.parent / file).resolve() if file else doc
        assert path.exists(), f"{doc.relative_to(ROOT)}: broken link {target}"
        assert ROOT in path.parents or path == ROOT, f"{doc.relative_to(ROOT)}: link leaves the repository: {target}"
        if anchor and path.suffix == ".md":
            assert anchor in _anchors(path), f"{doc.relative_to(ROOT)}: no heading #{anchor} in {file or doc.name}"


def _slug(heading: str) -> str:
    """The anchor MkDocs (Python-Markdown's toc) gives a heading."""
    text = re.sub(r"[`*_]", "", heading)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return {_slug(m) for m in re.findall(r"^#{1,6}\s+(.+?)\s*#*$", text, flags=re.M)}


def _resolves_dotted(ref: str) -> bool:
    parts = ref.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def _resolves_path(ref: str) -> bool:
    path, _, name = ref.partition("::")
    p = ROOT / path
    if not p.exists():
        return False
    return not name or re.search(rf"^(def|class) {re.escape(name)}\b", p.read_text(encoding="utf-8"), re.M) is not None


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_code_references_resolve(doc):
    bad = []
    for ref in CODE.findall(FENCE.sub("", doc.read_text(encoding="utf-8"))):
        ref = ref.strip().removesuffix("()")
        if DOTTED.match(ref) and not _resolves_dotted(ref):
            bad.append(ref)
        elif PATH.match(ref) and not _resolves_path(ref):
            bad.append(ref)
    assert not bad, f"{doc.relative_to(ROOT)}: unresolved code references {bad}"


def test_docstring_pointers_name_existing_pages():
    bad = []
    for py in list((ROOT / "dpcore").rglob("*.py")) + list((ROOT / "tests").rglob("*.py")):
        for ref in re.findall(r"docs/[\w/-]+\.md", py.read_text(encoding="utf-8")):
            if not (ROOT / ref).exists():
                bad.append(f"{py.relative_to(ROOT)}: {ref}")
    assert not bad, bad


def test_anchors_follow_mkdocs_slugs():
    assert _slug("Generalized Cauchy (smooth sensitivity)") == "generalized-cauchy-smooth-sensitivity"
    assert _slug("Summary: statement and privacy map of each mechanism") == (
        "summary-statement-and-privacy-map-of-each-mechanism")
    assert "privacy-argument" in _anchors(ROOT / "docs" / "methods" / "steps.md")


def test_readme_names_only_files_in_the_repository():
    """A fresh clone holds every document the README names: no path outside the repository."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "../" not in text, "README refers to a path outside the repository"
    for ref in re.findall(r"`((?:docs|bench|assets|tests)/[\w./-]+\.\w+)`", text):
        assert (ROOT / ref).exists(), f"README names {ref}, which is not in the repository"


def test_the_reference_checker_can_fail():
    after_fence = "```\nx = `a`\n```\n| `dpcore/synthesizers/cells.py` | `pages/_gone.py` |"
    assert CODE.findall(FENCE.sub("", after_fence)) == ["dpcore/synthesizers/cells.py", "pages/_gone.py"]
    assert not _resolves_dotted("dpcore.privacy.mechanisms.NoSuchThing")
    assert not _resolves_path("dpcore/no_such_module.py")
    assert not _resolves_path("tests/measure/test_selection.py::no_such_test")
    assert _resolves_path("tests/measure/test_selection.py::test_paper_aic_sensitivity_of_two_is_violated")
