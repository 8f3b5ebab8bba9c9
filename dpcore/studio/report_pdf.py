"""The release report as PDF: the HTML report printed by headless Chromium, offline.

The HTML report (:mod:`dpcore.studio.report`) is self-contained; this prints it to PDF with the Chromium the
machine has (Debian's ``chromium``; ``$DPCORE_CHROMIUM`` for another), loading nothing from the network.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from dpcore.errors import ResourceError

__all__ = ["find_chromium", "html_to_pdf"]


def find_chromium() -> str | None:
    """The headless browser used for the PDF: $DPCORE_CHROMIUM, else chromium on the PATH."""
    env = os.environ.get("DPCORE_CHROMIUM")
    if env:
        return env if shutil.which(env) or Path(env).is_file() else None
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def html_to_pdf(html_text: str, pdf_path, timeout: float = 120.0) -> Path:
    """Print the HTML report to PDF with headless Chromium (offline: the file is local and
    loads nothing). Raises :class:`ResourceError` when no Chromium is installed."""
    browser = find_chromium()
    if browser is None:
        raise ResourceError("the PDF report needs Chromium (Debian package 'chromium'; `make chromium` installs it) "
                            "or DPCORE_CHROMIUM pointing at a Chrome binary; the HTML report works without it")
    out = Path(pdf_path).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        page.write_text(html_text, encoding="utf-8")
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-extensions", "--no-first-run", "--no-pdf-header-footer",
               "--run-all-compositor-stages-before-draw", "--virtual-time-budget=20000",
               f"--user-data-dir={tmp}/profile", f"--print-to-pdf={out}", page.as_uri()]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise ResourceError(f"Chromium did not finish printing the PDF within {timeout:g} s; try again, or "
                                "print the HTML report from a browser") from None
    if not out.is_file() or out.stat().st_size == 0:
        tail = (res.stderr or "").strip().splitlines()[-1:] or ["no output"]
        raise ResourceError(f"Chromium could not print the PDF ({tail[0]}); print the HTML report from a browser")
    return out
