"""The installation's budget book (issue 28): the cost of one release's bookkeeping, on SQLite and on a
throw-away PostgreSQL server, and the cost of fingerprinting a table's columns when it is loaded.

    PYTHONPATH=. .venv/bin/python bench/speed/book_speed.py [--out bench/out/book_speed.json]

* book: median wall time of reserve + complete (two write transactions, each under the store's lock)
  and of ``spent`` (one read), over 200 releases, in an empty book and after 2,000 entries of other
  tables; SQLite is ``book.sqlite`` in a temporary folder, PostgreSQL a local cluster on a Unix socket
  (tests/studio/pg_server.py; skipped when PostgreSQL is not installed).
* fingerprints: ``table_fingerprint`` and ``column_fingerprints`` of the S7 demo (5,000 × 7) and of a
  generated 10^6 × 10 table of short strings; median of 3.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository
from bench.tools._machine import describe, machine
from dpcore.studio.budget_book import BudgetBook
from dpcore.studio.table_match import column_fingerprints
from dpcore.studio.workspace import table_fingerprint

ROOT = Path(__file__).resolve().parents[2]


def _median_ms(fn, n: int) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(1000 * (time.perf_counter() - t))
    return statistics.median(times)


def time_book(location: str) -> dict:
    book = BudgetBook(location)
    book.set_cap("t", 1e9)

    def release():
        book.complete(book.reserve("t", 0.001, "steps", "add_remove", user="bench"), "0" * 64, True)

    out = {"empty: reserve+complete ms": _median_ms(release, 200),
           "empty: spent ms": _median_ms(lambda: book.spent("t"), 200)}
    for i in range(2000):
        book.complete(book.reserve(f"other{i % 50}", 0.001, "steps", "add_remove", user="bench"), "0" * 64, True)
    out["2,000 entries: reserve+complete ms"] = _median_ms(release, 200)
    out["2,000 entries: spent ms"] = _median_ms(lambda: book.spent("t"), 200)
    return out


def time_fingerprints() -> dict:
    s7 = pd.read_csv(ROOT / "assets" / "sd2011_s7.csv")
    rng = np.random.default_rng(0)
    big = pd.DataFrame({f"c{j}": rng.choice([f"level{k}" for k in range(20)], 1_000_000) for j in range(10)})
    out = {}
    for name, df in (("S7 5,000 x 7", s7), ("generated 10^6 x 10", big)):
        out[f"{name}: table_fingerprint s"] = _median_ms(lambda d=df: table_fingerprint(d), 3) / 1000
        out[f"{name}: column_fingerprints s"] = _median_ms(lambda d=df: column_fingerprints(d), 3) / 1000
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/out/book_speed.json")
    args = ap.parse_args()
    m = machine()
    m["loadavg_start"] = os.getloadavg()
    res: dict = {"machine": m}
    with tempfile.TemporaryDirectory() as d:
        res["sqlite"] = time_book(str(Path(d) / "book.sqlite"))
    from tests.studio.pg_server import Server, postgres_bin

    bindir = postgres_bin()
    if bindir is not None:
        server = Server(bindir)
        try:
            res["postgresql"] = time_book(server.new_database())
        finally:
            server.stop()
    res["fingerprints"] = time_fingerprints()
    m["loadavg_end"] = os.getloadavg()
    print(describe(m), "| load", m["loadavg_start"], "->", m["loadavg_end"])
    print(json.dumps({k: v for k, v in res.items() if k != "machine"}, indent=2))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
