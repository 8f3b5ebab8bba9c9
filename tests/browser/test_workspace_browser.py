"""The workspace in a real browser (Playwright + Debian's Chromium): upload a table, confirm
its domain, set ε and a cap, release; reload the browser, then restart the app, and find the
table, domain, design, release and budget book restored; release again until the cap refuses.

Screenshots go to tests/artifacts/ (git-ignored): workspace_restored.png, budget_refused.png.
Skipped only when no Chromium binary is installed (``apt-get install chromium``).
"""
from __future__ import annotations

import time

import pandas as pd
import pytest

from tests.browser import browser_support as bs
from tests.browser.browser_support import (
    ARTIFACTS,
    NAV_LINK,
    NEEDS_CHROMIUM,
    ROOT,
    goto,
    no_exception,
    open_app,
    set_cap,
    settle,
    start_streamlit,
    stop,
    type_epsilon,
)

pytestmark = [NEEDS_CHROMIUM]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")
expect = sync_api.expect

TIMEOUT_MS = bs.CEILING_MS


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A factory: start() gives (process, url); every server started is stopped at the end."""
    root = tmp_path_factory.mktemp("workspaces")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    log = open(ARTIFACTS / "streamlit_workspace.log", "w")
    procs = []

    def start():
        proc, url = start_streamlit(log, DPSTUDIO_WORKSPACE=str(root))
        procs.append(proc)
        return proc, url

    yield start, root
    for proc in procs:
        if proc.poll() is None:
            stop(proc)
    log.close()


def release(page) -> None:
    """Click Release (enabled once no release runs); the caller waits for what the page then shows."""
    page.get_by_role("button", name="Release (spends ε = 0.4)").click()
    settle(page)
    no_exception(page)


def test_release_reload_restore_and_cap(server, tmp_path):
    start, root = server
    proc, url = start()
    with sync_api.sync_playwright() as p:
        browser, context, page = open_app(p, url, 1500, 1000, TIMEOUT_MS)
        with bs.failure_shots("test_release_reload_restore_and_cap"):
            ws_id = _walk(page, context, start, proc)
        context.close()
        browser.close()

    # the stored copy of the upload and the book are in the workspace folder
    from dpcore.studio.workspace import Workspace

    ws = Workspace.in_root(ws_id, root)  # the book of the server's root
    [table] = [t for t in ws.tables() if t.kind == "copy"]
    assert table.name == "upload: s7small.csv" and (ws.folder / table.path).is_file()
    live = [e for e in ws.releases(table.fingerprint) if e["status"] != "aborted"]
    assert len(live) == 2 and all(e["status"] == "complete" for e in live)
    assert ws.budget(table.fingerprint)["spent"] == pytest.approx(0.8)


def _walk(page, context, start, proc) -> str:
    """The walk of the test above, on its page (the app's server is ``proc``); the workspace id."""
    small = pd.read_csv(ROOT / "assets" / "sd2011_s7.csv")[["sex", "agegr", "marital"]]
    data = small.to_csv(index=False).encode()
    page.wait_for_selector(NAV_LINK)
    page.wait_for_function("() => location.search.includes('ws=')")  # the app puts the id in the address
    settle(page)
    ws_id = page.url.split("ws=")[1].split("&")[0]

    # upload (stored as a copy in the workspace) and confirm the domain
    goto(page, "1 · Data")
    bs.upload_table(page, 
        files=[{"name": "s7small.csv", "mimeType": "text/csv", "buffer": data}])
    page.get_by_text("upload: s7small.csv").first.wait_for()
    settle(page)  # the upload's run (asked for once the file was sent) has finished
    page.get_by_role("button", name="Confirm: these names").click()
    settle(page)
    page.get_by_text("declared public by the curator").first.wait_for()

    # design: ε = 0.4 (one click is one release at ε = 0.4)
    goto(page, "2 · Design")
    type_epsilon(page, "0.4")
    expect(page.locator('[data-testid="stSidebar"]')).to_contain_text("ε = 0.4")

    # release page: cap 1, release once
    goto(page, "4 · Release")
    set_cap(page, "1")
    release(page)
    page.get_by_text("Released 1 set(s)").first.wait_for(timeout=bs.JOB_CEILING_MS)
    page.get_by_text("spent ε = 0.4 of the cap 1; remaining 0.6").first.wait_for()
    assert "ws=" + ws_id in page.url

    # reload the browser: a new Streamlit session comes back to the same state
    t0 = time.perf_counter()
    page.reload()
    page.get_by_text("spent ε = 0.4 of the cap 1; remaining 0.6").first.wait_for()
    restore_s = time.perf_counter() - t0
    settle(page)
    no_exception(page)
    assert "ws=" + ws_id in page.url
    sidebar = page.locator('[data-testid="stSidebar"]')
    for part in ("upload: s7small.csv", "Domain declared public", "ε = 0.4"):
        expect(sidebar).to_contain_text(part)
    page.get_by_text("ε-differentially private with ε = 0.4").first.wait_for()  # the restored release
    page.get_by_role("button", name="All sets + manifest (zip)").wait_for()
    bs.wait_drawn(page)
    page.screenshot(path=str(ARTIFACTS / "workspace_restored.png"), full_page=True)
    print(f"reload and restore in the browser: {restore_s:.2f} s")

    # restart the app: a new server process comes back to the same workspace from the address's id
    stop(proc)
    proc, url = start()
    page.goto(f"{url}/data?ws={ws_id}")
    page.locator('[data-testid="stSidebar"]', has_text="upload: s7small.csv").first.wait_for()
    page.get_by_text("declared public by the curator").first.wait_for()  # the Data page: domain confirmed
    settle(page)
    goto(page, "4 · Release")
    page.get_by_text("spent ε = 0.4 of the cap 1; remaining 0.6").first.wait_for()
    page.get_by_text("ε-differentially private with ε = 0.4").first.wait_for()
    settle(page)
    no_exception(page)

    # release again until the cap refuses, naming what remains
    release(page)
    page.get_by_text("spent ε = 0.8 of the cap 1; remaining 0.2").first.wait_for(timeout=bs.JOB_CEILING_MS)
    settle(page)
    release(page)
    page.locator('[data-testid="stAlertContentError"]',
                 has_text="needs ε = 0.4 but only ε = 0.2 of this table's budget remains").first.wait_for()
    page.get_by_text("spent ε = 0.8 of the cap 1; remaining 0.2").first.wait_for()  # nothing spent
    page.mouse.move(5, 5)  # no tooltip in the screenshot
    bs.wait_drawn(page)
    page.screenshot(path=str(ARTIFACTS / "budget_refused.png"), full_page=True)

    # another tab without the id gets its own workspace: none of this table or its releases
    other = bs.new_page(context)
    other.goto(url)
    other.wait_for_selector(NAV_LINK)
    other.wait_for_function("() => location.search.includes('ws=')")
    settle(other)
    assert ws_id not in other.url
    expect(other.locator('[data-testid="stSidebar"]')).to_contain_text("SD2011 S7")
    return ws_id
