"""DP bounds of a numeric column: a noisy histogram over public log-scale bins, thresholded.

The range finder of smartnoise-synth's approximate bounds, with the exact samplers of the privacy
layer. The bins are PUBLIC and fixed before any data is read: the signed powers of two

    ... [-4, -2), [-2, -1), ..., [-2^-K, 0), [0, 2^-K), ..., [1, 2), [2, 4), ...

for magnitudes 2^-K … 2^K_MAX (:data:`MIN_EXPONENT`, :data:`MAX_EXPONENT`; a magnitude beyond
either end goes to the end bin on its side, so every value has exactly one bin), plus one bin for
a missing value. Whole-number columns use the bin [0, 1) for zero and magnitudes from 1 up to
2^52 (:data:`MAX_WHOLE_EXPONENT`: their bounds stay within ±2^53, where whole numbers are exact).

Privacy: the histogram of one column over these bins has L1 and L2 sensitivity 1 under
add/remove (one record is in one bin) and L1 2, L2 √2 under replace; every bin, empty or not,
gets noise from the release's definition (discrete Laplace under pure ε, discrete Gaussian under
zCDP) through one :class:`~dpcore.privacy.measurement.Measurement` charged to the release's
ledger. The bounds are post-processing of the noisy counts: the lower edge of the lowest bin
and the upper edge of the highest bin whose noisy count reaches the threshold
τ = the noise's (1 − β/bins) quantile bound (a function of the public scale and bin count
only). When no bin reaches τ, the bin of the largest noisy count is taken (a fallback, warned
about), unless that count is also under τ_w, the same bound at β = :data:`WITHHOLD_PROBABILITY`
(= 1/2: noise alone over the empty bins reaches it that often): the column's values are then
noise-like and it is withheld (released as missing). Both are post-processing of the noisy counts
with public thresholds. Proof and audit: docs/methods/dp-domain.md.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpcore.errors import OptionError
from dpcore.privacy.budget import Budget
from dpcore.privacy.definitions import Definition
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.maps import Mechanism
from dpcore.privacy.measurement import EXACT_SAMPLER, Measurement
from dpcore.privacy.neighbours import Neighbours

#: Smallest magnitude exponent with its own bin (2^-10 ≈ 0.001); smaller magnitudes share the zero bins.
MIN_EXPONENT = -10
#: Largest magnitude exponent (2^62 ≈ 4.6e18); larger magnitudes share the end bins.
MAX_EXPONENT = 62
#: ... for whole numbers: 2^52, so the widened end bins stop at ±2^53, where whole numbers are still exact
MAX_WHOLE_EXPONENT = 52
#: Chance that some empty bin passes the threshold (the bounds then widen to that bin).
FALSE_BIN_PROBABILITY = 1e-3
#: When no bin passes: a largest noisy count under the threshold at this chance is one that noise alone over the
#: empty bins may reach at least as often (the union bound), so the column is withheld rather than bounded by it.
#: On the corpus's tables under 1,400 records (9 tables, seeds 0-7, 346 columns that fell back) this withheld 192
#: of the 208 whose fallback bin held no record and kept 76 of the 138 whose bin held data (bench/RESULTS.md).
WITHHOLD_PROBABILITY = 0.5
#: When only the bin holding zero passed on a side: the chance that noise alone over that side's bins reaches the
#: threshold that side's largest noisy count must reach to widen the bounds (:func:`bounds_from_noisy`).
SIDE_PROBABILITY = 0.05


@dataclass(frozen=True)
class LogBins:
    """The public bins: ``edges`` (ascending, the histogram's bin i is [edges[i], edges[i+1])),
    the NA bin last. Depends on the column's kind (whole numbers or not) only."""

    edges: np.ndarray
    integer: bool

    @classmethod
    def for_kind(cls, integer: bool) -> LogBins:
        top = MAX_WHOLE_EXPONENT if integer else MAX_EXPONENT
        mags = [2.0 ** k for k in range(0 if integer else MIN_EXPONENT, top + 1)]
        return cls(np.asarray([-m for m in reversed(mags)] + [0.0] + mags), integer)

    @property
    def zero_bin(self) -> int:
        """The bin [0, 2^-10) (whole numbers: [0, 1), zero alone): the one holding zero."""
        return int(np.searchsorted(self.edges, 0.0, side="right"))

    @property
    def value_bins(self) -> int:
        return len(self.edges) + 1  # below the first edge, between edges, above the last (ends widened)

    @property
    def size(self) -> int:
        return self.value_bins + 1  # and NA

    def index(self, values: pd.Series) -> np.ndarray:
        """Each record's bin: 0 below edges[0], i for [edges[i-1], edges[i]), last value bin above,
        NA last. A deterministic function of the one record."""
        missing = values.isna().to_numpy()
        x = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
        out = np.searchsorted(self.edges, np.where(missing, 0.0, x), side="right")
        out[missing] = self.value_bins
        return out

    def interval(self, i: int) -> tuple[float, float]:
        """[lower, upper] of value bin i (its ends widened to the next power of two beyond the grid)."""
        e = self.edges
        lo = e[i - 1] if i >= 1 else 2.0 * e[0]
        hi = e[i] if i < len(e) else 2.0 * e[-1]
        return float(lo), float(hi)


def threshold(mechanism: Mechanism, bins: int, beta: float = FALSE_BIN_PROBABILITY) -> float:
    """τ with P(some of ``bins`` empty bins has noise ≥ τ) ≤ β, from the noise's tail bound:
    discrete Laplace P(Z ≥ t) ≤ e^{-t/s}; discrete Gaussian P(Z ≥ t) ≤ e^{-t²/(2σ²)} (Canonne,
    Kamath & Steinke 2020, Cor. 9). Public: the scale and the bin count only."""
    tail = math.log(bins / beta)
    if mechanism.norm == "l2":
        return mechanism.scale * math.sqrt(2.0 * tail)
    return mechanism.scale * tail


@dataclass(frozen=True)
class FoundBounds:
    """What the range finder releases: [lower, upper], whether the NA bin passed, and how."""

    lower: float
    upper: float
    na: bool
    threshold: float
    fallback: bool  # no value bin passed: the bin of the largest noisy count was taken
    total: float = 0.0  # the noisy counts' sum: a DP estimate of the records (post-processing)
    withheld: bool = False  # fallback, and the largest noisy count under the withholding threshold: noise-like
    extended: bool = False  # zero passed alone on a side, and that side's largest noisy count widened the bounds
    zero_point: bool = False  # not whole numbers: the bin holding zero, [0, 2^-10), passed τ (zero stands out)

    def to_dict(self) -> dict[str, object]:
        return {"lower": self.lower, "upper": self.upper, "na": self.na, "threshold": self.threshold,
                "fallback": self.fallback, "withheld": self.withheld}


def _side_reach(side: np.ndarray, tau_side: float, group_tau: Callable[[int, int], float] | None) -> int | None:
    """How far out (in bins, from the one next to zero) a side's values reach, read from its noisy counts: the
    bin of its largest count if that reaches ``tau_side``; else, with ``group_tau`` (zCDP only), the outer end of
    the first aligned group of 2, 4, 8 or 16 bins whose noisy sum reaches ``group_tau(g, groups)``. None: none."""
    if side.size == 0:
        return None
    if float(side.max()) >= tau_side:
        return int(np.argmax(side))
    if group_tau is None:
        return None
    for g in (2, 4, 8, 16):
        m = -(-side.size // g)
        sums = np.add.reduceat(side, np.arange(0, side.size, g))
        if float(sums.max()) >= group_tau(g, m):
            return min(side.size, (int(np.argmax(sums)) + 1) * g) - 1
    return None


def bounds_from_noisy(noisy: np.ndarray, bins: LogBins, tau: float, tau_withhold: float | None = None,
                      tau_side: float | None = None, tau_next: float | None = None,
                      group_tau: Callable[[int, int], float] | None = None,
                      nonnegative: bool = False) -> FoundBounds:
    """Post-processing: the range of the bins whose noisy count reaches τ (or of the largest one; withheld when
    that one is under ``tau_withhold`` too). Zero is its own point: when the bin holding zero is the only one
    that passed on a side (a column mostly zero with its values spread thin over many octaves, as assets or
    debts), that side's largest noisy count widens the bounds to its bin if it reaches ``tau_side`` (a lower
    threshold, at a larger chance of a false bin: the bounds are then "found coarsely"). Then the range grows by
    each next bin outward whose noisy count reaches ``tau_next`` (a threshold for the one bin looked at: a tail
    spread over octaves that each hold too few records to pass τ is kept, as a second, lower threshold does in
    edge detection). ``nonnegative``: the column is declared never negative (a count), so the bins below zero
    are empty by declaration: their noisy counts are not read and the bounds start at 0 at the lowest. In a
    column not of whole numbers, zero's bin passing τ is released as ``zero_point``: the release's bins then keep
    [0, 2^-10) as a bin of its own, drawn as 0 (:func:`dpcore.measure.dp_domain.with_zero_point`)."""
    values = np.asarray(noisy[:bins.value_bins], dtype=float)
    if nonnegative:
        # public: nothing below zero was declared possible, so a noisy count there is noise alone (the
        # side rule would otherwise, now and then, widen a 0/1 column to a far negative bin)
        values = np.where(np.arange(values.size) < bins.zero_bin, -np.inf, values)
    passed = np.flatnonzero(values >= tau)
    fallback = passed.size == 0
    withheld = bool(fallback and tau_withhold is not None and float(values.max()) < tau_withhold)
    if fallback:
        passed = np.array([int(np.argmax(values))])
    first, last = int(passed[0]), int(passed[-1])
    extended = False
    if not fallback and tau_side is not None:
        zero = bins.zero_bin
        if last == zero:  # nothing passed above zero
            reach = _side_reach(values[zero + 1:], tau_side, group_tau)
            if reach is not None:
                last, extended = zero + 1 + reach, True
        if first == zero:  # nothing passed below zero (read outward: from the bin next to zero down)
            reach = _side_reach(values[:zero][::-1], tau_side, group_tau)
            if reach is not None:
                first, extended = zero - 1 - reach, True
    if not fallback and tau_next is not None:
        while first > 0 and values[first - 1] >= tau_next:
            first -= 1
        while last + 1 < bins.value_bins and values[last + 1] >= tau_next:
            last += 1
    lower = bins.interval(first)[0]
    upper = bins.interval(last)[1]
    if bins.integer and upper > lower + 1:
        upper -= 1.0  # [2^k, 2^(k+1)) holds whole numbers up to 2^(k+1) - 1
    zero_point = not bins.integer and not fallback and bool(values[bins.zero_bin] >= tau)
    return FoundBounds(lower, upper, bool(noisy[bins.value_bins] >= tau), float(tau), bool(fallback),
                       float(np.sum(noisy)), withheld, extended, zero_point)


def dp_bounds(values: pd.Series, integer: bool, budget: Budget, rng: np.random.Generator, ledger: Ledger,
              neighbours: Neighbours, definition: Definition, name: str, nonnegative: bool = False) -> FoundBounds:
    """DP [lower, upper] (and whether NA is kept) of one column, spending ``budget`` (ε, or ρ under
    zCDP) through one histogram measurement charged to ``ledger``. See the module docstring. ``nonnegative``:
    declared never negative (a count): a value below 0 is counted in the bin holding 0 (a record-wise map, the
    clamp the release applies to it), and the bounds start at 0 at the lowest (:func:`bounds_from_noisy`)."""
    if budget.value <= 0:
        raise OptionError(f"column '{name}': no budget left for its DP bounds; raise the domain share")
    bins = LogBins.for_kind(integer)
    index = bins.index(values)
    if nonnegative:
        index = np.maximum(index, bins.zero_bin)  # below zero: into zero's bin (the NA bin is last, above it)
    counts = np.bincount(index, minlength=bins.size).astype(np.int64)
    mech = definition.count_noise(budget, neighbours)
    tau = threshold(mech, bins.size)
    m = Measurement.counts(f"bounds of '{name}'", mech, neighbours, cells=bins.size,
                           subset=f"values of '{name}'", sampler=EXACT_SAMPLER,
                           note=f"noisy histogram over {bins.size} public signed power-of-two bins (and NA); "
                                f"bounds = the range of bins with noisy count ≥ {tau:.4g}")
    noisy = m.release(ledger, counts, rng)
    group_tau = None
    if mech.norm == "l2":
        # a sum of g discrete Gaussians is sub-Gaussian with variance proxy g·σ² (each one's MGF is at most
        # e^{λ²σ²/2}: Canonne, Kamath & Steinke 2020): P(sum ≥ t) ≤ e^{-t²/(2gσ²)}, over m groups
        def group_tau(g: int, m: int) -> float:
            return mech.scale * math.sqrt(g) * math.sqrt(2.0 * math.log(m / SIDE_PROBABILITY))
    return bounds_from_noisy(noisy, bins, tau, threshold(mech, bins.size, WITHHOLD_PROBABILITY),
                             threshold(mech, bins.size // 2, SIDE_PROBABILITY), threshold(mech, 1, SIDE_PROBABILITY),
                             group_tau, nonnegative)


#: Equal-width bins of the refinement inside the first bounds (:func:`refine_bounds`).
REFINE_BINS = 16


def refine_threshold(budget: Budget, neighbours: Neighbours, definition: Definition) -> float:
    """The threshold :func:`refine_bounds` would use at ``budget``: public (the budget and bin count)."""
    return threshold(definition.count_noise(budget, neighbours), REFINE_BINS + 2)


def refine_bounds(values: pd.Series, lower: float, upper: float, integer: bool, budget: Budget,
                  rng: np.random.Generator, ledger: Ledger, neighbours: Neighbours, definition: Definition,
                  name: str) -> tuple[float, float]:
    """Tighter DP bounds inside [lower, upper] (powers of two are loose: years 1974–2018 give
    [1024, 2047]): a second noisy histogram over :data:`REFINE_BINS` equal-width public bins of
    the first bounds (public: a DP output) plus one bin below and one above, thresholded like the
    first; the range of the bins that pass widened by one bin on each side, or [lower, upper] if
    none does. Same privacy argument
    as :func:`dp_bounds` (fixed bins given the first output; adaptive sequential composition)."""
    step = (upper - lower) / REFINE_BINS
    if integer:
        step = max(1.0, math.ceil((upper - lower + 1) / REFINE_BINS))
    inner = lower + step * np.arange(REFINE_BINS + 1)
    x = pd.to_numeric(values[values.notna()], errors="coerce").to_numpy(dtype=float)
    counts = np.bincount(np.searchsorted(inner, x[~np.isnan(x)], side="right"),
                         minlength=len(inner) + 1).astype(np.int64)
    mech = definition.count_noise(budget, neighbours)
    tau = threshold(mech, len(counts))
    m = Measurement.counts(f"refined bounds of '{name}'", mech, neighbours, cells=len(counts),
                           subset=f"non-missing values of '{name}'", sampler=EXACT_SAMPLER,
                           note=f"noisy histogram over {REFINE_BINS} equal-width public bins of the first DP bounds; "
                                f"bounds = the range of bins with noisy count ≥ {tau:.4g}")
    noisy = m.release(ledger, counts, rng)
    passed = np.flatnonzero(noisy[1:-1] >= tau)  # the bins inside [lower, upper)
    if passed.size == 0:
        return lower, upper
    # one bin of margin on each side: a tail bin just under τ is kept rather than clamped
    first, last = max(0, passed[0] - 1), min(REFINE_BINS - 1, passed[-1] + 1)
    lo = float(inner[first])
    hi = float(inner[last + 1]) - (1.0 if integer else 0.0)
    lo, hi = max(lo, lower), min(hi, upper)
    return (lo, hi) if hi > lo else (lower, upper)
