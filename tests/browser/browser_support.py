"""What the browser tests share: Debian's Chromium, a ``streamlit run app.py`` server on a
free port, and waiting for the app to finish a run.

Playwright drives the system Chromium (``make chromium`` installs it; Playwright cannot
download its own browser here), headless with ``--no-sandbox``.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
#: the app's page links in the sidebar (app.py draws them; Streamlit's own page list is off)
NAV_LINK = '[data-testid="stSidebar"] [data-testid="stPageLink-NavLink"]'
#: every browser test is skipped, saying why, only when no Chromium binary is installed
NEEDS_CHROMIUM = pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (make chromium, or "
                                                             "apt-get install -y chromium); the browser tests need it")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_streamlit(log, **env: str) -> tuple[subprocess.Popen, str]:
    """Start the app on a free port with ``env`` added to the environment; (process, url)
    once its health check answers (60 s at most). Output goes to the open file ``log``."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port), "--server.headless", "true",
         "--server.fileWatcherType", "none"],
        cwd=ROOT, env=dict(os.environ, STREAMLIT_BROWSER_GATHER_USAGE_STATS="false", **env),
        stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with {proc.returncode}; see {getattr(log, 'name', 'its log')}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.3)
    stop(proc)
    raise RuntimeError("streamlit did not become healthy within 60 s")


@contextlib.contextmanager
def app_server(workspace_root: Path, log_name: str):
    """``streamlit run app.py`` with its workspaces in ``workspace_root`` and its output in
    tests/artifacts/``log_name``; yields the url and stops the app afterwards."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with open(ARTIFACTS / log_name, "w") as log:
        proc, url = start_streamlit(log, DPSTUDIO_WORKSPACE=str(workspace_root))
        try:
            yield url
        finally:
            stop(proc)


def open_app(playwright, url: str, width: int, height: int, timeout_ms: int, **context_options):
    """Headless Chromium with one context (``width`` × ``height``) and one page at ``url``:
    ``(browser, context, page)``; the caller closes the browser."""
    browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
    context = browser.new_context(viewport={"width": width, "height": height}, **context_options)
    page = context.new_page()
    page.set_default_timeout(timeout_ms)
    page.goto(url)
    return browser, context, page


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def settle(page, ms: int = 400, timeout_ms: int = 30_000) -> None:
    """Wait until Streamlit has finished the current run (no 'running' status widget)."""
    page.wait_for_timeout(ms)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
        " || !document.querySelector('[data-testid=\"stStatusWidget\"]').innerText.match(/Running|Stop/)",
        timeout=timeout_ms,
    )
    page.wait_for_timeout(300)


def no_exception(page) -> None:
    exc = page.locator('[data-testid="stException"]')
    assert exc.count() == 0, exc.first.inner_text()


def goto(page, label: str, ms: int = 800, timeout_ms: int = 30_000) -> None:
    """Open a page from the sidebar, wait for its run and check it raised nothing."""
    page.locator(NAV_LINK, has_text=label).first.click()
    settle(page, ms, timeout_ms)
    no_exception(page)


def type_epsilon(page, value: str, settle_fn=settle) -> None:
    """Type ε into the Design page's number box (the log slider's twin) and wait for the run."""
    eps = page.get_by_role("spinbutton", name="or type ε")
    eps.fill(value)
    eps.press("Enter")
    settle_fn(page)


def set_cap(page, value: str, settle_fn=settle) -> None:
    """Set the table's ε cap on the Release page (the page must be open)."""
    cap = page.get_by_role("spinbutton", name="Cap on this table's total ε")
    cap.fill(value)
    cap.press("Enter")
    settle_fn(page)
    page.get_by_role("button", name="Set cap").click()
    settle_fn(page)
