"""The method adviser: which release method suits a table, and why, in plain words.

The recommendation reads **public facts only**: the declared domain (number of attributes,
their level counts, the number of cells), ε and the number of sets m, and what
``bench/RESULTS.md`` measured on public benchmark tables. So choosing the method by it is
not a use of the data, and a release made with the recommended method keeps its ε-DP
guarantee unchanged (docs/privacy-model.md). The expected noise of each method
(:func:`dpcore.api.expected_noise`) also needs a record count n: the released noisy count
of an earlier release (public), or the curator's own n, in which case the advice says it is
curator-only (``Advice.curator_only``).

How the recommendation is made (docs/methods/adviser.md):

1. the *comparable table*: the benchmark table nearest to this one in number of
   attributes and (log) number of cells (:func:`comparable_table`);
2. the *study*: among that table's measurements, the setting (ε, m) with measurements of at
   least four methods whose ε per set is nearest to this design's (:func:`study`);
   Under (ε, δ) the study is taken among the (ε, δ) measurements of that table (δ = 10⁻⁹ through
   zCDP); a table without them falls back to its pure-ε measurements, and the advice says so;
3. the method with the lowest mean two-way S_pMSE in that study (synthpop's utility measure:
   1 is as good as a resample of the data, lower is better) is recommended; a method within
   twice its figure is "good", one further away "weak", one not measured there "not measured".

Every figure in :data:`MEASURED` is copied from ``bench/RESULTS.md`` with its section and
date; ``tests/studio/test_adviser.py`` checks that each one is there.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from dpcore.data.domain import Domain
from dpcore.errors import DPCoreError
from dpcore.synthesizers import REGISTRY

__all__ = ["BenchTable", "Measurement", "MethodAdvice", "Advice", "BENCH_TABLES", "MEASURED", "METHODS",
           "comparable_table", "study", "recommend", "advise", "noise_summary"]

#: The methods the Design page offers, in the order the adviser lists them.
METHODS = ("aim", "mst", "ipf", "privbayes", "steps", "flat_laplace")

#: Each method's name as the Design page and the adviser show it (the registry's ``display_name``).
NAMES = {name: spec.display_name for name, spec in REGISTRY.items()}
#: The methods the Design page offers with their names, in :data:`METHODS`' order.
NAMES_OFFERED = {name: NAMES[name] for name in METHODS}

#: What each method does, in one or two plain sentences (no figures: those depend on the table); the
#: registry's ``summary``, written in each method's own module.
WHAT = {name: REGISTRY[name].summary for name in METHODS}


@dataclass(frozen=True)
class BenchTable:
    """A public benchmark table of bench/RESULTS.md (shape only: no data here)."""

    key: str
    name: str
    records: int
    attributes: int
    cells: float


BENCH_TABLES = (
    BenchTable("s7", "SD2011 S7 extract", 5_000, 7, 147_000),
    BenchTable("voter", "CPS voter extract", 6_231, 10, 748_800),
    BenchTable("cps_shaped", "CPS-shaped table", 44_821, 15, 1_720_320),
    BenchTable("wide", "cps_voter_wide table", 6_231, 22, 6.5e17),
)


@dataclass(frozen=True)
class Measurement:
    """One figure of bench/RESULTS.md: mean two-way S_pMSE of ``method`` on ``table`` at
    (``epsilon``, ``sets``), pure ε-DP (``delta`` None) or (ε, δ)-DP through zCDP, with where it was
    recorded."""

    method: str
    table: str
    epsilon: float
    sets: int
    s_pmse: float
    runs: str
    section: str
    date: str
    ru_pct_records: float | None = None
    seconds: float | None = None
    delta: float | None = None

    @property
    def guarantee(self) -> str:
        return f"ε = {self.epsilon:g}" + ("" if self.delta is None else f", δ = {self.delta:g}")

    def cite(self) -> str:
        return f"bench/RESULTS.md, “{self.section}”, {self.date}"


_PEERS = ("Peers", "2026-11-22")
_SOTA = ("AIM and MST under pure ε-DP against the reference peers", "2026-11-24")
_AUDIT = ("[privacy-audit] utility cost re-measured after the wide-tables merge", "2026-11-24")
_WIDE5 = ("cps_voter_wide, every method, ε = 1, m = 5", "2026-11-24")
_ZCDP = ("(ε, δ) AIM with a balanced rounded draw and a mirror-descent fit", "2026-11-26")
#: the δ of the (ε, δ) benchmark runs
BENCH_DELTA = 1e-9


def _m(method, table, eps, sets, s_pmse, runs, source, ru=None, seconds=None, delta=None) -> Measurement:
    return Measurement(method, table, eps, sets, s_pmse, runs, source[0], source[1], ru, seconds, delta)


#: Figures from bench/RESULTS.md (mean two-way S_pMSE, lower is better; ru: replicated uniques
#: as % of records, where the same run measured it; seconds: one release, where measured).
MEASURED = (
    # SD2011 S7, ε = 1, m = 1
    _m("aim", "s7", 1.0, 1, 9.51, "median of 3", _SOTA, ru=5.45, seconds=0.56),
    _m("mst", "s7", 1.0, 1, 11.16, "median of 3", _SOTA, ru=5.95, seconds=0.08),
    _m("ipf", "s7", 1.0, 1, 14.0, "mean of 10 seeds", _AUDIT),
    _m("privbayes", "s7", 1.0, 1, 36.22, "one draw", _PEERS, ru=3.86, seconds=0.02),
    _m("steps", "s7", 1.0, 1, 90.7, "mean of 10 seeds", _AUDIT),
    _m("flat_laplace", "s7", 1.0, 1, 151.9, "mean of 10 seeds", _AUDIT),
    # SD2011 S7, ε = 0.5 and 2, m = 1 (three methods only)
    _m("steps", "s7", 0.5, 1, 155.71, "one draw", _PEERS, ru=0.02),
    _m("privbayes", "s7", 0.5, 1, 79.01, "one draw", _PEERS, ru=2.54),
    _m("ipf", "s7", 0.5, 1, 24.66, "one draw", _PEERS, ru=0.96),
    _m("steps", "s7", 2.0, 1, 53.72, "one draw", _PEERS, ru=0.72),
    _m("privbayes", "s7", 2.0, 1, 29.02, "one draw", _PEERS, ru=4.20),
    _m("ipf", "s7", 2.0, 1, 5.30, "one draw", _PEERS, ru=5.74),
    # CPS voter extract, ε = 1, m = 1
    _m("aim", "voter", 1.0, 1, 6.85, "median of 3", _SOTA, ru=8.85, seconds=0.65),
    _m("mst", "voter", 1.0, 1, 8.35, "median of 3", _SOTA, ru=8.92, seconds=0.11),
    _m("privbayes", "voter", 1.0, 1, 10.14, "one run", _SOTA, ru=8.30, seconds=0.22),
    _m("ipf", "voter", 1.0, 1, 23.81, "one run", _SOTA, ru=3.82, seconds=16.40),
    _m("steps", "voter", 1.0, 1, 336.37, "one run", _SOTA, ru=0.16, seconds=0.03),
    # CPS-shaped, m = 1 (three methods)
    _m("steps", "cps_shaped", 1.0, 1, 1341.41, "one draw", _PEERS, ru=0.21, seconds=0.68),
    _m("privbayes", "cps_shaped", 1.0, 1, 23.39, "one draw", _PEERS, ru=7.00, seconds=0.60),
    _m("ipf", "cps_shaped", 1.0, 1, 8.56, "one draw", _PEERS, ru=5.34, seconds=66.74),
    # cps_voter_wide, ε = 1, m = 1 (AIM, MST after the reconciliation; PrivBayes, STEPS from the same section)
    _m("aim", "wide", 1.0, 1, 24.63, "median of 3", _SOTA, ru=0.19, seconds=3.45),
    _m("mst", "wide", 1.0, 1, 143.12, "median of 3", _SOTA, ru=0.01, seconds=0.31),
    _m("privbayes", "wide", 1.0, 1, 305.77, "median of 3", _SOTA, ru=0.00, seconds=1.86),
    _m("steps", "wide", 1.0, 1, 413.00, "median of 3", _SOTA, ru=0.00, seconds=0.30),
    # cps_voter_wide, ε = 1, m = 5
    _m("ipf", "wide", 1.0, 5, 114.2, "mean of 5 seeds", _WIDE5, seconds=4.22),
    _m("aim", "wide", 1.0, 5, 124.2, "mean of 5 seeds", _WIDE5, seconds=5.27),
    _m("privbayes", "wide", 1.0, 5, 375.6, "mean of 5 seeds", _WIDE5, seconds=1.91),
    _m("steps", "wide", 1.0, 5, 462.3, "mean of 5 seeds", _WIDE5, seconds=0.22),
    _m("flat_laplace", "wide", 1.0, 5, 485.6, "mean of 5 seeds", _WIDE5, seconds=0.11),
    _m("mst", "wide", 1.0, 5, 486.3, "mean of 5 seeds", _WIDE5, seconds=0.58),
    # (ε, δ) = (1, 1e-9) through zCDP, m = 1: SD2011 S7 and the voter extract (9 seeds), cps_voter_wide (3 seeds)
    _m("aim", "s7", 1.0, 1, 6.69, "median of 9", _ZCDP, ru=8.48, seconds=0.71, delta=BENCH_DELTA),
    _m("mst", "s7", 1.0, 1, 8.69, "median of 9", _ZCDP, ru=8.47, seconds=0.10, delta=BENCH_DELTA),
    _m("ipf", "s7", 1.0, 1, 12.13, "median of 9", _ZCDP, ru=3.82, seconds=0.53, delta=BENCH_DELTA),
    _m("privbayes", "s7", 1.0, 1, 37.11, "median of 9", _ZCDP, ru=4.07, seconds=0.08, delta=BENCH_DELTA),
    _m("steps", "s7", 1.0, 1, 92.88, "median of 9", _ZCDP, ru=0.15, seconds=0.08, delta=BENCH_DELTA),
    _m("aim", "voter", 1.0, 1, 3.99, "median of 9", _ZCDP, ru=13.79, seconds=0.93, delta=BENCH_DELTA),
    _m("mst", "voter", 1.0, 1, 5.77, "median of 9", _ZCDP, ru=13.47, seconds=0.16, delta=BENCH_DELTA),
    _m("ipf", "voter", 1.0, 1, 5.49, "median of 9", _ZCDP, ru=1.62, seconds=0.43, delta=BENCH_DELTA),
    _m("privbayes", "voter", 1.0, 1, 15.03, "median of 9", _ZCDP, ru=7.96, seconds=0.08, delta=BENCH_DELTA),
    _m("steps", "voter", 1.0, 1, 269.14, "median of 9", _ZCDP, ru=0.15, seconds=0.05, delta=BENCH_DELTA),
    _m("aim", "wide", 1.0, 1, 13.79, "median of 3", _ZCDP, ru=0.30, seconds=4.94, delta=BENCH_DELTA),
    _m("mst", "wide", 1.0, 1, 18.45, "median of 3", _ZCDP, ru=0.22, seconds=0.40, delta=BENCH_DELTA),
    _m("ipf", "wide", 1.0, 1, 24.97, "median of 3", _ZCDP, ru=0.00, seconds=1.49, delta=BENCH_DELTA),
    _m("privbayes", "wide", 1.0, 1, 116.19, "median of 3", _ZCDP, ru=0.05, seconds=0.65, delta=BENCH_DELTA),
    _m("steps", "wide", 1.0, 1, 403.49, "median of 3", _ZCDP, ru=0.00, seconds=0.09, delta=BENCH_DELTA),
)

#: A study needs figures for at least this many methods to rank them.
MIN_METHODS = 4
#: Within this factor of the best figure a method is "good".
GOOD_WITHIN = 2.0


def comparable_table(domain: Domain) -> BenchTable:
    """The benchmark table nearest to ``domain``: distance |Δ attributes|/5 + |Δ log10 cells|."""
    p, cells = len(domain), max(float(domain.size), 1.0)

    def dist(t: BenchTable) -> float:
        return abs(t.attributes - p) / 5.0 + abs(math.log10(t.cells) - math.log10(cells))

    return min(BENCH_TABLES, key=dist)


def study(table: BenchTable, epsilon: float, sets: int, delta: float | None = None) -> list[Measurement]:
    """The measurements of ``table`` at the setting (ε, m) nearest in ε per set to this design's,
    among the settings with at least :data:`MIN_METHODS` methods (all of them when none has); of
    the same kind as the design (pure ε, or (ε, δ) when ``delta`` is given), else pure ε."""
    rows = [r for r in MEASURED if r.table == table.key and (r.delta is None) == (delta is None)] or \
        [r for r in MEASURED if r.table == table.key and r.delta is None]
    settings: dict[tuple, list[Measurement]] = {}
    for r in rows:
        settings.setdefault((r.epsilon, r.sets), []).append(r)
    eligible = {k: v for k, v in settings.items() if len(v) >= MIN_METHODS} or settings
    target = math.log(epsilon / sets)
    best = min(eligible, key=lambda k: (abs(math.log(k[0] / k[1]) - target), -len(eligible[k])))
    return sorted(eligible[best], key=lambda r: r.s_pmse)


def recommend(domain: Domain, epsilon: float, sets: int, delta: float | None = None) -> str:
    """The recommended method for this table and design: public facts only (see the module docstring)."""
    return study(comparable_table(domain), epsilon, sets, delta)[0].method


@dataclass(frozen=True)
class MethodAdvice:
    """What the adviser says of one method: ``verdict`` is recommended, good, weak, not measured or
    cannot run; ``why`` plain sentences; ``noise`` the expected-noise rows (empty without n)."""

    method: str
    name: str
    verdict: str
    why: tuple
    noise: tuple = ()
    measured: Measurement | None = None

    @property
    def swamped_counts(self) -> int:
        return sum(r.counts for r in self.noise if r.swamped)

    @property
    def total_counts(self) -> int:
        return sum(r.counts for r in self.noise)


@dataclass(frozen=True)
class Advice:
    """The adviser's answer for one table and design (see :func:`advise`)."""

    recommended: str
    comparable: BenchTable
    epsilon: float
    sets: int
    study_epsilon: float
    study_sets: int
    methods: tuple
    n: float | None = None
    n_source: str = ""
    curator_only: bool = False
    summary: str = ""
    notes: tuple = field(default_factory=tuple)
    #: δ of the study's figures (None: pure-ε figures)
    study_delta: float | None = None

    def for_method(self, method: str) -> MethodAdvice | None:
        return next((a for a in self.methods if a.method == method), None)


def noise_summary(rows) -> str:
    """One plain sentence on a method's expected noise rows (:class:`dpcore.synthesizers.empty_share.NoiseRow`)."""
    rows = list(rows)
    if not rows:
        return ""
    total = sum(r.counts for r in rows)
    swamped = sum(r.counts for r in rows if r.swamped)
    worst = max(rows, key=lambda r: r.ratio)
    about = "about " if worst.estimate else ""
    text = (f"noise SD {_num(worst.noise_sd)} records per count on {worst.what}, where a count holds {about}"
            f"{_num(worst.typical_count)} on average")
    if swamped == 0:
        return f"The noise is smaller than the typical count everywhere; the largest: {text}."
    if swamped == total:
        return f"The noise is larger than the typical count on every released count: {text}."
    return (f"The noise is larger than the typical count on {_count(swamped)} of {_count(total)} released counts: "
            f"{text}.")


def _num(x: float) -> str:
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 1:
        return f"{x:.3g}"
    return f"{x:.2g}"


def _count(k: int) -> str:
    return f"{k:,}" if k < 1e12 else f"{k:.2g}"


def advise(domain: Domain, epsilon: float, sets: int, *, n: float | None = None, n_source: str = "",
           curator_only: bool = False, neighbours: str = "add_remove", options: dict | None = None,
           delta: float | None = None) -> Advice:
    """Which methods suit this table and why: the recommendation (public facts only), each method's
    verdict, its expected noise against the typical count (needs ``n``; ``curator_only`` when n is
    the table's own count), and the figures bench/RESULTS.md measured on the comparable table.
    ``options``: per method, the options of the design (e.g. ``{"steps": {"layers": 3}}``); ``delta``:
    the design's δ for an (ε, δ) release (noise and figures of that kind), None for pure ε."""
    from dpcore.api import expected_noise

    options = dict(options or {})
    table = comparable_table(domain)
    rows = study(table, epsilon, sets, delta)
    s_eps, s_sets, s_delta = rows[0].epsilon, rows[0].sets, rows[0].delta
    setting = f"ε = {s_eps:g}" + ("" if s_delta is None else f", δ = {s_delta:g}") + f", m = {s_sets}"
    best = rows[0]
    by_method = {r.method: r for r in rows}
    advice = []
    for method in METHODS:
        why = [WHAT[method]]
        noise: tuple = ()
        verdict = None
        if n is not None:
            try:
                given = {k: v for k, v in options.get(method, {}).items() if k != "delta"}
                noise = tuple(expected_noise(method, domain, epsilon, n=n, sets=sets, neighbours=neighbours,
                                             delta=delta, **given))
                why.append(noise_summary(noise))
            except DPCoreError as exc:
                verdict = "cannot run"
                why.append(f"With these options it cannot run: {exc}.")
        meas = by_method.get(method)
        if verdict is None:
            if meas is None:
                verdict = "not measured"
                why.append(f"Not measured on the {table.name} at {setting} in bench/RESULTS.md.")
            else:
                verdict = ("recommended" if meas is best else
                           "good" if meas.s_pmse <= GOOD_WITHIN * best.s_pmse else "weak")
                why.append(_measured_sentence(meas, table))
        advice.append(MethodAdvice(method, NAMES[method], verdict, tuple(w for w in why if w), noise, meas))
    notes = [f"Figures measured on the {table.name} ({table.records:,} records × {table.attributes} attributes, "
             f"{_cells(table.cells)} cells), the benchmark table nearest to yours ({len(domain)} attributes, "
             f"{_cells(domain.size)} cells), at {setting}."]
    if delta is not None and s_delta is None:
        notes.append(f"No (ε, δ) releases were measured on the {table.name}: these figures are pure-ε releases. "
                     "On the other benchmark tables AIM, MST and ipf measured lower errors under (ε, δ) than under "
                     "pure ε.")
    if not math.isclose(epsilon / sets, s_eps / s_sets):
        notes.append(f"Your design spends ε/m = {epsilon / sets:.3g} per set against {s_eps / s_sets:.3g} there: "
                     + ("expect larger errors than these figures." if epsilon / sets < s_eps / s_sets
                        else "expect smaller errors than these figures."))
    if any(a.measured is not None and a.measured.ru_pct_records is not None for a in advice):
        notes.append("Replicated uniques (records unique in the data that reappear in a synthetic set) differ a lot "
                     "between methods; where measured they are given with each method.")
    if n is not None and all(a.total_counts and a.swamped_counts > a.total_counts / 2 for a in advice):
        notes.append(f"At ε/m = {epsilon / sets:.3g} per set most released counts are smaller than their noise, "
                     "whatever the method: a larger ε or fewer sets m give each count less noise.")
    summary = (f"For this table the adviser recommends {NAMES[best.method]}: the lowest error measured on the "
               f"comparable benchmark table ({_verdict_line(rows)}). The choice uses public facts only "
               f"(attributes, levels, ε, m), so it does not change the release's guarantee.")
    return Advice(best.method, table, float(epsilon), int(sets), s_eps, s_sets, tuple(advice), n, n_source,
                  curator_only, summary, tuple(notes), s_delta)


def _cells(c: float) -> str:
    return f"{c:,.0f}" if c < 1e9 else f"{c:.2g}"


def _verdict_line(rows) -> str:
    return "mean two-way S_pMSE, lower is better: " + ", ".join(f"{NAMES[r.method]} {r.s_pmse:g}" for r in rows[:3])


def _measured_sentence(r: Measurement, table: BenchTable) -> str:
    text = (f"Measured on the {table.name} at {r.guarantee}, m = {r.sets}: mean two-way S_pMSE {r.s_pmse:g} "
            f"({r.runs}; {r.cite()})")
    extra = []
    if r.ru_pct_records is not None:
        extra.append(f"replicated uniques {r.ru_pct_records:g}% of records")
    if r.seconds is not None:
        extra.append(f"{r.seconds:g} s per release")
    return text + ("; " + ", ".join(extra) if extra else "") + "."
