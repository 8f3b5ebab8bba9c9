"""Noisy margins for the adaptive margin methods (AIM, MST): count, add noise, charge.

Privacy: a margin (the count table of a set of attributes over their declared
levels) changes by 1 in L1 when one record is added or removed and by 2 when one is
replaced (it leaves one cell and enters another), the notion's
``histogram_sensitivity``. Discrete Laplace noise of scale Δ/ε per cell releases it
with ε (Ghosh, Roughgarden & Sundararajan 2009); its cells are disjoint, so the
margin costs ε once (parallel composition). Each call charges the ledger that ε.
Proofs: docs/methods/aim.md, docs/methods/mst.md.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpcore.counting import rows as count_rows
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.definitions import PureDP
from dpcore.privacy.measurement import EXACT_SAMPLER, Measurement
from dpcore.privacy.neighbours import Neighbours


def margin_counts(X, shape, axes) -> np.ndarray:
    """Exact count table of ``axes`` from records or a :class:`dpcore.counting.count_table.CountTable`
    (raw data: never released as is)."""
    return count_rows.margin_counts(X, shape, axes)


def expected_abs_noise(mech) -> float:
    """E|Z| of the count noise: 2a/(1 − a²), a = e^(−1/s) for discrete Laplace of scale s;
    √(2/π)·σ for the discrete Gaussian (its continuous value, within 1% for σ ≥ 1; it only sets a
    public bias in AIM's score, never a privacy quantity)."""
    if mech.name == "discrete_gaussian":
        return math.sqrt(2.0 / math.pi) * mech.sigma
    a = math.exp(-1.0 / mech.scale)
    return 2.0 * a / (-math.expm1(-2.0 / mech.scale))


#: What the ledger says drew each kind of count noise.
SAMPLERS = {"discrete_laplace": EXACT_SAMPLER, "laplace": "discretised, floating-point safe",
            "discrete_gaussian": EXACT_SAMPLER}


def measure(X, shape, axes, epsilon: float, nb: Neighbours, rng, ledger: Ledger, label: str,
            note: str = "", *, noise: str = "discrete_laplace", subset: str | None = None,
            definition=PureDP()) -> tuple[np.ndarray, Any]:
    """Release the margin on ``axes`` with ``noise`` (discrete Laplace by default) spending
    ``epsilon`` (a ρ under zCDP: discrete Gaussian noise), charging ``ledger`` first (the cells are
    disjoint: parallel composition).

    Returns (noisy table as float, the mechanism)."""
    mech = definition.count_noise(epsilon, nb, None if definition.name != "pure" else noise)
    cells = counts_cells(shape, axes)
    query = Measurement.counts(label, mech, nb, cells=cells, subset=subset or f"{cells} cells (disjoint)", note=note,
                               sampler=SAMPLERS[mech.name])
    counts = margin_counts(X, shape, axes)
    noisy = query.release(ledger, counts, rng).astype(float)
    del counts  # the raw counts go no further
    return noisy, mech


def counts_cells(shape, axes) -> int:
    return math.prod(int(shape[a]) for a in axes)


def one_way_preview_rows(domain, mech, epsilon: float) -> list[dict]:
    """Preview rows (public facts only) for the one-way margins that AIM and MST measure
    first, each with the noise of ``mech`` at ``epsilon``."""
    return [{"table": f"one-way {a}", "cells": domain[a].size, "epsilon": epsilon, "mechanism": mech.name,
             "noise_scale": mech.scale, "noise_sd": float(np.sqrt(mech.variance))} for a in domain.names]
