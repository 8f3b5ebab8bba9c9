"""Domain inference from raw data in memory (dpcore.data.inference): the facts of a column and
the names that moved out of dpcore.data.domain. The rule itself is tested with the in-memory and
engine paths side by side in tests/counting/test_column_facts.py; its refusals in test_domain.py."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.data import domain, inference
from dpcore.data.inference import Limits, series_facts


def test_the_moved_names_stay_importable_from_the_domain_module():
    from dpcore.data.domain import DEFAULT_MAX_INT_LEVELS, DEFAULT_MAX_LEVELS, data_range_attribute, infer_domain

    assert infer_domain is inference.infer_domain is dpcore.infer_domain
    assert data_range_attribute is inference.data_range_attribute
    assert (DEFAULT_MAX_LEVELS, DEFAULT_MAX_INT_LEVELS) == (inference.DEFAULT_MAX_LEVELS,
                                                            inference.DEFAULT_MAX_INT_LEVELS)
    assert set(domain.MOVED_TO_INFERENCE) <= set(vars(inference))
    try:
        domain.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("an unknown name must raise AttributeError")


@pytest.mark.filterwarnings("ignore:Casting complex values to real")  # level keys of complex numbers, as before
def test_series_facts_of_columns_only_memory_holds():
    """DataFrames given in code hold what no file does: integer column names, complex numbers
    (no order: no min or max), nullable booleans; the facts keep each as the old inference read it."""
    limits = Limits()
    c = series_facts(pd.Series([1 + 2j, 3 + 0j, 1 + 2j]), 0, limits, False)
    assert c.name == 0 and c.numeric and c.low is None and c.high is None and c.levels == ("(1+2j)", "(3+0j)")
    b = series_facts(pd.Series(pd.array([True, None, False], dtype="boolean")), "b", limits, False)
    assert not b.numeric and (b.n_present, b.n_missing) == (2, 1) and b.levels == (False, True)
    x = series_facts(pd.Series([1.5, np.nan, np.inf]), "x", limits, False)
    assert (x.n_infinite, x.n_distinct, x.levels) == (1, None, None)  # refused before its levels are read
    many = series_facts(pd.Series(np.arange(300.0)), "many", limits, False)
    assert many.n_distinct == 300 and many.levels is None and not many.distinct_capped
    assert dpcore.infer_domain(pd.DataFrame({0: [1.5, 2.5] * 20, 1: ["a", "b"] * 20})).names == ["0", "1"]
