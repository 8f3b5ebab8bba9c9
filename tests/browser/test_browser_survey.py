"""The Survey page on the curator's own table, in Chromium ([studio-polish] 3).

Upload a small generated survey on the Data page (an income with missing answers, base weights),
give income public edges and confirm the domain; on the Survey page choose the variable and its
matching attributes, release a DP imputed mean; then choose the weight and stratum columns, upload
the known totals and release a post-stratified count. The table's budget book grows by exactly the
ε on each button. Screenshots at 1280 and 1920 px go to tests/artifacts/ (git-ignored):
survey-own-refused-*.png, survey-own-imputation-*.png and survey-own-poststrat-*.png.
"""
from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from tests.browser import browser_support as bs
from tests.browser.browser_support import ARTIFACTS, CHROMIUM, LAUNCH_ARGS, NEEDS_CHROMIUM

pytestmark = NEEDS_CHROMIUM
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")
expect = sync_api.expect
TIMEOUT_MS = bs.CEILING_MS
N = 400


def own_survey() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    region = rng.choice(["north", "south", "east"], N)
    income = np.round(rng.gamma(4.0, 500.0, N) + np.where(region == "south", 400.0, 0.0), 0)
    income[rng.random(N) < 0.15] = np.nan
    return pd.DataFrame({"region": region, "sex": rng.choice(["F", "M"], N), "income": income,
                         "w": rng.choice([20.0, 40.0, 60.0], N), "voted": rng.choice(["YES", "NO"], N, p=[0.6, 0.4])})


TOTALS = b"column,level,total\nregion,north,5000\nregion,south,6000\nregion,east,4000\nsex,F,7600\nsex,M,7400\n"


def settle(page) -> None:
    bs.settle(page, TIMEOUT_MS)
    bs.no_exception(page)


def goto(page, label: str) -> None:
    page.mouse.move(700, 5)  # no tooltip over the sidebar (the click also waits until none covers the link)
    bs.goto(page, label, TIMEOUT_MS)


def shot(page, name: str) -> None:
    """The whole page at 1280 and 1920 px (the viewport grows to the page's height), once drawn and still."""
    bs.screenshot_widths(page, lambda w: ARTIFACTS / f"{name}-{w}.png", (1280, 1920), {"width": 1400, "height": 1000})


def pick(page, label: str, option: str, multi: bool = False) -> None:
    """Choose ``option`` in the select box (or ``multi``select) labelled ``label`` (typed, then clicked)."""
    page.mouse.move(5, 5)
    box = page.get_by_role("combobox", name=label).first
    box.scroll_into_view_if_needed()
    box.click()
    box.fill(option)
    page.get_by_role("option", name=re.compile("^" + re.escape(option))).first.click()
    if multi:
        page.keyboard.press("Escape")  # close the list of options
    settle(page)


def fill(page, label: str, value: str, role: str = "spinbutton") -> None:
    box = page.get_by_role(role, name=label).first
    box.scroll_into_view_if_needed()
    bs.type_value(page, box, value, settle)


def book(root, page):
    from dpcore.studio.workspace import Workspace

    page.wait_for_function("() => location.search.includes('ws=')")
    return Workspace.in_root(re.search(r"ws=([^&]+)", page.url).group(1), root)  # the server's one book


def test_survey_page_on_an_uploaded_table(tmp_path):
    root = tmp_path / "workspaces"
    data = own_survey().to_csv(index=False).encode()
    with bs.app_server(root, "streamlit-survey.log") as url, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        page = bs.new_page(browser.new_context(viewport={"width": 1400, "height": 1000}), TIMEOUT_MS)
        page.goto(url)
        page.locator(bs.NAV_LINK).first.wait_for()
        settle(page)
        with bs.failure_shots("test_survey_page_on_an_uploaded_table"):
            _walk(page, root, data)
        browser.close()


def _walk(page, root, data: bytes) -> None:
    """The walk of the test above, on its page."""
    goto(page, "1 · Data")
    bs.upload_table(page, [{"name": "own_survey.csv", "mimeType": "text/csv", "buffer": data}])
    income_bins = page.get_by_role("radiogroup", name="Bins of income")
    income_bins.wait_for()  # drawn by the upload's run (asked for once the file was sent)
    settle(page)
    income_bins.get_by_text("codebook edges").click()
    settle(page)
    fill(page, "edges", "0,1000,2000,4000,8000,100000", role="textbox")
    page.get_by_role("button", name="Confirm: these names").click()
    settle(page)
    page.get_by_text("declared public by the curator").first.wait_for()
    ws = book(root, page)
    [table] = [t for t in ws.tables() if t.name == "upload: own_survey.csv"]
    fp = table.fingerprint

    goto(page, "6 · Survey")
    page.get_by_text("The table on the Data page (upload: own_survey.csv)").first.wait_for()
    pick(page, "Target (to impute)", "region")  # unusable: said in one line, the button stays off
    page.get_by_text("'region' is not numeric").first.wait_for()
    expect(page.get_by_role("button", name=re.compile(r"^Compute release \(spends ε")).first).to_be_disabled()
    shot(page, "survey-own-refused")
    pick(page, "Target (to impute)", "income")
    pick(page, "Matching attributes", "region", multi=True)
    pick(page, "Matching attributes", "sex", multi=True)
    page.get_by_text("mean", exact=True).first.click()
    settle(page)
    fill(page, "Lower bound", "0")
    fill(page, "Upper bound", "10000")
    go = page.get_by_role("button", name=re.compile(r"^Compute release \(spends ε")).first
    expect(go).to_be_enabled()
    go.click()
    page.get_by_text("DP mean of income").first.wait_for()
    settle(page)
    entries = ws.releases(fp)
    assert [e["method"] for e in entries] == ["survey: dp imputation"]
    assert entries[0]["epsilon"] == pytest.approx(6 * math.log(2), rel=1e-9) and entries[0]["dp"] == 1
    shot(page, "survey-own-imputation")

    page.get_by_role("tab", name="Post-stratification (weights)").click()
    settle(page)
    pick(page, "Weights column", "w")
    pick(page, "Post-stratify on", "region", multi=True)
    pick(page, "Post-stratify on", "sex", multi=True)
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').last.set_input_files(
        files=[{"name": "totals.csv", "mimeType": "text/csv", "buffer": TOTALS}])
    page.get_by_text("totals.csv").first.wait_for()  # in the uploader; the button below waits for its run
    settle(page)
    fill(page, "Count rows where (pandas expression; empty: every row)", "voted == 'YES'", role="textbox")
    fill(page, "ε₃ weighted count", "1.5")  # with ε₂ = 0.5 (two columns: IPF); no ε₁ (no candidate bins)
    go = page.get_by_role("button", name="Compute release (spends ε = 2)")
    go.click()
    page.get_by_text("DP weighted count: voted == 'YES'").first.wait_for()
    settle(page)
    entries = ws.releases(fp)
    assert [e["method"] for e in entries] == ["survey: dp imputation", "survey: post-stratification"]
    assert entries[1]["epsilon"] == pytest.approx(2.0, rel=1e-9)
    assert ws.budget(fp)["spent"] == pytest.approx(6 * math.log(2) + 2.0, rel=1e-9)  # exactly the ε spent
    shot(page, "survey-own-poststrat")
