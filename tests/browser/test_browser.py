"""End to end in a real browser: Playwright (sync API) driving Debian's Chromium.

Starts ``streamlit run app.py`` on a free port, then walks the curator's flow:
demo data → confirm the domain → drag two attributes into layers 1 and 2 → ε →
preview (icicle drawn) → release → download the zip and check the CSVs against
the declared domain → trade-offs (sweep when dpcore has one). Screenshots go to
tests/artifacts/ (git-ignored): data.png, design.png, preview.png, release.png,
tradeoffs.png.

Skipped only when no Chromium binary is installed (``apt-get install chromium``).
"""
from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from tests.browser import browser_support as bs
from tests.browser.browser_support import (  # noqa: F401
    ARTIFACTS,
    CHROMIUM,
    LAUNCH_ARGS,
    NAV_LINK,
    NEEDS_CHROMIUM,
    ROOT,
    goto,
    no_exception,
    open_app,
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
def server():
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with open(ARTIFACTS / "streamlit.log", "w") as log:
        proc, url = start_streamlit(log)
        yield url
        stop(proc)


@pytest.fixture(scope="module")
def page(server):
    with sync_api.sync_playwright() as p:
        browser, context, pg = open_app(p, server, 1500, 1000, TIMEOUT_MS, accept_downloads=True)
        pg.wait_for_selector(NAV_LINK)
        yield pg
        context.close()
        browser.close()


def drag(page, item: str, header: str) -> None:
    """The recipe from NOTES-ui-testing.md: hover, mouse down, move in steps below the header, mouse up;
    then wait until the run it asked for has finished and ``item`` is drawn in ``header``'s container."""
    frame = page.frame_locator("iframe").first
    src = frame.locator(".sortable-item", has_text=item).first
    tgt = frame.locator(".sortable-container-header", has_text=header).first
    src.hover()
    page.mouse.down()
    box = tgt.bounding_box()
    page.mouse.move(box["x"] + 30, box["y"] + box["height"] + 12, steps=20)
    page.mouse.up()
    settle(page)
    container = frame.locator(".sortable-container", has=frame.locator(".sortable-container-header", has_text=header))
    expect(container.first).to_contain_text(item)


def shot(page, name: str) -> None:
    """Screenshot of the whole page: Streamlit scrolls inside stMain, so the viewport grows to fit it, once
    the charts are drawn and the layout is still."""
    size = page.viewport_size
    page.mouse.move(5, 5)
    bs.wait_drawn(page)
    height = bs.main_height(page)
    if height > size["height"]:
        page.set_viewport_size({"width": size["width"], "height": int(min(height + 20, 8000))})
        bs.wait_drawn(page)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)
    page.set_viewport_size(size)
    bs.wait_drawn(page)


def test_curator_flow(page):
    # 1. Data: a malformed upload is refused with dpcore's message; then the S7 demo, domain confirmed.
    goto(page, "1 · Data")
    bs.upload_table(page, 
        files=[{"name": "ragged.csv", "mimeType": "text/csv", "buffer": b"a,b\n1,2\n3,4,5\n"}])
    page.locator('[data-testid="stAlertContentError"]', has_text="ragged rows").first.wait_for()
    no_exception(page)
    page.get_by_role("button", name="Load this demo").click()
    settle(page)
    page.get_by_role("button", name="Confirm: these names").click()
    settle(page)
    page.get_by_text("declared public by the curator").first.wait_for()
    no_exception(page)
    shot(page, "data.png")

    # 2. Design: STEPS with a fixed order, drag sex → Layer 1 and agegr → Layer 2, then type ε = 2.
    goto(page, "2 · Design")
    method = page.get_by_role("combobox", name="Method of the release")
    method.click()
    method.fill("STEPS")
    page.get_by_role("option", name="STEPS").first.click()
    settle(page)
    page.get_by_text("Fixed order (drag attributes into layers)").click()
    settle(page)
    drag(page, "sex", "Layer 1")
    drag(page, "agegr", "Layer 2")
    page.get_by_text("Order: {sex} → {agegr}").wait_for()
    type_epsilon(page, "2")
    page.get_by_text("total ε = 2").first.wait_for()
    no_exception(page)
    shot(page, "design.png")

    # 3. Preview: the icicle is drawn, phantoms labelled.
    goto(page, "3 · Preview")
    page.locator('[data-testid="stPlotlyChart"]').first.wait_for()
    assert page.locator('[data-testid="stPlotlyChart"]').count() >= 1
    page.locator('[data-testid="stPlotlyChart"] svg text', has_text="phantom").first.wait_for()
    page.get_by_text("STEPS (fixed order sex ; agegr), ε = 2").first.wait_for()
    no_exception(page)
    shot(page, "preview.png")

    # 4. Release: run it, download the zip and check it.
    goto(page, "4 · Release")
    page.get_by_role("button", name="Release (spends ε = 2)").click()
    page.get_by_text("Released 1 set(s)").first.wait_for(timeout=bs.JOB_CEILING_MS)  # m = 1, the app's default
    page.get_by_text("differentially private with ε = 2").first.wait_for()  # the release's own statement
    settle(page)
    no_exception(page)
    expect(page.get_by_text("NOT DP"), "a confirmed domain with a fixed order must give a DP release").to_have_count(0)
    with page.expect_download() as dl:
        page.get_by_role("button", name="All sets + manifest (zip)").click()
    data = Path(dl.value.path()).read_bytes()
    shot(page, "release.png")

    orig = pd.read_csv(ROOT / "assets" / "sd2011_s7.csv")
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        names = sorted(z.namelist())
        assert names == ["manifest.json", "synthetic_1.csv"]
        manifest = json.loads(z.read("manifest.json"))
        assert manifest["dp"] is True and manifest["epsilon"] == 2
        assert abs(manifest["ledger"]["epsilon_total"] - 2) < 1e-12
        assert manifest["options"]["order"] == [["sex"], ["agegr"]]
        assert "seed" not in manifest
        levels = {a["name"]: {str(v) for v in a["levels"]} for a in manifest["domain"]["attributes"]}
        na_ok = {a["name"]: a["na"] for a in manifest["domain"]["attributes"]}
        for i in range(1, 2):
            syn = pd.read_csv(io.BytesIO(z.read(f"synthetic_{i}.csv")), dtype=str, keep_default_na=False)
            assert list(syn.columns) == list(orig.columns)
            assert len(syn) == manifest["record_count"]["value"]  # the noisy count (add/remove default)
            assert manifest["record_count"]["noisy"] is True and abs(len(syn) - len(orig)) < 200
            for col in syn.columns:
                vals = set(syn[col])
                allowed = levels[col] | ({""} if na_ok[col] else set())
                assert vals <= allowed, f"set {i}, column {col}: values outside the domain {vals - allowed}"

    # 5. Trade-offs: the per-table heat map of this release is drawn.
    goto(page, "5 · Trade-offs")
    heat_map = page.locator('[data-testid="stPlotlyChart"] svg text', has_text="mean over sets of each two-way table")
    heat_map.first.wait_for()
    no_exception(page)
    shot(page, "tradeoffs.png")


def test_sweep(page):
    """A small sweep on the trade-offs page (runs after test_curator_flow, on the same page)."""
    import dpcore.metrics

    if not hasattr(dpcore.metrics, "sweep"):
        page.get_by_text("Sweep unavailable").first.wait_for()
        no_exception(page)
        pytest.skip("dpcore.metrics.sweep is not in this dpcore yet; the page says 'Sweep unavailable'")
    if "Trade-offs" not in page.locator("h1").first.inner_text():
        goto(page, "5 · Trade-offs")
    _small_sweep(page)
    page.get_by_role("button", name="Run sweep").click()
    # the end of the sweep as the page shows it: the click's run draws its progress and Cancel button, the page
    # runs again without them when it has finished (2 methods × 2 ε × 2 reps: minutes on a loaded machine), then
    # draws this sweep's charts and, after them, the adviser's check against its results
    settle(page)
    expect(page.get_by_role("button", name="Cancel sweep")).to_have_count(0, timeout=bs.JOB_CEILING_MS)
    settle(page)
    page.get_by_text(re.compile(r"At every ε of this sweep|The adviser and this sweep disagree")).first.wait_for()
    no_exception(page)
    for title in ("SPECKS", "S_pMSE", "replicated uniques", "Risk–utility"):
        page.locator('[data-testid="stPlotlyChart"] svg text', has_text=title).first.wait_for()
    expect(page.get_by_role("button", name="Results (CSV)")).to_have_count(1)
    page.mouse.move(5, 5)  # no tooltip in the screenshot
    shot(page, "tradeoffs.png")
    no_exception(page)


def _small_sweep(page) -> None:
    """Reduce the default ε grid (0.1, 1, 10) to 0.1 and 1, with 2 repetitions (short, yet the bands show)."""
    tags = page.locator('[data-testid="stMultiSelect"]', has_text="ε grid").locator("[data-tag] span[title]")
    tags.first.wait_for()  # the grid is drawn before its tags are read
    settle(page)
    for value in ("10",):
        remove = page.get_by_role("button", name=f"Remove {value}", exact=True)
        if remove.count():
            remove.first.click()
            settle(page)
    bs.type_value(page, page.get_by_role("spinbutton", name="reps"), "2")
    expect(page.get_by_role("spinbutton", name="reps")).to_have_value("2")
    expect(tags).to_have_text(["0.1", "1"])
