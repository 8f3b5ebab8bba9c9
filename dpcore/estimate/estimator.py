"""The estimator protocol: noisy margins in, a model of the full table out.

Every estimator in :mod:`dpcore.estimate` answers one question: given released margins
y_S = c_S + Z_S (:class:`~dpcore.measure.margins.NoisyMargin`: the table of the
attributes S, with noise of known variance σ_S² per cell) of an unknown table c over a
domain of ``shape``, and a total n, which table p (non-negative, Σp = n) is consistent
with them? They differ in what they assume and what they store:

* :class:`~.dense_ipf.DenseIPF`: the maximum-entropy table with the margins (IPF), held as
  the full table;
* :class:`~.junction_tree.JunctionTreeIPF`: the same fit held on the clique tables of the
  margins' junction tree;
* :class:`~.mirror_descent.MirrorDescent`: the decomposable model on the same tree that
  minimises the inverse-variance-weighted squared error to the margins (Private-PGM's
  estimator), held on the clique tables;
* :class:`~.record_fit.RecordFit`: n records whose margins approach the margins (GUM), held
  as those records;
* :class:`~.raking.Raking`: a seed table raked to known one-way margins, held as the full
  table.

With consistent margins (no noise) the IPF fits converge to the maximum-entropy table with
those margins, the I-projection of the start onto them (Csiszár 1975); noisy margins are
generally inconsistent, and the estimators differ in how they reconcile them (rescaling
each to n, inverse-variance pooling and projection onto the simplex, shrinkage by the
known variance: see each one). A fit returns the :class:`Model` and a dict of diagnostics:
every estimator reports ``iterations`` (sweeps run) and ``converged``, and lists its other
keys. The model answers the two questions a synthesizer asks
of it: :meth:`Model.marginal` (the model's table on some attributes, for scores, checks
and the next round of an adaptive method) and :meth:`Model.sample` (n records drawn from
the model's law, as attribute codes).

Privacy: an estimator sees only released margins, the released total and the public
domain, and draws only its own (post-processing) randomness: whatever it returns keeps the
margins' guarantee (Dwork & Roth 2014, Prop 2.1). ``tests/test_architecture.py`` checks that
nothing in :mod:`dpcore.estimate` imports the privacy layer (its samplers, the ledger), the
counting layer or the data reader. This is private-pgm's design (McKenna et al., ``mbi``: one
``LinearMeasurement`` type and an ``Estimator`` protocol), written for dpcore's estimators.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dpcore.measure.margins import NoisyMargin

__all__ = ["Model", "Estimator", "check_margins"]


@runtime_checkable
class Model(Protocol):
    """A fitted model of the full table."""

    def marginal(self, axes: Sequence[int]) -> np.ndarray:
        """The model's table on ``axes`` (increasing attribute order), in counts: its cells sum
        to the model's total."""
        ...

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` i.i.d. records from the model's law (the table divided by its total), as
        attribute codes of shape (n, number of attributes)."""
        ...


@runtime_checkable
class Estimator(Protocol):
    """Fits a :class:`Model` to noisy margins. Estimators are small frozen dataclasses whose
    fields are their options; ``fit`` is a function of its arguments and those options."""

    def fit(self, shape: Sequence[int], margins: Sequence[NoisyMargin], total: float) -> tuple[Model, dict[str, Any]]:
        """The model of a table of ``shape`` with total ``total`` (the released record count)
        fitted to ``margins``, and the fit's diagnostics."""
        ...


def check_margins(shape: Sequence[int], margins: Sequence[NoisyMargin]) -> tuple[int, ...]:
    """``shape`` as ints, after checking that every margin's axes and table fit it (a
    programming error otherwise: the margins were measured on another domain)."""
    shape = tuple(int(s) for s in shape)
    for m in margins:
        if m.axes and m.axes[-1] >= len(shape) or m.values.shape != tuple(shape[a] for a in m.axes):
            raise ValueError(f"a margin on axes {m.axes} with table shape {m.values.shape} does not fit a domain "
                             f"of shape {shape}")
    return shape
