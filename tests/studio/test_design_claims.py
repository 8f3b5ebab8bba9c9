"""[studio-truth] item 3: the Data page's warnings say what the code does. Each claim of
dpcore.studio.design.cells_note is run: above 2·10⁷ cells STEPS and flat Laplace release (sparse leaves), and
only above 2^62 cells do they refuse, as the warning then says."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.errors import ResourceError
from dpcore.studio.design import cells_note


def _table(columns: int, levels: int, n: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({f"c{j}": rng.integers(0, levels, n).astype(str) for j in range(columns)})


def _released(df: pd.DataFrame, method: str, **opts) -> bool:
    dom = dpcore.infer_domain(df).declared()
    try:
        dpcore.synthesize(df, method, 1.0, seed=0, domain=dom, **opts)
    except ResourceError:
        return False
    return True


def test_above_the_old_limit_the_page_says_sparse_and_both_methods_release():
    df = _table(5, 40)  # 40^5 ≈ 1.0e8 cells: the old warning said both "will refuse"
    dom = dpcore.infer_domain(df)
    kind, text = cells_note(dom.size, len(df))
    assert dom.size > 2 * 10**7 and kind == "info" and "refuse" not in text and "non-empty" in text
    assert _released(df, "flat_laplace") and _released(df, "steps", layers=1)


@pytest.mark.slow
def test_above_two_to_the_62_the_page_says_they_refuse_and_they_do():
    df = _table(13, 40, n=60)  # 40^13 ≈ 6.7e20 cells > 2^62
    dom = dpcore.infer_domain(df)
    kind, text = cells_note(dom.size, len(df))
    assert kind == "warning" and "will refuse" in text
    assert not _released(df, "flat_laplace") and not _released(df, "steps", layers=1)
    assert _released(df, "mst")  # a margin method, as the warning suggests
