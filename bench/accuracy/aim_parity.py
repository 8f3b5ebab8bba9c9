"""AIM's variants on the corpus ([aim-parity]): median S_pMSE per table, definition and variant, one CSV row per run.

    nice -n 5 .venv/bin/python bench/accuracy/aim_parity.py --variants today final [--tables ...]
        [--definitions pure zcdp] [--eps 1] [--seeds 0 1 2] [--timeout 300] [--out bench/data/aim_parity.csv]
    .venv/bin/python bench/accuracy/aim_parity.py --report [--seeds 0 1 2 3 4]

A variant is a name of :data:`VARIANTS`: ``dpcore.synthesize`` options of ``method="aim"`` and, for probing what is
not an option, module constants of ``dpcore.synthesizers.aim_budget`` (or of ``aim``) set in the run's forked child
(development only). ``today`` is AIM as it was before [aim-parity] (same seeded releases as main's), ``final`` the
shipped rules.
Each run is a forked child with a wall-clock cap (bench/accuracy/corpus_run.py's ``fork_call``); its row has the
release's seconds, mean two-way S_pMSE (scored as corpus_run scores), and the first set's diagnostics: rounds,
annealings, whether the workload was measured at once (and how many margins), the rule's noise share
(``workload_noise``) and the model's cells. ``--report`` prints, per table and definition, each variant's median
beside DP ipf's, MST's and the best of dpcore's other methods (bench/data/corpus_results.csv) and dpmm's AIM
(bench/data/corpus_peers.csv, and any ``--peers`` CSV). Reads raw data: curator-side, NOT DP.
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import datetime as dt  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from functools import partial  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent
for _p in (HERE, BENCH / "tools", BENCH.parent):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from corpus_run import append_row, fork_call, git_commit, score  # noqa: E402

OUT = BENCH / "data" / "aim_parity.csv"
FIELDS = ["variant", "table", "definition", "epsilon", "sets", "seed", "spmse", "seconds", "rounds", "annealed",
          "workload_first", "at_once", "workload_noise", "model_cells", "status", "message", "load1",
          "dpcore_commit", "date"]
#: name -> (AIM options, module constants of dpcore.synthesizers.aim)
VARIANTS: dict[str, tuple[dict, dict]] = {
    "today": ({"workload_first": "never"}, {"THIN_ROUND_SHARE": float("inf")}),  # main before [aim-parity]
    "final": ({}, {}),  # the shipped rules
    "rounds_rule": ({"workload_first": "never"}, {}),
    "at_once": ({"workload_first": "always"}, {}),
    "at_once_50": ({"workload_first": "always"}, {"WORKLOAD_SHARE": 0.5}),
    "t2": ({"workload_first": "never"}, {"ZCDP_ROUNDS_PER_ATTRIBUTE": 2, "ROUNDS_PER_ATTRIBUTE": 2}),
    "t8": ({"workload_first": "never"}, {"ZCDP_ROUNDS_PER_ATTRIBUTE": 8, "ROUNDS_PER_ATTRIBUTE": 8}),
}


def one_run(df, dom, orig, variant: str, definition: str, eps: float, m: int, seed: int) -> dict:
    import dpcore
    import dpcore.synthesizers.aim as aim
    import dpcore.synthesizers.aim_budget as rules
    opts, patch = VARIANTS[variant]
    for k, v in patch.items():
        setattr(rules if hasattr(rules, k) else aim, k, v)
    t0 = time.perf_counter()
    rel = dpcore.synthesize(df, method="aim", epsilon=eps, sets=m, seed=seed, domain=dom,
                            delta=1e-9 if definition == "zcdp" else None, **opts)
    secs = time.perf_counter() - t0
    spmse, _ = score(orig, rel.sets, dom)
    diag = (rel.diagnostics.get("per_set") or [{}])[0]
    return {"status": "ok", "spmse": spmse, "seconds": round(secs, 3), "rounds": diag.get("rounds"),
            "annealed": diag.get("annealed"), "workload_first": diag.get("workload_first", False),
            "at_once": diag.get("at_once", 0), "workload_noise": diag.get("workload_noise"),
            "model_cells": diag.get("model_cells")}


def changed(df, dom, definition: str, eps: float, m: int) -> bool:
    """Whether the shipped rules plan a set differently from ``today`` (T or the workload at once), from the
    table's own n (the release reads its noisy count; curator-side). Where they do not, the seeded releases are
    today's, so ``--changed-only`` skips them and ``--report`` reads today's rows for both."""
    from dpcore.api import privacy_setup
    from dpcore.privacy.budget import Epsilon
    from dpcore.privacy.definitions import definition_for
    from dpcore.synthesizers import aim, aim_budget
    defn = definition_for(1e-9 if definition == "zcdp" else None)
    opts = aim.resolve(dom)
    opts = aim.for_zcdp(opts, defn, {}, dom) if definition == "zcdp" else opts
    nb, share = privacy_setup("add_remove", None, None)  # the release's: ε less the noisy count's share
    plan = aim_budget.plan(opts, dom, defn.budget(Epsilon(eps)) * (1 - (share or 0.0)) / m, nb, len(df), defn)
    return not plan.whole_table and (plan.rounds != aim_budget.default_rounds(opts, dom, defn) or bool(plan.at_once))


def run(args) -> None:
    import csv

    import pandas as pd
    from corpus import corpus_specs, load_table
    out = Path(args.out)
    done = set()
    if out.exists():
        with out.open(newline="") as f:
            done = {(r["variant"], r["table"], r["definition"], float(r["epsilon"]), int(r["sets"]), int(r["seed"]))
                    for r in csv.DictReader(f)}
    commit = git_commit()
    for table in args.tables or list(corpus_specs()):
        df, dom = load_table(table)
        orig = pd.DataFrame(dom.encode(df), columns=dom.names)
        for eps in args.eps:
            for d in args.definitions:
                if args.changed_only and not changed(df, dom, d, eps, args.sets):
                    continue
                for variant in args.variants:
                    for seed in args.seeds:
                        key = (variant, table, d, eps, args.sets, seed)
                        if key in done:
                            continue
                        load1 = round(os.getloadavg()[0], 2)
                        res = fork_call(partial(one_run, df, dom, orig, variant, d, eps, args.sets, seed),
                                        args.timeout)
                        row = {"variant": variant, "table": table, "definition": d, "epsilon": eps,
                               "sets": args.sets, "seed": seed, **res, "load1": load1, "dpcore_commit": commit,
                               "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
                        append_row(out, row, FIELDS)
                        print(f"{table} {d} {variant} seed {seed}: {res['status']} {res.get('seconds', '')} s "
                              f"S_pMSE {res.get('spmse', '')} rounds {res.get('rounds')} at_once "
                              f"{res.get('at_once')} noise {res.get('workload_noise')}", flush=True)


def report(args) -> None:
    import pandas as pd
    v = pd.read_csv(args.out)
    v = v[(v.status == "ok") & v.seed.isin(args.seeds) & (v.epsilon == args.eps[0])]
    c = pd.read_csv(BENCH / "data" / "corpus_results.csv")
    c = c[(c.status == "ok") & (c.sets == args.sets) & (c.epsilon == args.eps[0]) & c.seed.isin(args.seeds)]
    peers = [BENCH / "data" / "corpus_peers.csv", *map(Path, args.peers)]
    p = pd.concat([pd.read_csv(f) for f in peers if f.exists()])
    p = p[(p.status == "ok") & (p.method == "dpmm_aim") & (p.epsilon == args.eps[0]) & p.seed.isin((0, 1, 2))]
    p = p.drop_duplicates(["table", "seed"], keep="last")
    for d in args.definitions:
        vm = v[v.definition == d].pivot_table(index="table", columns="variant", values="spmse", aggfunc="median")
        cm = c[(c.definition == d) & (c.method != "aim")].pivot_table(index="table", columns="method",
                                                                        values="spmse", aggfunc="median")
        t = vm.join(cm[["ipf", "mst"]]).assign(best=cm.min(axis=1), best_m=cm.idxmin(axis=1))
        if d == "zcdp":
            t["dpmm"] = p.groupby("table").spmse.median()
        wn = v[v.definition == d].groupby("table").workload_noise.median()
        t["noise"] = wn
        for col in vm.columns:
            t[f"{col}/best"] = t[col] / t.best
        print(f"\n{d}, ε = {args.eps[0]:g}, seeds {args.seeds}")
        print(t.sort_values("noise").round(3).to_string())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", nargs="+", default=["today", "final"], choices=list(VARIANTS))
    ap.add_argument("--tables", nargs="+")
    ap.add_argument("--definitions", nargs="+", default=["pure", "zcdp"], choices=["pure", "zcdp"])
    ap.add_argument("--eps", nargs="+", type=float, default=[1.0])
    ap.add_argument("--sets", type=int, default=1)
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--changed-only", action="store_true",
                    help="run only (table, definition) where the shipped rules change the plan from today's")
    ap.add_argument("--report", action="store_true")
    ap.add_argument("--peers", nargs="*", default=[], help="more peer CSVs for --report (read-only)")
    args = ap.parse_args()
    report(args) if args.report else run(args)


if __name__ == "__main__":
    main()
