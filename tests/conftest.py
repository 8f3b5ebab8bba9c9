"""Shared pytest setup: the repo root on sys.path, so tests import dpcore and the app's pages."""
from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# The app's workspaces (dpcore.studio.workspace) go to a throw-away folder, never the repo's .dpstudio/.
_WORKSPACES = tempfile.mkdtemp(prefix="dpstudio-test-")
os.environ["DPSTUDIO_WORKSPACE"] = _WORKSPACES
atexit.register(shutil.rmtree, _WORKSPACES, True)


@pytest.fixture(autouse=True)
def _own_installation(tmp_path_factory, monkeypatch):
    """Each test its own root folder, so its own budget book: the installation's one book
    (dpcore.studio.workspace.installation_book) never carries one test's spending into another's."""
    monkeypatch.setenv("DPSTUDIO_WORKSPACE", str(tmp_path_factory.mktemp("dpstudio")))
    monkeypatch.delenv("DPSTUDIO_DATABASE_URL", raising=False)


# --------------------------------------------------------------------------- markers
# Folders mirror dpcore's packages; two folders are lanes of their own and are marked here, so a
# file added to them is marked without anyone remembering to.
_TESTS = Path(__file__).resolve().parent
_FOLDER_MARKS = {"app": "app", "browser": "browser"}
_AUDIT_FILES = {"test_mechanism_audit.py", "test_release_audit.py"}


def _slow_ids() -> frozenset[str]:
    """Tests measured slow on the 2-core machine (`pytest --durations`), listed in slow_tests.txt as
    node ids or node-id prefixes; `make check` leaves them out, `make test` runs them."""
    listed = (_TESTS / "slow_tests.txt").read_text().splitlines()
    return frozenset(s.strip() for s in listed if s.strip() and not s.lstrip().startswith("#"))


def pytest_collection_modifyitems(config, items):
    slow = _slow_ids()
    for item in items:
        parts = Path(str(item.fspath)).resolve().relative_to(_TESTS).parts
        if parts[0] in _FOLDER_MARKS:
            item.add_marker(_FOLDER_MARKS[parts[0]])
        if parts[-1] in _AUDIT_FILES:
            item.add_marker(pytest.mark.audit)
        if any(item.nodeid == s or item.nodeid.startswith(s + "[") or item.nodeid.startswith(s + "::") for s in slow):
            item.add_marker(pytest.mark.slow)


# --------------------------------------------------------------------------- shared tables
_S7_CSV = ROOT / "assets" / "sd2011_s7.csv"


@pytest.fixture(scope="session")
def _s7_read() -> pd.DataFrame:
    return pd.read_csv(_S7_CSV)


@pytest.fixture()
def s7(_s7_read) -> pd.DataFrame:
    """The bundled SD2011 S7 demo (5,000 × 7, assets/sd2011_s7.csv) as pandas reads it; a fresh copy per
    test, so a test that edits it cannot change another's."""
    return _s7_read.copy()


@pytest.fixture(scope="session")
def s7_domain(_s7_read):
    """S7's domain, inferred from the demo and declared public (its levels are the SD2011 codebook's)."""
    import dpcore

    return dpcore.infer_domain(_s7_read).declared()
