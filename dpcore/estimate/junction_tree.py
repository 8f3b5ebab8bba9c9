"""Decomposable models on a junction tree: fit to margins by IPF, marginals, sampling.

The estimation step of the margin methods (``ipf`` on wide tables, AIM, MST): given count
tables on some sets of attributes, find a table over the full cross-tabulation whose
margins match them, without ever allocating that table (``cps_voter_wide`` has 6.5·10^17
cells). Memory is Σ over cliques of their cells.

* **Structure.** The graph joining every pair of attributes measured together is made
  chordal by greedy elimination (always the attribute whose neighbourhood has the fewest
  cells, as Private-PGM does); the maximal cliques of the elimination are joined by a
  maximum-weight spanning tree on separator sizes, which is a junction tree (Jensen &
  Jensen 1994; Koller & Friedman 2009, Thm 10.4). Components are joined by empty
  separators, so the tree is one tree. A distribution Markov with respect to it is
  p(x) = Π_C μ_C(x_C) / Π_S μ_S(x_S) over cliques C and separators S; only the clique
  tables μ_C are stored.
* **Fit.** Iterative proportional fitting (Deming & Stephan 1940): the step for a margin A
  with target t_A, p ← p · t_A/p_A (the I-projection onto {q : q_A = t_A}, Csiszár 1975),
  multiplies p by a function of x_A, so rooted at a clique C ⊇ A it changes μ_C to
  μ_C · t_A/μ_C[A] and leaves every other clique's conditional μ_D/μ_S unchanged. Only the
  clique holding the change is updated; before a step at another clique the change is
  passed along the tree path to it by Hugin absorption (μ_D ← μ_D · μ_S^new/μ_S^old), which
  keeps Π μ_C / Π μ_S equal to p (Jiroušek & Přeučil 1995; Lauritzen 1996, §4.3). The
  uniform start is Markov with respect to the tree and every step keeps it so, so the
  iterates *are* the dense IPF's iterates for the same order of margins
  (``order="given"``, what ``ipf`` uses); ``order="tree"`` visits the cliques depth-first
  (fewer absorptions; what AIM and MST use). After the last sweep one pass from the
  active clique calibrates every clique. With consistent targets the fit converges to
  the maximum-entropy table with those margins (the ML fit of the decomposable model).
* **Targets of noisy measurements** (:func:`pooled_targets`): repeated measurements of one
  set are combined by inverse-variance weighting (:func:`combine`), nested ones
  (A ⊂ B) are made to agree (:func:`reconcile_nested`), and each target is projected onto
  {t ≥ 0, Σt = total} (Euclidean projection onto the scaled simplex, Duchi et al. 2008).
* **Marginals** on any set: from one clique when it covers the set, otherwise by
  contracting the clique tables of the smallest subtree covering it (conditionals
  μ_C/μ_S, ``numpy.einsum``).
* **Sampling**: forward sampling from the root clique through the conditionals
  μ_D(· | separator), one uniform per record and clique (inverse CDF).

Privacy: nothing here reads records. Every input is an already-noisy count table and
the public domain, so the fit, marginals and samples are post-processing
(Dwork & Roth 2014, Prop 2.1). Used by ``method="ipf"`` (docs/methods/ipf.md),
``method="aim"`` (docs/methods/aim.md) and ``method="mst"`` (docs/methods/mst.md).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.cluster.hierarchy import DisjointSet

from dpcore.errors import ResourceError
from dpcore.estimate.dense_ipf import scaled_targets
from dpcore.estimate.estimator import check_margins
from dpcore.measure.margins import NoisyMargin

__all__ = ["BYTES_PER_CELL", "JunctionTree", "DecomposableModel", "JunctionTreeIPF", "elimination_cliques",
           "model_cells", "project_simplex", "combine", "reconcile_nested", "pooled_targets", "sum_to", "expand_to"]

#: bytes per stored cell (float64), for model sizes in MB as AIM states them
BYTES_PER_CELL = 8
#: margin visiting orders and stopping rules of :meth:`DecomposableModel.fit`
ORDERS = ("tree", "given")
STOPS = ("gap", "change")


def cells(shape, attrs) -> int:
    return math.prod(int(shape[a]) for a in attrs)


def elimination_cliques(shape, sets) -> list[tuple[int, ...]]:
    """Maximal cliques of the chordal graph that greedy elimination makes of ``sets``.

    Every attribute of ``shape`` is a vertex, so an attribute in no set is a clique
    of its own. The elimination cost of a vertex is the number of cells of it and its
    remaining neighbours (ties: lowest index). Only clique sizes are computed, never a table."""
    d = len(shape)
    adj: list[set[int]] = [set() for _ in range(d)]
    for s in sets:
        for a in s:
            adj[a].update(b for b in s if b != a)
    if all(len(a) == d - 1 for a in adj):
        return [tuple(range(d))]  # a complete graph (e.g. all two-way margins): the whole table
    remaining = set(range(d))
    cost = {u: cells(shape, adj[u] | {u}) for u in remaining}  # only v's neighbours' costs change below
    found = []
    while remaining:
        v = min(remaining, key=lambda u: (cost[u], u))
        nb = adj[v]
        found.append(frozenset(nb | {v}))
        for a in nb:
            adj[a] |= nb - {a}
            adj[a].discard(v)
            cost[a] = cells(shape, adj[a] | {a})
        remaining.discard(v)
        adj[v] = set()
    maximal: list[frozenset[int]] = []
    for c in sorted(set(found), key=len, reverse=True):
        if not any(c <= m for m in maximal):
            maximal.append(c)
    return [tuple(sorted(c)) for c in maximal]


def model_cells(shape, sets) -> int:
    """Cells stored by the junction tree of ``sets`` (the sum over its cliques; exact int)."""
    return sum(cells(shape, c) for c in elimination_cliques(shape, sets))


@dataclass
class JunctionTree:
    """Cliques (sorted attribute tuples), each one's parent (−1 at the root) and a
    root-first order. Cliques in different components are joined by empty separators."""

    shape: tuple
    cliques: list
    parent: list
    order: list
    depth: list = field(default_factory=list)

    @classmethod
    def build(cls, shape, sets) -> JunctionTree:
        cl = elimination_cliques(shape, sets)
        k = len(cl)
        # Kruskal on -|separator| over all pairs: a maximum-weight spanning tree
        pairs = sorted((-len(set(cl[i]) & set(cl[j])), i, j) for i in range(k) for j in range(i + 1, k))
        joined = DisjointSet(range(k))
        nbrs: list[list[int]] = [[] for _ in range(k)]
        for _, i, j in pairs:
            if joined.merge(i, j):  # True when i and j were in different components
                nbrs[i].append(j)
                nbrs[j].append(i)
        parent, depth, order = [-1] * k, [0] * k, [0]
        seen = {0}
        for v in order:  # breadth-first from clique 0
            for u in nbrs[v]:
                if u not in seen:
                    seen.add(u)
                    parent[u], depth[u] = v, depth[v] + 1
                    order.append(u)
        return cls(tuple(int(s) for s in shape), cl, parent, order, depth)

    def separator(self, child: int) -> tuple[int, ...]:
        """``cliques[child] ∩ cliques[parent]`` (empty at the root)."""
        p = self.parent[child]
        return tuple(a for a in self.cliques[child] if a in self.cliques[p]) if p >= 0 else ()

    def path(self, a: int, b: int) -> list[int]:
        """Cliques from a to b along the tree, both ends included."""
        up, down = [a], [b]
        while up[-1] != down[-1]:
            if self.depth[up[-1]] >= self.depth[down[-1]]:
                up.append(self.parent[up[-1]])
            else:
                down.append(self.parent[down[-1]])
        return up + down[-2::-1]

    def home(self, attrs) -> int:
        """The smallest clique containing ``attrs`` (−1 if none does)."""
        s = set(attrs)
        best = [i for i, c in enumerate(self.cliques) if s <= set(c)]
        return min(best, key=lambda i: cells(self.shape, self.cliques[i])) if best else -1

    @property
    def cells(self) -> int:
        """Σ over cliques of their cells (exact int): the memory of the model, in cells."""
        return sum(cells(self.shape, c) for c in self.cliques)


def sum_to(table: np.ndarray, axes: tuple, keep: tuple) -> np.ndarray:
    """Sum a table over ``axes`` (sorted attribute ids) down to ``keep`` (a sorted subset)."""
    kept = [i for i, a in enumerate(axes) if a in keep]
    if len(kept) == len(axes):
        return table
    # einsum's reduction is 2-4x faster than ndarray.sum over several non-trailing axes on clique tables
    # (bench/RESULTS.md, "AIM at 15 attributes under pure ε"); the sums agree to rounding.
    return np.einsum(table, list(range(len(axes))), kept)


def expand_to(table: np.ndarray, sub: tuple, axes: tuple) -> np.ndarray:
    """View a table on ``sub`` ⊆ ``axes`` (both sorted) with singleton axes for broadcasting."""
    return table.reshape([table.shape[sub.index(a)] if a in sub else 1 for a in axes])


def _ratio(new: np.ndarray, old: np.ndarray) -> np.ndarray:
    """new/old, 0 where old is 0 (the dense IPF's rule: a cell at 0 stays at 0), and 0 where the quotient
    overflows: a subnormal old cell (mirror descent's multiplicative updates leave some at 1e-310) counts as
    0 instead of giving inf, and NaN after it. Wherever new/old is finite the quotient is unchanged."""
    q = np.zeros(np.broadcast_shapes(np.shape(new), np.shape(old)))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        np.divide(new, old, out=q, where=old > 0)  # one pass, no temporaries (a hot loop of AIM's rounds)
    q[~np.isfinite(q)] = 0.0
    return q


def project_simplex(y: np.ndarray, total: float) -> np.ndarray:
    """Euclidean projection of y onto {t ≥ 0, Σ t = total} (Duchi et al. 2008)."""
    v = np.asarray(y, dtype=float).ravel()
    if total <= 0:
        return np.zeros_like(v).reshape(np.shape(y))
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - total
    idx = np.arange(1, len(u) + 1)
    rho = np.nonzero(u - css / idx > 0)[0][-1]
    theta = css[rho] / (rho + 1)
    return np.maximum(v - theta, 0.0).reshape(np.shape(y))


#: the smallest noise variance the inverse-variance weights divide by: a margin known exactly (variance 0,
#: or one so small it underflows, as discrete Laplace at ε in the thousands) weighs 10¹² per record², which
#: keeps its values for all purposes and keeps the weights finite
VARIANCE_FLOOR = 1e-12


def _inverse(variance: float) -> float:
    return 1.0 / max(float(variance), VARIANCE_FLOOR)


def combine(measurements: Iterable[NoisyMargin]) -> dict:
    """Inverse-variance combination of repeated measurements of one set.

    Returns {axes: (combined values, variance)}."""
    acc: dict = {}
    for m in measurements:
        axes, y = m.axes, m.values
        w = _inverse(m.variance)
        if axes in acc:
            s, ws = acc[axes]
            acc[axes] = (s + w * np.asarray(y, float), ws + w)
        else:
            acc[axes] = (w * np.asarray(y, float), w)
    return {a: (s / ws, 1.0 / ws) for a, (s, ws) in acc.items()}


def reconcile_nested(combined: dict, shape) -> dict:
    """Make nested measurements agree before the fit: for measured sets A ⊂ B, the A-margin of B's
    table (k = cells(B)/cells(A) cells summed, variance k·v_B) and A's own table are combined by
    inverse-variance weights; A gets the combination and B is moved onto it by spreading the
    difference evenly over the k cells (the least-squares change of B with that A-margin).
    Larger sets first. ``combined``: {axes: (values, variance per cell)} as from :func:`combine`.
    Post-processing of noisy values only."""
    out = {a: (np.asarray(y, float).reshape([shape[i] for i in a]), float(v)) for a, (y, v) in combined.items()}
    for big in sorted(out, key=len, reverse=True):
        for small in sorted(out, key=len):
            if len(small) >= len(big) or not set(small) <= set(big):
                continue
            y_big, v_big = out[big]
            y_small, v_small = out[small]
            m = sum_to(y_big, big, small)
            k = y_big.size / m.size
            w_small, w_m = _inverse(v_small), _inverse(k * v_big)
            c = (w_small * y_small + w_m * m) / (w_small + w_m)
            out[big] = (y_big + expand_to((c - m) / k, small, big), v_big)
            out[small] = (c, 1.0 / (w_small + w_m))
    return out


def _depth_first(tree: JunctionTree) -> list[int]:
    """The cliques in depth-first order from the root: consecutive cliques are close in the tree."""
    kids: list[list[int]] = [[] for _ in range(len(tree.cliques))]
    for c in tree.order[1:]:
        kids[tree.parent[c]].append(c)
    dfs, stack = [], [tree.order[0]]
    while stack:
        v = stack.pop()
        dfs.append(v)
        stack.extend(reversed(kids[v]))
    return dfs


def _fit_steps(tree: JunctionTree, shape, targets: dict, order: str) -> list[tuple[int, tuple, np.ndarray]]:
    """IPF's updates, (home clique, axes, target table), in the order :meth:`DecomposableModel.fit`
    visits them: ``"tree"`` clique by clique, depth-first; ``"given"`` as ``targets`` lists them."""
    steps = []
    for axes, t in targets.items():
        axes = tuple(axes)
        h = tree.home(axes)
        if h < 0:
            raise ValueError(f"margin over attributes {axes} lies in no clique of the junction tree")
        steps.append((h, axes, np.asarray(t, float).reshape([shape[a] for a in axes])))
    if order == "tree":
        rank = {c: i for i, c in enumerate(_depth_first(tree))}
        steps.sort(key=lambda s: rank[s[0]])  # stable: a clique's margins in the given order
    return steps


class DecomposableModel:
    """Clique tables μ_C of a calibrated junction tree (see the module docstring)."""

    def __init__(self, tree: JunctionTree, total: float):
        self.tree = tree
        self.total = float(total)
        self.mu = [np.full([tree.shape[a] for a in c], self.total / cells(tree.shape, c)) for c in tree.cliques]
        self.active = 0

    @classmethod
    def from_cliques(cls, tree: JunctionTree, total: float, mu: Sequence[np.ndarray]) -> DecomposableModel:
        """The model with clique tables ``mu`` (calibrated by the caller: consistent on every
        separator, each summing to ``total``), e.g. from belief propagation."""
        model = cls(tree, total)
        # copied: fitting and calibrating multiply the tables in place, and the caller keeps its arrays
        model.mu = [np.array(m, dtype=float) for m in mu]
        return model

    # ---------------------------------------------------------------- fitting
    def _absorb(self, src: int, dst: int) -> None:
        """Pass the change at clique ``src`` to its tree neighbour ``dst`` (Hugin absorption)."""
        t = self.tree
        cs, cd = t.cliques[src], t.cliques[dst]
        sep = tuple(a for a in cd if a in cs)
        new = sum_to(self.mu[src], cs, sep)
        old = sum_to(self.mu[dst], cd, sep)
        self.mu[dst] *= expand_to(_ratio(new, old), sep, cd)  # in place: the model owns its tables

    def _move_to(self, target: int) -> None:
        p = self.tree.path(self.active, target)
        for a, b in zip(p, p[1:]):
            self._absorb(a, b)
        self.active = target

    def calibrate(self) -> None:
        """Pass the pending change from the active clique to every clique."""
        t = self.tree
        k = len(t.cliques)
        nbrs: list[list[int]] = [[] for _ in range(k)]
        for c in range(k):
            if t.parent[c] >= 0:
                nbrs[c].append(t.parent[c])
                nbrs[t.parent[c]].append(c)
        stack, seen = [self.active], {self.active}
        while stack:
            v = stack.pop()
            for u in nbrs[v]:
                if u not in seen:
                    seen.add(u)
                    self._absorb(v, u)
                    stack.append(u)

    def on_tree(self, tree: JunctionTree, floor: float = 0.0) -> DecomposableModel:
        """This model's distribution carried to ``tree`` (a warm start): each of ``tree``'s cliques gets
        this model's marginal on it (the clique tables of the distribution Markov on ``tree`` closest
        to this one in KL; this one itself when it is Markov on ``tree``), every cell at least ``floor``
        records (so that proportional fitting can move a cell this model put at 0), calibrated from
        the root. With the same cliques and ``floor`` 0 the tables are copied as they are."""
        if tree.cliques == self.tree.cliques and floor <= 0:
            out = DecomposableModel.from_cliques(tree, self.total, self.mu)
            out.active = self.active
            return out
        mu = [np.maximum(self.marginal(c), floor) for c in tree.cliques]
        out = DecomposableModel.from_cliques(tree, self.total, mu)
        out.active = tree.order[0]
        out.calibrate()
        scale = self.total / max(float(out.mu[tree.order[0]].sum()), 1e-300)
        out.mu = [m * scale for m in out.mu]
        return out

    @classmethod
    def fit(cls, shape, targets: dict, total: float, *, max_sweeps: int = 200, tol: float = 1e-3,
            tree: JunctionTree | None = None, order: str = "tree", stop: str = "gap", stall: float = 0.0,
            start: DecomposableModel | None = None, floor: float = 0.0) -> tuple[DecomposableModel, dict]:
        """Fit to ``targets`` {sorted axes: non-negative table summing to ``total``} by IPF.

        ``order="tree"`` visits the margins clique by clique, depth-first; ``"given"`` in the
        order of ``targets`` (then the iterates are the dense IPF's). ``stop="gap"``: stop when,
        over a sweep, no fitted margin cell was ``tol`` (in counts) or more from its target
        before its update; ``stop="change"``: when no clique-table cell moved by ``tol`` or more
        over a sweep (mipfp's rule, which also ends on inconsistent targets, where the gap
        never closes; it calibrates every clique after each sweep). ``stall`` > 0 (with
        ``stop="gap"``) also stops when a sweep's gap is above (1 − ``stall``) × the previous
        sweep's: on inconsistent targets the gap settles at a positive value instead of closing.
        Either way at most ``max_sweeps`` sweeps. ``start``: begin from that model carried to this
        tree (:meth:`on_tree`, cells floored at ``floor`` records) instead of the uniform table (a
        warm start). Info: sweeps, max_gap (or max_change), converged, stalled, cliques,
        model_cells, lost_mass (every cell went to 0: the targets' zeros exclude the whole
        table; the model is then uniform)."""
        if order not in ORDERS or stop not in STOPS:
            raise ValueError(f"order must be one of {ORDERS} and stop one of {STOPS}; got {order!r}, {stop!r}")
        tree = tree or JunctionTree.build(shape, list(targets))
        model = cls(tree, total) if start is None else start.on_tree(tree, floor)
        steps = _fit_steps(tree, shape, targets, order)
        sweeps, gap, change, stalled = 0, 0.0, 0.0, False
        with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
            for sweeps in range(1, max_sweeps + 1):  # read after the loop: the sweeps run
                last, gap = gap, 0.0
                before = [m.copy() for m in model.mu] if stop == "change" else []
                for c, axes, t in steps:
                    if c != model.active:
                        model._move_to(c)
                    cax = tree.cliques[c]
                    cur = sum_to(model.mu[c], cax, axes)
                    gap = max(gap, float(np.abs(cur - t).max()))
                    model.mu[c] *= expand_to(_ratio(t, cur), axes, cax)
                if stop == "change":
                    model.calibrate()
                    change = max(float(np.abs(a - b).max()) for a, b in zip(model.mu, before))
                    if change < tol:
                        break
                elif gap < tol:
                    break
                elif stall > 0 and sweeps > 1 and gap > (1 - stall) * last:
                    stalled = True
                    break
        model.calibrate()
        lost = not all(m.sum() > 0 for m in model.mu)
        if lost:
            model = cls(tree, total)
        info = {"sweeps": sweeps, "max_gap": gap, "converged": (change if stop == "change" else gap) < tol,
                "stalled": stalled,
                "cliques": len(tree.cliques), "model_cells": tree.cells, "lost_mass": lost}
        if stop == "change":
            info["max_change"] = change
        return model, info

    # ---------------------------------------------------------------- queries
    def marginal(self, attrs) -> np.ndarray:
        """The model's table on ``attrs`` (axes in increasing attribute order)."""
        attrs = tuple(sorted(int(a) for a in attrs))
        t = self.tree
        h = t.home(attrs)
        if h >= 0:
            return sum_to(self.mu[h], t.cliques[h], attrs)
        # smallest subtree whose cliques cover attrs: union of paths between one home per attribute
        homes = [t.home((a,)) for a in attrs]
        nodes = set()
        for h in homes[1:]:
            nodes.update(t.path(homes[0], h))
        root = homes[0]
        nodes.add(root)
        local = sorted({a for c in nodes for a in t.cliques[c]})
        if len(local) > 52:
            raise ResourceError(f"a margin of the model spans {len(local)} attributes (limit 52); lower max_model_size")
        ids = {a: i for i, a in enumerate(local)}
        # einsum's sublist form: operands alternate (table, its axes), so the list holds both types
        ops: list[Any] = [self.mu[root], [ids[a] for a in t.cliques[root]]]
        # parent of each subtree node towards the root, along the tree paths
        for c in nodes - {root}:
            p = t.path(c, root)[1]
            cax, pax = t.cliques[c], t.cliques[p]
            sep = tuple(a for a in cax if a in pax)
            cond = self.mu[c] * expand_to(_ratio(np.ones(1), sum_to(self.mu[c], cax, sep)), sep, cax) if sep else \
                self.mu[c] / max(self.mu[c].sum(), 1e-300)
            ops += [cond, [ids[a] for a in cax]]
        out = np.einsum(*ops, [ids[a] for a in attrs], optimize="greedy")
        return np.asarray(out)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n i.i.d. records (codes, shape (n, d)) drawn from the model, root clique first: each
        clique's new attributes from μ_C(· | separator) by inverse CDF, one uniform per record.
        A separator cell this clique gives no mass (rounding only) draws uniformly."""
        t = self.tree
        d = len(t.shape)
        out = np.zeros((n, d), dtype=np.int64)
        for c in t.order:
            cax = t.cliques[c]
            mu = np.clip(self.mu[c], 0.0, None)
            sep = t.separator(c)
            rest = tuple(a for a in cax if a not in sep)
            perm = [cax.index(a) for a in sep + rest]
            tab = np.transpose(mu, perm).reshape(cells(t.shape, sep), cells(t.shape, rest))
            rowsum = tab.sum(axis=1, keepdims=True)
            cdf = np.cumsum(np.where(rowsum > 0, tab, 1.0), axis=1)
            cdf /= cdf[:, -1:]
            cdf[:, -1] = 1.0
            row = (np.ravel_multi_index(tuple(out[:, a] for a in sep), [t.shape[a] for a in sep])
                   if sep else np.zeros(n, np.int64))
            flat = (np.arange(tab.shape[0])[:, None] + cdf).ravel()
            j = np.searchsorted(flat, row + rng.random(n), side="right") - row * tab.shape[1]
            j = np.minimum(j, tab.shape[1] - 1)
            if rest:
                vals = np.unravel_index(j, [t.shape[a] for a in rest])
                for a, v in zip(rest, vals):
                    out[:, a] = v
        return out


def pooled_targets(shape, margins: Sequence[NoisyMargin], total: float) -> dict:
    """The targets of noisy margins that may repeat and nest: combined (:func:`combine`),
    nested ones reconciled (:func:`reconcile_nested`), each projected onto
    {t ≥ 0, Σt = total} (:func:`project_simplex`). {axes: target}. Post-processing."""
    return {axes: project_simplex(y, total) for axes, (y, _) in reconcile_nested(combine(margins), shape).items()}


@dataclass(frozen=True)
class JunctionTreeIPF:
    """IPF on the clique tables of the margins' junction tree (:class:`DecomposableModel`).

    ``targets``: ``pooled`` (:func:`pooled_targets`: repeated measurements combined by inverse
    variance, nested ones reconciled, each projected onto the simplex; what AIM and MST fit)
    or ``scaled`` (each margin rescaled to the total, all-zero ones skipped, as the dense IPF
    does: :func:`dpcore.estimate.dense_ipf.scaled_targets`). ``order``, ``stop``, ``tol`` and
    ``max_sweeps`` are :meth:`DecomposableModel.fit`'s; ``tree``: the junction tree when the
    caller has built it already (else built from the margins). :meth:`like_dense` gives the
    options under which the iterates are the dense IPF's. Model: :class:`DecomposableModel`.
    ``stall``, ``start`` and ``floor`` (a warm start from an earlier fit and a sweep count that
    stops when the gap stops shrinking) are :meth:`DecomposableModel.fit`'s.
    Diagnostics: iterations (sweeps), converged, stalled, max_gap (``stop="gap"``) or max_change
    (``stop="change"``), skipped_margins, lost_mass."""

    max_sweeps: int = 200
    tol: float = 1e-3
    targets: str = "pooled"
    order: str = "tree"
    stop: str = "gap"
    tree: JunctionTree | None = None
    stall: float = 0.0
    start: DecomposableModel | None = None
    floor: float = 0.0

    @classmethod
    def like_dense(cls, tol: float = 1e-3, max_sweeps: int = 5000, tree: JunctionTree | None = None) -> JunctionTreeIPF:
        """The dense IPF (:class:`dpcore.estimate.dense_ipf.DenseIPF`) held on clique tables:
        margins rescaled to the total and visited in the given order, mipfp's stopping rule."""
        return cls(max_sweeps, tol, "scaled", "given", "change", tree)

    def fit(self, shape: Sequence[int], margins: Sequence[NoisyMargin],
            total: float) -> tuple[DecomposableModel, dict]:
        shape = check_margins(shape, margins)
        skipped, tree = 0, self.tree
        if self.targets == "pooled":
            targets = pooled_targets(shape, margins, total)
        elif self.targets == "scaled":
            scaled, skipped = scaled_targets([m.values for m in margins], [m.axes for m in margins], shape, total)
            targets = dict(scaled)
            tree = tree or JunctionTree.build(shape, [m.axes for m in margins])  # skipped margins included
        else:
            raise ValueError(f"targets must be 'pooled' or 'scaled'; got {self.targets!r}")
        model, fit = DecomposableModel.fit(shape, targets, total, max_sweeps=self.max_sweeps, tol=self.tol, tree=tree,
                                           order=self.order, stop=self.stop, stall=self.stall, start=self.start,
                                           floor=self.floor)
        gap = {"max_change": fit["max_change"]} if self.stop == "change" else {"max_gap": fit["max_gap"]}
        return model, {"iterations": fit["sweeps"], **gap, "converged": bool(fit["converged"]),
                       "stalled": fit["stalled"],
                       "skipped_margins": skipped, "lost_mass": fit["lost_mass"]}
