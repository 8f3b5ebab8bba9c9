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
* :class:`TreeCountDraw`: a junction-tree model's records by **controlled rounding**
  (:meth:`TreeCountDraw.from_model`): every clique's cell counts are fixed at construction,
  rounded from n times the model's clique tables along the tree, and the records are a balanced,
  unbiased matching of those counts (docs/engines.md, "The rounded draw"). Chunk k deals a
  uniformly random c_k-subset of the records not yet dealt *at the level of the clique tables*
  (hypergeometric, root first, then per separator cell) and matches it: the chunks' tables have
  the whole draw's law (same argument as for cells, applied per group); the matching is
  unbiased in every chunk and balanced within each chunk.
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

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from dpcore.data.domain import code_dtype

__all__ = ["CHUNK_ROWS", "SetDraw", "IIDDraw", "CellDraw", "TreeCountDraw", "FixedDraw", "SYNTHESIS_DRAWS",
           "controlled_round", "model_draw", "chunk_sizes", "part_sizes", "part_stream", "partition_stream",
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

    @property
    def n(self) -> int:
        """The set's number of records."""
        ...

    def chunks(self, rng: np.random.Generator, chunk_rows: int = CHUNK_ROWS) -> Iterator[np.ndarray]:
        """The records (integer codes, (≤ chunk_rows, p)), ``chunk_rows`` at a time, drawn from ``rng``."""
        ...

    def part(self, k: int, parts: int, seed: int, set_index: int) -> SetDraw:
        """Partition ``k`` of ``parts`` (:func:`part_sizes`) as a draw of its own records."""
        ...


class CliqueTree(Protocol):
    """What the rounded draw reads of a junction tree (:class:`dpcore.estimate.junction_tree.JunctionTree`,
    not imported here: it imports the draws): the domain's shape, the cliques, each one's parent
    (−1 at the root) and a root-first order."""

    shape: tuple
    cliques: list
    parent: list
    order: list

    def separator(self, child: int) -> tuple[int, ...]: ...


class RecordSampler(Protocol):
    """A model that draws i.i.d. records: ``sample(n, rng)`` → codes (n, p)."""

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray: ...


@dataclass(frozen=True, eq=False)
class IIDDraw:
    """``n`` i.i.d. records from ``model`` (anything with ``sample(n, rng)`` → codes (n, p))."""

    model: RecordSampler
    n: int

    def chunks(self, rng, chunk_rows: int = CHUNK_ROWS) -> Iterator[np.ndarray]:
        for size in chunk_sizes(self.n, chunk_rows):
            yield np.asarray(self.model.sample(size, rng), dtype=np.int64)

    def part(self, k: int, parts: int, seed: int, set_index: int) -> IIDDraw:
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

    def part(self, k: int, parts: int, seed: int, set_index: int) -> CellDraw:
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


def controlled_round(k: np.ndarray, weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Controlled rounding of k[g] records over the cells of each group g (rows of ``weights``).

    With q = weights[g]/Σ weights[g] (uniform where the row has no mass) and w = k[g]·q, cell j
    gets floor(w_j) records, and the k[g] − Σ floor(w) records left go to cells by systematic
    sampling of the fractional parts f_j = w_j − floor(w_j): one uniform u per group, the points
    u, u + 1, …, u + left − 1 on the cumulative fractional parts (which end at ``left``), a cell
    getting the points in its interval. An interval is shorter than 1, so it holds 0 or 1 point,
    1 with probability exactly f_j. Hence, for every cell: the count is floor(w_j) or
    floor(w_j) + 1 (within 1 of k·q_j), its expectation is k[g]·q_j (unbiased), and every
    row sums to k[g]. (Madow 1949's systematic sampling; Cox 1987's unbiased controlled rounding
    in one dimension.) Returns (G, R) int64. Post-processing: reads weights and counts only."""
    k = np.asarray(k, dtype=np.int64).reshape(-1)
    w = np.clip(np.asarray(weights, dtype=float).reshape(len(k), -1), 0.0, None)
    rows, width = w.shape
    mass = w.sum(axis=1, keepdims=True)
    q = np.where(mass > 0, w / np.where(mass > 0, mass, 1.0), 1.0 / width)
    want = k[:, None] * q
    out = np.floor(want).astype(np.int64)
    left = k - out.sum(axis=1)
    if left.min(initial=0) < 0:  # Σ floor(w) > k only if the floats sum past k + 1: not with q ≥ 0 summing to 1
        raise ArithmeticError("controlled rounding: the floors exceed the group's records")
    grow = np.flatnonzero(left > 0)
    if len(grow) == 0:
        return out
    frac = want[grow] - out[grow]
    cum = np.cumsum(frac, axis=1)
    cum *= (left[grow] / cum[:, -1])[:, None]  # the fractional parts sum to `left`; make it exact
    cum[:, -1] = left[grow]
    start = np.cumsum(left[grow]) - left[grow]  # groups laid end to end: group g on [start, start + left)
    flat = (cum + start[:, None]).ravel()
    u = rng.random(len(grow))  # one uniform per group with records left
    points = np.repeat(start + u, left[grow]) + (np.arange(int(left[grow].sum())) - np.repeat(start, left[grow]))
    hit = np.searchsorted(flat, points, side="right")  # the cell whose interval holds the point
    extra = np.bincount(np.minimum(hit, flat.size - 1), minlength=flat.size).reshape(len(grow), width)
    out[grow] += extra
    return out


def _layout(tree, c: int) -> tuple[tuple, tuple]:
    """(separator, the clique's other attributes) of clique ``c``: its table's rows and columns."""
    sep = tree.separator(c)
    return sep, tuple(a for a in tree.cliques[c] if a not in sep)


def _group_sizes(tree, tables, c: int) -> np.ndarray:
    """Records per separator cell of clique ``c``: its parent's table summed to the separator
    (the root: one group, all the records)."""
    p = tree.parent[c]
    if p < 0:
        return np.array([int(tables[c].sum())], dtype=np.int64)
    sep = tree.separator(c)
    psep, prest = _layout(tree, p)
    axes = psep + prest
    full = tables[p].reshape([tree.shape[a] for a in axes])
    kept = tuple(a for a in axes if a in sep)
    drop = tuple(i for i, a in enumerate(axes) if a not in sep)
    m = full.sum(axis=drop) if drop else full
    m = np.transpose(m, [kept.index(a) for a in sep]) if sep else m
    return np.asarray(m, dtype=np.int64).reshape(-1)


#: numpy's hypergeometric sampler takes populations below this size
_HYPERGEOMETRIC_MAX = 10**9


def _hypergeometric(counts: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """Counts per cell of a uniformly random ``size``-subset of the records (multivariate
    hypergeometric), by numpy's marginal method (one hypergeometric draw per cell: O(cells), not
    O(size) as :func:`deal`'s exact subset of positions); :func:`deal` above its population limit."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if size >= total:
        return counts.copy()
    if size <= 0:
        return np.zeros_like(counts)
    if total >= _HYPERGEOMETRIC_MAX:
        return deal(counts, size, rng)
    return rng.multivariate_hypergeometric(counts, size, method="marginals").astype(np.int64)


def _balance_keys(shape, sep: tuple, drawn: list[int], rng: np.random.Generator) -> list[int]:
    """The sort keys of a clique's records: its separator, then the attributes already drawn in a
    random order (the first balances best; each further key balances within the levels of those
    before it), as many as keep the combined key within int64."""
    keys = list(sep)
    order = [drawn[i] for i in rng.permutation(len(drawn))] if drawn else []
    size = math.prod(int(shape[a]) for a in keys)
    for a in order:
        if size * int(shape[a]) >= 2**62:
            break
        keys.append(a)
        size *= int(shape[a])
    return keys


def _interleaved(tab: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Row g of ``tab`` (G, R) as a sequence of tab[g, r] copies of each value r, rows laid end to end:
    the copies of r sit at the midpoints (j + ½)/tab[g, r] of the row (sorted, ties by value), so
    every run of the row holds each value within about one of its share; then the row is rotated
    cyclically by a uniform offset, so every position holds r with probability exactly tab[g, r]/k_g
    (k_g the row's total). Post-processing: one integer per row from ``rng``."""
    rows, width = tab.shape
    flat = tab.reshape(-1).astype(np.int64)
    values = np.repeat(np.tile(np.arange(width, dtype=np.int64), rows), flat)
    group = np.repeat(np.repeat(np.arange(rows, dtype=np.int64), width), flat)
    j = np.arange(len(values), dtype=np.int64) - np.repeat(np.cumsum(flat) - flat, flat)  # copy index within (g, r)
    mid = (j + 0.5) / np.repeat(flat, flat).astype(float)
    k = tab.sum(axis=1).astype(np.int64)
    if rows * float(k.max(initial=1)) ** 2 < 2.0**50:  # group + mid keeps every midpoint apart: one sort
        seq = values[np.argsort(group + mid, kind="stable")]  # ties (equal midpoints) in value order
    else:
        seq = values[np.lexsort((values, mid, group))]
    start = np.cumsum(k) - k
    shift = rng.integers(0, np.maximum(k, 1))  # one uniform rotation per row
    i = np.arange(len(seq), dtype=np.int64) - np.repeat(start, k)
    out = np.empty_like(seq)
    out[np.repeat(start, k) + (i + np.repeat(shift, k)) % np.repeat(np.maximum(k, 1), k)] = seq
    return out


@dataclass(frozen=True, eq=False)
class TreeCountDraw:
    """A junction-tree model's records by controlled rounding: ``counts[c]`` is clique c's
    table of record counts laid out (separator cells, other cells) (:func:`_layout`); every
    clique's table sums, per separator cell, to its parent's table summed to that separator.
    The records are the balanced matching of these tables (:meth:`_records`): root cells expanded
    in a random order, then, clique after clique, the records of each separator cell, sorted by
    what was drawn before, get that row's counts of the clique's other attributes evenly
    interleaved and rotated by a uniform offset. ``tree``: the
    :class:`dpcore.estimate.junction_tree.JunctionTree` (shape, cliques, parent, order)."""

    tree: CliqueTree
    counts: tuple

    @property
    def n(self) -> int:
        return int(self.counts[self.tree.order[0]].sum())

    @classmethod
    def from_model(cls, model, n: int, rng: np.random.Generator) -> TreeCountDraw:
        """Round ``n`` records through the model's clique tables μ_C, root first (k = n), then per
        clique and separator cell s: k_s = the records the parent's rounded table gives s, rounded
        over μ_C(· | s) by :func:`controlled_round`. So E[count of cell (s, r)] = n·P(s, r) along
        the tree (induction: E k_s = n·P(s), the calibrated tree's cliques agree on separators)
        and every group's count is within 1 of k_s·P(r | s). One uniform per group with a
        remainder, from ``rng``. Post-processing of the model (docs/engines.md, "The rounded draw")."""
        t = model.tree
        tables = [None] * len(t.cliques)
        for c in t.order:
            sep, rest = _layout(t, c)
            cax = t.cliques[c]
            mu = np.transpose(model.mu[c], [cax.index(a) for a in sep + rest])
            width = math.prod(t.shape[a] for a in rest)
            k = np.array([int(n)], dtype=np.int64) if t.parent[c] < 0 else _group_sizes(t, tables, c)
            tables[c] = controlled_round(k, mu.reshape(len(k), width), rng)
        return cls(t, tuple(tables))

    def _take(self, tables, size: int, rng) -> list:
        """The tables of a uniformly random ``size``-subset of the records of ``tables``: the root's
        cells dealt (:func:`_hypergeometric`), then per clique and separator cell the subset's
        records of that cell dealt from the row (what a uniformly random subset of a uniformly
        random matching takes)."""
        t = self.tree
        if size >= int(tables[t.order[0]].sum()):
            return [tab.copy() for tab in tables]
        take = [None] * len(tables)
        for c in t.order:
            tab = tables[c]
            if t.parent[c] < 0:
                take[c] = _hypergeometric(tab.reshape(-1), size, rng).reshape(tab.shape)
                continue
            want = _group_sizes(t, take, c)
            got = np.zeros_like(tab)
            for g in np.flatnonzero(want):
                got[g] = _hypergeometric(tab[g], int(want[g]), rng)
            take[c] = got
        return take

    def _records(self, tables, rng) -> np.ndarray:
        """The balanced matching of ``tables``: records (m, p), compact codes (:func:`compact`'s dtype).

        Root cells expanded in a random order; then, clique after clique, each separator cell's
        records, ordered by the attributes already drawn (in a random order, ties random;
        :func:`_balance_keys`), receive that row's values evenly interleaved and cyclically rotated
        by a uniform offset (:func:`_interleaved`): every record gets value r with probability
        exactly count(r)/k, and any run of records in the order (one level of a sort key) gets
        each value within about a record of its share (docs/engines.md, "The rounded draw")."""
        t = self.tree
        m = int(tables[t.order[0]].sum())
        out = np.zeros((m, len(t.shape)), dtype=code_dtype(t.shape))  # compact codes: one byte a value
        drawn: list[int] = []
        for c in t.order:
            sep, rest = _layout(t, c)
            tab = tables[c]
            if rest:
                values = _interleaved(tab, rng)  # by separator cell, balanced within it
                perm = rng.permutation(m)
                keys = _balance_keys(t.shape, sep, [a for a in drawn if a not in sep], rng)
                if keys:
                    key = np.ravel_multi_index(tuple(out[:, a] for a in keys), [t.shape[a] for a in keys])[perm]
                    key = key.astype(np.min_scalar_type(int(key.max(initial=0))), copy=False)  # small keys: radix
                    at = perm[np.argsort(key, kind="stable")]  # by separator cell, then the balance keys
                else:
                    at = perm
                for a, v in zip(rest, np.unravel_index(values, [t.shape[a] for a in rest])):
                    out[at, a] = v
            drawn += [a for a in t.cliques[c] if a not in drawn]
        return out

    def chunks(self, rng, chunk_rows: int = CHUNK_ROWS) -> Iterator[np.ndarray]:
        sizes = chunk_sizes(self.n, chunk_rows)
        if len(sizes) == 1:
            yield self._records(self.counts, rng)
            return
        left = [tab.astype(np.int64, copy=True) for tab in self.counts]
        for size in sizes:
            take = self._take(left, size, rng)
            for c, tab in enumerate(take):
                left[c] -= tab
            yield self._records(take, rng)

    def part(self, k: int, parts: int, seed: int, set_index: int) -> TreeCountDraw:
        """Partition k's tables, dealt down a binary tree over the partitions as
        :meth:`CellDraw.part` deals cells (each node's split from its own spawned stream)."""
        sizes = part_sizes(self.n, parts)
        tables, lo, hi = list(self.counts), 0, int(parts)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            left = self._take(tables, sum(sizes[lo:mid]), part_stream(seed, set_index, _NODE, lo, hi))
            tables, lo, hi = (left, lo, mid) if k < mid else ([a - b for a, b in zip(tables, left)], mid, hi)
        return TreeCountDraw(self.tree, tuple(tables))


@dataclass(frozen=True, eq=False)
class RecodedDraw:
    """Another draw's records passed through ``recode(codes, rng)`` chunk by chunk: a map applied to
    every record on its own (merged levels spread back, :mod:`dpcore.measure.rare_levels`), so the
    chunks and partitions of the recoded set have the law of the recoded whole set."""

    inner: SetDraw
    recode: Callable[[np.ndarray, np.random.Generator], np.ndarray]

    @property
    def n(self) -> int:
        return int(self.inner.n)

    def chunks(self, rng, chunk_rows: int = CHUNK_ROWS) -> Iterator[np.ndarray]:
        for codes in self.inner.chunks(rng, chunk_rows):
            yield self.recode(codes, rng)

    def part(self, k: int, parts: int, seed: int, set_index: int) -> RecodedDraw:
        return RecodedDraw(self.inner.part(k, parts, seed, set_index), self.recode)


#: how a junction-tree model's records are drawn: i.i.d. (:class:`IIDDraw`) or by controlled rounding
SYNTHESIS_DRAWS = ("sample", "round")


def model_draw(model, n: int, synthesis: str, rng: np.random.Generator) -> SetDraw:
    """The set of ``n`` records of a junction-tree model: ``sample``, i.i.d. (:class:`IIDDraw`:
    nothing is drawn now, so releases made before the rounded draw are unchanged); ``round``,
    by controlled rounding (:class:`TreeCountDraw`, its counts rounded now from ``rng``)."""
    if synthesis == "sample":
        return IIDDraw(model, int(n))
    if synthesis == "round":
        return TreeCountDraw.from_model(model, int(n), rng)
    raise ValueError(f"synthesis must be one of {SYNTHESIS_DRAWS}; got {synthesis!r}")


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

    def part(self, k: int, parts: int, seed: int, set_index: int) -> FixedDraw:
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
