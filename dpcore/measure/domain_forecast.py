"""Before a release with nothing declared: which columns its DP domain will likely find, and what would help.

:func:`forecast` reads no value: the declared schema's kinds (:class:`dpcore.measure.dp_domain.DomainPlan`), the
release's budget and definition, the neighbour notion and a record count n. Each column gets its part of the
domain's budget (:meth:`DomainPlan.split`), hence its noise and threshold, and from those:

* a column of levels (text, a whole-number code): τ + 1.645σ records make a level pass with probability 95%
  (σ the noise, τ the exact threshold of :func:`dpcore.measure.levels.exact_level_threshold`); as a share of n
  that is the rarest level it keeps. Found when it keeps levels down to 5% of the records, coarsely when down to
  25% (the common levels only, the rest "other"), not found beyond;
* a numeric column: its bounds are the octaves (powers of two) whose noisy count passes τ; found when n/3
  records pass it (values over three octaves), coarsely when n does (one octave), not found otherwise;
* true/false columns and declared levels: public, found.

For each column not found it also says the ``domain_share`` at which it would be (the noise falls like 1/ε, or
like 1/√ρ under zCDP), and the curator's other remedies: declare the column's levels or bounds, or drop it.

n is the caller's: a public count, a noisy one, or the table's own (then the forecast is curator-only, NOT
DP: :mod:`dpcore.studio` labels it so). Nothing here charges or draws anything.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from dpcore.measure.bounds import FALSE_BIN_PROBABILITY, LogBins, threshold
from dpcore.measure.dp_domain import (
    BOOLEAN,
    BOUNDS_SHARE,
    COARSE,
    DECLARED_LEVELS,
    FOUND,
    NOT_FOUND,
    NUMERIC,
    DomainPlan,
)
from dpcore.measure.levels import exact_level_threshold
from dpcore.privacy.budget import Budget
from dpcore.privacy.definitions import Definition
from dpcore.privacy.gaussian import DiscreteGaussian
from dpcore.privacy.maps import Mechanism
from dpcore.privacy.neighbours import Neighbours

__all__ = ["ColumnForecast", "forecast", "LEVEL_FOUND_SHARE", "LEVEL_COARSE_SHARE"]

#: the z of 95%: a count this many noise SDs above τ passes 95% of the time
Z95 = 1.645
#: a levels column is found when levels down to this share of the records pass (95%), coarsely down to the next
LEVEL_FOUND_SHARE, LEVEL_COARSE_SHARE = 0.05, 0.25
#: a numeric column's values are taken to fill about this many octaves
OCTAVES = 3
#: a domain_share above this leaves too little for the synthetic sets to be worth suggesting
MAX_USEFUL_SHARE = 0.6


@dataclass(frozen=True)
class ColumnForecast:
    """One column's forecast: ``status`` (found, found coarsely, not found at this budget), ``needs`` (the
    records a level or an octave needs to pass 95% of the time), ``share`` (its part of the domain's budget),
    ``share_needed`` (the domain_share at which it would be found; None when found or not for sale) and
    ``what`` (one line for the curator)."""

    column: str
    kind: str
    status: str
    share: float
    needs: float | None
    share_needed: float | None
    what: str

    def to_dict(self) -> dict[str, object]:
        return {"column": self.column, "kind": self.kind, "status": self.status, "share": self.share,
                "needs": self.needs, "share_needed": self.share_needed, "what": self.what}


def forecast(plan: DomainPlan, budget: Budget, n: float, neighbours: Neighbours,
             definition: Definition) -> list[ColumnForecast]:
    """Each column's forecast for a domain found with ``budget`` (the domain's share of the release's ε or ρ,
    already taken) on about ``n`` records (module docstring)."""
    split = plan.split()
    delta_each = plan.levels_delta / max(1, len(plan.text_columns))
    out = []
    for name, kind in plan.kinds.items():
        if kind in (BOOLEAN, DECLARED_LEVELS):
            out.append(ColumnForecast(name, kind, FOUND, 0.0, None, None,
                                      "public: " + ("true/false" if kind == BOOLEAN else "its declared levels")))
            continue
        part = budget * split[name]
        if kind == NUMERIC:
            mech = definition.count_noise(part * BOUNDS_SHARE, neighbours)
            tau = threshold(mech, LogBins.for_kind(False).size, FALSE_BIN_PROBABILITY)
            need = tau + Z95 * _sd(mech)
            status = FOUND if n / OCTAVES >= need else COARSE if n >= need else NOT_FOUND
            what = {FOUND: f"bounds found: an octave of values needs about {need:,.0f} records",
                    COARSE: f"bounds found coarsely: an octave of values needs about {need:,.0f} records, so only "
                            "where most of the values lie",
                    NOT_FOUND: f"likely not found: an octave of values needs about {need:,.0f} records, more than "
                               f"the {n:,.0f} there are"}[status]
            target = n / OCTAVES
        else:
            if definition.name == "pure":
                out.append(ColumnForecast(name, kind, NOT_FOUND, split[name], None, None,
                                          "its levels need (ε, δ), or declare them"))
                continue
            mech = definition.count_noise(part, neighbours)
            assert isinstance(mech, DiscreteGaussian)  # pure ε was answered above
            tau = exact_level_threshold(float(mech.sampler_sigma2), delta_each, neighbours.records_per_unit)
            need = tau + Z95 * _sd(mech)
            rarest = need / max(n, 1.0)
            status = FOUND if rarest <= LEVEL_FOUND_SHARE else COARSE if rarest <= LEVEL_COARSE_SHARE else NOT_FOUND
            what = (f"levels holding at least {min(rarest, 1.0):.0%} of the records (about {need:,.0f}) are found; "
                    "rarer ones become \"other\"" if status != NOT_FOUND else
                    f"likely not found: a level needs about {need:,.0f} records ({min(rarest, 1.0):.0%} of them)")
            target = LEVEL_FOUND_SHARE * n
        needed = None if status == FOUND else _share_for(plan.share, need, target, definition)
        if needed is not None:
            what += (f"; found at domain_share ≈ {needed:.2g}" if needed < MAX_USEFUL_SHARE else
                     "; no domain_share finds it at this ε") + ": or declare it, or drop it"
        out.append(ColumnForecast(name, kind, status, split[name], float(need), needed, what))
    return out


def _sd(mech: Mechanism) -> float:
    """The noise's standard deviation (at most σ for the discrete Gaussian; √2·s for the discrete Laplace)."""
    return float(mech.scale) * (1.0 if mech.norm == "l2" else math.sqrt(2.0))


def _share_for(share: float, need: float, target: float, definition: Definition) -> float | None:
    """The domain_share at which ``need`` (proportional to the noise) falls to ``target``: noise ∝ 1/ε (pure), or
    ∝ 1/√ρ under zCDP, so the share scales by (need/target) or its square (τ's log factor ignored)."""
    if target <= 0:
        return None
    ratio = need / target
    return share * (ratio if definition.name == "pure" else ratio * ratio)
