"""Transformations with their stability, and sensitivities that carry their norm.

A measurement's cost is its mechanism's privacy map applied to the sensitivity of what it measures,
and that sensitivity is the stability of the transformations between the private input and the
measured query (OpenDP's pairing of stability maps with privacy maps): if neighbouring inputs are at
distance d_in, a c-stable transformation's outputs are at distance at most c·d_in. Composing
transformations multiplies their stabilities; the measurement then costs ``map(c · d_in)``
(:meth:`dpcore.privacy.measurement.Measurement.cost`), never a number written at a call site.

The transformations dpcore applies before it measures:

* :func:`records_per_unit`: the privacy unit. Neighbouring tables differ by one unit (a record, or a
  person with all their records); after keeping at most K records per unit, they differ by at most K
  records: K-stable from units to records (Tumult's ``MaxRowsPerID``; OpenDP's
  ``unit_of(contributions=K)``). K = 1 protects a record.
* :func:`count_table`: records → a count table (a histogram, a margin, the nodes of a layer). Under
  add/remove neighbours one record changes one cell by 1 (L1 1, L2 1); under replace it leaves one cell
  and enters another (L1 2, L2 √2). For d_in records the bound is linear: d_in·(L1 stability), and in L2
  d_in·(L2 stability) (all of them in one cell is the worst case).
* clamping and binning a value are record-wise: 1-stable (a record stays one record).

A score function (the exponential mechanism's utilities) with per-record sensitivity Δ changes by at
most K·Δ when K records change (triangle inequality: group privacy), so :meth:`Stability.scale` applies
to scores as to counts. Proofs: docs/privacy-model.md, "Stability and the privacy unit".
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

__all__ = ["Norm", "Sensitivity", "Stability", "count_table", "records_per_unit", "IDENTITY"]

#: The norm a sensitivity is measured in: L1 (Laplace-type noise), L2 (the discrete Gaussian), or the
#: largest change of any one score (the exponential mechanism)
Norm = Literal["l1", "l2", "score"]


@dataclass(frozen=True)
class Sensitivity:
    """How much a query can change between neighbouring inputs, in ``norm``."""

    value: float
    norm: Norm

    def __post_init__(self) -> None:
        v = float(self.value)
        if not (math.isfinite(v) and v >= 0):
            raise ValueError(f"a sensitivity is a finite number >= 0, not {self.value!r}")
        if self.norm not in ("l1", "l2", "score"):
            raise ValueError(f"a sensitivity's norm is 'l1', 'l2' or 'score', not {self.norm!r}")
        object.__setattr__(self, "value", v)


@dataclass(frozen=True)
class Stability:
    """A transformation that is c-stable in each norm: neighbours at distance d_in map to outputs at most
    ``l1``·d_in apart in L1, ``l2``·d_in in L2, and their scores (of per-record sensitivity Δ) ``score``·d_in·Δ
    apart. ``name`` says what it is, for the ledger and the proofs."""

    name: str
    l1: float
    l2: float
    score: float = 1.0

    def then(self, other: Stability) -> Stability:
        """This transformation followed by ``other``: stabilities multiply."""
        return Stability(f"{self.name}, then {other.name}", self.l1 * other.l1, self.l2 * other.l2,
                         self.score * other.score)

    def sensitivity(self, norm: Norm, d_in: float = 1.0) -> Sensitivity:
        """The output's sensitivity in ``norm`` for inputs ``d_in`` apart."""
        factor = {"l1": self.l1, "l2": self.l2, "score": self.score}[norm]
        return Sensitivity(factor * d_in, norm)

    def scale(self, per_record: float) -> float:
        """A score of per-record sensitivity ``per_record`` after this transformation (group privacy)."""
        return self.score * per_record


#: Nothing between the input and the query (the record is the unit).
IDENTITY = Stability("the records as they are", 1.0, 1.0, 1.0)


def records_per_unit(k: int) -> Stability:
    """Keep at most ``k`` records of each unit: neighbouring tables (one unit apart) are then at most
    ``k`` records apart, in every sense a record counts."""
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise ValueError(f"records per unit must be a whole number >= 1, not {k!r}")
    if k == 1:
        return IDENTITY
    return Stability(f"at most {int(k)} records per unit", float(k), float(k), float(k))


def count_table(notion: str) -> Stability:
    """Records → a count table under the neighbour notion ``notion`` (``"add_remove"`` or ``"replace"``)."""
    if notion == "add_remove":
        return Stability("a count table (one record: one cell ±1)", 1.0, 1.0, 1.0)
    if notion == "replace":
        return Stability("a count table (one record replaced: one cell −1, one +1)", 2.0, math.sqrt(2.0), 1.0)
    raise ValueError(f"neighbour notion must be 'add_remove' or 'replace', not {notion!r}")
