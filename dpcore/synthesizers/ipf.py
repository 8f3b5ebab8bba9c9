"""Noisy margins + iterative proportional fitting: synthpop's DP ``ipf`` (Raab 2022; docs/methods/ipf.md).

Per set, at budget ε_s = ε/m, with a set M of margins (default: all two-way margins):

1. For each margin S ∈ M, count its cells c_S (a cross-tabulation of the attributes
   in S over their declared levels, NA a level) and release
   ``c̃_S = c_S + Z_S`` with Z_S iid noise of scale Δ|M|/ε_s per cell (discrete
   Laplace by default; ``noise="laplace"`` gives the floating-point-safe discretised
   Laplace, synthpop's ``rmutil::rlaplace(0, 1/eps)`` with eps = ε/|M| made safe).
2. Add the prior α/|cells of S| to every cell (synthpop's ``priorn`` = α spread
   evenly over the margin's cells, Raab 2022 §2.2 step 3, default α = 1).
3. Make the margin non-negative (Raab's step 5): ``clip`` sets negative cells to 0
   (the default; it reproduces Raab's Table 3). ``makepos`` is the ``makepos`` of
   the current synthpop sources: sort the cells decreasingly, keep them (as
   absolute values) while the running sum of absolute values is below the
   released record count + α, and zero the rest. Whenever the noise adds up to more
   than 0 this zeroes the smallest cell outright, however large it is, so it does
   NOT reproduce the paper (S5 at ε = 10: mean two-way S_pMSE ≈ 7 against the
   paper's 1.15); it is kept only for comparison with that code.
4. Rescale every margin to the same total, the released record count (Raab's step
   6), fit the full cross-tabulation to the margins by IPF (:mod:`dpcore.estimate.dense_ipf`) from the uniform
   table, and draw that many records (multinomial, or rounding). On wide tables the
   same noisy margins are fitted without the full table (``fit``, :func:`choose_fit`):
   exactly on the clique tables of their junction tree (:mod:`dpcore.estimate.junction_tree`),
   or, when the margins' graph is complete (all two-way margins), by updating synthetic
   records after denoising the margins (:func:`dpcore.estimate.denoise.shrink_margins`,
   :mod:`dpcore.estimate.record_fit`).

**Privacy** (ε_s per set, ε over the m sets). Add or remove one record: it lies in
exactly one cell of each margin, so each margin's count vector has L1 sensitivity
Δ = 1 (replace one record: Δ = 2) and the mechanism of scale Δ|M|/ε_s releases it
with ε_s/|M| (Dwork, McSherry, Nissim & Smith 2006; Ghosh, Roughgarden &
Sundararajan 2009). The cells of one margin are disjoint, so the margin costs
ε_s/|M| once (parallel composition, McSherry 2009); the |M| margins compose
sequentially to ε_s (Dwork & Roth 2014, Thm 3.16) and the m sets to ε. The prior,
the positivity step, rescaling, IPF and sampling read only the noisy margins, the
released record count and the public domain: post-processing (Dwork & Roth 2014,
Prop 2.1). Whatever the fit, the measurement (steps 1–2) and the ledger are the same and
every fit is post-processing, so the guarantee does not depend on it. Proof: docs/methods/ipf.md.
The ledger carries one charge per margin.

The fits are estimators of :mod:`dpcore.estimate` (:mod:`dpcore.estimate.estimator`):
:class:`~dpcore.estimate.dense_ipf.DenseIPF` (synthpop's IPF of the full table: the
iteration, its stopping rule and its cost are described there),
:meth:`JunctionTreeIPF.like_dense <dpcore.estimate.junction_tree.JunctionTreeIPF.like_dense>`
and :class:`~dpcore.estimate.record_fit.RecordFit`.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from dpcore.data.domain import Domain
from dpcore.errors import OptionError, ResourceError
from dpcore.estimate.denoise import NOISE_DOMINATED, makepos, noise_ratio, normsub
from dpcore.estimate.dense_ipf import DenseIPF
from dpcore.estimate.draws import FixedDraw, model_draw
from dpcore.estimate.estimator import Estimator
from dpcore.estimate.junction_tree import JunctionTree, JunctionTreeIPF, elimination_cliques
from dpcore.estimate.record_fit import FittedRecords, RecordFit, WeightedRecords
from dpcore.estimate.table import DenseTable
from dpcore.measure.margin_spec import parse_margin_groups
from dpcore.measure.margins import NoisyMargin, counts_cells, measure, preview_row
from dpcore.privacy.budget import Budget
from dpcore.privacy.definitions import Definition, PureDP, ReleaseContext
from dpcore.privacy.ledger import Ledger
from dpcore.privacy.neighbours import Neighbours
from dpcore.synthesizers.cells import DEFAULT_MAX_CELLS, big_count, check_cells
from dpcore.synthesizers.empty_share import NoiseRow, noise_row
from dpcore.synthesizers.method import Method, MethodBase, SetRequest, SetResult
from dpcore.synthesizers.options import gaussian_counts, max_cells_option, noise_option, synthesis_option
from dpcore.synthesizers.schema import Option, check_known, value

#: What the method does, in one or two plain sentences (the Design page and the method adviser).
SUMMARY = (
    "Measures the counts of every pair of attributes (or the combinations you list) and fits one "
    "table that agrees with them all (synthpop's DP catall with ipf); each pair gets a share of ε."
)

POSITIVITY = ("clip", "makepos", "normsub")
#: how the noisy margins are fitted: ``auto`` picks by size (see :func:`choose_fit`)
FITS = ("auto", "dense", "junction_tree", "records")
#: the dense fit (the full table, as synthpop) is used up to this many cells: it covers
#: SD2011 S5/S7 (147,000 cells), so Raab's Table 3 is reproduced with synthpop's own fit;
#: on the 10-attribute CPS extract (748,800 cells) it already takes a median 10 s a set
#: against 0.3 s for the record fit, with a higher S_pMSE (docs/methods/ipf.md)
DENSE_FIT_MAX_CELLS = 2**18
#: the junction-tree fit is used while its clique tables hold at most this many cells in all
JUNCTION_TREE_MAX_CELLS = 2**22
#: the record fit makes one pass over the records per margin and sweep: refuse more margins
MAX_MARGINS = 5000
#: ``one_way_share="auto"``: the share of ε measuring the one-way margins where the listed margins
#: are noise-dominated (:func:`one_way_share`; measured on ``cps_voter_wide``, bench/RESULTS.md)
AUTO_ONE_WAY_SHARE = 0.5


@dataclass(frozen=True)
class IpfOptions:
    """Resolved options of ``method="ipf"``.

    ``margins``: tuple of attribute-name tuples (in domain order); ``prior``: α,
    spread as α/cells over each margin; ``noise``: ``laplace`` (synthpop) or
    ``discrete_laplace``; ``positivity``: ``clip``, synthpop's ``makepos`` or PrivSyn's
    ``normsub`` (:func:`dpcore.estimate.denoise.normsub`; the record fit always uses its own, see
    :func:`dpcore.estimate.denoise.shrink_margins`);
    ``tol``: stop when no fitted cell count (table scaled to n) moves by ``tol`` or
    more over a sweep; ``max_iter``: sweep cap (synthpop: 1e-3 and 5000);
    ``synthesis``: ``sample`` (multinomial; i.i.d. on the junction tree) or ``round`` (the dense
    table's counts rounded by largest remainder; on the junction tree, controlled rounding,
    :class:`dpcore.estimate.draws.TreeCountDraw`; refused on the record fit); ``fit``: ``auto`` (by size),
    ``dense`` (the full table), ``junction_tree`` (exact, on clique tables) or ``records``
    (GUM: synthetic records updated to the margins); see :func:`choose_fit`.
    ``one_way_share``: the share of each set's ε spent on measuring every attribute's
    one-way margin besides ``margins`` (0 to 0.9), or ``auto``: :data:`AUTO_ONE_WAY_SHARE`
    where the margins are noise-dominated and fitted by records, else 0 (:func:`one_way_share`).
    """

    margins: tuple = ()
    prior: float = 1.0
    noise: str = "discrete_laplace"
    positivity: str = "clip"
    tol: float = 1e-3
    max_iter: int = 5000
    synthesis: str = "sample"
    max_cells: int = DEFAULT_MAX_CELLS
    fit: str = "auto"
    one_way_share: float | str = "auto"

    def to_dict(self) -> dict:
        d = asdict(self)
        d["margins"] = [list(g) for g in self.margins]
        return d


# ------------------------------------------------------------------ options


def parse_margins(margins, domain: Domain) -> tuple[tuple[str, ...], ...]:
    """The ``margins`` option as attribute-name groups in domain order
    (:func:`dpcore.measure.margin_spec.parse_margin_groups`)."""
    return parse_margin_groups(margins, domain.names, "margins")


#: ipf's options (the registry's schema)
OPTIONS = (
    Option("margins", "text", None, 'the margins to measure and fit, e.g. "a,b;c,d" ("oneway", "twoway" or lists)',
           default_text="all two-way margins", docs="methods/ipf.md", label="Margins to measure"),
    Option("prior", "float", 1.0, "prior count spread over each margin's cells (synthpop's priorn)", low=0,
           hint=" (synthpop's priorn, spread over each margin's cells; 1 as synthpop does, or 0 for none)",
           docs="methods/ipf.md", label="Prior count per cell"),
    noise_option(),
    Option("positivity", "choice", "clip", "how negative noisy counts are handled before fitting", choices=POSITIVITY,
           docs="methods/ipf.md", advanced=True, label="Negative noisy counts"),
    Option("tol", "float", 1e-3, "IPF stops when no fitted cell count changes by this much in a sweep", low=0,
           low_open=True, hint=" (largest change of a fitted cell count per IPF sweep; synthpop uses 1e-3)",
           docs="methods/ipf.md", advanced=True, label="IPF tolerance"),
    Option("max_iter", "int", 5000, "most IPF sweeps", low=1, hint=" (IPF sweeps)", docs="methods/ipf.md",
           advanced=True, label="Most IPF sweeps"),
    synthesis_option(),
    max_cells_option(DEFAULT_MAX_CELLS),
    Option("fit", "choice", "auto", "how the margins are fitted: auto (by size), dense, junction_tree or records",
           choices=FITS, docs="methods/ipf.md", label="Fit"),
    Option("one_way_share", "float_or_auto", "auto", "share of ε that measures every attribute's one-way margin "
           "besides the listed margins (auto: half where the margins are noise-dominated)", low=0, high=0.9,
           hint=" (the share of ε for the one-way margins; 0 measures only the listed margins, as synthpop does, or "
                "'auto')", docs="methods/ipf.md", label="Share of ε for one-way margins"),
)


def resolve(domain: Domain, method: str = "ipf", **opts) -> IpfOptions:
    """Fill defaults and validate every option against the domain."""
    check_known(OPTIONS, opts, "ipf")
    share = value(OPTIONS, opts, "one_way_share")
    synthesis = value(OPTIONS, opts, "synthesis")
    out = IpfOptions(
        margins=parse_margins(opts.get("margins"), domain),
        prior=value(OPTIONS, opts, "prior"),
        noise=value(OPTIONS, opts, "noise"),
        positivity=value(OPTIONS, opts, "positivity"),
        tol=float(value(OPTIONS, opts, "tol")),
        max_iter=int(value(OPTIONS, opts, "max_iter")),
        synthesis=synthesis,
        max_cells=int(value(OPTIONS, opts, "max_cells")),
        fit=value(OPTIONS, opts, "fit"),
        one_way_share=share if share == "auto" else float(share),
    )
    if share != "auto" and share > 0 and not _joint(out):
        raise OptionError(f"one_way_share={share:g} splits ε between one-way margins and margins of two or more "
                          "attributes, and margins lists only one-way margins; drop one_way_share (or set it to 0)")
    path = choose_fit(domain, out)
    if synthesis == "round" and path == "records":
        raise OptionError(f"synthesis='round' needs the dense fit of the full table or its junction tree, and this "
                          f"table is fitted by fit='{path}' ({big_count(domain.size)} cells); use synthesis='sample'")
    return out


def choose_fit(domain: Domain, opts: IpfOptions) -> str:
    """The fit ``opts.fit`` names, or for ``auto``: ``dense`` up to DENSE_FIT_MAX_CELLS
    cells (and ``max_cells``); else ``junction_tree`` when the chordal completion of the
    margins' graph has more than one clique and clique tables of at most
    JUNCTION_TREE_MAX_CELLS cells in all; else ``records``. Reads only the public domain and the options."""
    if opts.fit != "auto":
        return opts.fit
    if domain.size <= min(DENSE_FIT_MAX_CELLS, opts.max_cells):
        return "dense"
    if len(opts.margins) > MAX_MARGINS:
        return "records"  # refused at release with the reason
    cliques = elimination_cliques(domain.shape, _margin_axes(domain, opts))
    # a single clique over every attribute (all two-way margins) is the full table again
    if len(cliques) > 1 and sum(math.prod(domain.shape[a] for a in c) for c in cliques) <= JUNCTION_TREE_MAX_CELLS:
        return "junction_tree"
    return "records"


def _margin_axes(domain: Domain, opts: IpfOptions) -> list[tuple[int, ...]]:
    names = domain.names
    return [tuple(names.index(a) for a in g) for g in opts.margins]


# ------------------------------------------------------------------ one set


def _joint(opts: IpfOptions) -> tuple:
    """The listed margins of two or more attributes."""
    return tuple(g for g in opts.margins if len(g) > 1)


def one_way_share(domain: Domain, opts: IpfOptions, eps: Budget, neighbours: Neighbours, n: float,
                  path: str | None = None, definition: Definition = PureDP()) -> float:
    """The share of a set's ε spent on every attribute's one-way margin (:func:`measured_margins`).

    A number: that share. ``auto``: :data:`AUTO_ONE_WAY_SHARE` when the fit is the record fit
    (:func:`choose_fit`), the listed margins include margins of two or more attributes, and
    the listed margins, each measured at ε/|M|, would be noise-dominated (:func:`noise_ratio`
    > :data:`NOISE_DOMINATED`); else 0. Reads the public domain, the options, ε, the
    sensitivity and ``n``: in a release the *released* record count (or the public n under
    replace-one), so the choice is post-processing of released values and the composition
    stays sequential (docs/methods/ipf.md). The preview passes the table's own count
    (curator-only). ``path``: :func:`choose_fit`'s answer when the caller has it already."""
    if opts.one_way_share != "auto":
        return float(opts.one_way_share)
    if not _joint(opts) or (path or choose_fit(domain, opts)) != "records":
        return 0.0
    var = definition.count_noise(eps / len(opts.margins), neighbours, opts.noise).variance
    dominated = noise_ratio(_margin_axes(domain, opts), domain.shape, var, n) > NOISE_DOMINATED
    return AUTO_ONE_WAY_SHARE if dominated else 0.0


def measured_margins(domain: Domain, opts: IpfOptions, eps: Budget,
                     share: float) -> list[tuple[tuple, Budget, str]]:
    """What one set measures: (attribute names, ε, note) per noisy margin, ε totalling ``eps``.

    ``share`` = 0: the listed margins at ε/|M| each (synthpop). ``share`` = f > 0: every
    attribute's one-way margin at ε·f/p each (p attributes of the domain, so an attribute in no
    listed margin is measured too), and the listed margins of two or more attributes at
    ε(1 − f)/|M'| each; a listed one-way margin is measured once, in the one-way part."""
    if share <= 0:
        return [(g, eps / len(opts.margins), f"one of {len(opts.margins)} margins") for g in opts.margins]
    joint, p = _joint(opts), len(domain.names)
    return ([(g, eps * (1.0 - share) / len(joint), f"one of {len(joint)} margins of two or more attributes "
                                                    f"(one_way_share {share:g})") for g in joint]
            + [((a,), eps * share / p, f"one of {p} one-way margins (one_way_share {share:g})")
               for a in domain.names])


def noisy_margins(X, domain: Domain, opts: IpfOptions, eps: Budget, rng, ledger: Ledger, ctx: ReleaseContext,
                  positivity: bool = True, share: float = 0.0) -> list[NoisyMargin]:
    """Release the margins of :func:`measured_margins` (the listed ones at ε/|M| each, or with
    ``share`` > 0 every one-way margin at ε·share/p and the others at ε(1 − share)/|M'|; see
    the module docstring for the proof).

    ``X``: records (n, p) or their :class:`dpcore.counting.count_table.CountTable` (the same counts).
    Returns the noisy margins: non-negative after ``opts.positivity``, or as released plus the
    prior when ``positivity`` is False (each keeps its noise variance per cell). Charges
    ``ledger`` once per margin: its ε, the notion's count sensitivity, parallel over the cells.
    """
    shape, names = domain.shape, domain.names
    out = []
    for g, eps_m, what in measured_margins(domain, opts, eps, share):
        ax = tuple(names.index(a) for a in g)
        cells = counts_cells(shape, ax)
        margin = measure(X, shape, ax, eps_m, ctx.neighbours, rng, ledger, f"margin {' × '.join(g)}",
                         f"{what}, sequential composition; prior {opts.prior:g}/{cells} per cell added after noise",
                         noise=opts.noise, subset=f"{cells} cells of the {' × '.join(g)} margin (disjoint)",
                         definition=ctx.definition)
        noisy = margin.values.ravel() + opts.prior / cells
        if not positivity:
            pass
        elif opts.positivity == "normsub":
            noisy = normsub(noisy, float(ctx.n_out))
        elif opts.positivity == "makepos":
            noisy = makepos(noisy, ctx.n_out + opts.prior)  # the released count, never the raw n
        else:
            np.clip(noisy, 0.0, None, out=noisy)
        out.append(margin.with_values(noisy))
    return out


def checked_fit(domain: Domain, opts: IpfOptions) -> tuple[str, JunctionTree | None]:
    """The fit :func:`choose_fit` names, after the size limits it must keep, and for
    ``junction_tree`` the junction tree of the margins. Public facts only (domain, options)."""
    path = choose_fit(domain, opts)
    if path == "dense":
        check_cells(domain, opts.max_cells)
    elif len(opts.margins) > MAX_MARGINS:
        raise ResourceError(
            f"ipf would fit {len(opts.margins):,} margins (limit {MAX_MARGINS:,}; the full cross-tabulation has "
            f"{big_count(domain.size)} cells): each margin gets ε/{len(opts.margins):,}; "
            f"list fewer margins (margins=\"a,b;c,d\") or drop attributes")
    jt = None
    if path == "junction_tree":
        jt = JunctionTree.build(domain.shape, _margin_axes(domain, opts))
        if jt.cells > opts.max_cells:
            raise ResourceError(
                f"the junction tree of these margins has clique tables of {big_count(jt.cells)} cells in all "
                f"(limit max_cells={opts.max_cells:,}); use fit='records' or fewer margins")
    return path, jt


def estimator(path: str, opts: IpfOptions, tree: JunctionTree | None, n_out: int, rng) -> Estimator:
    """The estimator of each fit: the dense IPF, the same IPF on the junction tree ``tree``, or
    the record fit of ``n_out`` records on margins denoised first (it draws from ``rng``)."""
    if path == "dense":
        return DenseIPF(opts.tol, opts.max_iter)
    if path == "junction_tree":
        return JunctionTreeIPF.like_dense(opts.tol, opts.max_iter, tree)
    return RecordFit(rng, records=n_out, shrink=True)


def synthesize_set(X, domain: Domain, opts: IpfOptions, eps: Budget, rng, ledger: Ledger, set_label: str,
                   ctx: ReleaseContext):
    """One DP-ipf set at ``eps`` (= ε/m): its draw (:mod:`dpcore.estimate.draws`: the records
    are drawn in chunks from the fitted model, post-processing) and diagnostics.

    ε-cost: ``eps`` exactly, as |M| sequentially composed margin releases at
    eps/|M| (module docstring). Everything after the noisy margins is post-processing.
    """
    path, jt = checked_fit(domain, opts)
    group = ledger.group(set_label)
    total = float(max(ctx.n_out, 1))
    share = one_way_share(domain, opts, eps, ctx.neighbours, total, path, ctx.definition)
    margins = noisy_margins(X, domain, opts, eps, rng, group, ctx, positivity=path != "records", share=share)
    model, info = estimator(path, opts, jt, ctx.n_out, rng).fit(domain.shape, margins, total)
    if jt is not None:  # checked_fit builds the tree exactly for the junction-tree fit
        info["cliques"] = [[domain.names[a] for a in c] for c in jt.cliques]
        info["clique_cells"] = jt.cells
    elif path == "records":
        info.pop("history", None)
        info["shrinkage_mean"] = float(np.mean(info.pop("shrinkage")))
    info["fit"] = path
    diag = dict(info, margins=len(margins), one_way_share=share, warnings=fit_warnings(domain, opts, info, margins))
    # each fit has its own model (estimator): the record fit's records or, above the cap, their
    # weighted cells; the dense IPF's table; the junction tree's model
    if isinstance(model, FittedRecords):
        return FixedDraw(model.records), diag  # GUM's records are its sample
    if isinstance(model, WeightedRecords):  # above the cap: drawn from the fitted records' weighted cells, in chunks
        return model.draw(ctx.n_out, rng), diag
    if isinstance(model, DenseTable):  # cell counts now, records dealt in chunks
        return model.draw(ctx.n_out, rng, opts.synthesis), diag
    # the junction tree's records, drawn in chunks: i.i.d., or by controlled rounding (rounded now from rng)
    return model_draw(model, ctx.n_out, opts.synthesis, rng), diag


def fit_warnings(domain: Domain, opts: IpfOptions, info: dict, margins: list[NoisyMargin]) -> list[str]:
    """What the diagnostics of a set warn about: a fit that did not converge, margins left
    out of it, lost mass, attributes in no margin."""
    out = []
    if info["fit"] == "records" and not info["converged"]:
        out.append(
            f"the record fit (GUM) was still improving after {info['iterations']} sweeps; its records are "
            f"{info['max_change']:.3g} (mean total-variation distance) from the noisy margins")
    elif not info["converged"]:
        out.append(
            f"IPF did not converge within max_iter={opts.max_iter}; results may not match the noisy margins "
            f"(the last sweep moved a fitted cell count by {info['max_change']:.3g} ≥ tol={opts.tol:g})"
        )
    if info["skipped_margins"]:
        out.append(
            f"{info['skipped_margins']} noisy margin(s) were all zero after clipping and were left out "
            "of the fit; raise ε or the prior"
        )
    if info.get("lost_mass"):
        out.append("the noisy margins' zero cells exclude every cell of the table; records were drawn uniformly")
    used = {domain.names[a] for m in margins for a in m.axes}  # measured, the one-way share's margins included
    missed = [a for a in domain.names if a not in used]
    if missed:
        out.append(
            f"attribute(s) {', '.join(missed)} are in no margin, so they are synthesised as "
            "uniform and independent of the rest"
        )
    return out


def noise_rows(opts: IpfOptions, domain: Domain, epsilon: Budget, m: int, n: float, neighbours: Neighbours,
               definition: Definition = PureDP()) -> list[NoiseRow]:
    """Per measured margin (:func:`measured_margins`): the noise on each cell against its typical
    count n/cells. ``one_way_share="auto"`` is decided from ``n`` as at release."""
    eps = epsilon / m
    share = one_way_share(domain, opts, eps, neighbours, n, definition=definition)
    rows = []
    for g, e, _ in measured_margins(domain, opts, eps, share):
        cells = math.prod(domain[a].size for a in g)
        rows.append(noise_row(("one-way margin " if len(g) == 1 else "margin ") + " × ".join(g), cells, cells, e,
                              definition.count_noise(e, neighbours, opts.noise), n))
    return rows


def preview_rows(opts: IpfOptions, domain: Domain, per_set: Budget, nb: Neighbours, n: float,
                 definition: Definition = PureDP()) -> list[dict]:
    """The margins ipf measures per set with their noise (public facts; ``one_way_share="auto"`` is
    decided from ``n``: the curator's count in a preview, the released count at release)."""
    share = one_way_share(domain, opts, per_set, nb, n, definition=definition)
    return [preview_row(" × ".join(g) + (" (one-way)" if share > 0 and len(g) == 1 else ""),
                        int(np.prod([domain[a].size for a in g])), e, definition.count_noise(e, nb, opts.noise),
                        definition)
            for g, e, _ in measured_margins(domain, opts, per_set, share)]


def preview_plan(opts: IpfOptions, domain: Domain, per_set: Budget, nb: Neighbours, n: float,
                 definition: Definition = PureDP()) -> dict:
    """The fit ipf will use (public: the domain and the options) and the one-way share."""
    return {"fit": choose_fit(domain, opts),
            "one_way_share": one_way_share(domain, opts, per_set, nb, n, definition=definition),
            "one_way_share_auto": opts.one_way_share == "auto"}


class Ipf(MethodBase):
    """DP ipf as a :class:`~dpcore.synthesizers.method.Method`."""

    name = "ipf"
    label = "IPF"
    display_name = "DP ipf"
    summary = SUMMARY
    glossary = "dp-ipf"
    options = OPTIONS

    def resolve(self, domain: Domain, method: str = "ipf", **options: Any) -> IpfOptions:
        return resolve(domain, method, **options)

    def for_definition(self, options: Any, definition: Definition, given: dict, domain: Domain) -> Any:
        return gaussian_counts(options, definition, given, domain)

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

    def preview_plan(self, options: Any, domain: Domain, budget: Budget, neighbours: Neighbours, n: float,
                     definition: Definition) -> dict:
        return preview_plan(options, domain, budget, neighbours, n, definition)


#: the registry's entries of this module
METHODS: tuple[Method, ...] = (Ipf(),)
