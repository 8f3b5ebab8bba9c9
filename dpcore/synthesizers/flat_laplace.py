"""Flat Laplace on the full cross-tabulation: synthpop's DP ``catall`` (Raab 2022; docs/methods/flat_laplace.md).

Per set, at ε/m: count every cell of the full cross-tabulation, add noise of scale
Δ/(ε/m) (Δ = 1 under add/remove: a record is in exactly one cell; Δ = 2 under
replace), add a prior α/cells to every cell that is not a declared structural
zero, clip at 0, normalise and draw the released record count. Cells are disjoint, so the whole table costs
ε/m once (parallel composition); m sets compose sequentially to ε. The prior,
clipping, normalising and sampling are post-processing.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from dpcore.counting.count_table import CountTable
from dpcore.counting.rows import margin_counts
from dpcore.data.domain import Domain
from dpcore.errors import OptionError
from dpcore.estimate.draws import CellDraw, cell_draw
from dpcore.estimate.table import cell_codes, cell_counts
from dpcore.measure import leaf_noise
from dpcore.measure.margins import preview_row
from dpcore.privacy.budget import Budget
from dpcore.privacy.definitions import Definition, PureDP, ReleaseContext
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.measurement import Measurement
from dpcore.privacy.mechanisms import HISTOGRAM_SAMPLER, Laplace
from dpcore.privacy.neighbours import Neighbours
from dpcore.synthesizers import sparse_leaves
from dpcore.synthesizers.cells import DEFAULT_MAX_CELLS, big_count, check_cells
from dpcore.synthesizers.empty_share import NoiseRow, empty_share_warning, flat_empty_share, noise_row
from dpcore.synthesizers.method import Method, MethodBase, SetRequest, SetResult
from dpcore.synthesizers.options import gaussian_counts, max_cells_option, noise_option, synthesis_option
from dpcore.synthesizers.schema import Option, check_known, value

#: What the method does, in one or two plain sentences (the Design page and the method adviser).
SUMMARY = (
    "Adds noise to every cell of the full cross-tabulation and draws records from it: only "
    "sensible when the table has few cells per record."
)


@dataclass(frozen=True)
class FlatOptions:
    prior: float = 1.0
    structural_zeros: tuple = ()
    synthesis: str = "sample"
    noise: str = "discrete_laplace"
    max_cells: int = DEFAULT_MAX_CELLS

    def to_dict(self) -> dict:
        return asdict(self)


#: flat Laplace's options (the registry's schema)
OPTIONS = (
    Option("prior", "float", 1.0, "prior count spread over the cells before normalising (synthpop's priorn)", low=0,
           hint=" (synthpop's priorn, spread over cells)", docs="methods/flat_laplace.md",
           label="Prior count per cell"),
    Option("structural_zeros", "text", (), "cells known to be impossible, kept at 0 (a list of {attribute: level})",
           docs="methods/flat_laplace.md", advanced=True, cli=False, label="Impossible cells (structural zeros)"),
    synthesis_option(),
    noise_option(),
    max_cells_option(DEFAULT_MAX_CELLS),
)


def resolve(domain: Domain, method: str = "flat_laplace", **opts) -> FlatOptions:
    check_known(OPTIONS, opts, "flat_laplace")
    zeros = tuple(_zero_cell(domain, z) for z in value(OPTIONS, opts, "structural_zeros"))
    return FlatOptions(value(OPTIONS, opts, "prior"), zeros, value(OPTIONS, opts, "synthesis"),
                       value(OPTIONS, opts, "noise"), value(OPTIONS, opts, "max_cells"))


def _zero_cell(domain: Domain, cell) -> tuple[int, ...]:
    """A structural zero as codes; given as {attribute: level label} or a tuple of labels in domain order."""
    labels = [cell.get(a) for a in domain.names] if isinstance(cell, dict) else list(cell)
    if len(labels) != len(domain):
        raise OptionError(f"structural zero {cell!r} must give a level for each of the {len(domain)} attributes")
    codes = []
    for a, lab in zip(domain.attributes, labels):
        if str(lab) not in a.labels:
            raise OptionError(f"structural zero {cell!r}: {lab!r} is not a level of '{a.name}' ({', '.join(a.labels)})")
        codes.append(a.labels.index(str(lab)))
    return tuple(codes)


def synthesize_set(X, domain: Domain, opts: FlatOptions, eps: Budget, rng, ledger: Ledger, set_label: str,
                   ctx: ReleaseContext) -> CellDraw:
    """One set: the draw of ``ctx.n_out`` records from the noisy full table (cell counts drawn
    now, records dealt in chunks: :mod:`dpcore.estimate.draws`; post-processing). ``X``: records
    (n, p) or their :class:`dpcore.counting.count_table.CountTable` (the same counts, the same release).

    Above :data:`dpcore.synthesizers.sparse_leaves.SPARSE_ABOVE` cells the table is never built: the
    sparse path releases the same distribution from the non-empty cells, the empty cells'
    noise drawn as its exact histogram; its ledger charge names that sampler
    (docs/sparse-leaves.md)."""
    if _sparse(domain.size, opts):
        return _sparse_set(X, domain, opts, eps, rng, ledger, set_label, ctx)
    cells = check_cells(domain, opts.max_cells)
    counts = margin_counts(X, domain.shape, range(len(domain))).ravel()  # records or the count table's cells
    mech = ctx.definition.count_noise(eps, ctx.neighbours, opts.noise)
    table = Measurement.counts("full cross-tabulation counts", mech, ctx.neighbours, cells=cells,
                               subset=f"{cells} cells of the full cross-tabulation (disjoint)")
    noisy = table.release(ledger.group(set_label), counts, rng).astype(float)
    del counts
    live = np.ones(cells, dtype=bool)
    if opts.structural_zeros:
        idx = np.ravel_multi_index(tuple(np.asarray(opts.structural_zeros).T), domain.shape)
        live[idx] = False
    noisy[live] += opts.prior / live.sum()
    noisy[~live] = 0.0
    shape = domain.shape
    return cell_draw(cell_counts(noisy, ctx.n_out, opts.synthesis, rng), lambda c: cell_codes(c, shape), shape)


def _sparse(cells: int, opts: FlatOptions) -> bool:
    # discrete Laplace and the discrete Gaussian (under delta) go sparse above the measured crossover;
    # other noise only when it must (and is then refused by check_sparse_noise)
    big = cells > min(sparse_leaves.SPARSE_ABOVE, opts.max_cells)
    return big and (opts.noise in leaf_noise.HISTOGRAM_NOISE or cells > opts.max_cells)


def _sparse_set(X, domain: Domain, opts: FlatOptions, eps: Budget, rng, ledger: Ledger, set_label: str,
                ctx: ReleaseContext) -> CellDraw:
    cells = domain.size
    leaf_noise.check_sparse_noise(opts.noise, where=f"the full cross-tabulation ({big_count(cells)} cells)")
    mech = ctx.definition.count_noise(eps, ctx.neighbours, opts.noise)
    assert not isinstance(mech, Laplace)  # check_sparse_noise refused it: the histogram sampler is for integers
    query = Measurement.counts(
        "full cross-tabulation counts", mech, ctx.neighbours, cells=cells, sampler=HISTOGRAM_SAMPLER,
        subset=f"{cells} cells of the full cross-tabulation (disjoint; empty cells noised as a histogram)")
    table = X if isinstance(X, CountTable) else CountTable.from_codes(X, domain.shape)
    # one charge for every cell: the non-empty cells are noised one by one, the empty ones as a histogram
    codes, counts = query.draw(ledger.group(set_label), lambda: sparse_leaves.flat_support(
        table, mech, ctx.n_out, rng, prior=opts.prior, synthesis=opts.synthesis,
        structural_zeros=opts.structural_zeros))
    return CellDraw(codes, counts)


def noise_rows(opts: FlatOptions, domain: Domain, epsilon: Budget, m: int, n: float, neighbours: Neighbours,
               definition: Definition = PureDP()) -> list[NoiseRow]:
    """The noise on every cell of the full table against its typical count n/cells (public facts and n)."""
    eps = epsilon / m
    cells = domain.size
    return [noise_row(f"every cell of the full table ({big_count(cells)} cells)", cells, cells, eps,
                      definition.count_noise(eps, neighbours, opts.noise), n)]


def preview_rows(opts: FlatOptions, domain: Domain, per_set: Budget, nb: Neighbours, n: float,
                 definition: Definition = PureDP()) -> list[dict]:
    """The one noisy table flat Laplace measures per set (public facts only)."""
    mech = definition.count_noise(per_set, nb, opts.noise)
    return [preview_row("full cross-tabulation (" + " × ".join(domain.names) + ")", domain.size, per_set, mech,
                        definition)]


def preview_plan(opts: FlatOptions, domain: Domain, per_set: Budget, nb: Neighbours, n: float,
                 definition: Definition = PureDP()) -> dict:
    """The expected share of synthetic records from cells empty in the data (worked out for discrete
    Laplace noise only; ``n`` is the curator's count in a preview)."""
    if definition.name != "pure":
        return {}
    share = flat_empty_share(domain.size, float(n), definition.count_noise(per_set, nb, opts.noise).scale, opts.prior)
    return {"empty_cell_share": share, "empty_cell_warning": empty_share_warning(share, more="method='steps', ")}


class FlatLaplace(MethodBase):
    """Flat Laplace as a :class:`~dpcore.synthesizers.method.Method`."""

    name = "flat_laplace"
    label = "flat Laplace"
    display_name = "Flat Laplace"
    summary = SUMMARY
    glossary = "flat-laplace"
    options = OPTIONS

    def resolve(self, domain: Domain, method: str = "flat_laplace", **options: Any) -> FlatOptions:
        return resolve(domain, method, **options)

    def for_definition(self, options: Any, definition: Definition, given: dict, domain: Domain) -> Any:
        return gaussian_counts(options, definition, given, domain)

    def run_set(self, request: SetRequest) -> SetResult:
        return SetResult(synthesize_set(request.data, request.domain, request.options, request.budget, request.rng,
                                        request.ledger, request.label, request.context))

    def noise_rows(self, options: Any, domain: Domain, budget: Budget, sets: int, n: float, neighbours: Neighbours,
                   definition: Definition) -> list[NoiseRow]:
        return noise_rows(options, domain, budget, sets, n, neighbours, definition)

    def preview_rows(self, options: Any, domain: Domain, budget: Budget, neighbours: Neighbours, n: float,
                     definition: Definition) -> list[dict]:
        return preview_rows(options, domain, budget, neighbours, n, definition)

    def preview_plan(self, options: Any, domain: Domain, budget: Budget, neighbours: Neighbours, n: float,
                     definition: Definition) -> dict:
        return preview_plan(options, domain, budget, neighbours, n, definition)


#: the registry's entries of this module
METHODS: tuple[Method, ...] = (FlatLaplace(),)
