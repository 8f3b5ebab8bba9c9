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

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import numpy as np

from dpcore.counting.count_table import CountTable
from dpcore.counting.rows import rows as count_rows
from dpcore.counting.rows import weighted_count
from dpcore.data.domain import Domain
from dpcore.errors import OptionError, whole_number
from dpcore.estimate.consistency import make_consistent, posterior_variances
from dpcore.estimate.draws import CellDraw, cell_draw
from dpcore.estimate.table import cell_counts
from dpcore.measure import leaf_noise
from dpcore.measure.selection import UTILITIES
from dpcore.measure.selection import sensitivity as utility_sensitivity
from dpcore.measure.selection import utility as utility_scores
from dpcore.privacy.budget import Budget
from dpcore.privacy.definitions import Definition, PureDP, ReleaseContext
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.measurement import Measurement, record_unpaid
from dpcore.privacy.mechanisms import HISTOGRAM_SAMPLER, exponential_mechanism
from dpcore.privacy.neighbours import Neighbours
from dpcore.synthesizers import hierarchy as H
from dpcore.synthesizers import sparse_leaves
from dpcore.synthesizers.allocation import Allocation, allocate_budget, check_r
from dpcore.synthesizers.cells import big_count
from dpcore.synthesizers.empty_share import NoiseRow, noise_row, typical_cells
from dpcore.synthesizers.method import Method, MethodBase, SetRequest, SetResult
from dpcore.synthesizers.options import gaussian_counts, max_cells_option, noise_option, synthesis_option
from dpcore.synthesizers.schema import Option, check_known, find, value

#: What the method does, in one or two plain sentences (the Design page and the method adviser).
SUMMARY = (
    "Splits the table into a tree of attributes (layers) and adds noise to every node's count; "
    "its last layer holds every cell of the full table, so on tables with many cells per record "
    "most of that layer's counts are noise."
)


SELECTIONS = ("mosda", "lesda", "random", "nonprivate", "user")
PRIVATE_SELECTIONS = ("mosda", "lesda")
CONSISTENCY = ("nonneg", "wls", "uh")
BACKENDS = ("numpy", "opendp")
#: the STEPS variants and the tree selection each fixes (None: the options choose)
STEPS_METHODS = {"steps": None, "uh_random": "random", "steps_lesda": "lesda"}


def _choice(name: str, value, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise OptionError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
    return value


def parse_order(order, domain: Domain) -> tuple[tuple[str, ...], ...] | None:
    """``"a;b,c"`` (``;`` separates layers, ``,`` joins attributes in a layer) or a list of lists."""
    if order is None or order == "" or order == []:
        return None
    if isinstance(order, str):
        layers = [tuple(a.strip() for a in layer.split(",") if a.strip()) for layer in order.split(";")]
    elif isinstance(order, (list, tuple)) and all(isinstance(g, str) or (isinstance(g, (list, tuple)) and
                                                   all(isinstance(a, str) for a in g)) for g in order):
        layers = [tuple([g]) if isinstance(g, str) else tuple(g) for g in order]
    else:
        raise OptionError(f"order must be a string like \"a;b,c\" or a list of attribute lists; got {order!r}")
    if any(len(g) == 0 for g in layers):
        raise OptionError(f"order {order!r} has an empty layer; write layers like \"a;b,c\"")
    seen: list[str] = []
    for g in layers:
        for a in g:
            if a not in domain.names:
                raise OptionError(f"order names attribute '{a}', which is not in the data; known: "
                                  f"{', '.join(domain.names)}")
            if a in seen:
                raise OptionError(f"order names attribute '{a}' twice; each attribute may appear in one layer only")
            seen.append(a)
    return tuple(layers)


def check_backend(backend: str, noise: str) -> str:
    """``numpy`` (fast, seeded) or ``opendp`` (OpenDP's exact discrete sampler, for audited releases)."""
    _choice("noise_backend", backend, BACKENDS)
    if backend == "opendp" and noise != "discrete_laplace":
        raise OptionError("noise_backend='opendp' is offered for discrete Laplace noise only; set "
                          "noise='discrete_laplace'")
    return backend


@dataclass(frozen=True)
class StepsOptions:
    """Every STEPS option, resolved and validated (docs/methods/steps.md defaults)."""

    layers: int = 2
    order: tuple | None = None
    select: str = "mosda"
    utility: str = "aic"
    r: float = 0.1
    allocation: Any = "half"
    consistency: str = "nonneg"
    synthesis: str = "sample"
    noise: str = "discrete_laplace"
    noise_backend: str = "numpy"
    max_cells: int = 20_000_000

    def to_dict(self) -> dict:
        d = asdict(self)
        if self.order is not None:
            d["order"] = [list(g) for g in self.order]
        if not isinstance(self.allocation, str):
            d["allocation"] = list(self.allocation)
        return d


#: STEPS's options (steps, uh_random, steps_lesda): the registry's schema, the CLI's flags and the Design page's widgets
STEPS_OPTIONS = (
    Option("layers", "int", 2, "number L of partition layers of the tree (the rest of the attributes form the leaf "
           "layer)", low=1, hint=" (at most the number of attributes)", default_text="2, or the order's layers",
           docs="methods/steps.md#the-tree", label="Partition layers L"),
    Option("order", "text", None, 'a fixed tree: ";" separates layers, "," joins attributes in one layer, e.g. '
           '"sex;agegr,edu"; spends nothing on choosing the tree',
           docs="methods/steps.md#choosing-the-tree", label="Fixed tree (layers of attributes)"),
    Option("select", "choice", "mosda", "how each node's split is chosen: MoSDA (the best-scoring attribute, "
           "privately), LeSDA (the worst), random (no data), or nonprivate (NOT DP)", choices=SELECTIONS,
           docs="methods/steps.md#choosing-the-tree", label="Tree chosen by"),
    Option("utility", "choice", "aic", "the score MoSDA/LeSDA rank attributes by", choices=UTILITIES,
           docs="methods/steps.md#choosing-the-tree", label="Score for choosing attributes"),
    Option("r", "float", None, "share of ε spent on choosing the tree", low=0, high=1, high_open=True,
           hint=" (r must be in [0, 1))", default_text="0.1 with private selection, else 0",
           docs="methods/steps.md#allocation", label="Share of ε for choosing the tree (r)"),
    Option("allocation", "text", "half", "how the count budget is split over the noised layers: equal, half "
           "(half to the leaf layer) or weights w1,w2,... summing to 1",
           docs="methods/steps.md#allocation", label="Count budget over layers"),
    Option("consistency", "choice", "nonneg", "how noisy node counts are made to add up: nonneg (least squares, "
           "non-negative), wls (least squares) or uh (Hay et al.)", choices=CONSISTENCY,
           docs="methods/steps.md#consistency", label="Consistency step"),
    synthesis_option(),
    noise_option(),
    Option("noise_backend", "choice", "numpy", "the discrete Laplace sampler: numpy (exact, seeded) or opendp "
           "(OpenDP's, for audited releases; not seeded)", choices=BACKENDS,
           docs="mechanisms.md", advanced=True, label="Discrete Laplace sampler"),
    max_cells_option(20_000_000),
)


def resolve_steps_options(domain: Domain, method: str = "steps", **opts) -> StepsOptions:
    """Fill defaults and check every option against the domain."""
    check_known(STEPS_OPTIONS, opts, method)
    p = len(domain)
    order = parse_order(opts.get("order"), domain)
    forced = STEPS_METHODS.get(method)
    select = opts.get("select")
    if forced is not None:
        if select not in (None, forced):
            raise OptionError(f"method '{method}' always uses select='{forced}'; drop select={select!r} or use method "
                              "'steps'")
        select = forced
    if order is not None:
        if select not in (None, "user"):
            raise OptionError(f"an explicit order fixes the tree; it cannot be combined with select='{select}'")
        select = "user"
    select = value(STEPS_OPTIONS, {"select": select}, "select")
    if select == "user" and order is None:
        raise OptionError("select='user' needs an order, e.g. order=\"a;b,c\"")

    layers = opts.get("layers")
    if order is not None:
        if layers is not None and int(layers) != len(order):
            raise OptionError(f"the order has {len(order)} layers but layers={layers}; drop one of them or make them "
                              "agree")
        layers = len(order)
    layers = find(STEPS_OPTIONS, "layers").default if layers is None else layers  # checked against p below
    layers = whole_number("the number of layers L (layers, --layers)", layers, 1, p, " (at most the number of "
                                                                                     "attributes)")

    r = opts.get("r")
    n_sel = min(layers, p - 1) if select in PRIVATE_SELECTIONS else 0
    if r is None:
        r = 0.1 if n_sel else 0.0
    r = check_r(r, n_sel, select)

    allocation = value(STEPS_OPTIONS, opts, "allocation")
    if not isinstance(allocation, str):
        if not isinstance(allocation, (list, tuple)) or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) for x in allocation):
            raise OptionError("allocation must be equal, half or a list of layer weights (numbers); "
                              f"got {allocation!r}")
        allocation = tuple(float(x) for x in allocation)
    noise = value(STEPS_OPTIONS, opts, "noise")
    return StepsOptions(
        layers=layers,
        order=order,
        select=select,
        utility=value(STEPS_OPTIONS, opts, "utility"),
        r=r,
        allocation=allocation,
        consistency=value(STEPS_OPTIONS, opts, "consistency"),
        synthesis=value(STEPS_OPTIONS, opts, "synthesis"),
        noise=noise,
        noise_backend=check_backend(value(STEPS_OPTIONS, opts, "noise_backend"), noise),
        max_cells=value(STEPS_OPTIONS, opts, "max_cells"),
    )


def n_selection_layers(opts: StepsOptions, p: int) -> int:
    """Layers whose split is a real (non-forced) private choice: min(L, p−1)."""
    return min(opts.layers, p - 1) if opts.select in PRIVATE_SELECTIONS else 0


def plan_allocation(opts: StepsOptions, p: int, budget: Budget, m: int) -> Allocation:
    """The release's budget (ε, or ρ under zCDP) split over m sets, the tree choice and the noised layers."""
    n_partition, has_leaf = noised_layers(opts.layers, opts.order, p)
    return allocate_budget(budget, m, opts.r, n_selection_layers(opts, p), n_partition, has_leaf, opts.allocation)


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
    rng: np.random.Generator
    mode: str = "release"
    neighbours: Neighbours = Neighbours()
    #: release mode: the ledger group every selection is charged to, before it draws
    ledger: Ledger | None = None
    #: the privacy definition the selection budgets are in (ε, or ρ under zCDP)
    definition: Definition = PureDP()

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
        mech = self.definition.selection(self.alloc.selection[k],
                                         self.neighbours.score_sensitivity(self.score_sensitivity).value)
        self.spent.append({"layer": k, "nodes": len(fixed), "mechanism": mech})
        if self.mode == "preview":
            probs = mech.probabilities(scores, self.neighbours.score_sensitivity(self.score_sensitivity).value)
            self.probabilities.append({"layer": k, "fixed": fixed.copy(), "probabilities": probs})
            return [(int(j),) for j in np.argmax(probs, axis=1)]
        assert self.ledger is not None  # a release charges its selections before they draw
        split = Measurement.selection(f"layer {k} split", mech, self.neighbours, self.score_sensitivity,
                                      subset=subset, parallel_over=len(fixed), note=note)
        return [(int(j),) for j in np.atleast_1d(split.select(self.ledger, scores, self.rng))]


def layer_mechanisms(tree: H.PhantomPaddedTree, alloc: Allocation, noise: str, definition: Definition,
                     neighbours: Neighbours) -> list:
    """Noise mechanisms for layers 1..L(+1) (None for the root), each spending its layer's budget at the
    count sensitivity of ``neighbours``: ``noise`` (discrete Laplace by default) in ε, or under zCDP the
    discrete Gaussian in ρ at the notion's L2 sensitivity."""
    return [None] + [definition.count_noise(e, neighbours, noise) for e in alloc.counts]


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
    g = ledger.group(set_label)
    sel = Selector(opts, X, shape, names, alloc, rng, neighbours=nb, ledger=g.group("tree selection"),
                   definition=ctx.definition)
    tree = H.build_tree(sel.rows, shape, names, opts.layers, sel, leaf_cell_limit(opts))
    mechs = layer_mechanisms(tree, alloc, opts.noise, ctx.definition, nb)
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


def noise_rows(opts: StepsOptions, domain: Domain, epsilon: Budget, m: int, n: float, neighbours: Neighbours,
               definition: Definition = PureDP()) -> list[NoiseRow]:
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


class Steps(MethodBase):
    """STEPS as a :class:`~dpcore.synthesizers.method.Method` (the tree chosen by its options: MoSDA by default)."""

    name = "steps"
    label = "STEPS"
    display_name = "STEPS"
    summary = SUMMARY
    glossary = "steps"
    options = STEPS_OPTIONS
    hierarchical = True

    def resolve(self, domain: Domain, method: str = "", **options: Any) -> StepsOptions:
        return resolve_steps_options(domain, method or self.name, **options)

    def for_definition(self, options: Any, definition: Definition, given: dict, domain: Domain) -> Any:
        return gaussian_counts(options, definition, given, domain)

    def plan(self, options: Any, domain: Domain, budget: Budget, sets: int) -> Allocation:
        return plan_allocation(options, len(domain), budget, sets)

    def run_set(self, request: SetRequest) -> SetResult:
        draw, tree = synthesize_set(request.data, request.domain, request.options, request.plan, request.rng,
                                    request.ledger, request.label, request.context)
        return SetResult(draw, tree, {})

    def not_dp(self, options: Any) -> list[str]:
        return (["the tree was chosen from the data with no budget spent (select='nonprivate')"]
                if options.select == "nonprivate" else [])

    def noise_rows(self, options: Any, domain: Domain, budget: Budget, sets: int, n: float, neighbours: Neighbours,
                   definition: Definition) -> list[NoiseRow]:
        return noise_rows(options, domain, budget, sets, n, neighbours, definition)


class UhRandom(Steps):
    """STEPS with a random tree (the UH method: no budget on choosing the tree)."""

    name = "uh_random"
    label = "UH random"
    display_name = "STEPS, random tree (UH)"
    tree_select: ClassVar[str | None] = "random"


class StepsLesda(Steps):
    """STEPS with the tree chosen by LeSDA (the least-scoring attribute, privately)."""

    name = "steps_lesda"
    label = "STEPS LeSDA"
    display_name = "STEPS, LeSDA"
    tree_select: ClassVar[str | None] = "lesda"


#: the registry's entries of this module: STEPS and its two variants
METHODS: tuple[Method, ...] = (Steps(), UhRandom(), StepsLesda())
