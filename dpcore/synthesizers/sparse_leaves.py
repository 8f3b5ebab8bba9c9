"""Sparse leaves: flat Laplace and STEPS' leaf layer without one array entry per cell.

The noise itself (step 1 below) is measured by :mod:`dpcore.measure.leaf_noise`; this module
makes the values consistent and draws the records (steps 2–4), post-processing only.

The argument, step by step, with what is exact and what is not: docs/sparse-leaves.md.

The dense algorithms give every cell u of a leaf block (the whole table for flat
Laplace; the leaf cells under one layer-L node for STEPS) the value c_u + Z_u with
Z_u i.i.d. discrete Laplace (pure ε) or discrete Gaussian ((ε, δ) through zCDP), make the
values consistent, clip at 0 and draw records.
Here only the non-empty cells (at most n) are kept individually. The empty cells of a
block all have c_u = 0, so their noisy values are i.i.d. and, being exchangeable, are
described completely by

1. the **histogram** H_b(k) = #{empty cells u of block b : Z_u = k}, the law of the
   multiset {Z_u}; the assignment of values to cells is a uniformly random
   permutation independent of it. It is drawn exactly (integer randomness only) by
   :meth:`dpcore.privacy.mechanisms.DiscreteLaplace.sample_histogram` or
   :meth:`dpcore.privacy.gaussian.DiscreteGaussian.sample_histogram`
   (:mod:`dpcore.privacy.exact_histogram`); :mod:`dpcore.measure.leaf_noise`.
2. **consistency** on (value, multiplicity) pairs. Every consistency mode acts on a
   leaf block through one number per block: ``wls`` and ``uh`` add the same shift
   δ_b = (n̄_b − Σ_u z_u)/M_b to every leaf of block b (the RTS gain V_u/V_S = 1/M_b
   for equal leaf variances; Hay's equal share of the residual); ``nonneg`` maps
   z_u ↦ max(z_u − μ_b, 0) with one μ_b = λ_b σ² per block (the KKT form of the
   V-weighted projection onto {x ≥ 0, Σx = n̄_b}), found exactly by sorting the
   block's distinct values. The layers above see a block only through
   (Σ_u z_u, M_b σ², M_b), which the histogram gives exactly
   (:func:`block_summaries`).
3. **synthesis** on classes: ``sample`` draws the multinomial over items
   (non-empty cells and value classes with weight multiplicity × value), then each
   record of a class picks one of the class's cells uniformly; ``round`` rounds by
   largest remainder with ties between equal remainders broken uniformly at random
   (as :func:`dpcore.estimate.table.draw_cells` does).
4. **which** empty cells: the cells used by a block's classes are a uniformly random
   injection into the block's empty cells, drawn lazily (rejection sampling of
   uniform cells of the block, skipping non-empty and already chosen ones) only for
   cells that receive records.

Given the histogram, each step reproduces the law of the dense step
(tests/synthesizers/test_sparse_equivalence.py compares the released records). Memory and time
depend on n, the non-empty cells, blocks × histogram width (≈ 2 s ln M + 1 values, or
2σ√(2 ln M) + 1 for the discrete Gaussian) and
the released support, never on the number of cells.

Privacy: nothing new is released; consistency and synthesis are post-processing. The
non-empty cells' noise comes from the exact per-cell sampler and the empty cells' from the
exact histogram sampler, so the sparse path is the dense mechanism as implemented: ε-DP with
discrete Laplace noise, ρ-zCDP with the discrete Gaussian (ledger text
:data:`dpcore.privacy.mechanisms.HISTOGRAM_SAMPLER`).
"""
from __future__ import annotations

import numpy as np

from dpcore.counting.count_table import CountTable, cell_keys, key_codes
from dpcore.data.domain import code_dtype
from dpcore.errors import ResourceError
from dpcore.estimate.consistency import make_consistent, posterior_variances
from dpcore.measure.leaf_noise import (
    HistogramNoise,
    Items,
    noisy_items,
)
from dpcore.synthesizers.hierarchy import record_ranks, slot_values, upper_slot_structure

__all__ = [
    "SPARSE_ABOVE", "MAX_SPARSE_CELLS", "draw_items", "draw_empty_cells", "flat_release", "flat_support",
    "steps_release", "steps_support", "nonneg_shift", "block_summaries", "posterior_variances_blocks",
]

#: Leaf layers (flat: full tables) with more cells than this take the sparse path. Measured
#: in bench/speed/wide_tables.py (bench/RESULTS.md, n = 2000): dense and sparse take the same
#: time at 2^14 cells, sparse is 2.5x faster at 2^16 and 80x at 2^22.
SPARSE_ABOVE = 1 << 16
#: The sparse path counts cells in int64: blocks and leaf layers up to 2^62 cells.
MAX_SPARSE_CELLS = 1 << 62
#: A draw of more records than this (or more empty cells) is done in batches of this many:
#: memory then depends on the items and the cells that get records, not on the output's length
#: (the one-chunk draw of :mod:`dpcore.estimate.draws`, so shorter sets are drawn as before)
DRAW_BATCH = 1_000_000
#: candidate cells made at a time by :func:`draw_empty_cells` (their (rows, p) int64 codes are
#: temporaries; only the candidates' keys, 8 bytes each, are held for the whole round)
CANDIDATE_ROWS = 1 << 16


def block_summaries(items: Items, n_blocks: int) -> np.ndarray:
    """Σ over each block's cells of the values (exact: integer values × multiplicities)."""
    w = np.rint(items.value).astype(np.int64) * items.mult
    out = np.zeros(n_blocks, dtype=np.int64)
    np.add.at(out, items.block, w)
    return out


def nonneg_shift(items: Items, target: np.ndarray, n_blocks: int) -> np.ndarray:
    """μ_b with Σ_{u in b} max(z_u − μ_b, 0) = target_b (items' values z integers, with multiplicity).

    f(μ) = Σ mult (z − μ)^+ is decreasing and piecewise linear; with the block's items
    sorted by decreasing z and C_j, M_j the cumulative Σ mult z and Σ mult, the root is
    μ = (C_j − T)/M_j for the one j with z_{j+1} <= μ < z_j. Blocks with target <= 0
    get μ = +inf (all zero), as the dense projection does.
    """
    mu = np.full(n_blocks, np.inf)
    if not len(items.block):
        return mu
    order = np.lexsort((-items.value, items.block))
    b, z, m = items.block[order], np.rint(items.value[order]).astype(np.int64), items.mult[order]
    cm, cz = np.cumsum(m), np.cumsum(m * z)  # exact int64
    first = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])
    start_of = np.zeros(n_blocks, dtype=np.int64)
    start_of[b[first]] = first
    before = start_of[b]
    Mj = cm - np.where(before > 0, cm[before - 1], 0)
    Cj = cz - np.where(before > 0, cz[before - 1], 0)
    T = np.asarray(target, dtype=float)[b]
    cand = (Cj - T) / Mj
    last = np.r_[b[1:] != b[:-1], True]
    z_next = np.where(last, -np.inf, np.r_[z[1:], 0].astype(float))
    ok = (cand < z) & (cand >= z_next) & (T > 0)
    idx = np.flatnonzero(ok)
    ub, fi = np.unique(b[idx], return_index=True)
    mu[ub] = cand[idx[fi]]
    return mu


def draw_items(x: np.ndarray, mult: np.ndarray, n: int, mode: str, rng: np.random.Generator):
    """Post-processing: n records from items of ``mult`` cells with estimate ``x`` each.

    Returns (item, slot, count): ``count`` records go to cell ``slot`` (0 <= slot < mult)
    of ``item``; slots are distinct within an item. Same law as
    :func:`dpcore.estimate.table.draw_cells` on the expanded cells: ``sample`` is the multinomial
    over cells (grouped by item, then uniform within an item); ``round`` is the
    largest-remainder rounding with ties broken uniformly at random.
    """
    x = np.clip(np.asarray(x, dtype=float), 0, None)
    mult = np.asarray(mult, dtype=np.int64)
    if n <= 0:  # a noisy record count of 0 is an ordinary outcome: no records, no cells
        none = np.zeros(0, dtype=np.int64)
        return none, none, none
    total = float(np.dot(x, mult.astype(float)))
    if total <= 0:
        x = np.ones_like(x)
        total = float(mult.sum())
    if mode == "sample" and n > DRAW_BATCH:
        return _sample_items_batched(rng.multinomial(n, x * mult / total), mult, rng)
    if mode == "sample":
        R = rng.multinomial(n, x * mult / total)
        item = np.repeat(np.arange(len(x)), R)
        single = mult[item] == 1
        slot = np.zeros(len(item), dtype=np.int64)
        many = np.flatnonzero(~single)
        if many.size:
            slot[many] = rng.integers(0, mult[item[many]])  # uniform cell of the class, with replacement
        order = np.lexsort((slot, item))
        item, slot = item[order], slot[order]
        new = np.r_[True, (item[1:] != item[:-1]) | (slot[1:] != slot[:-1])]
        starts = np.flatnonzero(new)
        counts = np.diff(np.r_[starts, len(item)])
        return item[starts], slot[starts], counts.astype(np.int64)
    scaled = x * (n / total)
    f = np.floor(scaled)
    short = n - int(np.dot(f, mult.astype(float)).round())
    extra = np.zeros(len(x), dtype=np.int64)  # cells of each item that get f + 1
    if short > 0:
        r = scaled - f
        order = np.argsort(-r, kind="stable")
        rs, ms = r[order], mult[order]
        grp = np.r_[0, np.cumsum(rs[1:] != rs[:-1])]
        gm = np.bincount(grp, weights=ms.astype(float)).astype(np.int64)
        cum = np.cumsum(gm)
        cut = int(np.searchsorted(cum, short))  # first group that cannot be taken whole
        full = grp < cut
        extra[order[full]] = ms[full]
        need = short - (int(cum[cut - 1]) if cut > 0 else 0)
        if need > 0:
            sel = np.flatnonzero(grp == cut)
            # uniform choice of `need` cells among the tied group's cells
            extra[order[sel]] = rng.multivariate_hypergeometric(ms[sel], need, method="marginals")
    fi = f.astype(np.int64)
    used = np.where(fi > 0, mult, extra)  # all cells of an item with f >= 1 (then mult*f <= n)
    item = np.repeat(np.arange(len(x)), used)
    slot = np.arange(len(item)) - np.repeat(np.cumsum(used) - used, used)
    counts = fi[item] + (slot < extra[item])
    keep = counts > 0
    return item[keep], slot[keep], counts[keep].astype(np.int64)


def _sample_items_batched(R: np.ndarray, mult: np.ndarray, rng: np.random.Generator):
    """:func:`draw_items`' ``sample`` step for a long output, without one entry per record: a
    single-cell item's R_i records all go to its cell; each record of a class picks a uniform
    cell (slot) of the class, drawn :data:`DRAW_BATCH` records at a time and counted per slot.
    The same law as the one-pass draw (each record's slot uniform and independent); memory
    O(items + distinct slots + batch)."""
    R = np.asarray(R, dtype=np.int64)
    single = (mult == 1) & (R > 0)
    items, slots, counts = [np.flatnonzero(single)], [np.zeros(int(single.sum()), np.int64)], [R[single]]
    many = np.flatnonzero((mult > 1) & (R > 0))
    Rm = R[many]
    end = np.cumsum(Rm)  # the classes' records, numbered in class order: class j holds [end_j − R_j, end_j)
    start = end - Rm
    total = int(end[-1]) if len(end) else 0
    for a in range(0, total, DRAW_BATCH):
        b = min(a + DRAW_BATCH, total)
        lo, hi = int(np.searchsorted(end, a, side="right")), int(np.searchsorted(end, b - 1, side="right"))
        per = np.minimum(end[lo:hi + 1], b) - np.maximum(start[lo:hi + 1], a)
        item = np.repeat(many[lo:hi + 1], per)
        slot = rng.integers(0, mult[item])  # uniform cell of the class, with replacement
        key = np.lexsort((slot, item))
        item, slot = item[key], slot[key]
        new = np.r_[True, (item[1:] != item[:-1]) | (slot[1:] != slot[:-1])]
        starts = np.flatnonzero(new)
        items.append(item[starts])
        slots.append(slot[starts])
        counts.append(np.diff(np.r_[starts, len(item)]))
    item, slot, count = (np.concatenate(a).astype(np.int64) for a in (items, slots, counts))
    # a (item, slot) met in two batches is one cell: merge, in (item, slot) order as the one-pass draw
    key = np.lexsort((slot, item))
    item, slot, count = item[key], slot[key], count[key]
    new = np.r_[True, (item[1:] != item[:-1]) | (slot[1:] != slot[:-1])] if len(item) else np.zeros(0, bool)
    starts = np.flatnonzero(new)
    return item[starts], slot[starts], np.add.reduceat(count, starts) if len(starts) else count[:0]


def draw_empty_cells(block: np.ndarray, fixed: np.ndarray, shape, exclude: np.ndarray, n_cells: np.ndarray,
                     n_empty: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Codes (len(block), p) of distinct uniformly random empty cells, one per request.

    Request i wants an empty cell of block ``block[i]``, whose cells are those with the
    codes ``fixed[b]`` (−1 = free attribute); ``exclude`` are the sorted keys
    (:func:`dpcore.counting.count_table.cell_keys`) of the non-empty cells. Cells are drawn uniformly
    from the block and rejected when non-empty or already taken, so the accepted ones
    are a uniformly random ordered sample without replacement of the block's empty
    cells; they are handed to the requests in order.
    """
    block = np.asarray(block, dtype=np.int64)
    shape_arr = np.asarray(shape, dtype=np.int64)
    p = len(shape_arr)
    out = np.empty((len(block), p), dtype=np.int64)
    if not len(block):
        return out
    order = np.argsort(block, kind="stable")
    ub, first, want = np.unique(block[order], return_index=True, return_counts=True)
    got = np.zeros(len(ub), dtype=np.int64)
    taken_keys = exclude[:0]
    frac = (n_empty[ub] / n_cells[ub].astype(float))
    for _ in range(10_000):
        need = want - got
        act = np.flatnonzero(need > 0)
        if not act.size:
            break
        # candidates per block: enough to expect `need` acceptances, given the empty share
        cand = np.minimum(np.ceil(need[act] / np.maximum(frac[act], 1e-12) * 1.25) + 8, 4_000_000).astype(np.int64)
        cb = np.repeat(act, cand)
        keys = _candidate_keys(fixed, ub[cb], shape_arr, rng)
        ok = ~_isin_sorted(keys, exclude)
        if len(taken_keys):
            ok &= ~np.isin(keys, taken_keys)
        # first occurrence of each key within this round
        _, fidx = np.unique(keys, return_index=True)
        firsts = np.zeros(len(keys), dtype=bool)
        firsts[fidx] = True
        ok &= firsts
        idx = np.flatnonzero(ok)
        # keep at most need[b] per block, in draw order
        rank = np.arange(len(idx)) - np.searchsorted(cb[idx], cb[idx], side="left")
        idx = idx[rank < need[cb[idx]]]
        bsel = cb[idx]
        pos = first[bsel] + got[bsel] + (np.arange(len(idx)) - np.searchsorted(bsel, bsel, side="left"))
        out[order[pos]] = key_codes(keys[idx], shape)  # the accepted candidates' codes (keys are one-to-one)
        np.add.at(got, bsel, 1)
        taken_keys = np.concatenate([taken_keys, keys[idx]])
    else:  # pragma: no cover - would need an astronomically unlucky draw
        raise RuntimeError("could not draw enough distinct empty cells")
    return out


def _candidate_keys(fixed: np.ndarray, blocks: np.ndarray, shape_arr: np.ndarray, rng) -> np.ndarray:
    """Keys of uniformly random cells of the blocks ``blocks`` (one candidate each): the block's
    fixed codes, its free attributes (−1) drawn uniformly. Made ``CANDIDATE_ROWS`` at a time: the
    draws are element by element in row order, so the stream and the cells are those of one
    (len(blocks), p) draw, without its (len(blocks), p) int64 arrays."""
    shape = tuple(int(d) for d in shape_arr)
    parts = []
    for start in range(0, max(len(blocks), 1), CANDIDATE_ROWS):  # one empty draw when there is none
        rows = fixed[blocks[start:start + CANDIDATE_ROWS]]  # a copy (fancy indexing)
        free = rows < 0
        U = rng.integers(0, np.broadcast_to(shape_arr, rows.shape))
        rows[free] = U[free]
        parts.append(cell_keys(rows, shape))
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


def _isin_sorted(keys: np.ndarray, sorted_keys: np.ndarray) -> np.ndarray:
    if not len(sorted_keys):
        return np.zeros(len(keys), dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return sorted_keys[pos] == keys


def flat_release(table: CountTable, mech: HistogramNoise, n_out: int, rng: np.random.Generator, *,
                 prior: float = 0.0, synthesis: str = "sample", structural_zeros=()) -> np.ndarray:
    """:func:`flat_support`'s records (n_out, p), in random order (the set as one chunk)."""
    return _shuffled(*flat_support(table, mech, n_out, rng, prior=prior, synthesis=synthesis,
                                   structural_zeros=structural_zeros), rng)


def flat_support(table: CountTable, mech: HistogramNoise, n_out: int, rng: np.random.Generator, *,
                 prior: float = 0.0, synthesis: str = "sample", structural_zeros=()) -> tuple[np.ndarray, np.ndarray]:
    """Flat Laplace on the full cross-tabulation, sparse (one block: the table): the dense law
    (module docstring).

    Dense: noisy_u = c_u + Z_u + α/live for live cells, 0 for structural zeros; clip,
    draw ``n_out`` records. Returns the distinct cells that get records (codes, compact) and their
    counts (the set before its records exist; :func:`flat_release` shuffles them). ``structural_zeros``: codes
    (z, p) of cells that stay 0; they are excluded from the empty-cell pool.
    """
    cells = table.cells
    if cells > MAX_SPARSE_CELLS:
        raise ResourceError(
            f"the full cross-tabulation has about 10^{len(str(cells)) - 1} cells, beyond the sparse limit 2^62; "
            "use method='steps' with more layers, 'privbayes', or fewer / coarser attributes"
        )
    zeros = np.asarray(structural_zeros, dtype=np.int64).reshape(-1, len(table.shape))
    zkeys = np.unique(cell_keys(zeros, table.shape)) if len(zeros) else table.keys[:0]
    zero_ne = _isin_sorted(table.keys, zkeys)
    n_zero_empty = len(zkeys) - int(zero_ne.sum())
    live = cells - len(zkeys)
    n_cells = np.array([cells - n_zero_empty], dtype=np.int64)  # the pool excludes empty structural zeros
    items = noisy_items(np.zeros(table.nonempty, np.int64), table.counts, n_cells, mech, rng)
    x = items.value + (prior / live if live > 0 else 0.0)
    x[: table.nonempty][zero_ne] = 0.0
    exclude = np.union1d(table.keys, zkeys) if len(zkeys) else table.keys
    fixed = np.full((1, len(table.shape)), -1, dtype=np.int64)
    n_empty = n_cells - table.nonempty
    return _support(items, x, table, fixed, n_cells, n_empty, exclude, n_out, synthesis, rng)


def _support(items: Items, x: np.ndarray, table: CountTable, fixed: np.ndarray, n_cells, n_empty,
             exclude: np.ndarray, n_out: int, mode: str, rng) -> tuple[np.ndarray, np.ndarray]:
    """The released set from consistent item values ``x``, before its records exist: the distinct
    cells that get records (codes, compact) and their record counts. Post-processing."""
    item, slot, count = draw_items(x, items.mult, n_out, mode, rng)
    rows = items.row[item]
    codes = np.empty((len(item), len(table.shape)), dtype=code_dtype(table.shape))
    ne = rows >= 0
    codes[ne] = table.codes[rows[ne]]
    empty = np.flatnonzero(~ne)
    taken = exclude[:0]
    for start in range(0, max(len(empty), 1), DRAW_BATCH):  # one batch unless very many empty cells get records
        part = empty[start:start + DRAW_BATCH]
        blocks = items.block[item[part]]
        left = n_empty - np.bincount(items.block[item[empty[:start]]], minlength=len(n_empty)) if start else n_empty
        got = draw_empty_cells(blocks, fixed, table.shape, np.union1d(exclude, taken) if start else exclude,
                               n_cells, left, rng)
        codes[part] = got
        if start + DRAW_BATCH < len(empty):
            taken = np.concatenate([taken, cell_keys(got, table.shape)])
    return codes, count.astype(np.int64)


def _shuffled(codes: np.ndarray, count: np.ndarray, rng) -> np.ndarray:
    """The records (int64 codes) of a support, in random order: each cell repeated by its count, shuffled
    in place (the draws of ``rec[rng.permutation(len(rec))]`` without a second n × p copy)."""
    rec = np.repeat(codes.astype(np.int64), count, axis=0)
    rng.shuffle(rec)
    return rec


def steps_release(tree, table: CountTable, layers: list, ledger, n_out: int, consistency: str, synthesis: str,
                  rng: np.random.Generator) -> np.ndarray:
    """:func:`steps_support`'s records (n_out, p), in random order (the set as one chunk)."""
    return _shuffled(*steps_support(tree, table, layers, ledger, n_out, consistency, synthesis, rng), rng)


def steps_support(tree, table: CountTable, layers: list, ledger, n_out: int, consistency: str, synthesis: str,
                  rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One STEPS set from a built tree with a leaf layer, without materialising leaf cells.

    ``layers[k]`` is the count measurement of layer k (1..L) and ``layers[-1]`` the leaf
    layer's (:func:`dpcore.synthesizers.steps.layer_measurements`), each charged to
    ``ledger`` as it draws; the root is ``n_out``. Layers
    1..L are noised and made consistent as in the dense path, with each leaf block b
    standing in as one pseudo-leaf carrying its exact summaries (Σ_u z_u, M_b σ², and
    for ``uh`` the fan-out M_b): those are all the layers above see of a block
    (module docstring, step 2). Returns the distinct cells that get records (codes, compact)
    and their record counts: the set before its records exist (:func:`steps_release` shuffles them).

    Privacy: the dense path's noise (the empty leaf cells' drawn as their exact histogram;
    module docstring); everything after the noise is post-processing of noisy counts and
    public structure.
    """
    n_cells = np.diff(tree.leaf_offsets).astype(np.int64)
    if int(tree.leaf_offsets[-1]) > MAX_SPARSE_CELLS:
        raise ResourceError("the leaf layer has more than 2^62 cells; use more layers or fewer attributes")
    B = len(n_cells)
    ranks = record_ranks(tree, table.codes)
    noisy, var = [np.array([float(n_out)])], [np.zeros(1)]
    for k in range(1, tree.L + 1):
        counts = np.bincount(ranks[k], weights=table.counts, minlength=tree.layers[k].n_real).astype(np.int64)
        noisy.append(layers[k].release(ledger, counts, rng).astype(float))
        var.append(np.full(tree.layers[k].n_real, layers[k].mechanism.variance))
    leaf = layers[-1].mechanism
    block_of_row = ranks[-1]
    # one charge for every leaf cell: non-empty cells noised one by one, empty ones as a histogram
    items = layers[-1].draw(ledger, lambda: noisy_items(block_of_row, table.counts, n_cells, leaf, rng))
    S = block_summaries(items, B)
    parents, phantom = upper_slot_structure(tree)
    last = tree.layers[-1]
    parents.append(last.real_slots)  # one pseudo-leaf per block
    phantom.append(np.zeros(B, dtype=bool))
    values = slot_values(tree, noisy, S.astype(float))
    variances = slot_values(tree, var, n_cells.astype(float) * leaf.variance)
    fanout = [None] * tree.L + [np.zeros(last.n_slots), None]
    fanout[tree.L][last.real_slots] = n_cells
    nbar = make_consistent(parents, values, variances, phantom, consistency, fanout=fanout)
    target = nbar[tree.L][last.real_slots]
    if consistency == "nonneg":
        mu = nonneg_shift(items, target, B)
        x = np.maximum(items.value - mu[items.block], 0.0)
    else:  # wls (RTS gain 1/M_b) and uh (equal share of the residual): one shift per block
        x = items.value + ((target - S) / n_cells)[items.block]
    nonempty = np.bincount(block_of_row, minlength=B)
    return _support(items, x, table, last.fixed, n_cells, n_cells - nonempty, table.keys, n_out, synthesis, rng)


def posterior_variances_blocks(tree, real_var: list, leaf_variance: float) -> list:
    """:func:`dpcore.estimate.consistency.posterior_variances` for a tree whose leaf layer is too big to list.

    Layers 0..L as in the dense call (each block as one pseudo-leaf of variance M_b σ²);
    the last entry is (P_b, M_b): every leaf of block b has the RTS variance
    P = σ² + (P_v − M_b σ²)/M_b² (gain 1/M_b), P_v its layer-L node's.
    """
    M = np.diff(tree.leaf_offsets).astype(float)
    parents, _ = upper_slot_structure(tree)
    last = tree.layers[-1]
    parents.append(last.real_slots)
    post = posterior_variances(parents, slot_values(tree, real_var, M * leaf_variance))
    Pv = post[tree.L][last.real_slots]
    return post[:-1] + [(leaf_variance + (Pv - M * leaf_variance) / M**2, M)]
