"""Rows to count: records, or a count table's non-empty cells weighted by their counts.

Every method counts: margins, node counts, mutual information, utility scores. Each of
those is a ``bincount`` over rows of integer codes. Records (n, p) are rows of weight 1.
The non-empty cells of a :class:`dpcore.counting.count_table.CountTable` are rows weighted by their
counts. Both give the same integers, so a method written on :func:`rows` releases the same
thing from either. From a count table, an engine's path never rebuilds the n records.

Privacy: these are TRUE counts (curator-only). They must be noised before release.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dpcore.counting.count_table import CountTable

__all__ = ["rows", "weighted_count", "margin_counts", "n_records"]


def rows(X) -> tuple[np.ndarray, np.ndarray | None, int]:
    """``(codes, weights, n)``: records (n, p) with no weights, or a :class:`CountTable`'s
    non-empty cells (k, p) with their counts as weights. ``n`` is the number of records."""
    if isinstance(X, CountTable):
        return X.codes, X.counts, X.n
    return X, None, len(X)


def n_records(X) -> int:
    """Number of records behind ``X`` (records or a :class:`CountTable`)."""
    return X.n if isinstance(X, CountTable) else len(X)


def weighted_count(idx: np.ndarray, weights, minlength: int = 0) -> np.ndarray:
    """``np.bincount(idx)`` over records, or over cells weighted by their counts (exact
    int64 either way: the weighted sums are whole numbers far below 2^53)."""
    if weights is None:
        return np.bincount(idx, minlength=minlength)
    return np.bincount(idx, weights=weights, minlength=minlength).astype(np.int64)


def margin_counts(X, shape: Sequence[int], axes: Sequence[int]) -> np.ndarray:
    """Dense count table (int64) of the attributes ``axes`` (in that order), from records
    or a :class:`CountTable` (raw data: never released as is)."""
    codes, w, _ = rows(X)
    mshape = [int(shape[a]) for a in axes]
    cells = math.prod(mshape)
    if len(codes) == 0:
        return np.zeros(mshape, np.int64)
    if not len(mshape):
        return np.array(n_records(X), dtype=np.int64).reshape(())
    idx = np.ravel_multi_index(tuple(codes[:, a] for a in axes), mshape)
    return weighted_count(idx, w, cells).reshape(mshape)
