"""The privacy-budget ledger: a composition tree, and an odometer that refuses before noise.

A :class:`Ledger` is a composition tree (docs/privacy-model.md). Its leaves are
:class:`Charge` s, each one mechanism applied once with a stated ε, sensitivity and
scale. Inner nodes compose

* ``sequential``: ε adds up (basic sequential composition, Dwork & Roth 2014, Thm 3.16);
* ``parallel``: the children touch disjoint subsets of records, so ε is the max
  (McSherry 2009, Thm 4).

A charge applied independently to ``parallel_over`` disjoint subsets (the nodes of
one layer, the cells of one table) costs its ε once, by parallel composition.

The ledger is also an odometer: the root may carry a ``cap``, and a charge that would take
the root's total above it is refused with :class:`BudgetExceededError` *before* the
mechanism draws anything (:mod:`dpcore.privacy.measurement` charges first, then samples).
Only :mod:`dpcore.privacy.measurement` records charges (``tests/test_architecture.py``);
everyone else builds groups and reads totals. The ledger of a release must total the ε the
curator asked for, to 1e-12.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from dpcore.errors import DPCoreError, OptionError
from dpcore.privacy.budget import Budget, Epsilon, Rho, budget_of
from dpcore.privacy.neighbours import ADD_REMOVE, NEIGHBOUR_LABELS, REPLACE
from dpcore.privacy.zcdp import epsilon_of_rho

UNBOUNDED = NEIGHBOUR_LABELS[ADD_REMOVE]
BOUNDED = NEIGHBOUR_LABELS[REPLACE]
#: Relative slack of the cap: sums of shares of ε round in the last bits.
_CAP_TOLERANCE = 1e-12


#: Significant digits of a ledger total as written (far below the 1e-12 the totals are checked to).
TOTAL_DIGITS = 12


def readable_total(epsilon: float) -> float:
    """A sum of ε shares as it is written: :data:`TOTAL_DIGITS` significant digits, so float
    rounding in the sum (0.9999999999999999) does not show. The relative change is at most
    5e-13, inside the 1e-12 to which :meth:`Ledger.assert_total` checks the exact sum."""
    return float(f"{float(epsilon):.{TOTAL_DIGITS}g}")


class BudgetExceededError(DPCoreError):
    """A charge would take a ledger past its cap; nothing was drawn."""


@dataclass(frozen=True)
class Charge:
    """One mechanism, applied once per disjoint subset, at ``epsilon`` (pure ε-DP) and, in a
    ledger kept in ρ, at ``rho`` (zCDP). A discrete Gaussian has no pure ε: ``epsilon`` None."""

    label: str
    epsilon: float | None
    mechanism: str
    sensitivity: float
    scale: float
    subset: str
    parallel_over: int = 1
    neighbours: str = UNBOUNDED
    note: str = ""
    rho: float | None = None

    def cost(self, unit: str) -> Budget:
        """What this charge spends in ``unit`` ("epsilon" or "rho")."""
        value = self.rho if unit == RHO else self.epsilon
        if value is None:
            raise ValueError(f"charge '{self.label}' ({self.mechanism}) has no cost in {unit}")
        return budget_of(unit, value)


#: The units a ledger is kept in: pure ε, or ρ (zCDP, converted to (ε, δ) at the end).
EPSILON, RHO = "epsilon", "rho"


@dataclass
class Ledger:
    """A composition tree of charges. ``spent`` is what the whole tree spends: a budget in ``unit``
    (:class:`~dpcore.privacy.budget.Epsilon` or :class:`~dpcore.privacy.budget.Rho`).

    ``unit`` (root only): ``"epsilon"`` (pure ε-DP, the default) or ``"rho"`` (ρ-zCDP; ``delta``
    then states the (ε, δ) it converts to). ``cap`` (root only): the most the tree may spend, a budget of
    its unit; :meth:`_record` refuses a charge past it before any noise is drawn. Groups made by
    :meth:`group` share their root's unit and cap.
    """

    label: str
    composition: str = "sequential"
    children: list[Charge | Ledger] = field(default_factory=list)
    cap: Budget | None = None
    unit: str = EPSILON
    delta: float | None = None
    _root: Ledger | None = field(default=None, repr=False, compare=False)

    @classmethod
    def capped(cls, label: str, cap: Budget, delta: float | None = None) -> Ledger:
        """A root ledger that may spend at most ``cap``, in ``cap``'s unit (a ρ cap states ``delta``)."""
        return cls(label, cap=cap, unit=cap.unit, delta=delta)

    def __post_init__(self) -> None:
        if self.composition not in ("sequential", "parallel"):
            raise ValueError(f"composition must be 'sequential' or 'parallel', not {self.composition!r}")
        if self.unit not in (EPSILON, RHO):
            raise ValueError(f"a ledger's unit must be 'epsilon' or 'rho', not {self.unit!r}")
        if (self.unit == RHO) != (self.delta is not None):
            raise ValueError("a ledger kept in rho states the delta it converts to, and only such a ledger does")
        if self.cap is not None:
            if not isinstance(self.cap, (Epsilon, Rho)) or self.cap.unit != self.unit:
                raise TypeError(f"a ledger kept in {self.unit} takes a cap of that unit, not {self.cap!r}")
            if self.cap.value < 0:
                raise ValueError(f"a ledger's cap must be a budget >= 0, not {self.cap!r}")

    @property
    def root(self) -> Ledger:
        return self._root if self._root is not None else self

    def group(self, label: str, composition: str = "sequential") -> Ledger:
        """A sub-tree for one part of the release (a set, a layer); it spends nothing by itself."""
        g = Ledger(label, composition, unit=self.root.unit, delta=self.root.delta, _root=self.root)
        self.children.append(g)
        return g

    def _record(self, charge: Charge) -> Charge:
        """Add ``charge`` unless the root's total would pass its cap (then nothing changes).

        Private to the privacy layer: :mod:`dpcore.privacy.measurement` calls it before the
        mechanism samples, so a refused charge has drawn no noise.
        """
        value = charge.cost(self.root.unit).value
        if not (math.isfinite(value) and value >= 0):
            raise ValueError(f"charge '{charge.label}' has invalid {self.root.unit} {value!r}")
        self._append_capped(charge, f"'{charge.label}' would spend {self._show(value)}")
        return charge

    def _append_capped(self, child: Charge | Ledger, what: str) -> None:
        self.children.append(child)
        root = self.root
        if root.cap is not None and root.spent.value > root.cap.value * (1 + _CAP_TOLERANCE):
            self.children.pop()
            raise BudgetExceededError(f"{what}, taking '{root.label}' past its cap {self._show(root.cap.value)}; "
                                      "nothing was drawn")

    def _show(self, value: float) -> str:
        return f"{'ρ' if self.root.unit == RHO else 'ε'} = {value:.6g}"

    def attach(self, sub: Ledger) -> Ledger:
        """Compose a finished ledger ``sub`` (another release's, already charged, in the same unit)
        into this tree, sequentially; refused like a charge if it would pass the root's cap."""
        if sub.unit != self.root.unit:
            raise ValueError(f"cannot attach a ledger kept in {sub.unit} to one kept in {self.root.unit}")
        self._append_capped(sub, f"attaching '{sub.label}' ({self._show(sub.spent.value)})")
        for g in sub._groups():
            g._root = self.root
        return sub

    def _groups(self) -> Iterator[Ledger]:
        yield self
        for c in self.children:
            if isinstance(c, Ledger):
                yield from c._groups()

    @property
    def remaining(self) -> Budget | None:
        """What the root's cap leaves, in its unit (None without a cap)."""
        root = self.root
        if root.cap is None:
            return None
        return budget_of(root.unit, max(0.0, root.cap.value - root.spent.value))

    @property
    def spent(self) -> Budget:
        """What this tree spends, a budget in the root's unit: children add up (sequential) or the largest
        counts (parallel)."""
        unit = self.root.unit
        vals = [(c.spent if isinstance(c, Ledger) else c.cost(unit)).value for c in self.children]
        if not vals:
            return budget_of(unit, 0.0)
        return budget_of(unit, math.fsum(vals) if self.composition == "sequential" else max(vals))

    @property
    def rho(self) -> float | None:
        """ρ spent (ledgers kept in ρ), else None: the figure the manifest states."""
        return self.spent.value if self.root.unit == RHO else None

    @property
    def epsilon(self) -> float:
        """The ε this tree guarantees, as the manifest and the statement state it: its sum of ε (pure), or
        the (ε, δ) conversion of its ρ at the root's δ (zCDP; tight conversion, rounded up:
        dpcore.privacy.zcdp.epsilon_of_rho)."""
        if self.root.unit == RHO:
            assert self.root.delta is not None  # a ledger kept in ρ states its δ (__post_init__)
            return epsilon_of_rho(self.spent.value, self.root.delta)
        return self.spent.value

    def charges(self, prefix: str = "") -> Iterator[tuple[str, Charge]]:
        """Every charge with its path, e.g. ``"set 1/counts/layer 2"``."""
        path = f"{prefix}/{self.label}" if prefix else self.label
        for c in self.children:
            if isinstance(c, Ledger):
                yield from c.charges(path)
            else:
                yield f"{path}/{c.label}", c

    def to_dict(self) -> dict[str, object]:
        """JSON-ready: the total and the flat list of charges (no data values).

        The totals (``epsilon_total``, ``rho_total`` and each group's ``epsilon`` / ``rho``) are
        written to :data:`TOTAL_DIGITS` significant digits, so a total of exactly 1 composed from
        floating-point shares reads 1, not 0.9999999999999999; the charges keep their exact
        values, and the exact sum is what :meth:`assert_total` checks against the request. A
        ledger kept in ρ adds its unit, ρ and δ; a pure one is written as it always was."""
        out: dict[str, object] = {"epsilon_total": readable_total(self.epsilon)}
        if self.root.unit == RHO:
            out.update(unit=RHO, rho_total=readable_total(self.spent.value), delta=self.root.delta)
        out["composition"] = self._tree()
        out["charges"] = [dict(path=p, **_charge_dict(c)) for p, c in self.charges()]
        return out

    def _tree(self) -> dict[str, object]:
        rho = self.root.unit == RHO

        def node(c: Charge | Ledger) -> dict[str, object]:
            if isinstance(c, Ledger):
                return c._tree()
            return {"label": c.label, "epsilon": c.epsilon, **({"rho": c.rho} if rho else {})}

        return {"label": self.label, "composition": self.composition, "epsilon": readable_total(self.epsilon),
                **({"rho": readable_total(self.spent.value)} if rho else {}),
                "children": [node(c) for c in self.children]}

    def assert_total(self, requested: Budget, tol: float = 1e-12) -> None:
        """Internal invariant: the release spends exactly what was asked (a budget in the ledger's unit)."""
        if not isinstance(requested, (Epsilon, Rho)) or requested.unit != self.root.unit:
            raise TypeError(f"a ledger kept in {self.root.unit} checks a budget of that unit, not {requested!r}")
        if abs(self.spent.value - requested.value) > tol * max(1.0, requested.value):
            raise AssertionError(f"ledger totals {self.spent!r} but {requested!r} was requested")


def _charge_dict(c: Charge) -> dict[str, Any]:
    d = asdict(c)
    if d["rho"] is None:  # pure ledgers are written as they always were
        del d["rho"]
    return d


#: The smallest ε dpcore accepts: below it every release is pure noise, and the exact
#: samplers' scales (1/ε) leave the range they represent exactly (docs/mechanisms.md).
MIN_EPSILON = 1e-9
#: ... and the largest: beyond it the exponential mechanism's exact sampler cannot
#: represent the score range, and no privacy is left to state.
MAX_EPSILON = 1e9


#: Above this ε a release is still accepted but warned about: e^10 ≈ 22,000, so the guarantee bounds
#: almost nothing (the literature's and the agencies' releases stay at or below it).
EPSILON_WARN_ABOVE = 10.0


def epsilon_warning(epsilon: object) -> str | None:
    """One line for an ε that is accepted but means little, or None (ε ≤ 10, or not a valid ε at all:
    :func:`check_epsilon` reports those). Used by the command line and the app."""
    try:
        e = check_epsilon(epsilon)
    except OptionError:
        return None
    if e <= EPSILON_WARN_ABOVE:
        return None
    factor = f"{math.exp(e):.3g}" if e < 700 else "astronomically large"
    return (f"ε = {e:g} is above {EPSILON_WARN_ABOVE:g}: one person may change the odds of any output by a factor "
            f"up to e^ε ({factor}), so this release is differentially private in name only; use ε between 0.1 and 10")


def check_epsilon(epsilon: object) -> float:
    """ε must be a finite number ≥ MIN_EPSILON (a bool is not a number here)."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real):  # numpy's bool_ is not Real either
        raise OptionError(f"epsilon must be a number, not {epsilon!r}")
    try:
        e = float(epsilon)
    except (TypeError, ValueError):
        raise OptionError(f"epsilon must be a number; got {epsilon!r}") from None
    if not math.isfinite(e) or e <= 0:
        raise OptionError(f"epsilon must be a finite number greater than 0; got {epsilon!r}. "
                          "Smaller ε means stronger privacy; try 1")
    if e > MAX_EPSILON:
        raise OptionError(f"epsilon {e:.3g} is too large: above {MAX_EPSILON:g} a release is the data itself in "
                          "all but name; use ε between 0.1 and 10")
    if e < MIN_EPSILON:
        raise OptionError(f"epsilon {e:.3g} is too small: dpcore accepts ε ≥ {MIN_EPSILON:g} (anything smaller "
                          "is pure noise, and the exact samplers cannot represent it); try 0.1 to 10")
    return e
