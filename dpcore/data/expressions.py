"""Row selections written as pandas expressions ("age >= 65 and voted == 'YES'").

Used by the survey commands, the Survey page and the rules a release enforces on its records. Privacy: evaluating a mask
releases nothing; which rows it selects is data, used only inside DP releases.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from dpcore.errors import InputError


def row_mask(df: pd.DataFrame, expr: str, what: str) -> np.ndarray:
    """Boolean mask of ``expr`` over the rows of ``df``, or an InputError naming ``what``."""
    try:
        m = df.eval(expr, engine="python")
    except Exception as exc:  # pandas raises many kinds for a bad expression
        raise InputError(f"{what} {expr!r} cannot be evaluated on the table ({type(exc).__name__}: {exc}); "
                         f"columns are {list(df.columns)}") from None
    m = np.asarray(m)
    if m.dtype != bool or m.shape != (len(df),):
        raise InputError(f"{what} {expr!r} must give one true/false value per row")
    return m
