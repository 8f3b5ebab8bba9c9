"""Who is using the studio, and what the server may show them.

A team server logs people in with Streamlit's OIDC (``st.login`` / ``st.user`` / ``st.logout``),
configured by an ``[auth]`` section in .streamlit/secrets.toml (docs/deploying.md); the person is
their email, and an admin if it is listed in ``$DPSTUDIO_ADMINS`` or ``[dpstudio] admins`` of the
secrets. Without ``[auth]`` the studio is a local server (serve.py keeps it on the loopback
address) and the person is the machine's user, who holds both roles (dpcore.studio.access).

Only Streamlit and serve.py (standard library) at import: app.py calls :func:`gate` before the
heavy imports; dpcore is imported when an identity is first asked for.
"""
from __future__ import annotations

from collections.abc import Mapping

import streamlit as st

import serve


def _secrets_section(name: str) -> dict | None:
    try:
        section = st.secrets.get(name)
    except Exception:  # no secrets file: Streamlit raises its own not-found error
        return None
    return _plain(section) if isinstance(section, Mapping) and section else None


def _plain(mapping: Mapping) -> dict:
    return {k: _plain(v) if isinstance(v, Mapping) else v for k, v in mapping.items()}


def login_on() -> bool:
    """True when [auth] is complete: everyone logs in, workspaces belong to identities."""
    return serve.auth_problem(_secrets_section("auth")) is None


def _provider() -> str | None:
    """The provider to log in with: None for one configured in [auth] itself, else the first named one."""
    auth = _secrets_section("auth") or {}
    if all(auth.get(k) for k in serve.PROVIDER_KEYS):
        return None
    return next((k for k, v in auth.items() if isinstance(v, dict)), None)


def logged_in() -> bool:
    return bool(st.user.get("is_logged_in"))


def identity():
    """The person using this session (a dpcore.studio.access.Identity), or None before login."""
    from pages.components import imports

    imports.ready()  # dpcore once, under the lock (a second script thread may be importing it)
    from dpcore.studio.access import local_identity, logged_in_identity

    if not login_on():
        return local_identity()
    if not logged_in():
        return None
    email = st.user.get("email") or st.user.get("sub") or ""
    return logged_in_identity(email, (_secrets_section("dpstudio") or {}).get("admins", ()))


def served_address() -> str | None:
    """The address the server listens on (None when unknown: a test harness without a server)."""
    return st.get_option("server.address")


def local_server() -> bool:
    """No login and the loopback address: the person at the keyboard owns the machine."""
    address = served_address()
    return not login_on() and (address is None or serve.is_loopback(address))


def may_see_paths() -> bool:
    """The server's folders are shown only on a local server or to an admin."""
    if local_server():
        return True
    who = identity()
    return who is not None and who.admin


def may_set_caps() -> bool:
    """Caps are set by admins (on a local server: the machine's user)."""
    who = identity()
    return who is not None and who.admin


def gate() -> None:
    """First lines of every run: refuse a network address without login (as serve.py does, for an app
    started some other way), and stop at the login screen until the person has logged in."""
    address = served_address()
    line = None if address is None else serve.refusal(address, _secrets_section("auth"))
    if line:
        st.error(line, icon=":material/block:")
        st.stop()
    if login_on() and not logged_in():
        login_screen()
        st.stop()


def login_screen() -> None:
    _, middle, _ = st.columns([1, 2, 1])
    with middle:
        st.title("DP release studio", anchor=False)
        st.markdown("This studio holds raw records and curator-only figures: **log in** to open your workspaces. "
                    "Each workspace belongs to the person who created it; a workspace's address alone opens nothing.")
        st.button("Log in", type="primary", key="login", icon=":material/login:", on_click=st.login,
                  args=(_provider(),) if _provider() else ())


def account() -> None:
    """The sidebar's account line: who is logged in, their role, and Log out (only with login)."""
    if not login_on() or not logged_in():
        return
    who = identity()
    st.caption(f"Logged in as **{who.user}** ({who.role})")
    st.button("Log out", key="logout", icon=":material/logout:", on_click=st.logout)
