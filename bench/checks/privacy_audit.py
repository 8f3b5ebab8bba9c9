"""The full empirical privacy audit: every method × neighbour notion × neighbouring pair.

    cd <repo> && PYTHONPATH=. .venv/bin/python bench/checks/privacy_audit.py [--runs N] [--epsilon E]
    # the same audit of an older checkout (whose synthesize has no `neighbours` option):
    cd OLD && PYTHONPATH=OLD .venv/bin/python <repo>/bench/checks/privacy_audit.py --legacy

Each case runs N releases (default 2000) on each table of a crafted pair
(tests/privacy/releases.py: D, D plus one record in an empty cell, D with one record
replaced) with a fixed seed schedule, and reports the largest Clopper–Pearson lower
bound on ε over a pre-declared family of events (set length and the changed cell's
count), 95% jointly (tests/privacy/audit.py). The claim is ε for pairs of the release's
own notion and 2ε for replace pairs under an add/remove release; under a replace
release an add/remove pair is outside the claim (n is public) and is shown for contrast.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository (bench/checks/ is two levels down)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--legacy", action="store_true", help="audit a checkout without the neighbours option")
    a = ap.parse_args()
    # legacy: the checkout under test comes first on the path, this repository only for the audit code
    sys.path.insert(len(sys.path) if a.legacy else 0, str(ROOT))
    import dpcore
    from tests.privacy import releases as R
    from tests.privacy.audit import epsilon_lower_bound, run_pair

    print(f"dpcore from {Path(dpcore.__file__).parent}; runs per table {a.runs}; ε = {a.epsilon:g}")
    print("| method | release notion | pair | claimed | runs per table | largest lower bound | event | time (s) |")
    print("|---|---|---|---|---|---|---|---|")
    notions = ["legacy"] if a.legacy else ["add_remove", "replace"]
    for label, method, options in R.METHODS:
        for notion in notions:
            for pair in ("add_remove", "replace"):
                if notion == "legacy":
                    def stat(table, seed, method=method, options=options):
                        rel = dpcore.synthesize(table, method, a.epsilon, seed=seed, domain=R.DOMAIN, **options)
                        s = rel.sets[0]
                        return len(s), int(((s["a"] == "y") & (s["b"] == "q")).sum())
                    claim = "1·ε as labelled (add/remove, n public)"
                else:
                    stat = R.statistics(method, options, notion, a.epsilon)
                    claim = ("ε" if pair == notion else "2ε" if notion == "add_remove" else "none (n public)")
                t = time.perf_counter()
                try:
                    x, y = run_pair(stat, *R.PAIRS[pair], a.runs, seed0=50_000)
                except Exception as exc:  # an old checkout may refuse an option
                    print(f"| {label} | {notion} | {pair} | {claim} | – | error: {type(exc).__name__} | | |")
                    continue
                r = epsilon_lower_bound(*R.events(x, y))
                print(f"| {label} | {notion} | {pair} | {claim} | {a.runs} | {r.epsilon_lower_bound:.3f} | {r.event} | "
                      f"{time.perf_counter() - t:.0f} |", flush=True)


if __name__ == "__main__":
    main()
