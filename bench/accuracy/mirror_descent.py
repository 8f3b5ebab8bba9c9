"""AIM under (ε, δ): its model fitted by junction-tree IPF or by mirror descent (Private-PGM's estimator).

Two levels, same seeds as bench/accuracy/peers.py (1000·k + 10), ε = 1, δ = ``--delta``:

* ``--level model``: one default AIM release per seed with ``estimator="ipf"``; its last fit's
  noisy margins (observed from outside by wrapping ``JunctionTreeIPF`` in this process only) are
  refitted by IPF and by each ``--variants`` JSON of :class:`dpcore.estimate.mirror_descent.MirrorDescent`
  options; the score is the mean two-way S_pMSE of the *model's expected counts* (no draw).
* ``--level release``: the released synthetic set's mean two-way S_pMSE and seconds per release for
  ``ipf`` (``estimator="ipf"``), ``final`` (``estimator="mirror_descent"``: the final fit only) and
  ``every`` (every round's refit by mirror descent too, wired in here, in this process only).

    PYTHONPATH=. bench/accuracy/mirror_descent.py --data s7 --seeds 9 --level release

Reads raw data: NOT DP, a curator-side benchmark on the public SD2011 extract and the CPS tables.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # peers
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))  # _machine, cps_data


def exact_margins(df, dom) -> tuple[list, dict]:
    codes, shape = dom.encode(df), dom.shape
    pairs = list(itertools.combinations(range(len(shape)), 2))
    out = {}
    for p in pairs:
        idx = np.ravel_multi_index(tuple(codes[:, a] for a in p), tuple(shape[a] for a in p))
        out[p] = np.bincount(idx, minlength=int(np.prod([shape[a] for a in p]))).astype(float)
    return pairs, out


def model_level(df, dom, seeds, delta, variants) -> dict:
    import dpcore
    import dpcore.synthesizers.aim as aim
    from dpcore.estimate.junction_tree import JunctionTreeIPF
    from dpcore.estimate.mirror_descent import MirrorDescent
    from dpcore.metrics.tables import _tab_stats
    seen = {}

    class Observed(JunctionTreeIPF):
        def fit(self, shape, margins, total):
            seen["last"] = (shape, list(margins), total)
            return super().fit(shape, margins, total)

    pairs, exact = exact_margins(df, dom)
    keys = ["ipf_fit"] + [json.dumps(v) for v in variants]
    scores, secs = {k: [] for k in keys}, dict.fromkeys(keys, 0.0)
    aim.JunctionTreeIPF = Observed
    try:
        for seed in seeds:
            dpcore.synthesize(df, method="aim", epsilon=1.0, seed=seed, domain=dom, delta=delta, estimator="ipf")
            shape, margins, total = seen["last"]
            for k in keys:
                t0 = time.perf_counter()
                est = JunctionTreeIPF(max_sweeps=50) if k == "ipf_fit" else MirrorDescent(**json.loads(k))
                model, _ = est.fit(shape, margins, total)
                secs[k] += time.perf_counter() - t0
                scores[k].append(float(np.nanmean([_tab_stats(exact[p], np.asarray(model.marginal(p)).ravel())[0]
                                                   for p in pairs])))
    finally:
        aim.JunctionTreeIPF = JunctionTreeIPF
    return {k: (scores[k], secs[k] / len(seeds)) for k in keys}


class EveryRound:
    """Stands in for ``JunctionTreeIPF`` inside AIM: every refit by mirror descent."""

    def __init__(self, max_sweeps=50):
        self.max_sweeps = max_sweeps

    def fit(self, shape, margins, total):
        from dpcore.estimate.mirror_descent import MirrorDescent
        return MirrorDescent(ipf_sweeps=self.max_sweeps).fit(shape, margins, total)


def release_level(df, dom, seeds, delta, modes) -> dict:
    import dpcore
    import dpcore.synthesizers.aim as aim
    from dpcore.metrics import utility_tables
    real = aim.JunctionTreeIPF
    out = {}
    for mode in modes:
        scores, secs = [], 0.0
        aim.JunctionTreeIPF = EveryRound if mode == "every" else real
        try:
            for seed in seeds:
                t0 = time.perf_counter()
                rel = dpcore.synthesize(df, method="aim", epsilon=1.0, seed=seed, domain=dom, delta=delta,
                                        estimator="mirror_descent" if mode == "final" else "ipf")
                secs += time.perf_counter() - t0
                scores.append(float(utility_tables(df, rel.sets[0]).mean_s_pmse))
        finally:
            aim.JunctionTreeIPF = real
        out[mode] = (scores, secs / len(seeds))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="s7", help="s7, voter or wide (bench/accuracy/peers.py's load_data)")
    ap.add_argument("--seeds", type=int, default=9)
    ap.add_argument("--delta", type=float, default=1e-9)
    ap.add_argument("--level", choices=("model", "release"), default="release")
    ap.add_argument("--variants", nargs="*", default=['{"iters": 100}', '{"iters": 1000}'],
                    help="MirrorDescent options as JSON (--level model)")
    ap.add_argument("--modes", nargs="*", default=["ipf", "final", "every"], help="--level release")
    args = ap.parse_args()
    from peers import load_data

    from _machine import describe, machine
    print("machine:", describe(machine()), "| load average:", " ".join(f"{x:.2f}" for x in os.getloadavg()), flush=True)
    df, dom = load_data(args.data)
    seeds = [1000 * k + 10 for k in range(args.seeds)]
    res = (model_level(df, dom, seeds, args.delta, [json.loads(v) for v in args.variants]) if args.level == "model"
           else release_level(df, dom, seeds, args.delta, args.modes))
    print("| data | fit | median | median of the first 3 | seconds | per seed |")
    print("|---|---|---:|---:|---:|---|")
    for k, (v, s) in res.items():
        print(f"| {args.data} | {k} | {np.median(v):.2f} | {np.median(v[:3]):.2f} | {s:.2f} | "
              f"{', '.join(f'{x:.2f}' for x in v)} |", flush=True)


if __name__ == "__main__":
    main()
