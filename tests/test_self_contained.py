"""The repository stands alone ([docs-architecture]): the library, the app, the tests, the
docs and the README never name a file outside the repository (a sibling folder such as
``../shared``, an absolute path, or a path built from the repository's parent), so a fresh
clone runs and reads the same. bench/ may take optional inputs from elsewhere; the rest may not.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECKED = sorted([ROOT / "README.md", ROOT / "app.py", ROOT / "mkdocs.yml", ROOT / "Makefile",
                  *(ROOT / "assets").glob("*.md"), *(ROOT / "docs").rglob("*.md"),
                  *(ROOT / "dpcore").rglob("*.py"), *(ROOT / "pages").glob("*.py"), *(ROOT / "tests").rglob("*.py")])
#: ways of naming a place outside the repository
OUTSIDE = [
    re.compile(r"\.\./(shared|data|papers)\b"),            # a sibling folder
    re.compile(r"/work/"),                                  # this machine's layout
    re.compile(r"\bparents?\b[^\n]{0,40}/\s*[\"']shared[\"']"),  # parent / "shared" (pathlib)
    re.compile(r"\bparent\.parent\b"),                      # two levels up from a file in the repo
    re.compile(r"\bSPEC\.md\b"),                            # the project notes are not in the repo
]
THIS = Path(__file__).resolve()


def _hits(text: str) -> list[str]:
    return [m.group(0) for rx in OUTSIDE for m in rx.finditer(text)]


@pytest.mark.parametrize("path", [p for p in CHECKED if p != THIS], ids=lambda p: str(p.relative_to(ROOT)))
def test_no_path_outside_the_repository(path):
    hits = _hits(path.read_text(encoding="utf-8"))
    assert not hits, f"{path.relative_to(ROOT)} names a place outside the repository: {hits}"


def test_the_check_can_fail():
    assert _hits('CPS = ui.ROOT.parent / "shared" / "data" / "x.csv"')
    assert _hits("see ../shared/SPEC.md §6")
    assert _hits('pd.read_csv("/work/shared/data/x.csv")')
    assert _hits("far = _REPO_ROOT.parent.parent / 'x'")
    assert not _hits('ASSETS = ROOT / "assets" / "cps_vrs_weighted.csv"  # shared by every page')
