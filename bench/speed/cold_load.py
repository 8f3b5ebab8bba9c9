"""The app's first screen after a cold start, measured in Chromium ([honest-flow] item 6).

Each run starts a fresh ``streamlit run app.py`` (a cold server: nothing imported, nothing
cached), opens its address once in a new browser page and records:

* ``first text s``: from ``page.goto`` until the main area shows any text;
* ``heading s``: until the page's first heading (``h1``) is visible;
* ``links ever in the sidebar``: every link text the sidebar showed from the first paint on,
  sampled every 20 ms (before the app's own navigation replaced Streamlit's automatic page
  list, internal modules such as ``charts`` or ``workspace`` showed here).

Usage: ``PYTHONPATH=. .venv/bin/python bench/speed/cold_load.py --runs 5 [--root DIR]``; ``--root``
runs the app of another checkout (e.g. the main branch, for a before/after). Workspaces go
to a temporary folder. Results are printed as a Markdown table for bench/RESULTS.md.
"""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository (bench/speed/ is two levels down)


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def one_run(root: Path, chromium: str) -> dict:
    from playwright.sync_api import sync_playwright

    port = _port()
    with tempfile.TemporaryDirectory() as ws:
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                                 "--server.headless", "true", "--server.fileWatcherType", "none"], cwd=root,
                                env=dict(os.environ, STREAMLIT_BROWSER_GATHER_USAGE_STATS="false",
                                         DPSTUDIO_WORKSPACE=ws, PYTHONPATH=str(root)),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(300):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)
                    break
                except OSError:
                    time.sleep(0.2)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu",
                                                                            "--disable-background-networking"])
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.add_init_script("""window.__links = new Set(); setInterval(() => {
                    document.querySelectorAll('[data-testid="stSidebar"] a, [data-testid="stSidebarNav"] a')
                      .forEach(a => { const t = a.innerText.trim().split('\\n').pop(); if (t) window.__links.add(t); });
                  }, 20);""")
                t0 = time.perf_counter()
                page.goto(f"http://127.0.0.1:{port}/", wait_until="commit")
                page.wait_for_function("() => { const m = document.querySelector('[data-testid=\"stMain\"]');"
                                       " return m && m.innerText.trim().length > 0; }", timeout=120_000, polling=50)
                first = time.perf_counter() - t0
                page.locator("h1").first.wait_for(state="visible", timeout=120_000)
                heading = time.perf_counter() - t0
                page.wait_for_timeout(1500)
                sidebar = page.evaluate("() => Array.from(window.__links)")
                browser.close()
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
    return {"first": first, "heading": heading, "sidebar": sidebar}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--root", type=Path, default=ROOT, help="checkout whose app.py is started")
    args = ap.parse_args()
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    runs = [one_run(args.root.resolve(), chromium) for _ in range(args.runs)]
    for i, r in enumerate(runs, 1):
        print(f"run {i}: first text {r['first']:.2f} s, heading {r['heading']:.2f} s, sidebar {r['sidebar']}")
    print()
    print("| checkout | runs | first text s (median; min–max) | heading s (median; min–max) |")
    print("|---|---:|---|---|")
    f = [r["first"] for r in runs]
    h = [r["heading"] for r in runs]
    print(f"| {args.root} | {len(runs)} | {statistics.median(f):.2f} ({min(f):.2f}–{max(f):.2f}) | "
          f"{statistics.median(h):.2f} ({min(h):.2f}–{max(h):.2f}) |")


if __name__ == "__main__":
    main()
