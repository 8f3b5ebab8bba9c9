"""A released set before its records exist: drawn in chunks, or in partitions, from the fitted model.

A synthesizer's set is ``n`` records drawn from its fitted model (cells and their weights, a
junction tree, a Bayesian network, the record fit's records, the sparse leaf layer's items).
Holding the n × p codes at once makes memory grow with the output's length; a *draw* holds
only the model and yields the records :data:`CHUNK_ROWS` at a time (docs/engines.md, "The
chunk law"). Three kinds:

* :class:`IIDDraw`: n i.i.d. records from a model's law (``model.sample(c, rng)``: the junction
  tree of AIM, MST and ``ipf``, PrivBayes' network). Chunk k is ``model.sample(c_k, rng)``;
  i.i.d. records cut into consecutive pieces are i.i.d., so the chunked set has exactly the
  law of the whole draw.
* :class:`CellDraw`: a multiset of records, given as its distinct cells (codes) and their record
  counts, released in a uniformly random order: what :func:`dpcore.estimate.table.draw_cells`
  and the sparse leaf layer draw (a multinomial, or a rounding, of n over the cells, then a
  random permutation). A multinomial over cells, cut into chunks of sizes c_1, c_2, …, is
  a sequence of multinomials whose totals are split off the whole; here the counts are drawn
  once, whole, and dealt: chunk k takes a uniformly random c_k-subset of the records not yet
  dealt (multivariate hypergeometric counts per cell, :func:`deal`), expanded and shuffled.
  Proof sketch: a uniformly random permutation of a multiset, read in consecutive pieces,
  puts in the first piece a uniformly random c_1-subset of the records, in uniformly random
  order, and, given it, the rest is a uniformly random permutation of what is left; by
  induction the chunked set has exactly the whole draw's law (for any chunk sizes).
* :class:`FixedDraw`: records already drawn (the record fit's own records: GUM's output is its
  sample); chunks are slices.

A set of at most one chunk is drawn by the very calls the whole draw made before chunking
existed, so seeded releases of such sets are unchanged (byte for byte).

**Partitions** (Spark executors, :mod:`dpcore.output.spark_writer`): the set's n records are
split over P partitions by a public rule (:func:`part_sizes`: n // P each, the first n mod P
one more), and partition k draws its records with its own stream, spawned from the release
seed (:func:`part_stream`: ``SeedSequence(seed).spawn`` children, keyed by set and
partition). An :class:`IIDDraw` partition draws its n_k records i.i.d.; a :class:`CellDraw`
partition gets its counts by dealing down a binary tree over the partitions (each node's
split drawn from its own spawned stream, so every executor recomputes the same splits
independently, :meth:`CellDraw.part`), which gives each partition a uniformly random
n_k-subset of the records, disjoint across partitions: the set, read partition after
partition, has the whole draw's law. The same seed and partition count give the same
records.

Privacy: drawing records from a model fitted to noisy measurements is post-processing
(Dwork & Roth 2014, Prop 2.1): chunking or partitioning the draw reads no data and changes
no guarantee. Every draw comes from the release's generator, or from streams spawned from
its seed; none from global randomness.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Protocol, Sequence, runtime_checkable

import numpy as np

from dpcore.data.domain import code_dtype

__all__ = ["CHUNK_ROWS", "SetDraw", "IIDDraw", "CellDraw", "FixedDraw", "chunk_sizes", "part_sizes", "part_stream", "partition_stream",
           "deal", "cell_draw", "records", "compact"]

#: records drawn, and held, at a time (a public rule: it depends on nothing but the set's length)
CHUNK_ROWS = 1_000_000
#: spawn-key namespaces under a set's key: the partitions' streams, and the dealing tree's nodes
_PART, _NODE = 0, 1


def compact(codes: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """The same codes in :func:`code_dtype` (one byte per value for attributes of ≤ 256 levels)."""
    return np.asarray(codes).astype(code_dtype(shape), copy=False)


def chunk_sizes(n: int, chunk_rows: int = CHUNK_ROWS) -> list[int]:
    """The sizes of the chunks of a set of ``n`` records: full chunks, then the rest. A set of
    0 records is one empty chunk (the whole draw's calls, made with 0)."""
    n, c = int(n), max(1, int(chunk_rows))
    sizes = [c] * (n // c) + ([n % c] if n % c else [])
    return sizes or [0]


def part_sizes(n: int, parts: int) -> list[int]:
    """The public partition rule: n // P records to each of P partitions, one more to the first n mod P."""
    q, r = divmod(int(n), int(parts))
    return [q + (k < r) for k in range(int(parts))]


def part_stream(seed: int, set_index: int, *key: int) -> np.random.Generator:
    """The generator of one partition (or dealing node) of a set: the release seed's
    ``SeedSequence`` child keyed (set, namespace, …), i.e. ``SeedSequence(seed).spawn``'s
    children taken at those indices. Independent of the release's own generator (the root)."""
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(int(set_index), *map(int, key))))


def partition_stream(seed: int, set_index: int, part: int) -> np.random.Generator:
    """The generator partition ``part`` of set ``set_index`` draws its records (and their values) with."""
    return part_stream(seed, set_index, _PART, part)


def _uniform_subset(total: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random k-subset of range(total), as the first k distinct values of a stream
    of uniform draws (exact; about k·ln(total/(total−k))·total/k draws, at most ~1.4 k for k ≤ total/2)."""
    got = np.empty(0, dtype=np.int64)
    while len(got) < k:
        want = k - len(got)
        batch = rng.integers(0, total, size=max(16, int(want * 1.5) + 16), dtype=np.int64)
        allv = np.concatenate([got, batch])
        _, first = np.unique(allv, return_index=True)
        got = allv[np.sort(first)]  # distinct values in order of first appearance
    return got[:k]


def deal(counts: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """Counts per cell of a uniformly random ``size``-subset of the records (``counts[i]`` records
    in cell i): multivariate hypergeometric, drawn exactly as a uniform subset of record positions
    (of the smaller of the subset and its complement). Memory O(size + cells)."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    size = int(size)
    if size >= total:
        return counts.copy()
    if size <= 0:
        return np.zeros_like(counts)
    k = min(size, total - size)
    pos = _uniform_subset(total, k, rng)
    cells = np.searchsorted(np.cumsum(counts), pos, side="right")
    picked = np.bincount(cells, minlength=len(counts)).astype(np.int64)
    return picked if k == size else counts - picked


@runtime_checkable
class SetDraw(Protocol):
    """A released set before its records exist: ``n`` records of ``width`` attributes."""

    n: int

    def chunks(self, rng: np.random.Generator, chunk_rows: int = CHUNK_ROWS) -> Iterator[np.ndarray]:
        """The records (integer codes, (≤ chunk_rows, p)), ``chunk_rows`` at a time, drawn from ``rng``."""
        ...

    def part(self, k: int, parts: int, seed: int, set_index: int) -> "SetDraw":
        """Partition ``k`` of ``parts`` (:func:`part_sizes`) as a draw of its own records."""
        ...


@dataclass(frozen=True, eq=False)
class IIDDraw:
    """``n`` i.i.d. records from ``model`` (anything with ``sample(n, rng)`` → codes (n, p))."""

    model: object
    n: int

    def chunks(self, rng, chunk_rows: int = CHUNK_ROWS) -> Iterator[np.ndarray]:
        for size in chunk_sizes(self.n, chunk_rows):
            yield np.asarray(self.model.sample(size, rng), dtype=np.int64)

    def part(self, k: int, parts: int, seed: int, set_index: int) -> "IIDDraw":
        return IIDDraw(self.model, part_sizes(self.n, parts)[k])


@dataclass(frozen=True, eq=False)
class CellDraw:
    """A multiset of records in uniformly random order: ``counts[i]`` records of the cell with
    codes ``codes[i]`` (compact, (D, p); only cells with records are listed)."""

    codes: np.ndarray
    counts: np.ndarray

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    def _expand(self, take: np.ndarray, rng) -> np.ndarray:
        idx = np.repeat(np.arange(len(take)), take)
        # the whole draw's permutation (draw_cells; the sparse layer's in-place shuffle draws the same);
        # the codes stay compact (one byte a value): whoever needs int64 converts
        return self.codes[idx[rng.permutation(len(idx))]]

    def chunks(self, rng, chunk_rows: int = CHUNK_ROWS) -> Iterator[np.ndarray]:
        sizes = chunk_sizes(self.n, chunk_rows)
        if len(sizes) == 1:  # the whole draw, as before chunking (same calls, same records)
            yield self._expand(self.counts, rng)
            return
        left = self.counts.astype(np.int64, copy=True)
        for size in sizes:
            take = deal(left, size, rng)
            left -= take
            yield self._expand(take, rng)

    def part(self, k: int, parts: int, seed: int, set_index: int) -> "CellDraw":
        """Partition k's counts, dealt down a binary tree over the partitions: the node covering
        partitions [lo, hi) gives the left half [lo, mid) a uniformly random subset of its records
        of their size (:func:`deal`, from the node's own spawned stream), the rest goes right."""
        sizes = part_sizes(self.n, parts)
        counts, lo, hi = self.counts.astype(np.int64), 0, int(parts)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            left = deal(counts, sum(sizes[lo:mid]), part_stream(seed, set_index, _NODE, lo, hi))
            counts, lo, hi = (left, lo, mid) if k < mid else (counts - left, mid, hi)
        return CellDraw(self.codes, counts)


@dataclass(frozen=True, eq=False)
class FixedDraw:
    """Records already drawn (codes (n, p)): chunks and partitions are slices."""

    records: np.ndarray

    @property
    def n(self) -> int:
        return len(self.records)

    def chunks(self, rng, chunk_rows: int = CHUNK_ROWS) -> Iterator[np.ndarray]:
        start = 0
        for size in chunk_sizes(self.n, chunk_rows):
            yield self.records[start:start + size]
            start += size

    def part(self, k: int, parts: int, seed: int, set_index: int) -> "FixedDraw":
        sizes = part_sizes(self.n, parts)
        start = sum(sizes[:k])
        return FixedDraw(self.records[start:start + sizes[k]])


def cell_draw(counts: np.ndarray, codes_of, shape: Sequence[int]) -> CellDraw:
    """The :class:`CellDraw` of per-cell record ``counts`` (one entry per cell, most of them maybe 0):
    the cells with records, their codes ``codes_of(cell indices)`` kept compact."""
    counts = np.asarray(counts, dtype=np.int64)
    support = np.flatnonzero(counts)
    return CellDraw(compact(codes_of(support), shape), counts[support])


def records(draw: SetDraw, rng: np.random.Generator, width: int, chunk_rows: int = CHUNK_ROWS) -> np.ndarray:
    """All the draw's records (n, ``width``) int64, chunk after chunk (a set of one chunk: that chunk itself)."""
    pieces = draw.chunks(rng, chunk_rows)
    first = next(pieces)
    if len(first) == draw.n:  # one chunk: the whole set
        return np.asarray(first, dtype=np.int64)
    out = np.empty((draw.n, width), dtype=np.int64)
    out[: len(first)] = first
    at = len(first)
    for piece in pieces:
        out[at: at + len(piece)] = piece
        at += len(piece)
    return out
