"""[privacy-audit] item 1, for every registered method (the registry is iterated, so a
method added later is checked too): under add/remove the exact record count appears
nowhere in what is published and every set has the noisy count; under replace n is
public and said to be. The DP statement names the notion in both cases."""
import json
import re

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.synthesizers import REGISTRY

N = 1237  # a count no other number of the release is likely to equal


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(5)
    return pd.DataFrame({"a": rng.integers(0, 3, N), "b": rng.integers(0, 2, N),
                         "c": [f"x{v}" for v in rng.integers(0, 4, N)]})


def _numbers(text: str) -> set[int]:
    return {int(x) for x in re.findall(r"(?<![\d.eE+-])\d+(?![\d.eE])", text)}


@pytest.mark.parametrize("method", sorted(REGISTRY))
def test_add_remove_publishes_no_exact_record_count(table, method):
    dom = dpcore.infer_domain(table).declared()
    rel = dpcore.synthesize(table, method, 1.0, sets=2, seed=2, domain=dom)
    noisy = rel.record_count["value"]
    assert rel.record_count["noisy"] and noisy != N  # seed 2 draws a count other than n
    assert all(len(s) == noisy for s in rel.sets)
    published = json.dumps(rel.manifest())
    assert N not in _numbers(published), "the manifest holds the exact record count"
    assert rel.neighbours.notion == "add_remove" and "adding or removing one record" in rel.dp_reason
    assert "not exactly" in rel.dp_reason


@pytest.mark.parametrize("method", sorted(REGISTRY))
def test_replace_states_that_n_is_public(table, method):
    dom = dpcore.infer_domain(table).declared()
    rel = dpcore.synthesize(table, method, 1.0, sets=2, seed=2, domain=dom, neighbours="replace")
    assert not rel.record_count["noisy"] and all(len(s) == N for s in rel.sets)
    assert "replacing one record" in rel.dp_reason and "public record count" in rel.dp_reason
    assert all(c.neighbours == rel.neighbours.label for _, c in rel.ledger.charges())


def test_the_number_reader_finds_the_count():
    assert N in _numbers('{"value": 1237, "x": 0.5}') and N not in _numbers('{"v": 12370, "w": 1.1237}')
