"""Fuzz family "tiny table on a wide domain" ([exact-sparse]): a handful of records (0 to 20)
over declared domains of 10^5 to 10^10 cells, through every registered method, both neighbour
notions and several seeds (tests/fuzz/hostile.py, TINY_WIDE).

Every case ends in a release or a one-line error: each set has exactly the released record
count of rows (0 is an ordinary outcome), the domain's columns, and only declared levels (or
NA where the domain allows it); the release is labelled DP and its manifest is valid JSON.
"""
from __future__ import annotations

import json

import pytest

from dpcore.synthesizers import REGISTRY
from tests.fuzz import hostile

TIME_BOUND_S = 30.0
#: the methods whose wide path is the sparse leaf layer get more seeds and a smaller ε
SPARSE = {"steps", "uh_random", "steps_lesda", "flat_laplace"}
CASES = [(name, method, notion, seed, eps)
         for name in sorted(hostile.TINY_WIDE) for method in sorted(REGISTRY)
         for notion in ("add_remove", "replace")
         for seed, eps in (((0, 1.0), (1, 0.3), (2, 1.0)) if method in SPARSE else ((0, 1.0),))]


@pytest.mark.parametrize("name,method,notion,seed,eps", CASES,
                         ids=[f"{n}-{m}-{nb}-s{s}-e{e}" for n, m, nb, s, e in CASES])
def test_tiny_tables_on_wide_domains_release_or_refuse_in_one_line(name, method, notion, seed, eps):
    df, dom = hostile.tiny_wide_table(name, seed)
    rel = hostile.release_or_one_line_error(df, TIME_BOUND_S, method=method, epsilon=eps, sets=2, seed=seed,
                                            domain=dom, neighbours=notion)
    if rel is None:
        return
    assert rel.dp, rel.dp_reason
    n_out = rel.record_count["value"]
    if notion == "replace":
        assert n_out == len(df)
    json.loads(rel.manifest_json())
    for s in rel.sets:
        assert len(s) == n_out
        assert list(s.columns) == [a.name for a in dom.attributes]
        for a in dom.attributes:
            allowed = set(a.levels)
            values = s[a.name]
            assert set(values.dropna()) <= allowed, (a.name, set(values.dropna()) - allowed)
            assert a.na or not values.isna().any(), a.name
