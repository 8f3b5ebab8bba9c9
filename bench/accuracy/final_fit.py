"""AIM's final fit under (ε, δ) on one corpus table: the loss of plain and accelerated mirror descent by
iteration, on the same final margins, and the S_pMSE of the model at each checkpoint
(bench/RESULTS.md "AIM's final fit, accelerated").

    python bench/accuracy/final_fit.py TABLE EPSILON SEED [CHECKPOINTS]
    python bench/accuracy/final_fit.py gss_wages 3 2 100,300,1000,1500

One AIM release at (EPSILON, 10⁻⁹), m = 1, seed SEED captures the margins its final fit receives and the
last round's model. From that model, plain mirror descent (``MirrorDescent``, no stop) and the accelerated
method (``AcceleratedMirrorDescent``, no stop) each run to every checkpoint (default 100,300,1000); then
the accelerated method with its stop rule. Printed per fit: seconds, the loss at each checkpoint, and the
mean two-way S_pMSE of n records drawn i.i.d. from the model (seed 1000 + SEED; scored as
bench/accuracy/corpus_run.py scores). Reads raw data: NOT DP, a curator-side benchmark on public tables.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

BENCH = Path(__file__).resolve().parents[1]  # bench/
ROOT = BENCH.parent
for p in (ROOT, BENCH / "tools", BENCH / "accuracy"):  # dpcore; corpus; corpus_run
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import corpus  # noqa: E402
from corpus_run import score  # noqa: E402

import dpcore  # noqa: E402
from dpcore.estimate import final_fit  # noqa: E402
from dpcore.estimate.accelerated_mirror_descent import AcceleratedMirrorDescent  # noqa: E402
from dpcore.estimate.draws import model_draw  # noqa: E402
from dpcore.estimate.mirror_descent import MirrorDescent  # noqa: E402
from dpcore.synthesizers import aim  # noqa: E402

USAGE = "usage: python bench/accuracy/final_fit.py TABLE EPSILON SEED [CHECKPOINTS, e.g. 100,300,1000]"


def _captured(df, dom, eps: float, seed: int) -> dict:
    """The final fit's inputs of one AIM release (its own fit still runs; only its inputs are kept)."""
    seen: dict = {}

    def keep(estimator, shape, margins, total, model, info):
        seen.update(shape=shape, margins=margins, total=total, model=model)
        return final_fit.released_model(estimator, shape, margins, total, model, info)

    aim.released_model = keep
    try:
        dpcore.synthesize(df, method="aim", epsilon=eps, sets=1, seed=seed, domain=dom, delta=1e-9)
    finally:
        aim.released_model = final_fit.released_model
    return seen


def _spmse(model, total: float, dom, orig, seed: int) -> float:
    rng = np.random.default_rng(1000 + seed)
    draw = model_draw(model, int(total), "sample", rng)
    records = dom.decode(np.concatenate(list(draw.chunks(rng))), rng)
    return score(orig, [records], dom)[0]


def main(argv: list[str]) -> int:
    try:
        name, eps, seed = argv[0], float(argv[1]), int(argv[2])
        checks = sorted({int(c) for c in (argv[3] if len(argv) > 3 else "100,300,1000").split(",")})
    except (IndexError, ValueError):
        raise SystemExit(USAGE) from None
    if len(argv) > 4 or not checks or checks[0] < 1:
        raise SystemExit(USAGE)
    df, dom = corpus.load_table(name)
    orig = pd.DataFrame(dom.encode(df), columns=dom.names)
    cap = _captured(df, dom, eps, seed)
    shape, margins, total, start = cap["shape"], cap["margins"], cap["total"], cap["model"]
    cells = sum(np.asarray(m.values).size for m in margins)
    print(f"{name}: {len(df):,} records; (ε, δ) = ({eps:g}, 1e-9), m = 1, seed {seed}; {len(margins)} margins, "
          f"{cells:,} measured cells, model cells {start.tree.cells:,}", flush=True)
    fits = [("plain", lambda k: MirrorDescent(iters=k, tol=0.0, start_model=start)),
            ("accelerated", lambda k: AcceleratedMirrorDescent(iters=k, rel_tol=0.0, start_model=start))]
    for label, make in fits:
        for k in checks:  # each checkpoint its own run from the same start: deterministic, so the same path
            t0 = time.perf_counter()
            model, info = make(k).fit(shape, margins, total)
            print(f"  {label} {k} iterations: {time.perf_counter() - t0:.1f} s, loss {info['loss']:,.0f} "
                  f"(start {info['start_loss']:,.0f}), S_pMSE {_spmse(model, total, dom, orig, seed):.2f}", flush=True)
    t0 = time.perf_counter()
    model, info = AcceleratedMirrorDescent(start_model=start).fit(shape, margins, total)
    print(f"  accelerated with its stop rule: {info['iterations']} iterations, {time.perf_counter() - t0:.1f} s, "
          f"loss {info['loss']:,.0f}, S_pMSE {_spmse(model, total, dom, orig, seed):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
