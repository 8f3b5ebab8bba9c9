"""The browser lane's watchdog: a browser test may take as long as its waits allow on a loaded
machine (browser_support.TEST_TIMEOUT_S, scaled with DPSTUDIO_BROWSER_WAIT_SCALE), not the
suite's 900 s for one test; each of its waits has its own ceiling (browser_support.CEILING_MS)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.browser_support import TEST_TIMEOUT_S

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    for item in items:  # the hook sees the whole session's items: only this folder's are changed
        if Path(str(item.fspath)).resolve().parent == _HERE and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(TEST_TIMEOUT_S))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed browser test leaves screenshots of its pages still open (tests/artifacts/FAILED-*.png)."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed and Path(str(item.fspath)).resolve().parent == _HERE:
        from tests.browser.browser_support import shoot_open_pages

        shoot_open_pages(item.name)
