"""``python -m dpcore report RELEASE_DIR``: the release report as HTML (and PDF) from a
release folder written by ``python -m dpcore synth`` (manifest.json + synthetic_*.csv).

Privacy: without ``--original`` the report holds only what the release published;
with it, the utility and risk figures read the raw data and carry the NOT DP banner, the
report says CURATOR-ONLY on every page, and its file names must say so too
(dpcore/studio/report.py).
"""
from __future__ import annotations

from pathlib import Path

from dpcore.data.io import read_table
from dpcore.errors import InputError
from dpcore.studio.report import CURATOR_ONLY, CURATOR_SUFFIX, build_report_html, load_release_dir
from dpcore.studio.report_pdf import html_to_pdf


def cmd_report(args) -> int:
    curator_only = bool(args.original)
    for flag, path in (("--html", args.html), ("--pdf", args.pdf)):
        if curator_only and path and CURATOR_ONLY not in Path(path).name:
            p = Path(path)
            raise InputError(f"{flag} '{path}': with --original the report holds curator-only figures (NOT DP), so its "
                             f"file name must say {CURATOR_ONLY}, e.g. "
                             f"'{p.with_name(p.stem + CURATOR_SUFFIX + p.suffix)}'")
    manifest, sets = load_release_dir(args.release)
    original = read_table(args.original) if args.original else None
    default = f"report{CURATOR_SUFFIX if curator_only else ''}.html"
    html_path = Path(args.html) if args.html else Path(args.release) / default
    text = build_report_html(manifest, sets, original)
    try:
        html_path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"--html '{html_path}': cannot write it ({exc.strerror}); choose a writable path") from None
    print(f"wrote {html_path} (self-contained, opens offline)"
          + ("; it holds curator-only figures from the raw data (NOT DP): do not publish it" if original is not None
             else "; it holds only what the release published"))
    if args.pdf:
        pdf = html_to_pdf(text, args.pdf)
        print(f"wrote {pdf}")
    return 0


def add_report_parser(sub) -> None:
    r = sub.add_parser("report", help="write the release report (HTML, optional PDF) for a release folder")
    r.add_argument("release", help="folder written by `synth --out` (manifest.json and synthetic_*.csv)")
    r.add_argument("--original", help="the raw table: adds utility and risk figures (curator-only, NOT DP; the report "
                                      "is then marked CURATOR-ONLY on every page and in its file name)")
    r.add_argument("--html", help="HTML file to write (default RELEASE/report.html, or "
                                  "RELEASE/report_CURATOR-ONLY_NOT_DP.html with --original)")
    r.add_argument("--pdf", help="also print a PDF here (needs Chromium)")
    r.set_defaults(func=cmd_report)
