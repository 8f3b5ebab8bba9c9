"""Where dpcore AIM's error comes from under (ε, δ) through zCDP: measurement, estimation or sampling.

For each configuration (``--configs``; ``zcdp`` = ``delta=--delta`` with default options,
``zcdp:rounds=28`` = with that public option, ``pure`` = pure ε, ...) and each seed, one
``dpcore.synthesize(df, "aim", epsilon, delta=..., seed, domain=declared, **options)`` with
dpcore's model fit observed from outside (``dpcore.synthesizers.aim.fit_measurements`` is
wrapped here, in this process only, to keep its last inputs and model; dpcore is not changed),
and, on the original table:

* ``S_pMSE``: mean two-way S_pMSE of the synthetic set (as bench/peers.py);
* ``model S_pMSE``: the same statistic with the fitted model's expected counts in place of the
  synthetic counts (no sampling error); ``pgm S_pMSE`` (``--pgm``, needs ``mbi``, i.e. the peers
  venv): the same for Private-PGM's mirror descent (``mbi.estimation.mirror_descent``, 1000
  iterations, as smartnoise's AIM calls it) fitted to **the same noisy measurements**;
* L1 errors per record (‖a − x‖₁ / n, x the exact margin) averaged over margins:
  ``meas`` (the noisy measurements of each measured two-way set, repeats combined by inverse
  variance) and ``model@meas`` (the model on those sets), ``model@all`` / ``pgm@all`` /
  ``syn@all`` over all two-way margins;
* ``rounded S_pMSE``: a synthetic set drawn from dpcore's fitted model by controlled rounding
  instead of i.i.d. draws (:func:`rounded_sample`, written here: in each clique, the records of
  one separator cell get the child values in counts rounded from k·p(child | separator) (floor,
  then the remainders by systematic sampling with a random start), in a random order). It is
  post-processing of the model, like dpcore's sampler; it shows how much of the error is sampling;
* the schedule: rounds run, rounds annealed (noise halved), distinct two-way sets measured, σ of
  the one-way margins (first) and of the last measurement.

    PYTHONPATH=. /tmp/peers-venv/bin/python bench/aim_zcdp_diagnosis.py --data s7 --seeds 9 \\
        --configs pure zcdp zcdp:rounds=56 zcdp:rounds=28 --pgm

Prints a per-run CSV to ``--out`` and a Markdown table of medians. Reads raw data: NOT DP, a
curator-side benchmark on the public SD2011 extract and the CPS voter tables.
"""
from __future__ import annotations

import argparse
import csv
import itertools
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def parse_config(text: str) -> tuple[str, bool, dict]:
    kind, _, rest = text.partition(":")
    if kind not in ("pure", "zcdp"):
        raise SystemExit(f"config {text!r}: start with pure or zcdp")
    opts = {}
    for kv in filter(None, rest.split(",")):
        k, v = kv.split("=")
        opts[k] = float(v) if "." in v else int(v)
    return text, kind == "zcdp", opts


def exact_margin(codes: np.ndarray, shape, axes) -> np.ndarray:
    idx = np.ravel_multi_index(tuple(codes[:, a] for a in axes), tuple(shape[a] for a in axes))
    return np.bincount(idx, minlength=int(np.prod([shape[a] for a in axes]))).astype(float)


def pgm_margins(shape, names, meas, total, pairs):
    """Private-PGM (mbi 1.1.0, smartnoise's estimator) on the same measurements."""
    from mbi import Domain, LinearMeasurement, estimation, marginal_oracles
    dom = Domain(names, [int(k) for k in shape])
    ms = [LinearMeasurement(np.asarray(y, float).ravel(), tuple(names[a] for a in sorted(r)), float(np.sqrt(v)))
          for r, y, v in meas]
    model = estimation.mirror_descent(dom, ms, known_total=float(total), iters=1000,
                                      marginal_oracle=marginal_oracles.message_passing_stable)
    return {p: np.asarray(model.project(tuple(names[a] for a in p)).datavector(), float) for p in pairs}


def rounded_counts(k: int, p: np.ndarray, rng) -> np.ndarray:
    """k records over cells of probability p: floor(k·p), the remainders by systematic sampling."""
    want = k * p / p.sum()
    base = np.floor(want).astype(np.int64)
    frac = want - base
    left = k - int(base.sum())
    if left > 0:
        points = rng.random() + np.arange(left)
        base[np.minimum(np.searchsorted(np.cumsum(frac), points, side="right"), len(p) - 1)] += 1
    return base


def rounded_sample(model, n: int, rng) -> np.ndarray:
    """n records from a dpcore DecomposableModel, root clique first, each clique's new attributes
    allocated to the records of each separator cell by :func:`rounded_counts`, in random order."""
    from dpcore.estimate.junction_tree import cells
    t = model.tree
    out = np.zeros((n, len(t.shape)), dtype=np.int64)
    for c in t.order:
        cax = t.cliques[c]
        mu = np.clip(model.mu[c], 0.0, None)
        sep = t.separator(c)
        rest = tuple(a for a in cax if a not in sep)
        if not rest:
            continue
        tab = np.transpose(mu, [cax.index(a) for a in sep + rest]).reshape(cells(t.shape, sep), cells(t.shape, rest))
        row = (np.ravel_multi_index(tuple(out[:, a] for a in sep), [t.shape[a] for a in sep]) if sep
               else np.zeros(n, np.int64))
        order = np.argsort(row, kind="stable")
        groups, starts = np.unique(row[order], return_index=True)
        ends = np.append(starts[1:], n)
        j = np.empty(n, dtype=np.int64)
        for g, a, b in zip(groups, starts, ends):
            p = tab[g] if tab[g].sum() > 0 else np.ones(tab.shape[1])
            vals = np.repeat(np.arange(tab.shape[1]), rounded_counts(b - a, p, rng))
            j[order[a:b]] = rng.permutation(vals)
        for a, v in zip(rest, np.unravel_index(j, [t.shape[a] for a in rest])):
            out[:, a] = v
    return out


def run(df, dom, eps, delta, seed, opts, pgm: bool) -> dict:
    import dpcore
    import dpcore.synthesizers.aim as aim
    from dpcore.metrics import utility_tables
    from dpcore.metrics.tables import _tab_stats
    seen = {}
    real_fit = aim.fit_measurements

    def observed_fit(shape, measurements, total, sweeps):
        model, info = real_fit(shape, measurements, total, sweeps)
        seen["meas"], seen["model"], seen["total"] = list(measurements), model, total
        return model, info

    aim.fit_measurements = observed_fit
    try:
        t0 = time.perf_counter()
        rel = dpcore.synthesize(df, method="aim", epsilon=eps, seed=seed, domain=dom, delta=delta, **opts)
        secs = time.perf_counter() - t0
    finally:
        aim.fit_measurements = real_fit
    syn = rel.sets[0]
    diag = (rel.diagnostics.get("per_set") or [{}])[0]
    shape, names = dom.shape, list(dom.names)
    codes, scodes = dom.encode(df), dom.encode(syn)
    n = len(df)
    pairs = list(itertools.combinations(range(len(shape)), 2))
    exact = {p: exact_margin(codes, shape, p) for p in pairs}
    model = seen["model"]
    mod = {p: np.asarray(model.marginal(p), float).ravel() for p in pairs}
    synm = {p: exact_margin(scodes, shape, p) for p in pairs}
    meas = seen["meas"]
    comb: dict = {}
    for r, y, v in meas:
        r = tuple(sorted(r))
        s, w = comb.get(r, (0.0, 0.0))
        comb[r] = (s + np.asarray(y, float).ravel() / v, w + 1.0 / v)
    measured2 = [r for r in comb if len(r) == 2]
    l1 = lambda a, b: float(np.abs(a - b).sum()) / n
    out = {
        "seconds": round(secs, 3),
        "s_pmse": float(utility_tables(df, syn).mean_s_pmse),
        "model_s_pmse": float(np.nanmean([_tab_stats(exact[p], mod[p])[0] for p in pairs])),
        "rounded_s_pmse": float(utility_tables(df, dom.decode(rounded_sample(model, len(syn),
                                                                             np.random.default_rng(seed)),
                                                              np.random.default_rng(seed))).mean_s_pmse),
        "meas_l1": float(np.mean([l1(comb[r][0] / comb[r][1], exact[r]) for r in measured2])) if measured2 else np.nan,
        "model_l1_meas": float(np.mean([l1(mod[r], exact[r]) for r in measured2])) if measured2 else np.nan,
        "model_l1_all": float(np.mean([l1(mod[p], exact[p]) for p in pairs])),
        "syn_l1_all": float(np.mean([l1(synm[p], exact[p]) for p in pairs])),
        "rounds": diag.get("rounds"), "annealed": diag.get("annealed"), "pairs_measured": len(measured2),
        "sigma_first": float(np.sqrt(meas[0][2])), "sigma_last": float(np.sqrt(meas[-1][2])),
        "rho": rel.rho,
    }
    if pgm:
        pm = pgm_margins(shape, names, meas, seen["total"], pairs)
        out["pgm_s_pmse"] = float(np.nanmean([_tab_stats(exact[p], pm[p])[0] for p in pairs]))
        out["pgm_l1_all"] = float(np.mean([l1(pm[p], exact[p]) for p in pairs]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="s7")
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-9)
    ap.add_argument("--seeds", type=int, default=9, help="seeds 1000·k + 10·ε, k = 0 … seeds−1 (bench/peers.py's)")
    ap.add_argument("--configs", nargs="+", default=["pure", "zcdp"])
    ap.add_argument("--pgm", action="store_true", help="also fit Private-PGM (mbi) to the same measurements")
    ap.add_argument("--out", default=str(HERE / "out" / "aim_zcdp_diagnosis.csv"))
    args = ap.parse_args()
    from peers import load_data

    from _machine import describe, machine
    print("machine:", describe(machine()), "| load average:", " ".join(f"{x:.2f}" for x in os.getloadavg()), flush=True)
    df, dom = load_data(args.data)
    rows = []
    for text in args.configs:
        label, zcdp, opts = parse_config(text)
        for k in range(args.seeds):
            seed = 1000 * k + int(round(args.eps * 10))
            r = run(df, dom, args.eps, args.delta if zcdp else None, seed, opts, args.pgm and zcdp)
            r.update(config=label, seed=seed, load1=round(os.getloadavg()[0], 2))
            rows.append(r)
            print(f"  {label} seed {seed}: " + ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                                                      for k, v in r.items() if k not in ("config", "seed")), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    keys = sorted({k for r in rows for k in r})
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    cols = ["s_pmse", "rounded_s_pmse", "model_s_pmse", "pgm_s_pmse", "meas_l1", "model_l1_meas", "model_l1_all",
            "pgm_l1_all", "syn_l1_all", "rounds", "annealed", "pairs_measured", "sigma_first", "sigma_last", "seconds"]
    print(f"\n{args.data}, ε = {args.eps:g}, δ = {args.delta:g} for zcdp configs; medians over {args.seeds} seeds\n")
    print("| config | " + " | ".join(cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for text in args.configs:
        rs = [r for r in rows if r["config"] == text]
        cell = []
        for c in cols:
            v = [r[c] for r in rs if r.get(c) is not None and not (isinstance(r[c], float) and np.isnan(r[c]))]
            cell.append(f"{statistics.median(v):.3g}" if v else "—")
        print(f"| {text} | " + " | ".join(cell) + " |")


if __name__ == "__main__":
    main()
