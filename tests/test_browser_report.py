"""In a real browser (Playwright driving Debian's Chromium): the Data page's table editor and
the Release page's report, downloaded and opened with the network cut off.

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


def test_domain_editor_and_offline_report(server, tmp_path):
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
        page.get_by_text("Edit the domain (table editor)").click()
        settle(page)
        box = page.locator('[data-testid="stExpander"]', has_text="Edit the domain (table editor)").first
        box.locator('[data-testid="stDataFrame"]').first.wait_for()
        page.get_by_text("Apply the level edits").scroll_into_view_if_needed()
        page.wait_for_timeout(800)
        page.screenshot(path=str(ARTIFACTS / "domain-editor.png"))
        assert page.get_by_text("Missing values").count() >= 1

        page.get_by_role("button", name="Confirm: these names, levels and bin edges are public").click()
        settle(page, 1000)
        page.locator('[data-testid="stSidebarNavLink"]', has_text="4 · Release").first.click()
        settle(page, 1000)
        page.locator("button", has_text="Release (spends").first.click()
        settle(page, 2000)
        page.get_by_role("button", name="Build the report").click()
        settle(page, 2000)
        with page.expect_download() as dl:
            page.get_by_role("button", name="Download report (HTML)").click()
        report = tmp_path / "report.html"
        dl.value.save_as(str(report))
        context.close()

        # open the downloaded report with every network request refused
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
