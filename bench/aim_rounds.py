"""AIM's rounds T per attribute on the [real-tables] corpus: which default the corpus supports.

    cd <repo> && nice -n 10 .venv/bin/python bench/aim_rounds.py [--tables ...] [--per-attribute 4 8 16]
        [--definitions zcdp pure] [--eps 1] [--seeds 0 1 2] [--timeout 300]

AIM's starting round budget is ε/T (ρ/T under zCDP) with T = rounds; the defaults are T = 4·d under pure ε
and T = 16·d (the paper's) under (ε, δ). A run here releases one set of ``dpcore.synthesize(df, "aim", ε,
rounds=k·d, ...)`` on each corpus table at its declared domain and scores it as bench/corpus_run.py does (mean
two-way S_pMSE on the declared codes; curator-side, NOT DP). One row per (table, definition, ε, k, seed) in
bench/aim_rounds.csv; rerunnable (rows present are skipped), each run a forked child capped at ``--timeout``.
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import os
import sys
import time
from functools import partial
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from corpus_run import fork_call, git_commit, score  # noqa: E402

OUT = HERE / "aim_rounds.csv"
FIELDS = ["table", "definition", "epsilon", "per_attribute", "rounds", "seed", "spmse", "seconds", "status",
          "message", "load1", "dpcore_commit", "date"]
KEY = ["table", "definition", "epsilon", "per_attribute", "seed"]


def one_run(df, dom, codes, definition: str, eps: float, k: int, seed: int) -> dict:
    import dpcore
    t0 = time.perf_counter()
    rel = dpcore.synthesize(df, method="aim", epsilon=eps, seed=seed, domain=dom,
                            delta=1e-9 if definition == "zcdp" else None, rounds=k * len(dom.names))
    secs = time.perf_counter() - t0
    spmse, _ = score(codes, rel.sets, dom)
    return {"status": "ok", "spmse": spmse, "seconds": round(secs, 3)}


def main(argv=None) -> None:
    import pandas as pd
    from corpus import corpus_specs, load_table
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", nargs="+", default=None)
    ap.add_argument("--per-attribute", nargs="+", type=int, default=[4, 8, 16])
    ap.add_argument("--definitions", nargs="+", choices=("pure", "zcdp"), default=["zcdp", "pure"])
    ap.add_argument("--eps", nargs="+", type=float, default=[1.0])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    done = set()
    if args.out.exists():
        with args.out.open(newline="", encoding="utf-8") as f:
            done = {tuple(str(r[k]) for k in KEY) for r in csv.DictReader(f)}
    commit = git_commit()
    for table in args.tables or list(corpus_specs()):
        df = dom = codes = None
        for definition in args.definitions:
            for eps in args.eps:
                for k in args.per_attribute:
                    for seed in args.seeds:
                        run = {"table": table, "definition": definition, "epsilon": eps, "per_attribute": k,
                               "seed": seed}
                        if tuple(str(run[c]) for c in KEY) in done:
                            continue
                        if df is None:
                            df, dom = load_table(table)
                            codes = pd.DataFrame(dom.encode(df), columns=dom.names)
                        load1 = round(os.getloadavg()[0], 2)
                        res = fork_call(partial(one_run, df, dom, codes, definition, eps, k, seed), args.timeout)
                        row = {**run, **res, "rounds": k * len(dom.names), "load1": load1, "dpcore_commit": commit,
                               "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
                        new = not args.out.exists()
                        with args.out.open("a", newline="", encoding="utf-8") as f:
                            w = csv.DictWriter(f, fieldnames=FIELDS)
                            if new:
                                w.writeheader()
                            w.writerow({c: row.get(c, "") for c in FIELDS})
                        print(table, definition, eps, k, seed, res.get("status"), res.get("spmse", ""),
                              res.get("seconds", ""), flush=True)


if __name__ == "__main__":
    main()
