"""Speed of the exact discrete Gaussian sampler against the exact discrete Laplace sampler.

    cd <repo> && PYTHONPATH=. .venv/bin/python bench/speed/discrete_gaussian_speed.py [--draws N] [--runs R]

For σ in {1, 10, 1000}: wall-clock and process-CPU seconds for N = 10⁶ draws (default) of
``DiscreteGaussian(σ).sample`` and of ``DiscreteLaplace(s).sample`` at two scales, s = σ (the
same parameter) and s with the same standard deviation as the discrete Gaussian (s ≈ σ/√2).
Medians of R runs (default 5) after one untimed warm-up, cases interleaved round-robin. All
samplers are exact and integer-only; the discrete Gaussian proposes from the discrete Laplace
of scale ⌊σ⌋ + 1 and accepts about 54% (σ = 1) to 76% (σ ≥ 10) of proposals.
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


def _same_sd_scale(variance: float) -> float:
    """The discrete Laplace scale s with variance 2a/(1 − a)² = ``variance``, a = e^{−1/s}."""
    # solve for a: variance (1 − a)² = 2a, the root in (0, 1)
    v = variance
    a = ((2 * v + 2) - math.sqrt((2 * v + 2) ** 2 - 4 * v * v)) / (2 * v)
    return -1.0 / math.log(a)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--draws", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    import numpy as np

    from bench.tools._machine import describe, machine
    from dpcore.privacy.gaussian import DiscreteGaussian
    from dpcore.privacy.mechanisms import DiscreteLaplace

    print(describe(machine()))
    cases = []
    for sigma in (1.0, 10.0, 1000.0):
        dg = DiscreteGaussian(sigma)
        s_same = _same_sd_scale(dg.variance)
        cases += [(sigma, "discrete Gaussian σ", dg), (sigma, "discrete Laplace s = σ", DiscreteLaplace(sigma)),
                  (sigma, f"discrete Laplace s = {s_same:.4g} (same sd)", DiscreteLaplace(s_same))]
    wall = {i: [] for i in range(len(cases))}
    cpu = {i: [] for i in range(len(cases))}
    for _i, (_, _, mech) in enumerate(cases):  # warm-up
        mech.sample(np.random.default_rng(0), 1000)
    for run in range(a.runs):
        for i, (_, _, mech) in enumerate(cases):
            rng = np.random.default_rng(run)
            t, c = time.perf_counter(), time.process_time()
            x = mech.sample(rng, a.draws)
            wall[i].append(time.perf_counter() - t)
            cpu[i].append(time.process_time() - c)
            assert x.size == a.draws
    print(f"\n{a.draws:,} draws, median of {a.runs} runs\n")
    print("| σ | sampler | wall s | CPU s | discrete Gaussian wall ÷ this wall |")
    print("|---|---|---|---|---|")
    for i, (sigma, label, _) in enumerate(cases):
        w = statistics.median(wall[i])
        dg_w = statistics.median(wall[i - i % 3])
        print(f"| {sigma:g} | {label} | {w:.3f} | {statistics.median(cpu[i]):.3f} | {dg_w / w:.2f}× |")


if __name__ == "__main__":
    main()
