"""ipf on a long output ([scale-out] item 4): the record fit's weighted support against the old
repetition of 10^5 fitted records and against the dense fit.

On the 15-attribute table of ``bench/speed/engines.py`` (2.5·10^6 cells; ``fit="auto"`` picks the record
fit for its 105 two-way margins), at ε = 1 (ε_s = 0.95 for the margins, as a release with the
default count share spends), one seed: the noisy margins are measured once (as
``dpcore.synthesizers.ipf.noisy_margins`` does) and fitted three ways, each giving a set of n
records:

* ``repeat``: the record fit of 10^5 records, each repeated n/10^5 times (what ipf did before);
* ``weighted``: the record fit of 10^5 records, their cells weighted by IPF on that support, n
  records drawn from the weights (what ipf does now, ``RecordFit`` above its cap);
* ``dense``: the dense IPF of the full table (synthpop's fit, margins clipped), stopped at 30
  sweeps, n records drawn from it (multinomial).

Reported: seconds, the mean total-variation distance of the 105 two-way margins of each set to
the TRUE margins (curator-side) and to the dense set's, and the number of distinct records.

Usage: ``PYTHONPATH=. .venv/bin/python bench/speed/ipf_long.py [--data-dir DIR] [--size 1e7]``.
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # the repository, for dpcore
sys.path.insert(0, str(HERE))  # engines


def main() -> None:
    import engines as E

    from dpcore.counting.engines import count_table
    from dpcore.counting.rows import margin_counts
    from dpcore.estimate.denoise import shrink_margins
    from dpcore.estimate.dense_ipf import DenseIPF
    from dpcore.estimate.draws import CellDraw
    from dpcore.estimate.record_fit import RecordFit, fit_records
    from dpcore.privacy.definitions import ReleaseContext
    from dpcore.privacy.ledger import Ledger
    from dpcore.privacy.neighbours import Neighbours
    from dpcore.synthesizers import ipf

    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", default=str(HERE.parent / "out"))
    ap.add_argument("--size", default="1e7")
    args = ap.parse_args()
    E.DATA = Path(args.data_dir)
    dom = E.domain()
    shape = dom.shape
    t = time.perf_counter()
    table = count_table(E.data_file(args.size), dom, engine="duckdb", memory_limit="512MB")
    n = table.n
    print(f"counted {n:,} records, {table.nonempty:,} non-empty cells in {time.perf_counter() - t:.1f} s", flush=True)
    opts = ipf.resolve(dom)
    assert ipf.choose_fit(dom, opts) == "records"
    pairs = list(itertools.combinations(range(len(shape)), 2))
    truth = {p: margin_counts(table, shape, p).astype(float) for p in pairs}
    ctx = ReleaseContext(Neighbours("add_remove"), n)
    eps = 0.95
    share = ipf.one_way_share(dom, opts, eps, ctx.neighbours, float(n), "records")
    rng = np.random.default_rng(0)
    raw = ipf.noisy_margins(table, dom, opts, eps, rng, Ledger("bench"), ctx, positivity=False, share=share)
    clipped = [m.with_values(np.clip(m.values, 0, None)) for m in raw]

    def tv(a: dict, b: dict) -> float:
        return float(np.mean([np.abs(a[p] / a[p].sum() - b[p] / b[p].sum()).sum() / 2 for p in pairs]))

    out = {}
    # repeat: the old capped fit
    t = time.perf_counter()
    targets, _ = shrink_margins([m.values for m in raw], [m.axes for m in raw], shape, [m.variance for m in raw],
                                float(n))
    fitted, _ = fit_records(targets, [m.axes for m in raw], shape, 100_000, np.random.default_rng(1))
    q, rest = divmod(n, 100_000)
    counts = np.bincount(np.ravel_multi_index(fitted.T, shape), minlength=0)
    keys = np.flatnonzero(counts)
    rep_cells = CellDraw(np.array(np.unravel_index(keys, shape)).T.astype(np.uint8), counts[keys] * q)
    out["repeat"] = {"seconds": time.perf_counter() - t, "note": f"{q} copies of each (n mod 10^5 = {rest} left out)"}
    sets = {"repeat": rep_cells}
    # weighted: ipf now
    t = time.perf_counter()
    model, info = RecordFit(np.random.default_rng(1), records=n, shrink=True).fit(shape, raw, float(n))
    sets["weighted"] = model.draw(n, np.random.default_rng(2))
    out["weighted"] = {"seconds": time.perf_counter() - t, "support": info["support"],
                       "support_sweeps": info["support_sweeps"], "support_distance": info["support_distance"]}
    # dense: 30 sweeps of synthpop's IPF on the clipped margins
    t = time.perf_counter()
    dense, dinfo = DenseIPF(max_iter=30).fit(shape, clipped, float(n))
    sets["dense"] = dense.draw(n, np.random.default_rng(3))
    out["dense"] = {"seconds": time.perf_counter() - t, "iterations": dinfo["iterations"]}
    margins = {}
    for k, d in sets.items():
        codes = d.codes.astype(np.int64)
        margins[k] = {p: np.bincount(np.ravel_multi_index((codes[:, p[0]], codes[:, p[1]]), (shape[p[0]], shape[p[1]])),
                                     weights=d.counts, minlength=shape[p[0]] * shape[p[1]]) for p in pairs}
        out[k].update(tv_to_truth=tv(margins[k], {p: v.ravel() for p, v in truth.items()}),
                      distinct_records=int(len(d.counts)), records=int(d.counts.sum()))
    for k in sets:
        out[k]["tv_to_dense"] = tv(margins[k], margins["dense"])
    print(json.dumps(out, indent=1, default=float))


if __name__ == "__main__":
    main()
