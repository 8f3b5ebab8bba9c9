"""[studio-polish] 6: a design whose noise check is red says what would pass, or plainly why nothing
near it does (dpcore.studio.noise_check; public facts and n only)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.studio.noise_check import passes, what_passes


def _domain(levels: list[int]) -> dpcore.Domain:
    rng = np.random.default_rng(0)
    df = pd.DataFrame({f"a{i}": rng.choice([f"v{j}" for j in range(k)], 50) for i, k in enumerate(levels)})
    for i, k in enumerate(levels):  # every level present, so the inferred domain has k levels
        df.loc[: k - 1, f"a{i}"] = [f"v{j}" for j in range(k)]
    return dpcore.infer_domain(df).declared()


def test_fewer_sets_are_suggested_when_they_pass():
    dom = _domain([4, 4, 5])  # 80 cells
    n = 200
    assert not passes(dpcore.expected_noise("flat_laplace", dom, 1.0, n=n, sets=5))
    assert passes(dpcore.expected_noise("flat_laplace", dom, 1.0, n=n, sets=1))
    assert what_passes("flat_laplace", dom, 1.0, 5, n=n) == "The check passes with m = 1 set instead of 5."


def test_a_larger_epsilon_is_suggested_when_fewer_sets_are_not_enough():
    dom = _domain([4, 4, 5])
    n = 100
    text = what_passes("flat_laplace", dom, 1.0, 1, n=n)
    assert text.startswith("The check passes with ε = ") and "instead of 1" in text
    eps = float(text.split("ε = ")[1].split(" ")[0])
    assert passes(dpcore.expected_noise("flat_laplace", dom, eps, n=n, sets=1))
    assert not passes(dpcore.expected_noise("flat_laplace", dom, 1.0, n=n, sets=1))


def test_no_design_near_passes_says_why():
    dom = _domain([6, 6, 6, 6, 6, 6])  # 46,656 cells for 40 records
    text = what_passes("flat_laplace", dom, 1.0, 5, n=40)
    assert text.startswith("No design near this one passes") and "46,656 cells" in text


@pytest.mark.parametrize("method", ["aim", "mst", "ipf"])
def test_the_default_design_on_a_small_categorical_table_either_passes_or_says_what_would(method):
    dom = _domain([2, 3, 4, 2])
    rows = dpcore.expected_noise(method, dom, 1.0, n=1300, sets=5)
    if not passes(rows):
        assert what_passes(method, dom, 1.0, 5, n=1300).startswith(("The check passes with", "No design near"))
