"""One method of the corpus before and after a change: per (ε, m), its median S_pMSE now over before on
each table, and how often it is the best method of its definition (bench/RESULTS.md "AIM's final fit,
accelerated").

    git show REV:bench/data/corpus_results.csv > /tmp/before.csv   # before bench/data/: REV:bench/corpus_results.csv
    python bench/accuracy/corpus_compare.py /tmp/before.csv [--method aim] [--definition zcdp]
        [--now bench/data/corpus_results.csv]

A table counts in an (ε, m) row when the method has every seed it had before, now and before. "Best"
compares medians over seeds with every method of the same definition in the same file (each world is
judged whole: before's method against before's others). Prints one Markdown table.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pandas as pd

BENCH = Path(__file__).resolve().parents[1]


def _medians(runs: pd.DataFrame, definition: str) -> pd.DataFrame:
    ok = runs[(runs.status == "ok") & (runs.definition == definition)]
    return ok.groupby(["epsilon", "sets", "table", "method"]).spmse.median().unstack("method")


def compare(before: pd.DataFrame, now: pd.DataFrame, method: str, definition: str) -> list[dict]:
    """One dict per (ε, m): tables, the geometric mean of now/before, tables lower, the extremes, and the
    tables where the method is best (and within 15% of the best), before and now."""
    seeds = [r[(r.method == method) & (r.definition == definition) & (r.status == "ok")]
             .groupby(["epsilon", "sets", "table"]).seed.nunique() for r in (before, now)]
    both = seeds[0].to_frame("before").join(seeds[1].to_frame("now"), how="inner")
    both = both[both.now >= both.before]
    mb, mn = _medians(before, definition), _medians(now, definition)
    rows = []
    for (eps, sets), group in both.groupby(level=[0, 1]):
        idx = group.index
        b, n = mb.loc[idx], mn.loc[idx]
        ratio = n[method] / b[method]
        to_best = [m[method] / m.min(axis=1) for m in (b, n)]
        rows.append({"epsilon": eps, "sets": sets, "tables": len(idx),
                     "geo_mean": math.exp(float(ratio.map(math.log).mean())), "lower": int((ratio < 1).sum()),
                     "min": (float(ratio.min()), ratio.idxmin()[2]), "max": (float(ratio.max()), ratio.idxmax()[2]),
                     "best": tuple(int((r <= 1 + 1e-9).sum()) for r in to_best),
                     "within_15": tuple(int((r <= 1.15).sum()) for r in to_best)})
    return rows


def markdown(rows: list[dict], method: str, definition: str) -> str:
    head = (f"| ε | m | tables | {method} now / before (geometric mean) | lower on | lowest | highest | "
            f"best of {definition}: before → now | within 15% of the best: before → now |\n"
            "|---:|---:|---:|---:|---:|---|---|---|---|\n")
    body = "".join(
        f"| {r['epsilon']:g} | {r['sets']} | {r['tables']} | {r['geo_mean']:.3f} | {r['lower']} | "
        f"{r['min'][0]:.2f} ({r['min'][1]}) | {r['max'][0]:.2f} ({r['max'][1]}) | {r['best'][0]} → {r['best'][1]} | "
        f"{r['within_15'][0]} → {r['within_15'][1]} |\n" for r in rows)
    return head + body


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before", help="the results CSV before the change (e.g. from git show)")
    ap.add_argument("--now", default=str(BENCH / "data" / "corpus_results.csv"))
    ap.add_argument("--method", default="aim")
    ap.add_argument("--definition", default="zcdp", choices=("pure", "zcdp"))
    args = ap.parse_args(argv)
    frames = []
    for path in (args.before, args.now):
        try:
            frame = pd.read_csv(path)
        except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
            raise SystemExit(f"corpus_compare.py: cannot read {path}: {exc}; "
                             "give a results CSV of bench/accuracy/corpus_run.py") from None
        missing = {"table", "method", "definition", "epsilon", "sets", "seed", "spmse", "status"} - set(frame.columns)
        if missing:
            raise SystemExit(f"corpus_compare.py: {path} has no column(s) {', '.join(sorted(missing))}; "
                             "give a results CSV of bench/accuracy/corpus_run.py") from None
        frames.append(frame)
    before, now = frames
    sys.stdout.write(markdown(compare(before, now, args.method, args.definition), args.method, args.definition))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
