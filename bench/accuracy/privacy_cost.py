"""What the [privacy-audit] fixes cost: utility of the noisy record count, and sampler speed.

    cd <repo> && PYTHONPATH=. .venv/bin/python bench/accuracy/privacy_cost.py [--reps N]

1. Utility on SD2011 S7 at ε = 1, m = 1, seeds 0..reps−1 (default 10), declared domain:
   mean two-way S_pMSE (lower is better) for STEPS-2 defaults, flat_laplace and ipf,
   under the default ``neighbours="add_remove"`` (5% of ε buys a noisy record count)
   and under ``neighbours="replace"`` (n public, every count at sensitivity 2).
   The pre-fix figure for STEPS-2 defaults (71.8, n public, sensitivity 1 — the
   calibration the audit showed to be wrong) is in bench/RESULTS.md.
2. Sampler speed: the exact discrete Laplace (integer-only, unbounded support) against
   the old difference of two numpy geometrics (bounded support, saturates at tiny ε),
   on 1.72M cells (a CPS-shaped leaf layer), median of 5; and the exact exponential
   mechanism against the old Gumbel-max on 200 nodes × 10 candidates.
The metrics read the raw data: evaluation figures, not DP releases.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
ROOT = BENCH.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _median_time(fn, runs=5):
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=10)
    a = ap.parse_args()
    import numpy as np

    import dpcore
    from bench.tools._machine import describe, machine
    from dpcore.data.datasets import load_sd2011, sd2011_extract
    from dpcore.metrics import utility_tables
    from dpcore.privacy.mechanisms import DiscreteLaplace, exponential_mechanism

    print(describe(machine()))
    s7 = sd2011_extract(load_sd2011(), 7)
    dom = dpcore.infer_domain(s7).declared()
    print("\n| method | notion | mean two-way S_pMSE (mean ± sd over seeds) | records per set (mean) |")
    print("|---|---|---|---|")
    for name, method in (("STEPS-2 defaults", "steps"), ("flat_laplace", "flat_laplace"), ("ipf", "ipf")):
        for notion in ("add_remove", "replace"):
            vals, sizes = [], []
            for seed in range(a.reps):
                rel = dpcore.synthesize(s7, method, 1.0, seed=seed, domain=dom, neighbours=notion)
                vals.append(utility_tables(s7, rel.sets).mean_s_pmse)
                sizes.append(len(rel.sets[0]))
            print(f"| {name} | {notion} | {statistics.mean(vals):.1f} ± {statistics.stdev(vals):.1f} | "
                  f"{statistics.mean(sizes):.0f} |", flush=True)

    rng = np.random.default_rng(0)
    mech = DiscreteLaplace(1.0 / 0.5)
    n = 1_720_000
    p = -math.expm1(-1.0 / mech.scale)
    new = _median_time(lambda: mech.sample(rng, n))
    old = _median_time(lambda: rng.geometric(p, n) - rng.geometric(p, n))
    print(f"\ndiscrete Laplace, {n:,} cells, scale 2: exact {new:.3f} s, old two-geometric {old:.3f} s "
          f"(ratio {new / old:.1f}x)")
    scores = rng.normal(0, 50, (200, 10))
    new = _median_time(lambda: exponential_mechanism(scores, 0.05, 12.0, rng))
    old = _median_time(lambda: np.argmax(scores * (0.05 / 24.0) + rng.gumbel(size=scores.shape), axis=1))
    print(f"exponential mechanism, 200 nodes × 10 candidates: exact {new * 1e3:.2f} ms, old Gumbel-max "
          f"{old * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
