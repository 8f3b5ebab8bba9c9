"""[honest-flow] in a real browser (Playwright driving Debian's Chromium): the studio's default path does
what it says.

* a cold start opens on the Start page and the sidebar never lists internal modules;
* done-when (a): upload a categorical table, confirm its domain, release with the defaults — the budget
  book's increase equals the ε on the button that was clicked;
* the Design page's method adviser (recommendation, predicted errors and their record, tooltips that link
  to the docs);
* the noise warnings on Design and Preview, and one message for an invalid ε;
* Cancel for a long release and for a sweep; a release started before leaving the page is shown on return.

Screenshots of the pages at 1280 and 1920 px go to tests/artifacts/ (git-ignored); the README's new
screenshots (assets/screenshots/start.png, design-adviser.png, …) are copies of some of them.
Skipped only when no Chromium binary is installed (``make chromium``).
"""
from __future__ import annotations

import re
from urllib.parse import unquote

import numpy as np
import pandas as pd
import pytest

from dpcore.synthesizers import REGISTRY
from tests.browser import browser_support as bs
from tests.browser.browser_support import ARTIFACTS, CHROMIUM, LAUNCH_ARGS, NEEDS_CHROMIUM, no_exception

pytestmark = NEEDS_CHROMIUM
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")
expect = sync_api.expect
TIMEOUT_MS = bs.CEILING_MS
PAGE_TITLES = {"Start", "1 · Data", "2 · Design", "3 · Preview (spends nothing)", "4 · Release (spends ε)",
               "5 · Trade-offs", "6 · Survey estimates", "Docs and glossary"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A fresh ``streamlit run app.py`` (cold: the first test sees its first session); (url, workspace root)."""
    root = tmp_path_factory.mktemp("honest-workspaces")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with open(ARTIFACTS / "streamlit-honest.log", "w") as log:
        proc, url = bs.start_streamlit(log, DPSTUDIO_WORKSPACE=str(root))
        yield url, root
        bs.stop(proc)


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        yield b
        b.close()


def settle(page) -> None:
    bs.settle(page, TIMEOUT_MS)
    bs.no_exception(page)


def goto(page, label: str) -> None:
    page.mouse.move(700, 5)  # no tooltip left open over the sidebar (the click also waits until none covers it)
    bs.goto(page, label, TIMEOUT_MS)


def shot(page, name: str, widths=(1280, 1920)) -> None:
    """The whole page at each width (the viewport grows to the page's height: Streamlit scrolls inside),
    once its charts are drawn and its layout is still."""
    bs.screenshot_widths(page, lambda w: ARTIFACTS / f"{name}-{w}.png", widths, {"width": 1400, "height": 1000})


def new_page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    context.set_default_timeout(TIMEOUT_MS)
    return context, bs.new_page(context, TIMEOUT_MS)


def open_app(browser, url: str, label: str | None = None):
    """A new tab (a new session and workspace) on the app, then on the page ``label``."""
    context, page = new_page(browser)
    page.goto(url)
    page.locator(bs.NAV_LINK).first.wait_for()
    settle(page)
    if label:
        goto(page, label)
    return context, page


def choose(page, label: str, option: str) -> None:
    """Pick the option starting with ``option`` in the select box labelled ``label`` (typed, then chosen)."""
    page.mouse.move(5, 5)
    box = page.get_by_role("combobox", name=label).first
    box.scroll_into_view_if_needed()
    box.click()
    box.fill(option)
    page.get_by_role("option", name=re.compile("^" + re.escape(option))).first.click()
    settle(page)


def workspace(page, root):
    from dpcore.studio.workspace import Workspace

    page.wait_for_function("() => location.search.includes('ws=')")
    ws_id = re.search(r"ws=([^&]+)", page.url).group(1)
    return Workspace.in_root(ws_id, root)  # the book of the server's root


SPENT = re.compile(r"spent ε = ([0-9.e+-]+)")


def spent_on_page(page) -> float:
    """The spent ε in the budget book's chart title, once the chart has drawn its SVG text."""
    title = page.locator('[data-testid="stPlotlyChart"] svg text', has_text=SPENT).first
    return float(SPENT.search(title.text_content()).group(1))


def test_cold_start_opens_on_the_start_page_and_lists_no_internal_module(server, browser):
    url, root = server
    context, page = new_page(browser)
    # every link the sidebar ever shows, sampled from the first paint on
    page.add_init_script("""window.__links = new Set(); setInterval(() => {
        document.querySelectorAll('[data-testid="stSidebar"] a, [data-testid="stSidebarNav"] a')
          .forEach(a => { const t = a.innerText.trim().split('\\n').pop(); if (t) window.__links.add(t); });
      }, 20);""")
    page.goto(url)
    page.get_by_role("heading", name="DP release studio").wait_for()
    page.get_by_text("Nothing is kept yet").first.wait_for()  # a visit alone makes no workspace folder
    settle(page)
    expect(page.locator(bs.NAV_LINK)).to_have_count(len(PAGE_TITLES))
    # the sampler has seen every link drawn now (it samples every 20 ms from the first paint on)
    page.wait_for_function("""() => [...document.querySelectorAll('[data-testid="stSidebar"] a')]
        .map(a => a.innerText.trim().split('\\n').pop()).filter(Boolean).every(t => window.__links.has(t))""")
    links = set(page.evaluate("() => Array.from(window.__links)"))
    assert links and links <= PAGE_TITLES, f"the sidebar showed {sorted(links - PAGE_TITLES)}"
    main = page.locator('[data-testid="stMain"]')
    for step in ("1 · Data", "2 · Design", "3 · Preview", "4 · Release", "5 · Trade-offs"):
        expect(main).to_contain_text(step)
    expect(page.locator("h1 a, h2 a, h3 a")).to_have_count(0)  # no heading anchors in the keyboard's way
    shot(page, "start")
    page.get_by_role("button", name="Open the demo").click()
    page.get_by_role("heading", name="1 · Data").wait_for()
    settle(page)
    ws = workspace(page, root)
    goto(page, "Start")  # now the tab works in a workspace, and a local server shows its folder
    page.get_by_text("This browser tab works in the workspace").first.wait_for()
    for part in (ws.id, "DPSTUDIO_WORKSPACE", f"?ws={ws.id}", str(ws.folder)):
        expect(main).to_contain_text(part)
    context.close()


def _categorical_csv(path):
    rng = np.random.default_rng(18)
    n = 400
    region = rng.choice(["north", "south", "east", "west"], n)
    employed = np.where(rng.random(n) < 0.6, "yes", "no")
    pd.DataFrame({"region": region, "sex": rng.choice(["F", "M"], n),
                  "agegroup": rng.choice(["16-29", "30-49", "50-64", "65+"], n),
                  "employed": employed}).to_csv(path, index=False)
    return path


def upload_and_confirm(page, csv) -> None:
    """On the Data page: upload ``csv`` and confirm its (all categorical) domain as public."""
    bs.upload_table(page, str(csv))
    page.get_by_text(f"upload: {csv.name}").first.wait_for()
    settle(page)  # the upload's run, asked for once the file was sent
    page.get_by_role("button", name=re.compile("^Confirm")).first.click()
    settle(page)
    page.get_by_text("declared public by the curator").first.wait_for()


def test_done_when_a_one_click_spends_the_epsilon_on_the_button(server, browser, tmp_path):
    """Upload a categorical table, confirm the domain, release with the defaults: the budget book's
    increase equals the ε on the button."""
    url, root = server
    context, page = new_page(browser)
    page.goto(url)
    page.get_by_role("heading", name="DP release studio").wait_for()
    settle(page)
    goto(page, "1 · Data")
    upload_and_confirm(page, _categorical_csv(tmp_path / "survey.csv"))

    goto(page, "4 · Release")
    button = page.get_by_role("button", name=re.compile(r"^Release \(spends ε = "))
    eps_on_button = float(re.search(r"ε = ([0-9.e+-]+)\)", button.inner_text()).group(1))
    ws = workspace(page, root)
    [table] = [t for t in ws.tables() if t.name == "upload: survey.csv"]
    before_book, before_page = ws.budget(table.fingerprint)["spent"], spent_on_page(page)
    button.click()
    # the release runs in the background: wait for its end as the page shows it, as long as a job may take
    page.get_by_text(re.compile(r"Released \d+ set\(s\)")).first.wait_for(timeout=bs.JOB_CEILING_MS)
    statement = page.get_by_text(f"ε-differentially private with ε = {eps_on_button:g}").first
    statement.wait_for()
    settle(page)
    after_book = ws.budget(table.fingerprint)["spent"]
    assert after_book - before_book == pytest.approx(eps_on_button, abs=1e-9)
    page.locator('[data-testid="stPlotlyChart"] svg text',
                 has_text=f"spent ε = {before_page + eps_on_button:g} (no cap set)").first.wait_for()
    live = [e for e in ws.releases(table.fingerprint) if e["status"] != "aborted"]
    assert len(live) == 1 and live[0]["epsilon"] == pytest.approx(eps_on_button)
    page.get_by_text("Budget ledger (spent)").first.wait_for()  # the page's last section: the release is drawn
    expect(page.get_by_text("Comparators")).to_have_count(0)
    shot(page, "release")
    context.close()


def test_the_adviser_recommends_with_its_sources_and_the_terms_link_to_the_docs(server, browser):
    url, _ = server
    context, page = open_app(browser, url, "2 · Design")
    panel = page.locator(".st-key-adviser_panel")
    panel.get_by_text("Method adviser").first.wait_for()
    recommended = re.compile(r"recommended for this table: (.+)")
    expect(panel).to_contain_text(recommended)
    pick = recommended.search(panel.inner_text()).group(1).strip()
    assert pick in {s.display_name for s in REGISTRY.values()}  # the model's pick on the S7 demo
    expect(page.get_by_role("combobox", name="Method of the release")).to_have_value(
        f"Recommended for this table: {pick}")
    panel.get_by_text("Why, method by method").click()
    settle(page)
    for part in ("predictions from public facts", "Predicted mean two-way S_pMSE",
                 "bench/RESULTS.md",  # where the model's leave-one-table-out record is
                 *(spec.display_name for spec in REGISTRY.values())):
        expect(panel).to_contain_text(part)
    # a term's tooltip: its sentence and a link to its docs page
    page.locator('[data-testid="stTooltipIcon"]').first.hover()
    expect(page.locator('[data-testid="stTooltipContent"]').first).to_contain_text("More:")
    page.mouse.move(5, 5)
    # STEPS shows its terms, each a link into the docs viewer
    choose(page, "Method of the release", "STEPS")
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("STEPS-2 MoSDA").first.wait_for()  # the rerun may still be drawing on a loaded machine
    settle(page)
    expect(sidebar).not_to_contain_text("(the adviser's pick)")  # never stale
    terms = page.locator('[data-testid="stCaptionContainer"]', has_text="Terms:").first
    for term in ("MoSDA", "LeSDA", "Phantom padding", "Fan-out"):
        expect(terms).to_contain_text(term)
    with context.expect_page() as popup:
        terms.get_by_role("link", name="MoSDA").click()
    docs = popup.value
    docs.get_by_role("heading", name="Docs and glossary").wait_for(timeout=TIMEOUT_MS)
    docs.get_by_text("Most-informative-first selection").first.wait_for(timeout=TIMEOUT_MS)
    assert "doc=methods/steps.md" in unquote(docs.url) and "ws=" in docs.url
    docs.close()
    shot(page, "design-steps")
    choose(page, "Method of the release", "Recommended for this table")
    expect(sidebar).to_contain_text("(the adviser's pick)")
    panel.get_by_text("Why, method by method").click()  # folded again for the picture
    settle(page)
    shot(page, "design")
    context.close()


def test_noise_warnings_on_design_and_preview_and_one_message_for_a_bad_epsilon(server, browser):
    url, _ = server
    context, page = open_app(browser, url, "1 · Data")  # the sidebar's summary follows a dropped column at once
    drop = page.get_by_role("combobox", name="Drop columns")
    drop.click()
    drop.fill("marital")
    page.get_by_role("option", name="marital").first.click()
    settle(page)
    page.locator('[data-testid="stSidebar"]', has_text="5,000 rows × 6 columns (1 dropped)").first.wait_for()
    goto(page, "2 · Design")
    bs.type_epsilon(page, "0.01", settle)  # m = 1 (the default): ε = 0.01 on the one set swamps the counts
    alert = page.locator('[data-testid="stAlertContentError"]', has_text="Noise larger than the data").first
    expect(alert).to_contain_text("released counts")
    goto(page, "3 · Preview (spends nothing)")
    page.locator('[data-testid="stAlertContentError"]', has_text="Noise larger than the data").first.wait_for()
    page.get_by_text("Noise per kind of released count").first.click()
    settle(page)
    shot(page, "preview")
    goto(page, "2 · Design")
    errors = page.locator('[data-testid="stMain"] [data-testid="stAlertContentError"]')
    for bad in ("0", "-1"):
        bs.type_epsilon(page, bad, settle)
        expect(errors).to_have_count(1)
        expect(errors.first).to_contain_text("epsilon")
        expect(page.locator('[data-testid="stSidebar"]')).to_contain_text("ε not valid")
    bs.type_epsilon(page, "1", settle)
    expect(errors).to_have_count(0)
    expect(page.locator('[data-testid="stSidebar"]')).not_to_contain_text("ε not valid")
    groups = page.evaluate("() => Array.from(document.querySelectorAll('[role=radiogroup]'))"
                           ".map(g => g.getAttribute('aria-label') || g.getAttribute('aria-labelledby') || '')")
    assert groups and all(groups)
    context.close()


def test_cancel_a_long_release_and_come_back_to_a_finished_one(server, browser):
    url, root = server
    context, page = open_app(browser, url, "1 · Data")
    page.get_by_role("button", name=re.compile("^Confirm")).first.click()
    settle(page)
    page.get_by_text("declared public by the curator").first.wait_for()
    goto(page, "2 · Design")
    bs.type_value(page, page.get_by_role("spinbutton", name="Synthetic sets m"), "50", settle)
    expect(page.locator('[data-testid="stSidebar"]')).to_contain_text("m = 50")
    goto(page, "4 · Release (spends ε)")
    ws = workspace(page, root)
    fp = next(t.fingerprint for t in ws.tables() if t.name.startswith("SD2011"))
    spent = ws.budget(fp)["spent"]
    page.get_by_role("button", name=re.compile(r"^Release \(spends")).click()
    cancel = page.get_by_role("button", name="Cancel the release")
    cancel.wait_for()  # the release runs in the background: its progress and Cancel, not its result
    page.locator('[data-testid="stProgress"]').first.wait_for()
    cancel.click()
    page.locator('[data-testid="stAlertContentWarning"]', has_text="Release cancelled").first.wait_for(
        timeout=bs.JOB_CEILING_MS)  # it stops before its next set
    settle(page)
    assert ws.budget(fp)["spent"] == pytest.approx(spent)
    assert [e["status"] for e in ws.releases(fp)][-1] == "aborted"

    # leave while a release runs: the sidebar says so; back on the Release page it is shown
    page.get_by_role("button", name=re.compile(r"^Release \(spends")).click()
    page.get_by_role("button", name="Cancel the release").wait_for()
    goto(page, "2 · Design")
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("A release is running").first.wait_for()
    # the sidebar says when it has finished (its notice redraws itself every second)
    sidebar.get_by_text("The release has finished").first.wait_for(timeout=bs.JOB_CEILING_MS)
    assert ws.releases(fp)[-1]["status"] == "complete"
    goto(page, "4 · Release (spends ε)")
    page.get_by_text(re.compile(r"Released 50 set\(s\)")).first.wait_for()
    page.get_by_text("ε-differentially private with ε = 1").first.wait_for()
    assert ws.budget(fp)["spent"] == pytest.approx(spent + 1)
    goto(page, "2 · Design")
    bs.type_value(page, page.get_by_role("spinbutton", name="Synthetic sets m"), "5", settle)
    context.close()


#: what the Trade-offs page says under a finished sweep of its current settings (never under a stale one)
SWEEP_VERDICT = re.compile(r"At every ε of this sweep|The adviser and this sweep disagree")


def sweep_done(page) -> None:
    """After a click on Run sweep: wait for the end of the sweep as the page shows it. The click's run draws
    the sweep's progress and its Cancel button; the page runs again when the sweep has finished, without
    them (2 reps of two methods: minutes on a loaded machine); then it draws the charts of this sweep's own
    results and, after them, the adviser's check against them (while a sweep runs, that check may still be
    about the results of an earlier, cancelled sweep)."""
    settle(page)
    expect(page.get_by_role("button", name="Cancel sweep")).to_have_count(0, timeout=bs.JOB_CEILING_MS)
    settle(page)
    page.get_by_text(SWEEP_VERDICT).first.wait_for()
    expect(page.get_by_text("Showing the last sweep")).to_have_count(0)
    bs.wait_drawn(page)


def test_sweep_cancel_and_charts(server, browser):
    url, _ = server
    context, page = open_app(browser, url, "5 · Trade-offs")
    reps = page.get_by_role("spinbutton", name="reps")
    bs.type_value(page, reps, "40", settle)
    expect(reps).to_have_value("40")
    page.get_by_role("button", name="Run sweep").click()
    cancel = page.get_by_role("button", name="Cancel sweep")
    cancel.wait_for()  # the sweep runs in the background: its progress and Cancel, not its result
    page.locator('[data-testid="stProgress"]').first.wait_for()
    cancel.click()
    page.locator('[data-testid="stAlertContentWarning"]', has_text="Sweep cancelled").first.wait_for(
        timeout=bs.JOB_CEILING_MS)  # after the release in progress
    settle(page)
    bs.type_value(page, page.get_by_role("spinbutton", name="reps"), "2", settle)
    expect(reps).to_have_value("2")
    page.get_by_role("button", name="Run sweep").click()
    sweep_done(page)
    for title in ("SPECKS", "S_pMSE", "Replicated uniques", "Risk–utility"):
        page.locator('[data-testid="stPlotlyChart"] svg text', has_text=title).first.wait_for()
    shot(page, "tradeoffs")
    goto(page, "Docs and glossary")
    page.get_by_role("heading", name="Glossary").first.wait_for()
    shot(page, "docs")
    context.close()


def test_an_epsilon_delta_release_chosen_on_the_design_page(server, browser, tmp_path):
    """[privacy-definitions] in Chromium: the Design page offers (ε, δ) through zCDP in plain words with
    δ = 1e-9 preselected; the Release button names ε and δ; the release says "(ε, δ)-differentially
    private" and the budget book records its δ and ρ."""
    url, root = server
    context, page = open_app(browser, url, "1 · Data")
    upload_and_confirm(page, _categorical_csv(tmp_path / "survey_zcdp.csv"))

    goto(page, "2 · Design")
    page.get_by_text("Pure ε (strongest)").first.wait_for()
    page.get_by_text(re.compile(r"^\(ε, δ\) through zCDP")).first.click()
    settle(page)
    expect(page.get_by_role("combobox", name="δ").first).to_have_value(re.compile("1e-09"))  # preselected
    page.locator('[data-testid="stSidebar"]').get_by_text("ε = 1, δ = 1e-09").first.wait_for()  # not stale
    # the adviser predicts for (ε, δ) releases, and its noise check is the (ε, δ) noise
    panel = page.locator(".st-key-adviser_panel")
    panel.get_by_text(re.compile(r"public facts \(attributes, levels, ε, δ, m, n\)")).first.wait_for()
    panel.get_by_text("uses the (ε, δ) noise").first.wait_for()
    shot(page, "design-zcdp")

    goto(page, "4 · Release")
    button = page.get_by_role("button", name="Release (spends ε = 1, δ = 1e-09)")
    ws = workspace(page, root)
    [table] = [t for t in ws.tables() if t.name == "upload: survey_zcdp.csv"]
    button.click()
    page.get_by_text(re.compile(r"Released \d+ set\(s\)")).first.wait_for(timeout=bs.JOB_CEILING_MS)
    page.locator('[data-testid="stAlert"]', has_text="(ε, δ)-differentially private").first.wait_for()
    settle(page)
    [entry] = [e for e in ws.releases(table.fingerprint) if e["status"] != "aborted" and e["workspace"] == ws.id]
    assert entry["delta"] == pytest.approx(1e-9) and entry["rho"] > 0
    shot(page, "release-zcdp")
    goto(page, "5 · Trade-offs")  # its default comparison: the design's method and the adviser's next, under δ
    page.locator("h1", has_text="Trade-offs").first.wait_for()
    # its releases are (ε, δ) ones, at the design's m and δ
    page.get_by_text(re.compile(r"Sweep over ε at the design's m = \d+, δ = 1e-09")).first.wait_for()
    page.get_by_text("Two-way S_pMSE per table (last release)").first.wait_for()
    settle(page)
    no_exception(page)
    shot(page, "tradeoffs-zcdp")
    context.close()
