"""In a real browser (Playwright + Debian's Chromium, as tests/browser/test_browser.py): PrivBayes chosen on the
Design page becomes the main release ([sota-methods] item 2), and the downloaded manifest says so.

Skipped only when no Chromium binary is installed (``apt-get install chromium``).
"""
from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from tests.browser import browser_support as bs
from tests.browser.test_browser import (  # noqa: F401  (fixtures)
    CHROMIUM,
    expect,
    goto,
    no_exception,
    page,
    server,
    settle,
    shot,
)

pytestmark = [pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install -y chromium)")]


def test_release_with_privbayes_chosen_on_the_design_page(page):  # noqa: F811
    goto(page, "1 · Data")
    page.get_by_role("button", name="Load this demo").click()
    settle(page)
    page.get_by_role("button", name="Confirm: these names").click()
    settle(page)
    page.get_by_text("declared public by the curator").first.wait_for()

    goto(page, "2 · Design")
    method = page.get_by_role("combobox", name="Method of the release")
    method.click()
    method.fill("PrivBayes")
    page.get_by_role("option", name="PrivBayes").first.click()
    settle(page)
    page.get_by_text("Degree k (parents per attribute)").first.wait_for()
    no_exception(page)
    shot(page, "design_privbayes.png")

    goto(page, "3 · Preview")
    page.locator('[data-testid="stMarkdownContainer"]', has_text="PrivBayes").filter(has_text="ε = 1").first.wait_for()
    page.get_by_text("the noisy tables each set measures").first.wait_for()
    page.locator('[data-testid="stDataFrame"]:visible').first.wait_for()  # the margin method's noisy tables
    no_exception(page)

    goto(page, "4 · Release")
    page.get_by_role("button", name="Release (spends ε = 1)").click()
    page.get_by_text("Released 1 set(s)").first.wait_for(timeout=bs.JOB_CEILING_MS)
    page.get_by_text("differentially private with ε = 1").first.wait_for()  # the release's own statement
    settle(page)
    no_exception(page)
    expect(page.get_by_text("NOT DP")).to_have_count(0)
    with page.expect_download() as dl:
        page.get_by_role("button", name="All sets + manifest (zip)").click()
    with zipfile.ZipFile(io.BytesIO(Path(dl.value.path()).read_bytes())) as z:
        manifest = json.loads(z.read("manifest.json"))
    assert manifest["method"] == "privbayes" and manifest["dp"] is True
    assert abs(manifest["ledger"]["epsilon_total"] - 1) < 1e-12
    assert manifest["options"]["degree"] == 2
