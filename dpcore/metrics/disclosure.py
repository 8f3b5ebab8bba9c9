"""Disclosure measures of Raab (2022): p0, p1 and replicated uniques ru (docs/measures.md).

**Not differentially private.**  These measures read the raw (original) data and
report facts about it (for example how many of its records are unique).  They are
for the curator's evaluation of a synthesis and must not be published as if they
were covered by the release's ε.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpcore.metrics.tables import cell_ids, encode_sets, split_counts

__all__ = ["Disclosure", "disclosure"]


@dataclass(frozen=True)
class Disclosure:
    """Result of :func:`disclosure`: means over the synthetic sets, and ``per_set``.

    All values are percentages.  ``k`` is the number of cells of the full
    cross-tabulation (an exact integer, possibly astronomically large).
    ``p0`` and ``p1`` describe the original data and so are the same for every set.
    NOT differentially private: computed from the raw data.
    """

    k: int
    p0: float
    p1: float
    ru: float
    ru_pct_of_p1: float
    per_set: list = field(default_factory=list)


def disclosure(
    orig: pd.DataFrame, syns: pd.DataFrame | Sequence[pd.DataFrame]
) -> Disclosure:
    """p0, p1 and replicated uniques of each synthetic set against the original.

    Over the full cross-tabulation of all columns (missing values a level; the
    levels of a column are those present in the original or any synthetic set),
    with y the original and s the synthetic cell counts and n the original rows:

    - k = number of cells = product of the numbers of levels
    - p0 = 100·#(cells with y = 0)/k
    - p1 = 100·#(cells with y = 1)/n  (unique records in the original)
    - ru = 100·#(cells with s = 1 and y = 1)/n  (replicated uniques)
    - ru_pct_of_p1 = 100·ru/p1 (NaN if p1 = 0)

    Only non-empty cells are ever counted, so a cross-tabulation with far more
    cells than memory (k > 2^62, say) is handled by hashing the rows' codes.

    **Not differentially private**: this reads the original data.  It is for the
    curator's evaluation; do not publish the results as covered by ε.
    """
    syns, columns, codes, n_levels, bounds = encode_sets(orig, syns)
    n = len(orig)
    k = math.prod(int(v) for v in n_levels)
    ids, n_cells = cell_ids(codes, n_levels)
    counts = split_counts(ids, n_cells, bounds)
    y = counts[0]
    nonempty = int(np.count_nonzero(y))
    unique_y = y == 1
    n_unique = int(np.count_nonzero(unique_y))
    # exact integer arithmetic before the final division, even for huge k
    p0 = 100.0 * ((k - nonempty) / k) if k > 0 else float("nan")
    p1 = 100.0 * n_unique / n if n > 0 else float("nan")

    per_set = []
    for i, s in enumerate(counts[1:], start=1):
        replicated = int(np.count_nonzero(unique_y & (s == 1)))
        ru = 100.0 * replicated / n if n > 0 else float("nan")
        per_set.append(
            {
                "set": i,
                "p0": p0,
                "p1": p1,
                "ru": ru,
                "ru_pct_of_p1": 100.0 * ru / p1 if p1 > 0 else float("nan"),
                "replicated_uniques": replicated,
            }
        )
    ru_mean = float(np.mean([d["ru"] for d in per_set]))
    return Disclosure(
        k=k,
        p0=p0,
        p1=p1,
        ru=ru_mean,
        ru_pct_of_p1=100.0 * ru_mean / p1 if p1 > 0 else float("nan"),
        per_set=per_set,
    )
