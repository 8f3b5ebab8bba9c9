"""Neighbour notions, output grids and DP statements of the survey releases.

Each survey release is differentially private for exactly one neighbour notion
(:mod:`dpcore.privacy.neighbours`), which its ledger charges record and its ``statement`` says:

* Laplace baselines (:mod:`.imputation`, ``*_ignoring_missing``): add/remove (default) or
  replace, each calibrated for its notion.
* Smooth-sensitivity releases (k-NN imputation, ch. 6; post-stratified count, ch. 7):
  add/remove only. L_1(D) (Thm 6.4.2) and W_k (Prop 7.3.8) bound what adding or removing
  one record changes; replace-one bounds are not derived, so ``replace`` is refused.
* Partitions and amplification (ch. 5): replace only. The piece sizes n_i, and so n,
  are public (Def 5.3.1, Thm 5.5.1), which add/remove does not allow; ``add_remove`` is
  refused.

Floating point (docs/survey-privacy.md). Laplace-type noise comes from
:class:`dpcore.privacy.mechanisms.Laplace` / ``DiscreteLaplace``: exact samplers on a grid, so the
guarantee holds for the implementation. Generalized Cauchy noise (smooth sensitivity) is
drawn by a floating-point sampler (numpy gammas and exponentials) whose output law is
not proven equal to the ideal one; those releases are rounded to a public power-of-two
grid (:func:`public_grid`, :func:`snap`) and their guarantee is stated for the ideal
real-valued mechanism only (:data:`SAMPLER_CAVEAT`).
"""
from __future__ import annotations

import math

import numpy as np

from dpcore.errors import OptionError
from dpcore.privacy.neighbours import ADD_REMOVE, NEIGHBOUR_LABELS, check_neighbours

__all__ = ["notion_for", "label", "statement", "public_grid", "snap", "GRID_BITS",
           "SAMPLER_CAVEAT"]

#: The grid of a smooth-sensitivity release is 2^-GRID_BITS of a public lower bound on its
#: noise scale: rounding moves the value by at most 2^-(GRID_BITS+1) noise scales.
GRID_BITS = 20

SAMPLER_CAVEAT = (
    "this holds for the ideal real-valued mechanism; the floating-point generalized Cauchy sampler is not "
    "hardened (the value is rounded to a public power-of-two grid, which is post-processing and removes "
    "low-order-bit artefacts, but the sampler's exact output law is not proven)"
)


def notion_for(value, supported: tuple[str, ...], what: str, why: str) -> str:
    """The validated neighbour notion, or an OptionError naming ``neighbours`` and why a
    notion ``what`` does not support is refused."""
    n = check_neighbours(value)
    if n not in supported:
        ok = " or ".join(repr(s) for s in supported)
        raise OptionError(f"{what} supports neighbours={ok} only, not {n!r}: {why}")
    return n


def label(notion: str) -> str:
    """The text every ledger charge records in ``Charge.neighbours``."""
    return NEIGHBOUR_LABELS[check_neighbours(notion)]


def statement(epsilon: float, notion: str, *, given: str = "", ideal_only: bool = False) -> str:
    """One-sentence DP statement of a survey release."""
    who = ("differ by adding or removing one record" if notion == ADD_REMOVE
           else "differ by replacing one record (the record count n is public)")
    s = f"ε-differentially private with ε = {epsilon:.6g} for neighbouring tables that {who}"
    if given:
        s += f", given {given}"
    if ideal_only:
        s += "; " + SAMPLER_CAVEAT
    return s


def public_grid(scale_floor: float) -> float:
    """The largest power of two ≤ ``scale_floor`` · 2^-GRID_BITS.

    ``scale_floor`` must be computed from public inputs only (ε, γ, bounds, public or
    already released sizes), never from the data: then rounding to the grid is
    post-processing of the ideal mechanism and costs no ε.
    """
    x = float(scale_floor)
    if not (math.isfinite(x) and x > 0):
        raise OptionError(f"the public noise-scale floor must be finite and > 0; got {scale_floor!r}")
    # frexp: x = m·2^e with m in [0.5, 1), so 2^(e−1) ≤ x; clamp to the normal float range
    return math.ldexp(1.0, max(-1000, math.frexp(x)[1] - 1 - GRID_BITS))


def snap(value, grid: float):
    """``value`` rounded to the nearest multiple of ``grid`` (a power of two). Exact in
    float64: dividing and multiplying by a power of two only shifts the exponent, and a
    value with |value/grid| ≥ 2^52 is already a multiple of the grid."""
    v = np.asarray(value, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        out = np.where(np.isfinite(v), np.rint(v / grid) * grid, v)
    return float(out) if out.ndim == 0 else out
