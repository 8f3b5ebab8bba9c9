"""AIM under pure ε-DP: adaptive, iterative margin selection (McKenna et al. 2022; docs/methods/aim.md).

Per set, at budget ε_s = ε/m, with workload W (default: all two-way margins), its
candidates C = every non-empty subset of a workload margin, weighted
w_r = Σ_{s∈W} |r ∩ s| (AIM's ``compile_workload``), T = ``rounds`` and ε_r = ε_s/T:

1. Measure every one-way margin with discrete Laplace at 0.9·ε_r (AIM's σ for the
   one-way margins). Fit the model (below).
2. Round t: if the budget left is less than 2·ε_r, this is the last round and
   ε_r := everything left. Split ε_r into 0.1·ε_r for selection and 0.9·ε_r for the
   measurement (AIM's split). The candidates allowed are those already inside a
   clique of the model, or whose addition keeps the junction tree within
   ``max_model_size`` · (ε spent after this round)/ε_s megabytes (AIM's growing
   size limit). Select r by the exponential mechanism with score

       q_r = w_r · ( ||x_r − m_r||_1 − E|Z|·cells(r) ),

   x_r the true margin, m_r the current model's margin, E|Z| the mean absolute
   noise of one cell at this round's measurement scale (AIM's bias term, with the
   discrete Laplace in place of the Gaussian). m_r and E|Z| depend only on released
   values, so q_r changes only through x_r: by at most w_r·Δ, Δ = 1 (add/remove) or
   2 (replace); the mechanism uses max_r w_r · Δ.
3. Measure r at 0.9·ε_r, refit (``round_fits``: from the uniform table, ``cold``, the pure-ε
   default; or from the round's model, ``warm`` IPF then, with ``mirror_descent``, the (ε, δ)
   default, a few iterations of Private-PGM's estimator: :func:`refit`). Annealing (AIM's rule,
   for pure ε): if the model's margin on r moved by no more than the expected L1 noise of the measurement,
   E|Z|·cells(r), double ε_r (halves the noise scale and doubles the selection ε).
4. After the last round, draw ñ records from the model: i.i.d. (``synthesis="sample"``) or by
   controlled rounding (``"round"``: every clique's counts rounded from ñ × the model's,
   unbiased; :class:`dpcore.estimate.draws.TreeCountDraw`). ``"auto"`` (default) rounds under
   (ε, δ) and samples under pure ε. The drawn model is the last round's IPF fit
   (``estimator="ipf"``) or, by default, a refit of the same margins by accelerated
   mirror descent to Private-PGM's loss, stopped when the loss stops falling (``"mirror_descent"``,
   :func:`dpcore.estimate.final_fit.released_model`).

**The budget from public facts** ([aim-parity]; :mod:`dpcore.synthesizers.aim_budget`). Unless ``rounds`` is
given, T = 4·d, or 2·d when a round at 4·d would be noise-dominated (:func:`set_rounds`); on long tables with
many workload margins, the workload's margins are measured at once first with 90% of ε_s, evenly, and the
rounds spend the rest (``workload_first``; :func:`workload_first`). Each rule reads the domain, the workload,
the budget and the released record count ñ only (docs/methods/aim.md#rounds, #the-workload-at-once).

**The whole table at once** (``whole_table``; :func:`whole_table_first`). On a domain so small that the
whole cross-tabulation measured once at ε_s is far less noisy on every workload margin than that margin
measured in a round (``auto``: N/c ≤ ½·(T/0.9)² under pure ε, N the table's cells, c the margin's; public
facts only), a set is that one measurement at ε_s, its fit and its draw: no rounds. One count table over
disjoint cells, sensitivity Δ: ε_s-DP (docs/methods/aim.md#the-whole-table-at-once).

**Privacy.** Every measurement and selection is ε-DP at the ε charged to the ledger
(discrete Laplace: Ghosh et al. 2009; exponential mechanism: McSherry & Talwar
2007); everything adaptive (which candidates exist, the scores' model term, the
annealing, the size limit) is a function of earlier outputs only, so the rounds
compose sequentially (Dwork & Roth 2014, Thm 3.16; adaptive composition). The last
round spends exactly ε_s − (ε spent), so each set spends ε_s exactly and the sets ε.
The model fit and the draw (either kind) are post-processing. Proof: docs/methods/aim.md.

The rounds' estimation step is dpcore's own junction-tree IPF
(:class:`dpcore.estimate.junction_tree.JunctionTreeIPF`, pooled targets), not Private-PGM
(``mbi``): docs/methods/aim.md says why; the final fit may minimise Private-PGM's loss, written
in numpy (:mod:`dpcore.estimate.accelerated_mirror_descent`).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from dpcore.data.domain import Domain
from dpcore.errors import whole_number
from dpcore.estimate.draws import model_draw
from dpcore.estimate.final_fit import released_model
from dpcore.estimate.junction_tree import JunctionTreeIPF, model_cells
from dpcore.estimate.mirror_descent import MirrorDescent
from dpcore.measure.margin_spec import parse_margin_groups
from dpcore.measure.margins import (
    counts_cells,
    expected_abs_noise,
    margin_counts,
    measure,
    one_way_preview_rows,
    preview_row,
    selection_preview_row,
)
from dpcore.privacy.budget import Budget
from dpcore.privacy.definitions import Definition, PureDP, ReleaseContext
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.measurement import EXACT_SAMPLER, Measurement
from dpcore.privacy.neighbours import Neighbours
from dpcore.synthesizers.aim_budget import (  # noqa: F401 (the rules, importable from here too)
    ROUNDS_PER_ATTRIBUTE,
    SELECTION_SHARE,
    WHOLE_TABLE,
    WORKLOAD_FIRST,
    ZCDP_ROUNDS_PER_ATTRIBUTE,
    cell_limit,
    round_noise_share,
    set_rounds,
    whole_table_first,
    workload_first,
    workload_noise,
)
from dpcore.synthesizers.aim_budget import plan as budget_plan
from dpcore.synthesizers.empty_share import NoiseRow, noise_row
from dpcore.synthesizers.method import Method, MethodBase, SetRequest, SetResult
from dpcore.synthesizers.options import (
    estimator_option,
    model_draw_option,
    pure_choice,
    round_fits_option,
    zcdp_choices,
)
from dpcore.synthesizers.schema import Option, check_known, value

#: What the method does, in one or two plain sentences (the Design page and the method adviser).
SUMMARY = (
    "Measures every attribute's counts, then, round by round, picks the combination of attributes "
    "the model gets most wrong and measures it (on a tiny table it measures the whole table once instead); "
    "the synthetic records are drawn from the fitted model."
)

#: AIM's default limit on the model (junction tree) size, in megabytes of float64 cells
DEFAULT_MAX_MODEL_SIZE = 80.0
#: warm round fits: stop when a sweep closes the largest margin gap by less than this share (docs/methods/aim.md)
WARM_STALL = 0.01
#: warm round fits: every cell of the carried model at least this many records, so a cell at 0 can move again
WARM_FLOOR = 1e-3
#: mirror-descent round fits: iterations per round (docs/methods/aim.md)
ROUND_MD_ITERS = 10


@dataclass(frozen=True)
class AimOptions:
    """Resolved options of ``method="aim"``: ``rounds`` T (ε_s/T is the starting round
    budget; at least d; ``None``, the default: chosen per set from public facts,
    :func:`dpcore.synthesizers.aim_budget.set_rounds`), ``max_model_size`` (MB), ``workload`` (attribute-name tuples),
    ``fit_sweeps`` (IPF sweeps per model fit), ``synthesis`` (how the records are drawn:
    ``sample`` or ``round`` once resolved; ``auto`` resolves to ``sample`` under pure ε and
    to ``round`` under (ε, δ)), ``estimator`` (the final model fit: ``ipf`` or
    ``mirror_descent`` once resolved; ``auto`` resolves to ``mirror_descent``, under pure ε too
    since the corpus rerun), ``round_fits`` (the refits after each round: ``cold``,
    ``warm`` or ``mirror_descent`` once resolved; ``auto`` resolves to ``cold`` under pure ε and to
    ``mirror_descent`` under (ε, δ))."""

    rounds: int | None
    max_model_size: float = DEFAULT_MAX_MODEL_SIZE
    workload: tuple = ()
    fit_sweeps: int = 50
    synthesis: str = "auto"
    estimator: str = "auto"
    round_fits: str = "auto"
    whole_table: str = "auto"
    workload_first: str = "auto"

    def to_dict(self) -> dict:
        d = asdict(self)
        d["workload"] = [list(g) for g in self.workload]
        return d


def parse_workload(workload, domain: Domain) -> tuple[tuple[str, ...], ...]:
    """The ``workload`` option as attribute-name groups in domain order
    (:func:`dpcore.measure.margin_spec.parse_margin_groups`; default all two-way margins)."""
    return parse_margin_groups(workload, domain.names, "workload")


#: AIM's options (the registry's schema)
OPTIONS = (
    Option("rounds", "int", None, "rounds T of select-and-measure (ε/T is the starting round budget)", low=1,
           high=100_000, default_text="4 × attributes (2 × on a short table)",
           docs="methods/aim.md#options", label="Rounds T"),
    Option("max_model_size", "float", DEFAULT_MAX_MODEL_SIZE, "largest fitted model, in megabytes", low=0,
           high=100_000, low_open=True, hint=" (megabytes of the fitted model; AIM's default 80)",
           docs="methods/aim.md#options", label="Largest model (MB)"),
    Option("workload", "text", None, 'the margins the release should serve, e.g. "a,b;b,c"',
           default_text="all two-way margins", docs="methods/aim.md#options", label="Workload (margins to serve)"),
    Option("fit_sweeps", "int", 50, "IPF sweeps per model fit", low=1, high=100_000, hint=" (IPF sweeps per model fit)",
           docs="methods/aim.md#options", advanced=True, label="IPF sweeps per fit"),
    model_draw_option("methods/aim.md#options"),
    estimator_option("methods/aim.md#options"),
    round_fits_option("methods/aim.md#options"),
    Option("whole_table", "choice", "auto", "measure the whole cross-tabulation once with the set's whole budget "
           "instead of running rounds: always, never, or auto (when that is less noisy on every workload margin: "
           "tiny domains)", choices=WHOLE_TABLE, docs="methods/aim.md#the-whole-table-at-once", advanced=True,
           label="Whole table at once"),
    Option("workload_first", "choice", "auto", "measure the workload's margins at once with part of the budget "
           "before the rounds (as DP ipf measures them): always, never, or auto (when each would still be "
           "measured precisely: long tables with few cells per margin)", choices=WORKLOAD_FIRST,
           docs="methods/aim.md#the-workload-at-once", advanced=True, label="Workload at once"),
)


def resolve(domain: Domain, method: str = "aim", **opts) -> AimOptions:
    """Fill defaults and validate every option (messages name the option and the fix)."""
    check_known(OPTIONS, opts, "aim")
    d = len(domain)
    rounds = opts.get("rounds")
    rounds = None if rounds is None else int(whole_number(
        "rounds", rounds, d, 100_000, f" (AIM's T: at least the number of attributes, {d}, since the one-way margins "
                                      "use 0.9·d/T of ε)"))
    return AimOptions(
        rounds=rounds,
        max_model_size=float(value(OPTIONS, opts, "max_model_size")),
        workload=parse_workload(opts.get("workload"), domain),
        fit_sweeps=value(OPTIONS, opts, "fit_sweeps"),
        synthesis=pure_choice("synthesis", value(OPTIONS, opts, "synthesis")),
        estimator=pure_choice("estimator", value(OPTIONS, opts, "estimator")),
        round_fits=pure_choice("round_fits", value(OPTIONS, opts, "round_fits")),
        whole_table=value(OPTIONS, opts, "whole_table"),
        workload_first=value(OPTIONS, opts, "workload_first"),
    )


def for_zcdp(opts: AimOptions, definition, given: dict, domain: Domain) -> AimOptions:
    """AIM as McKenna et al. (2022) run it under zCDP: Gaussian margins (the definition's count
    noise) and, unless ``rounds`` was given, T from :data:`ZCDP_ROUNDS_PER_ATTRIBUTE`·d rounds (4·d: the
    corpus measured it better than the paper's 16·d) by the rule of :func:`set_rounds`
    (docs/methods/aim.md#rounds); ``synthesis="auto"`` draws
    the records by controlled rounding, ``estimator="auto"`` fits the final model by mirror descent and
    ``round_fits="auto"`` refits each round from the last model (warm IPF, then mirror descent)."""
    return zcdp_choices(opts, given, "synthesis", "estimator", "round_fits")


def candidates(workload_axes) -> dict[tuple, float]:
    """AIM's candidates: every non-empty subset of a workload margin, with weight Σ_s |r ∩ s|."""
    out = {}
    for s in workload_axes:
        for k in range(1, len(s) + 1):
            for r in itertools.combinations(s, k):
                out[r] = 0.0
    for r in out:
        out[r] = float(sum(len(set(r) & set(s)) for s in workload_axes))
    return out


def quality(answer: np.ndarray, model_margin: np.ndarray, weight: float, bias: float) -> float:
    """AIM's score w·(||x − m||_1 − bias): sensitivity w·Δ in the data x (docs/methods/aim.md)."""
    return weight * (float(np.abs(np.asarray(answer, float) - model_margin).sum()) - bias)


def score_sensitivity(weights, histogram_sensitivity: float) -> float:
    return max(weights) * histogram_sensitivity


def synthesize_set(X, domain: Domain, opts: AimOptions, budget: Budget, rng, ledger: Ledger, set_label: str,
                   ctx: ReleaseContext):
    """One AIM set at ``budget`` (= ε/m, or ρ/m under zCDP), charged to ``ledger`` to exactly ``budget``
    (module docstring)."""
    nb, definition = ctx.neighbours, ctx.definition
    hs = nb.record_count_sensitivity  # per record: the selection's Measurement scales it to the unit
    shape, names = domain.shape, domain.names
    d = len(shape)
    group = ledger.group(set_label)
    total = float(max(ctx.n_out, 1))
    fit = JunctionTreeIPF(max_sweeps=opts.fit_sweeps)  # pooled targets, tree order
    plan = budget_plan(opts, domain, budget, nb, total, definition)  # public facts and ñ only
    if plan.whole_table:
        return _whole_table_set(X, shape, names, opts, budget, nb, rng, group, fit, total, ctx)
    work = [tuple(names.index(a) for a in g) for g in opts.workload]
    cand = candidates(work)
    for j in range(d):  # every attribute is measured once, even one the workload leaves out
        cand.setdefault((j,), 0.0)
    answers = {r: margin_counts(X, shape, r) for r in cand}  # raw: only scored, never released
    sens = score_sensitivity(list(cand.values()), hs)
    round_budget = budget / plan.rounds
    meas = _initial_measurements(X, shape, names, plan, budget, round_budget, nb, rng, group, definition)
    model, info = fit.fit(shape, meas, total)
    limit_cells = cell_limit(opts)
    selected, annealed, t, final = [], 0, 0, False
    while not final:
        t += 1
        left = budget - group.spent  # the set's odometer: what its charges have spent so far
        if left < 2 * round_budget:
            round_budget, final = left, True
        select_budget = SELECTION_SHARE * round_budget
        measure_budget = round_budget - select_budget
        budget_after = group.spent + round_budget
        cliques = [set(c) for c in model.tree.cliques]
        measured = list({m.axes for m in meas})
        allowed = []
        for r in cand:
            if any(set(r) <= c for c in cliques) or \
                    model_cells(shape, measured + [r]) <= limit_cells * budget_after / budget:
                allowed.append(r)
        bias_cell = expected_abs_noise(definition.count_noise(measure_budget, nb))
        scores = np.array([quality(answers[r], model.marginal(r), cand[r], bias_cell * counts_cells(shape, r))
                           for r in allowed])
        em = definition.selection(select_budget, nb.score_sensitivity(sens).value)
        pick = Measurement.selection(f"round {t}: select a margin", em, nb, sens,
                                     subset=f"{len(allowed)} candidate margins", sampler=EXACT_SAMPLER,
                                     note="score w·(L1 error of the model − expected noise); sensitivity max weight × "
                                          "count sensitivity")
        k = int(pick.select(group, scores, rng))
        r = allowed[k]
        # the last charge takes exactly what is left, so the set spends budget to the last bit
        measure_budget = budget - group.spent if final else measure_budget
        margin = measure(X, shape, r, measure_budget, nb, rng, group,
                         f"round {t}: margin {' × '.join(names[a] for a in r)}",
                         note="final round: the rest of the budget" if final else "", definition=definition)
        meas.append(margin)
        before = model.marginal(r)
        model, info = refit(opts.round_fits, fit, shape, meas, total, model)
        selected.append([names[a] for a in r])
        if not final and (np.abs(model.marginal(r) - before).sum()
                          <= expected_abs_noise(margin.mechanism) * counts_cells(shape, r)):
            round_budget *= definition.halving_factor  # half the noise: ε × 2, or ρ × 4 under zCDP
            annealed += 1
    del answers
    model, info = released_model(opts.estimator, shape, meas, total, model, info)
    # n records from the model, drawn in chunks (post-processing): i.i.d., or rounded now from rng
    draw = model_draw(model, ctx.n_out, opts.synthesis, rng)
    diag = {"rounds": t, "T": plan.rounds, "selected": selected, "annealed": annealed,
            "model_cells": int(model.tree.cells),
            "cliques": [[names[a] for a in c] for c in model.tree.cliques], "fit_sweeps": info["iterations"],
            "fit_converged": bool(info["converged"]), "estimator": opts.estimator, "round_fits": opts.round_fits,
            "workload_first": bool(plan.at_once), "at_once": len(plan.at_once),
            "workload_noise": workload_noise(opts, domain, budget, nb, total, definition), "warnings": []}
    return draw, diag


def _initial_measurements(X, shape, names, plan, budget: Budget, round_budget: Budget, nb: Neighbours, rng,
                          group: Ledger, definition) -> list:
    """The measurements before the rounds: the workload's margins at once, evenly, with a share of the budget (the
    rounds get the rest), or every one-way margin at a round's measurement budget (published AIM)."""
    if plan.at_once:
        each = plan.at_once_share * budget / len(plan.at_once)
        return [measure(X, shape, r, each, nb, rng, group, f"at once: margin {' × '.join(names[a] for a in r)}",
                        note="AIM initialisation: the workload's margins at once", definition=definition)
                for r in plan.at_once]
    return [measure(X, shape, (j,), (1 - SELECTION_SHARE) * round_budget, nb, rng, group, f"one-way {names[j]}",
                    note="AIM initialisation: every one-way margin", definition=definition) for j in range(len(shape))]


def _whole_table_set(X, shape, names, opts: AimOptions, budget: Budget, nb: Neighbours, rng, group: Ledger,
                     fit: JunctionTreeIPF, total: float, ctx: ReleaseContext):
    """One set as the whole table measured once at the set's budget, its model fitted and drawn (no rounds:
    :func:`whole_table_first`)."""
    axes = tuple(range(len(shape)))
    meas = [measure(X, shape, axes, budget, nb, rng, group, "the whole table",
                    note="AIM: the whole table measured once (option whole_table), no rounds",
                    definition=ctx.definition)]
    model, info = fit.fit(shape, meas, total)
    model, info = released_model(opts.estimator, shape, meas, total, model, info)
    draw = model_draw(model, ctx.n_out, opts.synthesis, rng)
    diag = {"rounds": 0, "selected": [list(names)], "annealed": 0, "model_cells": int(model.tree.cells),
            "cliques": [[names[a] for a in c] for c in model.tree.cliques], "fit_sweeps": info["iterations"],
            "fit_converged": bool(info["converged"]), "estimator": opts.estimator, "round_fits": opts.round_fits,
            "whole_table": True, "warnings": []}
    return draw, diag


def refit(kind: str, fit: JunctionTreeIPF, shape, meas, total: float, model):
    """The model after a round's measurement: ``cold`` IPF from the uniform table; ``warm`` IPF from
    the round's model carried to the new tree, stopping when the gap stalls; ``mirror_descent``: that,
    then :data:`ROUND_MD_ITERS` iterations of Private-PGM's estimator from it (the reference's estimate,
    warm-started). Post-processing of released margins, whichever."""
    if kind == "cold":
        return fit.fit(shape, meas, total)
    warm = replace(fit, start=model, floor=WARM_FLOOR, stall=WARM_STALL).fit(shape, meas, total)
    if kind == "warm":
        return warm
    return MirrorDescent(iters=ROUND_MD_ITERS, start_model=warm[0]).fit(shape, meas, total)


def preview_rows(opts: AimOptions, domain: Domain, per_set: Budget, nb: Neighbours, n: float = 0.0,
                 definition: Definition = PureDP()) -> list[dict]:
    """What AIM measures, knowable before any budget is spent: the one-way margins and the
    starting round budget (later rounds may double it: annealing; the margins are chosen at release).
    Budgets are in the definition's unit (ε, or ρ under zCDP). On a domain small enough that
    :func:`whole_table_first` holds, the one row is the whole table at the set's budget."""
    plan = budget_plan(opts, domain, per_set, nb, n, definition)
    if plan.whole_table:
        whole = definition.count_noise(per_set, nb)
        return [preview_row("the whole table, once (no rounds)",
                            math.prod(domain[a].size for a in domain.names), per_set, whole, definition)]
    round_budget = per_set / plan.rounds
    meas = definition.count_noise((1 - SELECTION_SHARE) * round_budget, nb)
    spend = definition.cost(meas, nb.count_sensitivity(meas.norm))
    if plan.at_once:
        each = definition.count_noise(plan.at_once_share * per_set / len(plan.at_once), nb)
        each_spend = definition.cost(each, nb.count_sensitivity(each.norm))
        rows = [preview_row(f"at once: margin {' × '.join(domain.names[a] for a in r)}",
                            counts_cells(domain.shape, r), each_spend, each, definition) for r in plan.at_once]
        left = per_set - len(plan.at_once) * each_spend
    else:
        rows = one_way_preview_rows(domain, meas, spend, definition)
        left = per_set - len(domain) * spend
    # rounds run while at least two round budgets are left; the last takes the rest
    n_rounds = max(1, math.floor(left / round_budget + 1e-9))
    rows.append(selection_preview_row(f"each round at the start: exponential mechanism picks a margin ({n_rounds} "
                                      "rounds if none doubles its budget, fewer if some do)",
                                      SELECTION_SHARE * round_budget, definition))
    rows.append(preview_row("each round at the start: the chosen margin (its budget doubles when it barely changes the "
                            "model; the last round takes what is left)", None, spend, meas, definition))
    return rows


def noise_rows(opts: AimOptions, domain: Domain, epsilon: Budget, m: int, n: float, neighbours: Neighbours,
               definition: Definition = PureDP()) -> list[NoiseRow]:
    """The one-way margins AIM measures first, and a workload margin measured in a round at the
    starting round budget (the margins are chosen at release: the median size of the workload's
    margins; a margin whose budget doubles gets half the noise), or the whole table measured once
    (:func:`whole_table_first`)."""
    plan = budget_plan(opts, domain, epsilon / m, neighbours, n, definition)
    if plan.whole_table:
        whole = definition.count_noise(epsilon / m, neighbours, "discrete_laplace")
        table_cells = math.prod(domain[a].size for a in domain.names)
        return [noise_row("the whole table, once", table_cells, table_cells, epsilon / m, whole, n)]
    e = (1 - SELECTION_SHARE) * (epsilon / m / plan.rounds)
    meas = definition.count_noise(e, neighbours, "discrete_laplace")
    if plan.at_once:
        e1 = plan.at_once_share * (epsilon / m) / len(plan.at_once)
        each = definition.count_noise(e1, neighbours, "discrete_laplace")
        rows = [noise_row(f"at once: margin {' × '.join(domain.names[a] for a in r)}", counts_cells(domain.shape, r),
                          counts_cells(domain.shape, r), e1, each, n) for r in plan.at_once]
    else:
        rows = [noise_row(f"one-way margin {a}", domain[a].size, domain[a].size, e, meas, n) for a in domain.names]
    sizes = [math.prod(domain[a].size for a in g) for g in opts.workload] or [1]
    cells = float(np.median(sizes))
    rows.append(noise_row("a workload margin measured in a round (chosen at release)", int(cells), cells, e, meas, n,
                          estimate=True))
    return rows


class Aim(MethodBase):
    """AIM as a :class:`~dpcore.synthesizers.method.Method`."""

    name = "aim"
    label = "AIM"
    display_name = "AIM"
    summary = SUMMARY
    glossary = "aim"
    options = OPTIONS

    def resolve(self, domain: Domain, method: str = "aim", **options: Any) -> AimOptions:
        return resolve(domain, method, **options)

    def for_definition(self, options: Any, definition: Definition, given: dict, domain: Domain) -> Any:
        return for_zcdp(options, definition, given, domain)

    def run_set(self, request: SetRequest) -> SetResult:
        draw, diag = synthesize_set(request.data, request.domain, request.options, request.budget, request.rng,
                                    request.ledger, request.label, request.context)
        return SetResult(draw, None, diag)

    def noise_rows(self, options: Any, domain: Domain, budget: Budget, sets: int, n: float, neighbours: Neighbours,
                   definition: Definition) -> list[NoiseRow]:
        return noise_rows(options, domain, budget, sets, n, neighbours, definition)

    def preview_rows(self, options: Any, domain: Domain, budget: Budget, neighbours: Neighbours, n: float,
                     definition: Definition) -> list[dict]:
        return preview_rows(options, domain, budget, neighbours, n, definition)


#: the registry's entries of this module
METHODS: tuple[Method, ...] = (Aim(),)
