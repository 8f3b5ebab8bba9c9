"""Workspaces and who opens them, in the app (AppTest): no folder per visit, a workspace belongs to
its creator on a server with login, admins see every workspace and set caps, paths only locally or
to admins. The login itself, against a real OIDC provider in Chromium: tests/browser/test_login_browser.py."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit.testing.v1")
from streamlit.testing.v1 import AppTest

from dpcore.studio.access import ADMINS_ENV, Registry
from dpcore.studio.workspace import DB_NAME, Workspace, root_folder
from tests.app.test_app import goto, texts

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
CPS = "CPS voters (Current Population Survey 1994–2018, 6231 × 10)"
AUTH = {"redirect_uri": "http://localhost:8501/oauth2callback", "cookie_secret": "a long random cookie secret",
        "client_id": "dpstudio", "client_secret": "s3cret",
        "server_metadata_url": "http://localhost:9400/.well-known/openid-configuration"}


def folders() -> set[str]:
    root = root_folder()
    return {p.name for p in root.iterdir() if p.is_dir()} if root.is_dir() else set()


def session(ws: str | None = None, user: str | None = None, login: bool = False) -> AppTest:
    """A new browser session on the Start page: with ``login`` the server has [auth] and ``user`` is
    logged in (None: logged out); ``ws`` as the address's ?ws=."""
    at = AppTest.from_file(APP, default_timeout=60)
    if login:
        at.secrets["auth"] = AUTH
        at.user = {"is_logged_in": True, "email": user} if user else {"is_logged_in": False}
    if ws is not None:
        at.query_params["ws"] = ws
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_two_visits_without_an_id_leave_no_folder():
    before = folders()
    a, b = session(), session()
    assert a.query_params["ws"] != b.query_params["ws"]  # each tab has its id in the address ...
    for at in (a, b):  # ... and a walk through the pages that changes nothing keeps nothing
        for page in ("pages/1_data.py", "pages/2_design.py", "pages/3_preview.py", "pages/0_start.py"):
            goto(at, page)
    assert folders() == before
    assert "Nothing is kept yet" in texts(a.markdown)
    assert "a tab opened without the id starts a new, empty workspace" not in texts(a.markdown).lower()


def test_a_workspace_is_created_when_a_table_is_loaded():
    at = session()
    ws_id = at.query_params["ws"]
    assert ws_id not in folders()
    goto(at, "pages/1_data.py")
    at.selectbox(key="w_demo").select(CPS).run()
    assert (root_folder() / ws_id / DB_NAME).is_file()
    assert at.query_params["ws"] == ws_id  # the id in the address is the one now on disk
    ws = Workspace.in_root(ws_id)
    assert [t.name for t in ws.tables()] == [CPS]
    goto(at, "pages/0_start.py")
    assert f"This browser tab works in the workspace **`{ws_id}`**" in texts(at.markdown)
    assert str(ws.folder) in texts(at.caption)  # a local server (no login): its folder is shown


def test_a_change_to_the_demo_the_studio_opened_creates_the_workspace():
    at = session()
    ws_id = at.query_params["ws"]
    at.session_state["cfg"]["epsilon"] = 0.25
    at.run()
    assert Workspace.in_root(ws_id).load_state("session")["cfg"]["epsilon"] == 0.25


def test_with_login_nothing_opens_before_logging_in():
    before = folders()
    at = session(login=True)
    assert [b.label for b in at.button] == ["Log in"]
    assert "log in" in texts(at.markdown).lower()
    assert not at.get("page_link")  # no page links, no workspace, no demo
    assert "raw_df" not in at.session_state and folders() == before


def test_another_curators_workspace_is_refused(monkeypatch):
    monkeypatch.delenv(ADMINS_ENV, raising=False)
    alice = session(user="alice@example.org", login=True)
    goto(alice, "pages/1_data.py")
    alice.selectbox(key="w_demo").select(CPS).run()
    ws_id = alice.query_params["ws"]
    assert Registry(root_folder()).owner(ws_id) == "alice@example.org"

    again = session(ws_id, user="alice@example.org", login=True)  # her own, from another browser
    assert again.session_state["data_name"] == CPS and again.query_params["ws"] == ws_id
    assert "Logged in as **alice@example.org** (curator)" in texts(again.get("caption"))
    assert f"**Workspace** `{ws_id}`." in texts(again.get("caption"))
    assert str(root_folder()) not in texts(again.get("caption"))  # no server paths for a curator

    bob = session(ws_id, user="bob@example.org", login=True)
    assert bob.query_params["ws"] != ws_id
    assert bob.session_state["data_name"] != CPS  # nothing of hers: the demo the studio opens
    assert "belongs to another curator" in texts(bob.get("caption"))
    assert "belongs to another curator; open one of yours or ask an admin" in texts(bob.warning)
    goto(bob, "pages/4_release.py")
    assert bob.number_input(key="w_budget_cap").disabled  # a curator sets no cap
    assert "Only an admin sets a table's cap" in texts(bob.get("caption"))


def test_an_admin_opens_every_workspace_sees_paths_and_sets_caps(monkeypatch):
    monkeypatch.setenv(ADMINS_ENV, "root@example.org")
    carol = session(user="carol@example.org", login=True)
    goto(carol, "pages/1_data.py")
    carol.selectbox(key="w_demo").select(CPS).run()
    ws_id = carol.query_params["ws"]

    admin = session(user="root@example.org", login=True)
    listing = next(d.value for d in admin.dataframe if "owner" in d.value.columns)
    mine = listing[listing["workspace"] == f"?ws={ws_id}"]
    assert list(mine["owner"]) == ["carol@example.org"] and list(mine["table"]) == [CPS]
    opened = session(ws_id, user="root@example.org", login=True)
    assert opened.session_state["data_name"] == CPS
    assert str(root_folder() / ws_id) in texts(opened.get("caption"))  # paths for an admin
    goto(opened, "pages/4_release.py")
    assert not opened.number_input(key="w_budget_cap").disabled
    opened.number_input(key="w_budget_cap").set_value(2.0).run()
    next(b for b in opened.button if b.label == "Set cap").click().run()
    assert Workspace.in_root(ws_id).budget(opened.session_state["table_fp"])["cap"] == 2.0


@pytest.fixture
def served_on():
    """Set the address the app believes it is served on (AppTest runs in this process, without a server)."""
    from streamlit import config

    before = config.get_option("server.address")
    yield lambda address: config.set_option("server.address", address)
    config.set_option("server.address", before)


def test_an_app_started_on_a_network_address_without_login_shows_only_the_refusal(served_on):
    before = folders()
    served_on("0.0.0.0")
    at = session()
    assert [e.value for e in at.error] == [
        "serve: refusing to serve on 0.0.0.0 without login (no [auth] section); configure [auth] in "
        ".streamlit/secrets.toml or $DPSTUDIO_SECRETS (docs/deploying.md), or serve on 127.0.0.1"]
    assert not at.get("page_link") and "raw_df" not in at.session_state and folders() == before
    with_login = session(login=True)  # [auth] configured: the login screen instead
    assert not with_login.error and [b.label for b in with_login.button] == ["Log in"]
    served_on("127.0.0.1")
    assert not session().error  # loopback: the app as usual
