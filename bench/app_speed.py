"""Dashboard speed targets (issue [dashboard]), measured outside the test suite.

* a STEPS-2 release with m = 5 on either demo (the Release page's default design:
  private MoSDA, half, nonneg) — target < 3 s;
* a cached re-render of the Design page (AppTest, same state twice) — target < 1 s.

Prints medians over RUNS runs and writes bench/out/app_speed.json.
Usage: PYTHONPATH=. .venv/bin/python bench/app_speed.py [--runs N]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    print(describe(machine()))
    rel = release_times(args.runs)
    rer = rerender_times(args.runs)
    rows = [(f"STEPS-2, m = 5 release, {k}", statistics.median(v), 3.0) for k, v in rel.items()]
    rows.append(("cached Design page re-render (AppTest)", statistics.median(rer), 1.0))
    print(f"\n| case | median s (n={args.runs}) | target | met |\n|---|---:|---|---|")
    for name, med, target in rows:
        print(f"| {name} | {med:.3f} | < {target:g} s | {'yes' if med < target else 'NO'} |")
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "app_speed.json").write_text(json.dumps({"release": rel, "rerender": rer}, indent=2))


if __name__ == "__main__":
    main()
