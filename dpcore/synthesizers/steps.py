"""STEPS: Statistical Election to Partition Sequentially (Bowen & Liu 2018/2021; docs/methods/steps.md).

One synthetic set, at budget ε/m:

1. choose the tree: a fixed order (0 spent); or, at each layer k < L, for every
   real node, one attribute by the exponential mechanism over a utility u
   (MoSDA: u, LeSDA: −u) at ε_sel = rε/(m·L_sel) with Δu from
   :mod:`dpcore.measure.selection`; or uniformly at random (0 spent, data-independent);
   or by non-private argmax (0 spent, NOT DP, flagged);
2. noise every real node count of layers 1..L and every leaf cell with
   discrete Laplace of scale Δ/ε_l, ε_l = c_l(1−r)ε/m (one record is in exactly one
   node per layer: Δ = 1 under add/remove, 2 under replace); phantoms are not
   noised and the root is the released record count;
3. make the counts consistent (post-processing, free);
4. draw n records (``sample``) or round the leaves (``round``) (post-processing): the leaf
   counts are drawn at once and the records dealt in chunks (:mod:`dpcore.estimate.draws`).

Privacy: nodes within a layer are disjoint, so each layer costs its ε once
(parallel composition); layers and selection compose sequentially and adaptively,
totalling rε/m + (1−r)ε/m = ε/m per set and ε over the m sets (sequential
composition). The domain is public; the root is the noisy record count released
by :func:`dpcore.api.release_record_count` (or n, public under replace). Only
selected attributes, noisy counts and their post-processing leave this module.
Proof: docs/methods/steps.md.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpcore.counting.count_table import CountTable
from dpcore.counting.rows import rows as count_rows
from dpcore.counting.rows import weighted_count
from dpcore.data.domain import Domain
from dpcore.estimate.consistency import make_consistent, posterior_variances
from dpcore.estimate.draws import CellDraw, cell_draw
from dpcore.estimate.table import cell_counts
from dpcore.measure import leaf_noise
from dpcore.measure.selection import sensitivity as utility_sensitivity
from dpcore.measure.selection import utility as utility_scores
from dpcore.privacy.definitions import PureDP, ReleaseContext, ZeroConcentratedDP
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.measurement import Measurement, record_unpaid
from dpcore.privacy.mechanisms import HISTOGRAM_SAMPLER, exponential_mechanism, noise_for
from dpcore.privacy.neighbours import Neighbours
from dpcore.synthesizers import hierarchy as H
from dpcore.synthesizers import sparse_leaves
from dpcore.synthesizers.allocation import Allocation, allocate_budget
from dpcore.synthesizers.cells import big_count
from dpcore.synthesizers.empty_share import NoiseRow, noise_row, typical_cells
from dpcore.synthesizers.options import PRIVATE_SELECTIONS, StepsOptions

#: What the method does, in one or two plain sentences (the Design page and the method adviser).
SUMMARY = (
    "Splits the table into a tree of attributes (layers) and adds noise to every node's count; "
    "its last layer holds every cell of the full table, so on tables with many cells per record "
    "most of that layer's counts are noise."
)


def n_selection_layers(opts: StepsOptions, p: int) -> int:
    """Layers whose split is a real (non-forced) private choice: min(L, p−1)."""
    return min(opts.layers, p - 1) if opts.select in PRIVATE_SELECTIONS else 0


def plan_allocation(opts: StepsOptions, p: int, epsilon: float, m: int) -> Allocation:
    n_partition, has_leaf = noised_layers(opts.layers, opts.order, p)
    return allocate_budget(epsilon, m, opts.r, n_selection_layers(opts, p), n_partition, has_leaf, opts.allocation)


def noised_layers(layers: int, order, p: int) -> tuple[int, bool]:
    """(partition layers, whether a leaf layer follows) for L layers or a fixed order over p attributes.

    A leaf layer exists when attributes remain after the partition layers. Needs no
    data: the app uses it to size custom allocation weights before any preview.
    """
    if order is not None:
        used = sum(len(g) for g in order)
        return len(order), used < p
    return int(layers), int(layers) < p


def _scores(X, shape, fixed, rank, kind, weights=None) -> np.ndarray:
    """u_j(v) for every real node v (rows) and attribute j (columns); −inf where j is used on v's path.

    ``X``: rows of codes (records, or a count table's cells with their counts as ``weights``);
    ``rank``: each row's real node."""
    nr, p = fixed.shape
    out = np.full((nr, p), -np.inf)
    avail = fixed < 0
    for j in np.flatnonzero(avail.any(axis=0)):
        k = shape[j]
        counts = weighted_count(rank * k + X[:, j], weights, nr * k).reshape(nr, k)
        u = utility_scores(counts, kind)
        out[avail[:, j], j] = u[avail[:, j]]
    return out


@dataclass
class Selector:
    """The ``chooser`` for :func:`dpcore.synthesizers.hierarchy.build_tree`; records what it spends.

    ``mode="preview"`` takes the most likely split and keeps each node's selection
    probabilities (curator-only: they are computed from the raw data). ``X``: records (n, p)
    or their :class:`dpcore.counting.count_table.CountTable`; the tree is then built on :attr:`rows`
    (the table's non-empty cells) and every count is weighted by the cells' counts.
    """

    opts: StepsOptions
    X: np.ndarray
    shape: tuple
    names: tuple
    alloc: Allocation | None
    rng: np.random.Generator | None
    mode: str = "release"
    neighbours: Neighbours = Neighbours()
    #: release mode: the ledger group every selection is charged to, before it draws
    ledger: Ledger | None = None
    #: the privacy definition the selection budgets are in (ε, or ρ under zCDP)
    definition: PureDP | ZeroConcentratedDP = PureDP()

    def __post_init__(self):
        self.spent: list[dict] = []
        self.probabilities: list[dict] = []
        # add/remove: n is private, so the bound uses the public max_records; the same
        # formulas bound replace-one changes with n public (docs/methods/steps.md)
        self.rows, self.weights, n = count_rows(self.X)
        # the sensitivity of the MoSDA/LeSDA score (a utility's, not the δ of (ε, δ))
        self.score_sensitivity = utility_sensitivity(self.opts.utility, self.neighbours.records_bound(n),
                                                     max(self.shape))

    def __call__(self, k: int, fixed: np.ndarray, rank: np.ndarray) -> list[tuple[int, ...]]:
        o = self.opts
        if o.select == "user":
            assert o.order is not None  # the options give select="user" only with an order
            return [tuple(self.names.index(a) for a in o.order[k])] * len(fixed)
        avail = fixed < 0
        if avail.sum(axis=1).max() <= 1:  # forced: a single attribute remains
            return [(int(np.flatnonzero(row)[0]),) for row in avail]
        if o.select == "random":
            # uniform over available attributes: the exponential mechanism with a constant utility
            scores = np.where(avail, 0.0, -np.inf)
            return [(int(j),) for j in np.atleast_1d(exponential_mechanism(scores, 1.0, 1.0, self.rng))]
        scores = _scores(self.rows, self.shape, fixed, rank, o.utility, self.weights)
        if o.select == "lesda":
            scores = np.where(avail, -scores, -np.inf)
        subset = f"records of each of the {len(fixed)} real nodes of layer {k} (disjoint)"
        note = f"{o.select.upper()} with utility {o.utility}"
        if o.select == "nonprivate":
            self.spent.append({"layer": k, "nodes": len(fixed), "mechanism": None})
            if self.ledger is not None:
                record_unpaid(self.ledger, f"layer {k} split", "non-private argmax", subset, self.neighbours.label,
                              parallel_over=len(fixed), note=f"{note}; NOT DIFFERENTIALLY PRIVATE")
            return [(int(j),) for j in np.argmax(scores, axis=1)]
        assert self.alloc is not None  # a private selection spends the allocation's budget for layer k
        mech = self.definition.selection(self.alloc.selection[k], self.score_sensitivity)
        self.spent.append({"layer": k, "nodes": len(fixed), "mechanism": mech})
        if self.mode == "preview":
            probs = mech.probabilities(scores, self.score_sensitivity)
            self.probabilities.append({"layer": k, "fixed": fixed.copy(), "probabilities": probs})
            return [(int(j),) for j in np.argmax(probs, axis=1)]
        assert self.ledger is not None  # a release charges its selections before they draw
        split = Measurement(f"layer {k} split", mech, self.score_sensitivity, subset, self.neighbours.label,
                            parallel_over=len(fixed), note=note)
        return [(int(j),) for j in np.atleast_1d(split.select(self.ledger, scores, self.rng))]


def layer_mechanisms(tree: H.PhantomPaddedTree, alloc: Allocation, noise: str, sensitivity: float = 1.0,
                     definition=PureDP(), neighbours: Neighbours | None = None) -> list:
    """Noise mechanisms for layers 1..L(+1) (None for the root); ``sensitivity`` is the
    count sensitivity of the neighbour notion (1 add/remove, 2 replace). Under zCDP the layer
    budgets are ρ and the noise is the discrete Gaussian at the notion's L2 sensitivity."""
    if definition.name != "pure":
        return [None] + [definition.count_noise(e, neighbours, noise) for e in alloc.counts]
    return [None] + [noise_for(noise, e, sensitivity) for e in alloc.counts]


def expected_errors(tree: H.PhantomPaddedTree, mechs: list, sensitivity: float = 1.0) -> list[dict]:
    """Per noised layer: noise scale and sd, and the mean standard error after WLS consistency.

    Depends only on the structure and the scales, so it is computed before any
    budget is spent (the preview).
    """
    real_var = [np.zeros(lay.n_real) for lay in tree.layers]
    for k in range(1, len(tree.layers)):
        real_var[k][:] = mechs[k].variance
    if tree.has_leaf_layer and tree.n_leaves > sparse_leaves.SPARSE_ABOVE:
        post = sparse_leaves.posterior_variances_blocks(tree, real_var, mechs[-1].variance)
    else:
        leaf_var = np.full(tree.n_leaves, mechs[-1].variance) if tree.has_leaf_layer else None
        parents, _ = H.slot_structure(tree)
        variances = H.slot_values(tree, real_var, leaf_var)
        post = posterior_variances(parents, variances)
    sizes = tree.layer_sizes()
    out = []
    for _i, row in enumerate(sizes):
        k = row["layer"]
        m = mechs[k]
        w = None
        if k <= tree.L:
            p = post[k][tree.layers[k].real_slots]
        elif isinstance(post[k], tuple):  # per block: (variance of each of its leaves, leaves)
            p, w = post[k]
        else:
            p = post[k]
        out.append(dict(row, epsilon=None if m.norm == "l2" else m.epsilon(sensitivity), noise_scale=m.scale,
                        noise_sd=float(np.sqrt(m.variance)),
                        expected_se=float(np.average(np.sqrt(p), weights=w)) if len(p) else 0.0))
    return out


def layer_measurements(tree: H.PhantomPaddedTree, mechs: list, nb: Neighbours, sampler: str,
                       sparse: bool = False) -> list:
    """The count measurement of each noised layer (None for the root): layer k's real nodes
    are disjoint, so each layer costs its ε once; phantom nodes are public and not noised.
    ``sparse``: the leaf layer's empty cells are noised as a histogram (its ledger says so)."""
    out: list[Measurement | None] = [None]  # the root is not noised
    for k in range(1, tree.L + 1):
        lay = tree.layers[k]
        out.append(Measurement.counts(
            f"layer {k} counts", mechs[k], nb, cells=lay.n_real, sampler=sampler,
            subset=f"{lay.n_real} real nodes of layer {k} (disjoint); {lay.n_phantom} phantom nodes not noised"))
    if tree.has_leaf_layer:
        out.append(Measurement.counts(
            f"layer {tree.L + 1} (leaf cells) counts", mechs[-1], nb, cells=tree.n_leaves,
            sampler=HISTOGRAM_SAMPLER if sparse else sampler,
            subset=f"{tree.n_leaves} leaf cells (disjoint{'; empty cells noised as a histogram' if sparse else ''})"))
    return out


def _sampler(opts) -> str:
    """Which sampler drew the noise (the ledger records it)."""
    return f"{'exact integer' if opts.noise_backend == 'numpy' else opts.noise_backend} sampler"


def synthesize_set(X, domain: Domain, opts: StepsOptions, alloc: Allocation, rng, ledger: Ledger, set_label: str,
                   ctx: ReleaseContext):
    """One STEPS set of ``ctx.n_out`` records: returns (the set's draw, tree): a
    :class:`dpcore.estimate.draws.CellDraw` whose records are dealt in chunks. Charges ``ledger``
    for everything spent, at the count sensitivity of ``ctx.neighbours``. ``X``: records
    (n, p) or their :class:`dpcore.counting.count_table.CountTable` (the same counts, the same release)."""
    shape, names = domain.shape, tuple(domain.names)
    nb, n_out = ctx.neighbours, ctx.n_out
    hs = nb.histogram_sensitivity
    g = ledger.group(set_label)
    sel = Selector(opts, X, shape, names, alloc, rng, neighbours=nb, ledger=g.group("tree selection"),
                   definition=ctx.definition)
    tree = H.build_tree(sel.rows, shape, names, opts.layers, sel, leaf_cell_limit(opts))
    mechs = layer_mechanisms(tree, alloc, opts.noise, hs, ctx.definition, nb)
    cg = g.group("node counts")
    sparse = sparse_leaf_layer(tree, opts)
    layers = layer_measurements(tree, mechs, nb, _sampler(opts), sparse)
    if sparse:
        # same law as below without one entry per leaf cell (dpcore.synthesizers.sparse_leaves)
        table = X if isinstance(X, CountTable) else CountTable.from_codes(X, shape)
        support_codes, support_counts = sparse_leaves.steps_support(tree, table, layers, cg, n_out, opts.consistency,
                                                                    opts.synthesis, rng)
        return CellDraw(support_codes, support_counts), tree
    counts, leaves = H.count_nodes(tree, X)
    backend = {} if opts.noise_backend == "numpy" else {"backend": opts.noise_backend}
    # the root is the released record count (noisy under add/remove, public under replace)
    noisy, var = [np.array([float(n_out)])], [np.zeros(1)]
    for k in range(1, tree.L + 1):
        noisy.append(layers[k].release(cg, counts[k], rng, **backend).astype(float))
        var.append(np.full(tree.layers[k].n_real, mechs[k].variance))
    leaf_noisy = leaf_var = None
    if tree.has_leaf_layer:
        leaf_noisy = layers[-1].release(cg, leaves, rng, **backend).astype(float)
        leaf_var = np.full(tree.n_leaves, mechs[-1].variance)
    del counts, leaves  # raw counts go no further
    parents, phantom = H.slot_structure(tree)
    values = H.slot_values(tree, noisy, leaf_noisy)
    variances = H.slot_values(tree, var, leaf_var)
    nbar = make_consistent(parents, values, variances, phantom, opts.consistency)
    final = nbar[-1] if tree.has_leaf_layer else nbar[-1][tree.layers[-1].real_slots]
    # the set before its records exist: leaf counts now, records dealt in chunks (post-processing)
    return cell_draw(cell_counts(final, n_out, opts.synthesis, rng), lambda c: H.leaf_codes(tree, c), shape), tree


def leaf_cell_limit(opts: StepsOptions) -> int:
    """Largest leaf layer the tree may have: 2^62 cells (the sparse leaf layer's int64 limit)."""
    # other noise is refused by sparse_leaf_layer with a message naming the option that works
    return max(opts.max_cells, sparse_leaves.MAX_SPARSE_CELLS)


def sparse_leaf_layer(tree: H.PhantomPaddedTree, opts: StepsOptions) -> bool:
    """Whether the leaf layer is drawn sparsely: above the measured crossover
    (:data:`dpcore.synthesizers.sparse_leaves.SPARSE_ABOVE`), or above ``max_cells``."""
    if not tree.has_leaf_layer:
        return False
    big = tree.n_leaves > min(sparse_leaves.SPARSE_ABOVE, opts.max_cells)
    if big and tree.n_leaves > opts.max_cells:
        leaf_noise.check_sparse_noise(opts.noise, opts.noise_backend)
    return big and opts.noise in leaf_noise.HISTOGRAM_NOISE and opts.noise_backend == "numpy"


def run_set(X, domain, opts, alloc, eps_set, rng, ledger, label, ctx):
    """Registry adapter: one STEPS set (its draw, the tree, no diagnostics)."""
    draw, tree = synthesize_set(X, domain, opts, alloc, rng, ledger, label, ctx)
    return draw, tree, {}



def noise_rows(opts: StepsOptions, domain: Domain, epsilon: float, m: int, n: float, neighbours: Neighbours,
               definition=PureDP()) -> list[NoiseRow]:
    """Per noised layer: the noise on each node count against the typical node count n/nodes.

    Public facts and n only. A fixed order gives each layer's node count exactly (the product of the
    level counts of the attributes above it); a tree chosen at release (MoSDA, LeSDA, random) gives
    the typical count of k attributes' combinations. The leaf layer always holds every cell of the
    full table (its blocks partition it)."""
    alloc = plan_allocation(opts, len(domain), epsilon, m)
    n_partition, has_leaf = noised_layers(opts.layers, opts.order, len(domain))
    rows = []
    for k, eps in enumerate(alloc.counts[:n_partition], 1):
        mech = definition.count_noise(eps, neighbours, opts.noise)
        if opts.order is not None:
            nodes = float(np.prod([domain[a].size for g in opts.order[:k] for a in g], dtype=float))
            what, estimate = f"layer {k} node counts ({', '.join(opts.order[k - 1])})", False
        else:
            nodes = min(typical_cells(domain.shape, k), float(domain.size))
            what, estimate = f"layer {k} node counts (attributes chosen at release)", True
        rows.append(noise_row(what, int(nodes), nodes, eps, mech, n, estimate))
    if has_leaf:
        eps = alloc.counts[-1]
        rows.append(noise_row(f"leaf cells (every cell of the full table, {big_count(domain.size)} cells)", domain.size,
                              float(domain.size), eps, definition.count_noise(eps, neighbours, opts.noise), n))
    return rows
