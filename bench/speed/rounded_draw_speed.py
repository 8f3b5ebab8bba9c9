"""Seconds to match 10^6 records of the rounded draw (``TreeCountDraw._records``), one chunk.

A 22-attribute junction-tree model (levels 2–11, 21 cliques of two attributes, fitted by 5 IPF
sweeps to random two-way tables, seed 0) is rounded once to 10^6 records; the records of that
one chunk are matched ``--reps`` times (seeds 0, 1, …) and the median is printed. Run it in this
tree and in another (``PYTHONPATH`` = that tree) to compare two versions of the draw:

    PYTHONPATH=. .venv/bin/python bench/speed/rounded_draw_speed.py --reps 5

Reads no data: a synthetic model.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

from dpcore.estimate.draws import TreeCountDraw
from dpcore.estimate.junction_tree import DecomposableModel


def model(attributes: int = 22):
    rng = np.random.default_rng(0)
    shape = tuple(int(x) for x in rng.integers(2, 12, size=attributes))
    targets = {}
    for a in range(attributes - 1):
        b = a + 1 if a % 3 else min(a + 5, attributes - 1)
        ax = tuple(sorted((a, b)))
        targets[ax] = rng.dirichlet(np.ones(shape[ax[0]] * shape[ax[1]])).reshape(shape[ax[0]], shape[ax[1]])
    m, _ = DecomposableModel.fit(shape, targets, 1.0, max_sweeps=5)
    return m


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--records", type=float, default=1e6)
    args = ap.parse_args()
    m = model()
    d = TreeCountDraw.from_model(m, int(args.records), np.random.default_rng(1))
    times = []
    for r in range(args.reps):
        t0 = time.perf_counter()
        d._records(d.counts, np.random.default_rng(r))
        times.append(time.perf_counter() - t0)
    print(f"cliques {len(m.tree.cliques)}, {int(args.records):,} records: median {np.median(times):.2f} s "
          f"(runs {', '.join(f'{t:.2f}' for t in times)}); load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
