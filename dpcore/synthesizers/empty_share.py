"""How much of a flat-Laplace or STEPS release will come from cells that are empty in the data.

Computed before any budget is spent from public facts only: the record count n (or
the noisy count), the block sizes of the leaf layer (from the domain and the tree) and
the leaf noise scale. On wide tables almost every cell is empty, each empty cell's
noisy value is positive about half the time, and the synthetic records then come
mostly from cells no record is in: this module says so in numbers.

Model (stated, since the real share depends on the data): a leaf block of M cells
holds n_b = n / B records (B real blocks; flat Laplace: one block, the table), each in
its own cell with count 1 — the usual situation on a wide table, and the one with the
most empty cells. With Z the leaf noise (discrete Laplace of scale s):

* ``nonneg``: leaves x = (z − μ)^+ with μ the root of
  (M − n_b) E(Z − μ)^+ + n_b E(1 + Z − μ)^+ = n_b (the projection, in expectation);
* ``wls``, ``uh`` and flat Laplace: the per-block shift has mean 0, values are clipped:
  x = (z + a)^+ with a the flat prior α/cells (0 for STEPS);

and the expected share is E[mass of the empty cells] / E[total mass], with
E(Z − t)^+ in closed form (:func:`positive_part_mean`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from dpcore.privacy.budget import Budget

__all__ = ["positive_part_mean", "flat_empty_share", "leaf_empty_share", "empty_share_warning", "WARN_ABOVE",
           "NoiseRow", "noise_row", "typical_cells"]

#: Above this expected share the preview warns.
WARN_ABOVE = 0.5


def positive_part_mean(scale: float, t) -> np.ndarray:
    """E(Z − t)^+ for Z discrete Laplace of ``scale`` (P(k) ∝ α^|k|, α = e^{−1/s}), real t.

    For t >= 0, with j = floor(t) + 1: Σ_{k>=j} (k − t) C α^k, C = (1 − α)/(1 + α),
    = C α^j [ (j − (j − 1) α)/(1 − α)^2 − t/(1 − α) ]. For t < 0, (x)^+ = x + (−x)^+
    and the symmetry of Z give E(Z − t)^+ = −t + E(Z − |t|)^+.
    """
    t = np.asarray(t, dtype=float)
    a = math.exp(-1.0 / scale)
    om = -math.expm1(-1.0 / scale)  # 1 − α, accurate for large scales
    C = om / (1.0 + a)

    def right(u):
        j = np.floor(u) + 1.0
        return C * np.exp(-j / scale) * ((j - (j - 1.0) * a) / om**2 - u / om)

    return np.where(t >= 0, right(np.abs(t)), -t + right(np.abs(t)))


def flat_empty_share(cells: int, n: float, scale: float, prior: float = 0.0) -> float:
    """Expected share of flat-Laplace records from data-empty cells (module model)."""
    k = min(float(n), float(cells))
    a = prior / cells if cells else 0.0
    empty = (float(cells) - k) * float(positive_part_mean(scale, -a))
    full = k * float(positive_part_mean(scale, -1.0 - a))
    return empty / (empty + full) if empty + full > 0 else 0.0


def leaf_empty_share(block_cells: np.ndarray, n: float, scale: float, consistency: str) -> float:
    """Expected share of STEPS records from data-empty leaf cells (module model)."""
    M = np.asarray(block_cells, dtype=float)
    if not len(M) or n <= 0:
        return 0.0
    nb = np.minimum(float(n) / len(M), M)
    if consistency == "nonneg":
        # μ by bisection on the decreasing f(μ) = (M − nb) E(Z − μ)^+ + nb E(Z − (μ − 1))^+
        lo = np.full(len(M), -1.0 - 50 * scale)
        hi = np.full(len(M), 1.0 + 50 * scale * (1 + np.log1p(M)))
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            f = (M - nb) * positive_part_mean(scale, mid) + nb * positive_part_mean(scale, mid - 1.0)
            big = f > nb
            lo, hi = np.where(big, mid, lo), np.where(big, hi, mid)
        mu = 0.5 * (lo + hi)
        empty = (M - nb) * positive_part_mean(scale, mu)
        full = nb * positive_part_mean(scale, mu - 1.0)
    else:
        empty = (M - nb) * positive_part_mean(scale, 0.0)
        full = nb * positive_part_mean(scale, -1.0)
    tot = empty + full
    return float(empty.sum() / tot.sum()) if tot.sum() > 0 else 0.0


#: What else helps a hierarchical release (STEPS's leaf layer) whose records come mostly from empty cells.
_MORE_LAYERS = "more layers (fewer cells per leaf block), "


def empty_share_warning(share: float, more: str = _MORE_LAYERS) -> str | None:
    """Plain words when more than half the synthetic records are expected from empty cells; ``more``:
    what else helps this method (given by the method: flat Laplace suggests STEPS instead)."""
    if share <= WARN_ABOVE:
        return None
    return (f"about {100 * share:.0f}% of the synthetic records are expected to come from cells that are empty in the "
            f"data: the noise on the many empty cells outweighs the records themselves, so most of the release is "
            f"noise spread over combinations nobody has. What helps: method='ipf' or 'privbayes' "
            f"(they fit small margins), fewer or coarser attributes, {more}or a larger ε.")


# --------------------------------------------------------------------------- noise against the counts


@dataclass(frozen=True)
class NoiseRow:
    """One kind of noisy count a method releases, set against the count it is added to.

    Computed before any budget is spent from public facts (the domain, the options, ε, m,
    the neighbour notion) and a record count ``n``: the released noisy count, or the
    curator's own n (then curator-only). ``counts`` noisy counts per set, each with noise of
    standard deviation ``noise_sd`` (records) at ``budget`` (an ε, or a ρ under zCDP); a cell of the table they count
    holds ``typical_count`` = n / ``cells`` records on average. ``estimate``: the tables are
    chosen at release (private selection, PrivBayes' network, AIM's rounds), so ``cells`` is
    a typical size rather than the exact one.
    """

    what: str
    counts: int
    cells: float
    budget: Budget
    noise_sd: float
    typical_count: float
    estimate: bool = False

    @property
    def ratio(self) -> float:
        """Noise SD over the typical count: above 1 the noise is larger than what it is added to."""
        return self.noise_sd / self.typical_count if self.typical_count > 0 else math.inf

    @property
    def swamped(self) -> bool:
        return self.ratio > 1.0

    def to_dict(self) -> dict:
        return {"what": self.what, "counts": self.counts, "cells": self.cells, "budget": self.budget.value,
                "unit": self.budget.symbol,
                "noise_sd": self.noise_sd, "typical_count": self.typical_count, "ratio": self.ratio,
                "swamped": self.swamped, "estimate": self.estimate}


def noise_row(what: str, counts: int, cells: float, budget: Budget, mechanism, n: float,
              estimate: bool = False) -> NoiseRow:
    """A :class:`NoiseRow`: ``counts`` counts of a ``cells``-cell table, each noised by
    ``mechanism`` (a calibrated count mechanism of :mod:`dpcore.mechanisms`) at ``budget``; n records."""
    cells = max(float(cells), 1.0)
    return NoiseRow(what, int(counts), cells, budget, float(math.sqrt(mechanism.variance)),
                    float(n) / cells, estimate)


def typical_cells(sizes, k: int) -> float:
    """The typical number of cells of a table over k of the attributes whose level counts are
    ``sizes``: the median over all k-subsets of the product of their sizes (public: the domain)."""
    sizes = [int(v) for v in sizes]
    k = max(1, min(int(k), len(sizes)))
    if math.comb(len(sizes), k) <= 20_000:
        return float(np.median([math.prod(c) for c in combinations(sizes, k)]))
    return float(np.exp(k * np.mean(np.log(sizes))))  # many subsets: the geometric mean to the k-th power
