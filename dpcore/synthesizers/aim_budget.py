"""How an AIM set spends its budget, decided from public facts only ([aim-parity]; docs/methods/aim.md#rounds,
#the-whole-table-at-once, #the-workload-at-once).

Each rule reads the declared domain, the workload, the options the curator gave, the set's budget (ε_s, or ρ_s
under (ε, δ)), the neighbour notion and the released record count ñ (the noisy count, or n where it is public);
never a record. So each choice is public and keeps the guarantee whatever it picks; the ledger still totals the
set's budget exactly (:func:`dpcore.synthesizers.aim.synthesize_set`).

* :func:`set_rounds` — the rounds T: ``rounds`` when given; otherwise the default (4·d), or
  :data:`FEW_ROUNDS_PER_ATTRIBUTE`·d when a round at 4·d would be noise-dominated (fewer, larger rounds, and
  the one-way margins, measured first at 0.9·b/T each, twice as precise).
* :func:`whole_table_first` — the whole cross-tabulation once instead of any round (tiny domains).
* :func:`workload_first` — the workload's margins at once, as DP ipf measures them, with
  :data:`WORKLOAD_SHARE` of the budget split evenly over them, the rounds spending the rest, where the rounds'
  budget would be too thin for the workload (long tables with few cells per margin).

The annealing (a round's budget doubles, ×4 in ρ, when the model's margin moved by no more than the expected
noise of its measurement) and the stop (the last round when less than two round budgets are left, spending the
rest to the last bit) are AIM's; both read released values only.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from dpcore.data.domain import Domain
from dpcore.errors import OptionError
from dpcore.estimate.junction_tree import BYTES_PER_CELL, model_cells
from dpcore.measure.margins import counts_cells, expected_abs_noise
from dpcore.privacy.budget import Budget
from dpcore.privacy.definitions import Definition, PureDP
from dpcore.privacy.neighbours import Neighbours


class AimOptions(Protocol):
    """The options these rules read (:class:`dpcore.synthesizers.aim.AimOptions` meets it; a protocol, so the rules
    do not import the method that uses them)."""

    @property
    def rounds(self) -> int | None: ...
    @property
    def max_model_size(self) -> float: ...
    @property
    def workload(self) -> tuple: ...
    @property
    def whole_table(self) -> str: ...
    @property
    def workload_first(self) -> str: ...

#: the default rounds T = ROUNDS_PER_ATTRIBUTE · d under pure ε (AIM's published zCDP default is 16·d; Laplace noise
#: grows linearly in T, not as √T, so pure ε wants fewer: measured on SD2011 S7 and the corpus, docs/methods/aim.md)
ROUNDS_PER_ATTRIBUTE = 4
#: ... and ZCDP_ROUNDS_PER_ATTRIBUTE · d under (ε, δ), not the paper's 16·d: on the 37 tables of the [real-tables]
#: corpus at (1, 10⁻⁹), 3 seeds, a table's median S_pMSE under 4·d was 0.83× its median under 16·d (geometric mean;
#: lower on 32 of 37): bench/accuracy/aim_rounds.py, docs/methods/aim.md#rounds
ZCDP_ROUNDS_PER_ATTRIBUTE = 4
#: AIM's share of a round's budget spent on selection (the rest measures the chosen margin)
SELECTION_SHARE = 0.1
#: ``rounds`` not given: T = FEW_ROUNDS_PER_ATTRIBUTE · d instead of the default when a round's measurement is
#: noise-dominated (:func:`set_rounds`)
FEW_ROUNDS_PER_ATTRIBUTE = 2
#: :func:`set_rounds`: a round is noise-dominated when the expected L1 noise of the median workload margin
#: measured in a round at the default T exceeds this share of ñ, under either definition
THIN_ROUND_SHARE = 0.2
#: ``whole_table="auto"``: the whole table's noise on a workload margin at most this share of that margin's
#: variance in a round (docs/methods/aim.md#the-whole-table-at-once)
WHOLE_TABLE_VARIANCE_SHARE = 0.5
#: the choices of ``whole_table`` and of ``workload_first``
WHOLE_TABLE = ("auto", "always", "never")
WORKLOAD_FIRST = ("auto", "always", "never")
#: the workload at once: the share of the set's budget that measures the workload's margins, split evenly
#: over them (the rounds get the rest)
WORKLOAD_SHARE = 0.9
#: ``workload_first="auto"``: at once when, on the median margin measured at once, the expected L1 noise is at
#: most this share of ñ ...
WORKLOAD_NOISE_SHARE = 0.04
#: ... and the workload has at least this many margins per attribute (fewer: the rounds reach each margin)
WORKLOAD_MARGINS_PER_ATTRIBUTE = 2
#: the workload at once keeps its model (junction tree) within this many cells: larger margins are left to
#: the rounds ...
AT_ONCE_CELLS = 2**16
#: ... and ``auto`` measures at once only when it keeps at least this share of the workload's margins (fewer:
#: the rounds, with a tenth of the budget, would be left most of the workload)
AT_ONCE_COVERAGE = 0.5


@dataclass(frozen=True)
class BudgetPlan:
    """A set's plan: the whole table once (no rounds), or T rounds after either the one-way margins at
    0.9·b/T each or the workload's ``at_once`` margins at ``at_once_share``·b/len(at_once) each."""

    whole_table: bool
    rounds: int
    at_once: tuple[tuple[int, ...], ...] = ()
    at_once_share: float = 0.0


def cell_limit(opts: AimOptions) -> float:
    """``max_model_size`` in model cells (8-byte floats)."""
    return opts.max_model_size * 2**20 / BYTES_PER_CELL


def default_rounds(opts: AimOptions, domain: Domain, definition: Definition = PureDP()) -> int:
    """``rounds`` when given, else the definition's default: :data:`ROUNDS_PER_ATTRIBUTE`·d under pure ε,
    :data:`ZCDP_ROUNDS_PER_ATTRIBUTE`·d under (ε, δ). The whole-table rule and the round's noise read it."""
    if opts.rounds is not None:
        return opts.rounds
    per = ROUNDS_PER_ATTRIBUTE if definition.name == "pure" else ZCDP_ROUNDS_PER_ATTRIBUTE
    return per * len(domain)


def _margin_cells(opts: AimOptions, domain: Domain) -> list[int]:
    return [counts_cells(domain.shape, tuple(domain.names.index(a) for a in g)) for g in opts.workload] or [1]


def whole_table_first(opts: AimOptions, domain: Domain, budget: Budget, nb: Neighbours,
                      definition: Definition = PureDP()) -> bool:
    """Whether a set measures the whole table once (``whole_table``; ``auto`` decides from public facts
    only: the domain, the workload and T). Measured at the set's budget b, the whole table sums N/c cells'
    noise into each cell of a workload margin of c cells (N the table's cells); in a round the margin
    would be measured at the starting measurement budget 0.9·b/T. ``auto`` measures the whole table when,
    on every workload margin, (N/c)·s(b)² ≤ :data:`WHOLE_TABLE_VARIANCE_SHARE` · s(0.9·b/T)², s the noise
    law's scale at that budget (Δ/ε for the discrete Laplace, σ for the discrete Gaussian): N/c ≤
    ½·(T/0.9)² under pure ε and N/c ≤ ½·T/0.9 under (ε, δ), whatever the budget; and when the whole
    table fits ``max_model_size`` (``always`` beyond it is an :class:`OptionError` naming the size)."""
    cells = math.prod(domain[a].size for a in domain.names)
    fits = cells <= cell_limit(opts)  # the model is the whole table
    if opts.whole_table == "always" and not fits:
        raise OptionError(f"whole_table=always: the whole table has {cells:,} cells, more than max_model_size "
                          f"({opts.max_model_size:g} MB) holds; raise max_model_size or use whole_table=auto")
    if opts.whole_table != "auto" or not fits:
        return opts.whole_table == "always"
    # the laws' scale squared (the continuous laws' variance up to a constant), not the discrete laws' exact
    # variance: that falls below 2/ε² where the noise is under one count (ε ≳ 1 per count), which would let
    # a high ε alone tip the rule where the noise no longer matters
    whole = definition.count_noise(budget, nb).scale ** 2
    rounds = default_rounds(opts, domain, definition)
    in_round = definition.count_noise((1 - SELECTION_SHARE) * budget / rounds, nb).scale ** 2
    sizes = [math.prod(domain[a].size for a in g) for g in opts.workload] or [cells]
    return all(cells / c * whole <= WHOLE_TABLE_VARIANCE_SHARE * in_round for c in sizes)


def round_noise_share(opts: AimOptions, domain: Domain, budget: Budget, nb: Neighbours, n: float,
                      definition: Definition = PureDP()) -> float:
    """The expected L1 noise of the median workload margin measured in a round at the starting round budget
    (0.9·``budget``/T, T = :func:`default_rounds`), divided by the released record count ``n``."""
    noise = definition.count_noise((1 - SELECTION_SHARE) * budget / default_rounds(opts, domain, definition), nb)
    return expected_abs_noise(noise) * float(np.median(_margin_cells(opts, domain))) / max(float(n), 1.0)


def set_rounds(opts: AimOptions, domain: Domain, budget: Budget, nb: Neighbours, n: float,
               definition: Definition = PureDP()) -> int:
    """The set's T: ``rounds`` when the curator gave it; otherwise the default (:func:`default_rounds`), or
    :data:`FEW_ROUNDS_PER_ATTRIBUTE`·d when :func:`round_noise_share` exceeds :data:`THIN_ROUND_SHARE`."""
    if opts.rounds is not None:
        return opts.rounds
    default, few = default_rounds(opts, domain, definition), FEW_ROUNDS_PER_ATTRIBUTE * len(domain)
    if few < default and round_noise_share(opts, domain, budget, nb, n, definition) > THIN_ROUND_SHARE:
        return few
    return default


def at_once_margins(opts: AimOptions, domain: Domain) -> list[tuple[int, ...]]:
    """The margins the workload-at-once step measures (the domain, the workload and ``max_model_size`` only):
    the workload's margins, smallest first (ties in workload order), each kept while the junction tree of
    those kept stays within :data:`AT_ONCE_CELLS` cells and :data:`WORKLOAD_SHARE` · ``max_model_size`` (AIM's
    size limit at that share of the budget spent), then the one-way margin of every attribute no kept margin
    covers."""
    shape, names = domain.shape, domain.names
    work = list(dict.fromkeys(tuple(names.index(a) for a in g) for g in opts.workload))
    work.sort(key=lambda r: counts_cells(shape, r))
    limit = min(AT_ONCE_CELLS, WORKLOAD_SHARE * cell_limit(opts))
    kept: list[tuple[int, ...]] = []
    for r in work:
        if model_cells(shape, kept + [r]) <= limit:
            kept.append(r)
    covered = {a for r in kept for a in r}
    return kept + [(j,) for j in range(len(shape)) if j not in covered]


def workload_noise(opts: AimOptions, domain: Domain, budget: Budget, nb: Neighbours, n: float,
                   definition: Definition = PureDP()) -> float:
    """The median, over the margins :func:`at_once_margins` measures, of the expected L1 noise of that margin
    measured at once (:data:`WORKLOAD_SHARE` · ``budget`` split evenly over them), divided by ``n``."""
    margins = at_once_margins(opts, domain)
    per_cell = expected_abs_noise(definition.count_noise(WORKLOAD_SHARE * budget / len(margins), nb))
    return float(np.median([per_cell * counts_cells(domain.shape, r) for r in margins])) / max(float(n), 1.0)


def workload_first(opts: AimOptions, domain: Domain, budget: Budget, nb: Neighbours, n: float,
                   definition: Definition = PureDP()) -> bool:
    """Whether a set measures the workload's margins at once before its rounds (``workload_first``). ``auto``:
    when the workload has at least :data:`WORKLOAD_MARGINS_PER_ATTRIBUTE`·d margins to measure (fewer, and
    the rounds reach each of them, choosing where to spend), :func:`at_once_margins` keeps at least
    :data:`AT_ONCE_COVERAGE` of the workload's margins, and :func:`workload_noise` is at most
    :data:`WORKLOAD_NOISE_SHARE` (each would be measured precisely)."""
    if opts.workload_first != "auto":
        return opts.workload_first == "always"
    first = at_once_margins(opts, domain)
    work = {tuple(domain.names.index(a) for a in g) for g in opts.workload}
    if len(first) < WORKLOAD_MARGINS_PER_ATTRIBUTE * len(domain) or \
            len(work.intersection(first)) < AT_ONCE_COVERAGE * len(work):
        return False
    return workload_noise(opts, domain, budget, nb, n, definition) <= WORKLOAD_NOISE_SHARE


def plan(opts: AimOptions, domain: Domain, budget: Budget, nb: Neighbours, n: float,
         definition: Definition = PureDP()) -> BudgetPlan:
    """A set's :class:`BudgetPlan` at ``budget`` (the rules above, in that order)."""
    if whole_table_first(opts, domain, budget, nb, definition):
        return BudgetPlan(True, 0)
    rounds = set_rounds(opts, domain, budget, nb, n, definition)
    if workload_first(opts, domain, budget, nb, n, definition):
        return BudgetPlan(False, rounds, tuple(at_once_margins(opts, domain)), WORKLOAD_SHARE)
    return BudgetPlan(False, rounds)
