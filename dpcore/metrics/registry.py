"""The registry of the utility and risk measures (docs/measures.md#the-registry): every measure once,
with its name, the key :func:`dpcore.metrics.evaluate` writes it under, its label, chart title and
unit, which way is better, whether it is one of the three the Trade-offs page plots against ε, and
the function that computes it.

The evaluation (:func:`dpcore.metrics.evaluate.compute_measures`, and through it every sweep), the
app's charts and the Trade-offs page read it: a measure added here is computed, swept and labelled
with nothing else to edit, and one plotted on the Trade-offs page is the one the sweep is asked for.

A computing function measures a family of measures from one fit (the two-way tables, the
disclosure counts, the propensity model, the full table), so several entries share one:
:func:`compute_functions` calls each once for all the measures asked of it.

**Not differentially private.**  Every measure reads the raw (original) data.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from dpcore.errors import OptionError

__all__ = ["Measured", "Metric", "METRICS", "RISK_UTILITY", "metric", "headline", "compute_functions"]


@dataclass(frozen=True)
class Measured:
    """What a computing function returns for the measures asked of it: each one's mean over the sets,
    each set's values (one dict per set), and side information (the worst table, the SPECKS model)."""

    means: dict[str, float]
    per_set: list[dict[str, float]]
    extra: dict[str, Any] = field(default_factory=dict)


#: ``compute(orig, syns, want, specks_model=..., seed=...)``: the measures of ``want`` that are its own,
#: for the original and the list of synthetic sets.
Compute = Callable[..., Measured]


@dataclass(frozen=True)
class Metric:
    """One utility or risk measure."""

    name: str  #: its name when asked for (``measures=``, ``--measures``) and in a sweep's ``measure`` column
    key: str  #: the key of :func:`dpcore.metrics.evaluate`'s output
    label: str  #: what it is called in a sentence or on an axis
    title: str  #: a chart's title
    description: str  #: a chart's subtitle: what it is, and how to read it
    unit: str  #: what its values are, on an axis
    symbol: str  #: its short name in a chart's hover text
    kind: str  #: ``"utility"`` or ``"risk"``
    compute: Compute  #: the function computing it (with the others of its family)
    lower_is_better: bool = True
    log_scale: bool = False  #: plotted on a log axis
    headline: int | None = None  #: its place among the measures the Trade-offs page plots against ε
    default: bool = True  #: among :func:`dpcore.metrics.evaluate`'s default measures
    glossary: str | None = None  #: its glossary entry (docs/glossary.md)

    def axis_title(self, reading: str = "") -> str:
        """The axis title: its label, unit (and log scale), and ``reading``: ``"mean two-way S_pMSE
        (ratio, log scale)"``."""
        return f"{self.label} ({self.unit}{', log scale' if self.log_scale else ''}{'; ' + reading if reading else ''})"


# --------------------------------------------------------------------------- the computing functions


def _per_set(m: int, want: set, values: dict[str, Callable[[int], float]]) -> list[dict[str, float]]:
    return [{k: f(i) for k, f in values.items() if k in want} for i in range(m)]


def two_way_tables(orig, syns: list, want: set, **_) -> Measured:
    """S_pMSE of the two-way tables (synthpop's ``utility.tab``): the mean over the tables, and the
    worst table (largest mean over the sets; per set, that set's largest table S_pMSE)."""
    from dpcore.metrics.tables import utility_tables

    ut = utility_tables(orig, syns, order=2)
    worst_per_set = ut.per_table.groupby("set")["s_pmse"].max()  # NaN tables (df = 0) are skipped by max
    means = {"s_pmse": ut.mean_s_pmse, "s_pmse_worst": ut.worst.s_pmse}
    per_set = _per_set(len(syns), want, {"s_pmse": lambda i: ut.per_set_mean[i],
                                         "s_pmse_worst": lambda i: float(worst_per_set.get(i + 1, math.nan))})
    extra = {"s_pmse_2way_worst_table": [str(v) for v in ut.worst.variables]} if "s_pmse_worst" in want else {}
    return Measured({k: v for k, v in means.items() if k in want}, per_set, extra)


def disclosure_risk(orig, syns: list, want: set, **_) -> Measured:
    """p0, p1, replicated uniques and ru as a % of p1 (:func:`dpcore.metrics.disclosure`)."""
    from dpcore.metrics.disclosure import disclosure

    d = disclosure(orig, syns)
    keys = [k for k in ("p0", "p1", "ru", "ru_pct_of_p1") if k in want]
    return Measured({k: getattr(d, k) for k in keys}, [{k: d.per_set[i][k] for k in keys} for i in range(len(syns))])


def propensity(orig, syns: list, want: set, *, specks_model: str = "interactions", seed: int = 0, **_) -> Measured:
    """SPECKS and the propensity pMSE, from one propensity fit (:func:`dpcore.metrics.specks`)."""
    from dpcore.metrics.specks import specks

    sp = specks(orig, syns, model=specks_model, seed=seed)
    fields = [(k, f) for k, f in (("specks", "ks"), ("pmse", "pmse")) if k in want]
    return Measured({k: getattr(sp, f) for k, f in fields},
                    [{k: sp.per_set[i][f] for k, f in fields} for i in range(len(syns))],
                    {"specks_model": specks_model})


def full_table_l1(orig, syns: list, want: set, **_) -> Measured:
    """The L1 distance between the full tables' proportions (:func:`dpcore.metrics.l1_distance`)."""
    from dpcore.metrics.analysis import l1_distance

    l1 = l1_distance(orig, syns)
    return Measured({"l1": l1.l1}, [{"l1": l1.per_set[i]["l1"]} for i in range(len(syns))])


# --------------------------------------------------------------------------- the registry

_ENTRIES = (
    Metric("s_pmse", "s_pmse_2way_mean", "mean two-way S_pMSE", "Mean two-way S_pMSE",
           "1 = as good as a resample; lower is better", "ratio", "S_pMSE", "utility", two_way_tables,
           log_scale=True, headline=2, glossary="spmse"),
    Metric("s_pmse_worst", "s_pmse_2way_worst", "worst two-way S_pMSE", "Worst two-way S_pMSE",
           "the two-way table reproduced worst; lower is better", "ratio", "worst S_pMSE", "utility", two_way_tables,
           log_scale=True, glossary="spmse"),
    Metric("p0", "p0", "empty cells", "Empty cells", "% of the full table's cells with no original record",
           "% of cells", "p0", "risk", disclosure_risk),
    Metric("p1", "p1", "unique records", "Unique records", "% of the original's records unique in the full table",
           "% of records", "p1", "risk", disclosure_risk),
    Metric("ru", "ru", "replicated uniques", "Replicated uniques",
           "% of the original's records unique there and reproduced as a unique synthetic record", "% of records",
           "ru", "risk", disclosure_risk, glossary="replicated-uniques"),
    Metric("ru_pct_of_p1", "ru_pct_of_p1", "replicated uniques", "Replicated uniques",
           "% of the original's unique records", "% of p1", "ru", "risk", disclosure_risk, headline=3,
           glossary="replicated-uniques"),
    Metric("specks", "specks", "SPECKS", "SPECKS", "KS distance of propensity scores; 0 = indistinguishable",
           "KS distance, 0–1", "SPECKS", "utility", propensity, headline=1, glossary="specks"),
    Metric("pmse", "pmse", "propensity pMSE", "Propensity pMSE", "mean squared error of the propensity scores; "
           "0 is ideal", "pMSE", "pMSE", "utility", propensity),
    Metric("l1", "l1", "L1 distance", "L1 distance", "L1 distance between the full tables' proportions; 0 is ideal",
           "proportion, 0–2", "L1", "utility", full_table_l1, default=False),
)
#: Every measure by name, in the order :func:`dpcore.metrics.evaluate` lists them.
METRICS: dict[str, Metric] = {m.name: m for m in _ENTRIES}
#: The risk–utility trade-off's two axes on the Trade-offs page: (utility, risk).
RISK_UTILITY = ("s_pmse", "ru_pct_of_p1")


def metric(name: str) -> Metric:
    """The registry's entry of a measure (one line naming the known ones otherwise)."""
    try:
        return METRICS[name]
    except KeyError:
        raise OptionError(f"unknown measure {name!r}; choose from {', '.join(METRICS)}") from None


def headline() -> tuple[Metric, ...]:
    """The measures the Trade-offs page sweeps and plots against ε, in its order."""
    return tuple(sorted((m for m in METRICS.values() if m.headline is not None), key=lambda m: m.headline or 0))


def compute_functions(names: Iterable[str]) -> list[Compute]:
    """The functions computing the measures ``names``, each once, in the registry's order."""
    wanted = set(names)
    return list(dict.fromkeys(m.compute for m in METRICS.values() if m.name in wanted))
