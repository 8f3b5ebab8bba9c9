"""Measurements: drawing noise and paying for it in one call.

A :class:`Measurement` is one query released once by one mechanism: its cost is the
mechanism's own privacy map at the query's sensitivity (``mechanism.cost(sensitivity, unit)``,
as OpenDP pairs every measurement with its map), on a stated subset of the records, under a
stated neighbour notion. The sensitivity is a :class:`~dpcore.privacy.stability.Sensitivity` with its
norm, derived from the stability of the transformations before the query (the privacy unit's
contribution bound, then the count table: :meth:`dpcore.privacy.neighbours.Neighbours.count_sensitivity`),
so a measurement's cost is map ∘ stability and no call site writes it by hand
(``tests/test_architecture.py`` checks that). Each of its calls — :meth:`~Measurement.release`,
:meth:`~Measurement.select`, :meth:`~Measurement.draw` — first records the charge in the
ledger and only then samples, so a ledger with a cap refuses a measurement before any noise
is drawn (:class:`~dpcore.privacy.ledger.BudgetExceededError`).

:meth:`Measurement.counts` is the measurement of a count table (a histogram, a margin, the
nodes of a layer): its disjoint cells compose in parallel (McSherry 2009, Thm 4). Proofs:
docs/privacy-model.md.

This module is the only writer of ledger charges (``tests/test_architecture.py``). A step that
spends nothing is recorded by :func:`record_unpaid`; a mechanism whose map is proved outside this layer
(smooth sensitivity, amplification by subsampling; docs/survey-privacy.md) is a
:class:`StatedMechanism`, measured like any other.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from dpcore.privacy.budget import Budget
from dpcore.privacy.ledger import RHO, Charge, Ledger
from dpcore.privacy.maps import Mechanism, pure_cost
from dpcore.privacy.neighbours import Neighbours
from dpcore.privacy.stability import Norm, Sensitivity

T = TypeVar("T")

#: The ledger's sampler text for the exact samplers of :mod:`dpcore.privacy.mechanisms`.
EXACT_SAMPLER = "exact sampler"


@dataclass(frozen=True)
class StatedMechanism:
    """A mechanism calibrated outside the privacy layer, whose privacy map is proved where it is built and
    stated with its proof: it costs ``epsilon`` (its calibration) on the query it was calibrated for. The
    smooth-sensitivity releases (their noise scale depends on the data, so no sensitivity is recorded) and
    releases to pieces of a partition (amplification by subsampling) are measured through it
    (docs/survey-privacy.md)."""

    name: str
    epsilon: float
    proof: str
    scale: float = math.nan
    norm: ClassVar[Norm] = "score"

    def cost(self, sensitivity: Sensitivity, unit: str) -> Budget:
        return pure_cost(float(self.epsilon), unit)


#: the sensitivity a :class:`StatedMechanism`'s measurement records: its map does not read one
UNSTATED = Sensitivity(0.0, "score")


@dataclass(frozen=True)
class Measurement:
    """One query released once by ``mechanism`` at ``sensitivity`` on ``subset``.

    ``parallel_over``: the query is applied independently to that many disjoint subsets
    (cells, nodes), which together cost once. ``sampler`` names the sampler in the ledger
    (e.g. :data:`EXACT_SAMPLER`). ``recorded``: the (sensitivity, scale) the ledger shows, when they
    are not the mechanism's own (a :class:`StatedMechanism`: NaN, data-dependent).
    """

    label: str
    mechanism: Mechanism
    sensitivity: Sensitivity
    subset: str
    neighbours: str
    parallel_over: int = 1
    note: str = ""
    sampler: str = ""
    recorded: tuple[float, float] | None = None

    @classmethod
    def counts(cls, label: str, mechanism: Mechanism, neighbours: Neighbours, *, cells: int, subset: str,
               note: str = "", sampler: str = EXACT_SAMPLER) -> Measurement:
        """A count table of ``cells`` disjoint cells under ``neighbours``: the sensitivity of the
        notion's count-table stability in the norm of the mechanism's map (L1 for Laplace, L2 for the
        discrete Gaussian), parallel over the cells."""
        return cls(label, mechanism, neighbours.count_sensitivity(mechanism.norm), subset, neighbours.label,
                   int(cells), note, sampler)

    @classmethod
    def selection(cls, label: str, mechanism: Mechanism, neighbours: Neighbours, per_record: float, *,
                  subset: str, note: str = "", parallel_over: int = 1, sampler: str = "") -> Measurement:
        """A private choice by ``mechanism`` among scores that change by at most ``per_record`` when one
        record changes: their sensitivity under ``neighbours`` (times the unit's records)."""
        return cls(label, mechanism, neighbours.score_sensitivity(per_record), subset, neighbours.label,
                   int(parallel_over), note, sampler)

    @classmethod
    def stated(cls, label: str, mechanism: StatedMechanism, *, subset: str, neighbours: str, note: str,
               sensitivity: float = math.nan, scale: float = math.nan, parallel_over: int = 1) -> Measurement:
        """A release by a :class:`StatedMechanism` (its map proved where it was built)."""
        return cls(label, mechanism, UNSTATED, subset, neighbours, parallel_over, note,
                   recorded=(float(sensitivity), float(scale)))

    def cost(self, unit: str) -> Budget:
        """The mechanism's privacy map at this measurement's sensitivity, in ``unit``."""
        return self.mechanism.cost(self.sensitivity, unit)

    @property
    def epsilon(self) -> float | None:
        """The pure-ε privacy map (None for a mechanism that has none: the discrete Gaussian)."""
        return None if self.mechanism.norm == "l2" else self.cost("epsilon").value

    @property
    def rho(self) -> float:
        """The zCDP privacy map: Δ₂²/(2σ²), ε²/8 (exponential mechanism) or ε²/2 (pure ε-DP)."""
        return self.cost(RHO).value

    def release(self, ledger: Ledger, values: ArrayLike, rng: np.random.Generator, **kwargs: Any) -> np.ndarray:
        """Charge ``ledger``, then ``values`` + the mechanism's noise."""
        self._charge(ledger)
        return self.mechanism.release(values, rng, **kwargs)  # type: ignore[attr-defined, no-any-return]

    def select(self, ledger: Ledger, scores: ArrayLike, rng: np.random.Generator, axis: int = -1) -> Any:
        """Charge ``ledger``, then the exponential mechanism's choice on ``scores``."""
        self._charge(ledger)
        return self.mechanism.select(scores, self.sensitivity.value, rng, axis)  # type: ignore[attr-defined]

    def draw(self, ledger: Ledger, sampler: Callable[[], T]) -> T:
        """Charge ``ledger``, then run ``sampler``: a function that draws this mechanism's
        noise in a form :meth:`release` does not cover (the sparse leaf layer noises its
        non-empty cells one by one and its empty cells as a histogram, under one charge; a
        stated mechanism's noise)."""
        self._charge(ledger)
        return sampler()

    def _charge(self, ledger: Ledger) -> Charge:
        name = self.mechanism.name + (f" ({self.sampler})" if self.sampler else "")
        in_rho = ledger.root.unit == RHO
        if self.epsilon is None and not in_rho:
            raise ValueError(f"'{self.label}': {self.mechanism.name} has no pure ε map; it needs a ledger kept in ρ")
        sensitivity, scale = self.recorded or (self.sensitivity.value, float(self.mechanism.scale))
        return ledger._record(Charge(label=self.label, epsilon=self.epsilon, mechanism=name,
                                     sensitivity=sensitivity, scale=scale,
                                     subset=self.subset, parallel_over=self.parallel_over,
                                     neighbours=self.neighbours, note=self.note,
                                     rho=self.rho if in_rho else None))


def record_unpaid(ledger: Ledger, label: str, mechanism: str, subset: str, neighbours: str, *,
                  parallel_over: int = 1, sensitivity: float = 0.0, note: str = "") -> Charge:
    """A step that reads nothing private or is not covered at all, at ε = 0: a forced or
    data-independent choice, or a non-private choice that makes the release NOT DP (the
    release's DP status says so; this only keeps the step visible in the ledger)."""
    return ledger._record(Charge(label=label, epsilon=0.0, mechanism=mechanism, sensitivity=float(sensitivity),
                                 scale=0.0, subset=subset, parallel_over=parallel_over, neighbours=neighbours,
                                 note=note, rho=0.0 if ledger.root.unit == RHO else None))
