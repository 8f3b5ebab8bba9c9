"""Decomposable models on a junction tree: fit clique tables to margins, sample records from them.

A set of margins (attribute groups) defines a graph on the attributes: two attributes are
joined when some margin holds both. Its chordal completion (greedy min-fill elimination,
Rose, Tarjan & Lueker 1976; Kjærulff 1990) has maximal cliques that can be arranged in a
*junction tree* (a maximum-weight spanning tree of the clique graph, weights = separator
sizes; Jensen & Jensen 1994). Every distribution that is Markov with respect to that tree
is determined by its clique marginals μ_C:

    p(x) = Π_C μ_C(x_C) / Π_(C,D) μ_(C∩D)(x_(C∩D)),

so it can be held, fitted and sampled from in Σ_C |cells of C| memory, never the full
cross-tabulation.

IPF on clique tables (:func:`fit_clique_tables`) runs exactly the iteration of the dense
IPF (Deming & Stephan 1940) from the uniform table: the step p ← p · t_S/p_S for a margin
S inside clique C multiplies C's table by t_S/μ_C[S] and leaves every conditional
p(x_D∖sep | x_sep) of the other cliques (rooted at C) unchanged, so the other tables follow
by one pass outward through the tree, μ_D ← μ_D · μ'_P[sep]/μ_P[sep] (Jiroušek & Přeučil
1995; Lauritzen 1996, §4.3). The uniform start is Markov with respect to any tree, and
every step keeps it so: the iterates are the dense iterates, held as clique marginals.

Sampling (:func:`sample_records`) is forward sampling through the tree: the root clique's
cells from μ_root, then each child's new attributes from μ_D(· | separator).

Privacy: nothing here reads records. Fitting and sampling read only (already noisy)
margins and the public domain: post-processing (Dwork & Roth 2014, Prop 2.1). Used by
``method="ipf"`` (docs/methods/ipf.md) and open to any margin-based synthesizer.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = ["JunctionTree", "junction_tree", "fit_clique_tables", "sample_records"]


@dataclass(frozen=True)
class JunctionTree:
    """Maximal cliques of the chordal completion, arranged as a rooted forest.

    ``cliques[i]``: increasing tuple of attribute indices; ``order``: clique indices with
    every parent before its children; ``parent[i]``: parent clique or -1 (a root);
    ``separator[i]``: ``cliques[i] ∩ cliques[parent[i]]`` (empty for roots).
    """

    shape: tuple[int, ...]
    cliques: tuple[tuple[int, ...], ...]
    parent: tuple[int, ...]
    order: tuple[int, ...]
    separator: tuple[tuple[int, ...], ...]

    def clique_cells(self, i: int) -> int:
        return math.prod(self.shape[a] for a in self.cliques[i])

    @property
    def total_cells(self) -> int:
        """Σ over cliques of their cells (exact int): the memory the fit needs, in cells."""
        return sum(self.clique_cells(i) for i in range(len(self.cliques)))

    @property
    def largest_clique_cells(self) -> int:
        return max(self.clique_cells(i) for i in range(len(self.cliques)))

    def children(self, i: int) -> list[int]:
        return [j for j in self.order if self.parent[j] == i]


def _eliminate(groups: Sequence[Sequence[int]], shape: Sequence[int]) -> list[frozenset]:
    """Greedy min-fill elimination (ties: smallest clique in cells): the cliques it creates."""
    p = len(shape)
    adj = {a: set() for a in range(p)}
    for g in groups:
        for a in g:
            adj[a].update(b for b in g if b != a)
    left = set(range(p))
    created = []
    while left:
        def cost(v):
            nb = [u for u in adj[v] if u in left]
            fill = sum(1 for i, u in enumerate(nb) for w in nb[i + 1:] if w not in adj[u])
            return fill, math.prod(int(shape[u]) for u in nb) * int(shape[v]), v

        v = min(left, key=cost)
        nb = [u for u in adj[v] if u in left]
        for i, u in enumerate(nb):
            for w in nb[i + 1:]:
                adj[u].add(w)
                adj[w].add(u)
        created.append(frozenset(nb) | {v})
        left.remove(v)
    # keep the maximal ones only
    created.sort(key=len, reverse=True)
    maximal = []
    for c in created:
        if not any(c <= m for m in maximal):
            maximal.append(c)
    return maximal


def junction_tree(groups: Sequence[Sequence[int]], shape: Sequence[int]) -> JunctionTree:
    """The junction tree of the chordal completion of the margins' graph.

    ``groups``: the margins as attribute-index tuples; attributes in no margin become
    cliques of their own (uniform and independent, as the dense fit leaves them).
    Only clique sizes are computed, never a table.
    """
    shape = tuple(int(s) for s in shape)
    pairs = {(a, b) for g in groups for a in g for b in g if a < b}
    if len(pairs) == len(shape) * (len(shape) - 1) // 2:
        # a complete graph (e.g. all two-way margins): one clique, the whole table
        return JunctionTree(shape, (tuple(range(len(shape))),), (-1,), (0,), ((),))
    cl = _eliminate(groups, shape)
    cliques = [tuple(sorted(c)) for c in cl]
    k = len(cliques)
    # Kruskal on the clique graph, heaviest separators first: a maximum-weight spanning
    # tree of it is a junction tree (Jensen & Jensen 1994)
    edges = sorted(((len(set(cliques[i]) & set(cliques[j])), i, j) for i in range(k) for j in range(i + 1, k)
                    if set(cliques[i]) & set(cliques[j])), reverse=True)
    root_of = list(range(k))

    def find(i):
        while root_of[i] != i:
            root_of[i] = root_of[root_of[i]]
            i = root_of[i]
        return i

    nbrs = {i: [] for i in range(k)}
    for _, i, j in edges:
        ri, rj = find(i), find(j)
        if ri != rj:
            root_of[ri] = rj
            nbrs[i].append(j)
            nbrs[j].append(i)
    parent, order, seen = [-1] * k, [], set()
    for r in sorted(range(k), key=lambda i: -math.prod(shape[a] for a in cliques[i])):
        if r in seen:
            continue
        seen.add(r)
        queue = [r]
        while queue:
            i = queue.pop(0)
            order.append(i)
            for j in nbrs[i]:
                if j not in seen:
                    seen.add(j)
                    parent[j] = i
                    queue.append(j)
    sep = tuple(tuple(sorted(set(cliques[i]) & set(cliques[parent[i]]))) if parent[i] >= 0 else () for i in range(k))
    return JunctionTree(shape, tuple(cliques), tuple(parent), tuple(order), sep)


def _sum_to(table: np.ndarray, axes: tuple[int, ...], sub: tuple[int, ...], keepdims: bool = False) -> np.ndarray:
    """Marginal of a clique table over clique attributes ``axes`` onto the subset ``sub``."""
    other = tuple(i for i, a in enumerate(axes) if a not in sub)
    return table.sum(axis=other, keepdims=keepdims) if other else table


def _expand(values: np.ndarray, sub: tuple[int, ...], axes: tuple[int, ...]) -> np.ndarray:
    """A table over ``sub`` (⊆ ``axes``, both increasing) shaped to broadcast over ``axes``."""
    return values.reshape([values.shape[sub.index(a)] if a in sub else 1 for a in axes])


def _ratio(t: np.ndarray, cur: np.ndarray) -> np.ndarray:
    """t/cur, with 0 where either is 0 (the dense IPF's rule)."""
    return np.where((t > 0) & (cur > 0), t / np.where(cur > 0, cur, 1.0), 0.0)


def fit_clique_tables(jt: JunctionTree, targets, axes, tol: float = 1e-3, max_iter: int = 5000,
                      total: float = 1.0) -> tuple[list[np.ndarray], dict]:
    """IPF of the decomposable model on ``jt`` to margin ``targets`` (module docstring).

    ``axes[i]`` is the increasing attribute tuple of ``targets[i]``; each must lie in a
    clique. Targets are rescaled to sum to ``total``; an all-zero target is skipped.
    Stops when no clique-table cell moved by ``tol`` or more over a sweep, or after
    ``max_iter`` sweeps. Returns (clique tables summing to ``total``, info with
    iterations, max_change, converged, skipped_margins, lost_mass). No data access.
    """
    shape = jt.shape
    k = len(jt.cliques)
    home, prepared, skipped = [], [], 0
    for t, ax in zip(targets, axes):
        ax = tuple(int(a) for a in ax)
        t = np.asarray(t, dtype=float).reshape([shape[a] for a in ax])
        if np.any(t < 0) or not np.all(np.isfinite(t)):
            raise ValueError("IPF targets must be finite and non-negative")
        s = t.sum()
        if s <= 0:
            skipped += 1
            continue
        c = next((i for i in range(k) if set(ax) <= set(jt.cliques[i])), None)
        if c is None:
            raise ValueError(f"margin over attributes {ax} lies in no clique of the junction tree")
        prepared.append((c, ax, t * (total / s)))
    tables = [np.full([shape[a] for a in jt.cliques[i]], total / jt.clique_cells(i)) for i in range(k)]
    info = {"iterations": 0, "max_change": 0.0, "converged": True, "skipped_margins": skipped, "lost_mass": False}
    if not prepared:
        return tables, info
    # the tree's adjacency, to walk outward from the updated clique
    nbrs = {i: [] for i in range(k)}
    for i in range(k):
        if jt.parent[i] >= 0:
            nbrs[i].append(jt.parent[i])
            nbrs[jt.parent[i]].append(i)
    sep_of = {}
    for i in range(k):
        for j in nbrs[i]:
            sep_of[(i, j)] = tuple(sorted(set(jt.cliques[i]) & set(jt.cliques[j])))

    def propagate(c: int, old: np.ndarray) -> None:
        stack = [(c, j, old) for j in nbrs[c]]
        while stack:
            src, dst, src_old = stack.pop()
            sep = sep_of[(src, dst)]
            new_s = _sum_to(tables[src], jt.cliques[src], sep)
            old_s = _sum_to(src_old, jt.cliques[src], sep)
            if np.array_equal(new_s, old_s):
                continue  # nothing reaches dst or beyond
            dst_old = tables[dst]
            tables[dst] = dst_old * _expand(_ratio(new_s, old_s), sep, jt.cliques[dst])
            stack.extend((dst, j, dst_old) for j in nbrs[dst] if j != src)

    it, converged, change = 0, False, 0.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        while it < max_iter and not converged:
            before = [t.copy() for t in tables]
            for c, ax, t in prepared:
                old = tables[c]
                cur = _sum_to(old, jt.cliques[c], ax)
                tables[c] = old * _expand(_ratio(t, cur), ax, jt.cliques[c])
                propagate(c, old)
            it += 1
            change = max(float(np.abs(a - b).max()) for a, b in zip(tables, before))
            converged = change < tol
    info.update(iterations=it, max_change=change, converged=bool(converged))
    for i in range(k):
        s = tables[i].sum()
        if not s > 0:
            info["lost_mass"] = True
            tables = [np.full([shape[a] for a in jt.cliques[j]], total / jt.clique_cells(j)) for j in range(k)]
            break
        tables[i] = tables[i] * (total / s)
    return tables, info


def sample_records(jt: JunctionTree, tables: Sequence[np.ndarray], n: int, rng: np.random.Generator) -> np.ndarray:
    """n i.i.d. records (codes, shape (n, p)) from the decomposable model, by forward sampling.

    Root cliques: a multinomial draw of n cells, shuffled (the same law as n i.i.d. draws);
    each child clique: its attributes outside the separator from μ_D(· | separator) by
    inverse CDF, one uniform per record. Post-processing of the fitted tables.
    """
    p = len(jt.shape)
    out = np.zeros((n, p), dtype=np.int64)
    for i in jt.order:
        cl = jt.cliques[i]
        sep = jt.separator[i]
        new = tuple(a for a in cl if a not in sep)
        table = np.clip(np.asarray(tables[i], dtype=float), 0, None)
        if not new:
            continue
        # rows: separator cells; columns: cells of the new attributes
        perm = [cl.index(a) for a in sep] + [cl.index(a) for a in new]
        rows = math.prod(jt.shape[a] for a in sep)
        cond = table.transpose(perm).reshape(rows, -1)
        mass = cond.sum(axis=1, keepdims=True)
        # a separator cell the parent gives mass but this table does not (rounding only): uniform
        cond = np.where(mass > 0, cond / np.where(mass > 0, mass, 1.0), 1.0 / cond.shape[1])
        if sep:
            r = np.ravel_multi_index(tuple(out[:, sep].T), [jt.shape[a] for a in sep])
        else:
            r = np.zeros(n, dtype=np.int64)
        if not sep:
            counts = rng.multinomial(n, cond[0] / cond[0].sum())
            cells = np.repeat(np.arange(cond.shape[1]), counts)[rng.permutation(n)]
        else:
            cum = np.cumsum(cond, axis=1)
            cum[:, -1] = 1.0  # guard against rounding below 1
            flat = (cum + np.arange(rows)[:, None]).ravel()
            u = rng.random(n)
            cells = np.searchsorted(flat, r + u, side="right") - r * cond.shape[1]
            cells = np.clip(cells, 0, cond.shape[1] - 1)
        codes = np.unravel_index(cells, [jt.shape[a] for a in new])
        for a, c in zip(new, codes):
            out[:, a] = c
    return out
