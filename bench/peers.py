"""External reference implementations next to dpcore's synthesizers, on S7 and the CPS-shaped table.

Peers (optional; see bench/requirements-peers.txt for the install, in a venv of its own):

- ``datasynthesizer``: DataSynthesizer 0.1.13, correlated attribute mode (its PrivBayes,
  the code the STEPS papers compared against), degree k = 2, every column categorical.
  Under numpy 2 it needs ``numpy.set_printoptions(legacy="1.25")``, set here before import.
- ``mst``, ``aim``: smartnoise-synth 1.0.8 (``Synthesizer.create("mst"|"aim", epsilon=ε)``),
  every column categorical, ``preprocessor_eps=0``. These are (ε, δ)-DP with their default
  δ (1e-9), not pure ε-DP.

Ours: ``dpcore.synthesize(df, method, epsilon=ε, seed, domain=declared)`` for
``steps``, ``privbayes`` and ``ipf``, and dpcore's pure-ε AIM and MST as ``dp_aim`` and ``dp_mst``
(``method="aim"|"mst"``; the names ``aim``/``mst`` here are smartnoise's).
Data: ``s7`` (SD2011 S7), ``cps`` (the CPS-shaped table), ``voter`` (``dpcore.data.datasets.cps_voter_extract``), ``wide`` (``dpcore.data.datasets.cps_voter_wide``,
22 attributes, 6.5e17 cells).

Every peer gets the same input: each value (missing included) replaced by the token
``x<code>`` of its code in the declared domain; the peer's output tokens are decoded
back through the same domain (``Domain.decode``), so all synthetic sets have the
original's columns and dtypes. The peers learn the set of values from the data
(their own category handling), which the declared domain would make public anyway.

Each run is its own child process (``--one``), with a wall-clock cap (``--cap``,
default 600 s): a run over the cap is reported as ``timeout``, a crash as ``error``.
``seconds`` is fit + sample inside the child (imports excluded). Per run, on the
original against the synthetic set: mean two-way S_pMSE
(``utility_tables(orig, syn).mean_s_pmse``), %ru (``disclosure(orig, syn).ru``) and
SPECKS (``specks(orig, syn, model="main")``).

    cd /work/main && PYTHONPATH=. /tmp/peers-venv/bin/python bench/peers.py [--data s7 cps] [--eps 0.5 1 2] [--reps 1]

Writes ``bench/out/peers.csv`` (one row per run, appended as runs finish) and prints a
Markdown table (medians over reps of seconds and S_pMSE, means of %ru and SPECKS, the largest peak RSS). A peer that is not installed is reported and skipped.
Benchmark on the public SD2011 extract and synthetic benchmark data; nothing is released.
"""
from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

OURS = ("steps", "privbayes", "ipf", "dp_aim", "dp_mst")
#: bench label -> dpcore method
DPCORE_METHOD = {"dp_aim": "aim", "dp_mst": "mst"}
PEERS = {"datasynthesizer": "DataSynthesizer", "mst": "snsynth", "aim": "snsynth"}
FIELDS = ["data", "method", "epsilon", "rep", "status", "seconds", "mean_s_pmse", "ru_pct", "specks_main", "peak_mb", "note"]


def load_data(name: str):
    import dpcore
    if name == "s7":
        from dpcore.data.datasets import load_sd2011, sd2011_extract
        df = sd2011_extract(load_sd2011(), 7)
    elif name == "cps":
        from cps_data import cps_shaped
        df = cps_shaped()
    elif name == "voter":
        from dpcore.data.datasets import bundled_cps_table, cps_voter_extract, default_cps_path, load_cps_vrs
        df = cps_voter_extract(load_cps_vrs()) if default_cps_path() else bundled_cps_table("voters")
    elif name == "wide":
        from dpcore.data.datasets import bundled_cps_table, cps_voter_wide, default_cps_path
        df = cps_voter_wide() if default_cps_path() else bundled_cps_table("wide")
    else:
        raise SystemExit(f"unknown data {name!r}; use s7, cps, voter or wide")
    return df, dpcore.infer_domain(df).declared()


def tokens(df, dom):
    import pandas as pd
    codes = dom.encode(df)
    return pd.DataFrame({a: [f"x{c}" for c in codes[:, j]] for j, a in enumerate(dom.names)}), codes


def untoken(tok, dom, rng):
    import numpy as np
    codes = np.stack([tok[a].astype(str).str.slice(1).astype(np.int64).to_numpy() for a in dom.names], axis=1)
    return dom.decode(codes, rng)


def run_peer(method: str, tok, eps: float, seed: int):
    """Fit + sample one peer on the token table; returns the token table it generated."""
    import numpy as np
    np.random.seed(seed)
    import random
    random.seed(seed)
    n = len(tok)
    if method == "datasynthesizer":
        np.set_printoptions(legacy="1.25")
        from DataSynthesizer.DataDescriber import DataDescriber
        from DataSynthesizer.DataGenerator import DataGenerator
        with tempfile.TemporaryDirectory() as d:
            src, desc = os.path.join(d, "in.csv"), os.path.join(d, "desc.json")
            tok.to_csv(src, index=False)
            describer = DataDescriber(category_threshold=10_000)
            describer.describe_dataset_in_correlated_attribute_mode(
                src, k=2, epsilon=eps, attribute_to_is_categorical={a: True for a in tok.columns},
                attribute_to_is_candidate_key={a: False for a in tok.columns}, seed=seed)
            describer.save_dataset_description_to_file(desc)
            gen = DataGenerator()
            gen.generate_dataset_in_correlated_attribute_mode(n, desc, seed=seed)
            return gen.synthetic_dataset
    if method in ("mst", "aim"):
        from snsynth import Synthesizer
        synth = Synthesizer.create(method, epsilon=eps, verbose=False)
        synth.fit(tok, preprocessor_eps=0.0, categorical_columns=list(tok.columns))
        return synth.sample(n)
    raise ValueError(method)


def one(data: str, method: str, eps: float, rep: int) -> dict:
    """One run, in this process: synthesise, time it, score it. Prints one JSON line."""
    import numpy as np
    import dpcore
    from dpcore.metrics import disclosure, specks, utility_tables
    df, dom = load_data(data)
    seed = 1000 * rep + int(round(eps * 10))
    note = ""
    if method in OURS:
        t0 = time.perf_counter()
        rel = dpcore.synthesize(df, method=DPCORE_METHOD.get(method, method), epsilon=eps, seed=seed, domain=dom)
        secs = time.perf_counter() - t0
        syn = rel.sets[0] if hasattr(rel, "sets") else rel.frames[0]
    else:
        tok, _ = tokens(df, dom)
        t0 = time.perf_counter()
        out = run_peer(method, tok, eps, seed)
        secs = time.perf_counter() - t0
        syn = untoken(out, dom, np.random.default_rng(seed))
        if method in ("mst", "aim"):
            note = "(ε, δ=1e-9)-DP"
    import resource
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # this child: data, fit and sampling
    ut = utility_tables(df, syn)
    dis = disclosure(df, syn)
    sk = specks(df, syn, model="main")
    return {"data": data, "method": method, "epsilon": eps, "rep": rep, "status": "ok", "seconds": round(secs, 3),
            "mean_s_pmse": float(ut.mean_s_pmse), "ru_pct": float(dis.ru), "specks_main": float(sk.ks), "peak_mb": round(peak_mb), "note": note}


def installed(method: str) -> bool:
    if method in OURS:
        return True
    return importlib.util.find_spec(PEERS[method]) is not None


def fmt(v, nd=3):
    return "—" if v is None or v == "" else (f"{v:.{nd}f}" if isinstance(v, float) else str(v))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=["s7", "cps"])
    ap.add_argument("--eps", nargs="+", type=float, default=[0.5, 1.0, 2.0])
    ap.add_argument("--methods", nargs="+", default=list(OURS) + list(PEERS))
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--cap", type=float, default=600.0, help="wall-clock cap per run, seconds")
    ap.add_argument("--out", default=str(HERE / "out" / "peers.csv"))
    ap.add_argument("--one", nargs=4, metavar=("DATA", "METHOD", "EPS", "REP"), help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.one:
        d, m, e, r = args.one
        print("RESULT " + json.dumps(one(d, m, float(e), int(r))), flush=True)
        return

    from _machine import describe, machine
    print("machine:", describe(machine()), "| python", sys.executable, flush=True)
    methods = []
    for m in args.methods:
        if installed(m):
            methods.append(m)
        else:
            print(f"SKIP {m}: package {PEERS[m]!r} is not installed in this Python ({sys.executable}); "
                  f"see bench/requirements-peers.txt", flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    with out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for data in args.data:
            for eps in args.eps:
                for m in methods:
                    for rep in range(args.reps):
                        cmd = [sys.executable, __file__, "--one", data, m, str(eps), str(rep)]
                        t0 = time.perf_counter()
                        try:
                            p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.cap, env=os.environ)
                            line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
                            if p.returncode == 0 and line:
                                row = json.loads(line[-1][7:])
                            else:
                                err = (p.stderr.strip().splitlines() or ["no output"])[-1][:200]
                                row = {"data": data, "method": m, "epsilon": eps, "rep": rep, "status": "error", "note": err}
                        except subprocess.TimeoutExpired:
                            row = {"data": data, "method": m, "epsilon": eps, "rep": rep, "status": "timeout",
                                   "note": f"over the {args.cap:g} s cap"}
                        rows.append(row)
                        w.writerow({k: row.get(k, "") for k in FIELDS})
                        f.flush()
                        print(f"  {data} ε={eps:g} {m} rep {rep}: {row['status']} "
                              f"{fmt(row.get('seconds'), 2)} s, S_pMSE {fmt(row.get('mean_s_pmse'), 2)}, "
                              f"%ru {fmt(row.get('ru_pct'), 2)}, SPECKS {fmt(row.get('specks_main'), 3)} "
                              f"({time.perf_counter() - t0:.0f} s with imports and scoring) {row.get('note', '')}", flush=True)

    print()
    print("| data | ε | method | runs ok | seconds (median) | mean S_pMSE (2-way; median) | %ru | SPECKS (main) | peak MB | note |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---|")
    for data in args.data:
        for eps in args.eps:
            for m in methods:
                rs = [r for r in rows if r["data"] == data and r["epsilon"] == eps and r["method"] == m]
                ok = [r for r in rs if r["status"] == "ok"]
                mean = lambda k: statistics.mean(r[k] for r in ok) if ok else None  # noqa: E731
                med = lambda k: statistics.median(r[k] for r in ok) if ok else None  # noqa: E731
                notes = "; ".join(sorted({r["status"] + (": " + r["note"] if r.get("note") else "") for r in rs if r["status"] != "ok"}
                                         | {r["note"] for r in ok if r.get("note")}))
                label = m if m in OURS else f"{m} (peer)"
                print(f"| {data} | {eps:g} | {label} | {len(ok)}/{len(rs)} | {fmt(med('seconds'), 2)} | "
                      f"{fmt(med('mean_s_pmse'), 2)} | {fmt(mean('ru_pct'), 2)} | {fmt(mean('specks_main'), 3)} | "
                      f"{fmt(max((r['peak_mb'] for r in ok), default=None))} | {notes} |")
    for m in args.methods:
        if m not in methods:
            print(f"\n{m}: not run (package {PEERS[m]!r} not installed in {sys.executable})")


if __name__ == "__main__":
    main()
