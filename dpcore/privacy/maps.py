"""Privacy maps: the protocol every mechanism that spends budget meets, and the cost of a pure map in either unit.

A mechanism's privacy map turns the sensitivity of the query it noises (in the norm the map takes) into the
budget it spends: an ε for pure ε-DP, a ρ for zCDP (:mod:`dpcore.privacy.budget`). Every concrete mechanism
(:mod:`dpcore.privacy.mechanisms`, :mod:`dpcore.privacy.gaussian`, PrivTree's noise) carries its own map as
``cost(sensitivity, unit)``; :class:`dpcore.privacy.measurement.Measurement` derives every charge from it and
from the stability of the transformations before the query (:mod:`dpcore.privacy.stability`). Proofs:
docs/mechanisms.md.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from dpcore.privacy.budget import Budget, Epsilon, Rho
from dpcore.privacy.stability import Norm, Sensitivity
from dpcore.privacy.zcdp import rho_of_pure

__all__ = ["Mechanism", "check_norm", "pure_cost"]


class Mechanism(Protocol):
    """What every mechanism that spends budget has: a name, the norm of the sensitivity its privacy map
    takes, its noise scale, and the map itself. ``cost(sensitivity, unit)`` is the budget the mechanism
    spends on a query of that sensitivity, in ``unit`` (``"epsilon"`` for pure ε-DP, ``"rho"`` for
    ρ-zCDP; :mod:`dpcore.privacy.budget`). It refuses a sensitivity in another norm, and a unit it has no
    map to (the discrete Gaussian has no pure ε). :class:`dpcore.privacy.measurement.Measurement` derives
    every charge from it, so no call site writes a cost by hand."""

    @property
    def name(self) -> str: ...

    @property
    def norm(self) -> Norm: ...

    @property
    def scale(self) -> float: ...

    def cost(self, sensitivity: Sensitivity, unit: str) -> Budget: ...


def check_norm(mechanism: str, norm: str, sensitivity: Sensitivity) -> float:
    if not isinstance(sensitivity, Sensitivity):
        raise TypeError(f"{mechanism}'s privacy map takes a Sensitivity (value and norm), not "
                        f"{type(sensitivity).__name__}")
    if sensitivity.norm != norm:
        raise ValueError(f"{mechanism}'s privacy map takes an {norm.upper()} sensitivity, not {sensitivity.norm}")
    return sensitivity.value


def pure_cost(epsilon: float, unit: str, rho_of: Callable[[float], float] = rho_of_pure) -> Budget:
    """The budget of a mechanism whose pure map gives ``epsilon``, in ``unit``: ε itself, or its zCDP
    cost (ε²/2 for an ε-DP mechanism; ``rho_of`` for a tighter one, e.g. ε²/8 for the exponential)."""
    if unit == Epsilon.unit:
        return Epsilon(epsilon)
    if unit == Rho.unit:
        return Rho(rho_of(epsilon))
    raise ValueError(f"a budget's unit is 'epsilon' or 'rho', not {unit!r}")
