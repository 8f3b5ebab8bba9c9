"""Raking: a seed table fitted to known one-way margins (DP post-stratification's IPF).

Raking (Deming & Stephan 1940; Merrill 2021, Def 7.5.8) is IPF from a given start: the
seed T⁰ (in post-stratification, the noisy join table of the chosen bins made positive) is
rescaled axis by axis to the known population totals N̂ of each axis,

    T(x) ← T(x) · N̂_i(x_i) / T_i(x_i)      (factor 0 where T_i(x_i) = 0),

one axis after another, until no cell moved by more than ``tol`` · (the largest margin
total) over a cycle. Each step is the I-projection onto {T : T_i = N̂_i} (Csiszár 1975),
so with consistent margins the cycles converge to the table closest to the seed in
Kullback–Leibler divergence among those with the margins: the seed's interactions (its
odds ratios) are kept, its one-way margins replaced. The sweeps are those of the dense IPF
(:func:`dpcore.estimate.dense_ipf.fit_sweeps`, on the full table: the join tables are
small), from the seed instead of the uniform table and without rescaling the margins
(public totals are kept as they are; whether they agree is reported).

Privacy: the seed is already noisy and the margins are public totals: post-processing
(Dwork & Roth 2014, Prop 2.1). Used by :func:`dpcore.survey.poststrat.poststratify_release`
(docs/methods/survey.md).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpcore.errors import OptionError
from dpcore.estimate.dense_ipf import fit_sweeps, prepare
from dpcore.estimate.estimator import check_margins
from dpcore.estimate.table import DenseTable
from dpcore.measure.margins import NoisyMargin

__all__ = ["Raking", "rake"]


def rake(T0: np.ndarray, margins: Sequence[np.ndarray], tol: float = 1e-10, max_iter: int = 1000,
         total: float | None = None):
    """IPF (Def 7.5.8) of T0 to the known one-way margins, T ← T·N̂(S^i)/T(S^i) per axis.

    Stops when no cell moves by more than ``tol``·max(``total``, 1) over a full cycle;
    ``total`` defaults to the largest margin total (the population total). Returns (T, info)
    with iterations, max_change, converged and margins_consistent (every margin has the same
    total). Post-processing only.
    """
    T = np.array(T0, dtype=float)
    nd = T.ndim
    targets = [np.asarray(m, dtype=float) for m in margins]
    if len(targets) != nd:
        raise OptionError(f"need one margin per axis ({nd}); got {len(targets)}")
    totals = [float(t.sum()) for t in targets]
    scale = max(float(max(totals)) if total is None else float(total), 1.0)
    T, it, change, converged = fit_sweeps(T, prepare([((ax,), t) for ax, t in enumerate(targets)], T.shape),
                                          tol * scale, max_iter, support_only=False)
    info = {"iterations": it, "max_change": change, "converged": converged,
            "margins_consistent": bool(np.allclose(totals, totals[0], rtol=1e-9))}
    return T, info


@dataclass(frozen=True, eq=False)
class Raking:
    """The estimator of :func:`rake`: ``seed`` raked to one known margin per attribute.

    ``fit``'s margins are the one-way margins (each axis once, in any order; usually
    :meth:`NoisyMargin.exact` public totals, whose variance raking does not use);
    ``total`` is the population total, which sets the stopping rule's scale (the margins
    are not rescaled to it). Model: :class:`~dpcore.estimate.table.DenseTable`.
    Diagnostics: those of :func:`rake`."""

    seed: np.ndarray
    tol: float = 1e-10
    max_iter: int = 1000

    def fit(self, shape: Sequence[int], margins: Sequence[NoisyMargin], total: float) -> tuple[DenseTable, dict]:
        shape = check_margins(shape, margins)
        if np.shape(self.seed) != shape:
            raise ValueError(f"the seed table has shape {np.shape(self.seed)}; the domain has shape {shape}")
        by_axis = {m.axes: m.values for m in margins}
        if sorted(by_axis) != [(a,) for a in range(len(shape))] or len(margins) != len(shape):
            raise OptionError(f"raking needs one one-way margin per attribute ({len(shape)}); got margins on "
                              f"{[m.axes for m in margins]}")
        table, info = rake(self.seed, [by_axis[(a,)] for a in range(len(shape))], self.tol, self.max_iter, total)
        return DenseTable(table), info
