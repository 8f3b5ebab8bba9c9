"""Every method reads the count table: records in, or their CountTable in, the same release.

Each method's ``run_set`` is called twice with the same generator: once with the records
(n, p) (counted by plain ``bincount``) and once with their :class:`CountTable` (the
non-empty cells weighted by their counts, :mod:`dpcore.counting.rows`). The codes, the
diagnostics and the ledger must be identical. The tables are small but reach every
counting path: dense and sparse leaf layers (STEPS), dense and sparse full tables
(flat Laplace), the dense, junction-tree and record fits (ipf), AIM and MST, under both
neighbour notions.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpcore.api import synthesize_codes
from dpcore.counting.count_table import CountTable
from dpcore.counting.rows import margin_counts
from dpcore.data.inference import infer_domain
from dpcore.estimate.draws import records
from dpcore.privacy.budget import Epsilon
from dpcore.privacy.definitions import ReleaseContext
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.neighbours import Neighbours
from dpcore.synthesizers import REGISTRY, SetRequest


def _table(n: int, p: int, seed: int) -> pd.DataFrame:
    """Correlated categorical columns of 2 to 5 levels, a few missing values (a level)."""
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 3, n)
    cols = {}
    for j in range(p):
        k = 2 + j % 4
        cols[f"a{j}"] = [f"l{v}" for v in (z + rng.integers(0, k, n) * (rng.random(n) < 0.3)) % k]
    df = pd.DataFrame(cols)
    df.loc[rng.random(n) < 0.05, "a1"] = None
    return df


SMALL = _table(500, 5, 1)    # 2·(3+NA)·4·5·2 = 320 cells: dense paths
WIDE = _table(700, 14, 2)    # ~10^7 cells: sparse leaves, sparse flat table, record fit

CASES = [
    ("small", "steps", {}), ("small", "steps", {"utility": "l1_uniform", "layers": 3}),
    ("small", "steps_lesda", {}), ("small", "uh_random", {}), ("small", "steps", {"select": "nonprivate"}),
    ("wide", "steps", {}),
    ("small", "flat_laplace", {}), ("wide", "flat_laplace", {}),
    ("small", "ipf", {}), ("small", "ipf", {"fit": "junction_tree", "margins": "a0,a1;a1,a2;a2,a3;a3,a4"}),
    ("wide", "ipf", {}),  # all two-way margins of 14 attributes: the record fit
    ("small", "aim", {}), ("wide", "aim", {"rounds": 14}),
    ("small", "mst", {}), ("wide", "mst", {}),
]


def _ledger_rows(ledger: Ledger) -> list:
    return ledger.to_dict()


@pytest.mark.parametrize("data, method, options", CASES, ids=[f"{d}-{m}-{i}" for i, (d, m, _) in enumerate(CASES)])
@pytest.mark.parametrize("notion", ["add_remove", "replace"])
def test_count_table_input_gives_the_records_release(data, method, options, notion):
    df = SMALL if data == "small" else WIDE
    dom = infer_domain(df).declared()
    X = dom.encode(df)
    table = CountTable.from_codes(X, dom.shape)
    assert table.nonempty < len(X)  # the cells really are fewer than the records
    spec = REGISTRY[method]
    assert spec.reads_counts
    opts = spec.resolve(dom, method, **options)
    plan = spec.plan(opts, dom, Epsilon(1.0), 1)
    ctx = ReleaseContext(Neighbours(notion), 480)
    out = []
    for source in (X, table):
        ledger = Ledger("release")
        rng = np.random.default_rng(3)
        result = spec.run_set(SetRequest(source, dom, opts, plan, Epsilon(1.0), rng, ledger, "set 1", ctx))
        draw, diag = result.draw, result.diagnostics
        out.append((records(draw, rng, len(dom)), diag, _ledger_rows(ledger)))
    (ca, da, la), (cb, db, lb) = out
    np.testing.assert_array_equal(ca, cb)
    assert da == db
    assert la == lb
    assert len(ca) == 480


def test_margins_from_cells_equal_margins_from_records():
    dom = infer_domain(WIDE).declared()
    X = dom.encode(WIDE)
    table = CountTable.from_codes(X, dom.shape)
    for axes in [(0,), (3, 1), (2, 5, 7), ()]:
        a, b = margin_counts(X, dom.shape, axes), margin_counts(table, dom.shape, axes)
        assert a.dtype == b.dtype == np.int64 and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    assert int(margin_counts(table, dom.shape, ())) == len(X)


@pytest.mark.parametrize("method", sorted(REGISTRY))
def test_engine_path_never_rebuilds_the_records(method, monkeypatch):
    """Handed a count table (as the DuckDB and Spark engines hand it), no method expands it."""
    dom = infer_domain(SMALL).declared()
    table = CountTable.from_codes(dom.encode(SMALL), dom.shape)

    def refuse(self):
        raise AssertionError("the count table was expanded into records")

    monkeypatch.setattr(CountTable, "records", refuse)
    rel, sets, _ = synthesize_codes(lambda d: table, dom, method, 1.0, seed=4)
    ref, ref_sets, _ = synthesize_codes(lambda d: dom.encode(SMALL), dom, method, 1.0, seed=4)
    # the same manifest but for its summary, which holds each release's creation time
    assert {k: v for k, v in rel.manifest().items() if k != "summary"} == \
        {k: v for k, v in ref.manifest().items() if k != "summary"}
    np.testing.assert_array_equal(sets[0], ref_sets[0])
