"""A curator's whole day in a real browser (Playwright driving Debian's Chromium), in one test:

1. upload an SPSS file whose value labels become levels;
2. rename a level in the Data page's table editor and ask for DP quantile edges for a
   numeric column; confirm the domain;
3. set ε on the Design page, save the design, release;
4. reload the browser and find the table, the renamed level, the DP-bins setting, the
   design and the release still there (the workspace restores them from ``?ws=``);
5. set a cap and release again until the cap refuses, naming the remaining budget;
6. build and download the release report and open it with every network request refused:
   its charts draw.

Screenshots of every step go to tests/artifacts/ (git-ignored): day-1-upload.png,
day-2-domain-editor.png, day-3-release.png, day-4-restored.png, day-5-cap-refused.png,
day-6-report-offline.png; the README tour shows copies in assets/screenshots/.
Skipped only when no Chromium binary is installed (``make chromium``).
"""
from __future__ import annotations

import io
import json
import re
import time
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from dpcore.data import domain as dpcore_domain
from tests.browser import browser_support as bs
from tests.browser.browser_support import ARTIFACTS, NAV_LINK, NEEDS_CHROMIUM, type_epsilon

pytestmark = NEEDS_CHROMIUM
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")
expect = sync_api.expect
TIMEOUT_MS = bs.CEILING_MS
N = 400


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``streamlit run app.py`` on a free port with its workspaces in a fresh folder; (url, root)."""
    root = tmp_path_factory.mktemp("day-workspaces")
    with bs.app_server(root, "streamlit-day.log") as url:
        yield url, root


def settle(page) -> None:
    """Wait until the app has finished its run, and check it raised nothing."""
    bs.settle(page, TIMEOUT_MS)
    bs.no_exception(page)


def goto(page, label: str) -> None:
    bs.goto(page, label, TIMEOUT_MS)


def shot(page, name: str, full: bool = False) -> None:
    page.mouse.move(5, 5)  # no tooltip in the picture
    bs.wait_drawn(page)
    page.screenshot(path=str(ARTIFACTS / name), full_page=full)


def _spss_file(path: Path) -> Path:
    import numpy as np
    import pyreadstat

    rng = np.random.default_rng(5)
    df = pd.DataFrame({"sex": rng.choice([1.0, 2.0], N), "region": rng.choice([1.0, 2.0, 3.0], N),
                       "age": rng.integers(18, 90, N).astype(float)})
    pyreadstat.write_sav(df, str(path), variable_value_labels={"sex": {1.0: "male", 2.0: "female"},
                                                               "region": {1.0: "North", 2.0: "South", 3.0: "East"}})
    return path


def _download(page, button: str, target: Path) -> Path:
    with page.expect_download() as dl:
        page.get_by_role("button", name=button).first.click()
    dl.value.save_as(str(target))
    return target


def _release_zip(page, tmp_path: Path, name: str) -> tuple[dict, pd.DataFrame]:
    """The release's manifest and its first synthetic set, from the page's zip download."""
    with zipfile.ZipFile(_download(page, "All sets + manifest (zip)", tmp_path / name)) as z:
        return json.loads(z.read("manifest.json")), pd.read_csv(io.BytesIO(z.read("synthetic_1.csv")))


def _check_release(manifest: dict, first: pd.DataFrame) -> None:
    assert manifest["dp"] is True and manifest["epsilon"] == pytest.approx(0.4)
    record = manifest["diagnostics"]["dp_bin_edges"]["age"]
    edges = record["edges"]
    # 5 DP quantile bins over the public bounds; two noisy quantiles can meet, and repeats are dropped
    # (docs/methods/dp-quantiles.md), so at most 5 bins: the release is random (no seed in the app)
    assert record["bins_requested"] == 5 and 2 <= len(edges) <= 6 and record["bins"] == len(edges) - 1
    assert edges[0] == 0 and edges[-1] == 100 and edges == sorted(set(edges))
    # the rename is in the released domain; the values drawn are the domain's (at ε/m = 0.08 on 400 records
    # the default method, AIM, may draw one level only: its noise check says so on the Design page)
    [sex] = [a for a in manifest["domain"]["attributes"] if a["name"] == "sex"]
    assert "woman" in sex["levels"] and "female" not in sex["levels"]
    assert set(first["sex"]) <= {"male", "woman"}
    assert list(first.columns) == ["sex", "region", "age"]


def test_a_curators_day(server, tmp_path):
    url, root = server
    sav = _spss_file(tmp_path / "survey.sav")
    t_start = time.perf_counter()
    with sync_api.sync_playwright() as p:
        browser, context, page = bs.open_app(p, url, 1400, 1100, TIMEOUT_MS, accept_downloads=True)
        with bs.failure_shots("test_a_curators_day"):
            page.locator(NAV_LINK, has_text="1 · Data").first.wait_for()
            page.wait_for_function("() => location.search.includes('ws=')")  # the workspace id is in the address
            settle(page)
            ws_id = page.url.split("ws=")[1].split("&")[0]
            goto(page, "1 · Data")

            # 1. upload the SPSS file: its value labels become the levels
            bs.upload_table(page, str(sav))
            page.get_by_text(f"Schema: {N} rows × 3 columns").wait_for()
            page.get_by_text("value labels became the levels of: sex, region").wait_for()
            settle(page)  # the upload's run (asked for once the file was sent) has finished
            shot(page, "day-1-upload.png")

            # 2. the table editor: rename "female" to "woman" by typing in the grid
            page.get_by_text("Edit the domain (table editor)").click()
            settle(page)
            box = page.locator('[data-testid="stExpander"]', has_text="Edit the domain (table editor)").first
            grid = box.locator('[data-testid="stDataFrame"]').first
            # the first row's "new name" cell, in glide-data-grid's accessible table (it mirrors the canvas)
            new_name = grid.get_by_test_id("glide-cell-2-0")
            expect(new_name).to_have_text("female")  # the grid has drawn its rows
            bs.wait_drawn(page)
            # columns: row marker, level, new name, in data; the first data row (level "female": the domain
            # sorts the levels) is just below the header. A click selects the cell, Enter opens its editor
            # (glide-data-grid); replace the text there. The click is placed in the grid where it is then
            editor = page.locator(".gdg-input")
            grid.click(position={"x": 0.45 * grid.bounding_box()["width"], "y": 35 + 17})
            expect(new_name).to_have_attribute("aria-selected", "true")
            page.keyboard.press("Enter")
            editor.first.wait_for()  # the cell's editor is open, has the focus and is drawn
            page.wait_for_function("() => document.activeElement && document.activeElement.matches('.gdg-input')")
            bs.painted(page)
            page.keyboard.press("Control+A")
            page.keyboard.type("woman")
            expect(editor.first).to_have_value("woman")
            bs.painted(page)  # the editor holds the typed text before Enter commits it
            asked = bs.runs_asked(page)
            page.keyboard.press("Enter")
            expect(editor).to_have_count(0)
            expect(new_name).to_have_text("woman")  # committed in the grid
            bs.settle(page, TIMEOUT_MS, after=asked)  # the grid asks for its run a moment after the edit
            bs.no_exception(page)
            page.get_by_role("button", name="Apply the level edits").click()
            settle(page)
            box.get_by_text("Recodes applied to the data before release").wait_for()  # the rename is a recode

            # DP quantile edges for age: 5 bins over the public bounds [0, 100]
            box.locator('[data-testid="stSelectbox"]').first.click()
            page.get_by_role("option", name="age").click()
            settle(page)
            box.get_by_text("DP quantile edges", exact=True).first.click()
            settle(page)
            for label, value in (("public lower bound", "0"), ("public upper bound", "100"), ("bins", "5")):
                bs.type_value(page, box.get_by_role("spinbutton", name=label), value, settle)
            page.get_by_role("button", name="Use DP quantile edges").click()
            settle(page)
            dp_note = box.locator("p", has_text="DP quantile edges at release").first
            expect(dp_note).to_contain_text("age: 5 bins over [0, 100]")
            page.set_viewport_size({"width": 1400, "height": 2000})  # the whole editor in one picture
            box.scroll_into_view_if_needed()
            page.mouse.move(5, 5)
            bs.wait_drawn(page)
            box.screenshot(path=str(ARTIFACTS / "day-2-domain-editor.png"))
            page.set_viewport_size({"width": 1400, "height": 1100})
            page.get_by_role("button", name="Confirm: these names, levels and bin edges are public").click()
            settle(page)
            page.get_by_text("declared public by the curator").first.wait_for()

            # 3. design: ε = 0.4, saved under a name; then release: one click is one release at ε = 0.4
            goto(page, "2 · Design")
            type_epsilon(page, "0.4", settle)
            bs.type_value(page, page.get_by_role("textbox", name="Name"), "survey day", settle)
            page.get_by_role("button", name="Save design").click()
            settle(page)
            page.get_by_text("Saved 'survey day'.").wait_for()
            goto(page, "4 · Release")
            page.get_by_role("button", name="Release (spends ε = 0.4)").click()
            page.get_by_text("ε-differentially private with ε = 0.4").first.wait_for(timeout=bs.JOB_CEILING_MS)
            settle(page)
            expect(page.get_by_text("NOT DP —")).to_have_count(0)
            page.get_by_text("spent ε = 0.4 (no cap set)").first.wait_for()
            manifest, first = _release_zip(page, tmp_path, "release-before.zip")
            _check_release(manifest, first)
            shot(page, "day-3-release.png")

            # 4. reload the browser: a new Streamlit session restores the workspace from ?ws=
            t0 = time.perf_counter()
            page.reload()
            page.get_by_text("spent ε = 0.4 (no cap set)").first.wait_for()
            restore_s = time.perf_counter() - t0
            settle(page)
            assert "ws=" + ws_id in page.url
            sidebar = page.locator('[data-testid="stSidebar"]')
            for part in ("upload: survey.sav", "Domain declared public", "ε = 0.4"):
                expect(sidebar).to_contain_text(part)
            page.get_by_text("ε-differentially private with ε = 0.4").first.wait_for()  # the release is back
            again, again_first = _release_zip(page, tmp_path, "release-restored.zip")
            assert again == manifest  # the same release, not a new one
            assert again_first.to_csv(index=False) == first.to_csv(index=False)
            shot(page, "day-4-restored.png", full=True)
            goto(page, "1 · Data")
            page.get_by_text("declared public by the curator").first.wait_for()
            page.get_by_text("Edit the domain (table editor)").click()
            settle(page)
            box = page.locator('[data-testid="stExpander"]', has_text="Edit the domain (table editor)").first
            expect(box.locator("p", has_text="DP quantile edges at release").first).to_contain_text(
                "age: 5 bins over [0, 100]")
            box.get_by_text("Recodes applied to the data before release").wait_for()
            domain = json.loads(_download(page, "Download domain.json", tmp_path / "domain.json").read_text())
            [sex] = [a for a in domain["attributes"] if a["name"] == "sex"]
            assert "woman" in sex["levels"] and "female" not in sex["levels"]
            assert domain["source"] == dpcore_domain.DECLARED
            goto(page, "2 · Design")
            expect(page.get_by_role("spinbutton", name="or type ε")).to_have_value(re.compile(r"^0?\.40*$"))
            saved = json.loads(_download(page, "Export as JSON", tmp_path / "design.json").read_text())
            assert saved["name"] == "survey day" and saved["design"]["epsilon"] == pytest.approx(0.4)

            # 5. a cap of 1: one more release fits (0.4 + 0.4), the next is refused with what remains named
            goto(page, "4 · Release")
            bs.set_cap(page, "1", settle)
            page.get_by_text("spent ε = 0.4 of the cap 1; remaining 0.6").first.wait_for()
            page.get_by_role("button", name="Release (spends ε = 0.4)").click()
            page.get_by_text("spent ε = 0.8 of the cap 1; remaining 0.2").first.wait_for(timeout=bs.JOB_CEILING_MS)
            settle(page)
            page.get_by_role("button", name="Release (spends ε = 0.4)").click()  # enabled once the release is done
            settle(page)
            refusal = page.locator('[data-testid="stAlertContentError"]',
                                   has_text="needs ε = 0.4 but only ε = 0.2 of this table's budget remains").first
            refusal.wait_for()
            page.get_by_text("spent ε = 0.8 of the cap 1; remaining 0.2").first.wait_for()  # nothing spent
            shot(page, "day-5-cap-refused.png", full=True)
            last, last_first = _release_zip(page, tmp_path, "release-last.zip")
            _check_release(last, last_first)
            assert last != manifest  # the second release, with fresh noise

            # 6. the report of the last release, with the curator-only figures (ticked: the default is the
            #    publishable report), downloaded and opened with the network cut off
            page.get_by_text("Include utility and risk figures").click()
            settle(page)
            page.get_by_role("button", name="Build the report").click()
            settle(page)
            with page.expect_download() as dl:
                page.get_by_role("button", name="Download report (HTML)").first.click()
            assert dl.value.suggested_filename == "release_report_CURATOR-ONLY_NOT_DP.html"
            report = tmp_path / dl.value.suggested_filename
            dl.value.save_as(str(report))
            context.close()
            text = report.read_text(encoding="utf-8")
            assert "woman" in text and "DP-derived: exponential-mechanism quantiles" in text
            offline = browser.new_context(viewport={"width": 1100, "height": 1400}, offline=True)
            requests = []
            offline.route("**/*", lambda route: (requests.append(route.request.url), route.abort())
                          if not route.request.url.startswith("file:") else route.continue_())
            rp = offline.new_page()
            rp.set_default_timeout(TIMEOUT_MS)
            rp.goto(report.as_uri())
            # every chart is drawn, not blank (ledger, heat map, bar charts): plotly draws them one after another
            rp.wait_for_function("""() => { const plots = document.querySelectorAll('.js-plotly-plot');
                return plots.length >= 3 && [...plots].every(p => p.querySelector('.main-svg')); }""",
                                 timeout=TIMEOUT_MS)
            assert requests == []
            assert rp.get_by_text("CURATOR-ONLY — NOT DP").count() >= 3
            assert rp.locator(".curator-mark").count() == 2  # the header and footer of every printed page
            rp.screenshot(path=str(ARTIFACTS / "day-6-report-offline.png"))
            offline.close()
            browser.close()
    print(f"reload and restore in the browser: {restore_s:.2f} s; the whole day: {time.perf_counter() - t_start:.1f} s")

    # the budget book in the workspace folder: two complete releases, 0.8 spent, nothing for the refusal
    from dpcore.studio.workspace import Workspace

    ws = Workspace.in_root(ws_id, root)  # the book of the server's root
    [table] = [t for t in ws.tables() if t.kind == "copy"]  # the demo loaded first is a reference
    assert table.name == "upload: survey.sav" and table.n_rows == N
    live = [e for e in ws.releases(table.fingerprint) if e["status"] != "aborted"]
    assert len(live) == 2 and all(e["status"] == "complete" for e in live)
    assert {k: ws.budget(table.fingerprint)[k] for k in ("spent", "cap", "remaining")} == {
        "spent": pytest.approx(0.8), "cap": 1.0, "remaining": pytest.approx(0.2)}
