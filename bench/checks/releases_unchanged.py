"""Seeded releases before and after a change: same seed, same table, same bytes?

Runs every dpcore method (``dpcore.synthesize(df, method, epsilon, seed=..., domain=declared)``,
default options) on the bench tables under each definition of ``--definitions``: ``pure`` (``delta``
unset, pure ε-DP) and ``zcdp`` (``delta`` = ``--delta``, (ε, δ) through zCDP), once under this
checkout's ``dpcore`` and once under another checkout's (``--other ROOT``, e.g. a ``git archive``
of the commit before the change, unpacked anywhere), each in a child process with ``PYTHONPATH``
set to that root, and compares the SHA-256 of each synthetic set written as CSV, and the
ledger's JSON (every charge, its ε or ρ, sensitivity and scale). A method that raises is compared
by its error message. (Until 2026-12-07 this was ``pure_unchanged.py``, pure ε only.)

    git archive <commit> dpcore assets | (mkdir -p /tmp/before && tar -x -C /tmp/before)
    PYTHONPATH=. .venv/bin/python bench/checks/releases_unchanged.py --other /tmp/before --data s7 voter wide

Prints one line per (table, method) and a Markdown table; exits 1 if any release differs.
Benchmark on the public SD2011 extract and the CPS voter tables; nothing is released.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
ROOT = BENCH.parent


def releases(data: list[str], eps: float, seed: int, definitions: list[str] = ("pure",), delta: float = 1e-9) -> dict:
    """In this process (dpcore from PYTHONPATH): every method on every table, under every definition."""
    sys.path.insert(0, str(BENCH / "accuracy"))
    from peers import load_data

    import dpcore
    from dpcore.synthesizers import REGISTRY
    out = {}
    for name in data:
        df, dom = load_data(name)
        for method in REGISTRY:
            for definition in definitions:
                t0 = time.perf_counter()
                try:
                    rel = dpcore.synthesize(df, method=method, epsilon=eps, seed=seed, domain=dom,
                                            delta=None if definition == "pure" else delta)
                    sha = hashlib.sha256(rel.sets[0].to_csv(index=False).encode()).hexdigest()
                    ledger = json.dumps(rel.ledger.to_dict(), sort_keys=True, default=str)
                    res = {"sha256": sha, "epsilon": float(rel.ledger.epsilon),
                           "ledger": hashlib.sha256(ledger.encode()).hexdigest()}
                except Exception as e:  # an error is a result to compare
                    res = {"error": f"{type(e).__name__}: {e}"[:200]}
                res["seconds"] = round(time.perf_counter() - t0, 2)
                out[f"{name}/{method}" + ("" if definition == "pure" else f"/{definition}")] = res
    return out


def run(root: Path, data, eps, seed, definitions, delta) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root))
    child = [sys.executable, __file__, "--child", json.dumps([data, definitions, delta]), repr(eps), str(seed)]
    p = subprocess.run(child,
                       capture_output=True, text=True, env=env, cwd=str(root))
    line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
    if p.returncode != 0 or not line:
        raise SystemExit(f"{root}: " + (p.stderr.strip().splitlines() or ["no output"])[-1])
    return json.loads(line[-1][7:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--other", help="root of the other checkout (its dpcore/ and assets/)")
    ap.add_argument("--data", nargs="+", default=["s7", "voter", "wide"])
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=10)
    ap.add_argument("--definitions", nargs="+", default=["pure", "zcdp"], choices=["pure", "zcdp"])
    ap.add_argument("--delta", type=float, default=1e-9, help="δ of the zcdp releases")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        d, e, s = args.child
        data, definitions, delta = json.loads(d)
        print("RESULT " + json.dumps(releases(data, float(e), int(s), definitions, delta)), flush=True)
        return
    if not args.other:
        raise SystemExit("--other ROOT is required: the checkout to compare this one with")
    sys.path.insert(0, str(BENCH / "tools"))
    from _machine import describe, machine
    print("machine:", describe(machine()), "| load average:", " ".join(f"{x:.2f}" for x in os.getloadavg()), flush=True)
    here, there = (run(ROOT, args.data, args.eps, args.seed, args.definitions, args.delta),
                   run(Path(args.other).resolve(), args.data, args.eps, args.seed, args.definitions, args.delta))
    differ = 0
    print("| table / method | this checkout | other checkout | same |")
    print("|---|---|---|---|")
    for key in sorted(set(here) | set(there), key=lambda k: (k.split("/")[0], k)):
        a, b = here.get(key, {}), there.get(key, {})
        strip = lambda r: {k: v for k, v in r.items() if k != "seconds"}
        same = strip(a) == strip(b) and "sha256" in a  # an error on both sides is not a pass
        differ += not same
        show = lambda r: (r["sha256"][:12] + f", ε {r['epsilon']:.6g}" if "sha256" in r
                          else r.get("error", "absent")[:80])
        print(f"| {key} | {show(a)} | {show(b)} | {'yes' if same else '**NO**'} |")
    print(f"\n{len(set(here) | set(there)) - differ} same, {differ} different or failed")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
