"""DP levels of a categorical column under (ε, δ): a thresholded noisy histogram (stability-based).

Every level observed in the column (and "missing", if any value is) gets its count plus discrete
Gaussian noise; the levels whose noisy count reaches the threshold τ are released, the others
are merged into one public "other" level. Nothing else is published: not the noisy counts, not
how many levels were observed.

Privacy (docs/methods/dp-domain.md, "DP levels"): for neighbours that share their set of observed
levels, the noisy counts are a discrete Gaussian measurement of L2 sensitivity 1 (add/remove) or
√2 (replace): ρ-zCDP with ρ = Δ₂²/(2σ²), charged to the release's ledger. When a record brings a
level of its own (count 1 on one side, absent on the other), that level's count is noised only
on its side, and it is released there with probability P(1 + Z ≥ τ) ≤ exp(−(τ − 1)²/(2σ²))
(Canonne, Kamath & Steinke 2020, Cor. 9); τ is set so that this is at most ``delta``. The
mechanism is therefore δ-approximately ρ-zCDP (Bun & Steinke 2016, Def. 8.1): the release states
(ε, δ) with its ρ converted at the rest of its δ. Under pure ε it cannot be used (a set of
levels read from the data needs δ > 0; a pure-ε alternative needs the universe of levels public).

With a privacy unit of K records (:mod:`dpcore.counting.contributions`) a unit can bring up to K levels of its
own, each with a count of at most K: the noise is calibrated to L2 sensitivity K (the count table's stability),
and τ is raised so that a count of K passes with probability at most δ/K (:func:`unit_level_threshold`): by the
union bound over its at most K new levels, the unit's levels pass with probability at most δ.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpcore.errors import OptionError
from dpcore.privacy.budget import Budget
from dpcore.privacy.definitions import Definition
from dpcore.privacy.gaussian import DiscreteGaussian
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.measurement import EXACT_SAMPLER, Measurement
from dpcore.privacy.neighbours import Neighbours

#: The level every unreleased value is recoded to (a public name, fixed before the data is read).
OTHER = "other"


def level_threshold(sigma: float, delta: float) -> float:
    """τ = 1 + σ·√(2 ln(1/δ)): a count of 1 passes with probability at most δ (the tail bound of Canonne, Kamath
    & Steinke 2020, Cor. 9; :func:`exact_level_threshold` is the exact, lower one the releases use)."""
    return 1.0 + sigma * math.sqrt(2.0 * math.log(1.0 / delta))


def gaussian_tail_point(sigma2: float, delta: float) -> int:
    """The smallest whole t with P(Z ≥ t) ≤ δ for Z the discrete Gaussian with P(z) ∝ exp(−z²/(2σ²)), σ² =
    ``sigma2`` (pass the variance the sampler draws at: it is at least the nominal one, and a wider law has the
    heavier tail).

    P(Z ≥ t) = Σ_{z ≥ t} w_z / Σ_z w_z with w_z = exp(−z²/(2σ²)), bounded above by summing the numerator to a
    level M and bounding the rest by a geometric series, over the denominator summed to M only (a lower
    bound), with a relative margin of 10⁻⁹ for floating-point rounding. Never above the tail bound's
    ⌈σ·√(2 ln(1/δ))⌉, which satisfies the condition by Cor. 9 of Canonne, Kamath & Steinke (2020)."""
    s2 = float(sigma2)
    s = math.sqrt(s2)
    bound = math.ceil(s * math.sqrt(2.0 * math.log(1.0 / delta)))
    top = bound + math.ceil(12.0 * s) + 2
    z = np.arange(top + 1, dtype=float)
    w = np.exp(-(z * z) / (2.0 * s2))
    beyond = math.exp(-((top + 1) ** 2) / (2.0 * s2)) / -math.expm1(-(top + 1) / s2)  # Σ_{z > top} w_z, bounded
    tails = np.cumsum(w[::-1])[::-1] + beyond  # tails[t] ≥ Σ_{z ≥ t} w_z
    norm = w[0] + 2.0 * w[1:].sum()  # ≤ Σ_z w_z
    ok = np.flatnonzero(tails[:bound + 1] / norm * (1.0 + 1e-9) <= delta)
    return int(ok[0]) if ok.size else bound


def exact_level_threshold(sigma2: float, delta: float, records_per_unit: int = 1) -> float:
    """τ = K + t with t = :func:`gaussian_tail_point` at δ/K: a level that only one unit of at most K records
    holds (a count of at most K) passes with probability at most δ/K, so the at most K levels it brings pass with
    probability at most δ together; K = 1 is a record's."""
    k = int(records_per_unit)
    return float(k + gaussian_tail_point(sigma2, delta / k))


def unit_level_threshold(sigma: float, delta: float, records_per_unit: int) -> float:
    """τ = K + σ·√(2 ln(K/δ)): a count of K passes with probability at most δ/K, so the at most K levels one unit
    of K records brings pass with probability at most δ together (K = 1: :func:`level_threshold`)."""
    k = int(records_per_unit)
    if k == 1:
        return level_threshold(sigma, delta)
    return (k - 1) + level_threshold(sigma, delta / k)


@dataclass(frozen=True)
class FoundLevels:
    """The released levels (sorted text), whether "missing" passed, and the threshold."""

    levels: tuple[str, ...]
    na: bool
    threshold: float

    @property
    def other(self) -> str:
        """The name of the catch-all level: "other", or "(other)" if "other" is a released level."""
        return OTHER if OTHER not in self.levels else f"({OTHER})"

    def to_dict(self) -> dict[str, object]:
        return {"levels": list(self.levels), "na": self.na, "other": self.other, "threshold": self.threshold}


def level_counts(values: pd.Series) -> tuple[list[str], np.ndarray]:
    """The observed levels (as text, sorted) and their counts, "missing" last if any (raw, never released)."""
    text = values[values.notna()].astype(str)
    vc = text.value_counts(sort=False).sort_index()
    counts = vc.to_numpy(dtype=np.int64)
    missing = int(values.isna().sum())
    return [str(k) for k in vc.index], np.append(counts, missing) if missing else counts


def dp_levels(values: pd.Series, budget: Budget, delta: float, rng: np.random.Generator, ledger: Ledger,
              neighbours: Neighbours, definition: Definition, name: str) -> FoundLevels:
    """The levels of one column released by the thresholded histogram, spending ρ = ``budget`` and
    ``delta`` of the release's δ (see the module docstring); refused under pure ε."""
    if definition.name == "pure":
        raise OptionError(f"column '{name}': DP levels need (ε, δ) (a stability-based set release needs δ > 0; "
                          "under pure ε the levels must be declared public); give delta, or declare its levels")
    if not 0 < delta < 1:
        raise OptionError(f"column '{name}': the δ for its DP levels must be between 0 and 1; got {delta!r}")
    keys, counts = level_counts(values)
    has_missing = len(counts) > len(keys)
    mech = definition.count_noise(budget, neighbours)
    assert isinstance(mech, DiscreteGaussian)  # pure ε was refused above
    tau = exact_level_threshold(float(mech.sampler_sigma2), delta, neighbours.records_per_unit)
    m = Measurement.counts(f"levels of '{name}'", mech, neighbours, cells=1, subset=f"values of '{name}'",
                           sampler=EXACT_SAMPLER,
                           note=f"discrete Gaussian on every observed level's count (their number is not published); "
                                f"levels with noisy count ≥ {tau:.4g} are released (a level seen once passes with "
                                f"probability ≤ δ = {delta:.3g})")
    noisy = m.release(ledger, counts, rng)
    passed = noisy >= tau
    levels = tuple(k for k, ok in zip(keys, passed[:len(keys)]) if ok)
    return FoundLevels(levels, bool(has_missing and passed[-1]), float(tau))
