"""DP quantiles and data-adapted bin edges by the exponential mechanism (Smith 2011).

Privacy: each quantile is one run of :func:`dpcore.privacy.mechanisms.exponential_mechanism`
over a PUBLIC grid of candidate points inside declared public bounds
``[lower, upper]``, with the rank utility

    u_q(x) = -| #{records with value < x} - q·n |,

n being the number of non-missing values. One record added or removed changes the
count by at most 1 and q·n by q, so |Δu| ≤ max(q, 1-q) ≤ 1; one record replaced
changes the count by at most 1 and n not at all, so |Δu| ≤ 1. The sensitivity used is
1 under both neighbour notions. Each quantile is ε_q-DP (McSherry & Talwar 2007);
k-1 quantiles for k bins compose sequentially to (k-1)·ε_q. Sorting, dropping
repeated edges and adding the public bounds are post-processing. Missing values and
values outside the bounds are handled by the utility itself (a missing value counts
nowhere; a value below ``lower`` is below every candidate) and do not change Δu.

Exactness: the output law is, exactly, P(x) ∝ exp(ε·ã(x)) over the grid points x,
with ã the mechanism's quantised utility (its exact sampler accounts for the
quantisation, docs/mechanisms.md). Equivalently: an interval between consecutive
sorted data values is chosen with probability ∝ (grid points in it)·exp(ε·u/(2Δu)),
then a grid point uniformly inside it. This is Smith's continuous mechanism with the
uniform measure on [lower, upper] replaced by the uniform measure on the public grid.
Proof and discussion: docs/methods/dp-quantiles.md.

``dp_bins`` (:func:`apply_dp_bins`) finds the edges of an attribute inside its bounds by one of
:data:`BIN_METHODS`: these quantiles, or PrivTree's leaves (:func:`dpcore.measure.privtree.privtree_bins`,
ε-DP by docs/methods/privtree.md), the bin count then a public cap on the leaves.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from dpcore.data.domain import (
    DEFAULT_NUMERIC_BINS,
    DP_BOUNDS,
    DP_PRIVTREE,
    DP_QUANTILES,
    Domain,
    dtype_kind,
    numeric_attribute,
)
from dpcore.errors import OptionError, real_number, whole_number
from dpcore.measure.bounds import dp_bounds
from dpcore.measure.privtree import PRIVTREE_MAX_DEPTH, PRIVTREE_THETA_SHARE, distinct_labels, privtree_bins
from dpcore.privacy.budget import Budget, zero_like
from dpcore.privacy.definitions import Definition, PureDP
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.measurement import EXACT_SAMPLER, Measurement
from dpcore.privacy.mechanisms import ExponentialMechanism, exponential_probabilities
from dpcore.privacy.neighbours import Neighbours

#: |Δu| of the rank utility under add/remove and replace (see the module docstring).
RANK_SENSITIVITY = 1.0
#: Default number of grid steps over [lower, upper] for float columns.
DEFAULT_GRID = 4096
#: Most grid points accepted (the exact sampler handles this many candidates at once).
MAX_GRID = 1 << 16
#: Share of ε spent on DP bin edges when ``dp_bins`` is given and ``bins_share`` is not.
DEFAULT_BINS_SHARE = 0.1
MAX_DP_BINS = 200
#: How ``dp_bins`` (and ``domain="dp"``'s ``domain_bins``) find the edges inside the bounds.
QUANTILES, PRIVTREE = "quantiles", "privtree"
BIN_METHODS = (QUANTILES, PRIVTREE)
#: The default method of ``dp_bins`` (``bins_method``, or a spec's "method"): PrivTree, at or under dpmm's
#: normalised W1 on 14 of 18 columns against 12 for the quantiles (AIM at (1, 10⁻⁹) inside the corpus's declared
#: bounds), and at or under the quantiles' W1 on 88 of the corpus's 102 numeric columns (bench/RESULTS.md,
#: "PrivTree inside the declared bounds").
DEFAULT_DP_BINS_METHOD = PRIVTREE
#: The bins of a spec that does not say: k for the quantiles; the cap on PrivTree's leaves. 16, not 32: the
#: same wins against dpmm on its 18 columns, as close to the data over the corpus (at seed 0, at or under 32's
#: W1 on 58 of 99 columns, 36 of them equal), and AIM on flights (150,000 records) finishes in 107 s where 32
#: bins went over 600 s (bench/RESULTS.md).
DEFAULT_PRIVTREE_BINS = 16
#: Share of an attribute's budget spent on its DP bounds when it has no public ones (the rest: its quantiles).
BOUNDS_FRACTION = 0.3


def candidate_grid(lower: float, upper: float, *, integer: bool = False, grid: int | None = None) -> np.ndarray:
    """The public candidate points strictly inside (lower, upper).

    Float columns: ``grid`` equal steps (default 4096), interior points only.
    Whole-number columns: a step of at least 1 (a whole number), so every bin keeps a
    whole number inside it. Depends on the public bounds only, never on the data.
    """
    lo = real_number("lower bound", lower)
    hi = real_number("upper bound", upper)
    if not hi > lo or not math.isfinite(hi - lo):
        raise OptionError(f"DP bins need public bounds with lower < upper; got [{lower!r}, {upper!r}]")
    k = whole_number("grid", DEFAULT_GRID if grid is None else grid, 2, MAX_GRID)
    if integer:
        step = max(1, math.ceil((hi - lo) / k))
        k = max(1, math.floor((hi - lo) / step))
        pts = lo + step * np.arange(1, k + 1, dtype=float)
        # at least 1 from the upper bound: the last bin [e, upper] then holds a whole number
        return pts[pts <= hi - 1]
    return lo + (hi - lo) * (np.arange(1, k, dtype=float) / k)


def rank_utility(values: np.ndarray, candidates: np.ndarray, q: float) -> np.ndarray:
    """u_q(x) = -|#{v < x} - q·n| for every candidate x; ``values`` without missing ones."""
    v = np.sort(np.asarray(values, dtype=float))
    below = np.searchsorted(v, np.asarray(candidates, dtype=float), side="left")
    return cast(np.ndarray, -np.abs(below - q * len(v)))


def _values(column: ArrayLike) -> np.ndarray:
    s = pd.Series(column)
    s = s[s.notna()]
    try:
        return cast(np.ndarray, pd.to_numeric(s, errors="raise").to_numpy(dtype=float))
    except (TypeError, ValueError):
        raise OptionError(f"DP bins need a numeric column; '{s.name}' holds text") from None


def quantile_probabilities(values: ArrayLike, q: float, candidates: np.ndarray, epsilon: float) -> np.ndarray:
    """The exact law :func:`dp_quantile` samples (for tests and the docs' checks)."""
    return exponential_probabilities(rank_utility(_values(values), candidates, q), epsilon, RANK_SENSITIVITY)


def dp_quantile(values: ArrayLike, q: float, candidates: np.ndarray, epsilon: float, rng: np.random.Generator,
                size: int | None = None) -> float | np.ndarray:
    """One ε-DP q-quantile (or ``size`` independent ones) among the public ``candidates``."""
    if not 0 < q < 1:
        raise OptionError(f"the quantile q must be strictly between 0 and 1; got {q!r}")
    if len(candidates) == 0:
        raise OptionError("the bounds leave no candidate point for a bin edge; widen them")
    mech = ExponentialMechanism.calibrate(epsilon, RANK_SENSITIVITY)
    u = rank_utility(_values(values), candidates, q)
    if size is None:
        return float(candidates[mech.select(u, RANK_SENSITIVITY, rng)])
    idx = mech.select(np.broadcast_to(u, (int(size), len(u))), RANK_SENSITIVITY, rng)
    return cast(np.ndarray, np.asarray(candidates)[idx])


@dataclass(frozen=True)
class BinSpec:
    """Public inputs of one attribute's DP bins over [lower, upper]; no bounds (both None): the release finds
    them with DP first (:func:`dpcore.measure.bounds.dp_bounds`). ``method``: "privtree" (the default;
    PrivTree's leaves, ``bins`` a cap on their number, 16 when the entry does not say) or "quantiles"
    (``bins`` − 1 DP quantiles, so at most ``bins`` bins, 10 when it does not say); ``grid``: the quantiles'
    candidate grid (refused for PrivTree)."""

    bins: int
    lower: float | None
    upper: float | None
    grid: int | None = None
    method: str = DEFAULT_DP_BINS_METHOD

    @classmethod
    def parse(cls, name: str, spec: Any, method: str | None = None) -> BinSpec:
        """One ``dp_bins`` entry; ``method`` is the default when the entry names none (``bins_method``)."""
        if not isinstance(spec, Mapping):
            raise OptionError(f"dp_bins['{name}'] must be a dict like {{\"bins\": 5, \"lower\": 0, \"upper\": 100}} "
                              f"(or {{\"bins\": 5}} to find the bounds privately); got {spec!r}")
        unknown = sorted(set(spec) - {"bins", "lower", "upper", "grid", "method"})
        if unknown:
            raise OptionError(f"dp_bins['{name}']: unknown key(s) {', '.join(map(repr, unknown))}; "
                              "allowed: bins, lower, upper, grid, method")
        how = check_bins_method(spec.get("method", method), f"dp_bins['{name}'] method")
        if "bins" not in spec and "lower" not in spec:
            raise OptionError(f"dp_bins['{name}'] needs bins (the number of bins), or public bounds lower and upper")
        if ("lower" in spec) != ("upper" in spec):
            raise OptionError(f"dp_bins['{name}'] needs both lower and upper (public bounds), or neither (then the "
                              "bounds are found privately)")
        default = DEFAULT_PRIVTREE_BINS if how == PRIVTREE else DEFAULT_NUMERIC_BINS
        bins = whole_number(f"dp_bins['{name}'] bins", spec.get("bins", default), 2, MAX_DP_BINS)
        grid = spec.get("grid")
        if grid is not None:
            if how == PRIVTREE:
                raise OptionError(f"dp_bins['{name}']: grid is the quantiles' candidate grid; PrivTree has none "
                                  "(drop grid, or use method \"quantiles\")")
            grid = whole_number(f"dp_bins['{name}'] grid", grid, 2, MAX_GRID)
        if "lower" not in spec:
            return cls(bins, None, None, grid, how)
        lo = real_number(f"dp_bins['{name}'] lower", spec["lower"])
        hi = real_number(f"dp_bins['{name}'] upper", spec["upper"])
        if not hi > lo:
            raise OptionError(f"dp_bins['{name}']: lower ({lo:g}) must be below upper ({hi:g})")
        return cls(bins, lo, hi, grid, how)


def check_bins_method(method: object, what: str = "bins_method") -> str:
    """How DP bins are found inside their bounds: "quantiles" or "privtree" (None: the default)."""
    if method is None:
        return DEFAULT_DP_BINS_METHOD
    if method not in BIN_METHODS:
        raise OptionError(f"{what} must be one of {', '.join(BIN_METHODS)}; got {method!r}")
    return str(method)


def dp_bin_edges(values: ArrayLike, spec: BinSpec, epsilon: float, rng: np.random.Generator, *,
                 integer: bool = False) -> tuple[float, ...]:
    """ε-DP bin edges: the public bounds and k-1 DP quantiles (each at ε/(k-1)), sorted and
    with repeats dropped (post-processing), so at most k bins."""
    if spec.lower is None or spec.upper is None:
        raise OptionError("DP bin edges need public bounds (lower and upper) in the bin spec")
    cands = candidate_grid(spec.lower, spec.upper, integer=integer, grid=spec.grid)
    eps_q = epsilon / (spec.bins - 1)
    inner = [dp_quantile(values, j / spec.bins, cands, eps_q, rng) for j in range(1, spec.bins)]
    return tuple(float(x) for x in np.unique([spec.lower, *inner, spec.upper]))


def check_dp_bins(dp_bins: object, bins_share: object,
                  bins_method: object = None) -> tuple[dict[str, BinSpec], float]:
    """Validate the ``dp_bins``, ``bins_share`` and ``bins_method`` options of :func:`dpcore.synthesize`."""
    if dp_bins is None:
        if bins_share is not None:
            raise OptionError("bins_share is the share of ε for dp_bins; give dp_bins too, or drop bins_share")
        if bins_method is not None:
            raise OptionError("bins_method says how dp_bins finds its edges; give dp_bins too, or drop bins_method")
        return {}, 0.0
    if not isinstance(dp_bins, Mapping) or not dp_bins:
        raise OptionError("dp_bins must map column names to {\"bins\": k, \"lower\": lo, \"upper\": hi}; got "
                          f"{dp_bins!r}")
    method = check_bins_method(bins_method)
    specs = {str(k): BinSpec.parse(str(k), v, method) for k, v in dp_bins.items()}
    share = real_number("bins_share (the share of ε spent on DP bin edges)",
                        DEFAULT_BINS_SHARE if bins_share is None else bins_share, 0, 1, lo_open=True, hi_open=True)
    return specs, share


def quantile_edges(vals: np.ndarray, lower: float, upper: float, bins: int, budget: Budget, rng: np.random.Generator,
                   group: Ledger, name: str, neighbours: Neighbours, definition: Definition = PureDP(), *,
                   integer: bool = False, grid: int | None = None,
                   tails: float | None = None) -> tuple[tuple[float, ...], int]:
    """Edges over [lower, upper]: k-1 exponential-mechanism quantiles, each at budget/(k-1) (ε, or ρ
    under zCDP) charged to ``group``; sorted with repeats dropped. With ``tails`` (DP bounds, which are
    loose: powers of two), the tails- and (1 − tails)-quantiles are measured too, at the same share
    each, and replace [lower, upper] as the outer edges. A range too narrow for any candidate gives the
    one bin [lower, upper] and spends nothing. Returns (edges, grid points)."""
    cands = candidate_grid(lower, upper, integer=integer, grid=grid)
    if len(cands) == 0:
        return (float(lower), float(upper)), 0
    probs = [j / bins for j in range(1, bins)]
    if tails is not None:
        probs = [tails, *probs, 1.0 - tails]
    eps_q = budget / len(probs)
    # ε, or ρ under zCDP (ε = √(8ρ)); the rank utility's sensitivity times the unit's records
    mech = definition.selection(eps_q, neighbours.score_sensitivity(RANK_SENSITIVITY).value)
    inner = []
    for q in probs:
        quantile = Measurement.selection(
            f"{q:.4g}-quantile", mech, neighbours, RANK_SENSITIVITY, subset=f"non-missing values of '{name}'",
            sampler=EXACT_SAMPLER,
            note=f"rank utility over {len(cands)} public grid points in [{lower:g}, {upper:g}]")
        inner.append(float(cands[quantile.select(group, rank_utility(vals, cands, q), rng)]))
    if tails is not None:
        edges = np.unique(inner)
        return (tuple(float(x) for x in edges) if len(edges) >= 2 else (float(lower), float(upper))), int(len(cands))
    return tuple(float(x) for x in np.unique([lower, *inner, upper])), int(len(cands))


def apply_dp_bins(data: pd.DataFrame, dom: Domain, specs: Mapping[str, BinSpec], budget: Budget,
                  rng: np.random.Generator, ledger: Ledger, neighbours: Neighbours,
                  definition: Definition = PureDP()) -> tuple[Domain, dict[str, dict[str, Any]], Budget]:
    """The domain with DP edges for the attributes in ``specs``, the manifest record, and what was charged.

    ``budget`` (ε, or ρ under zCDP) is split evenly over the attributes (sequential composition), every
    charge in the ledger group "DP bin edges", made before its noise is drawn. Inside an attribute's bounds
    its spec's method finds the edges: "quantiles", k-1 exponential-mechanism quantiles at an even share
    each (this module), or "privtree", PrivTree's leaves at most ``bins`` of them, its whole share
    (:func:`dpcore.measure.privtree.privtree_bins`, θ = 0, depth ≤ 12; ε-DP, docs/methods/privtree.md),
    whose charge is the map of the scale it draws at, at most the share (so the charged total is returned
    and the release gives the rest to its synthetic sets). The other attributes, the NA setting and the
    domain's source are kept as declared; the new edges are marked ``origin="dp_quantiles"`` or
    ``"dp_privtree"`` (public bounds, DP edges), replacing whatever edges the attribute had, data-range
    placeholders included. Values outside the bounds are clamped into the end bins (the domain's encoding).
    A spec without bounds first finds them with :func:`dpcore.measure.bounds.dp_bounds`
    (:data:`BOUNDS_FRACTION` of the attribute's share; PrivTree's θ is then 10% of their noisy total); its
    edges are then marked ``origin="dp_bounds"``.
    """
    if not specs:
        return dom, {}, zero_like(budget)
    unknown = [c for c in specs if c not in data.columns]
    if unknown:
        raise OptionError(f"dp_bins names column(s) {', '.join(map(repr, unknown))} that the data does not have")
    group = ledger.group("DP bin edges")
    eps_attr = budget / len(specs)
    record: dict[str, dict[str, Any]] = {}
    attrs = list(dom.attributes)
    for name, spec in specs.items():
        col = data[name]
        dtype = str(col.dtype)
        if dtype_kind(dtype) not in "iuf":
            raise OptionError(f"dp_bins['{name}']: the column is not numeric (type {dtype}); DP bins are for numbers")
        if name not in dom.names:
            raise OptionError(f"dp_bins['{name}']: the column is not in the domain; add it to the domain first")
        integer = dtype_kind(dtype) in "iu"
        g = group.group(f"'{name}'")
        found, theta = None, 0.0
        if spec.lower is not None and spec.upper is not None:
            lower, upper, eps_edges = spec.lower, spec.upper, eps_attr
        else:  # no public bounds: a DP range finder first, with part of the attribute's share
            found = dp_bounds(col, integer, BOUNDS_FRACTION * eps_attr, rng, g, neighbours, definition, name)
            lower, upper, eps_edges = found.lower, found.upper, (1 - BOUNDS_FRACTION) * eps_attr
            theta = max(0.0, PRIVTREE_THETA_SHARE * found.total)  # post-processing of the DP bounds' total
        edges, how = _edges_inside(_values(col), spec, lower, upper, eps_edges, rng, g, name, neighbours,
                                   definition, integer, theta)
        old = dom[name]
        origin = DP_BOUNDS if found else DP_PRIVTREE if spec.method == PRIVTREE else DP_QUANTILES
        attrs[dom.index(name)] = numeric_attribute(name, edges, na=old.na, dtype=dtype, origin=origin)
        record[name] = {
            "edges": list(edges), "method": spec.method, "origin": origin, **how, "bins": len(edges) - 1,
            "lower": lower, "upper": upper,
            **({"bounds": "differentially private (docs/methods/dp-domain.md)"} if found else {}),
            definition.budget_key: eps_attr.value, "spent": g.spent.value,
            "derived": ("differentially private: PrivTree bins (Zhang, Xiao & Xie 2016) over public bounds, charged "
                        "to this release's ledger (docs/methods/privtree.md)" if spec.method == PRIVTREE else
                        "differentially private: exponential-mechanism quantiles (Smith 2011) over public bounds, "
                        "charged to this release's ledger (docs/methods/dp-quantiles.md)"),
        }
    return Domain(tuple(attrs), dom.source), record, group.spent


def _edges_inside(vals: np.ndarray, spec: BinSpec, lower: float, upper: float, budget: Budget,
                  rng: np.random.Generator, group: Ledger, name: str, neighbours: Neighbours, definition: Definition,
                  integer: bool, theta: float) -> tuple[tuple[float, ...], dict[str, Any]]:
    """One attribute's DP edges over [lower, upper] by its spec's method, charged to ``group``, and what the
    manifest records of how (all public: the settings, never a count)."""
    if spec.method == PRIVTREE:
        tree = privtree_bins(vals, lower, upper, budget, rng, group, name, neighbours, definition, integer=integer,
                             theta=theta, max_depth=PRIVTREE_MAX_DEPTH, max_leaves=spec.bins)
        return distinct_labels(tree.edges), {"bins_cap": spec.bins, "theta": theta, "scale": tree.scale,
                                             "max_depth": tree.max_depth}
    edges, n_cands = quantile_edges(vals, lower, upper, spec.bins, budget, rng, group, name, neighbours,
                                    definition, integer=integer, grid=spec.grid)
    return edges, {"bins_requested": spec.bins, "grid_points": n_cands}
