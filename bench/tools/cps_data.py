"""A table shaped like the 2021 STEPS paper's voter data, with real dependence.

n = 44,821 records, 15 categorical attributes with 2,2,5,2,2,14,2,2,2,2,2,6,2,2,2
levels (1.72 million cells). Records come from a random Bayesian network: each
attribute after the first has up to two earlier attributes as parents, and its
conditional distributions are Dirichlet draws with a small concentration, so the
attributes depend on each other strongly, as survey attributes do.

This is synthetic benchmark data (no real person in it), generated with numpy
directly: it is test input, not a release, so the no-ad-hoc-noise rule does not apply.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

LEVELS = (2, 2, 5, 2, 2, 14, 2, 2, 2, 2, 2, 6, 2, 2, 2)
N = 44_821


def cps_shaped(n: int = N, seed: int = 2021, levels=LEVELS) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    p = len(levels)
    X = np.zeros((n, p), dtype=np.int64)
    for j, k in enumerate(levels):
        parents = sorted(rng.choice(j, size=min(2, j), replace=False)) if j else []
        pshape = [levels[q] for q in parents]
        n_cfg = int(np.prod(pshape)) if parents else 1
        cpt = rng.dirichlet(np.full(k, 0.6), size=n_cfg)  # one conditional distribution per parent configuration
        cfg = np.ravel_multi_index(tuple(X[:, q] for q in parents), pshape) if parents else np.zeros(n, np.int64)
        u = rng.random(n)
        X[:, j] = np.minimum((u[:, None] > np.cumsum(cpt[cfg], axis=1)).sum(axis=1), k - 1)
    return pd.DataFrame({f"v{j + 1:02d}": pd.Series([f"L{c}" for c in range(k)], dtype=str).to_numpy()[X[:, j]]
                         for j, k in enumerate(levels)})
