"""Measurements: drawing noise and paying for it in one call.

A :class:`Measurement` is one query released once by one mechanism: its cost is the
mechanism's own privacy map at the query's sensitivity (``mechanism.epsilon(sensitivity)``,
as OpenDP pairs every measurement with its map), on a stated subset of the records, under a
stated neighbour notion. Each of its calls — :meth:`~Measurement.release`,
:meth:`~Measurement.select`, :meth:`~Measurement.draw` — first records the charge in the
ledger and only then samples, so a ledger with a cap refuses a measurement before any noise
is drawn (:class:`~dpcore.privacy.ledger.BudgetExceededError`).

:meth:`Measurement.counts` is the measurement of a count table (a histogram, a margin, the
nodes of a layer): its L1 sensitivity comes from the neighbour notion (1 under add/remove, 2
under replace, :attr:`~dpcore.privacy.neighbours.Neighbours.histogram_sensitivity`) and its
disjoint cells compose in parallel (McSherry 2009, Thm 4). Proofs: docs/privacy-model.md.

This module is the only writer of ledger charges (``tests/test_architecture.py``). Two
functions cover the steps whose cost is not a mechanism's map at a sensitivity:
:func:`record_unpaid` (a step that spends nothing) and :func:`record_stated` (a map the
caller proves: smooth sensitivity, amplification by subsampling).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from dpcore.privacy.ledger import RHO, Charge, Ledger
from dpcore.privacy.neighbours import Neighbours
from dpcore.privacy.zcdp import rho_of_pure

T = TypeVar("T")

#: The ledger's sampler text for the exact samplers of :mod:`dpcore.privacy.mechanisms`.
EXACT_SAMPLER = "exact sampler"


@dataclass(frozen=True)
class Measurement:
    """One query released once by ``mechanism`` at ``sensitivity`` on ``subset``.

    ``parallel_over``: the query is applied independently to that many disjoint subsets
    (cells, nodes), which together cost ``epsilon`` once. ``sampler`` names the sampler in
    the ledger (e.g. :data:`EXACT_SAMPLER`).
    """

    label: str
    mechanism: Any
    sensitivity: float
    subset: str
    neighbours: str
    parallel_over: int = 1
    note: str = ""
    sampler: str = ""

    @classmethod
    def counts(cls, label: str, mechanism, neighbours: Neighbours, *, cells: int, subset: str, note: str = "",
               sampler: str = EXACT_SAMPLER) -> Measurement:
        """A count table of ``cells`` disjoint cells under ``neighbours``: the notion's sensitivity
        in the norm of the mechanism's map (L1 for Laplace, L2 for the discrete Gaussian),
        parallel over the cells."""
        return cls(label, mechanism, neighbours.count_sensitivity(mechanism), subset, neighbours.label, int(cells),
                   note, sampler)

    @property
    def epsilon(self) -> float | None:
        """The pure-ε privacy map (None for a mechanism that has none: the discrete Gaussian)."""
        return None if getattr(self.mechanism, "norm", "l1") == "l2" else self.mechanism.epsilon(self.sensitivity)

    @property
    def rho(self) -> float:
        """The zCDP privacy map: Δ₂²/(2σ²), ε²/8 (exponential mechanism) or ε²/2 (pure ε-DP)."""
        return self.mechanism.rho(self.sensitivity)

    def release(self, ledger: Ledger, values, rng, **kwargs):
        """Charge ``ledger``, then ``values`` + the mechanism's noise."""
        self._charge(ledger)
        return self.mechanism.release(values, rng, **kwargs)

    def select(self, ledger: Ledger, scores, rng, axis: int = -1):
        """Charge ``ledger``, then the exponential mechanism's choice on ``scores``."""
        self._charge(ledger)
        return self.mechanism.select(scores, self.sensitivity, rng, axis)

    def draw(self, ledger: Ledger, sampler: Callable[[], T]) -> T:
        """Charge ``ledger``, then run ``sampler``: a function that draws this mechanism's
        noise in a form :meth:`release` does not cover (the sparse leaf layer noises its
        non-empty cells one by one and its empty cells as a histogram, under one charge)."""
        self._charge(ledger)
        return sampler()

    def _charge(self, ledger: Ledger) -> Charge:
        name = self.mechanism.name + (f" ({self.sampler})" if self.sampler else "")
        in_rho = ledger.root.unit == RHO
        if self.epsilon is None and not in_rho:
            raise ValueError(f"'{self.label}': {self.mechanism.name} has no pure ε map; it needs a ledger kept in ρ")
        return ledger._record(Charge(label=self.label, epsilon=self.epsilon, mechanism=name,
                                     sensitivity=float(self.sensitivity), scale=self.mechanism.scale,
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


def record_stated(ledger: Ledger, label: str, epsilon: float, mechanism: str, *, sensitivity: float, scale: float,
                  subset: str, neighbours: str, note: str) -> Charge:
    """A charge whose ε comes from a privacy map the caller states and proves in ``note``
    and in the docs (smooth sensitivity, docs/survey-privacy.md; amplification by
    subsampling of a partition), not from ``mechanism.epsilon(sensitivity)``. Call it before
    the noise is drawn, like the other charges, so a cap refuses first."""
    eps = float(epsilon)
    return ledger._record(Charge(label=label, epsilon=eps, mechanism=mechanism,
                                 sensitivity=float(sensitivity), scale=float(scale), subset=subset,
                                 neighbours=neighbours, note=note,
                                 rho=rho_of_pure(eps) if ledger.root.unit == RHO else None))
