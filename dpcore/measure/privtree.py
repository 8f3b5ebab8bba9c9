"""PrivTree bins of one numeric column: a DP hierarchical split of [lower, upper] (Zhang, Xiao & Xie 2016), 1-D.

The interval [lower, upper] (public, or DP bounds: a DP output) is the root, at depth 0. Each node v, an
interval, is tested once: with c(v) its number of records and d its depth, its biased count is

    b(v) = max(c(v) − d·δ, θ − δ)

and v is split into its two halves (fanout β = 2) when b(v) + Z > θ, Z discrete Laplace of scale λ drawn by
the privacy layer's exact sampler (:class:`dpcore.privacy.mechanisms.DiscreteLaplace`); the leaves are the
bins, and the released edges are the sorted ends of the leaves. The depth is capped by a public
``max_depth`` (and, for whole numbers, by halves of at least one whole number): a node at the cap is a leaf
without a test. Values outside [lower, upper] are clamped into it first (each record on its own).

An optional public cap ``max_leaves`` on the number of bins (dpmm's ``enforce_bins``): the splits the tree
decides are kept in breadth-first order (depth by depth, left to right) while the leaves stay within the cap,
and growing stops there. That is a function of the uncapped tree's output alone (replay its splits in that
order), so post-processing: the guarantee below is unchanged, and the tests not drawn are simply not needed.

Privacy: with δ ≥ λ·ln β the tree is ε-DP for add/remove neighbours with

    ε(λ) = (2 + e^{1/λ}/(β − 1)) / λ      (β = 2: (2 + e^{1/λ}) / λ),

the paper's (2β − 1)/((β − 1)λ) up to the factor e^{1/λ} on its geometric tail, which the discrete
(integer) noise needs in our proof: docs/methods/privtree.md. Replace-one neighbours are a removal and an
addition, so the tree is 2·ε(λ)-DP for them (group privacy): λ is calibrated with the notion's count
sensitivity Δ (1 under add/remove, 2 under replace; :attr:`Neighbours.histogram_sensitivity`), so that
Δ·ε(λ) is the budget. Under zCDP an ε-DP mechanism is ε²/2-zCDP: a budget ρ buys ε = √(2ρ).
What is released is the set of edges only; the counts and the noise are never published.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from dpcore.errors import OptionError, real_number, whole_number
from dpcore.privacy.budget import Budget
from dpcore.privacy.definitions import Definition
from dpcore.privacy.exact_laplace import dyadic_scale
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.maps import pure_cost
from dpcore.privacy.measurement import EXACT_SAMPLER, Measurement
from dpcore.privacy.mechanisms import DiscreteLaplace
from dpcore.privacy.neighbours import Neighbours
from dpcore.privacy.stability import Norm, Sensitivity
from dpcore.privacy.zcdp import rho_of_pure

#: Fanout β: every split makes two halves.
FANOUT = 2
#: Deepest a node may be (2^20 bins of the root at most): a public cap, so the tree always ends.
MAX_DEPTH = 20
#: PrivTree's depth cap in a release: bins no narrower than 2^-12 of the range (the quantiles' 4096-step grid).
PRIVTREE_MAX_DEPTH = 12
#: PrivTree's threshold θ over DP bounds, as a share of the DP estimate of the records (the bounds' noisy total,
#: post-processing): a node is split while its (biased) count is over about this share of the table.
PRIVTREE_THETA_SHARE = 0.1


def epsilon_of_scale(scale: float, sensitivity: float = 1.0) -> float:
    """ε of the tree with noise scale λ (and δ = λ·ln β): Δ·(2 + e^{1/λ}/(β − 1))/λ (docs/methods/privtree.md)."""
    return sensitivity * (2.0 + math.exp(1.0 / scale) / (FANOUT - 1)) / scale


def sampler_scale(scale: float) -> float:
    """The scale the exact sampler draws at for ``scale``: its dyadic rounding up (more noise, never less)."""
    num, den = dyadic_scale(scale)
    return num / den


def calibrated_scale(epsilon: float, sensitivity: float = 1.0) -> float:
    """The smallest λ (to a relative 10⁻⁹, rounded up) with :func:`epsilon_of_scale` (λ, Δ) ≤ ε, by bisection:
    the map decreases in λ, from the paper's λ₀ = Δ·(2β − 1)/((β − 1)ε) (where it is above ε) upwards."""
    eps = real_number("epsilon of the PrivTree bins", epsilon, 0, lo_open=True)
    lo = sensitivity * (2 * FANOUT - 1) / ((FANOUT - 1) * eps)
    hi = 2.0 * lo
    while epsilon_of_scale(hi, sensitivity) > eps:
        lo, hi = hi, 2.0 * hi
    while hi - lo > 1e-9 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if epsilon_of_scale(mid, sensitivity) <= eps else (mid, hi)
    return hi


@dataclass(frozen=True)
class PrivTreeBins:
    """What PrivTree releases (``edges``, sorted, from ``lower`` to ``upper``) and the public settings it ran
    with: the noise scale λ (the exact sampler's own, rounded up), the depth bias δ, the threshold θ, the
    depth cap, and the ε its map gives (for the neighbour notion's sensitivity)."""

    edges: tuple[float, ...]
    scale: float
    bias: float
    theta: float
    max_depth: int
    epsilon: float

    @property
    def bins(self) -> int:
        return len(self.edges) - 1

    def to_dict(self) -> dict[str, object]:
        return {"edges": list(self.edges), "bins": self.bins, "scale": self.scale, "bias": self.bias,
                "theta": self.theta, "max_depth": self.max_depth, "epsilon": self.epsilon}


def split_cutoffs(counts: Iterable[int], depths: Iterable[int], bias: Fraction, theta: Fraction) -> np.ndarray:
    """For each node (its count and depth), the smallest noise value Z that splits it: b + Z > θ with
    b = max(c − d·δ, θ − δ) holds iff Z ≥ ⌊θ − b⌋ + 1 (Z an integer). Exact rational arithmetic: a
    node's decision depends on its own count only."""
    out = []
    for c, d in zip(counts, depths):
        gap = min(theta - int(c) + int(d) * bias, bias)  # θ − b(v)
        out.append(math.floor(gap) + 1)
    return np.asarray(out, dtype=np.int64)


def split_probability(count: int, depth: int, scale: float, bias: float, theta: float) -> float:
    """P(a node of ``count`` records at ``depth`` splits) under discrete Laplace noise of ``scale`` (for tests)."""
    k = int(split_cutoffs([count], [depth], Fraction(bias), Fraction(theta))[0])
    a = math.exp(-1.0 / scale)
    # P(Z ≥ k) = a^k/(1 + a) for k ≥ 1, and 1 − a^{−k+1}/(1 + a) for k ≤ 0
    return a ** k / (1 + a) if k >= 1 else 1.0 - a ** (1 - k) / (1 + a)


def depth_cap(lower: float, upper: float, integer: bool, max_depth: int) -> int:
    """The public depth cap: ``max_depth``, and for whole numbers no deeper than halves of one number."""
    if not integer:
        return max_depth
    return min(max_depth, max(0, math.floor(math.log2(upper - lower + 1))))


def grow_tree(values: np.ndarray, lower: float, upper: float, scale: float, bias: float, theta: float,
              rng: np.random.Generator, *, integer: bool = False, max_depth: int = MAX_DEPTH,
              max_leaves: int | None = None) -> tuple[float, ...]:
    """The PrivTree edges at the given noise ``scale`` λ, depth ``bias`` δ and threshold θ (the calibration is
    :func:`privtree_edges`'s; this is the algorithm alone, which the audits run under-noised). Breadth first:
    every node of one depth is tested with one vector of exact discrete Laplace draws. ``max_leaves``: the
    splits are kept left to right while the leaves stay within it, then growing stops (post-processing)."""
    mech = DiscreteLaplace(scale)
    x = np.sort(np.clip(np.asarray(values, dtype=float), lower, upper))
    top = upper + 1.0 if integer else upper  # whole numbers: [lower, upper + 1) holds lower … upper
    cap = depth_cap(lower, upper, integer, max_depth)
    delta, th = Fraction(bias), Fraction(theta)
    level = [(float(lower), top)]
    cuts: list[float] = []
    room = math.inf if max_leaves is None else max_leaves - 1  # each split adds one leaf
    for depth in range(cap):
        lo = np.array([a for a, _ in level])
        hi = np.array([b for _, b in level])
        right = np.where(hi >= top, np.searchsorted(x, hi, side="right"), np.searchsorted(x, hi, side="left"))
        counts = right - np.searchsorted(x, lo, side="left")
        split = mech.sample(rng, len(level)) >= split_cutoffs(counts, [depth] * len(level), delta, th)
        nxt = []
        for (a, b), s in zip(level, split):
            if not s or room < 1:
                continue
            mid = math.floor((a + b) / 2) if integer else (a + b) / 2
            if not a < mid < b:  # a float interval too narrow to halve: a leaf
                continue
            cuts.append(mid)
            room -= 1
            nxt += [(a, mid), (mid, b)]
        if not nxt or room < 1:
            break
        level = nxt
    return tuple(float(e) for e in sorted({float(lower), *cuts, float(upper)}))


def privtree_edges(values: ArrayLike, lower: float, upper: float, epsilon: float, rng: np.random.Generator, *,
                   neighbours: Neighbours = Neighbours(), integer: bool = False, theta: float = 0.0,
                   max_depth: int = MAX_DEPTH, max_leaves: int | None = None) -> PrivTreeBins:
    """ε-DP PrivTree edges of ``values`` over the public [lower, upper] (module docstring): λ calibrated so
    that Δ·ε(λ) ≤ ``epsilon`` with Δ the notion's count sensitivity, rounded up to the exact sampler's
    dyadic scale, and δ = λ·ln β rounded up. ``max_leaves``: a public cap on the bins (module docstring).
    No ledger: :func:`privtree_bins` charges one."""
    lo, hi = real_number("lower bound", lower), real_number("upper bound", upper)
    if not hi > lo or not math.isfinite(hi - lo):
        raise OptionError(f"PrivTree bins need bounds with lower < upper; got [{lower!r}, {upper!r}]")
    th = real_number("theta (the PrivTree split threshold)", theta)
    cap = whole_number("max_depth (the PrivTree depth cap)", max_depth, 1, 40)
    if max_leaves is not None:
        max_leaves = whole_number("max_leaves (the PrivTree cap on bins)", max_leaves, 2)
    sens = neighbours.histogram_sensitivity
    lam = sampler_scale(calibrated_scale(epsilon, sens))
    bias = lam * math.log(FANOUT) * (1 + 1e-12)  # δ ≥ λ·ln β, through the rounding of the product
    edges = grow_tree(np.asarray(values, dtype=float), lo, hi, lam, bias, th, rng, integer=integer, max_depth=cap,
                      max_leaves=max_leaves)
    return PrivTreeBins(edges, lam, bias, th, cap, epsilon_of_scale(lam, sens))


@dataclass(frozen=True)
class PrivTreeNoise:
    """The tree's noise as a mechanism with a privacy map, for :class:`~dpcore.privacy.measurement.Measurement`:
    discrete Laplace of ``scale`` λ on every node's test, with δ = λ·ln β; its ε at count sensitivity Δ is
    :func:`epsilon_of_scale` (docs/methods/privtree.md), its ρ that ε²/2."""

    scale: float
    name: ClassVar[str] = "privtree"
    norm: ClassVar[Norm] = "l1"

    def epsilon(self, sensitivity: float = 1.0) -> float:
        return epsilon_of_scale(self.scale, sensitivity)

    def rho(self, sensitivity: float = 1.0) -> float:
        return rho_of_pure(self.epsilon(sensitivity))

    def cost(self, sensitivity: Sensitivity, unit: str) -> Budget:
        """The tree's privacy map at count sensitivity Δ₁ (:func:`epsilon_of_scale`), or its ε²/2."""
        if sensitivity.norm != self.norm:
            raise ValueError(f"PrivTree's map takes an L1 count sensitivity, not {sensitivity.norm}")
        return pure_cost(self.epsilon(sensitivity.value), unit)


def privtree_bins(vals: np.ndarray, lower: float, upper: float, budget: Budget, rng: np.random.Generator,
                  group: Ledger, name: str, neighbours: Neighbours, definition: Definition, *, integer: bool = False,
                  theta: float = 0.0, max_depth: int = MAX_DEPTH, max_leaves: int | None = None) -> PrivTreeBins:
    """PrivTree edges for a release, charged to ``group`` before any noise is drawn: ``budget`` is ε, or ρ under
    zCDP (an ε-DP tree is ε²/2-zCDP, so ε = √(2ρ)); the charge is the map of the scale actually drawn at, at
    most the budget (proof: docs/methods/privtree.md). ``max_leaves``: a public cap on the bins."""
    # the tree is ε-DP; under zCDP it is (ε²/2)-zCDP, so the ρ budget buys ε = √(2ρ)
    eps = budget.value if definition.name == "pure" else math.sqrt(2.0 * budget.value)
    sens = neighbours.histogram_sensitivity
    noise = PrivTreeNoise(sampler_scale(calibrated_scale(eps, sens)))
    leaves = "" if max_leaves is None else f", at most {max_leaves} bins"
    m = Measurement.counts(f"PrivTree bins of '{name}'", noise, neighbours, cells=1,
                           subset=f"non-missing values of '{name}'",
                           note=f"PrivTree over [{lower:g}, {upper:g}] (fanout 2, θ = {theta:g}, depth ≤ {max_depth}"
                                f"{leaves}); ε = Δ·(2 + e^(1/λ))/λ at δ = λ·ln 2 (docs/methods/privtree.md)",
                           sampler=EXACT_SAMPLER)
    return m.draw(group, lambda: privtree_edges(vals, lower, upper, eps, rng, neighbours=neighbours,
                                                integer=integer, theta=theta, max_depth=max_depth,
                                                max_leaves=max_leaves))


def distinct_labels(edges: Sequence[float]) -> tuple[float, ...]:
    """The edges without those whose printed label (``{:g}``, as the domain's bin labels) repeats the previous
    kept one: post-processing, merging bins too narrow to name apart. The outer edges stay."""
    kept = [float(edges[0])]
    for e in edges[1:-1]:
        if f"{e:g}" != f"{kept[-1]:g}":
            kept.append(float(e))
    if f"{edges[-1]:g}" == f"{kept[-1]:g}" and len(kept) > 1:
        kept.pop()
    return (*kept, float(edges[-1]))
