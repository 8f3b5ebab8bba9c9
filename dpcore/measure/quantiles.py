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
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpcore.data.domain import DP_BOUNDS, DP_QUANTILES, Domain, dtype_kind, numeric_attribute
from dpcore.errors import OptionError, real_number, whole_number
from dpcore.measure.bounds import dp_bounds
from dpcore.privacy.definitions import PureDP
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
    return -np.abs(below - q * len(v))


def _values(column) -> np.ndarray:
    s = pd.Series(column)
    s = s[s.notna()]
    try:
        return pd.to_numeric(s, errors="raise").to_numpy(dtype=float)
    except (TypeError, ValueError):
        raise OptionError(f"DP bins need a numeric column; '{s.name}' holds text") from None


def quantile_probabilities(values, q: float, candidates: np.ndarray, epsilon: float) -> np.ndarray:
    """The exact law :func:`dp_quantile` samples (for tests and the docs' checks)."""
    return exponential_probabilities(rank_utility(_values(values), candidates, q), epsilon, RANK_SENSITIVITY)


def dp_quantile(values, q: float, candidates: np.ndarray, epsilon: float, rng: np.random.Generator,
                size: int | None = None):
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
    return np.asarray(candidates)[idx]


@dataclass(frozen=True)
class BinSpec:
    """Public inputs of one attribute's DP bins: k bins over [lower, upper]; no bounds (both None):
    the release finds them with DP first (:func:`dpcore.measure.bounds.dp_bounds`)."""

    bins: int
    lower: float | None
    upper: float | None
    grid: int | None = None

    @classmethod
    def parse(cls, name: str, spec: Any) -> BinSpec:
        if not isinstance(spec, Mapping):
            raise OptionError(f"dp_bins['{name}'] must be a dict like {{\"bins\": 5, \"lower\": 0, \"upper\": 100}} "
                              f"(or {{\"bins\": 5}} to find the bounds privately); got {spec!r}")
        unknown = sorted(set(spec) - {"bins", "lower", "upper", "grid"})
        if unknown:
            raise OptionError(f"dp_bins['{name}']: unknown key(s) {', '.join(map(repr, unknown))}; "
                              "allowed: bins, lower, upper, grid")
        if "bins" not in spec:
            raise OptionError(f"dp_bins['{name}'] needs bins (the number of bins)")
        if ("lower" in spec) != ("upper" in spec):
            raise OptionError(f"dp_bins['{name}'] needs both lower and upper (public bounds), or neither (then the "
                              "bounds are found privately)")
        bins = whole_number(f"dp_bins['{name}'] bins", spec["bins"], 2, MAX_DP_BINS)
        grid = spec.get("grid")
        if grid is not None:
            grid = whole_number(f"dp_bins['{name}'] grid", grid, 2, MAX_GRID)
        if "lower" not in spec:
            return cls(bins, None, None, grid)
        lo = real_number(f"dp_bins['{name}'] lower", spec["lower"])
        hi = real_number(f"dp_bins['{name}'] upper", spec["upper"])
        if not hi > lo:
            raise OptionError(f"dp_bins['{name}']: lower ({lo:g}) must be below upper ({hi:g})")
        return cls(bins, lo, hi, grid)


def dp_bin_edges(values, spec: BinSpec, epsilon: float, rng: np.random.Generator, *,
                 integer: bool = False) -> tuple[float, ...]:
    """ε-DP bin edges: the public bounds and k-1 DP quantiles (each at ε/(k-1)), sorted and
    with repeats dropped (post-processing), so at most k bins."""
    if spec.lower is None or spec.upper is None:
        raise OptionError("DP bin edges need public bounds (lower and upper) in the bin spec")
    cands = candidate_grid(spec.lower, spec.upper, integer=integer, grid=spec.grid)
    eps_q = epsilon / (spec.bins - 1)
    inner = [dp_quantile(values, j / spec.bins, cands, eps_q, rng) for j in range(1, spec.bins)]
    return tuple(float(x) for x in np.unique([spec.lower, *inner, spec.upper]))


def check_dp_bins(dp_bins, bins_share) -> tuple[dict[str, BinSpec], float]:
    """Validate the ``dp_bins`` and ``bins_share`` options of :func:`dpcore.synthesize`."""
    if dp_bins is None:
        if bins_share is not None:
            raise OptionError("bins_share is the share of ε for dp_bins; give dp_bins too, or drop bins_share")
        return {}, 0.0
    if not isinstance(dp_bins, Mapping) or not dp_bins:
        raise OptionError("dp_bins must map column names to {\"bins\": k, \"lower\": lo, \"upper\": hi}; got "
                          f"{dp_bins!r}")
    specs = {str(k): BinSpec.parse(str(k), v) for k, v in dp_bins.items()}
    share = real_number("bins_share (the share of ε spent on DP bin edges)",
                        DEFAULT_BINS_SHARE if bins_share is None else bins_share, 0, 1, lo_open=True, hi_open=True)
    return specs, share


def quantile_edges(vals: np.ndarray, lower: float, upper: float, bins: int, budget: float, rng: np.random.Generator,
                   group: Ledger, name: str, neighbours_label: str, definition=PureDP(), *, integer: bool = False,
                   grid: int | None = None, tails: float | None = None) -> tuple[tuple[float, ...], int]:
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
    mech = definition.selection(eps_q, RANK_SENSITIVITY)  # ε, or ρ under zCDP (ε = √(8ρ))
    inner = []
    for q in probs:
        quantile = Measurement(
            f"{q:.4g}-quantile", mech, RANK_SENSITIVITY, f"non-missing values of '{name}'", neighbours_label,
            sampler=EXACT_SAMPLER,
            note=f"rank utility over {len(cands)} public grid points in [{lower:g}, {upper:g}]")
        inner.append(float(cands[quantile.select(group, rank_utility(vals, cands, q), rng)]))
    if tails is not None:
        edges = np.unique(inner)
        return (tuple(float(x) for x in edges) if len(edges) >= 2 else (float(lower), float(upper))), int(len(cands))
    return tuple(float(x) for x in np.unique([lower, *inner, upper])), int(len(cands))


def apply_dp_bins(data: pd.DataFrame, dom: Domain, specs: Mapping[str, BinSpec], epsilon: float,
                  rng: np.random.Generator, ledger: Ledger, neighbours: Neighbours,
                  definition=PureDP()) -> tuple[Domain, dict]:
    """The domain with DP edges for the attributes in ``specs``, and the manifest record.

    ``epsilon`` is split evenly over the attributes (sequential composition), and within
    an attribute over its k-1 quantiles; every quantile is charged to ``ledger``.
    The other attributes, the NA setting and the domain's source are kept as declared; the
    new edges are marked ``origin="dp_quantiles"`` (public bounds, DP edges), replacing
    whatever edges the attribute had, data-range placeholders included. A spec without bounds
    first finds them with :func:`dpcore.measure.bounds.dp_bounds` (:data:`BOUNDS_FRACTION` of the
    attribute's share); its edges are then marked ``origin="dp_bounds"``.
    """
    if not specs:
        return dom, {}
    unknown = [c for c in specs if c not in data.columns]
    if unknown:
        raise OptionError(f"dp_bins names column(s) {', '.join(map(repr, unknown))} that the data does not have")
    group = ledger.group("DP bin edges")
    eps_attr = epsilon / len(specs)
    record: dict[str, dict] = {}
    attrs = list(dom.attributes)
    for name, spec in specs.items():
        col = data[name]
        dtype = str(col.dtype)
        if dtype_kind(dtype) not in "iuf":
            raise OptionError(f"dp_bins['{name}']: the column is not numeric (type {dtype}); DP bins are for numbers")
        integer = dtype_kind(dtype) in "iu"
        g = group.group(f"'{name}'")
        found = None
        if spec.lower is not None and spec.upper is not None:
            lower, upper, eps_q_total = spec.lower, spec.upper, eps_attr
        else:  # no public bounds: a DP range finder first, with part of the attribute's share
            found = dp_bounds(col, integer, BOUNDS_FRACTION * eps_attr, rng, g, neighbours, definition, name)
            lower, upper, eps_q_total = found.lower, found.upper, (1 - BOUNDS_FRACTION) * eps_attr
        edges, n_cands = quantile_edges(_values(col), lower, upper, spec.bins, eps_q_total, rng, g, name,
                                        neighbours.label, definition, integer=integer, grid=spec.grid)
        old = dom[name] if name in dom.names else None
        na = old.na if old is not None else bool(col.isna().any())
        new = numeric_attribute(name, edges, na=na, dtype=dtype, origin=DP_BOUNDS if found else DP_QUANTILES)
        if old is not None:
            attrs[dom.index(name)] = new
        else:
            raise OptionError(f"dp_bins['{name}']: the column is not in the domain; add it to the domain first")
        record[name] = {
            "edges": list(edges), "bins_requested": spec.bins, "bins": len(edges) - 1,
            "lower": lower, "upper": upper, "grid_points": n_cands,
            **({"bounds": "differentially private (docs/methods/dp-domain.md)"} if found else {}),
            ("epsilon" if definition.name == "pure" else "rho"): eps_attr,
            "derived": "differentially private: exponential-mechanism quantiles (Smith 2011) over public bounds, "
                       "charged to this release's ledger (docs/methods/dp-quantiles.md)",
        }
    return Domain(tuple(attrs), dom.source), record
