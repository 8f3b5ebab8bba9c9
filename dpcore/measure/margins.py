"""Noisy margins: count, add noise, charge; the one measurement type estimation consumes.

Privacy: a margin (the count table of a set of attributes over their declared
levels) changes by 1 in L1 when one record is added or removed and by 2 when one is
replaced (it leaves one cell and enters another), the notion's
``histogram_sensitivity``. Discrete Laplace noise of scale Δ/ε per cell releases it
with ε (Ghosh, Roughgarden & Sundararajan 2009); its cells are disjoint, so the
margin costs ε once (parallel composition). Each call charges the ledger that ε.
Proofs: docs/methods/aim.md, docs/methods/mst.md, docs/methods/ipf.md.

:func:`measure` returns a :class:`NoisyMargin`: the released values together with what
an estimator needs to weigh them (the noise variance per cell) and the mechanism that
drew the noise. Everything in :mod:`dpcore.estimate` fits to ``NoisyMargin`` s and
never sees the counts behind them (as private-pgm's estimators see only its
``LinearMeasurement`` s).
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import ArrayLike

from dpcore.counting import rows as count_rows
from dpcore.counting.count_table import CountTable
from dpcore.privacy.budget import Budget
from dpcore.privacy.definitions import Definition, PureDP
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.measurement import EXACT_SAMPLER, Measurement
from dpcore.privacy.neighbours import Neighbours

if TYPE_CHECKING:
    from dpcore.data.domain import Domain


class NoiseMechanism(Protocol):
    """What a :class:`NoisyMargin` keeps of the mechanism that noised it: its name, its
    scale and the variance of the noise it adds to one cell."""

    @property
    def name(self) -> str: ...

    @property
    def scale(self) -> float: ...

    @property
    def variance(self) -> float: ...


@dataclass(frozen=True, eq=False)
class NoisyMargin:
    """One released margin: the table on ``axes`` plus independent noise in every cell.

    ``axes``: the attributes (column indices of the domain), increasing; ``values``: the
    released table, shape ``[shape[a] for a in axes]`` (read-only; post-processing makes a
    new margin with :meth:`with_values`); ``variance``: the noise variance of one cell, σ²
    (the same in every cell; 0 for a margin known exactly, e.g. public population totals);
    ``mechanism``: what drew the noise (None for a margin known exactly).

    A ``NoisyMargin`` is released information: any function of it (and of public facts) is
    post-processing and keeps its guarantee (Dwork & Roth 2014, Prop 2.1).
    """

    axes: tuple[int, ...]
    values: np.ndarray
    variance: float
    mechanism: NoiseMechanism | None = None

    def __post_init__(self) -> None:
        axes = tuple(int(a) for a in self.axes)
        if list(axes) != sorted(set(axes)):
            raise ValueError(f"a margin's axes must be increasing attribute indices; got {self.axes}")
        values = np.asarray(self.values, dtype=float).view()
        if values.ndim != len(axes):
            raise ValueError(f"a margin on {len(axes)} attribute(s) needs a {len(axes)}-dimensional table; "
                             f"got shape {values.shape}")
        values.flags.writeable = False  # a view: the caller's array stays writable
        if not (self.variance >= 0):
            raise ValueError(f"a margin's noise variance must be ≥ 0; got {self.variance!r}")
        object.__setattr__(self, "axes", axes)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "variance", float(self.variance))

    @classmethod
    def exact(cls, axes: Iterable[int], values: np.ndarray) -> NoisyMargin:
        """A margin known without noise (public totals): variance 0, no mechanism."""
        return cls(tuple(axes), values, 0.0, None)

    @property
    def cells(self) -> int:
        return int(self.values.size)

    def with_values(self, values: ArrayLike) -> NoisyMargin:
        """The same measurement with post-processed ``values`` (a prior added, made
        non-negative, ...): the axes, the noise variance and the mechanism are kept."""
        return dataclasses.replace(self, values=np.asarray(values, dtype=float).reshape(self.values.shape))


def margin_counts(X: np.ndarray | CountTable, shape: Sequence[int], axes: Sequence[int]) -> np.ndarray:
    """Exact count table of ``axes`` from records or a :class:`dpcore.counting.count_table.CountTable`
    (raw data: never released as is)."""
    return count_rows.margin_counts(X, shape, axes)


def expected_abs_noise(mech: Any) -> float:
    """E|Z| of the count noise: 2a/(1 − a²), a = e^(−1/s) for discrete Laplace of scale s;
    √(2/π)·σ for the discrete Gaussian (its continuous value, within 1% for σ ≥ 1; it only sets a
    public bias in AIM's score, never a privacy quantity)."""
    if mech.name == "discrete_gaussian":
        return float(math.sqrt(2.0 / math.pi) * mech.sigma)
    a = math.exp(-1.0 / mech.scale)
    return 2.0 * a / (-math.expm1(-2.0 / mech.scale))


#: What the ledger says drew each kind of count noise.
SAMPLERS = {"discrete_laplace": EXACT_SAMPLER, "laplace": "discretised, floating-point safe",
            "discrete_gaussian": EXACT_SAMPLER}


def measure(X: np.ndarray | CountTable, shape: Sequence[int], axes: Sequence[int], budget: Budget, nb: Neighbours,
            rng: np.random.Generator, ledger: Ledger, label: str,
            note: str = "", *, noise: str = "discrete_laplace", subset: str | None = None,
            definition: Definition = PureDP()) -> NoisyMargin:
    """Release the margin on ``axes`` with ``noise`` (discrete Laplace by default) spending
    ``budget`` (an ε; a ρ under zCDP: discrete Gaussian noise), charging ``ledger`` first (the cells are
    disjoint: parallel composition).

    Returns the :class:`NoisyMargin` (values as float, the mechanism's variance per cell)."""
    mech = definition.count_noise(budget, nb, None if definition.name != "pure" else noise)
    cells = counts_cells(shape, axes)
    query = Measurement.counts(label, mech, nb, cells=cells, subset=subset or f"{cells} cells (disjoint)", note=note,
                               sampler=SAMPLERS[mech.name])
    counts = margin_counts(X, shape, axes)
    noisy = query.release(ledger, counts, rng).astype(float)
    del counts  # the raw counts go no further
    return NoisyMargin(tuple(axes), noisy, mech.variance, mech)


def counts_cells(shape: Sequence[int], axes: Iterable[int]) -> int:
    return math.prod(int(shape[a]) for a in axes)


def preview_row(what: str, cells: int | None, budget: Budget, mech: NoiseMechanism,
                definition: Definition) -> dict[str, Any]:
    """One row of a margin method's preview: a noisy table of ``cells`` cells, the budget it spends
    under the definition's own key (``"epsilon"`` for ε, ``"rho"`` for ρ under zCDP) and its noise
    (public facts only)."""
    return {"table": what, "cells": cells, definition.budget_key: budget.value, "mechanism": mech.name,
            "noise_scale": mech.scale, "noise_sd": float(np.sqrt(mech.variance))}


def selection_preview_row(what: str, budget: Budget, definition: Definition) -> dict[str, Any]:
    """A preview row for a private choice (exponential mechanism): no table, no noise scale; the
    budget under the definition's own key, as in :func:`preview_row`."""
    return {"table": what, "cells": None, definition.budget_key: budget.value, "mechanism": "exponential",
            "noise_scale": None, "noise_sd": None}


def one_way_preview_rows(domain: Domain, mech: NoiseMechanism, budget: Budget,
                         definition: Definition) -> list[dict[str, Any]]:
    """Preview rows (public facts only) for the one-way margins that AIM and MST measure
    first, each with the noise of ``mech`` at ``budget`` (under the definition's own key)."""
    return [preview_row(f"one-way {a}", domain[a].size, budget, mech, definition) for a in domain.names]
