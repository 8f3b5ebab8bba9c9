"""Dashboard speed targets (issue [dashboard]), measured outside the test suite.

* a STEPS-2 release with m = 5 on either demo (the Release page's default design:
  private MoSDA, half, nonneg) — target < 3 s;
* a cached re-render of the Design page (AppTest, same state twice) — target < 1 s.

Workspace (issue [studio] item 6): reload-and-restore of the S7 demo with a confirmed
domain and one STEPS-2, m = 5 release — target ≤ 2 s — measured three ways:

* the library alone (``Workspace``: state, table, stored release);
* a new AppTest session with the workspace id (the Data page, then the Release page);
* a real browser reload (Playwright + Chromium, when installed): from ``reload()`` until
  the Release page shows the restored budget book and release.

Prints medians over RUNS runs and writes bench/out/app_speed.json.
Usage: PYTHONPATH=. .venv/bin/python bench/speed/app_speed.py [--runs N] [--only restore]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]  # the repository (bench/speed/ is two levels down)
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "tools"))  # _machine

import dpcore  # noqa: E402

from _machine import describe, machine  # noqa: E402

DEMOS = {"SD2011 S7": ROOT / "assets" / "sd2011_s7.csv", "CPS voters": ROOT / "assets" / "cps_voters.csv"}


def release_times(runs: int) -> dict:
    out = {}
    for name, path in DEMOS.items():
        df = pd.read_csv(path)
        dom = dpcore.infer_domain(df).declared()
        ts = []
        for seed in range(runs):
            t0 = time.perf_counter()
            dpcore.synthesize(df, method="steps", epsilon=1.0, layers=2, sets=5, seed=seed, domain=dom)
            ts.append(time.perf_counter() - t0)
        out[name] = ts
    return out


def rerender_times(runs: int) -> list[float]:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("pages/2_design.py").run()
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        at.run()
        ts.append(time.perf_counter() - t0)
    return ts


def _demo_workspace() -> str:
    """A workspace with the S7 demo, its domain confirmed and one release (through the app)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    next(b for b in at.button if b.label.startswith("Confirm")).click()
    at.run()
    at.switch_page("pages/4_release.py").run()
    at.session_state["cfg"]["comparators"] = []
    next(b for b in at.button if b.label.startswith("Release (spends")).click()
    at.run()
    assert not at.exception and at.session_state["release"]["main"].dp
    return at.query_params["ws"]


def restore_times(runs: int, ws_id: str) -> dict:
    from streamlit.testing.v1 import AppTest

    from dpcore.studio.workspace import Workspace

    lib, data_page, release_page = [], [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        ws = Workspace.in_root(ws_id)
        snap = ws.load_state("session")
        ws.load_table(snap["table_fp"])
        ws.stored_release(snap["release"]["main"])
        lib.append(time.perf_counter() - t0)

        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        at.query_params["ws"] = ws_id
        t0 = time.perf_counter()
        at.run()
        data_page.append(time.perf_counter() - t0)
        assert at.session_state["domain_confirmed"] and "release" in at.session_state
        t0 = time.perf_counter()
        at.switch_page("pages/4_release.py").run()
        release_page.append(time.perf_counter() - t0)
        assert not at.exception
    return {"library": lib, "apptest_data_page": data_page, "apptest_release_page": release_page}


def browser_reload_times(runs: int, ws_id: str) -> dict | None:
    """Reload of the Release page in Chromium until the restored book and release are drawn; and,
    for scale, the first load of a new session (a new workspace) until the Data page's schema shows."""
    import os
    import shutil
    import socket
    import subprocess
    import urllib.request

    chromium = shutil.which("chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if chromium is None:
        return None
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                             "--server.headless", "true", "--server.fileWatcherType", "none"], cwd=ROOT,
                            env=dict(os.environ, STREAMLIT_BROWSER_GATHER_USAGE_STATS="false"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)
                break
            except OSError:
                time.sleep(0.3)
        ts, fresh = [], []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu",
                                                                        "--disable-background-networking"])
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.goto(f"http://127.0.0.1:{port}/release?ws={ws_id}")
            page.get_by_text("Budget book of this table").first.wait_for(timeout=60_000)
            page.get_by_text("ε-differentially private with ε = 1").first.wait_for(timeout=60_000)
            shown = []
            for _ in range(runs):
                page.wait_for_timeout(500)
                t0 = time.perf_counter()
                page.reload()
                page.get_by_text("ε-differentially private with ε = 1").first.wait_for(timeout=60_000)
                shown.append(time.perf_counter() - t0)
                page.locator('[data-testid="stPlotlyChart"]').first.wait_for(timeout=60_000)
                ts.append(time.perf_counter() - t0)
            for _ in range(runs):
                other = browser.new_page(viewport={"width": 1500, "height": 1000})
                t0 = time.perf_counter()
                other.goto(f"http://127.0.0.1:{port}/")
                other.get_by_text("Schema: 5,000 rows").first.wait_for(timeout=60_000)
                fresh.append(time.perf_counter() - t0)
                other.close()
            browser.close()
        return {"reload_release_page": ts, "reload_release_statement": shown, "fresh_session_data_page": fresh}
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> None:
    import os
    import tempfile

    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--only", choices=["restore"], help="only the workspace's reload-and-restore timings")
    args = ap.parse_args()
    print(describe(machine()))
    os.environ.setdefault("DPSTUDIO_WORKSPACE", tempfile.mkdtemp(prefix="dpstudio-bench-"))
    rows = []
    rel, rer = {}, []
    if args.only != "restore":
        rel = release_times(args.runs)
        rer = rerender_times(args.runs)
        rows += [(f"STEPS-2, m = 5 release, {k}", statistics.median(v), 3.0) for k, v in rel.items()]
        rows.append(("cached Design page re-render (AppTest)", statistics.median(rer), 1.0))
    ws_id = _demo_workspace()
    res = restore_times(args.runs, ws_id)
    rows += [("restore, library only (state + table + stored release)", statistics.median(res["library"]), 2.0),
             ("restore, new AppTest session (Data page)", statistics.median(res["apptest_data_page"]), 2.0),
             ("then the Release page with the restored release (AppTest)",
              statistics.median(res["apptest_release_page"]), 2.0)]
    browser = browser_reload_times(args.runs, ws_id)
    if browser:
        res["browser"] = browser
        rows.append(("browser reload of the Release page until the restored release's DP statement shows (Chromium)",
                     statistics.median(browser["reload_release_statement"]), 2.0))
        rows.append(("same, until the budget book's bar chart is drawn too (Chromium)",
                     statistics.median(browser["reload_release_page"]), 2.0))
        rows.append(("for scale: first load of a new session, Data page (Chromium; no target)",
                     statistics.median(browser["fresh_session_data_page"]), float("inf")))
    print(f"\n| case | median s (n={args.runs}) | target | met |\n|---|---:|---|---|")
    for name, med, target in rows:
        if target == float("inf"):
            print(f"| {name} | {med:.3f} | — | — |")
        else:
            print(f"| {name} | {med:.3f} | ≤ {target:g} s | {'yes' if med <= target else 'NO'} |")
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "app_speed.json").write_text(json.dumps({"release": rel, "rerender": rer, "restore": res}, indent=2))


if __name__ == "__main__":
    main()
