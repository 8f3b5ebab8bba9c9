"""Known population totals, read from a ``column,level,total`` table.

Used by the ``poststrat-release`` command and the Survey page alike. The totals are
public inputs (for example census controls), never computed from the confidential sample.
"""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from dpcore.errors import InputError


def known_totals(table: pd.DataFrame, columns: Sequence[str] | None = None) -> dict[str, dict[str, float]]:
    """``{column: {level: total}}`` from a table with the columns column, level, total.

    With ``columns``, only those columns are kept and each must have rows. Raises an
    InputError naming the column when a total is not a number.
    """
    if not {"column", "level", "total"} <= set(table.columns):
        raise InputError(f"the totals file must have the columns column,level,total; it has {list(table.columns)}")
    names = table["column"].astype(str)
    out: dict[str, dict[str, float]] = {}
    for c in (list(columns) if columns is not None else list(dict.fromkeys(names))):
        sub = table[names == c]
        if sub.empty:
            raise InputError(f"the totals file has no rows for column {c!r}; add column,level,total rows for it")
        tot = pd.to_numeric(sub["total"], errors="coerce")
        if tot.isna().any():
            raise InputError(f"the totals for column {c!r} must be numbers")
        out[c] = dict(zip(sub["level"].astype(str), tot.astype(float)))
    return out
