"""[studio-polish] in Chromium: what a curator saw on outside tables, fixed and looked at.

* the Start page's step cards are one height at 1280 and 1920 px;
* the sidebar's count of sets done moves while a release runs and the curator is on another page;
* an ε above 10 is accepted with a warning on the Design page;
* the Release page after a release: the spent ledger's legend lists a few kinds of charge and leaves the
  sets' labels visible; the synthetic sets show no raw None.

Screenshots at 1280 and 1920 px go to tests/artifacts/ (polish-*.png).
"""
from __future__ import annotations

import re

import pytest

from tests.browser import browser_support as bs
from tests.browser.browser_support import ARTIFACTS, CHROMIUM, LAUNCH_ARGS, NEEDS_CHROMIUM

pytestmark = NEEDS_CHROMIUM
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")
expect = sync_api.expect
TIMEOUT_MS = bs.CEILING_MS


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    root = tmp_path_factory.mktemp("polish-workspaces")
    with bs.app_server(root, "streamlit-polish.log") as url, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        pg = bs.new_page(browser.new_context(viewport={"width": 1280, "height": 1000}), TIMEOUT_MS)
        pg.goto(url)
        pg.get_by_role("heading", name="DP release studio").wait_for()
        bs.settle(pg, TIMEOUT_MS)
        yield pg
        browser.close()


def settle(page) -> None:
    bs.settle(page, TIMEOUT_MS)


def goto(page, label: str) -> None:
    bs.goto(page, label, TIMEOUT_MS)


def shot(page, name: str) -> None:
    bs.screenshot_widths(page, lambda w: ARTIFACTS / f"polish-{name}-{w}.png", (1280, 1920),
                         {"width": 1280, "height": 1000})


#: the heights of the Start page's step cards, once all six are drawn and their height is the same on three polls
CARD_HEIGHTS = """() => [...document.querySelectorAll('[class*="st-key-step_card_"]')]
                         .map(e => Math.round(e.getBoundingClientRect().height))"""


def test_start_page_cards_are_one_height(page):
    cards = page.locator('[class*="st-key-step_card_"]')
    expect(cards).to_have_count(6)
    for w in (1280, 1920):
        page.set_viewport_size({"width": w, "height": 1000})
        bs.wait_drawn(page)  # the cards are laid out again at the new width
        heights = page.evaluate(CARD_HEIGHTS)
        assert len(heights) == 6 and max(heights) - min(heights) <= 1, (w, heights)
    shot(page, "start")


def test_an_epsilon_above_ten_is_warned_about_on_the_design_page(page):
    goto(page, "2 · Design")
    bs.type_epsilon(page, "1000000", settle)
    warning = page.locator('[data-testid="stAlertContentWarning"]', has_text="in name only")
    expect(warning.first).to_be_visible()  # retries until the rerun has drawn it
    bs.type_epsilon(page, "1", settle)
    expect(warning).to_have_count(0)  # retries until the rerun has removed it


#: Watches the sidebar from now on (every animation frame and every change), collecting the counts of sets
#: done that "A release is running (k/n …)" shows, and whether it said the release has finished.
WATCH_SIDEBAR = """() => {
  window.__dpSeen = new Set(); window.__dpFinished = false;
  const look = () => {
    const bar = document.querySelector('[data-testid="stSidebar"]');
    const text = bar ? bar.innerText : '';
    const m = text.match(/A release is running \\((\\d+)\\/(\\d+)/);
    if (m) window.__dpSeen.add(Number(m[1]));
    if (text.includes('release has finished')) window.__dpFinished = true;
  };
  new MutationObserver(look).observe(document.body, {subtree: true, childList: true, characterData: true});
  const frame = () => { look(); requestAnimationFrame(frame); };
  frame();
}"""


def test_sidebar_progress_moves_and_the_release_page_reads_well(page):
    goto(page, "1 · Data")
    page.get_by_role("button", name=re.compile("^Confirm")).first.click()
    settle(page)
    page.get_by_text("declared public by the curator").first.wait_for()
    goto(page, "2 · Design")  # 20 sets: a release long enough to watch from another page
    bs.type_value(page, page.get_by_role("spinbutton", name="Synthetic sets m").first, "20", settle)
    expect(page.locator('[data-testid="stSidebar"]')).to_contain_text("m = 20")
    goto(page, "4 · Release (spends ε)")
    page.get_by_role("button", name=re.compile(r"^Release \(spends")).first.click()
    page.get_by_role("button", name="Cancel the release").wait_for()  # it runs in the background
    page.evaluate(WATCH_SIDEBAR)
    goto(page, "1 · Data")
    sidebar = page.locator('[data-testid="stSidebar"]')
    expect(sidebar).to_contain_text(re.compile("A release is running|The release has finished"))
    # a release of 20 sets runs for several seconds: the count must move, as long as the release takes
    page.wait_for_function("() => window.__dpSeen.size >= 2 || window.__dpFinished", timeout=bs.JOB_CEILING_MS)
    seen = page.evaluate("() => [...window.__dpSeen]")
    assert len(seen) >= 2 or page.evaluate("() => window.__dpFinished"), seen
    goto(page, "4 · Release (spends ε)")
    page.get_by_text("Released 20 set(s)").first.wait_for(timeout=bs.JOB_CEILING_MS)
    page.get_by_text("Budget ledger (spent)").first.wait_for()
    legend = page.locator('[data-testid="stPlotlyChart"]', has_text="kind (hover a segment").first
    legend.locator("g.legend g.traces").first.wait_for()  # the chart's legend is drawn
    bs.wait_drawn(page)
    entries = legend.locator("g.legend g.traces").count()
    assert 1 <= entries <= 6, entries  # a few kinds of charge, not one entry per charge
    # the set labels under the bars are drawn and not covered by the legend
    ticks = legend.locator("g.xtick text")
    assert ticks.count() >= 5
    last_tick = ticks.nth(ticks.count() - 1).bounding_box()
    legend_box = legend.locator("g.legend").bounding_box()
    assert last_tick["y"] + last_tick["height"] <= legend_box["y"] + 1
    # the budget book's history fits at 1280 px: no column cut off behind a horizontal scroll
    page.set_viewport_size({"width": 1280, "height": 1000})
    page.locator('[data-testid="stDataFrame"] .dvn-scroller').first.wait_for(state="attached")
    bs.wait_drawn(page)  # the grid is laid out again at the new width
    overflow = page.evaluate("""() => { const s = document.querySelector('[data-testid="stDataFrame"] .dvn-scroller');
                                         return s ? s.scrollWidth - s.clientWidth : null; }""")
    assert overflow is not None and overflow <= 1, overflow
    shot(page, "release")
