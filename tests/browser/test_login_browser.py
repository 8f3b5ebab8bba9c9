"""A team server with login, in a real browser (Playwright + Debian's Chromium) against a real
OpenID Connect provider that the test starts (``oidc-provider-mock``): log in, create a workspace,
log out; another curator logs in and is refused the first one's workspace; an admin opens it.
And a local server (no login): two visits leave no folder, the Start page says what is kept.

Screenshots (tests/artifacts/, git-ignored): start_local_{1280,1920}.png, login_{1280,1920}.png,
login_provider.png, start_logged_in_{1280,1920}.png, workspace_refused_{1280,1920}.png.
"""
from __future__ import annotations

import contextlib

import pytest

from tests.browser import browser_support as bs
from tests.browser.browser_support import (
    ARTIFACTS,
    NAV_LINK,
    NEEDS_CHROMIUM,
    open_app,
    settle,
    start_streamlit,
    stop,
)

pytestmark = [NEEDS_CHROMIUM]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")
oidc_mock = pytest.importorskip("oidc_provider_mock", reason="oidc-provider-mock is not installed "
                                                            "(requirements-dev.txt)")
expect = sync_api.expect

TIMEOUT_MS = bs.CEILING_MS
WIDTHS = (1280, 1920)


@contextlib.contextmanager
def app(root, log_name: str, **env: str):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with open(ARTIFACTS / log_name, "w") as log:
        proc, url = start_streamlit(log, DPSTUDIO_WORKSPACE=str(root), **env)
        try:
            yield url
        finally:
            stop(proc)


def shots(page, name: str) -> None:
    """Full-page screenshots at each width of WIDTHS, then back to the first."""
    page.mouse.move(5, 5)  # no tooltip in the picture
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 1000})
        bs.wait_drawn(page)  # laid out again at this width
        page.screenshot(path=str(ARTIFACTS / f"{name}_{width}.png"), full_page=True)
    page.set_viewport_size({"width": WIDTHS[0], "height": 1000})
    bs.wait_drawn(page)


def ws_id(page) -> str:
    """The workspace id in ``page``'s address, once the app has put it there."""
    page.wait_for_function("() => location.search.includes('ws=')")
    return page.url.split("ws=")[1].split("&")[0]


def workspace_folders(root) -> set[str]:
    return {p.name for p in root.iterdir() if p.is_dir()} if root.exists() else set()


def test_two_visits_on_a_local_server_leave_no_folder(tmp_path):
    root = tmp_path / "workspaces"
    with app(root, "streamlit_local.log") as url, sync_api.sync_playwright() as p:
        browser, context, page = open_app(p, url, WIDTHS[0], 1000, TIMEOUT_MS)
        page.wait_for_selector(NAV_LINK)
        page.get_by_text("Nothing is kept yet").first.wait_for()
        settle(page)
        first_id = ws_id(page)
        shots(page, "start_local")
        other = bs.new_page(context)
        other.goto(url)
        other.get_by_text("Nothing is kept yet").first.wait_for()
        settle(other)
        assert ws_id(other) != first_id
        assert workspace_folders(root) == set()
        expect(page.locator('[data-testid="stMain"]')).not_to_contain_text("starts a new, empty workspace")
        # the curator opens the demo: now the workspace exists, under the id in the address
        page.get_by_role("button", name="Open the demo").click()
        page.wait_for_url("**/data?ws=*")
        page.get_by_role("heading", name="1 · Data").wait_for()
        settle(page)
        assert workspace_folders(root) == {first_id}
        browser.close()


@pytest.fixture
def provider():
    """A real OIDC provider on a free port (any client id and secret are accepted; a login names its subject,
    which the provider also gives as the email)."""
    with oidc_mock.run_server_in_thread() as server:
        yield f"http://localhost:{server.server_port}"


def secrets_file(tmp_path, provider: str):
    path = tmp_path / "secrets.toml"
    path.write_text(f'''[auth]
redirect_uri = "http://127.0.0.1:{{port}}/oauth2callback"
cookie_secret = "a long random cookie secret for the test server"
client_id = "dpstudio-test"
client_secret = "test-secret"
server_metadata_url = "{provider}/.well-known/openid-configuration"
''')
    return path


def log_in(page, email: str) -> None:
    page.get_by_role("button", name="Log in").click()
    page.locator('input[name="sub"]').wait_for()  # the provider's own page
    page.locator('input[name="sub"]').fill(email)
    page.get_by_role("button", name="Authorize").click()
    page.get_by_text(f"Logged in as {email}").first.wait_for()
    settle(page)


def log_out(page) -> None:
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url("**/oauth2/end_session**")  # Streamlit ends the provider's session too
    page.get_by_role("button", name="End session").click()  # the provider asks to confirm
    page.get_by_role("button", name="Log in").wait_for()
    settle(page)


def test_log_in_log_out_and_another_curators_workspace_is_refused(tmp_path, provider):
    root = tmp_path / "workspaces"
    secrets = secrets_file(tmp_path, provider)
    with app(root, "streamlit_login.log", STREAMLIT_SECRETS_FILES=str(secrets),
             DPSTUDIO_ADMINS="root@example.org") as url, sync_api.sync_playwright() as p:
        browser, context, page = open_app(p, url, WIDTHS[0], 1000, TIMEOUT_MS)
        page.get_by_role("button", name="Log in").wait_for()
        settle(page)
        expect(page.locator(NAV_LINK)).to_have_count(0)  # nothing before login
        assert workspace_folders(root) == set()
        shots(page, "login")

        page.get_by_role("button", name="Log in").click()
        page.locator('input[name="sub"]').wait_for()
        page.screenshot(path=str(ARTIFACTS / "login_provider.png"), full_page=True)
        page.go_back()
        page.get_by_role("button", name="Log in").wait_for()

        log_in(page, "alice@example.org")
        page.get_by_text("Logged in as alice@example.org (curator)").first.wait_for()
        page.get_by_role("button", name="Open the demo").click()
        page.wait_for_url("**/data?ws=*")
        page.get_by_role("heading", name="1 · Data").wait_for()
        settle(page)
        alice_ws = ws_id(page)
        assert workspace_folders(root) == {alice_ws}
        sidebar = page.locator('[data-testid="stSidebar"]')
        expect(sidebar).to_contain_text(f"Workspace {alice_ws}")
        expect(sidebar).not_to_contain_text(str(root))  # no server path for a curator
        bs.goto(page, "Start")
        shots(page, "start_logged_in")

        log_out(page)
        page.goto(f"{url}/?ws={alice_ws}")  # the address alone, logged out: only the login screen
        page.get_by_role("button", name="Log in").wait_for()
        settle(page)
        expect(page.locator(NAV_LINK)).to_have_count(0)

        log_in(page, "bob@example.org")
        page.goto(f"{url}/?ws={alice_ws}")
        page.locator('[data-testid="stMain"] [data-testid="stAlert"]', has_text="belongs to another curator").wait_for()
        settle(page)
        page.wait_for_function("(ws) => !location.search.includes(ws)", arg=alice_ws)  # her id left the address
        expect(page.locator('[data-testid="stSidebar"]')).to_contain_text("SD2011")  # the demo, not her table
        shots(page, "workspace_refused")
        assert workspace_folders(root) == {alice_ws}  # the refused visit made no folder

        log_out(page)
        log_in(page, "root@example.org")  # an admin opens every workspace and sees its folder
        page.goto(f"{url}/?ws={alice_ws}")
        page.get_by_text("Logged in as root@example.org (admin)").first.wait_for()
        page.get_by_text(str(root / alice_ws)).first.wait_for()
        page.wait_for_function("(ws) => location.search.includes(ws)", arg=alice_ws)
        browser.close()
