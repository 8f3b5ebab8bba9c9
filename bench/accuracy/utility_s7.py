"""STEPS utility and disclosure on the SD2011 S7 extract (Raab 2022's 7-variable table).

    cd <repo> && PYTHONPATH=. .venv/bin/python bench/accuracy/utility_s7.py [--variants] [--reps N]

For ε ∈ {0.5, 1, 2}, m = 1, seeds 0..reps−1 (default 5 repetitions), with a DECLARED
domain built from the S7 data (``infer_domain(s7).declared()``), records per method
the mean over repetitions of

- two-way S_pMSE (``utility_tables(s7, sets).mean_s_pmse``), and
- replicated uniques, ru (% of n) and ru as % of p1 (``disclosure``),

for STEPS-2 defaults (private MoSDA, allocation half, consistency nonneg), STEPS-2 with
consistency="wls", and flat_laplace. ``--variants`` adds STEPS-2 variants (allocation,
utility, r, noise) used to explain/fix a missed target. Target: STEPS-2 defaults mean
S_pMSE ≤ 100 at ε = 1. Writes bench/out/utility_s7.json (or ``--out``).

The metrics read the raw data: they are evaluation figures, not DP releases.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
ROOT = BENCH.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

EPSILONS = (0.5, 1.0, 2.0)
TARGET = 100.0

BASE = [
    ("STEPS-2 defaults", "steps", {}),
    ("STEPS-2 wls", "steps", {"consistency": "wls"}),
    ("flat_laplace", "flat_laplace", {}),
]
VARIANTS = [
    ("STEPS-2 allocation=equal", "steps", {"allocation": "equal"}),
    ("STEPS-2 utility=aic_gain", "steps", {"utility": "aic_gain"}),
    ("STEPS-2 utility=l1_uniform", "steps", {"utility": "l1_uniform"}),
    ("STEPS-2 r=0.05", "steps", {"r": 0.05}),
    ("STEPS-2 noise=laplace", "steps", {"noise": "laplace"}),
    ("STEPS-2 uh", "steps", {"consistency": "uh"}),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5, help="repetitions (seeds 0..reps-1), default 5")
    ap.add_argument("--variants", action="store_true", help="also run STEPS-2 option variants")
    ap.add_argument("--out", default=str(BENCH / "out" / "utility_s7.json"))
    a = ap.parse_args()

    import dpcore
    from bench.tools._machine import describe, machine
    from dpcore.data.datasets import load_sd2011, sd2011_extract
    from dpcore.metrics import disclosure, utility_tables
    mach = machine()
    print(describe(mach))
    t0 = time.perf_counter()
    s7 = sd2011_extract(load_sd2011(), 7)
    dom = dpcore.infer_domain(s7).declared()
    print(f"S7: {s7.shape[0]} rows, attributes {', '.join(f'{c}({s7[c].nunique()})' for c in s7.columns)}; "
          f"domain source = {dom.source}")

    configs = BASE + (VARIANTS if a.variants else [])
    rows = []
    for name, method, opts in configs:
        for eps in EPSILONS:
            s_pmse, ru, ru_p1, p1, dp = [], [], [], [], []
            for seed in range(a.reps):
                rel = dpcore.synthesize(s7, method, eps, sets=1, seed=seed, domain=dom, **opts)
                u = utility_tables(s7, rel.sets)
                d = disclosure(s7, rel.sets)
                s_pmse.append(u.mean_s_pmse)
                ru.append(d.ru)
                ru_p1.append(d.ru_pct_of_p1)
                p1.append(d.p1)
                dp.append(bool(rel.dp))
            rows.append({
                "method": name, "synthesize_method": method, "options": opts, "epsilon": eps, "sets": 1,
                "reps": a.reps, "seeds": list(range(a.reps)), "dp": all(dp),
                "mean_s_pmse": statistics.fmean(s_pmse), "median_s_pmse": statistics.median(s_pmse),
                "min_s_pmse": min(s_pmse), "max_s_pmse": max(s_pmse),
                "sd_s_pmse": statistics.stdev(s_pmse) if len(s_pmse) > 1 else 0.0,
                "mean_ru": statistics.fmean(ru), "mean_ru_pct_of_p1": statistics.fmean(ru_p1), "p1": p1[0],
                "s_pmse": s_pmse, "ru": ru, "ru_pct_of_p1": ru_p1,
            })
        print(f"  {name} done ({time.perf_counter() - t0:.1f} s)", flush=True)

    print()
    print(f"S7, m = 1, {a.reps} reps (seeds 0..{a.reps - 1}); S_pMSE = mean two-way S_pMSE, "
          f"%ru = ru as % of p1 (p1 = {rows[0]['p1']:.2f}% of records are unique)")
    hdr = f"{'method':<28}" + "".join(f" {'ε=' + format(e, 'g'):>24}" for e in EPSILONS)
    sub = f"{'':<28}" + "".join(f" {'S_pMSE (min–max)':>17} {'%ru':>6}" for _ in EPSILONS)
    print(hdr)
    print(sub)
    print("-" * len(sub))
    for name, _, _ in configs:
        line = f"{name:<28}"
        for e in EPSILONS:
            r = next(r for r in rows if r["method"] == name and r["epsilon"] == e)
            rng = f"{r['mean_s_pmse']:.1f} ({r['min_s_pmse']:.0f}–{r['max_s_pmse']:.0f})"
            line += f" {rng:>17} {r['mean_ru_pct_of_p1']:6.2f}"
        print(line)
    d1 = next(r for r in rows if r["method"] == "STEPS-2 defaults" and r["epsilon"] == 1.0)
    met = d1["mean_s_pmse"] <= TARGET
    print()
    print(f"target STEPS-2 defaults mean S_pMSE ≤ {TARGET:g} at ε = 1: {'met' if met else 'MISSED'} "
          f"({d1['mean_s_pmse']:.1f}; per seed {', '.join(f'{x:.1f}' for x in d1['s_pmse'])})")

    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": mach, "command": " ".join(["bench/accuracy/utility_s7.py"] + sys.argv[1:]),
                               "domain_source": dom.source, "n": len(s7), "rows": rows,
                               "target": {"steps2_defaults_eps1_mean_s_pmse_le": TARGET, "value": d1["mean_s_pmse"],
                                          "met": met}}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
