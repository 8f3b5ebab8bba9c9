"""The STEPS attribute hierarchy, kept as per-layer numpy arrays (docs/methods/steps.md).

Layer 0 is the root. A real node of layer k < L is split by a group of attributes
into one child per combination of their levels; every node of layer L gets, as
children, the cells of the cross-tabulation of its remaining attributes (the leaf
layer L+1). Real nodes of a layer are ordered lexicographically by
(parent rank, child code), so a record's node in layer k+1 is
``child_start[rank_k] + code``: no Python object per node, no loop over cells.

Phantom padding: with b the largest fan-out of the partition layers, each
partition node is padded with phantom children up to b. Phantoms are publicly
empty, never noised, never given subtrees and never output; they only exist in the
padded *slot* layout handed to the consistency step (slot = parent_rank·b + code).

Privacy: building the tree with a ``chooser`` that reads data is private only if
the chooser is (see :mod:`dpcore.synthesizers.steps`); this module spends nothing
itself. :func:`count_nodes` returns TRUE counts: curator-only, never released.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from dpcore.counting.rows import rows, weighted_count
from dpcore.errors import ResourceError
from dpcore.synthesizers.cells import BYTES_PER_LEAF_CELL, DEFAULT_MAX_CELLS, big_count

# (k, fixed_real (nr, p), record_rank (n,)) -> split id per real node, into `splits`
Chooser = Callable[[int, np.ndarray, np.ndarray], np.ndarray]



@dataclass(frozen=True)
class Layer:
    """Real nodes of one layer, in rank order, plus their padded slot layout."""

    fixed: np.ndarray  # (nr, p) level fixed on the path to the node, -1 if free
    split: np.ndarray  # (nr,) index into tree.splits; -1 at layer L
    child_start: np.ndarray  # (nr,) rank of the first real child in the next layer
    parent_rank: np.ndarray  # (nr,) rank of the parent in the previous layer (0 at the root)
    code: np.ndarray  # (nr,) child code within the parent
    n_slots: int  # real + phantom slots after padding
    real_slots: np.ndarray  # (nr,) slot of each real node

    @property
    def n_real(self) -> int:
        return len(self.fixed)

    @property
    def n_phantom(self) -> int:
        return self.n_slots - self.n_real


@dataclass(frozen=True)
class PhantomPaddedTree:
    """A hierarchy over attributes with phantom padding to a common fan-out ``b``."""

    names: tuple[str, ...]
    shape: tuple[int, ...]
    splits: tuple[tuple[int, ...], ...]
    layers: tuple[Layer, ...]  # layers 0..L
    b: int
    leaf_offsets: np.ndarray  # (nr_L + 1,) start of each layer-L node's leaf cells
    leaf_group: np.ndarray  # (nr_L,) index into `remaining`
    remaining: tuple[tuple[int, ...], ...]

    @property
    def L(self) -> int:
        return len(self.layers) - 1

    @property
    def has_leaf_layer(self) -> bool:
        return any(len(r) > 0 for r in self.remaining)

    @property
    def n_leaves(self) -> int:
        return int(self.leaf_offsets[-1])

    def layer_sizes(self) -> list[dict]:
        """Real and phantom nodes per noised layer (1..L, then the leaf layer)."""
        out = [{"layer": k, "real": lay.n_real, "phantom": lay.n_phantom} for k, lay in enumerate(self.layers) if k > 0]
        if self.has_leaf_layer:
            out.append({"layer": self.L + 1, "real": self.n_leaves, "phantom": 0})
        return out

    def split_names(self, split_id: int) -> tuple[str, ...]:
        return tuple(self.names[j] for j in self.splits[split_id])

    def attributes_per_layer(self) -> list[dict]:
        """For each partition layer 0..L-1, how many nodes split on each attribute group."""
        out = []
        for k, lay in enumerate(self.layers[:-1]):
            ids, cnt = np.unique(lay.split, return_counts=True)
            out.append({"layer": k, "splits": {",".join(self.split_names(i)): int(c) for i, c in zip(ids, cnt)}})
        return out

    def describe(self) -> dict:
        """JSON-ready structure: per layer, each node's path and split attributes (no counts)."""
        layers = []
        for k, lay in enumerate(self.layers[:-1]):
            nodes = []
            for r in range(lay.n_real):
                path = {self.names[j]: int(v) for j, v in enumerate(lay.fixed[r]) if v >= 0}
                nodes.append({"path": path, "split": list(self.split_names(int(lay.split[r])))})
            layers.append({"layer": k, "nodes": nodes})
        return {
            "layers": layers,
            "fan_out": self.b,
            "layer_sizes": self.layer_sizes(),
            "leaf_attributes": sorted({",".join(self.names[j] for j in r) for r in self.remaining if r}),
        }


def _ravel(X: np.ndarray, attrs: Sequence[int], shape: Sequence[int]) -> np.ndarray:
    if not attrs:
        return np.zeros(len(X), dtype=np.int64)
    return np.ravel_multi_index(tuple(X[:, j] for j in attrs), tuple(shape[j] for j in attrs)).astype(np.int64)


def _fanout(split: tuple[int, ...], shape) -> int:
    return math.prod(shape[j] for j in split)


def build_tree(
    X: np.ndarray,
    shape: Sequence[int],
    names: Sequence[str],
    L: int,
    chooser: Callable[[int, np.ndarray, np.ndarray], list[tuple[int, ...]]],
    max_cells: int = DEFAULT_MAX_CELLS,
) -> PhantomPaddedTree:
    """Grow the hierarchy layer by layer.

    ``chooser(k, fixed_real, record_rank)`` returns, for each real node of layer k,
    the tuple of attribute indices that splits it. ``record_rank`` is each record's
    real node in layer k, so a data-driven chooser can count within nodes. ``X`` may be the
    non-empty cells of a count table: the tree depends only on which rows exist, and a
    chooser weights its counts by the cells' counts.
    Refuses (:class:`ResourceError`) before allocating a leaf layer above ``max_cells``.
    """
    shape = tuple(int(s) for s in shape)
    p = len(shape)
    n = len(X)
    split_ids: dict[tuple[int, ...], int] = {}
    fixed = np.full((1, p), -1, dtype=np.int64)
    parent_rank = np.zeros(1, dtype=np.int64)
    code = np.zeros(1, dtype=np.int64)
    rank = np.zeros(n, dtype=np.int64)
    raw = []  # (fixed, split, child_start, parent_rank, code) per layer
    for k in range(L):
        chosen = chooser(k, fixed, rank)
        split = np.array([split_ids.setdefault(tuple(s), len(split_ids)) for s in chosen], dtype=np.int64)
        splits = tuple(sorted(split_ids, key=split_ids.__getitem__))
        fan = np.array([_fanout(splits[s], shape) for s in split], dtype=np.int64)
        child_start = np.concatenate([[0], np.cumsum(fan)[:-1]]).astype(np.int64)
        # records move to their child: child_start[rank] + code of their values on the node's split
        rec_split = split[rank]
        rec_code = np.zeros(n, dtype=np.int64)
        for s in np.unique(rec_split):
            sel = rec_split == s
            rec_code[sel] = _ravel(X[sel], splits[s], shape)
        new_rank = child_start[rank] + rec_code
        # children's fixed values, grouped by split so each group is one unravel
        nxt_parent = np.repeat(np.arange(len(fixed)), fan)
        nxt_code = np.arange(int(fan.sum())) - np.repeat(child_start, fan)
        nxt_fixed = fixed[nxt_parent].copy()
        for s in np.unique(split):
            sel = split[nxt_parent] == s
            attrs = splits[s]
            vals = np.unravel_index(nxt_code[sel], tuple(shape[j] for j in attrs))
            for j, v in zip(attrs, vals):
                nxt_fixed[np.flatnonzero(sel), j] = v
        raw.append((fixed, split, child_start, parent_rank, code))
        fixed, parent_rank, code, rank = nxt_fixed, nxt_parent, nxt_code, new_rank
    raw.append((fixed, np.full(len(fixed), -1, np.int64), np.zeros(len(fixed), np.int64), parent_rank, code))
    splits = tuple(sorted(split_ids, key=split_ids.__getitem__))

    b = max([_fanout(s, shape) for s in splits] or [1])
    layers = []
    for k, (fx, sp, cs, pr, cd) in enumerate(raw):
        if k == 0:
            n_slots, real_slots = 1, np.zeros(1, dtype=np.int64)
        else:
            n_slots = raw[k - 1][0].shape[0] * b
            real_slots = pr * b + cd
        layers.append(Layer(fx, sp, cs, pr, cd, n_slots, real_slots))

    remaining, leaf_group, offsets = _leaf_layer(fixed, shape, names, max_cells)
    return PhantomPaddedTree(tuple(names), shape, splits, tuple(layers), b, offsets,
                             leaf_group.astype(np.int64), remaining)


def _leaf_layer(fixed: np.ndarray, shape: tuple[int, ...], names: Sequence[str], max_cells: int):
    """The leaf layer: the cells of the remaining attributes under each layer-L node.

    Returns (the remaining attributes per group, each node's group, the leaf offsets);
    refuses (:class:`ResourceError`) before allocating more than ``max_cells`` cells.
    """
    free = fixed < 0
    groups, leaf_group = np.unique(free, axis=0, return_inverse=True)
    remaining = tuple(tuple(int(j) for j in np.flatnonzero(g)) for g in groups)
    sizes = np.array([math.prod(shape[j] for j in r) for r in remaining], dtype=object)
    total = int(sum(sizes[leaf_group.ravel()])) if len(fixed) else 0
    if total > max_cells:
        raise ResourceError(
            f"the leaf layer would have {big_count(total)} cells (limit {max_cells:,}, about "
            f"{big_count(total * BYTES_PER_LEAF_CELL // 2**30).removeprefix('about ')} GB); drop attributes with many "
            f"levels ({', '.join(_largest(names, shape))}) or coarsen their bins"
        )
    leaf_sizes = np.array([int(sizes[g]) for g in leaf_group.ravel()], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(leaf_sizes)]).astype(np.int64)
    return remaining, leaf_group.ravel(), offsets


def _largest(names, shape, k: int = 3) -> list[str]:
    order = np.argsort(shape)[::-1][:k]
    return [f"{names[j]} ({shape[j]} levels)" for j in order]


def estimate_cells(shape: Sequence[int]) -> int:
    """Cells of the full cross-tabulation = cells of any full-depth leaf layer (exact int)."""
    return math.prod(int(s) for s in shape)


def record_ranks(tree: PhantomPaddedTree, X: np.ndarray) -> list[np.ndarray]:
    """Each record's real-node rank in layers 0..L (TRUE data: curator-only)."""
    n = len(X)
    rank = np.zeros(n, dtype=np.int64)
    out = [rank]
    for k in range(tree.L):
        lay = tree.layers[k]
        rec_split = lay.split[rank]
        code = np.zeros(n, dtype=np.int64)
        for s in np.unique(rec_split):
            sel = rec_split == s
            code[sel] = _ravel(X[sel], tree.splits[s], tree.shape)
        rank = lay.child_start[rank] + code
        out.append(rank)
    return out


def leaf_index(tree: PhantomPaddedTree, X: np.ndarray, rank_L: np.ndarray) -> np.ndarray:
    """Each record's leaf cell (flat index into the leaf layer)."""
    grp = tree.leaf_group[rank_L]
    within = np.zeros(len(X), dtype=np.int64)
    for g in np.unique(grp):
        sel = grp == g
        within[sel] = _ravel(X[sel], tree.remaining[g], tree.shape)
    return tree.leaf_offsets[rank_L] + within


def count_nodes(tree: PhantomPaddedTree, X) -> tuple[list[np.ndarray], np.ndarray | None]:
    """TRUE counts of the real nodes of layers 0..L and of the leaf cells (None without a leaf layer), from records
    (n, p) or their :class:`dpcore.counting.count_table.CountTable` (cells weighted by their counts).

    Privacy: these are raw counts (ε = ∞). They must be noised before release; the
    app may show them to the curator only, labelled "not for release".
    """
    X, w, _ = rows(X)
    ranks = record_ranks(tree, X)
    counts = [weighted_count(r, w, tree.layers[k].n_real) for k, r in enumerate(ranks)]
    leaves = weighted_count(leaf_index(tree, X, ranks[-1]), w, tree.n_leaves) if tree.has_leaf_layer else None
    return counts, leaves


def leaf_codes(tree: PhantomPaddedTree, cells: np.ndarray) -> np.ndarray:
    """Attribute codes (len(cells), p) of leaf cells (or of layer-L nodes when there is no leaf layer)."""
    cells = np.asarray(cells, dtype=np.int64)
    last = tree.layers[-1]
    if not tree.has_leaf_layer:
        return last.fixed[cells].copy()
    node = np.searchsorted(tree.leaf_offsets, cells, side="right") - 1
    out = last.fixed[node].copy()
    within = cells - tree.leaf_offsets[node]
    grp = tree.leaf_group[node]
    for g in np.unique(grp):
        sel = np.flatnonzero(grp == g)
        attrs = tree.remaining[g]
        vals = np.unravel_index(within[sel], tuple(tree.shape[j] for j in attrs))
        for j, v in zip(attrs, vals):
            out[sel, j] = v
    return out


def upper_slot_structure(tree: PhantomPaddedTree):
    """Parents and phantom masks of the padded slot layout of layers 0..L (without the leaf layer;
    the sparse leaf layer, :mod:`dpcore.synthesizers.sparse_leaves`, stands a block in for its leaves)."""
    slots = sum(int(lay.n_slots) for lay in tree.layers)
    if slots > DEFAULT_MAX_CELLS:  # b^k padded slots per layer: a layer of many levels makes them explode
        raise ResourceError(
            f"the hierarchy's padded layers would have {big_count(slots)} slots (limit {DEFAULT_MAX_CELLS:,}; "
            f"branching b = {tree.b:,}); put the attributes with many levels in the last layer, drop them, or "
            "coarsen their bins"
        )
    parents: list[np.ndarray | None] = [None]  # the root has no parent
    phantom: list[np.ndarray] = []
    for k, lay in enumerate(tree.layers):
        ph = np.ones(lay.n_slots, dtype=bool)
        ph[lay.real_slots] = False
        phantom.append(ph)
        if k > 0:
            parents.append(tree.layers[k - 1].real_slots[np.arange(lay.n_slots) // tree.b])
    return parents, phantom


def slot_structure(tree: PhantomPaddedTree):
    """Parents and phantom masks of the padded slot layout, layers 0..L(+1).

    Slot s of layer k has as parent the real node of rank s // b in layer k-1;
    leaf cells hang under their layer-L node. Built once per tree.
    """
    parents, phantom = upper_slot_structure(tree)
    if tree.has_leaf_layer:
        parents.append(np.repeat(tree.layers[-1].real_slots, np.diff(tree.leaf_offsets)))
        phantom.append(np.zeros(tree.n_leaves, dtype=bool))
    return parents, phantom


def slot_values(tree: PhantomPaddedTree, real_values: list[np.ndarray], leaf_values, fill: float = 0.0) -> list:
    """Scatter per-real-node values (and the leaf values) into the slot layout; phantoms get ``fill``."""
    values = []
    for k, lay in enumerate(tree.layers):
        v = np.full(lay.n_slots, fill, dtype=float)
        v[lay.real_slots] = real_values[k]
        values.append(v)
    if tree.has_leaf_layer:
        values.append(np.asarray(leaf_values, dtype=float))
    return values


def slot_arrays(tree: PhantomPaddedTree, real_values: list[np.ndarray], leaf_values, fill: float = 0.0):
    """(parents, values, phantom) per layer: :func:`slot_structure` plus :func:`slot_values`."""
    parents, phantom = slot_structure(tree)
    return parents, slot_values(tree, real_values, leaf_values, fill), phantom
