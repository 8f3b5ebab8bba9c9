"""External reference implementations next to dpcore's synthesizers, on S7 and the CPS-shaped table.

Peers (optional; see bench/requirements-peers.txt for the install, in a venv of its own):

- ``datasynthesizer``: DataSynthesizer 0.1.13, correlated attribute mode (its PrivBayes,
  the code the STEPS papers compared against), degree k = 2, every column categorical.
  Under numpy 2 it needs ``numpy.set_printoptions(legacy="1.25")``, set here before import.
- ``mst``, ``aim``: smartnoise-synth 1.0.8 (``Synthesizer.create("mst"|"aim", epsilon=ε, delta=δ)``),
  every column categorical, ``preprocessor_eps=0``. These are (ε, δ)-DP, δ = ``--delta``
  (default 1e-9, smartnoise's own default), not pure ε-DP.
- ``dpmm_aim``, ``dpmm_mst``, ``dpmm_privbayes``: dpmm 0.1.9 (``AIMPipeline``, ``MSTPipeline``,
  ``PrivBayesPipeline``; ``P(epsilon=ε, delta=δ, proc_epsilon=None, n_jobs=1)``, ``.fit(tok,
  domain={col: {"categories": ["x0", …]}}, random_state=seed)``, ``.generate(n_records=n,
  random_state=seed)``), (ε, δ)-DP. dpmm pins numpy 1.26, pandas 2.1 and opendp 0.12, which clash
  with dpcore's pins, so it lives in a venv of its own (bench/requirements-dpmm.txt) and runs as
  a grandchild process, ``--python-dpmm`` (default ``$DPMM_PYTHON``, else /tmp/dpmm-venv/bin/python),
  that imports neither dpcore nor this repository: it reads the token table from a CSV and writes
  its output tokens to another. Its categories are every code of the declared domain (public),
  so it spends nothing on preprocessing. Its ``seconds`` (fit + generate) and peak MB are its own.

Ours: ``dpcore.synthesize(df, method, epsilon=ε, seed, domain=declared)`` for
``steps``, ``privbayes`` and ``ipf``, and dpcore's pure-ε AIM and MST as ``dp_aim`` and ``dp_mst``
(``method="aim"|"mst"``; the names ``aim``/``mst`` here are smartnoise's). The same methods
released as (ε, δ)-DP through zCDP (``delta=δ``, the same δ as the peers) are the labels
``dp_aim_zcdp``, ``dp_mst_zcdp``, ``ipf_zcdp``, ``privbayes_zcdp`` and ``steps_zcdp`` (AIM and MST
draw their records by controlled rounding there, their default under δ); ``dp_aim_zcdp_iid`` and
``dp_mst_zcdp_iid`` are the same releases with the records drawn i.i.d. (``synthesis="sample"``).
Data: ``s7`` (SD2011 S7), ``cps`` (the CPS-shaped table), ``voter``
(``dpcore.data.datasets.cps_voter_extract``), ``wide`` (``dpcore.data.datasets.cps_voter_wide``,
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

    cd <repo> && PYTHONPATH=. /tmp/peers-venv/bin/python bench/accuracy/peers.py [--data s7 cps] [--eps 0.5 1 2] \
        [--reps 1] [--delta 1e-9] [--methods dp_aim_zcdp aim dpmm_aim ...]

Each run's row also records the 1-minute load average when it started (``load1``): the
machine may be shared, and the seconds are only as good as the load lets them be. With
``--skip-after-timeout``, a method that went over the cap on a table is not run again for that
table and ε (its later reps are reported as ``skipped``), so that three 600 s timeouts do not
cost half an hour.

Writes ``bench/out/peers.csv`` (one row per run, appended as runs finish) and prints a
Markdown table (medians over reps of seconds and S_pMSE, means of %ru and SPECKS, the largest peak RSS).
A peer that is not installed is reported and skipped.
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
BENCH = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(BENCH / "tools"))  # _machine, cps_data

PURE = ("steps", "privbayes", "ipf", "dp_aim", "dp_mst")
#: dpcore's methods released as (ε, δ)-DP through zCDP (``delta=`` the run's δ)
ZCDP = tuple(f"{m}_zcdp" for m in PURE)
#: AIM and MST under zCDP with their records drawn i.i.d. (``synthesis="sample"``; the default under δ is "round")
ZCDP_IID = ("dp_aim_zcdp_iid", "dp_mst_zcdp_iid")
OURS = PURE + ZCDP + ZCDP_IID
#: bench label -> dpcore method
DPCORE_METHOD = {"dp_aim": "aim", "dp_mst": "mst"}
#: peer label -> the module that must be importable (dpmm: in its own venv, see ``dpmm_python``)
PEERS = {"datasynthesizer": "DataSynthesizer", "mst": "snsynth", "aim": "snsynth",
         "dpmm_aim": "dpmm", "dpmm_mst": "dpmm", "dpmm_privbayes": "dpmm"}
DPMM_PIPELINE = {"dpmm_aim": "AIMPipeline", "dpmm_mst": "MSTPipeline", "dpmm_privbayes": "PrivBayesPipeline"}
#: the (ε, δ) peers, and dpcore's zCDP labels
WITH_DELTA = {"mst", "aim", *DPMM_PIPELINE, *ZCDP, *ZCDP_IID}
FIELDS = ["data", "method", "epsilon", "delta", "rep", "status", "seconds", "mean_s_pmse", "ru_pct", "specks_main",
          "peak_mb", "load1", "note"]


def dpcore_method(label: str) -> str:
    label = label[:-len("_iid")] if label in ZCDP_IID else label
    base = label[:-len("_zcdp")] if label.endswith("_zcdp") else label
    return DPCORE_METHOD.get(base, base)


def dpmm_python() -> str:
    """The interpreter of dpmm's own venv (bench/requirements-dpmm.txt)."""
    return os.environ.get("DPMM_PYTHON") or "/tmp/dpmm-venv/bin/python"


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


def dpmm_child(src: str, dst: str, method: str, eps: float, delta: float, seed: int, sizes: str) -> None:
    """Runs inside dpmm's venv (no dpcore): fit + generate on the token CSV ``src``, write ``dst``.
    Prints one JSON line with its own seconds (imports excluded) and peak RSS."""
    import resource

    import dpmm.pipelines as pipelines
    import pandas as pd
    tok = pd.read_csv(src, dtype=str, keep_default_na=False)
    domain = {a: {"categories": [f"x{c}" for c in range(int(k))]} for a, k in zip(tok.columns, sizes.split(","))}
    t0 = time.perf_counter()
    pipe = getattr(pipelines, DPMM_PIPELINE[method])(epsilon=eps, delta=delta, proc_epsilon=None, n_jobs=1)
    pipe.fit(tok, domain=domain, random_state=seed)
    out = pipe.generate(n_records=len(tok), random_state=seed)
    secs = time.perf_counter() - t0
    out[list(tok.columns)].to_csv(dst, index=False)
    print("DPMM " + json.dumps({"seconds": secs, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}),
          flush=True)


def run_dpmm(method: str, tok, shape, eps: float, delta: float, seed: int):
    """dpmm in its own venv, as a child process that never imports dpcore: returns
    (its token table, its seconds, its peak MB)."""
    import pandas as pd
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "in.csv"), os.path.join(d, "out.csv")
        tok.to_csv(src, index=False)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        p = subprocess.run([dpmm_python(), __file__, "--dpmm-child", src, dst, method, repr(eps), repr(delta),
                            str(seed), ",".join(str(int(k)) for k in shape)],
                           capture_output=True, text=True, env=env, cwd=d)
        line = [x for x in p.stdout.splitlines() if x.startswith("DPMM ")]
        if p.returncode != 0 or not line:
            raise RuntimeError("dpmm: " + ((p.stderr.strip().splitlines() or ["no output"])[-1][:200]))
        info = json.loads(line[-1][5:])
        return pd.read_csv(dst, dtype=str, keep_default_na=False), info["seconds"], info["peak_mb"]


def run_peer(method: str, tok, eps: float, seed: int, delta: float):
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
        synth = Synthesizer.create(method, epsilon=eps, delta=delta, verbose=False)
        synth.fit(tok, preprocessor_eps=0.0, categorical_columns=list(tok.columns))
        return synth.sample(n)
    raise ValueError(method)


def one(data: str, method: str, eps: float, rep: int, delta: float = 1e-9) -> dict:
    """One run, in this process: synthesise, time it, score it. Prints one JSON line."""
    import resource

    import numpy as np

    import dpcore
    from dpcore.metrics import disclosure, specks, utility_tables
    df, dom = load_data(data)
    seed = 1000 * rep + int(round(eps * 10))
    note = f"(ε, δ={delta:g})-DP" if method in WITH_DELTA else ""
    peak_mb = None
    if method in OURS:
        t0 = time.perf_counter()
        zcdp = method in ZCDP or method in ZCDP_IID
        rel = dpcore.synthesize(df, method=dpcore_method(method), epsilon=eps, seed=seed, domain=dom,
                                delta=delta if zcdp else None,
                                **({"synthesis": "sample"} if method in ZCDP_IID else {}))
        secs = time.perf_counter() - t0
        syn = rel.sets[0] if hasattr(rel, "sets") else rel.frames[0]
        if zcdp:
            note += f" via zCDP, ρ = {rel.rho:.4g}" + (", records i.i.d." if method in ZCDP_IID else "")
    elif method in DPMM_PIPELINE:
        tok, _ = tokens(df, dom)
        out, secs, peak_mb = run_dpmm(method, tok, dom.shape, eps, delta, seed)
        syn = untoken(out, dom, np.random.default_rng(seed))
    else:
        tok, _ = tokens(df, dom)
        t0 = time.perf_counter()
        out = run_peer(method, tok, eps, seed, delta)
        secs = time.perf_counter() - t0
        syn = untoken(out, dom, np.random.default_rng(seed))
    if peak_mb is None:
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # this child: data, fit and sampling
    ut = utility_tables(df, syn)
    dis = disclosure(df, syn)
    sk = specks(df, syn, model="main")
    return {"data": data, "method": method, "epsilon": eps, "delta": delta if method in WITH_DELTA else "", "rep": rep,
            "status": "ok", "seconds": round(secs, 3),
            "mean_s_pmse": float(ut.mean_s_pmse), "ru_pct": float(dis.ru), "specks_main": float(sk.ks),
            "peak_mb": round(peak_mb), "note": note}


def installed(method: str) -> bool:
    if method in OURS:
        return True
    if method in DPMM_PIPELINE:
        try:
            return subprocess.run([dpmm_python(), "-c", "import dpmm.pipelines"], capture_output=True).returncode == 0
        except OSError:
            return False
    return importlib.util.find_spec(PEERS[method]) is not None


def run_capped(cmd: list[str], cap: float) -> tuple[int | None, str, str]:
    """Run ``cmd`` in a session of its own; past ``cap`` seconds kill its whole process group
    (dpmm's grandchild included). Returns (exit code or None on timeout, stdout, stderr)."""
    import signal
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=cap)
        return p.returncode, out, err
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return None, out, err


def fmt(v, nd=3):
    return "—" if v is None or v == "" else (f"{v:.{nd}f}" if isinstance(v, float) else str(v))


def _arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=["s7", "cps"])
    ap.add_argument("--eps", nargs="+", type=float, default=[0.5, 1.0, 2.0])
    ap.add_argument("--methods", nargs="+", default=list(OURS) + list(PEERS))
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--delta", type=float, default=1e-9,
                    help="δ of the (ε, δ) peers and of dpcore's *_zcdp labels (default 1e-9)")
    ap.add_argument("--cap", type=float, default=600.0, help="wall-clock cap per run, seconds")
    ap.add_argument("--skip-after-timeout", action="store_true",
                    help="after a timeout, skip the method's later reps on that table and ε")
    ap.add_argument("--out", default=str(BENCH / "out" / "peers.csv"))
    ap.add_argument("--one", nargs=5, metavar=("DATA", "METHOD", "EPS", "REP", "DELTA"), help=argparse.SUPPRESS)
    ap.add_argument("--dpmm-child", nargs=7, help=argparse.SUPPRESS)
    return ap.parse_args()


def _installed_methods(names: list[str]) -> list[str]:
    """The methods whose package is installed; a line for each skipped one."""
    methods = []
    for m in names:
        if installed(m):
            methods.append(m)
        else:
            where, how = ((dpmm_python(), "bench/requirements-dpmm.txt") if m in DPMM_PIPELINE
                          else (sys.executable, "bench/requirements-peers.txt"))
            print(f"SKIP {m}: package {PEERS[m]!r} is not installed in {where}; see {how}", flush=True)
    return methods


def _run_rep(args: argparse.Namespace, data: str, m: str, eps: float, rep: int) -> tuple[dict, bool]:
    """One run in a capped child process: (its row, whether it went over the cap)."""
    cmd = [sys.executable, __file__, "--one", data, m, str(eps), str(rep), repr(args.delta)]
    code, stdout, stderr = run_capped(cmd, args.cap)
    line = [x for x in stdout.splitlines() if x.startswith("RESULT ")]
    if code is None:
        return {"data": data, "method": m, "epsilon": eps, "rep": rep, "status": "timeout",
                "note": f"over the {args.cap:g} s cap"}, True
    if code == 0 and line:
        return json.loads(line[-1][7:]), False
    err = (stderr.strip().splitlines() or ["no output"])[-1][:200]
    return {"data": data, "method": m, "epsilon": eps, "rep": rep, "status": "error", "note": err}, False


def _run_all(args: argparse.Namespace, methods: list[str], out: Path) -> list[dict]:
    """Every (table, ε, method, rep), each row written to ``out`` as it comes."""
    rows = []
    with out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()

        def keep(row: dict) -> None:
            rows.append(row)
            w.writerow({k: row.get(k, "") for k in FIELDS})
            f.flush()

        for data in args.data:
            for eps in args.eps:
                for m in methods:
                    timed_out = False
                    for rep in range(args.reps):
                        load1 = round(os.getloadavg()[0], 2)
                        if timed_out and args.skip_after_timeout:
                            keep({"data": data, "method": m, "epsilon": eps, "rep": rep, "status": "skipped",
                                  "load1": load1, "note": "not run: an earlier rep went over the cap"})
                            print(f"  {data} ε={eps:g} {m} rep {rep}: skipped", flush=True)
                            continue
                        t0 = time.perf_counter()
                        row, over = _run_rep(args, data, m, eps, rep)
                        timed_out = timed_out or over
                        row["load1"] = load1
                        keep(row)
                        print(f"  {data} ε={eps:g} {m} rep {rep}: {row['status']} "
                              f"{fmt(row.get('seconds'), 2)} s, S_pMSE {fmt(row.get('mean_s_pmse'), 2)}, "
                              f"%ru {fmt(row.get('ru_pct'), 2)}, SPECKS {fmt(row.get('specks_main'), 3)} "
                              f"({time.perf_counter() - t0:.0f} s with imports and scoring) {row.get('note', '')}",
                              flush=True)
    return rows


def _summary(args: argparse.Namespace, methods: list[str], rows: list[dict]) -> None:
    """The Markdown table of the runs, one line per (table, ε, method)."""
    print()
    print("| data | ε | method | runs ok | seconds (median) | mean S_pMSE (2-way; median; runs) | %ru | SPECKS (main) "
          "| peak MB | load (1 min) | note |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---|---|")
    for data in args.data:
        for eps in args.eps:
            for m in methods:
                rs = [r for r in rows if r["data"] == data and r["epsilon"] == eps and r["method"] == m]
                ok = [r for r in rs if r["status"] == "ok"]
                mean = lambda k, ok=ok: statistics.mean(r[k] for r in ok) if ok else None
                med = lambda k, ok=ok: statistics.median(r[k] for r in ok) if ok else None
                notes = "; ".join(sorted({r["status"] + (": " + r["note"] if r.get("note") else "")
                                          for r in rs if r["status"] != "ok"}
                                         | {r["note"] for r in ok if r.get("note")}))
                label = m if m in OURS else f"{m} (peer)"
                runs = ", ".join(f"{r['mean_s_pmse']:.2f}" for r in ok)
                loads = [r["load1"] for r in rs if r.get("load1") is not None]
                load = f"{min(loads):.1f}–{max(loads):.1f}" if loads else "—"
                print(f"| {data} | {eps:g} | {label} | {len(ok)}/{len(rs)} | {fmt(med('seconds'), 2)} | "
                      f"{fmt(med('mean_s_pmse'), 2)} ({runs}) | {fmt(mean('ru_pct'), 2)} | "
                      f"{fmt(mean('specks_main'), 3)} | "
                      f"{fmt(max((r['peak_mb'] for r in ok), default=None))} | {load} | {notes} |")
    for m in args.methods:
        if m not in methods:
            print(f"\n{m}: not run (package {PEERS[m]!r} not installed)")


def main() -> None:
    args = _arguments()
    if args.dpmm_child:
        src, dst, m, e, dl, seed, sizes = args.dpmm_child
        dpmm_child(src, dst, m, float(e), float(dl), int(seed), sizes)
        return
    if args.one:
        d, m, e, r, dl = args.one
        print("RESULT " + json.dumps(one(d, m, float(e), int(r), float(dl))), flush=True)
        return

    from _machine import describe, machine
    print("machine:", describe(machine()), "| python", sys.executable, "| load average (1, 5, 15 min):",
          " ".join(f"{x:.2f}" for x in os.getloadavg()), flush=True)
    methods = _installed_methods(args.methods)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = _run_all(args, methods, out)
    _summary(args, methods, rows)


if __name__ == "__main__":
    main()
