"""Utilities for choosing the attribute that splits a node (MoSDA / LeSDA, docs/methods/steps.md).

For node v and candidate attribute j with level counts c (over j's K_j declared
levels), n_v = Σc and g = Σ c·ln(n_v/c) (0·ln 0 = 0):

=============  ====================================  ==================================
name           u_j(v) (MoSDA maximises, LeSDA -u)      Δu (N: see below)
=============  ====================================  ==================================
``aic``        −AIC_j = −(2g + 2K_j)                  2·ln(N+1) + 4
``aic_gain``   2(n_v ln K_j − g) − 2(K_j − 1)          2·max(ln(N+1), ln K_j) + 4
``l1_uniform`` Σ |c_l − n_v/K_j|                      2
=============  ====================================  ==================================

Δu is for add/remove neighbours with N = ``max_records`` and for replace with N = n; K_j is
declared, hence fixed. The 2021 paper's Δu = 2 for AIC is too small (docs/paper-errata.md).
``tests/measure/test_selection.py`` checks every Δu by brute force over all neighbours of small tables.
Proof: docs/methods/steps.md.

These functions only score; the choice itself is made by
:func:`dpcore.privacy.mechanisms.exponential_mechanism` at the budget the ledger records.
"""
from __future__ import annotations

import math
from typing import cast

import numpy as np

from dpcore.errors import OptionError

UTILITIES = ("aic", "aic_gain", "l1_uniform")


def _g(counts: np.ndarray) -> np.ndarray:
    """g = Σ c ln(n_v/c) = n_v ln n_v − Σ c ln c, row-wise, with 0 ln 0 = 0."""
    c = np.asarray(counts, dtype=float)
    nv = c.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        clogc = np.where(c > 0, c * np.log(np.where(c > 0, c, 1.0)), 0.0).sum(axis=-1)
        nlogn = np.where(nv > 0, nv * np.log(np.where(nv > 0, nv, 1.0)), 0.0)
    return cast(np.ndarray, nlogn - clogc)


def utility(counts: np.ndarray, kind: str = "aic") -> np.ndarray:
    """u_j(v) for rows of level counts (shape (..., K_j)); K_j is the declared level count."""
    c = np.asarray(counts, dtype=float)
    k = c.shape[-1]
    if kind == "aic":
        return cast(np.ndarray, -(2.0 * _g(c) + 2.0 * k))
    if kind == "aic_gain":
        nv = c.sum(axis=-1)
        return cast(np.ndarray, 2.0 * (nv * math.log(k) - _g(c)) - 2.0 * (k - 1))
    if kind == "l1_uniform":
        nv = c.sum(axis=-1, keepdims=True)
        return cast(np.ndarray, np.abs(c - nv / k).sum(axis=-1))
    raise OptionError(f"utility must be one of {', '.join(UTILITIES)}; got {kind!r}")


def sensitivity(kind: str, n: int, k_max: int) -> float:
    """Δu over every candidate with at most ``k_max`` declared levels, for public total n."""
    if kind == "aic":
        return 2.0 * math.log(n + 1) + 4.0
    if kind == "aic_gain":
        return 2.0 * max(math.log(n + 1), math.log(max(k_max, 1))) + 4.0
    if kind == "l1_uniform":
        return 2.0
    raise OptionError(f"utility must be one of {', '.join(UTILITIES)}; got {kind!r}")
