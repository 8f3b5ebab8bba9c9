"""Run every registered method (and the peers) over the [real-tables] corpus; one CSV row per run, rerunnable.

    cd <repo> && nice -n 10 .venv/bin/python bench/accuracy/corpus_run.py [--tables wages1 ...] [--methods aim mst ...]
        [--definitions pure zcdp] [--eps 1] [--sets 1] [--seeds 0 1 2 3 4] [--timeout 120] [--delta 1e-9]
        [--out bench/data/corpus_results.csv]

Methods: every name of ``dpcore.synthesizers.REGISTRY`` (default: all of them), released with
``dpcore.synthesize(df, method, epsilon, sets=m, seed=seed, domain=declared, delta=None | δ)`` under pure ε
(``definition = pure``) and under (ε, δ) through zCDP (``zcdp``). The peers (bench/data/corpus_peers.csv, run with
``--methods dpmm_aim dpmm_mst`` and, from smartnoise's venv, ``smartnoise_aim smartnoise_mst``; see
bench/accuracy/peers.py and bench/requirements-*.txt) get the table as tokens of its declared domain's codes and learn
nothing else: every code of the declared domain is a category, so they spend nothing on preprocessing; they are
(ε, δ)-DP and account in zCDP, so their rows say ``zcdp``.

Each run is a forked child of this process (the table and the imports are loaded once, before the fork), in a
process group of its own; past ``--timeout`` seconds the group is killed (dpmm's interpreter included) and the
run is recorded as ``timeout``, and the later seeds of the same (table, method, definition, ε, m) as ``skipped``.
A run the method refuses (a dpcore error: too many cells, an option it cannot take) is ``cannot_run``, a crash
``error``. Per run:

- ``spmse``: mean two-way S_pMSE over all pairs of attributes and the m sets (``utility_tables(...).mean_s_pmse``,
  as in bench/RESULTS.md), computed on the declared domain's codes, so a numeric column is compared bin by bin;
- ``ru_pct``: replicated uniques, % of the original records (``disclosure(...).ru``, mean over the sets), on codes;
- ``seconds``: wall time of the release call (fit + m sets + decoding; dpmm: its own fit + generate);
- ``peak_mb``: the child's peak resident memory (VmHWM) right after the release, before scoring, and ``base_mb``
  its resident memory when it starts: a forked child counts only the pages it touches, so ``peak_mb`` covers the
  release and the parts of the parent (imports, the table) that it reads; ``peak_mb - base_mb`` is at least what
  the release added. For dpmm, ``peak_mb`` is its own interpreter's peak.

Both measures read the raw table: curator-side, NOT DP. Nothing is released.
"""
from __future__ import annotations

import os

# one thread per process: the runs share a 2-core machine, and a BLAS thread pool does not survive os.fork
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import csv  # noqa: E402
import datetime as dt  # noqa: E402
import json  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent
sys.path.insert(0, str(HERE))  # peers
sys.path.insert(0, str(BENCH / "tools"))  # corpus
sys.path.insert(0, str(BENCH.parent))  # the repository root, for dpcore

FIELDS = ["table", "method", "definition", "epsilon", "delta", "sets", "seed", "spmse", "ru_pct", "seconds",
          "peak_mb", "base_mb", "status", "message", "load1", "dpcore_commit", "date"]
#: the columns that name a run: a row with the same ones is not run again
KEY = ("table", "method", "definition", "epsilon", "sets", "seed")
RESULTS = BENCH / "data" / "corpus_results.csv"
PEERS_RESULTS = BENCH / "data" / "corpus_peers.csv"
#: peer label -> (bench/accuracy/peers.py's label, how it runs)
PEERS = {"dpmm_aim": ("dpmm_aim", "dpmm"), "dpmm_mst": ("dpmm_mst", "dpmm"),
         "smartnoise_aim": ("aim", "smartnoise"), "smartnoise_mst": ("mst", "smartnoise")}


def git_commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE)
    return out.stdout.strip() or "unknown"


def rss_mb(field: str = "VmHWM") -> float:
    """This process's resident memory from /proc (VmRSS now, VmHWM its peak), in MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def release_sets(df, dom, method: str, definition: str, eps: float, delta: float, m: int, seed: int):
    """(the m synthetic sets, seconds) of one release: dpcore's method or a peer."""
    if method in PEERS:
        return peer_sets(df, dom, method, eps, delta, m, seed)
    import dpcore
    t0 = time.perf_counter()
    rel = dpcore.synthesize(df, method=method, epsilon=eps, sets=m, seed=seed, domain=dom,
                            delta=delta if definition == "zcdp" else None)
    return rel.sets, time.perf_counter() - t0


def peer_sets(df, dom, method: str, eps: float, delta: float, m: int, seed: int):
    """A peer's m sets, each fitted at the whole ε (the peers release one set per fit); seconds summed."""
    import numpy as np
    import peers
    label, kind = PEERS[method]
    tok, _ = peers.tokens(df, dom)
    sets, secs = [], 0.0
    for i in range(m):
        if kind == "dpmm":
            out, s, peak = peers.run_dpmm(label, tok, dom.shape, eps, delta, seed + 1000 * i)
            os.environ["CORPUS_PEER_PEAK_MB"] = str(max(peak, float(os.environ.get("CORPUS_PEER_PEAK_MB", 0))))
        else:
            t0 = time.perf_counter()
            out = peers.run_peer(label, tok, eps, seed + 1000 * i, delta)
            s = time.perf_counter() - t0
        sets.append(peers.untoken(out, dom, np.random.default_rng(seed + 1000 * i)))
        secs += s
    return sets, secs


def score(orig_codes, syn_sets, dom) -> tuple[float, float]:
    """(mean two-way S_pMSE, %ru) of the sets against the original, on the declared domain's codes."""
    import pandas as pd

    from dpcore.metrics import disclosure, utility_tables
    syn_codes = [pd.DataFrame(dom.encode(s), columns=dom.names) for s in syn_sets]
    return (float(utility_tables(orig_codes, syn_codes).mean_s_pmse),
            float(disclosure(orig_codes, syn_codes).ru))


def child_run(df, dom, orig_codes, run: dict) -> dict:
    """Runs inside the forked child: release, peak memory, then the scores."""
    from dpcore.errors import DPCoreError
    base = rss_mb("VmRSS")
    try:
        sets, secs = release_sets(df, dom, run["method"], run["definition"], run["epsilon"], run["delta"],
                                  run["sets"], run["seed"])
        peak = float(os.environ.get("CORPUS_PEER_PEAK_MB", 0)) or rss_mb("VmHWM")
        spmse, ru = score(orig_codes, sets, dom)
        return {"status": "ok", "seconds": round(secs, 3), "peak_mb": round(peak, 1), "base_mb": round(base, 1),
                "spmse": spmse, "ru_pct": ru}
    except DPCoreError as exc:
        return {"status": "cannot_run", "message": str(exc).splitlines()[0][:300]}
    except Exception as exc:  # a crash is a result too: record it and go on
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return {"status": "error", "message": last[:300]}


def fork_call(fn, timeout: float, children: set | None = None) -> dict:
    """``fn()`` (returning a JSON-able dict) in a forked child in a process group of its own; past ``timeout``
    seconds the group is killed and ``{"status": "timeout"}`` returned. ``children`` (if given) holds the pid while
    it runs, so a SIGTERM handler can kill the group (bench/accuracy/corpus_numeric.py's)."""
    children = set() if children is None else children
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(r)
        os.setpgrp()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        try:
            res = fn()
        except BaseException as exc:  # never return into the parent's loop
            res = {"status": "error", "message": repr(exc)[:300]}
        os.write(w, json.dumps(res).encode())
        os.close(w)
        os._exit(0)
    os.close(w)
    children.add(pid)
    deadline, chunks, timed_out = time.monotonic() + timeout, [], False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([r], [], [], min(left, 5.0))
        if ready:
            chunk = os.read(r, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    if timed_out:
        for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
            try:
                target()
            except ProcessLookupError:
                pass
    os.close(r)
    _, status, _ = os.wait4(pid, 0)
    children.discard(pid)
    if timed_out:
        return {"status": "timeout", "message": f"over the {timeout:g} s cap"}
    try:
        return json.loads(b"".join(chunks).decode())
    except ValueError:
        return {"status": "error", "message": f"the child died (wait status {status}) without a result"}


def fork_run(df, dom, orig_codes, run: dict, timeout: float) -> dict:
    """One run in a forked child in its own process group; killed past ``timeout`` seconds."""
    return fork_call(lambda: child_run(df, dom, orig_codes, run), timeout)


def recorded(path: Path, key: tuple = KEY) -> tuple[set[tuple], set[tuple]]:
    """The keys (columns ``key``, the seed last) of the runs already in a results file, and the settings (the
    key without its seed) of which a seed went over the cap there (their other seeds are skipped, not run).
    Also bench/accuracy/corpus_numeric.py's, with its own key."""
    if not path.exists():
        return set(), set()
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return ({tuple(str(row[k]) for k in key) for row in rows},
            {tuple(str(row[k]) for k in key[:-1]) for row in rows if row["status"] == "timeout"})


def key_of(run: dict) -> tuple:
    return tuple(str(run[k]) for k in KEY)


def append_row(path: Path, row: dict, fields: list | tuple = FIELDS) -> None:
    """One row appended to a results CSV (its header first, if the file is new); missing fields are empty."""
    new = not path.exists()
    with path.open("a", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(fields))
        if new:
            w.writeheader()
        w.writerow({k: row.get(k, "") for k in fields})


def plan(args, table: str) -> list[dict]:
    """The runs of one table, seeds innermost (so a timeout can skip the later seeds)."""
    runs = []
    for eps in args.eps:
        for m in args.sets:
            for method in args.methods:
                defs = ["zcdp"] if method in PEERS else args.definitions
                for d in defs:
                    for seed in args.seeds:
                        runs.append({"table": table, "method": method, "definition": d, "epsilon": eps,
                                     "delta": args.delta if d == "zcdp" else "", "sets": m, "seed": seed})
    return runs


def run_table(args, table: str, out: Path, done: set, commit: str, over_cap: set) -> None:
    import pandas as pd
    from corpus import load_table
    runs = [r for r in plan(args, table) if key_of(r) not in done]
    if not runs:
        return
    df, dom = load_table(table)
    orig_codes = pd.DataFrame(dom.encode(df), columns=dom.names)
    timed_out = {c for c in over_cap if c[0] == table}
    for run in runs:
        cell = key_of(run)[:-1]
        load1 = round(os.getloadavg()[0], 2)
        if cell in timed_out:
            res = {"status": "skipped", "message": f"not run: an earlier seed went over the {args.timeout:g} s cap"}
        else:
            res = fork_run(df, dom, orig_codes, run, args.timeout)
            if res["status"] == "timeout":
                timed_out.add(cell)
        row = {**run, **res, "load1": load1, "dpcore_commit": commit,
               "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
        append_row(out, row)
        print(f"{table} {run['method']} {run['definition']} ε={run['epsilon']:g} m={run['sets']} seed {run['seed']}: "
              f"{res['status']} {res.get('seconds', '')} s S_pMSE {res.get('spmse', '')} "
              f"{res.get('message', '')}", flush=True)


def warm_up(methods) -> None:
    """Import everything a run uses, once, before the forks (a child would otherwise import it on every run):
    one tiny release per dpcore method and definition on a made-up 40-record table, scored."""
    import numpy as np
    import pandas as pd
    import peers  # noqa: F401

    import dpcore
    rng = np.random.default_rng(0)
    toy = pd.DataFrame({"a": rng.choice(["x", "y"], 40), "b": rng.choice(["u", "v", "w"], 40),
                        "c": rng.choice(["p", "q"], 40)})
    dom = dpcore.infer_domain(toy).declared()
    codes = pd.DataFrame(dom.encode(toy), columns=dom.names)
    for method in methods:
        if method in PEERS:
            continue
        for definition in ("pure", "zcdp"):
            sets, _ = release_sets(toy, dom, method, definition, 1.0, 1e-9, 1, 0)
            score(codes, sets, dom)


def main() -> None:
    from corpus import corpus_specs

    from dpcore.synthesizers import REGISTRY
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", nargs="+", help="corpus names (default: all, in bench/data/corpus.toml's order)")
    ap.add_argument("--methods", nargs="+", default=list(REGISTRY),
                    help=f"dpcore methods ({', '.join(REGISTRY)}) or peers ({', '.join(PEERS)})")
    ap.add_argument("--definitions", nargs="+", default=["pure", "zcdp"], choices=["pure", "zcdp"])
    ap.add_argument("--eps", nargs="+", type=float, default=[1.0])
    ap.add_argument("--sets", nargs="+", type=int, default=[1])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    ap.add_argument("--delta", type=float, default=1e-9, help="δ of the zcdp runs and the peers (default 1e-9)")
    ap.add_argument("--timeout", type=float, default=120.0, help="wall-clock cap per run, seconds")
    ap.add_argument("--out", help="results CSV (default bench/data/corpus_results.csv; bench/data/corpus_peers.csv "
                                  "when every method is a peer)")
    args = ap.parse_args()
    unknown = [m for m in args.methods if m not in REGISTRY and m not in PEERS]
    if unknown:
        raise SystemExit(f"unknown method(s) {', '.join(unknown)}; use {', '.join([*REGISTRY, *PEERS])}")
    specs = corpus_specs()
    tables = args.tables or list(specs)
    missing = [t for t in tables if t not in specs]
    if missing:
        raise SystemExit(f"no table(s) {', '.join(missing)} in bench/data/corpus.toml")
    out = Path(args.out) if args.out else (PEERS_RESULTS if all(m in PEERS for m in args.methods) else RESULTS)
    (done, over_cap), commit = recorded(out), git_commit()
    warm_up(args.methods)
    for table in tables:
        run_table(args, table, out, done, commit, over_cap)


if __name__ == "__main__":
    main()
