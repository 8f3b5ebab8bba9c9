"""AIM's options against DP ipf on one corpus table: median S_pMSE over seeds 0-2 of each variant
(bench/RESULTS.md "AIM against DP ipf on a long table at high ε").

    python bench/accuracy/aim_options_probe.py TABLE EPSILON pure|zcdp SETS METHOD[:OPTIONS] ...
    python bench/accuracy/aim_options_probe.py movies 3 zcdp 1 aim ipf "aim:{'rounds': 104}" "aim:{'estimator': 'ipf'}"
    python bench/accuracy/aim_options_probe.py --final-iters 1000 gss_wages 3 zcdp 1 aim

``--final-iters N`` probes what is not an option: the final fit of AIM and MST under (ε, δ)
(``dpcore.estimate.accelerated_mirror_descent.AcceleratedMirrorDescent``, which stops on its loss) runs exactly
N iterations instead. The rounds' own refits keep theirs. Post-processing either way: the guarantee is unchanged.

OPTIONS is a Python dict literal of ``dpcore.synthesize`` options. Each release prints its seconds, its mean
two-way S_pMSE (scored as bench/accuracy/corpus_run.py scores) and the first set's diagnostics (rounds, cliques, model
cells). A probe, not a benchmark of speed: the seconds are one run each.
"""
from __future__ import annotations

import ast
import statistics
import sys
import time
from pathlib import Path

import pandas as pd

BENCH = Path(__file__).resolve().parents[1]  # bench/
ROOT = BENCH.parent
for p in (ROOT, BENCH / "tools", BENCH / "accuracy"):  # dpcore; corpus; corpus_run
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import corpus  # noqa: E402
from corpus_run import score  # noqa: E402

import dpcore  # noqa: E402

SEEDS = (0, 1, 2)


def _final_iters(n: int) -> None:
    """Make the final fit run exactly N iterations (its stop rule off; the rounds' refits are plain mirror descent)."""
    from dpcore.estimate import accelerated_mirror_descent as acc

    init = acc.AcceleratedMirrorDescent.__init__

    def patched(self, *args, **kwargs):
        kwargs.setdefault("iters", n)
        kwargs.setdefault("rel_tol", 0.0)
        init(self, *args, **kwargs)

    acc.AcceleratedMirrorDescent.__init__ = patched


def main(argv: list[str]) -> int:
    if argv[:1] == ["--final-iters"] and len(argv) > 1 and argv[1].isdigit():
        _final_iters(int(argv[1]))
        argv = argv[2:]
    if len(argv) < 5 or argv[2] not in ("pure", "zcdp"):
        raise SystemExit(__doc__.split("\n\n")[1])
    name, eps, definition, sets = argv[0], float(argv[1]), argv[2], int(argv[3])
    df, dom = corpus.load_table(name)
    orig = pd.DataFrame(dom.encode(df), columns=dom.names)
    print(f"{name}: {len(df):,} records, levels {dom.shape}; ε = {eps:g}, {definition}, m = {sets}")
    for spec in argv[4:]:
        method, _, text = spec.partition(":")
        opts = ast.literal_eval(text) if text else {}
        values = []
        for seed in SEEDS:
            t0 = time.perf_counter()
            rel = dpcore.synthesize(df, method=method, epsilon=eps, sets=sets, seed=seed, domain=dom,
                                    delta=1e-9 if definition == "zcdp" else None, **opts)
            spmse, _ = score(orig, rel.sets, dom)
            values.append(spmse)
            diag = (rel.diagnostics.get("per_set") or [{}])[0]
            brief = {k: (len(v) if isinstance(v, list) else v) for k, v in diag.items() if k != "warnings"}
            print(f"  {method} {opts} seed {seed}: {time.perf_counter() - t0:.1f} s, S_pMSE {spmse:.2f} {brief}",
                  flush=True)
        print(f"{method} {opts}: median S_pMSE {statistics.median(values):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
