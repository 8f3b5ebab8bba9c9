"""The Design page's noise check in words: whether a design's noise swamps the counts it releases, and,
when it does, the nearest design that would pass — or a plain sentence saying why none near it does.

It reads only public facts and a record count n (:func:`dpcore.previews.expected_noise`: the domain, the
options, ε, m, the neighbour notion), spends nothing and releases nothing; with the table's own n the
answer is curator-only, as the noise check itself is.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dpcore.errors import DPCoreError
from dpcore.previews import expected_noise

#: The larger ε a remedy may suggest: above 10 a release is DP in name only (dpcore.privacy.ledger).
REMEDY_EPSILONS = (2.0, 5.0, 10.0)


def swamped(rows: Sequence) -> tuple[int, int]:
    """(released counts whose noise SD exceeds the typical count, all released counts)."""
    total = sum(int(r.counts) for r in rows)
    return sum(int(r.counts) for r in rows if r.swamped), total


def passes(rows: Sequence) -> bool:
    """The check's verdict: not red, i.e. the noise is larger than the typical count on at most half
    of the released counts."""
    bad, total = swamped(rows)
    return bad * 2 <= total


def what_passes(method: str, domain, epsilon: float, sets: int, *, n: float, neighbours: str = "add_remove",
                bins_share: float = 0.0, **options: Any) -> str:
    """One sentence for a design whose noise check is red: the nearest design that passes (the smallest ε
    up to 10 at which it does, with the design's m if that is enough, else with one set, since m divides
    the budget), or why none near it does."""
    def ok(eps: float, m: int) -> bool:
        try:
            return passes(expected_noise(method, domain, eps, n=n, sets=m, neighbours=neighbours,
                                         bins_share=bins_share, **options))
        except DPCoreError:
            return False

    # the smallest ε first (ε is the guarantee); at each ε the design's own m, then one set
    grid = [epsilon, *(e for e in REMEDY_EPSILONS if e > epsilon)]
    tries = [(e, m) for e in grid for m in dict.fromkeys((sets, 1)) if (e, m) != (epsilon, sets)]
    for eps, m in tries:
        if ok(eps, m):
            change = [f"m = {m} set{'s' if m > 1 else ''} instead of {sets}"] if m != sets else []
            change += [f"ε = {eps:g} instead of {epsilon:g}"] if eps != epsilon else []
            return f"The check passes with {' and '.join(change)}."
    cells = domain.size
    return (f"No design near this one passes, even with one set at ε = 10: the table's {n:,.0f} records spread "
            f"over {cells:,} cells of its domain leave too few records per released count for this method. "
            "Fewer or coarser attributes (the Data page), or a method that measures smaller tables (the "
            "adviser's ranking), are the way out.")
