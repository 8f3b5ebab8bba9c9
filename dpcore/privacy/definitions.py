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
from dpcore.privacy.budget import Budget, Epsilon, Rho
from dpcore.privacy.gaussian import DiscreteGaussian
from dpcore.privacy.mechanisms import DiscreteLaplace, ExponentialMechanism, Laplace, Mechanism, noise_for
from dpcore.privacy.neighbours import Neighbours
from dpcore.privacy.stability import Sensitivity
from dpcore.privacy.zcdp import check_delta


def _epsilon(budget: Budget) -> float:
    if not isinstance(budget, Epsilon):
        raise TypeError(f"a pure ε-DP release spends Epsilon budgets, not {type(budget).__name__}")
    return budget.value


def _rho(budget: Budget) -> float:
    if not isinstance(budget, Rho):
        raise TypeError(f"an (ε, δ) release through zCDP spends Rho budgets, not {type(budget).__name__}")
    return budget.value


@dataclass(frozen=True)
class PureDP:
    """ε-differential privacy: budgets are :class:`~dpcore.privacy.budget.Epsilon`."""

    name: ClassVar[str] = "pure"
    unit: ClassVar[str] = Epsilon.unit
    #: the key a table row or plan names a budget in this unit by
    budget_key: ClassVar[str] = "epsilon"
    #: multiplying a budget by this halves every noise scale calibrated to it
    halving_factor: ClassVar[float] = 2.0
    delta: None = None

    def budget(self, epsilon: Epsilon) -> Epsilon:
        """The release's total budget for a requested ε: ε itself."""
        return Epsilon(_epsilon(epsilon))

    def zero(self) -> Epsilon:
        return Epsilon(0.0)

    def cost(self, mechanism: Mechanism, sensitivity: Sensitivity) -> Budget:
        """What ``mechanism`` spends on a query of ``sensitivity``: its privacy map, in ε."""
        return mechanism.cost(sensitivity, self.unit)

    def count_noise(self, budget: Budget, neighbours: Neighbours,
                    kind: str | None = None) -> DiscreteLaplace | Laplace:
        """Noise for a count table (L1 sensitivity of the notion) that spends ``budget``."""
        return noise_for(kind, _epsilon(budget), neighbours.histogram_sensitivity)

    def selection(self, budget: Budget, sensitivity: float) -> ExponentialMechanism:
        """The exponential mechanism for scores of ``sensitivity`` that spends ``budget``."""
        return ExponentialMechanism.calibrate(_epsilon(budget), sensitivity)

    def epsilon_of(self, spent: Budget) -> Epsilon:
        """The ε a spent budget guarantees."""
        return Epsilon(_epsilon(spent))

    def to_dict(self) -> dict[str, object]:
        return {"definition": self.name}


@dataclass(frozen=True)
class ZeroConcentratedDP:
    """(ε, δ)-differential privacy through ρ-zCDP: budgets are :class:`~dpcore.privacy.budget.Rho`, converted to
    (ε, δ) at the end."""

    delta: float
    name: ClassVar[str] = "zcdp"
    unit: ClassVar[str] = Rho.unit
    #: the key a table row or plan names a budget in this unit by (never "epsilon": a ρ is not an ε)
    budget_key: ClassVar[str] = "rho"
    #: ρ ∝ 1/σ²: four times the budget halves σ
    halving_factor: ClassVar[float] = 4.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "delta", check_delta(self.delta))

    def budget(self, epsilon: Epsilon) -> Rho:
        """The largest ρ whose (ε, δ) conversion does not exceed the requested ε at this δ."""
        return Rho.within(epsilon, self.delta)

    def zero(self) -> Rho:
        return Rho(0.0)

    def cost(self, mechanism: Mechanism, sensitivity: Sensitivity) -> Budget:
        """What ``mechanism`` spends on a query of ``sensitivity``: its privacy map, in ρ."""
        return mechanism.cost(sensitivity, self.unit)

    def count_noise(self, budget: Budget, neighbours: Neighbours, kind: str | None = None) -> DiscreteGaussian:
        """The discrete Gaussian for a count table (L2 sensitivity of the notion) that spends ρ = ``budget``.
        ``kind`` "discrete_laplace" (a method's default integer noise) means the same here; the real-valued
        "laplace" is refused (it is a pure-ε mechanism)."""
        if kind not in (None, "discrete_gaussian", "discrete_laplace"):
            raise OptionError(f"noise={kind!r} is for pure ε-DP; under (ε, δ) (delta given) counts get discrete "
                              "Gaussian noise: leave noise at its default")
        return DiscreteGaussian.calibrate_rho(_rho(budget), neighbours.histogram_l2_sensitivity)

    def selection(self, budget: Budget, sensitivity: float) -> ExponentialMechanism:
        """The exponential mechanism at ε = √(8ρ): its zCDP cost ε²/8 is ``budget``."""
        return ExponentialMechanism.calibrate(math.sqrt(8.0 * _rho(budget)), sensitivity)

    def epsilon_of(self, spent: Budget) -> Epsilon:
        """The ε of the (ε, δ) statement of ρ = ``spent`` (tight conversion, rounded up): the statement only."""
        return Rho(_rho(spent)).epsilon_at(self.delta)

    def to_dict(self) -> dict[str, object]:
        return {"definition": self.name, "delta": self.delta}


#: a release's privacy definition
Definition = PureDP | ZeroConcentratedDP


def definition_for(delta: float | None) -> Definition:
    """``delta=None``: pure ε-DP (the default); a number 0 < δ < 1: (ε, δ) through zCDP."""
    return PureDP() if delta is None else ZeroConcentratedDP(delta)


@dataclass(frozen=True)
class ReleaseContext:
    """What every synthesizer needs besides its options: the neighbour notion, how many records
    each synthetic set has (the noisy count under add/remove, n under replace), and the privacy
    definition its budget is in (pure ε by default)."""

    neighbours: Neighbours
    n_out: int
    definition: Definition = PureDP()
