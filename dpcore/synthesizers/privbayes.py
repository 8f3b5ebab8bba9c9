"""PrivBayes: a differentially private Bayesian network (Zhang et al. 2017; docs/methods/privbayes.md).

Per set, at budget ε_s = ε/m split as ε₁ = share·ε_s (network) and ε₂ = ε_s − ε₁
(conditionals), for d attributes and degree k (k' = min(k, d − 1)):

**Network** (GreedyBayes, Zhang et al. 2017 Alg. 4). Pick the first attribute
uniformly at random (no data). Then, d − 1 times, with V the placed attributes,
choose a pair (X, Π), X ∉ V and Π ⊆ V with |Π| = min(k, |V|), by the exponential
mechanism with score I(X; Π), the empirical mutual information in bits,

    I(X; Π) = Σ_{x,π} p(x,π) log₂( p(x,π) / (p(x) p(π)) ),   p = counts / n.

Zhang et al. (2017, Lemma 4.1) bound its sensitivity, for neighbours that
replace one record (n public), by

    Δ = (1/n) log₂ n + ((n−1)/n) log₂(n/(n−1))                  X and Π binary,
    Δ = (2/n) log₂((n+1)/2) + ((n−1)/n) log₂((n+1)/(n−1))       otherwise.

We use the binary form only when X and the joint parent set Π both have exactly
two cells (one binary parent); otherwise the general one, which is larger.

Under add/remove neighbours n is private, and I's sensitivity (which shrinks with
n) cannot be computed. We then score with the count-scaled n·I(X; Π) in bits,
which the exponential mechanism ranks identically, and whose sensitivity has no
lower bound on n to meet: writing F(c) = c log₂ c,
n·I = Σ F(c_xπ) − Σ F(c_x) − Σ F(c_π) + F(n), adding a record in cell (x, π)
changes it by d(c_xπ+1) − d(c_x+1) − d(c_π+1) + d(n+1), d(y) = F(y) − F(y−1)
increasing with d(1) = 0 and d(y) ≤ log₂ y + log₂ e. The first pair of terms is in
[−d(n+1), 0] and the second in [0, d(n+1)], so |Δ| ≤ log₂(N+1) + log₂ e for any
table of at most N = ``max_records`` records (checked by brute force in
``tests/synthesizers/test_privbayes.py``).
Each step with a real choice costs ε₁/P (P = steps with more than one candidate;
a step with a single candidate is forced and free): exponential mechanism,
McSherry & Talwar 2007; sequential composition over the steps. Which candidates
exist depends only on the public domain and the earlier (already private)
choices. When a step has more than ``max_candidates`` pairs, that many are
drawn uniformly at random without looking at the data (X uniform among the
unplaced, Π a uniform |Π|-subset of V), and the diagnostics say so.

**Conditionals** (NoisyConditionals). For each of the d − k' pairs (X_i, Π_i) with
i ≥ k' (network order, 0-based), count the joint table of (X_i, Π_i) over the
declared levels and add noise of scale 2(d − k')/ε₂ per cell (discrete Laplace by
default), with Δ = 2 under replace (a record moves one unit from one cell of each
table to another) and Δ = 1 under add/remove. Each table costs ε₂/(d − k')
(parallel composition over its cells); the d − k' tables compose sequentially to
ε₂. The whole release is ε-DP under ONE neighbour notion, the one chosen. Clip at 0, normalise
within each parent configuration to P*(X_i | Π_i) (uniform where a configuration
got no mass). The first k' attributes' conditionals come from marginalising the
clipped noisy table of position k', which covers exactly the first k' + 1 attributes.

**Sampling** is ancestral, vectorised over records: in network order, each record's
value is drawn from the conditional row its already-drawn parents select, by
inverse CDF (cumulative sums + one uniform per record). Post-processing.

**Neighbours.** Every ledger charge records the notion and the release's DP
statement says so. Total per set: ε₁ + ε₂ = ε_s; over m sets, ε.
Proof: docs/methods/privbayes.md.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Any

import numpy as np

from dpcore.counting.count_table import CountTable
from dpcore.data.domain import Domain
from dpcore.errors import OptionError, ResourceError, whole_number
from dpcore.estimate.draws import IIDDraw
from dpcore.measure.margins import preview_row, selection_preview_row
from dpcore.privacy.budget import Budget, zero_like
from dpcore.privacy.definitions import Definition, PureDP, ReleaseContext
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.measurement import Measurement, record_unpaid
from dpcore.privacy.neighbours import ADD_REMOVE, Neighbours
from dpcore.synthesizers.cells import DEFAULT_MAX_CELLS
from dpcore.synthesizers.empty_share import NoiseRow, noise_row, typical_cells
from dpcore.synthesizers.method import Method, MethodBase, SetRequest, SetResult
from dpcore.synthesizers.options import gaussian_counts, max_cells_option, noise_option
from dpcore.synthesizers.schema import Option, check_known, value

#: What the method does, in one or two plain sentences (the Design page and the method adviser).
SUMMARY = (
    "Learns a Bayesian network privately (each attribute with a few parents), measures each "
    "attribute's table given its parents, and draws records along the network."
)

SCORES = ("mi",)


@dataclass(frozen=True)
class PrivBayesOptions:
    """Resolved options of ``method="privbayes"`` (see the module docstring)."""

    degree: int = 2
    network_share: float = 0.5
    score: str = "mi"
    max_candidates: int = 2000
    noise: str = "discrete_laplace"
    max_cells: int = DEFAULT_MAX_CELLS

    def to_dict(self) -> dict:
        return asdict(self)


def _whole(name, value, lo, hint=""):
    return whole_number(name, value, lo, None, hint)


#: PrivBayes's options (the registry's schema)
OPTIONS = (
    Option("degree", "int", 2, "parents per attribute in the Bayesian network (PrivBayes' k)", low=1,
           hint=" (the number of parents per attribute; PrivBayes' k, default 2)", docs="methods/privbayes.md",
           label="Degree k (parents per attribute)"),
    Option("network_share", "float", 0.5, "share of ε spent learning the network (the rest noises its tables)",
           low=0, high=1, low_open=True, high_open=True, hint=" (the share of ε spent learning the network)",
           docs="methods/privbayes.md", label="Share of ε for the network"),
    Option("score", "choice", "mi", "the network score: mutual information", choices=SCORES,
           docs="methods/privbayes.md", advanced=True, label="Network score"),
    Option("max_candidates", "int", 2000, "most (attribute, parents) candidates scored per step (sampled without "
           "looking at the data beyond that)", low=1, docs="methods/privbayes.md", advanced=True,
           label="Most candidates per step"),
    noise_option(),
    max_cells_option(DEFAULT_MAX_CELLS),
)


def resolve(domain: Domain, method: str = "privbayes", **opts) -> PrivBayesOptions:
    """Fill defaults and validate (messages name the option and the fix)."""
    check_known(OPTIONS, opts, "privbayes")
    if opts.get("score") == "R":
        raise OptionError("score='R' (Zhang et al.'s R function) is not implemented; use score='mi'")
    return PrivBayesOptions(
        degree=value(OPTIONS, opts, "degree"),
        network_share=float(value(OPTIONS, opts, "network_share")),
        score=value(OPTIONS, opts, "score"),
        max_candidates=value(OPTIONS, opts, "max_candidates"),
        noise=value(OPTIONS, opts, "noise"),
        max_cells=value(OPTIONS, opts, "max_cells"),
    )


# ------------------------------------------------------------------ the score


def mi_sensitivity(n: int, binary: bool) -> float:
    """Zhang et al.'s bound on |I(D) − I(D')| in bits, D' = D with one record replaced."""
    if n < 2:
        raise OptionError("PrivBayes needs at least 2 records (its score sensitivity is undefined for n < 2)")
    if binary:
        return math.log2(n) / n + (n - 1) / n * math.log2(n / (n - 1))
    return 2 / n * math.log2((n + 1) / 2) + (n - 1) / n * math.log2((n + 1) / (n - 1))


def count_mi_sensitivity(max_records: int) -> float:
    """Bound on |n·I(D) − n'·I(D')| in bits when D' adds or removes one record and
    both have at most ``max_records`` records (module docstring)."""
    return math.log2(max_records + 1) + math.log2(math.e)


def mutual_information(counts: np.ndarray) -> float:
    """I(X; Π) in bits from a joint count table with X on axis 0 (Π flattened on the rest)."""
    c = np.asarray(counts, dtype=float).reshape(counts.shape[0], -1)
    n = c.sum()
    if n <= 0:
        return 0.0
    px = c.sum(axis=1, keepdims=True)
    pp = c.sum(axis=0, keepdims=True)
    nz = c > 0
    return float((c[nz] * np.log2(c[nz] * n / (px * pp)[nz])).sum() / n)


def _records(X) -> tuple[np.ndarray, np.ndarray | None, int]:
    """(codes, weights, n): records (n, d) with no weights, or a :class:`CountTable`'s
    non-empty cells weighted by their counts; every count below is the same integer either way."""
    if isinstance(X, CountTable):
        return X.codes, X.counts, X.n
    return X, None, len(X)


def _count(idx: np.ndarray, w, minlength: int = 0) -> np.ndarray:
    """np.bincount of records, or of cells weighted by their counts (exact integers)."""
    if w is None:
        return np.bincount(idx, minlength=minlength)
    return np.bincount(idx, weights=w, minlength=minlength).astype(np.int64)


def _joint_counts(X, cols, shape) -> np.ndarray:
    """Counts of the records over the attributes ``cols`` (in that order), full table."""
    X, w, _ = _records(X)
    dims = [shape[c] for c in cols]
    idx = np.ravel_multi_index(tuple(X[:, c] for c in cols), dims)
    return _count(idx, w, math.prod(dims)).reshape(dims)


def _sparse_mi(x: np.ndarray, kx: int, pi: np.ndarray, w=None) -> float:
    """I(X; Π) from per-record codes (or cells weighted by ``w``), touching only occupied cells."""
    n = len(x) if w is None else int(w.sum())
    _, pinv, pcnt = np.unique(pi, return_inverse=True, return_counts=True)
    pinv = pinv.ravel()
    joint = pinv.astype(np.int64) * kx + x
    cells, jinv, jcnt = np.unique(joint, return_inverse=True, return_counts=True)
    if w is not None:
        pcnt, jcnt = _count(pinv, w, len(pcnt)), _count(jinv.ravel(), w, len(cells))
    xcnt = _count(x, w, kx)
    px = xcnt[cells % kx]
    pp = pcnt[cells // kx]
    return float((jcnt * np.log2(jcnt * n / (px * pp))).sum() / n)


# ------------------------------------------------------------------ the network


def network_plan(d: int, k: int) -> tuple[int, int]:
    """(P, T): network steps with a real choice, and the number of noisy conditional tables.

    Step i (|V| = i − 1 placed) has (d − i + 1)·C(i − 1, min(k, i − 1)) candidates,
    one only at the last step when d − 1 ≤ k. T = d − min(k, d − 1).
    """
    steps = [(d - i + 1) * math.comb(i - 1, min(k, i - 1)) for i in range(2, d + 1)]
    return sum(c > 1 for c in steps), d - min(k, d - 1)


def _candidates(placed, remaining, r, shape, opts, rng):
    """Candidate pairs (X, Π) for one step, data-independent; sampled when too many."""
    total = len(remaining) * math.comb(len(placed), r)
    if total <= opts.max_candidates:
        cands = [(x, pi) for pi in combinations(sorted(placed), r) for x in remaining]
        sampled = False
    else:
        m = opts.max_candidates
        xs = np.asarray(remaining)[rng.integers(0, len(remaining), m)]
        pis = np.sort(np.asarray(placed)[np.argsort(rng.random((m, len(placed))), axis=1)[:, :r]], axis=1)
        rows = np.unique(np.column_stack([xs, pis]), axis=0)
        cands = [(int(row[0]), tuple(int(v) for v in row[1:])) for row in rows]
        sampled = True
    fits = [(x, pi) for x, pi in cands if shape[x] * math.prod(shape[p] for p in pi) <= opts.max_cells]
    return fits, total, sampled


def _scores(X: np.ndarray, w, cands: list, shape) -> np.ndarray:
    """I(X; Π) of each candidate (x, Π), scored parent set by parent set: one parent set's
    per-record (or per-cell) codes are held at a time, not every parent set's of the step
    (C(placed, k) arrays of one int64 a record or non-empty cell)."""
    scores = np.empty(len(cands))
    by_parents: dict[tuple, list[int]] = {}
    for c, (_, pi) in enumerate(cands):
        by_parents.setdefault(pi, []).append(c)
    for pi, members in by_parents.items():
        pi_code = np.ravel_multi_index(tuple(X[:, p] for p in pi), [shape[p] for p in pi])
        kpi = math.prod(shape[p] for p in pi)
        for c in members:
            x = cands[c][0]
            if shape[x] * kpi <= 1 << 22:
                # int64 before the product: compact (uint8) codes would wrap
                joint = _count(X[:, x].astype(np.int64) * kpi + pi_code, w, shape[x] * kpi)
                scores[c] = mutual_information(joint.reshape(shape[x], kpi))
            else:
                scores[c] = _sparse_mi(X[:, x], shape[x], pi_code, w)
    return scores


def learn_network(X, domain: Domain, opts: PrivBayesOptions, eps1: Budget, rng, ledger: Ledger,
                  neighbours: Neighbours = Neighbours("replace"), definition: Definition = PureDP()):
    """GreedyBayes with the exponential mechanism; returns (network, per-step records).

    ``network`` is a list of (attribute index, parent indices) in placement order.
    ε-cost: ``eps1`` in total, ``eps1``/P per step with a real choice (module docstring).
    Score: I(X; Π) with Zhang et al.'s replace-one sensitivity, or n·I(X; Π) with
    :func:`count_mi_sensitivity` under add/remove.
    """
    add_remove = neighbours.notion == ADD_REMOVE
    X, w, n = _records(X)  # records, or the count table's cells weighted by their counts
    shape = domain.shape
    d, k = len(shape), opts.degree
    P, _ = network_plan(d, k)
    eps_step = eps1 / P if P else zero_like(eps1)
    first = int(rng.integers(0, d))  # uniform, no data
    network = [(first, ())]
    placed, steps = [first], []
    for i in range(2, d + 1):
        remaining = [j for j in range(d) if j not in placed]
        r = min(k, len(placed))
        cands, total, sampled = _candidates(placed, remaining, r, shape, opts, rng)
        if not cands:
            raise ResourceError(
                f"every candidate (attribute, {r} parents) table has more than max_cells={opts.max_cells:,} cells; "
                "lower the degree k, coarsen attributes with many levels, or raise max_cells"
            )
        binary = all(shape[x] == 2 and math.prod(shape[p] for p in pi) == 2 for x, pi in cands)
        delta = count_mi_sensitivity(neighbours.max_records) if add_remove else mi_sensitivity(n, binary)
        forced = total == 1
        subset = (f"all records; {len(cands)} candidate (attribute, {r} parents) pairs scored"
                  + (f", sampled from {total} without looking at the data" if sampled else ""))
        note = ("score n·I(X;Π) in bits, sensitivity log2(max_records+1) + log2(e) for add/remove neighbours"
                if add_remove else
                "score I(X;Π) in bits, sensitivity of Zhang et al. (2017) for "
                + ("binary X and Π" if binary else "general domains") + ", derived for replace-one neighbours")
        if forced:  # a single candidate: nothing is chosen, nothing is spent
            choice = 0
            record_unpaid(ledger, f"network step {i - 1}", "none (single candidate)", subset, neighbours.label,
                          sensitivity=delta, note=note)
        else:
            scores = _scores(X, w, cands, shape)
            if add_remove:
                scores *= n  # n·I: the n-free sensitivity (module docstring)
            em = definition.selection(eps_step, neighbours.score_sensitivity(delta).value)
            step = Measurement.selection(f"network step {i - 1}", em, neighbours, delta, subset=subset, note=note)
            choice = int(step.select(ledger, scores, rng))
        x, pi = cands[choice]
        network.append((x, pi))
        placed.append(x)
        steps.append({"step": i - 1, "candidates": total, "scored": len(cands), "sampled": sampled,
                      "forced": forced, "sensitivity": delta})
    return network, steps


# ------------------------------------------------------------------ conditionals and sampling


def _conditional(joint: np.ndarray) -> np.ndarray:
    """(parent configurations, K_X) rows P(X | π) from a non-negative joint with X on axis 0."""
    kx = joint.shape[0]
    t = joint.reshape(kx, -1).T.astype(float)
    s = t.sum(axis=1, keepdims=True)
    return np.where(s > 0, t / np.where(s > 0, s, 1.0), 1.0 / kx)


def noisy_conditionals(X, domain: Domain, network, opts: PrivBayesOptions, eps2: Budget, rng, ledger: Ledger,
                       neighbours: Neighbours = Neighbours("replace"), definition=PureDP()):
    """P*(X_i | Π_i) for every position of ``network``, as (parents, table) rows.

    ε-cost: ``eps2``: d − k' noisy joint tables at eps2/(d − k') each (module docstring).
    """
    shape = domain.shape
    d = len(network)
    kk = min(opts.degree, d - 1)
    n_tables = d - kk
    mech = definition.count_noise(eps2 / n_tables, neighbours, opts.noise)
    out: list[tuple[tuple, np.ndarray] | None] = [None] * d  # every position is set below
    anchor: tuple[tuple, np.ndarray] | None = None
    for i in range(kk, d):
        x, pi = network[i]
        cols = (x,) + tuple(pi)
        counts = _joint_counts(X, cols, shape)
        cells = counts.size
        table = Measurement.counts(
            f"conditional table {i - kk + 1}", mech, neighbours, cells=cells, sampler="",
            subset=f"{cells} cells of the joint table of an attribute and its {len(pi)} parent(s) (disjoint)",
            note=f"one of {n_tables} tables, sequential composition")
        noisy = np.clip(table.release(ledger, counts, rng).astype(float), 0.0, None)
        del counts  # the raw counts go no further
        out[i] = (tuple(pi), _conditional(noisy))
        if i == kk:
            anchor = (cols, noisy)
    assert anchor is not None  # set at i == kk, the loop's first position
    cols, anchor_table = anchor
    for j in range(kk):
        x, pi = network[j]
        keep = (x,) + tuple(pi)
        axes = tuple(a for a, c in enumerate(cols) if c not in keep)
        marg = anchor_table.sum(axis=axes) if axes else anchor_table
        kept = [c for c in cols if c in keep]
        marg = np.transpose(marg, [kept.index(c) for c in keep])
        out[j] = (tuple(pi), _conditional(marg))
    return out


@dataclass(frozen=True, eq=False)
class BayesNet:
    """The fitted network as a model: ``sample(n, rng)`` draws n records by :func:`ancestral_sample`
    (so a set is drawn in chunks, or in partitions, as :class:`dpcore.estimate.draws.IIDDraw`)."""

    network: list
    conditionals: list
    shape: tuple

    def sample(self, n: int, rng) -> np.ndarray:
        return ancestral_sample(self.network, self.conditionals, self.shape, n, rng)


def ancestral_sample(network, conditionals, shape, n: int, rng) -> np.ndarray:
    """n records (codes, (n, d)) drawn attribute by attribute in network order.

    For attribute X with parents Π: row r(record) = the parents' configuration; with
    F the row-wise CDF (last entry forced to 1) laid out as r + F[r, ·] (increasing
    over all rows), ``searchsorted`` of r + U, U ~ U[0, 1), minus r·K_X is the first
    level whose CDF exceeds U: inverse-CDF sampling for all records at once.
    """
    codes = np.zeros((n, len(shape)), dtype=np.int64)
    for (x, pi), (_, cond) in zip(network, conditionals):
        kx = cond.shape[1]
        rows = (np.ravel_multi_index(tuple(codes[:, p] for p in pi), [shape[p] for p in pi]) if pi
                else np.zeros(n, np.int64))
        cdf = np.cumsum(cond, axis=1)
        cdf[:, -1] = 1.0
        flat = (cdf + np.arange(len(cdf))[:, None]).ravel()
        pos = np.searchsorted(flat, rows + rng.random(n), side="right") - rows * kx
        codes[:, x] = np.clip(pos, 0, kx - 1)
    return codes


# ------------------------------------------------------------------ one set


def synthesize_set(X, domain: Domain, opts: PrivBayesOptions, eps: Budget, rng, ledger: Ledger, set_label: str,
                   ctx: ReleaseContext):
    """One PrivBayes set at ``eps`` (= ε/m): its draw (n i.i.d. records from the network, drawn
    in chunks: :class:`dpcore.estimate.draws.IIDDraw`) and diagnostics.

    ε-cost: ``eps`` = ε₁ + ε₂: the network (exponential mechanism, replace-one
    neighbours) and the conditionals (noisy counts, replace-one), see the module
    docstring. Sampling is post-processing.
    """
    d, n = len(domain), ctx.n_out
    P, _ = network_plan(d, opts.degree)
    eps1 = opts.network_share * eps if P else zero_like(eps)
    eps2 = eps - eps1
    group = ledger.group(set_label)
    network, steps = learn_network(X, domain, opts, eps1, rng, group.group("network"), ctx.neighbours, ctx.definition)
    conds = noisy_conditionals(X, domain, network, opts, eps2, rng, group.group("conditionals"), ctx.neighbours,
                               ctx.definition)
    draw = IIDDraw(BayesNet(network, conds, tuple(domain.shape)), n)  # sampling: post-processing
    names = domain.names
    sampled = [s["step"] for s in steps if s["sampled"]]
    diag = {
        "network": [{"attribute": names[x], "parents": [names[p] for p in pi]} for x, pi in network],
        "steps": steps,
        "candidates_sampled": bool(sampled),
        # in the release's unit (ε, or ρ under zCDP): the budgets of the network and of the conditionals
        "network_budget": eps1.value,
        "conditionals_budget": eps2.value,
        "budget_unit": eps.unit,
        "warnings": [],
    }
    if sampled:
        diag["warnings"].append(
            f"network step(s) {', '.join(map(str, sampled))} had more than max_candidates={opts.max_candidates} "
            "(attribute, parents) pairs; a random subset, drawn without looking at the data, was scored"
        )
    if not P:
        diag["warnings"].append("the network is forced (d ≤ 2 or d − 1 ≤ k): all of ε went to the conditionals")
    return draw, diag


def noise_rows(opts: PrivBayesOptions, domain: Domain, epsilon: Budget, m: int, n: float, neighbours: Neighbours,
               definition: Definition = PureDP()) -> list[NoiseRow]:
    """The noise on each cell of the T conditional tables against the typical count of a table of
    an attribute and ``degree`` parents (the network is chosen at release: a typical size)."""
    eps = epsilon / m
    d = len(domain)
    P, T = network_plan(d, opts.degree)
    e = (eps - (opts.network_share * eps if P else zero_like(eps))) / T
    cells = min(typical_cells(domain.shape, min(opts.degree + 1, d)), float(domain.size))
    return [noise_row(f"{T} conditional tables (an attribute and up to {opts.degree} parents, chosen at release)",
                      int(T * cells), cells, e, definition.count_noise(e, neighbours, opts.noise), n, estimate=True)]


def preview_rows(opts: PrivBayesOptions, domain: Domain, per_set: Budget, nb: Neighbours, n: float,
                 definition: Definition = PureDP()) -> list[dict]:
    """The network's private choices and the noisy conditional tables PrivBayes measures per set."""
    P, T = network_plan(len(domain), opts.degree)
    eps1 = opts.network_share * per_set if P else zero_like(per_set)
    rows = [selection_preview_row(f"network step {i + 1}: exponential mechanism (attribute and parents chosen "
                                  "privately)", eps1 / P, definition) for i in range(P)]
    e = (per_set - eps1) / T
    return rows + [preview_row(f"conditional table {j + 1} (attribute + ≤{opts.degree} parents, chosen at release)",
                               None, e, definition.count_noise(e, nb, opts.noise), definition) for j in range(T)]


class PrivBayes(MethodBase):
    """PrivBayes as a :class:`~dpcore.synthesizers.method.Method`."""

    name = "privbayes"
    label = "PrivBayes"
    display_name = "PrivBayes"
    summary = SUMMARY
    glossary = "privbayes"
    options = OPTIONS

    def resolve(self, domain: Domain, method: str = "privbayes", **options: Any) -> PrivBayesOptions:
        return resolve(domain, method, **options)

    def for_definition(self, options: Any, definition: Definition, given: dict, domain: Domain) -> Any:
        return gaussian_counts(options, definition, given, domain)

    def run_set(self, request: SetRequest) -> SetResult:
        draw, diag = synthesize_set(request.data, request.domain, request.options, request.budget, request.rng,
                                    request.ledger, request.label, request.context)
        return SetResult(draw, None, diag)

    def noise_rows(self, options: Any, domain: Domain, budget: Budget, sets: int, n: float, neighbours: Neighbours,
                   definition: Definition) -> list[NoiseRow]:
        return noise_rows(options, domain, budget, sets, n, neighbours, definition)

    def preview_rows(self, options: Any, domain: Domain, budget: Budget, neighbours: Neighbours, n: float,
                     definition: Definition) -> list[dict]:
        return preview_rows(options, domain, budget, neighbours, n, definition)


#: the registry's entries of this module
METHODS: tuple[Method, ...] = (PrivBayes(),)
