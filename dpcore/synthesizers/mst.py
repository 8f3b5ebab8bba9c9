"""MST under pure ε-DP or zCDP: a private maximum spanning tree of two-way margins (McKenna, Miklau &
Sheldon 2021; docs/methods/mst.md).

Per set, at budget ε_s = ε/m, for d ≥ 3 attributes, three equal thirds (MST's split of ρ):

1. **One-way margins**: each of the d one-way margins with discrete Laplace at ε_s/(3d).
2. **Selection** (private Kruskal): the model fitted to the one-way margins (independent
   attributes) gives m_ab for every pair; the score of pair (a, b) is
   q_ab = ||x_ab − m_ab||_1. d − 1 times, among the pairs joining two different
   components of the tree so far, pick one by the exponential mechanism at
   ε_s/(3(d − 1)). m_ab is released information, so q_ab changes only through the true
   margin x_ab: by at most Δ = 1 (add/remove) or 2 (replace), the sensitivity used.
3. **Edge margins**: each of the d − 1 chosen two-way margins at ε_s/(3(d − 1)).

Then fit the tree model to all the noisy margins (junction-tree IPF,
:class:`dpcore.estimate.junction_tree.JunctionTreeIPF`; by default, ``estimator="auto"``, refitted
from there to Private-PGM's loss by accelerated mirror descent under both definitions:
:func:`dpcore.estimate.final_fit.released_model`) and draw ñ records from it: i.i.d.
(``synthesis="sample"``) or by controlled rounding (``"round"``,
:class:`dpcore.estimate.draws.TreeCountDraw`); ``"auto"`` (default) rounds under (ε, δ) and
samples under pure ε. d = 2: one pair, no choice:
one-way margins at ε_s/4 each and the pair at ε_s/2. d = 1: the one-way margin at ε_s.

**Privacy.** Sequential composition (adaptive: each choice depends only on earlier
outputs) of d + 2(d − 1) ε-DP steps whose charges add to ε_s; the ledger records
each. Fit and the draw (either kind) are post-processing. Under (ε, δ) (``rare_levels="auto"``), as
the reference MST does, the levels whose noisy one-way count is below 3σ are measured together
after step 1 (:mod:`dpcore.measure.rare_levels`: a function of released values; a margin over
merged levels has the declared margin's sensitivity); under pure ε the declared domain is kept.
Proof: docs/methods/mst.md.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Any

import numpy as np
from scipy.cluster.hierarchy import DisjointSet

from dpcore.data.domain import Domain
from dpcore.estimate.draws import RecodedDraw, model_draw
from dpcore.estimate.final_fit import released_model
from dpcore.estimate.junction_tree import JunctionTreeIPF
from dpcore.measure.margins import margin_counts, measure, one_way_preview_rows, preview_row, selection_preview_row
from dpcore.measure.rare_levels import find_rare_levels
from dpcore.privacy.budget import Budget, zero_like
from dpcore.privacy.definitions import Definition, PureDP, ReleaseContext
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.measurement import EXACT_SAMPLER, Measurement
from dpcore.privacy.neighbours import Neighbours
from dpcore.synthesizers.empty_share import NoiseRow, noise_row, typical_cells
from dpcore.synthesizers.method import Method, MethodBase, SetRequest, SetResult
from dpcore.synthesizers.options import (
    estimator_option,
    model_draw_option,
    pure_choice,
    rare_levels_option,
    zcdp_choices,
)
from dpcore.synthesizers.schema import Option, check_known, value

#: What the method does, in one or two plain sentences (the Design page and the method adviser).
SUMMARY = (
    "Measures every attribute's counts and a tree of pairs of attributes (chosen privately), and "
    "draws records from that tree; fast, but relations between attributes off the tree are lost."
)


@dataclass(frozen=True)
class MstOptions:
    """Resolved options of ``method="mst"``: ``fit_sweeps`` (IPF sweeps of the final fit),
    ``synthesis`` (``sample`` or ``round`` once resolved; ``auto``: ``sample`` under pure ε,
    ``round`` under (ε, δ)), ``rare_levels`` and ``estimator`` (``ipf`` or ``mirror_descent`` once
    resolved; ``auto``: ``mirror_descent``)."""

    fit_sweeps: int = 50
    synthesis: str = "auto"
    rare_levels: str = "auto"
    estimator: str = "auto"

    def to_dict(self) -> dict:
        return asdict(self)


#: MST's options (the registry's schema)
OPTIONS = (
    Option("fit_sweeps", "int", 50, "IPF sweeps of the model fit", low=1, high=100_000, hint=" (IPF sweeps)",
           docs="methods/mst.md", advanced=True, label="IPF sweeps per fit"),
    model_draw_option("methods/mst.md#options"),
    rare_levels_option("methods/mst.md#rare-levels"),
    estimator_option("methods/mst.md#options"),
)


def resolve(domain: Domain, method: str = "mst", **opts) -> MstOptions:
    check_known(OPTIONS, opts, "mst")
    return MstOptions(fit_sweeps=value(OPTIONS, opts, "fit_sweeps"),
                      synthesis=pure_choice("synthesis", value(OPTIONS, opts, "synthesis")),
                      rare_levels=pure_choice("rare_levels", value(OPTIONS, opts, "rare_levels")),
                      estimator=pure_choice("estimator", value(OPTIONS, opts, "estimator")))


def for_zcdp(opts: MstOptions, definition, given: dict, domain: Domain) -> MstOptions:
    """MST's options under (ε, δ): ``synthesis="auto"`` draws the records by controlled rounding
    (the measurements' Gaussian noise is the definition's; nothing else changes)."""
    return zcdp_choices(opts, given, "synthesis", "rare_levels", "estimator")


def budget_split(d: int, eps: Budget) -> tuple[Budget, Budget, Budget]:
    """(budget per one-way margin, per selection step, per edge margin) for d attributes: shares of a set's
    budget, in its unit (ε, or ρ under zCDP)."""
    if d == 1:
        return eps, zero_like(eps), zero_like(eps)
    if d == 2:
        return eps / 4, zero_like(eps), eps / 2
    return eps / (3 * d), eps / (3 * (d - 1)), eps / (3 * (d - 1))


def quality(answer: np.ndarray, model_margin: np.ndarray) -> float:
    """MST's score ||x − m||_1: sensitivity Δ in the data x (docs/methods/mst.md)."""
    return float(np.abs(np.asarray(answer, float) - model_margin).sum())


def synthesize_set(X, domain: Domain, opts: MstOptions, eps: Budget, rng, ledger: Ledger, set_label: str,
                   ctx: ReleaseContext):
    """One MST set at ``eps`` (= ε/m), charged to exactly ``eps`` (module docstring)."""
    nb = ctx.neighbours
    hs = nb.record_count_sensitivity  # per record: the selection's Measurement scales it to the unit
    shape, names = domain.shape, domain.names
    d = len(shape)
    group = ledger.group(set_label)
    total = float(max(ctx.n_out, 1))
    e1, e2, e3 = budget_split(d, eps)
    meas = [measure(X, shape, (j,), e1, nb, rng, group, f"one-way {names[j]}", definition=ctx.definition)
            for j in range(d)]
    rare = find_rare_levels(meas, shape) if opts.rare_levels == "merge" else None
    if rare is not None and rare.any:  # rare levels measured together from here on (docs/methods/mst.md)
        X, shape, meas = rare.recode(X), rare.model_shape, [rare.margin(m) for m in meas]
    edges = []
    if d == 2:
        edges = [(0, 1)]
    elif d >= 3:
        model, _ = JunctionTreeIPF(max_sweeps=1).fit(shape, meas, total)  # one-way margins only: one sweep is exact
        pairs = list(combinations(range(d), 2))
        score = {p: quality(margin_counts(X, shape, p), model.marginal(p)) for p in pairs}  # raw: scored only
        joined = DisjointSet(range(d))
        em = ctx.definition.selection(e2, nb.score_sensitivity(hs).value)  # scores: L1 errors (count sensitivity)
        for step in range(d - 1):
            cands = [p for p in pairs if not joined.connected(*p)]
            pick = Measurement.selection(f"tree edge {step + 1}: select a pair", em, nb, hs,
                                         subset=f"{len(cands)} candidate pairs", sampler=EXACT_SAMPLER,
                                         note="score: L1 error of the one-way model on the pair; sensitivity = count "
                                              "sensitivity")
            k = int(pick.select(group, np.array([score[p] for p in cands]), rng))
            a, b = cands[k]
            joined.merge(a, b)
            edges.append((a, b))
        del score
    meas += [measure(X, shape, (a, b), e3, nb, rng, group, f"margin {names[a]} × {names[b]}",
                     definition=ctx.definition) for a, b in edges]
    model, info = JunctionTreeIPF(max_sweeps=opts.fit_sweeps).fit(shape, meas, total)
    model, info = released_model(opts.estimator, shape, meas, total, model, info)
    # n records from the model, drawn in chunks (post-processing): i.i.d., or rounded now from rng
    draw = model_draw(model, ctx.n_out, opts.synthesis, rng)
    if rare is not None and rare.any:
        draw = RecodedDraw(draw, rare.expand)
    diag = {"edges": [[names[a], names[b]] for a, b in edges], "fit_sweeps": info["iterations"],
            "fit_converged": bool(info["converged"]), "estimator": opts.estimator, "warnings": []}
    if rare is not None:
        diag["merged_levels"] = {names[j]: [int(c) for c in m] for j, m in enumerate(rare.merged) if len(m)}
    return draw, diag


def preview_rows(opts: MstOptions, domain: Domain, per_set: Budget, nb: Neighbours, n: float = 0.0,
                 definition: Definition = PureDP()) -> list[dict]:
    """What MST measures, before any budget is spent (the tree's pairs are chosen at release).
    Budgets are in the definition's unit (ε, or ρ under zCDP)."""
    d = len(domain)
    e1, e2, e3 = budget_split(d, per_set)
    one = definition.count_noise(e1, nb)
    rows = one_way_preview_rows(domain, one, e1, definition)
    if e2:
        rows += [selection_preview_row(f"tree edge {i + 1}: exponential mechanism picks a pair", e2, definition)
                 for i in range(d - 1)]
    if e3:
        edge = definition.count_noise(e3, nb)
        rows += [preview_row(f"two-way margin of tree edge {i + 1} (pair chosen at release)", None, e3, edge,
                             definition) for i in range(d - 1)]
    return rows


def noise_rows(opts: MstOptions, domain: Domain, epsilon: Budget, m: int, n: float, neighbours: Neighbours,
               definition: Definition = PureDP()) -> list[NoiseRow]:
    """The one-way margins, then the d − 1 two-way margins of the tree (pairs chosen at release:
    the typical pair's size)."""
    d = len(domain)
    e1, _, e3 = budget_split(d, epsilon / m)
    one = definition.count_noise(e1, neighbours, "discrete_laplace")
    rows = [noise_row(f"one-way margin {a}", domain[a].size, domain[a].size, e1, one, n) for a in domain.names]
    if e3:
        cells = typical_cells(domain.shape, 2)
        rows.append(noise_row(f"{d - 1} two-way margins of the tree (pairs chosen at release)", int((d - 1) * cells),
                              cells, e3, definition.count_noise(e3, neighbours, "discrete_laplace"), n, estimate=True))
    return rows


class Mst(MethodBase):
    """MST as a :class:`~dpcore.synthesizers.method.Method`."""

    name = "mst"
    label = "MST"
    display_name = "MST"
    summary = SUMMARY
    glossary = "mst"
    options = OPTIONS

    def resolve(self, domain: Domain, method: str = "mst", **options: Any) -> MstOptions:
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
METHODS: tuple[Method, ...] = (Mst(),)
