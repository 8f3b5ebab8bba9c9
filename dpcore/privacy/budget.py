"""Privacy budgets as types: an ε and a ρ cannot be confused.

A release is made under one privacy definition (:mod:`dpcore.privacy.definitions`) and every budget in
it is in that definition's unit:

* :class:`Epsilon`: pure ε-differential privacy. Budgets add up under sequential composition and take
  the largest under parallel composition (Dwork & Roth 2014, Thm 3.16; McSherry 2009, Thm 4).
* :class:`Rho`: ρ-zero-concentrated DP (Bun & Steinke 2016). Budgets compose the same way, and a
  total ρ is stated as (ε, δ) only at the end (:meth:`Rho.epsilon_at`, Canonne, Kamath & Steinke 2020).

Both are small frozen types with their arithmetic inside the unit: a budget plus a budget of the same
unit, a budget times a share, a budget divided among sets, the ratio of two budgets. Passing a ρ where a
function takes an ε is a type error (mypy reports it; ``tests/privacy/test_budget_types.py`` runs mypy on
such a call); adding an ε to a ρ is a :class:`TypeError` at run time (a method generic over the
definition holds "a budget of either unit", so the operators take both and check). The conversions live
here and nowhere else:

* a pure ε-DP mechanism is (ε²/2)-zCDP (:meth:`Epsilon.as_rho`; Bun & Steinke 2016, Prop. 1.4);
* the largest ρ whose (ε, δ) statement is within a requested (ε, δ) (:meth:`Rho.within`);
* the (ε, δ) statement of a ρ (:meth:`Rho.epsilon_at`), for display and the DP statement only.

Arithmetic is float arithmetic on the value, in the order written, so a release computed with typed
budgets is bit for bit the one computed with floats (bench/checks/releases_unchanged.py).
Proofs: docs/privacy-model.md.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar, Self, TypeVar, overload

__all__ = ["Epsilon", "Rho", "Budget", "BudgetT", "budget_of", "fsum", "zero_like"]


def _value(name: str, value: object) -> float:
    """A budget's value: any finite number. (A difference of budgets may come out below 0; whatever
    spends it refuses that: the mechanisms' calibration and the ledger's charges check their budget.)"""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} takes a number, not {type(value).__name__}")
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be a finite number, not {value!r}")
    return x


def _same(a: _Budget, b: object) -> _Budget:
    """``b`` when it is a budget of ``a``'s unit; a TypeError otherwise (an ε and a ρ never mix)."""
    if type(b) is not type(a) or not isinstance(b, _Budget):
        raise TypeError(f"cannot combine a {type(a).__name__} budget with {type(b).__name__}: an ε and a ρ are "
                        "different units (a pure ε-DP mechanism is ε²/2-zCDP: convert with Epsilon.as_rho)")
    return b


def _share(k: object) -> float:
    if isinstance(k, bool) or not isinstance(k, numbers.Real):
        raise TypeError(f"a budget is scaled by a number (a share, a count of sets), not {type(k).__name__}")
    return float(k)


@dataclass(frozen=True)
class _Budget:
    """What both units share: a finite value, the arithmetic inside the unit, comparisons within it."""

    value: float
    unit: ClassVar[str] = ""
    symbol: ClassVar[str] = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", _value(self.symbol, self.value))

    def __add__(self, other: Budget) -> Self:
        return type(self)(self.value + _same(self, other).value)

    def __sub__(self, other: Budget) -> Self:
        return type(self)(self.value - _same(self, other).value)

    def __mul__(self, share: float) -> Self:
        return type(self)(self.value * _share(share))

    def __rmul__(self, share: float) -> Self:
        return type(self)(_share(share) * self.value)

    @overload
    def __truediv__(self, k: Budget) -> float: ...

    @overload
    def __truediv__(self, k: float) -> Self: ...

    def __truediv__(self, k: Budget | float) -> Self | float:
        """A share of the budget (divided by a number), or the ratio of two budgets of this unit."""
        if isinstance(k, _Budget):
            return self.value / _same(self, k).value
        return type(self)(self.value / _share(k))

    def __lt__(self, other: Budget) -> bool:
        return self.value < _same(self, other).value

    def __le__(self, other: Budget) -> bool:
        return self.value <= _same(self, other).value

    def __gt__(self, other: Budget) -> bool:
        return self.value > _same(self, other).value

    def __ge__(self, other: Budget) -> bool:
        return self.value >= _same(self, other).value

    def __bool__(self) -> bool:
        return self.value > 0

    def __str__(self) -> str:
        return f"{self.symbol} = {self.value:.6g}"


@dataclass(frozen=True)
class Epsilon(_Budget):
    """A pure ε-DP budget."""

    #: the unit's name in a ledger (``Ledger.unit``) and its symbol for people
    unit: ClassVar[str] = "epsilon"
    symbol: ClassVar[str] = "ε"

    def as_rho(self) -> Rho:
        """ρ = ε²/2: an ε-DP mechanism is (ε²/2)-zCDP (Bun & Steinke 2016, Proposition 1.4)."""
        return Rho(0.5 * self.value * self.value)


@dataclass(frozen=True)
class Rho(_Budget):
    """A ρ-zCDP budget."""

    unit: ClassVar[str] = "rho"
    symbol: ClassVar[str] = "ρ"

    @classmethod
    def within(cls, epsilon: Epsilon, delta: float) -> Rho:
        """The largest ρ whose (ε, δ) statement does not exceed ``epsilon`` at ``delta``
        (:func:`dpcore.privacy.zcdp.rho_of_epsilon_delta`)."""
        from dpcore.privacy.zcdp import rho_of_epsilon_delta

        if not isinstance(epsilon, Epsilon):
            raise TypeError(f"Rho.within takes the requested Epsilon, not {type(epsilon).__name__}")
        return cls(rho_of_epsilon_delta(epsilon.value, delta))

    def epsilon_at(self, delta: float) -> Epsilon:
        """The ε of this ρ's (ε, δ) statement at ``delta`` (tight conversion, rounded up): for the
        statement and for display, never to spend."""
        from dpcore.privacy.zcdp import epsilon_of_rho

        return Epsilon(epsilon_of_rho(self.value, delta))


#: A budget in either unit (a function that takes both says so; most take one).
Budget = Epsilon | Rho
#: The same unit in and out (a share of a budget is a budget of its unit).
BudgetT = TypeVar("BudgetT", Epsilon, Rho)


def budget_of(unit: str, value: float) -> Budget:
    """The budget of ``value`` in the unit named ``unit`` (``"epsilon"`` or ``"rho"``, as a ledger names it)."""
    if unit == Epsilon.unit:
        return Epsilon(value)
    if unit == Rho.unit:
        return Rho(value)
    raise ValueError(f"a budget's unit is 'epsilon' or 'rho', not {unit!r}")


@overload
def zero_like(budget: Epsilon) -> Epsilon: ...


@overload
def zero_like(budget: Rho) -> Rho: ...


@overload
def zero_like(budget: Budget) -> Budget: ...


def zero_like(budget: Budget) -> Budget:
    """A budget of 0 in ``budget``'s unit."""
    return type(budget)(0.0)


def fsum(budgets: Iterable[BudgetT], like: BudgetT) -> BudgetT:
    """The exact sum (math.fsum) of budgets of ``like``'s unit."""
    values = []
    for b in budgets:
        if type(b) is not type(like):
            raise TypeError(f"cannot add a {type(b).__name__} to {type(like).__name__} budgets")
        values.append(b.value)
    return type(like)(math.fsum(values))
