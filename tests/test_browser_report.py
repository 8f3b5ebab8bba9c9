"""In a real browser (Playwright driving Debian's Chromium): upload an SPSS file, rename a level
by typing in the Data page's table editor, ask for DP quantile edges, confirm, release, build
the report, download it and open it with every network request refused.

Screenshots go to tests/artifacts/ (git-ignored): domain-editor.png, report.png; the README
shows copies in assets/screenshots/. Skipped only when no Chromium binary is installed.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (make chromium)")
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")
TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def server():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    log = open(ARTIFACTS / "streamlit-report.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port), "--server.headless", "true",
         "--server.fileWatcherType", "none"],
        cwd=ROOT, env=dict(os.environ, STREAMLIT_BROWSER_GATHER_USAGE_STATS="false"), stdout=log,
        stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("streamlit exited; see tests/artifacts/streamlit-report.log")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            time.sleep(0.3)
    else:
        proc.terminate()
        raise RuntimeError("streamlit did not become healthy within 60 s")
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


def settle(page, ms: int = 600) -> None:
    page.wait_for_timeout(ms)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
        " || !document.querySelector('[data-testid=\"stStatusWidget\"]').innerText.match(/Running|Stop/)",
        timeout=TIMEOUT_MS)
    page.wait_for_timeout(300)
    assert page.locator('[data-testid="stException"]').count() == 0


def _spss_file(path: Path) -> Path:
    import numpy as np
    import pandas as pd
    import pyreadstat

    rng = np.random.default_rng(5)
    n = 400
    df = pd.DataFrame({"sex": rng.choice([1.0, 2.0], n), "region": rng.choice([1.0, 2.0, 3.0], n),
                       "age": rng.integers(18, 90, n).astype(float)})
    pyreadstat.write_sav(df, str(path), variable_value_labels={"sex": {1.0: "male", 2.0: "female"},
                                                               "region": {1.0: "North", 2.0: "South", 3.0: "East"}})
    return path


def test_spss_upload_domain_editor_dp_edges_and_offline_report(server, tmp_path):
    """Upload an SPSS file, rename a level in the table editor, ask for DP quantile edges,
    confirm, release, build the report, and open it with the network cut off."""
    sav = _spss_file(tmp_path / "survey.sav")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        context = browser.new_context(viewport={"width": 1400, "height": 1100}, accept_downloads=True)
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(server)
        # st.navigation's own links (a first paint can list the pages/ files instead)
        page.locator('[data-testid="stSidebarNavLink"]', has_text="1 · Data").first.wait_for()
        settle(page)
        page.locator('[data-testid="stSidebarNavLink"]', has_text="1 · Data").first.click()
        settle(page, 1000)

        # 1. upload the SPSS file: value labels become levels
        page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(str(sav))
        settle(page, 2000)
        page.get_by_text("Schema: 400 rows × 3 columns").wait_for()
        page.get_by_text("value labels became the levels of: sex, region").wait_for()

        # 2. the table editor: rename "female" to "woman" by typing in the grid
        page.get_by_text("Edit the domain (table editor)").click()
        settle(page)
        box = page.locator('[data-testid="stExpander"]', has_text="Edit the domain (table editor)").first
        grid = box.locator('[data-testid="stDataFrame"]').first
        grid.wait_for()
        grid.scroll_into_view_if_needed()
        page.wait_for_timeout(500)
        b = grid.bounding_box()
        # columns: row marker, level, new name, in data; the first data row is below the header.
        # A click selects the cell, Enter opens its editor (glide-data-grid); replace the text there
        page.mouse.click(b["x"] + 0.45 * b["width"], b["y"] + 35 + 17)
        page.wait_for_timeout(400)
        page.keyboard.press("Enter")
        page.wait_for_timeout(400)
        page.keyboard.press("Control+A")
        page.keyboard.type("woman")
        page.wait_for_timeout(300)
        page.keyboard.press("Enter")
        settle(page, 800)
        page.get_by_text("Apply the level edits").scroll_into_view_if_needed()
        page.wait_for_timeout(600)
        page.screenshot(path=str(ARTIFACTS / "domain-editor.png"))
        page.get_by_role("button", name="Apply the level edits").click()
        settle(page, 1000)
        box.get_by_text("Recodes applied to the data before release").wait_for()  # the rename is a recode

        # DP quantile edges for age over public bounds
        box.locator('[data-testid="stSelectbox"]').first.click()
        page.get_by_role("option", name="age").click()
        settle(page)
        box.get_by_text("DP quantile edges", exact=True).first.click()
        settle(page)
        lower = box.get_by_role("spinbutton", name="public lower bound")
        lower.fill("0")
        lower.press("Enter")
        settle(page)
        upper = box.get_by_role("spinbutton", name="public upper bound")
        upper.fill("100")
        upper.press("Enter")
        settle(page)
        page.get_by_role("button", name="Use DP quantile edges").click()
        settle(page, 1000)
        box.get_by_text("DP quantile edges at release").wait_for()

        page.get_by_role("button", name="Confirm: these names, levels and bin edges are public").click()
        settle(page, 1000)

        # 3. release, then the report
        page.locator('[data-testid="stSidebarNavLink"]', has_text="4 · Release").first.click()
        settle(page, 1000)
        page.locator("button", has_text="Release (spends").first.click()
        settle(page, 3000)
        assert page.get_by_text("NOT DP —").count() == 0
        page.get_by_role("button", name="Build the report").click()
        settle(page, 2000)
        with page.expect_download() as dl:
            page.get_by_role("button", name="Download report (HTML)").click()
        report = tmp_path / "report.html"
        dl.value.save_as(str(report))
        context.close()
        text = report.read_text(encoding="utf-8")
        assert "woman" in text and "DP-derived: exponential-mechanism quantiles" in text

        # 4. open the downloaded report with every network request refused
        offline = browser.new_context(viewport={"width": 1100, "height": 1400}, offline=True)
        requests = []
        offline.route("**/*", lambda route: (requests.append(route.request.url), route.abort())
                      if not route.request.url.startswith("file:") else route.continue_())
        rp = offline.new_page()
        rp.goto(report.as_uri())
        rp.wait_for_selector(".plotly .main-svg", timeout=TIMEOUT_MS)
        assert rp.locator(".js-plotly-plot").count() >= 3  # ledger, heat map, bar charts all drawn
        assert requests == []
        assert rp.get_by_text("CURATOR-ONLY — NOT DP").count() >= 3
        rp.screenshot(path=str(ARTIFACTS / "report.png"))
        offline.close()
        browser.close()
