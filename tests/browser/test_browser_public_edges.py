"""[honest-flow] done-when (b) in a real browser (Playwright driving Debian's Chromium):

1. upload a table with numeric columns; try to confirm without public bounds: refused, naming
   the columns; a rejected upload afterwards keeps that table in use, under its own name;
2. the bounds start empty (nothing computed from the data is offered); type codebook bounds,
   confirm, release: recorded DP (manifest);
3. the report's default download holds no CURATOR-ONLY panel (a publishable report);
4. back on the Data page, a numeric column's three choices: "find privately" (its share of ε in
   the label), and codebook bounds so wide that one bin holds every record (the curator-only
   NOT DP warning).

Screenshots of the Data page at 1280 and 1920 px wide go to tests/artifacts/
(data-public-bounds-1280.png, data-public-bounds-1920.png, data-refused-1280.png,
data-numeric-choices-1280.png, data-numeric-choices-1920.png).
Skipped only when no Chromium binary is installed (``make chromium``).
"""
from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpcore.studio.report import RAW_BANNER
from tests.browser import browser_support as bs
from tests.browser.browser_support import ARTIFACTS, NEEDS_CHROMIUM

pytestmark = NEEDS_CHROMIUM
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")
expect = sync_api.expect
TIMEOUT_MS = bs.CEILING_MS


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with bs.app_server(tmp_path_factory.mktemp("public-edges-workspaces"), "streamlit-public-edges.log") as url:
        yield url


def settle(page) -> None:
    bs.settle(page, TIMEOUT_MS)
    bs.no_exception(page)


def people_csv(path: Path) -> Path:
    rng = np.random.default_rng(12)
    n = 400
    pd.DataFrame({"age": rng.integers(17, 84, n), "income": np.round(rng.gamma(2.0, 9000.0, n), 1),
                  "sex": rng.choice(["F", "M"], n), "region": rng.choice(["N", "S", "E"], n)}).to_csv(path, index=False)
    return path


def whole_page(page, name: str, width: int) -> None:
    """The whole Data page at ``width`` px: the app scrolls inside its main block, so the
    viewport is made tall enough for everything instead of a full-page capture."""
    page.set_viewport_size({"width": width, "height": 3000})
    page.mouse.move(5, 5)
    bs.wait_drawn(page)  # laid out again at the new size
    page.screenshot(path=str(ARTIFACTS / name))


def type_bounds(page, i: int, lower: str, upper: str) -> None:
    """Type the ``i``-th numeric column's codebook bounds and click "Use these bounds"."""
    for name, value in (("lower bound", lower), ("upper bound", upper)):
        bs.type_value(page, page.get_by_role("textbox", name=name).nth(i), value, settle)
    page.get_by_role("button", name="Use these bounds").nth(i).click()
    settle(page)


def upload(page, path: Path) -> None:
    """Upload ``path`` on the Data page; the caller waits for what the upload's run shows, then settles (the
    run is asked for once the file has been sent)."""
    bs.upload_table(page, str(path))


def test_numeric_columns_need_public_bounds_before_a_dp_release(server, tmp_path):
    csv = people_csv(tmp_path / "people.csv")
    bad = tmp_path / "broken.csv"
    bad.write_text("a,b\n1,2\n3,4,5\n", encoding="utf-8")
    with sync_api.sync_playwright() as p:
        browser, context, page = bs.open_app(p, server, 1280, 1000, TIMEOUT_MS, accept_downloads=True)
        page.locator(bs.NAV_LINK, has_text="1 · Data").first.wait_for()
        settle(page)
        with bs.failure_shots("test_numeric_columns_need_public_bounds_before_a_dp_release"):
            _walk(page, csv, bad)
        context.close()
        browser.close()


def _walk(page, csv: Path, bad: Path) -> None:
    """The walk of the test above, on its page."""
    bs.goto(page, "1 · Data", TIMEOUT_MS)
    upload(page, csv)
    page.get_by_text("Schema: 400 rows × 4 columns").wait_for()
    page.get_by_role("textbox", name="upper bound").nth(1).wait_for()
    settle(page)

    # 1. confirm without bounds: refused with one line naming both columns and the fix
    page.get_by_role("button", name="Confirm: these names, levels and bin edges are public").click()
    settle(page)
    refusal = page.locator('[data-testid="stAlert"]', has_text="Not confirmed").first
    for part in ("the bins of age, income span the data's own min–max", "Use these bounds", "find privately"):
        expect(refusal).to_contain_text(part)
    expect(page.locator('[data-testid="stSidebar"]')).to_contain_text("not yet confirmed")
    whole_page(page, "data-refused-1280.png", 1280)
    page.set_viewport_size({"width": 1280, "height": 1000})

    # a rejected upload: the table in use stays, under its own name
    upload(page, bad)
    page.get_by_text("Not loaded: the table in use is still “upload: people.csv” (400 rows × 4 columns)").wait_for()
    settle(page)  # the rejected upload's run has finished: the sidebar is its last drawing
    sidebar = page.locator('[data-testid="stSidebar"]')
    expect(sidebar).to_contain_text("upload: people.csv")
    expect(sidebar).not_to_contain_text("broken.csv")
    page.get_by_text("Schema: 400 rows × 4 columns").wait_for()

    # every radio group and dropdown on the page has a name, and no label shows backticks
    for role in ("radiogroup", "combobox"):
        group = page.get_by_role(role)
        for i in range(group.count()):
            name = group.nth(i).get_attribute("aria-label") or ""
            assert name.strip() and "`" not in name, (role, i, name)

    # 2. the bounds start empty for both columns: nothing read from the data is offered
    lower = page.get_by_role("textbox", name="lower bound")
    upper = page.get_by_role("textbox", name="upper bound")
    expect(lower).to_have_count(2)
    expect(upper).to_have_count(2)
    for i in range(2):
        expect(lower.nth(i)).to_have_value("")
        expect(upper.nth(i)).to_have_value("")
    expect(page.get_by_role("button", name="Use these public bounds")).to_have_count(0)
    # a bad bound: one line naming the column and the value
    type_bounds(page, 0, "abc", "120")
    page.get_by_text("column 'age': the lower bound must be a number; got 'abc'").wait_for()
    type_bounds(page, 0, "0", "120")
    page.get_by_text("public bounds [0, 120], 10 bins").first.wait_for()
    type_bounds(page, 1, "0", "100000")
    page.get_by_text("public bounds [0, 100000], 10 bins").first.wait_for()
    page.get_by_role("button", name="Confirm: these names, levels and bin edges are public").click()
    settle(page)
    page.get_by_text("Domain declared public by the curator").first.wait_for()
    sync_api.expect(page.locator('[data-testid="stAlert"]', has_text="Not confirmed")).to_have_count(0)  # retries
    for width in (1280, 1920):
        whole_page(page, f"data-public-bounds-{width}.png", width)
    page.set_viewport_size({"width": 1280, "height": 1000})

    # release: recorded DP, the manifest opens with its summary naming the table
    bs.goto(page, "4 · Release", TIMEOUT_MS)
    page.get_by_role("button", name=re.compile(r"^Release \(spends ε")).first.click()
    page.get_by_text(re.compile(r"Released \d+ set")).first.wait_for(timeout=bs.JOB_CEILING_MS)
    settle(page)
    with page.expect_download() as dl:
        page.get_by_role("button", name="All sets + manifest (zip)").click()
    with zipfile.ZipFile(io.BytesIO(Path(dl.value.path()).read_bytes())) as z:
        text = z.read("manifest.json").decode("utf-8")
        first = pd.read_csv(io.BytesIO(z.read("synthetic_1.csv")))
    manifest = json.loads(text)
    assert manifest["dp"] is True, manifest["dp_reason"]
    assert text.lstrip().startswith('{\n  "summary"')
    assert manifest["summary"]["table"] == "upload: people.csv" and manifest["summary"]["dp"] == "yes"
    origins = {a["name"]: a.get("origin") for a in manifest["domain"]["attributes"]}
    assert origins["age"] == origins["income"] == "public_bounds"
    assert first["age"].between(0, 120).all() and first["income"].between(0, 100_000).all()

    # 3. the report's default download is the publishable one
    page.get_by_role("button", name="Build the report").click()
    settle(page)
    with page.expect_download() as dl:
        page.get_by_role("button", name="Download report (HTML)").click()
    assert dl.value.suggested_filename == "release_report.html"
    report = Path(dl.value.path()).read_text(encoding="utf-8")
    assert RAW_BANNER not in report and "CURATOR-ONLY" not in report
    assert "differentially private with ε" in report

    # 4. the three choices: income found privately, age's bounds so wide one bin holds every record
    bs.goto(page, "1 · Data", TIMEOUT_MS)
    page.get_by_text("Schema: 400 rows × 4 columns").wait_for()
    income = page.get_by_role("radiogroup", name="Bins of income")
    for choice in ("codebook bounds", "find privately (spends 10% of ε)", "drop"):
        expect(income.get_by_text(choice, exact=True), choice).to_have_count(1)
    income.get_by_text("find privately (spends 10% of ε)", exact=True).click()
    settle(page)
    page.get_by_text("found privately at release: 10 bins").first.wait_for()
    type_bounds(page, 0, "0", "1000")
    crowded = page.locator('[data-testid="stAlert"]', has_text="fall in one bin").first
    expect(crowded).to_contain_text("NOT DP, curator-only: 100% of the records of age fall in one bin, [0, 100)")
    for width in (1280, 1920):
        whole_page(page, f"data-numeric-choices-{width}.png", width)
