"""A noisy record count of 0 is an ordinary outcome ([exact-sparse]).

Under add/remove neighbours the record count is released with noise and clamped at 0, so a
small table can get 0. Every registered method must then release empty sets: 0 rows, the
domain's columns, the dtypes a non-empty release of the same table has, written and
described like any other release. Checked on a small table (dense paths) and on a tiny table
over a wide domain (the sparse leaf layer of flat Laplace and STEPS, the wide paths of the
others), once by forcing the count to 0 and once, for the sparse methods, by the seeds that
give 0 on their own (17 binary attributes, 20 records, ε = 1: the case that crashed with
``IndexError`` in ``sparse_leaves.draw_items``).
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore import api
from dpcore.synthesizers import REGISTRY


def _small() -> tuple[pd.DataFrame, dpcore.Domain]:
    rng = np.random.default_rng(0)
    df = pd.DataFrame({c: rng.choice(list("xyz"), 30) for c in "pqr"})
    df["age"] = rng.integers(18, 90, 30).astype(float)
    return df, dpcore.infer_domain(df, numeric={"age": [18, 40, 65, 90]}).declared()


def _tiny_wide(n: int = 20, p: int = 17) -> tuple[pd.DataFrame, dpcore.Domain]:
    """n records over p binary attributes (2^p cells: 131,072 for p = 17, above SPARSE_ABOVE)."""
    rng = np.random.default_rng(1)
    df = pd.DataFrame({f"a{j:02d}": rng.choice(["0", "1"], n) for j in range(p)})
    from dpcore.data.domain import Attribute, Domain

    return df, Domain(tuple(Attribute(c, "categorical", levels=("0", "1")) for c in df)).declared()


TABLES = {"dense": _small, "sparse": _tiny_wide}


@pytest.fixture
def zero_count(monkeypatch):
    """The record count released (and charged) as usual, then reported as 0."""
    release = api.release_record_count

    def zero(*args, **kwargs):
        _, info = release(*args, **kwargs)
        return 0, dict(info, value=0)

    monkeypatch.setattr(api, "release_record_count", zero)


def _check_empty_like(rel, reference, tmp_path):
    assert rel.dp, rel.dp_reason
    assert len(rel.sets) == 2
    for s in rel.sets:
        assert len(s) == 0
        assert list(s.columns) == list(reference.columns)
        assert s.dtypes.astype(str).tolist() == reference.dtypes.astype(str).tolist()
    paths = rel.write(tmp_path / "out")
    assert (tmp_path / "out" / "synthetic_1.csv").read_text(encoding="utf-8").strip() == ",".join(reference.columns)
    manifest = json.loads(paths[-1].read_text(encoding="utf-8"))
    assert manifest["record_count"]["value"] == 0


@pytest.mark.parametrize("path", sorted(TABLES))
@pytest.mark.parametrize("method", sorted(REGISTRY))
def test_every_method_releases_empty_sets_for_a_noisy_count_of_zero(method, path, zero_count, monkeypatch, tmp_path):
    df, dom = TABLES[path]()
    rel = dpcore.synthesize(df, method=method, epsilon=1.0, sets=2, seed=5, domain=dom)
    monkeypatch.undo()
    reference = dpcore.synthesize(df, method=method, epsilon=1.0, seed=5, domain=dom).sets[0]
    assert len(reference) > 0  # the same release with the count drawn as usual has records
    _check_empty_like(rel, reference, tmp_path)


def _seeds_with_zero_count(df, dom, method, want=2, tries=200):
    """Seeds whose own noisy record count is 0 (about one in five for 20 records at ε = 1)."""
    found = []
    for seed in range(tries):
        rel = dpcore.synthesize(df, method=method, epsilon=1.0, sets=2, seed=seed, domain=dom)
        if rel.record_count["value"] == 0:
            found.append(rel)
            if len(found) == want:
                break
    return found


@pytest.mark.parametrize("method", ["steps", "flat_laplace"])
def test_the_reported_case_releases_empty_sets_without_patching(method, tmp_path):
    """17 binary attributes, 20 records, ε = 1: the seeds that draw a count of 0 release empty
    sets on the sparse path instead of raising IndexError."""
    df, dom = _tiny_wide()
    assert dom.size > dpcore.synthesizers.sparse_leaves.SPARSE_ABOVE
    found = _seeds_with_zero_count(df, dom, method)
    assert len(found) == 2
    reference = dpcore.synthesize(df, method=method, epsilon=1.0, seed=1000, domain=dom, neighbours="replace").sets[0]
    for i, rel in enumerate(found):
        _check_empty_like(rel, reference, tmp_path / str(i))


def test_draw_items_with_no_records_returns_nothing():
    from dpcore.synthesizers.sparse_leaves import draw_items

    for mode in ("sample", "round"):
        item, slot, count = draw_items(np.array([2.0, 0.5]), np.array([1, 10**12]), 0, mode, np.random.default_rng(0))
        assert item.size == slot.size == count.size == 0
