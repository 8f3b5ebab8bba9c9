"""The arithmetic of a table's total in the budget book: one release's cost, and the composition of a
table's releases (docs/privacy-model.md, "The budget book").

Each release is kept in its definition's unit: ε for pure ε-DP; ρ, and the part of δ spent outside ρ
(``delta_approx``), for (ε, δ) through zCDP. A pure ε-DP release is (ε²/2)-zCDP, so a table's releases
are (Σρ, Σδ_approx)-approximate zCDP (Bun & Steinke 2016), which converts to (ε, δ) at the table's δ; by
basic composition they are also (Σε, Σδ)-DP. A release labelled NOT DP is in no DP total; the cap still
counts its ε. No Streamlit here.
"""
from __future__ import annotations

import math

__all__ = ["DEFAULT_DELTA", "composition_totals", "cost_row", "not_dp", "release_costs", "usage"]

#: The book's δ when none is set: where a table's total is stated as (ε, δ).
DEFAULT_DELTA = 1e-9
#: the status of a release that finished (dpcore.studio.budget_book)
_COMPLETE = "complete"


def release_costs(epsilon: float, delta: float | None,
                  delta_approx: float = 0.0) -> tuple[float, float | None, float]:
    """(ε, δ, ρ) of one release: a pure one is (ε²/2)-zCDP; an (ε, δ) one gets the largest ρ
    whose conversion at δ − ``delta_approx`` is within ε (what its ledger may spend; ``delta_approx``:
    the part of δ it spends outside ρ, :func:`dpcore.api.planned_delta_approx`)."""
    from dpcore.privacy.zcdp import check_delta, rho_of_epsilon_delta, rho_of_pure

    if delta is None:
        return epsilon, None, rho_of_pure(epsilon)
    d = check_delta(delta)
    return epsilon, d, rho_of_epsilon_delta(epsilon, check_delta(d - float(delta_approx or 0.0)))


def composition_totals(rows, delta: float) -> dict:
    """A table's total over its releases ``rows`` = [(ε, δ or None, ρ or None[, δ_approx]), ...].

    * ``rho``: Σρ (a pure release as ε²/2): the releases are (Σρ, Σδ_approx)-approximate zCDP
      (Bun & Steinke 2016);
    * ``pure_epsilon``: Σε when every release is pure (basic composition, δ = 0), else None;
    * ``epsilon_at_delta``: the smaller ε of the statements that hold at ``delta``: the
      conversion of Σρ at ``delta`` − Σδ_approx (dpcore.privacy.zcdp.epsilon_of_rho) and basic
      composition (Σε, Σδ) when Σδ ≤ ``delta``; infinite when neither holds (a δ too small for what
      was spent: nothing more fits under any cap);
    * ``epsilon``: what the book counts as spent and caps: ``pure_epsilon`` for an all-pure
      table (exactly the pure sum), else ``epsilon_at_delta``.
    """
    from dpcore.privacy.zcdp import epsilon_of_rho, rho_of_pure

    rows = [tuple(r) + (None,) * (4 - len(r)) for r in rows]
    rho = math.fsum(r if r is not None else rho_of_pure(e) for e, _, r, _ in rows)
    approx = math.fsum(a or 0.0 for _, _, _, a in rows)
    basic_eps = math.fsum(e for e, _, _, _ in rows)
    basic_delta = math.fsum(d or 0.0 for _, d, _, _ in rows)
    pure = all(d is None for _, d, _, _ in rows)
    converted = (0.0 if rho <= 0 and approx < delta else
                 epsilon_of_rho(rho, delta - approx) if approx < delta else math.inf)
    at_delta = min(converted, basic_eps if basic_delta <= delta else math.inf)
    return {"epsilon": basic_eps if pure else at_delta, "pure_epsilon": basic_eps if pure else None, "rho": rho,
            "delta": delta, "delta_approx": approx, "epsilon_at_delta": at_delta}


def cost_row(r: dict) -> tuple:
    return (r["epsilon"], r["delta"], r["rho"], r.get("delta_approx"))


def not_dp(r: dict) -> bool:
    """A completed release labelled NOT DP: its ε bounds nothing, so it is never part of a DP total."""
    return r.get("status") == _COMPLETE and r.get("dp") == 0


def usage(rows: list[dict], delta: float, extra: tuple | None = None) -> dict:
    """:func:`composition_totals` of the DP releases (pending ones presumed DP), plus ``not_dp_epsilon``: the ε
    of releases labelled NOT DP, which the cap still counts (``used``) but no DP total includes."""
    dp_rows = [cost_row(r) for r in rows if not not_dp(r)] + ([extra] if extra else [])
    out = composition_totals(dp_rows, delta)
    out["not_dp_epsilon"] = math.fsum(float(r["epsilon"]) for r in rows if not_dp(r))
    out["used"] = out["epsilon"] + out["not_dp_epsilon"]
    return out
