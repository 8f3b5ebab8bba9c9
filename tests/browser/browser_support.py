"""What the browser tests share: Debian's Chromium, a ``streamlit run app.py`` server on a
free port, and waiting for the app: for its runs to finish and for what a test reads to be drawn.

Playwright drives the system Chromium (``make chromium`` installs it; Playwright cannot
download its own browser here), headless with ``--no-sandbox``.

**Waiting.** A test never waits for a length of time: it waits for what it reads. Every wait
has the one ceiling :data:`CEILING_MS` (five minutes, times ``DPSTUDIO_BROWSER_WAIT_SCALE``), so
a busy machine makes a test slow, never failed; a test fails only when the app never shows what
it should. :func:`settle` waits until the app has finished every run the page asked for (read
from the app's own websocket, see :class:`Runs`); a read then waits for its element or text
(Playwright's locators and ``expect(...)``, which retry until the ceiling), a chart for its
drawn SVG (:func:`wait_drawn`).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import weakref
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
#: the app's page links in the sidebar (app.py draws them; Streamlit's own page list is off)
NAV_LINK = '[data-testid="stSidebar"] [data-testid="stPageLink-NavLink"]'
#: every browser test is skipped, saying why, only when no Chromium binary is installed
NEEDS_CHROMIUM = pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (make chromium, or "
                                                             "apt-get install -y chromium); the browser tests need it")

#: ``DPSTUDIO_BROWSER_WAIT_SCALE`` multiplies every ceiling below (2 on a very slow machine)
WAIT_SCALE = float(os.environ.get("DPSTUDIO_BROWSER_WAIT_SCALE", "1") or 1)
#: The one ceiling of every wait for the app (ms): how long it may take to show something after a run
#: began, on a loaded 2-core machine. Reached only when the app never shows what it should.
CEILING_MS = int(300_000 * WAIT_SCALE)
#: The ceiling of a wait for a background job's end (a sweep, a long release): several runs' worth of work.
JOB_CEILING_MS = 3 * CEILING_MS
#: pytest-timeout for one browser test (tests/browser/conftest.py): a test makes many waits, each far
#: below its ceiling on a slow machine; this is the watchdog for a test that hangs outside them.
TEST_TIMEOUT_S = int(3600 * WAIT_SCALE)


def _expect_defaults() -> None:
    """``expect(...)`` retries for the ceiling, not Playwright's 5 s."""
    with contextlib.suppress(ImportError):
        from playwright.sync_api import expect

        expect.set_options(timeout=CEILING_MS)


_expect_defaults()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_streamlit(log, **env: str) -> tuple[subprocess.Popen, str]:
    """Start the app on a free port with ``env`` added to the environment; (process, url)
    once its health check answers (the ceiling at most). Output goes to the open file ``log``."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port), "--server.headless", "true",
         "--server.fileWatcherType", "none"],
        cwd=ROOT, env=dict(os.environ, STREAMLIT_BROWSER_GATHER_USAGE_STATS="false", **env),
        stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + CEILING_MS / 1000
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with {proc.returncode}; see {getattr(log, 'name', 'its log')}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.3)  # the server is not listening yet: ask again
    stop(proc)
    raise RuntimeError(f"streamlit did not become healthy within {CEILING_MS / 1000:.0f} s")


@contextlib.contextmanager
def app_server(workspace_root: Path, log_name: str):
    """``streamlit run app.py`` with its workspaces in ``workspace_root`` and its output in
    tests/artifacts/``log_name``; yields the url and stops the app afterwards."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with open(ARTIFACTS / log_name, "w") as log:
        proc, url = start_streamlit(log, DPSTUDIO_WORKSPACE=str(workspace_root))
        try:
            yield url
        finally:
            stop(proc)


# --------------------------------------------------------------------------- the app's runs


class Runs:
    """The script runs of one page, read from the app's websocket (Streamlit's protobuf messages).

    Every rerun of the whole script the page asks for (a click, a typed value, a page link, a reload)
    is a ``BackMsg.rerun_script`` without a fragment id, sent while the click is handled; every run
    that ends is a ``ForwardMsg.script_finished``. The page is idle when a whole run has finished
    after the last one it asked for. A fragment's run (the progress panels refresh themselves every
    half second) is neither, but is followed (``fragment_running``): while one runs, the page's own
    run state says "running" for it. Unlike the status widget, this knows about a run the server has
    not begun: on a busy machine the app may take seconds to start the run a click asked for."""

    def __init__(self) -> None:
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        self._back, self._forward = BackMsg, ForwardMsg
        self._ends = {ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_WITH_COMPILE_ERROR}
        self.seq = 0
        self.asked = 0  # the sequence number of the last whole run asked for
        self.finished = 0  # the sequence number of the last whole run that finished
        self.fragment_running = False  # the run in progress is a fragment's
        self.frames_sent = 0  # messages the page sent on its connection, as reported to this process

    def attach(self, ws) -> None:
        self.frames_sent = 0  # of this connection, the page's newest (a reload opens another)
        ws.on("framesent", self._sent)
        ws.on("framereceived", self._received)

    def _sent(self, payload) -> None:
        self.frames_sent += 1
        if isinstance(payload, (bytes, bytearray)):
            with contextlib.suppress(Exception):
                msg = self._back.FromString(bytes(payload))
                if TRACE and msg.WhichOneof("type") == "rerun_script":
                    _trace(f"asks for a run {msg.rerun_script.fragment_id or ''}", *(
                        f"{w.id.rsplit('-', 1)[-1]}={getattr(w, w.WhichOneof('value'))!r:.40}"
                        for w in msg.rerun_script.widget_states.widgets if w.WhichOneof("value")))
                if msg.WhichOneof("type") == "rerun_script" and not msg.rerun_script.fragment_id:
                    self.seq += 1
                    self.asked = self.seq

    def _received(self, payload) -> None:
        if isinstance(payload, (bytes, bytearray)):
            with contextlib.suppress(Exception):
                msg = self._forward.FromString(bytes(payload))
                kind = msg.WhichOneof("type")
                if TRACE and kind in ("new_session", "script_finished"):
                    _trace(kind, msg.script_finished if kind == "script_finished"
                           else list(msg.metadata.run.fragment_ids))
                if kind == "new_session":  # a run begins: a fragment's when it names fragments
                    self.fragment_running = bool(msg.metadata.run.fragment_ids)
                elif kind == "script_finished":
                    self.fragment_running = False
                    if msg.script_finished in self._ends:
                        self.seq += 1
                        self.finished = self.seq

    @property
    def idle(self) -> bool:
        return self.finished > self.asked or self.asked == 0


_RUNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: ``DPSTUDIO_BROWSER_TRACE=1``: print every run asked for (with its widget values) and every run's start
#: and end, and each settle, with the time (run pytest with -s to see them)
TRACE = bool(os.environ.get("DPSTUDIO_BROWSER_TRACE"))


def _trace(*parts) -> None:
    print(f"[{time.monotonic():.2f}]", *parts, flush=True)


#: In the page, before the app's scripts: count the messages sent on the newest connection, as they are
#: sent (the report of a sent message reaches this process a moment later, after the click has returned).
_COUNT_SENT = """(() => {
  const send = WebSocket.prototype.send;
  window.__dpSent = 0;
  WebSocket.prototype.send = function (data) {
    if (this !== window.__dpSocket) { window.__dpSocket = this; window.__dpSent = 0; }
    window.__dpSent += 1;
    return send.call(this, data);
  };
})()"""


def watch(page):
    """Follow ``page``'s runs from now on (call it before the page opens the app); the page."""
    if page not in _RUNS:
        runs = _RUNS[page] = Runs()
        page.add_init_script(_COUNT_SENT)
        page.on("websocket", runs.attach)
    return page


def new_page(context, timeout_ms: int | None = None):
    """A new page of ``context`` whose runs are followed, with the ceiling as its default timeout."""
    page = watch(context.new_page())
    page.set_default_timeout(timeout_ms or CEILING_MS)
    return page


#: the app in the page is connected and its script is not running (Streamlit's own test attributes)
_DOM_IDLE = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.dataset.testConnectionState !== 'CONNECTED') return false;
  const w = document.querySelector('[data-testid="stStatusWidget"]');
  return !w || !/Running|Stop/.test(w.innerText);
}"""


_CONNECTED = """() => { const a = document.querySelector('[data-testid="stApp"]');
  return !!a && a.dataset.testConnectionState === 'CONNECTED'; }"""
_PAGE_IDLE = """() => { const a = document.querySelector('[data-testid="stApp"]');
  return !!a && a.dataset.testConnectionState === 'CONNECTED' && a.dataset.testScriptState === 'notRunning'; }"""
_TWO_FRAMES = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))"


def runs_asked(page) -> int:
    """A mark of the runs ``page`` has asked for so far, for :func:`settle`'s ``after``."""
    return _RUNS[page].asked


def settle(page, timeout_ms: int | None = None, after: int | None = None) -> None:
    """Wait until the app has finished every run ``page`` asked for (a click, a typed value, a page
    link): read from the websocket when the page is followed (:func:`watch`), else from the status
    widget. With ``after`` (a :func:`runs_asked` mark), first wait until the page has asked for a
    run since the mark: for a widget that asks a moment after the action (the data editor sends an
    edit once typing has paused). What the run draws is then waited for by the caller, element by element."""
    timeout_ms = timeout_ms or CEILING_MS
    runs = _RUNS.get(page)
    if runs is None:
        page.wait_for_function(_DOM_IDLE, timeout=timeout_ms)
        return
    deadline = time.monotonic() + timeout_ms / 1000
    # a widget sends its new value from an effect React runs after the render the action caused (a number
    # box's Enter, a select box's option): two frames later it has been sent
    painted(page)
    sent = page.evaluate("() => window.__dpSent || 0")  # every message the page has sent until now
    # the server has finished the runs asked for, and the page has taken in their end (its run state, set
    # once the run's last message is handled, says "notRunning", or "running" for a fragment's run only);
    # the page is asked first: a poll of the page also delivers the websocket's reports to this process
    while not ((page.evaluate(_PAGE_IDLE) or (runs.fragment_running and page.evaluate(_CONNECTED)))
               and runs.frames_sent >= sent and runs.idle and (after is None or runs.asked > after)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the app did not finish the run the page asked for within {timeout_ms / 1000:.0f} s")
        page.wait_for_timeout(50)  # a poll: lets Playwright deliver the websocket's messages
    if TRACE:
        _trace("settled")
    painted(page)  # the widgets have applied the values the run sent (React's effects)


def painted(page) -> None:
    """Wait until the page has drawn two more frames: what it rendered last is on screen, and the effects
    React runs after a render have run (a widget takes in a value; an editor starts listening)."""
    page.evaluate(_TWO_FRAMES)


#: every chart on the page is drawn: Plotly's SVG, Vega-Lite's canvas or SVG
_CHARTS_DRAWN = """() => {
  const plotly = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
  const vega = [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')];
  return plotly.every(c => c.querySelector('.main-svg')) && vega.every(c => c.querySelector('canvas, svg'));
}"""

#: the main block's size no longer changes: the same height on three polls in a row
_LAYOUT_STILL = """() => {
  const m = document.querySelector('[data-testid="stMain"]') || document.body;
  const key = m.scrollHeight + 'x' + m.scrollWidth + 'x' + window.innerWidth + 'x' + window.innerHeight;
  window.__dpLayout = window.__dpLayout && window.__dpLayout.key === key
    ? {key, same: window.__dpLayout.same + 1} : {key, same: 0};
  return window.__dpLayout.same >= 3;
}"""


def wait_drawn(page, timeout_ms: int | None = None) -> None:
    """Wait until the app is idle, every chart on the page is drawn and the layout has stopped moving
    (after a resize, Plotly and the data grids draw again): before a screenshot or a read of positions."""
    timeout_ms = timeout_ms or CEILING_MS
    settle(page, timeout_ms)
    page.wait_for_function(_CHARTS_DRAWN, timeout=timeout_ms)
    page.wait_for_function(_LAYOUT_STILL, timeout=timeout_ms, polling=100)


def main_height(page) -> int:
    """The height of everything in the main block (the app scrolls inside it, not the window)."""
    return page.evaluate("() => { const m = document.querySelector('[data-testid=\"stMain\"]');"
                         " return m ? m.scrollHeight : document.body.scrollHeight; }")


def screenshot_widths(page, path_for, widths, restore: dict, max_height: int = 7000) -> None:
    """A whole-page screenshot at each width: the viewport grows to the main block's height (Streamlit
    scrolls inside it), once the charts are drawn and the layout is still; then the viewport ``restore``."""
    page.mouse.move(5, 5)  # no tooltip in the picture
    for w in widths:
        page.set_viewport_size({"width": w, "height": 1000})
        wait_drawn(page)
        page.set_viewport_size({"width": w, "height": int(min(max(main_height(page), 1000), max_height))})
        wait_drawn(page)
        page.screenshot(path=str(path_for(w)), full_page=True)
    page.set_viewport_size(restore)
    wait_drawn(page)


def open_app(playwright, url: str, width: int, height: int, timeout_ms: int | None = None, **context_options):
    """Headless Chromium with one context (``width`` × ``height``) and one followed page at ``url``:
    ``(browser, context, page)``; the caller closes the browser."""
    browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
    context = browser.new_context(viewport={"width": width, "height": height}, **context_options)
    context.set_default_timeout(timeout_ms or CEILING_MS)
    page = new_page(context, timeout_ms)
    page.goto(url)
    return browser, context, page


def shoot_open_pages(name: str) -> list[Path]:
    """A screenshot of every followed page still open, as tests/artifacts/FAILED-``name``-i.png: what the
    app showed when a test failed (called by tests/browser/conftest.py and :func:`failure_shots`)."""
    paths = []
    for i, page in enumerate(list(_RUNS.keys())):
        with contextlib.suppress(Exception):
            if not page.is_closed():
                path = ARTIFACTS / f"FAILED-{name}-{i}.png"
                page.screenshot(path=str(path), full_page=True, timeout=30_000)
                paths.append(path)
    return paths


@contextlib.contextmanager
def failure_shots(name: str):
    """Screenshots of the open pages if the block fails (before a ``with`` block closes the browser)."""
    try:
        yield
    except BaseException:
        shoot_open_pages(name)
        raise


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


def no_exception(page) -> None:
    exc = page.locator('[data-testid="stException"]')
    assert exc.count() == 0, exc.first.inner_text()


#: the title a page link's page shows, where it is not the link's own label
_TITLES = {"Start": "DP release studio"}


def goto(page, label: str, timeout_ms: int | None = None) -> None:
    """Open a page from the sidebar, wait for its run and its title, and check it raised nothing."""
    page.locator(NAV_LINK, has_text=label).first.click()
    settle(page, timeout_ms)
    title = _TITLES.get(label, label.split(" (")[0])
    page.locator('[data-testid="stMain"] h1', has_text=title).first.wait_for(timeout=timeout_ms or CEILING_MS)
    no_exception(page)


def _changes(before: str, value: str, number: bool) -> bool:
    """Whether typing ``value`` over ``before`` changes the widget's value (a number box compares numbers)."""
    if not number:
        return before != value
    try:
        return float(before) != float(value)
    except ValueError:
        return before.strip() != value.strip()


def type_value(page, box, value: str, settle_fn=None) -> None:
    """Type ``value`` into the text or number box ``box`` and press Enter; when that changes the value,
    wait for the run it asks for (the box asks a moment after Enter) and its end; then ``settle_fn``."""
    box.wait_for()
    changes = _changes(box.input_value(), value, box.evaluate("e => e.type") == "number")
    mark = runs_asked(page) if page in _RUNS and changes else None
    box.fill(value)
    box.press("Enter")
    settle(page, after=mark)
    if settle_fn is not None:
        settle_fn(page)


def type_epsilon(page, value: str, settle_fn=None) -> None:
    """Type ε into the Design page's number box (the log slider's twin) and wait for the run."""
    type_value(page, page.get_by_role("spinbutton", name="or type ε"), value, settle_fn)


def set_cap(page, value: str, settle_fn=None) -> None:
    """Set the table's ε cap on the Release page (the page must be open)."""
    settle_fn = settle_fn or settle
    type_value(page, page.get_by_role("spinbutton", name="Cap on this table's total ε"), value, settle_fn)
    page.get_by_role("button", name="Set cap").click()
    settle_fn(page)


def upload_table(page, files) -> None:
    """Send ``files`` (a path, or set_input_files' dicts) to the Data page's table uploader, found by its label: the
    page has other uploaders (domain.json, a saved design), and a file sent to the first input while the page redraws
    can land in one of them. The caller waits for what the upload's run shows."""
    box = page.locator('[data-testid="stFileUploader"]').filter(has_text="CSV, Parquet, SPSS")
    box.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(files)
