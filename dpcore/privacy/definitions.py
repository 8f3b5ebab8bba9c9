"""Privacy definitions: pure ε-DP, and (ε, δ)-DP through zero-concentrated DP.

A release is made under one definition, and every budget in it is in that definition's unit:

* :class:`PureDP` (the default): budgets are ε. Count noise is discrete Laplace (or the
  discretised Laplace), calibrated to the count table's L1 sensitivity; a mechanism costs its
  ε (``mechanism.epsilon(sensitivity)``).
* :class:`ZeroConcentratedDP`: the curator asks for (ε, δ); the release gets the largest ρ whose
  conversion does not exceed them (:func:`dpcore.privacy.zcdp.rho_of_epsilon_delta`), and every
  budget is a share of that ρ. Count noise is the discrete Gaussian, calibrated to the count
  table's L2 sensitivity; a mechanism costs its ρ (``mechanism.rho(sensitivity)``: Δ₂²/(2σ²)
  for the discrete Gaussian, ε²/8 for the exponential mechanism, ε²/2 for a pure ε-DP one).

Both units compose the same way (sequential: add; disjoint subsets: max; Bun & Steinke 2016 for
ρ), so a method splits "its budget" by the same shares under either, and asks the definition for
the mechanism that spends a share. Proofs: docs/privacy-model.md, "(ε, δ) through
zero-concentrated DP".
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from dpcore.errors import OptionError
from dpcore.privacy.gaussian import DiscreteGaussian
from dpcore.privacy.mechanisms import ExponentialMechanism, noise_for
from dpcore.privacy.neighbours import Neighbours
from dpcore.privacy.zcdp import check_delta, epsilon_of_rho, rho_of_epsilon_delta


@dataclass(frozen=True)
class PureDP:
    """ε-differential privacy: budgets are ε."""

    name: ClassVar[str] = "pure"
    unit: ClassVar[str] = "ε"
    #: the key a table row or plan names a budget in this unit by
    budget_key: ClassVar[str] = "epsilon"
    #: multiplying a budget by this halves every noise scale calibrated to it
    halving_factor: ClassVar[float] = 2.0
    delta: None = None

    def budget(self, epsilon: float) -> float:
        """The release's total budget for a requested ε: ε itself."""
        return float(epsilon)

    def cost(self, mechanism, sensitivity: float) -> float:
        return mechanism.epsilon(sensitivity)

    def count_noise(self, budget: float, neighbours: Neighbours, kind: str | None = None):
        """Noise for a count table (L1 sensitivity of the notion) that spends ``budget``."""
        return noise_for(kind, budget, neighbours.histogram_sensitivity)

    def selection(self, budget: float, sensitivity: float) -> ExponentialMechanism:
        """The exponential mechanism for scores of ``sensitivity`` that spends ``budget``."""
        return ExponentialMechanism.calibrate(budget, sensitivity)

    def epsilon_of(self, spent: float) -> float:
        """The ε a spent budget guarantees."""
        return float(spent)

    def to_dict(self) -> dict:
        return {"definition": self.name}


@dataclass(frozen=True)
class ZeroConcentratedDP:
    """(ε, δ)-differential privacy through ρ-zCDP: budgets are ρ, converted to (ε, δ) at the end."""

    delta: float
    name: ClassVar[str] = "zcdp"
    unit: ClassVar[str] = "ρ"
    #: the key a table row or plan names a budget in this unit by (never "epsilon": a ρ is not an ε)
    budget_key: ClassVar[str] = "rho"
    #: ρ ∝ 1/σ²: four times the budget halves σ
    halving_factor: ClassVar[float] = 4.0

    def __post_init__(self):
        object.__setattr__(self, "delta", check_delta(self.delta))

    def budget(self, epsilon: float) -> float:
        """The largest ρ whose (ε, δ) conversion does not exceed the requested ε at this δ."""
        return rho_of_epsilon_delta(epsilon, self.delta)

    def cost(self, mechanism, sensitivity: float) -> float:
        return mechanism.rho(sensitivity)

    def count_noise(self, budget: float, neighbours: Neighbours, kind: str | None = None) -> DiscreteGaussian:
        """The discrete Gaussian for a count table (L2 sensitivity of the notion) that spends ρ = ``budget``.
        ``kind`` "discrete_laplace" (a method's default integer noise) means the same here; the real-valued
        "laplace" is refused (it is a pure-ε mechanism)."""
        if kind not in (None, "discrete_gaussian", "discrete_laplace"):
            raise OptionError(f"noise={kind!r} is for pure ε-DP; under (ε, δ) (delta given) counts get discrete "
                              "Gaussian noise: leave noise at its default")
        return DiscreteGaussian.calibrate_rho(budget, neighbours.histogram_l2_sensitivity)

    def selection(self, budget: float, sensitivity: float) -> ExponentialMechanism:
        """The exponential mechanism at ε = √(8ρ): its zCDP cost ε²/8 is ``budget``."""
        return ExponentialMechanism.calibrate(math.sqrt(8.0 * budget), sensitivity)

    def epsilon_of(self, spent: float) -> float:
        """The ε of the (ε, δ) statement of ρ = ``spent`` (tight conversion, rounded up)."""
        return epsilon_of_rho(spent, self.delta)

    def to_dict(self) -> dict:
        return {"definition": self.name, "delta": self.delta}


def definition_for(delta) -> PureDP | ZeroConcentratedDP:
    """``delta=None``: pure ε-DP (the default); a number 0 < δ < 1: (ε, δ) through zCDP."""
    return PureDP() if delta is None else ZeroConcentratedDP(delta)


@dataclass(frozen=True)
class ReleaseContext:
    """What every synthesizer needs besides its options: the neighbour notion, how many records
    each synthetic set has (the noisy count under add/remove, n under replace), and the privacy
    definition its budget is in (pure ε by default)."""

    neighbours: Neighbours
    n_out: int
    definition: PureDP | ZeroConcentratedDP = PureDP()
