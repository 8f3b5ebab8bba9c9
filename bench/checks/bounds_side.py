"""[private-domain] How often the DP bounds' side rule widens a column to a side that holds no value, and how often
it keeps a real tail: seeded releases of `dpcore.measure.bounds.dp_bounds` on two made-up columns.

    PYTHONPATH=. .venv/bin/python bench/checks/bounds_side.py [--runs 400] [--n 2000] [--rho-share 0.02] [--as-count]

- ``zero_one``: a 0/1 whole-number column (70% zeros): nothing is negative, so any lower bound below 0 is a false
  bin (the bounds then span octaves of nothing, and equal-width bins put every record in one bin);
- ``assets``: a mostly-zero amount (60% zeros, the rest log-uniform over 10^2–10^5.5): the rule is there to keep
  that positive tail; counted kept when the upper bound reaches 1,000.

``--as-count``: the 0/1 column is declared a count (never negative: ``dp_bounds(..., nonnegative=True)``, what
the API's int64 is), as a release now treats it; without it, an amount (both sides read).

Each run spends ``--rho-share`` of ρ(ε = 1, δ = 10⁻⁹) (a column's share of a release's domain budget on a table of
several columns) through one noisy histogram, under add/remove neighbours, seed = run. Prints the rates with
Clopper-Pearson 95% intervals. Made-up data: nothing is released.
"""
from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from scipy.stats import beta

from dpcore.measure.bounds import dp_bounds
from dpcore.privacy.budget import Epsilon
from dpcore.privacy.definitions import definition_for
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.neighbours import Neighbours


def columns(n: int, rng: np.random.Generator) -> dict[str, tuple[pd.Series, bool]]:
    ones = (rng.random(n) < 0.3).astype(np.int64)
    assets = np.where(rng.random(n) < 0.6, 0.0, 10 ** rng.uniform(2, 5.5, n))
    return {"zero_one": (pd.Series(ones), True), "assets": (pd.Series(np.round(assets, 2)), False)}


def interval(k: int, n: int) -> str:
    lo = beta.ppf(0.025, k, n - k + 1) if k else 0.0
    hi = beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return f"{k}/{n} = {k / n:.3f} [{lo:.3f}, {hi:.3f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=400)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--rho-share", type=float, default=0.02)
    ap.add_argument("--as-count", action="store_true", help="the 0/1 column declared a count (never negative)")
    args = ap.parse_args()
    definition = definition_for(1e-9)
    budget = definition.budget(Epsilon(1.0)) * args.rho_share
    cols = columns(args.n, np.random.default_rng(2026))
    false_low = far = kept = 0
    for run in range(args.runs):
        for name, (values, integer) in cols.items():
            ledger = Ledger.capped("bounds", definition.budget(Epsilon(1.0)), 1e-9)
            found = dp_bounds(values, integer, budget, np.random.default_rng(run), ledger, Neighbours(), definition,
                              name, nonnegative=args.as_count and name == "zero_one")
            if name == "zero_one":
                false_low += found.lower < 0
                far += found.lower < -1000
            else:
                kept += found.upper >= 1000
    print(f"n = {args.n}, ρ share {args.rho_share} of ρ(1, 1e-9), {args.runs} seeded runs, 0/1 column read as "
          f"{'a count' if args.as_count else 'an amount'}")
    print(f"zero_one: lower bound below 0 (a false side): {interval(false_low, args.runs)}")
    print(f"zero_one: lower bound below -1,000 (a far false side): {interval(far, args.runs)}")
    print(f"assets: upper bound ≥ 1,000 (the tail kept): {interval(kept, args.runs)}")


if __name__ == "__main__":
    main()
