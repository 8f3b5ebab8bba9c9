"""The sparse count table: the non-empty cells of a cross-tabulation and their counts.

A table of n records over attributes with level counts ``shape = (d_1, ..., d_p)`` has
``cells = d_1 ⋯ d_p`` cells (an exact Python int: it may be far above 2^63), of which
at most n are non-empty. :class:`CountTable` keeps only those: their codes, one row per
non-empty cell, sorted lexicographically, and their counts. Memory and time are O(n p),
never O(cells).

Cell keys. When ``cells <= 2^63 − 1`` a cell is one int64, its mixed-radix code
``k = ((c_1 d_2 + c_2) d_3 + c_3) ⋯`` (``np.ravel_multi_index``), whose numeric order is
the lexicographic order of the code rows. Otherwise the attributes are packed greedily
into several int64 words, each a mixed-radix code of a run of attributes below 2^63,
stored big-endian and viewed as one fixed-width byte string per cell: byte order then
equals lexicographic order of the codes, so ``np.unique``, ``np.searchsorted`` and
``np.isin`` work on keys of any width with no Python object per record.

Engines. :func:`dpcore.counting.engines.count_table` builds the table from a source through a backend chosen by
``engine``: ``"pandas"`` (a DataFrame encoded with the domain, or integer codes) today; a
SQL engine (DuckDB, Spark) only needs to run ``SELECT a_1, …, a_p, COUNT(*) GROUP BY
a_1, …, a_p`` on the encoded codes and hand the result to :meth:`CountTable.from_cells`.

Privacy: these are TRUE counts (curator-only). They must be noised before release.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from dpcore.data.domain import code_dtype

__all__ = ["CountTable", "cell_keys", "key_codes", "fits_int64", "DENSE_MARGIN_LIMIT"]

#: Largest margin returned as a dense array by :meth:`CountTable.margin`.
DENSE_MARGIN_LIMIT = 10_000_000
_INT64_CELLS = 2**63 - 1


def fits_int64(shape: Sequence[int]) -> bool:
    """Whether every cell of ``shape`` has a one-word int64 mixed-radix key."""
    return math.prod(int(s) for s in shape) <= _INT64_CELLS


def _words(shape: Sequence[int]) -> list[tuple[int, int]]:
    """Greedy runs [start, stop) of attributes whose level product stays within int64."""
    runs, start, prod = [], 0, 1
    for j, d in enumerate(shape):
        if prod * int(d) > _INT64_CELLS and j > start:
            runs.append((start, j))
            start, prod = j, 1
        prod *= int(d)
    runs.append((start, len(shape)))
    return runs


def cell_keys(codes: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """One sortable key per row of ``codes`` (n, p), in lexicographic order of the rows.

    int64 mixed-radix codes when the domain fits in int64, else fixed-width byte strings
    (several big-endian int64 words): see the module docstring.
    """
    codes = _int_codes(codes).reshape(-1, len(shape))
    shape = tuple(int(s) for s in shape)
    if not shape:
        return np.zeros(len(codes), dtype=np.int64)
    if fits_int64(shape):
        return np.ravel_multi_index(tuple(codes.T), shape).astype(np.int64, copy=False)
    runs = _words(shape)
    words = np.empty((len(codes), len(runs)), dtype=">i8")
    for w, (a, b) in enumerate(runs):
        words[:, w] = np.ravel_multi_index(tuple(codes[:, a:b].T), shape[a:b])
    return np.ascontiguousarray(words).view(f"V{8 * len(runs)}").ravel()


def key_codes(keys: np.ndarray, shape: Sequence[int], dtype=np.int64) -> np.ndarray:
    """Inverse of :func:`cell_keys`: codes (k, p) of the keys, as ``dtype`` (int64 unless told).

    Decoded column by column into the one (k, p) result, with k-long temporaries only
    (``np.unravel_index`` would hold p k-long arrays, then their stack, then a copy).
    """
    shape = tuple(int(s) for s in shape)
    out = np.empty((len(keys), len(shape)), dtype=dtype)
    if not shape:
        return out
    if keys.dtype == np.int64:
        words, runs = keys.reshape(-1, 1), [(0, len(shape))]
    else:
        runs = _words(shape)
        words = np.ascontiguousarray(keys).view(">i8").reshape(len(keys), len(runs))
    for w, (a, b) in enumerate(runs):
        rest = words[:, w].astype(np.int64)  # a copy: divided in place below
        for j in range(b - 1, a, -1):
            out[:, j] = rest % shape[j]
            rest //= shape[j]
        out[:, a] = rest
    return out


@dataclass(frozen=True)
class CountTable:
    """Non-empty cells (``codes``, sorted lexicographically) and their ``counts`` (> 0).

    Build with :meth:`from_codes` (records), :meth:`from_cells` (an engine's GROUP BY) or
    :meth:`from_keys` (a GROUP BY over the packed cell key). The codes are compact: the
    smallest unsigned dtype holding every code (:func:`dpcore.data.domain.code_dtype`; one
    byte a value up to 256 levels), so a table of k cells holds k·p bytes of codes, not 8·k·p.
    Whoever multiplies codes converts them to int64 first (they would wrap).
    """

    shape: tuple[int, ...]
    codes: np.ndarray  # (k, p) compact (code_dtype(shape)), one row per non-empty cell, lexicographic order
    counts: np.ndarray  # (k,) int64 > 0

    @classmethod
    def from_codes(cls, X: np.ndarray, shape: Sequence[int]) -> CountTable:
        """Count records given as integer codes (n, p), as :meth:`Domain.encode` returns them."""
        shape = tuple(int(s) for s in shape)
        X = _int_codes(X).reshape(-1, len(shape))
        _check_codes(X, shape)
        keys = cell_keys(X, shape)
        uniq, first, counts = np.unique(keys, return_index=True, return_counts=True)
        return cls(shape, X[first].astype(code_dtype(shape)), counts.astype(np.int64))

    @classmethod
    def from_cells(cls, codes: np.ndarray, counts: np.ndarray, shape: Sequence[int]) -> CountTable:
        """From (cell codes, counts) pairs in any order, duplicates summed and zeros dropped:
        what a ``GROUP BY`` over the encoded columns returns."""
        shape = tuple(int(s) for s in shape)
        codes = _int_codes(codes).reshape(-1, len(shape))
        counts = np.asarray(counts, dtype=np.int64).reshape(-1)
        if len(codes) != len(counts):
            raise ValueError(f"{len(codes)} cells but {len(counts)} counts")
        if (counts < 0).any():
            raise ValueError("cell counts must be >= 0")
        _check_codes(codes, shape)
        keys = cell_keys(codes, shape)
        uniq, first, inv = np.unique(keys, return_index=True, return_inverse=True)
        summed = np.bincount(inv.ravel(), weights=counts, minlength=len(uniq)).astype(np.int64)
        keep = summed > 0
        return cls(shape, codes[first[keep]].astype(code_dtype(shape), copy=False), summed[keep])

    @classmethod
    def from_keys(cls, keys: np.ndarray, counts: np.ndarray, shape: Sequence[int]) -> CountTable:
        """From (one-word cell key, count) pairs in any order, duplicates summed and zeros
        dropped: what a ``GROUP BY`` over the packed key returns when the domain's cells fit
        in int64 (:func:`fits_int64`; the key is :func:`cell_keys`'s mixed-radix code).

        The same table as :meth:`from_cells` of the decoded codes, built without ever holding
        the engine's cells as (k, p) codes (the engine returns 16 bytes a cell; the codes are
        decoded once, compact).
        """
        shape = tuple(int(s) for s in shape)
        if not fits_int64(shape):
            raise ValueError(f"a domain of {math.prod(shape):,} cells has no one-word int64 cell key")
        keys = np.asarray(keys, dtype=np.int64).reshape(-1)
        counts = np.asarray(counts, dtype=np.int64).reshape(-1)
        if len(keys) != len(counts):
            raise ValueError(f"{len(keys)} cells but {len(counts)} counts")
        if (counts < 0).any():
            raise ValueError("cell counts must be >= 0")
        if len(keys) and (keys.min() < 0 or keys.max() >= math.prod(shape)):
            raise ValueError("cell keys must lie in [0, cell count)")
        order = np.argsort(keys, kind="stable")
        keys, counts = keys[order], counts[order]
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if len(keys) else order[:0]
        summed = np.add.reduceat(counts, starts) if len(starts) else counts
        keys = keys[starts][summed > 0]
        table = cls(shape, key_codes(keys, shape, code_dtype(shape)), summed[summed > 0])
        table.__dict__["keys"] = keys  # the cached property, already at hand (the dataclass is frozen)
        return table

    @property
    def n(self) -> int:
        """Number of records."""
        return int(self.counts.sum())

    @property
    def cells(self) -> int:
        """Cells of the full cross-tabulation (exact Python int, possibly > 2^63)."""
        return math.prod(self.shape)

    @property
    def nonempty(self) -> int:
        return len(self.counts)

    @cached_property
    def keys(self) -> np.ndarray:
        """Sorted cell keys (:func:`cell_keys`) of the non-empty cells."""
        return cell_keys(self.codes, self.shape)

    def lookup(self, codes: np.ndarray) -> np.ndarray:
        """Counts of the given cells (rows of codes), 0 for empty cells."""
        q = cell_keys(codes, self.shape)
        if not len(self.keys):
            return np.zeros(len(q), dtype=np.int64)
        pos = np.minimum(np.searchsorted(self.keys, q), len(self.keys) - 1)
        return np.where(self.keys[pos] == q, self.counts[pos], 0)

    def margin(self, attrs: Sequence[int], dense_limit: int = DENSE_MARGIN_LIMIT):
        """Counts over the attributes ``attrs`` (indices, in that order).

        A dense array of shape ``[shape[j] for j in attrs]`` when it has at most
        ``dense_limit`` cells; otherwise the margin's own sparse :class:`CountTable`.
        """
        attrs = [int(j) for j in attrs]
        sub = tuple(self.shape[j] for j in attrs)
        if math.prod(sub) <= dense_limit:
            flat = (np.ravel_multi_index(tuple(self.codes[:, attrs].T), sub) if attrs
                    else np.zeros(self.nonempty, np.int64))
            return np.bincount(flat, weights=self.counts, minlength=math.prod(sub)).astype(np.int64).reshape(sub)
        return CountTable.from_cells(self.codes[:, attrs], self.counts, sub)

    def records(self) -> np.ndarray:
        """The records (n, p) as compact codes: each non-empty cell repeated by its count, in
        sorted cell order, in the smallest unsigned dtype holding every code (n·p bytes for
        attributes of at most 256 levels, against 8·n·p as int64)."""
        return np.repeat(self.codes.astype(code_dtype(self.shape)), self.counts, axis=0)

    def dense(self, limit: int = DENSE_MARGIN_LIMIT) -> np.ndarray:
        """The full table as a flat dense array (only for small domains)."""
        if self.cells > limit:
            raise ValueError(f"the table has {self.cells:,} cells; a dense copy is limited to {limit:,}")
        return self.margin(range(len(self.shape)), limit).ravel()


def _int_codes(X) -> np.ndarray:
    """Integer codes as given (compact uint8/uint16 codes stay compact: no n × p int64 copy)."""
    X = np.asarray(X)
    return X if X.dtype.kind in "iu" else X.astype(np.int64)


def _check_codes(X: np.ndarray, shape: tuple[int, ...]) -> None:
    if X.size and ((X < 0).any() or (X >= np.asarray(shape, dtype=np.int64)).any()):
        raise ValueError("codes must lie in [0, level count) for every attribute")
