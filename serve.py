"""Start the studio (``make run`` calls this): loopback unless a network address is asked for, and
never on a network address without login.

    python serve.py [--address ADDRESS] [--port PORT] [--dry-run] [-- extra streamlit options]

The address is ``--address``, else ``$DPSTUDIO_SERVE_ADDRESS``, else ``server.address`` of
.streamlit/config.toml (127.0.0.1). Any address other than a loopback one (127.0.0.0/8, ::1,
localhost) needs login configured: an ``[auth]`` section in the secrets file
(``$DPSTUDIO_SECRETS``, else .streamlit/secrets.toml here or in the home folder) with
``redirect_uri``, ``cookie_secret`` and a provider's ``client_id``, ``client_secret`` and
``server_metadata_url`` (docs/deploying.md). Without it the launcher prints one line and exits
with status 2 before Streamlit starts.

Only the standard library here, so the check costs nothing; app.py repeats it on its first run
for an app started some other way.
"""
from __future__ import annotations

import argparse
import ipaddress
import os
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent
CONFIG = ROOT / ".streamlit" / "config.toml"
ADDRESS_ENV = "DPSTUDIO_SERVE_ADDRESS"
SECRETS_ENV = "DPSTUDIO_SECRETS"
#: what a provider needs for Streamlit's st.login (OIDC); redirect_uri and cookie_secret sit in [auth] itself
PROVIDER_KEYS = ("client_id", "client_secret", "server_metadata_url")
AUTH_KEYS = ("redirect_uri", "cookie_secret")


def is_loopback(address: str | None) -> bool:
    """True for an address only this machine reaches (127.0.0.0/8, ::1, localhost); an empty
    address is Streamlit's "every interface", not loopback."""
    if not address:
        return False
    if address.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip().strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to a network interface
        return False


def configured_address(config: Path = CONFIG) -> str | None:
    """``server.address`` of the config file, if set."""
    try:
        return tomllib.loads(config.read_text(encoding="utf-8")).get("server", {}).get("address")
    except (OSError, tomllib.TOMLDecodeError):
        return None


def secrets_files() -> list[Path]:
    """The secrets files Streamlit reads (``$DPSTUDIO_SECRETS`` replaces its defaults)."""
    if os.environ.get(SECRETS_ENV):
        return [Path(os.environ[SECRETS_ENV]).expanduser()]
    return [Path.home() / ".streamlit" / "secrets.toml", ROOT / ".streamlit" / "secrets.toml"]


def auth_problem(auth: dict | None) -> str | None:
    """What an ``[auth]`` section lacks for login (None: complete). A provider's keys may sit in
    [auth] itself or in one named sub-section ([auth.company])."""
    if not auth:
        return "no [auth] section"
    missing = [k for k in AUTH_KEYS if not auth.get(k)]
    providers = [auth] + [v for v in auth.values() if isinstance(v, dict)]
    if not any(all(p.get(k) for k in PROVIDER_KEYS) for p in providers):
        missing.append("a provider's " + ", ".join(PROVIDER_KEYS))
    return f"[auth] lacks {' and '.join(missing)}" if missing else None


def read_auth(files: list[Path] | None = None) -> dict | None:
    """The merged ``[auth]`` section of the secrets files (later files win, as in Streamlit)."""
    auth: dict = {}
    for f in files if files is not None else secrets_files():
        try:
            auth.update(tomllib.loads(f.read_text(encoding="utf-8")).get("auth", {}))
        except FileNotFoundError:
            continue
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise SystemExit(f"serve: cannot read the secrets file {f} ({exc}); fix it or remove it") from None
    return auth or None


def refusal(address: str | None, auth: dict | None) -> str | None:
    """The one line that refuses to serve ``address``, or None when it may be served."""
    if is_loopback(address):
        return None
    problem = auth_problem(auth)
    if problem is None:
        return None
    shown = address or "every interface"
    return (f"serve: refusing to serve on {shown} without login ({problem}); configure [auth] in "
            f".streamlit/secrets.toml or ${SECRETS_ENV} (docs/deploying.md), or serve on 127.0.0.1")


def command(address: str, port: str, extra: list[str]) -> list[str]:
    cmd = [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.address", address,
           "--server.port", str(port), "--server.headless", "true"]
    if os.environ.get(SECRETS_ENV):
        cmd += ["--secrets.files", os.environ[SECRETS_ENV]]
    return cmd + extra


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Start the DP release studio (loopback unless told otherwise).")
    parser.add_argument("--address", help=f"address to listen on (default ${ADDRESS_ENV}, else the config's)")
    parser.add_argument("--port", default="8501")
    parser.add_argument("--dry-run", action="store_true", help="print the command instead of running it")
    args, extra = parser.parse_known_args(argv)
    extra = [a for a in extra if a != "--"]
    address = args.address or os.environ.get(ADDRESS_ENV) or configured_address() or "127.0.0.1"
    line = refusal(address, read_auth())
    if line:
        print(line, file=sys.stderr)
        return 2
    cmd = command(address, args.port, extra)
    if args.dry_run:
        print(" ".join(cmd))
        return 0
    os.chdir(ROOT)
    os.execv(cmd[0], cmd)  # the launcher becomes Streamlit: signals and the exit status are its own
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
