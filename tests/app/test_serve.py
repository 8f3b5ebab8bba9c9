"""The launcher ``make run`` calls (serve.py): loopback by default, a network address only with login.

The listening test starts the app exactly as ``make run`` does (``python serve.py --port P``) and
reads the kernel's socket table (/proc/net/tcp and tcp6): the port is bound to 127.0.0.1 and
nothing else."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import serve
from tests.browser.browser_support import free_port, stop

ROOT = Path(__file__).resolve().parents[2]
COMPLETE_AUTH = """
[auth]
redirect_uri = "http://localhost:8501/oauth2callback"
cookie_secret = "a long random string for the cookie"
client_id = "dpstudio"
client_secret = "s3cret"
server_metadata_url = "http://localhost:9400/.well-known/openid-configuration"
"""


def run_serve(*args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in (serve.ADDRESS_ENV, serve.SECRETS_ENV)}
    return subprocess.run([sys.executable, "serve.py", *args], cwd=ROOT, env=dict(clean, **env),
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("how", [("--address", "0.0.0.0"), ("--address", "::"), ("env", "192.168.1.20")])
def test_a_network_address_without_login_is_refused_in_one_line(how, tmp_path):
    args, env = (["--address", how[1]], {}) if how[0] == "--address" else ([], {serve.ADDRESS_ENV: how[1]})
    done = run_serve(*args, "--dry-run", **env, DPSTUDIO_SECRETS=str(tmp_path / "absent.toml"))
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert lines == [f"serve: refusing to serve on {how[1]} without login (no [auth] section); configure [auth] in "
                     ".streamlit/secrets.toml or $DPSTUDIO_SECRETS (docs/deploying.md), or serve on 127.0.0.1"]


def test_an_incomplete_auth_section_is_named(tmp_path):
    secrets = tmp_path / "secrets.toml"
    secrets.write_text('[auth]\nredirect_uri = "http://x/oauth2callback"\nclient_id = "a"\n')
    done = run_serve("--address", "0.0.0.0", "--dry-run", DPSTUDIO_SECRETS=str(secrets))
    assert done.returncode == 2
    assert "[auth] lacks cookie_secret and a provider's client_id, client_secret, server_metadata_url" in done.stderr


def test_with_login_configured_a_network_address_is_served(tmp_path):
    secrets = tmp_path / "secrets.toml"
    secrets.write_text(COMPLETE_AUTH)
    done = run_serve("--address", "0.0.0.0", "--dry-run", DPSTUDIO_SECRETS=str(secrets))
    assert done.returncode == 0, done.stderr
    assert "--server.address 0.0.0.0" in done.stdout and f"--secrets.files {secrets}" in done.stdout
    # a provider in a named sub-section ([auth.company]) counts too
    named = COMPLETE_AUTH.replace('client_id = "dpstudio"', '[auth.company]\nclient_id = "dpstudio"')
    assert serve.auth_problem(serve.tomllib.loads(named)["auth"]) is None


def test_loopback_needs_no_login_and_is_the_default(tmp_path):
    absent = str(tmp_path / "absent.toml")
    for args in ([], ["--address", "127.0.0.1"], ["--address", "localhost"], ["--address", "::1"]):
        done = run_serve(*args, "--dry-run", DPSTUDIO_SECRETS=absent)
        assert done.returncode == 0, done.stderr
    assert "--server.address 127.0.0.1" in run_serve("--dry-run", DPSTUDIO_SECRETS=absent).stdout
    assert serve.configured_address() == "127.0.0.1"  # .streamlit/config.toml, for `streamlit run app.py` too
    assert not serve.is_loopback("") and not serve.is_loopback("10.0.0.1") and not serve.is_loopback("example.org")


def test_make_run_calls_the_launcher():
    recipe = Path(ROOT / "Makefile").read_text().split("\nrun:")[1].split("\n\n")[0]
    assert "serve.py --port $(PORT)" in recipe and "streamlit run" not in recipe


def listening(port: int) -> set[str]:
    """The local addresses with a listening socket on ``port``, from the kernel's tables."""
    found = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            addr, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                raw = bytes.fromhex(addr)
                if width == 8:
                    found.add(socket.inet_ntop(socket.AF_INET, raw[::-1]))
                else:  # four little-endian 32-bit words
                    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
                    found.add(socket.inet_ntop(socket.AF_INET6, words))
    return found


def host_addresses() -> list[str]:
    """This machine's non-loopback IPv4 addresses (from the routing table's source address)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: no packet is sent by a UDP connect
            ip = s.getsockname()[0]
        except OSError:
            return []
    return [] if ip.startswith("127.") else [ip]


@pytest.mark.timeout(120)
def test_the_app_as_make_run_starts_it_listens_on_loopback_only(tmp_path):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in (serve.ADDRESS_ENV, serve.SECRETS_ENV)}
    env.update(DPSTUDIO_WORKSPACE=str(tmp_path / "ws"), STREAMLIT_BROWSER_GATHER_USAGE_STATS="false")
    with open(tmp_path / "serve.log", "w") as log:
        proc = subprocess.Popen([sys.executable, "serve.py", "--port", str(port)], cwd=ROOT, env=env,
                                stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.time() + 60
            while True:
                assert proc.poll() is None, (tmp_path / "serve.log").read_text()
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                        if r.status == 200:
                            break
                except OSError:
                    assert time.time() < deadline, "the app did not answer on 127.0.0.1 within 60 s"
                    time.sleep(0.3)
            assert listening(port) == {"127.0.0.1"}
            for ip in host_addresses():
                with pytest.raises(OSError), socket.create_connection((ip, port), timeout=3):
                    pass
        finally:
            stop(proc)


def test_the_socket_table_reader_sees_a_socket_on_every_interface():
    """The negative control of the test above: a socket bound to 0.0.0.0 is read as such."""
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))
        sock.listen()
        assert listening(sock.getsockname()[1]) == {"0.0.0.0"}
