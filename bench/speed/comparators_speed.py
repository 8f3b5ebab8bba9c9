"""Speed of the comparators: DP ipf on S7 and PrivBayes on the CPS-shaped table.

(a) ``dpcore.synthesize(s7, method="ipf", epsilon=1, seed=s, domain=dom)`` on the SD2011
    extract S7 (5,000 × 7, 147,000 cells, all 21 two-way margins): wall time per seed,
    median over ``--ipf-seeds`` seeds (default 11). Target ≤ 0.5 s median.
(b) The baseline of the issue: "a naive numpy IPF on the same table (looping margins
    over the full array until max change < 1e-6 / cells)". For each of the first
    ``--naive-seeds`` seeds (default 3) the SAME noisy margins that (a) used for that
    seed are rebuilt (same RNG stream: ``dpcore.api._rng(seed)`` then
    ``ipf.noisy_margins``, the function ``synthesize`` calls first), and fitted by
      - ``ours``: ``dpcore.estimate.dense_ipf.ipf`` (the fit alone, tol 1e-3 on counts),
      - ``naive``: a plain loop over the margins on the full dense probability array
        (np.sum over the other axes, divide, broadcast-multiply), stopping when the
        largest cell change over a sweep is < 1e-6 / cells (cells = 147,000), capped at
        ``--naive-max-sweeps`` sweeps (default 5000, synthpop's cap),
      - ``naive_same_tol``: the same naive loop with OUR stopping rule (largest change
        of a cell count < 1e-3, i.e. < 1e-3 / n on probabilities), so that the ratio
        separates the algorithmic speed-up from the stricter tolerance.
    All three are timed in the same run, interleaved per seed; ratios are naive / ours
    per seed, and their median is reported, with the full synthesis (a) as well.
(c) ``dpcore.synthesize(cps, method="privbayes", epsilon=1, seed=s, domain=dom)`` on the
    CPS-shaped table (44,821 × 15, ``bench/tools/cps_data.cps_shaped()``), declared domain:
    median over ``--pb-runs`` seeds (default 5). Target ≤ 10 s.

    cd <repo> && PYTHONPATH=. .venv/bin/python bench/speed/comparators_speed.py

Writes ``bench/out/comparators_speed.json`` and prints a Markdown table. Speed benchmark
only: the noisy margins rebuilt for (b) are the ones the benchmark's own release drew;
nothing here is published.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))  # cps_data, _machine
from cps_data import cps_shaped

import dpcore
from dpcore.api import _encode, _rng, privacy_setup, release_record_count
from dpcore.data.datasets import load_sd2011, sd2011_extract
from dpcore.estimate.dense_ipf import ipf
from dpcore.privacy.definitions import ReleaseContext
from dpcore.privacy.ledger import Ledger
from dpcore.synthesizers import ipf as ipf_mod

from _machine import describe, machine

TARGETS = {"ipf_s7": 0.5, "privbayes_cps": 10.0}


def _load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def s7_margins(s7, dom, seed: int, eps: float = 1.0):
    """The noisy margins ``synthesize(s7, "ipf", eps, seed=seed)`` draws (same RNG stream: the
    noisy record count first, then the margins of set 1)."""
    opts = ipf_mod.resolve(dom, "ipf")
    X = _encode(dom, s7)
    rng, _ = _rng(seed)
    nb, share = privacy_setup("add_remove", None, None)
    ledger = Ledger("bench", cap=eps)
    n_out, count = release_record_count(len(X), nb, share, eps, rng, ledger)
    margins = ipf_mod.noisy_margins(X, dom, opts, eps - count["epsilon"], rng, ledger.group("set 1"),
                                    ReleaseContext(nb, n_out))
    return [m.axes for m in margins], [m.values for m in margins], opts, len(X)


def naive_ipf(targets, axes, shape, tol: float, max_sweeps: int):
    """Textbook IPF on the full dense probability table.

    From the uniform table, each sweep loops over the margins: sum the table over the
    other axes (np.sum), divide the target by that marginal (0 where either is 0) and
    multiply the whole table by the ratio, broadcast. Stops when the largest cell
    change over a sweep is < ``tol`` or after ``max_sweeps`` sweeps.
    """
    ndim = len(shape)
    prep = []
    for t, ax in zip(targets, axes):
        t = np.asarray(t, float)
        t = t / t.sum()
        other = tuple(i for i in range(ndim) if i not in ax)
        prep.append((t.reshape([shape[i] if i in ax else 1 for i in range(ndim)]), other))
    p = np.full(shape, 1.0 / math.prod(shape))
    sweeps, change = 0, math.inf
    with np.errstate(divide="ignore", invalid="ignore"):
        while sweeps < max_sweeps:
            prev = p.copy()
            for t, other in prep:
                cur = np.sum(p, axis=other, keepdims=True)
                ratio = np.where(cur > 0, t / cur, 0.0)
                p = p * ratio
            sweeps += 1
            change = float(np.abs(p - prev).max())
            if change < tol:
                break
    return p, {"sweeps": sweeps, "max_change": change, "converged": change < tol}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ipf-seeds", type=int, default=11)
    ap.add_argument("--naive-seeds", type=int, default=3)
    ap.add_argument("--naive-max-sweeps", type=int, default=5000)
    ap.add_argument("--pb-runs", type=int, default=5)
    ap.add_argument("--skip-naive", action="store_true")
    ap.add_argument("--skip-privbayes", action="store_true")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "out" / "comparators_speed.json"))
    args = ap.parse_args()

    m = machine()
    print("machine:", describe(m), flush=True)
    res = {"machine": m, "load_before": _load(), "args": vars(args), "targets": TARGETS}

    s7 = sd2011_extract(load_sd2011(), 7)
    dom7 = dpcore.infer_domain(s7).declared()
    cells = math.prod(dom7.shape)
    n7 = len(s7)

    # (a) full DP ipf synthesis, per seed
    dpcore.synthesize(s7, method="ipf", epsilon=1, seed=999, domain=dom7)  # warm-up, untimed
    ipf_times, ipf_info = [], []
    for s in range(args.ipf_seeds):
        t0 = time.perf_counter()
        rel = dpcore.synthesize(s7, method="ipf", epsilon=1, seed=s, domain=dom7)
        ipf_times.append(time.perf_counter() - t0)
        d = rel.diagnostics["per_set"][0]
        ipf_info.append({k: d[k] for k in ("iterations", "converged", "support", "margins")})
        print(f"  ipf S7 seed {s}: {ipf_times[-1]:.3f} s, {d['iterations']} sweeps, support {d['support']}", flush=True)
    res["ipf_s7"] = {"times": ipf_times, "median": statistics.median(ipf_times), "info": ipf_info,
                     "cells": cells, "n": n7, "margins": ipf_info[0]["margins"]}

    # (b) naive dense IPF on the same margins, same run
    if not args.skip_naive:
        rows = []
        for s in range(args.naive_seeds):
            axes, targets, opts, n = s7_margins(s7, dom7, s)
            t0 = time.perf_counter()
            p_ours, info_ours = ipf(targets, axes, dom7.shape, opts.tol, opts.max_iter, total=float(n))
            t_ours = time.perf_counter() - t0
            t0 = time.perf_counter()
            p_same, info_same = naive_ipf(targets, axes, dom7.shape, tol=opts.tol / n, max_sweeps=args.naive_max_sweeps)
            t_same = time.perf_counter() - t0
            t0 = time.perf_counter()
            p_naive, info_naive = naive_ipf(targets, axes, dom7.shape, tol=1e-6 / cells,
                                            max_sweeps=args.naive_max_sweeps)
            t_naive = time.perf_counter() - t0
            row = {
                "seed": s, "ours_fit_s": t_ours, "ours_sweeps": info_ours["iterations"],
                "ours_converged": info_ours["converged"],
                "naive_same_tol_s": t_same, "naive_same_tol_sweeps": info_same["sweeps"],
                "naive_same_tol_converged": info_same["converged"],
                "naive_s": t_naive, "naive_sweeps": info_naive["sweeps"], "naive_converged": info_naive["converged"],
                "naive_max_change": info_naive["max_change"],
                "synth_s": ipf_times[s],
                # agreement of the fitted tables (counts): ours vs naive at the same tolerance / the strict one
                "max_abs_diff_counts_same_tol": float(np.abs(p_ours - p_same * n).max()),
                "max_abs_diff_counts_strict": float(np.abs(p_ours - p_naive * n).max()),
            }
            rows.append(row)
            print(f"  naive seed {s}: ours fit {t_ours:.3f} s ({info_ours['iterations']} sweeps) | naive same tol "
                  f"{t_same:.2f} s ({info_same['sweeps']} sweeps) | naive 1e-6/cells {t_naive:.2f} s "
                  f"({info_naive['sweeps']} sweeps, converged={info_naive['converged']}) | max |Δ| counts "
                  f"{row['max_abs_diff_counts_same_tol']:.2g} / {row['max_abs_diff_counts_strict']:.2g}", flush=True)
        res["naive"] = rows

    # (c) PrivBayes on the CPS-shaped table
    if not args.skip_privbayes:
        cps = cps_shaped()
        domc = dpcore.infer_domain(cps).declared()
        pb = []
        for s in range(args.pb_runs):
            t0 = time.perf_counter()
            dpcore.synthesize(cps, method="privbayes", epsilon=1, seed=s, domain=domc)
            pb.append(time.perf_counter() - t0)
            print(f"  privbayes CPS seed {s}: {pb[-1]:.2f} s", flush=True)
        res["privbayes_cps"] = {"times": pb, "median": statistics.median(pb), "shape": list(cps.shape),
                                "cells": math.prod(domc.shape)}

    res["load_after"] = _load()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=1, default=str))

    # table
    print()
    print("| measure | runs | median | min–max | target | met |")
    print("|---|---:|---:|---:|---:|---|")
    a = res["ipf_s7"]
    print(f"| DP ipf synthesis, S7 ({cells:,} cells, {a['margins']} two-way margins, ε = 1) | {len(ipf_times)} | "
          f"{a['median']:.3f} s | {min(ipf_times):.3f}–{max(ipf_times):.3f} s | ≤ {TARGETS['ipf_s7']} s | "
          f"{'met' if a['median'] <= TARGETS['ipf_s7'] else 'MISSED'} |")
    if "naive" in res:
        r = res["naive"]
        med = lambda k: statistics.median(x[k] for x in r)
        print(f"| ipf fit alone (ours, tol 1e-3 on counts) | {len(r)} | {med('ours_fit_s'):.3f} s | "
              f"{min(x['ours_fit_s'] for x in r):.3f}–{max(x['ours_fit_s'] for x in r):.3f} s | — | — |")
        print(f"| naive dense IPF, same tol (1e-3 on counts) | {len(r)} | {med('naive_same_tol_s'):.2f} s | "
              f"{min(x['naive_same_tol_s'] for x in r):.2f}–{max(x['naive_same_tol_s'] for x in r):.2f} s | — | — |")
        print(f"| naive dense IPF, max change < 1e-6/cells (cap {args.naive_max_sweeps} sweeps) | {len(r)} | "
              f"{med('naive_s'):.2f} s | "
              f"{min(x['naive_s'] for x in r):.2f}–{max(x['naive_s'] for x in r):.2f} s | — | — |")
        print()
        print("| seed | ours synth s | ours fit s (sweeps) | naive same-tol s (sweeps) | naive 1e-6/cells s (sweeps, "
              "conv.) | naive ÷ ours synth | naive ÷ ours fit | same-tol ÷ ours fit |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|")
        for x in r:
            print(f"| {x['seed']} | {x['synth_s']:.3f} | {x['ours_fit_s']:.3f} ({x['ours_sweeps']}) | "
                  f"{x['naive_same_tol_s']:.2f} ({x['naive_same_tol_sweeps']}) | {x['naive_s']:.2f} "
                  f"({x['naive_sweeps']}, {'yes' if x['naive_converged'] else 'no'}) | "
                  f"{x['naive_s'] / x['synth_s']:.0f}× | {x['naive_s'] / x['ours_fit_s']:.0f}× | "
                  f"{x['naive_same_tol_s'] / x['ours_fit_s']:.0f}× |")
    if "privbayes_cps" in res:
        c = res["privbayes_cps"]
        print()
        print(f"| PrivBayes, CPS-shaped ({c['shape'][0]:,} × {c['shape'][1]}, ε = 1) | {len(c['times'])} | "
              f"{c['median']:.2f} s | {min(c['times']):.2f}–{max(c['times']):.2f} s | ≤ {TARGETS['privbayes_cps']} s | "
              f"{'met' if c['median'] <= TARGETS['privbayes_cps'] else 'MISSED'} |")
    print(f"\nload average before {res['load_before']}, after {res['load_after']}")


if __name__ == "__main__":
    main()
