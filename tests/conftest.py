"""Shared pytest setup: the repo root on sys.path, so tests import dpcore and the app's pages."""
from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# The app's workspaces (dpcore.studio.workspace) go to a throw-away folder, never the repo's .dpstudio/.
_WORKSPACES = tempfile.mkdtemp(prefix="dpstudio-test-")
os.environ["DPSTUDIO_WORKSPACE"] = _WORKSPACES
atexit.register(shutil.rmtree, _WORKSPACES, True)
