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
   6), fit the full cross-tabulation to the margins by IPF (below) from the uniform
   table, and draw that many records (multinomial, or rounding). On wide tables the
   same noisy margins are fitted without the full table (``fit``, :func:`choose_fit`):
   exactly on the clique tables of their junction tree (:mod:`dpcore.estimate.junction_tree`),
   or, when the margins' graph is complete (all two-way margins), by updating synthetic
   records after denoising the margins (:func:`shrink_margins`, :mod:`dpcore.estimate.record_fit`).

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

**IPF** (Deming & Stephan 1940; the ``Ipfp`` of R's mipfp, which synthpop calls).
Let p be a table over the full cross-tabulation and, for a margin S, p_S its
marginal (the sum over the attributes outside S), and t_S the noisy margin scaled
to total n. Starting from the uniform table p⁰ = n/K, one sweep visits the margins
in order and replaces

    p(x) ← p(x) · t_S(x_S) / p_S(x_S)      (factor 0 where t_S or p_S is 0),

after which p has margin S exactly. Each step is the KL (I-)projection of p onto
{q : q_S = t_S} (Csiszár 1975); with consistent margins the sweeps converge to the
maximum-entropy table with those margins, i.e. the ML fit of the log-linear model
whose interactions are the margins. Noisy margins are generally not consistent
(two margins sharing an attribute disagree on its one-way margin), so the
iteration can converge slowly or not at all. We stop when no fitted cell count
changed by ``tol`` or more over a sweep (mipfp's rule on counts; synthpop's
defaults tol = 1e-3 and 5000 sweeps) or after ``max_iter`` sweeps, and report
non-convergence. Stopping early is not harmless: on S7 at ε = 0.5 a fit stopped
after 100 sweeps leaves about a third more replicated uniques than a converged one.

Cost: one sweep touches every cell once per margin. Cells outside the support
(a 0 in some noisy margin) are 0 after the first sweep and stay 0, so later sweeps
run on the support only; on S7 (147,000 cells) at ε = 1 that is ~18% of the table
and a sweep takes about 2 ms.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import scipy.sparse as sp

from dpcore.privacy.ledger import Ledger
from dpcore.data.domain import Domain
from dpcore.errors import OptionError, real_number, whole_number
from dpcore.synthesizers.cells import DEFAULT_MAX_CELLS, big_count, cell_codes, check_cells, draw_cells
from dpcore.errors import ResourceError
from dpcore.estimate.junction_tree import DecomposableModel, JunctionTree, elimination_cliques
from dpcore.estimate.record_fit import fit_records
from dpcore.counting.rows import margin_counts
from dpcore.measure.margin_spec import parse_margin_groups
from dpcore.measure.margins import measure
from dpcore.privacy.definitions import PureDP, ReleaseContext
from dpcore.privacy.neighbours import Neighbours
from dpcore.synthesizers.options import NOISE, SYNTHESIS, _choice, check_known_options

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
#: the record fit updates at most this many synthetic records and repeats them up to the released
#: count (:func:`fit_records_capped`): its cost is records × margins × sweeps (105 margins: 10 s of
#: CPU per sweep at 10^6 records; bench/RESULTS.md)
RECORD_FIT_MAX_RECORDS = 100_000


@dataclass(frozen=True)
class IpfOptions:
    """Resolved options of ``method="ipf"``.

    ``margins``: tuple of attribute-name tuples (in domain order); ``prior``: α,
    spread as α/cells over each margin; ``noise``: ``laplace`` (synthpop) or
    ``discrete_laplace``; ``positivity``: ``clip``, synthpop's ``makepos`` or PrivSyn's
    ``normsub`` (:func:`normsub`; the record fit always uses its own, see :func:`shrink_margins`);
    ``tol``: stop when no fitted cell count (table scaled to n) moves by ``tol`` or
    more over a sweep; ``max_iter``: sweep cap (synthpop: 1e-3 and 5000);
    ``synthesis``: ``sample`` (multinomial) or ``round``; ``fit``: ``auto`` (by size),
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


def resolve(domain: Domain, method: str = "ipf", **opts) -> IpfOptions:
    """Fill defaults and validate every option against the domain."""
    check_known_options(opts, IpfOptions, "ipf")
    margins = parse_margins(opts.get("margins"), domain)
    prior = real_number("prior", opts.get("prior", 1.0), 0,
                        hint=" (synthpop's priorn, spread over each margin's cells; 1 as synthpop does, or 0 for none)")
    tol = opts.get("tol", 1e-3)
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not math.isfinite(tol) or tol <= 0:
        raise OptionError(f"tol must be a number > 0 (largest change of a fitted cell count per IPF sweep); got {tol!r}. synthpop uses 1e-3")
    max_iter = opts.get("max_iter", 5000)
    max_iter = whole_number("max_iter", max_iter, 1, None, " (IPF sweeps)")
    max_cells = opts.get("max_cells", DEFAULT_MAX_CELLS)
    max_cells = whole_number("max_cells", max_cells, 1)
    fit = _choice("fit", opts.get("fit", "auto"), FITS)
    synthesis = _choice("synthesis", opts.get("synthesis", "sample"), SYNTHESIS)
    share = opts.get("one_way_share", "auto")
    if share != "auto":
        share = real_number("one_way_share", share, 0, 0.9,
                            hint=" (the share of ε for the one-way margins; 0 measures only the listed margins, "
                                 "as synthpop does, or 'auto')")
    out = IpfOptions(
        margins=margins,
        prior=prior,
        noise=_choice("noise", opts.get("noise", "discrete_laplace"), NOISE),
        positivity=_choice("positivity", opts.get("positivity", "clip"), POSITIVITY),
        tol=float(tol),
        max_iter=int(max_iter),
        synthesis=synthesis,
        max_cells=int(max_cells),
        fit=fit,
        one_way_share=share if share == "auto" else float(share),
    )
    if share != "auto" and share > 0 and not _joint(out):
        raise OptionError(f"one_way_share={share:g} splits ε between one-way margins and margins of two or more "
                          "attributes, and margins lists only one-way margins; drop one_way_share (or set it to 0)")
    path = choose_fit(domain, out)
    if synthesis == "round" and path != "dense":
        raise OptionError(f"synthesis='round' needs the dense fit of the full table, and this table is fitted by "
                          f"fit='{path}' ({big_count(domain.size)} cells); use synthesis='sample'")
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


# ------------------------------------------------------------------ post-processing


def makepos(x: np.ndarray, total: float) -> np.ndarray:
    """synthpop's ``makepos``: non-negative cells whose sum is at most ``total``.

    Sort decreasingly; a cell is kept (as its absolute value) while the cumulative
    sum of absolute values, up to and including it, is below ``total``; the rest
    are set to 0. Post-processing of the noisy margin (no data access).
    """
    x = np.asarray(x, dtype=float)
    order = np.argsort(-x, kind="stable")
    drop = order[np.cumsum(np.abs(x[order])) >= total]
    out = x.copy()
    out[drop] = 0.0
    return np.abs(out)


def normsub(x: np.ndarray, total: float) -> np.ndarray:
    """PrivSyn's ``norm_sub``: max(x − δ, 0) with the one δ that makes the cells sum to
    ``total`` (the released record count). Where clipping keeps the positive half of the
    noise on every empty cell, this takes the same shift off every cell, so the many empty
    cells of a wide margin stay near 0. Post-processing of the noisy margin."""
    x = np.asarray(x, dtype=float)
    if total <= 0 or not len(x):
        return np.zeros_like(x)
    v = np.sort(x.ravel())[::-1]
    # with the k largest cells kept, δ = (Σ_k − total)/k; the right k is the largest with v_k > δ
    k = np.arange(1, len(v) + 1)
    delta = (np.cumsum(v) - total) / k
    ok = np.flatnonzero(v > delta)
    d = delta[ok[-1]] if len(ok) else v[0] - total
    return np.clip(x - d, 0.0, None)


def _dense_sweep(p: np.ndarray, prepared) -> None:
    """One IPF sweep over the full table, in place: p ← p · t_S/p_S for each margin S."""
    for t, other, _ in prepared:
        cur = p.sum(axis=other, keepdims=True) if other else p
        p *= np.where((t > 0) & (cur > 0), t / np.where(cur > 0, cur, 1.0), 0.0)


def _sparse_plan(p: np.ndarray, prepared):
    """Support of p (its positive cells) and, per margin, the cell → margin-cell map.

    A cell that is 0 stays 0 under multiplicative updates, so once every margin has
    been applied once, IPF only ever touches the support. Each margin gets a CSR
    matrix summing support cells into margin cells (p_S = A_S q) and the index
    array to broadcast the ratio back (q ← q · r[idx]).
    """
    shape = p.shape
    live = np.flatnonzero(p.ravel() > 0)
    codes = np.unravel_index(live, shape)
    cols = np.arange(len(live))
    plan = []
    for t, _, ax in prepared:
        mshape = [shape[a] for a in ax]
        idx = np.ravel_multi_index(tuple(codes[a] for a in ax), mshape)
        A = sp.csr_matrix((np.ones(len(live)), (idx, cols)), shape=(math.prod(mshape), len(live)))
        plan.append((A, idx, t.ravel()))
    return live, plan


def _sparse_sweep(q: np.ndarray, plan) -> None:
    """One IPF sweep on the support values q, in place (same arithmetic as the dense sweep)."""
    for A, idx, t in plan:
        cur = A @ q
        q *= np.where((t > 0) & (cur > 0), t / np.where(cur > 0, cur, 1.0), 0.0).take(idx)


#: use the support-only sweep when the support is at most this share of the table
SPARSE_SHARE = 0.5
#: ... and its index arrays (support cells × margins) stay below this many entries
SPARSE_MAX_ENTRIES = 20_000_000


def scaled_targets(targets, axes, shape, total: float) -> tuple[list[tuple[tuple[int, ...], np.ndarray]], int]:
    """The margins as IPF fits them: each target rescaled to sum to ``total`` (synthpop rescales every
    noisy margin to the released record count), all-zero ones left out (they carry no information).
    Returns ([(axes, target)], how many were left out). Post-processing."""
    out, skipped = [], 0
    for t, ax in zip(targets, axes):
        ax = tuple(int(a) for a in ax)
        t = np.asarray(t, dtype=float).reshape([shape[a] for a in ax])
        if np.any(t < 0) or not np.all(np.isfinite(t)):
            raise ValueError("IPF targets must be finite and non-negative")
        tot = t.sum()
        if tot <= 0:
            skipped += 1
            continue
        out.append((ax, t * (total / tot)))
    return out, skipped


def ipf_junction_tree(targets, axes, shape, tol: float = 1e-3, max_iter: int = 5000, total: float = 1.0,
                      tree: JunctionTree | None = None) -> tuple[DecomposableModel, dict]:
    """The dense IPF (:func:`ipf`) held as the clique tables of the margins' junction tree.

    The margins are visited in the given order, so the iterates are the dense fit's
    (:mod:`dpcore.estimate.junction_tree`); it stops by the dense fit's rule applied to the clique
    tables (no cell moved by ``tol`` or more over a sweep), or after ``max_iter`` sweeps.
    Returns (the model, info with iterations, max_change, converged, skipped_margins, lost_mass).
    No data access, no randomness."""
    shape = tuple(int(s) for s in shape)
    scaled, skipped = scaled_targets(targets, axes, shape, total)
    tree = tree or JunctionTree.build(shape, [tuple(int(a) for a in ax) for ax in axes])
    model, fit = DecomposableModel.fit(shape, dict(scaled), total, max_sweeps=max_iter, tol=tol, tree=tree,
                                       order="given", stop="change")
    return model, {"iterations": fit["sweeps"], "max_change": fit["max_change"], "converged": bool(fit["converged"]),
                   "skipped_margins": skipped, "lost_mass": fit["lost_mass"]}


def ipf(targets, axes, shape, tol: float = 1e-3, max_iter: int = 5000, total: float = 1.0) -> tuple[np.ndarray, dict]:
    """Iterative proportional fitting of a table of ``shape`` to margin ``targets``.

    ``axes[i]`` is the increasing tuple of table axes of ``targets[i]`` (an array of
    shape ``[shape[a] for a in axes[i]]``, non-negative). Every target is rescaled to
    sum to ``total`` (synthpop rescales each noisy margin to the same total, so
    mipfp's ``Ipfp`` works on counts); a target that is all zero carries no
    information and is skipped. From the uniform table, each sweep applies, per
    margin S in order, p ← p · t_S/p_S (0 where t_S or p_S is 0), broadcasting the
    ratio over the other axes, in place. It stops when no cell moved by ``tol`` or
    more over a sweep (mipfp's rule) or after ``max_iter`` sweeps.

    Speed: the first sweep runs on the full table; after it every cell outside the
    support (a zero in some target) is 0 and stays 0, so later sweeps run on the
    support only (exactly the same arithmetic) when it is small.

    Returns (fitted table summing to ``total``, info) with info = iterations,
    max_change, converged, skipped_margins, support. No data access, no randomness.
    """
    shape = tuple(int(s) for s in shape)
    ndim = len(shape)
    size = math.prod(shape)
    scaled, skipped = scaled_targets(targets, axes, shape, total)
    prepared = [(t.reshape([shape[i] if i in ax else 1 for i in range(ndim)]), tuple(i for i in range(ndim) if i not in ax), ax)
                for ax, t in scaled]
    p = np.full(shape, total / size)
    info = {"iterations": 0, "max_change": 0.0, "converged": True, "skipped_margins": skipped, "support": size}
    if not prepared:
        return p, info
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        prev = p.copy()
        _dense_sweep(p, prepared)
        change = float(np.abs(p - prev).max())
        it, converged = 1, change < tol
        live = None
        if not converged and it < max_iter:
            n_live = int(np.count_nonzero(p))
            if n_live == 0:  # the noisy margins' zeros exclude every cell: a fixed point (lost_mass below)
                converged = True
            elif n_live <= SPARSE_SHARE * size and n_live * len(prepared) <= SPARSE_MAX_ENTRIES:
                live, plan = _sparse_plan(p, prepared)
                q = p.ravel()[live]
                prev = np.empty_like(q)
                while it < max_iter and not converged:
                    np.copyto(prev, q)
                    _sparse_sweep(q, plan)
                    it += 1
                    change = float(np.abs(q - prev).max())
                    converged = change < tol
                p = np.zeros(size)
                p[live] = q
                p = p.reshape(shape)
            else:
                while it < max_iter and not converged:
                    np.copyto(prev, p)
                    _dense_sweep(p, prepared)
                    it += 1
                    change = float(np.abs(p - prev).max())
                    converged = change < tol
    s = p.sum()
    info.update(iterations=it, max_change=change, converged=bool(converged), support=int(np.count_nonzero(p)))
    if not s > 0:
        info["lost_mass"] = True
        return np.full(shape, total / size), info
    return p * (total / s), info


# ------------------------------------------------------------------ one set


def _joint(opts: IpfOptions) -> tuple:
    """The listed margins of two or more attributes."""
    return tuple(g for g in opts.margins if len(g) > 1)


def one_way_share(domain: Domain, opts: IpfOptions, eps: float, neighbours: Neighbours, n: float,
                  path: str | None = None, definition=PureDP()) -> float:
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


def measured_margins(domain: Domain, opts: IpfOptions, eps: float, share: float) -> list[tuple[tuple, float, str]]:
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


def noisy_margins(X, domain: Domain, opts: IpfOptions, eps: float, rng, ledger: Ledger, ctx: ReleaseContext,
                  positivity: bool = True, share: float = 0.0):
    """Release the margins of :func:`measured_margins` (the listed ones at ε/|M| each, or with
    ``share`` > 0 every one-way margin at ε·share/p and the others at ε(1 − share)/|M'|; see
    the module docstring for the proof).

    ``X``: records (n, p) or their :class:`dpcore.counting.count_table.CountTable` (the same counts).
    Returns (axes per margin, noisy margin arrays: non-negative after ``opts.positivity``,
    or as released plus the prior when ``positivity`` is False, the noise variance per
    margin). Charges ``ledger`` once per margin: its ε, the notion's count sensitivity,
    parallel over the cells.
    """
    shape, names = domain.shape, domain.names
    groups = measured_margins(domain, opts, eps, share)
    hs = ctx.neighbours.histogram_sensitivity
    axes, released, variances = [], [], []
    for g, eps_m, what in groups:
        ax = tuple(names.index(a) for a in g)
        mshape = tuple(shape[a] for a in ax)
        cells = math.prod(mshape)
        noisy, mech = measure(X, shape, ax, eps_m, ctx.neighbours, rng, ledger, f"margin {' × '.join(g)}",
                              f"{what}, sequential composition; prior {opts.prior:g}/{cells} per cell added after noise",
                              noise=opts.noise, subset=f"{cells} cells of the {' × '.join(g)} margin (disjoint)",
                              definition=ctx.definition)
        noisy = noisy.ravel()
        noisy += opts.prior / cells
        if not positivity:
            pass
        elif opts.positivity == "normsub":
            noisy = normsub(noisy, float(ctx.n_out))
        elif opts.positivity == "makepos":
            noisy = makepos(noisy, ctx.n_out + opts.prior)  # the released count, never the raw n
        else:
            np.clip(noisy, 0.0, None, out=noisy)
        axes.append(ax)
        released.append(noisy.reshape(mshape))
        variances.append(mech.variance)
    return axes, released, variances


#: the margins count as noise-dominated (see :func:`noise_ratio`) above this ratio
NOISE_DOMINATED = 1.0
#: sweeps of the independence fit of the one-way margins in the noise-dominated regime
ONE_WAY_SWEEPS = 20
#: ``one_way_share="auto"``: the share of ε measuring the one-way margins in that regime
#: (measured on ``cps_voter_wide``, bench/RESULTS.md)
AUTO_ONE_WAY_SHARE = 0.5


def _per_margin(variance, k: int) -> list[float]:
    """One noise variance per margin: ``variance`` is one for all or a sequence of k."""
    return [float(v) for v in variance] if np.ndim(variance) else [float(variance)] * k


def noise_ratio(axes, shape, variance, n: float) -> float:
    """Median over the margins of the noise's expected L2 norm, σ·√cells, divided by the record
    count n (the largest L2 norm a margin of n records can have). A public quantity: it reads
    only the domain, the noise variance (one, or one per margin) and the released record count."""
    if n <= 0:
        return math.inf
    var = _per_margin(variance, len(axes))
    return float(np.median([math.sqrt(v * math.prod(int(shape[a]) for a in ax)) for v, ax in zip(var, axes)])) / n


def _shrink_to_uniform(est: np.ndarray, cell_variance: float, n: float) -> np.ndarray:
    """Positive-part James–Stein shrinkage of a one-way estimate towards uniform (total n),
    then :func:`normsub`."""
    d = len(est)
    r = est - n / d
    rr = float((r ** 2).sum())
    return normsub(n / d + (max(0.0, 1.0 - d * cell_variance / rr) if rr > 0 else 0.0) * r, n)


def one_way_margins(raw, axes, shape, variance, n: float, independence_fit: bool = False) -> list[np.ndarray]:
    """Each attribute's one-way margin (counts summing to n) estimated from noisy margins.

    Start: the inverse-variance weighted mean of the projections of every margin holding it
    (a projection of a margin S onto a sums |S|/d_a noisy cells: per-cell variance
    σ²|S|/d_a), shrunk towards uniform (:func:`_shrink_to_uniform`). With
    ``independence_fit``: then ``ONE_WAY_SWEEPS`` sweeps of least squares under independence,
    y_S ≈ n ⊗_{a∈S} q_a: each q_a from every margin holding it, contracted with the other
    attributes' current q_b (per-cell variance σ²/(n² Π‖q_b‖²)), shrunk and made
    non-negative again. Where a partner's margin is far from uniform this weights its
    levels by their share instead of summing them, which cuts the noise; it is biased by
    the interactions, so it is used only where noise dominates (:func:`shrink_margins`).
    ``variance``: σ², one for all margins or one per margin (a measured one-way margin
    then weighs in by its own precision). Post-processing."""
    p = len(shape)
    var = _per_margin(variance, len(axes))
    num = [np.zeros(int(d)) for d in shape]
    den = [0.0] * p
    for y, ax, v in zip(raw, axes, var):
        for i, a in enumerate(ax):
            other = tuple(j for j in range(len(ax)) if j != i)
            w = shape[a] / (v * y.size) if v > 0 else 1.0
            num[a] += w * (y.sum(axis=other) if other else y)
            den[a] += w
    one = [_shrink_to_uniform(num[a] / den[a], 1.0 / den[a], n) if den[a] > 0 else np.full(int(shape[a]), n / shape[a])
           for a in range(p)]
    if not independence_fit or min(var, default=0.0) <= 0 or n <= 0:
        return one
    for _ in range(ONE_WAY_SWEEPS):
        q = [o / n for o in one]
        new = []
        for a in range(p):
            nm, dn = np.zeros(int(shape[a])), 0.0
            for y, ax, v in zip(raw, axes, var):
                if a not in ax:
                    continue
                i = ax.index(a)
                rest = [b for b in ax if b != a]
                t = np.moveaxis(y, i, 0)
                for b in rest:  # contract the other attributes with their current shares
                    t = np.tensordot(t, q[b], axes=([1], [0]))
                nm += t / v
                dn += n * math.prod(float(q[b] @ q[b]) for b in rest) / v
            # est is in shares; its per-cell variance in counts is n/dn
            new.append(_shrink_to_uniform(nm / dn * n, n / dn, n) if dn > 0 else one[a])
        one = new
    return one


def shrink_margins(raw, axes, shape, variance, n: float) -> tuple[list[np.ndarray], list[float]]:
    """Denoise noisy margins before the record fit (post-processing; docs/methods/ipf.md).

    1. Each attribute's one-way margin q_a (:func:`one_way_margins`).
    2. Each margin y_S is shrunk towards the independence table I_S = n Π_a (q_a/n) of
       those one-way margins: ŷ_S = I_S + λ_S (y_S − I_S) with
       λ_S = max(0, 1 − |S| σ² / ‖y_S − I_S‖²) (James & Stein 1961, positive part): the
       interaction the noisy margin shows is kept in proportion to how far it stands out
       of the noise it is known to carry, then made non-negative with total n (:func:`normsub`).

    When the margins are noise-dominated (:func:`noise_ratio` above ``NOISE_DOMINATED``, a
    public fact), a margin's own residual cannot tell its interaction from noise: the
    one-way margins are then refined by the independence fit, and one λ is pooled over all
    margins of two or more attributes, λ = max(0, 1 − Σ_S |S| σ_S² / Σ_S ‖y_S − I_S‖²)
    (measured on ``cps_voter_wide``, bench/RESULTS.md); a one-way margin's target is then its
    estimate q_a itself (λ = 0: it already holds that margin's measurement). σ² is the public
    noise variance per cell (one, or one per margin); n the released record count. Returns the
    targets and the λ_S.
    """
    axes = [tuple(ax) for ax in axes]
    var = _per_margin(variance, len(axes))
    dominated = noise_ratio(axes, shape, var, n) > NOISE_DOMINATED
    one = one_way_margins(raw, axes, shape, var, n, independence_fit=dominated)
    parts = []
    for y, ax, v in zip(raw, axes, var):
        ind = np.full((), float(n))
        for a in ax:
            q = one[a] / n if n > 0 else np.full(len(one[a]), 1.0 / len(one[a]))
            ind = np.multiply.outer(ind, q)
        r = y - ind
        parts.append((ind, r, float((r ** 2).sum()), v * y.size))
    if dominated:
        joint = [p for p, ax in zip(parts, axes) if len(ax) > 1]
        rr = sum(p[2] for p in joint)
        pooled = max(0.0, 1.0 - sum(p[3] for p in joint) / rr) if rr > 0 else 0.0
        lams = [pooled if len(ax) > 1 else 0.0 for ax in axes]
    else:
        lams = [max(0.0, 1.0 - noise / rr) if rr > 0 else 0.0 for _, _, rr, noise in parts]
    return [normsub(ind + lam * r, n) for (ind, r, _, _), lam in zip(parts, lams)], lams


def fit_records_capped(targets, axes, shape, n: int, rng, cap: int = RECORD_FIT_MAX_RECORDS):
    """The record fit (:func:`dpcore.estimate.record_fit.fit_records`) of ``n`` records, at most ``cap`` of
    them fitted: above ``cap`` the m = ``cap`` fitted records are each repeated ⌊n/m⌋ times, the
    n mod m left over drawn from them without replacement, and the result shuffled. The margins
    of the n records are then the fitted ones (up to the left-over draw), so the fit to the noisy
    margins is as close as the m-record fit's; the set has at most m distinct records. Up to
    ``cap`` records nothing changes (same draws). Post-processing (no data access)."""
    m = min(int(n), int(cap))
    codes, info = fit_records(targets, axes, shape, m, rng)
    if m == n or m == 0:
        return codes, info
    q, rest = divmod(int(n), m)
    idx = np.concatenate([np.repeat(np.arange(m, dtype=np.int64), q), rng.choice(m, rest, replace=False)])
    rng.shuffle(idx)
    info["fitted_records"] = m
    return codes[idx], info


def synthesize_set(X, domain: Domain, opts: IpfOptions, eps: float, rng, ledger: Ledger, set_label: str,
                   ctx: ReleaseContext):
    """One DP-ipf set at ``eps`` (= ε/m): codes (n, p) and diagnostics.

    ε-cost: ``eps`` exactly, as |M| sequentially composed margin releases at
    eps/|M| (module docstring). Everything after the noisy margins is post-processing.
    """
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
    group = ledger.group(set_label)
    total = float(max(ctx.n_out, 1))
    share = one_way_share(domain, opts, eps, ctx.neighbours, total, path, ctx.definition)
    axes, targets, var = noisy_margins(X, domain, opts, eps, rng, group, ctx, positivity=path != "records",
                                       share=share)
    lams = None
    if path == "records":
        targets, lams = shrink_margins(targets, axes, domain.shape, var, total)
    if path == "dense":
        p, info = ipf(targets, axes, domain.shape, opts.tol, opts.max_iter, total=total)
    elif path == "junction_tree":
        model, info = ipf_junction_tree(targets, axes, domain.shape, opts.tol, opts.max_iter, total=total, tree=jt)
        info["cliques"] = [[domain.names[a] for a in c] for c in jt.cliques]
        info["clique_cells"] = jt.cells
    else:
        codes, info = fit_records_capped(targets, axes, domain.shape, ctx.n_out, rng)
        info.pop("history", None)
        info["shrinkage_mean"] = float(np.mean(lams))
    info["fit"] = path
    diag = dict(info, margins=len(axes), one_way_share=share, warnings=[])
    if path == "records" and not info["converged"]:
        diag["warnings"].append(
            f"the record fit (GUM) was still improving after {info['iterations']} sweeps; its records are "
            f"{info['max_change']:.3g} (mean total-variation distance) from the noisy margins")
    elif not info["converged"]:
        diag["warnings"].append(
            f"IPF did not converge within max_iter={opts.max_iter}; results may not match the noisy margins "
            f"(the last sweep moved a fitted cell count by {info['max_change']:.3g} ≥ tol={opts.tol:g})"
        )
    if info["skipped_margins"]:
        diag["warnings"].append(
            f"{info['skipped_margins']} noisy margin(s) were all zero after clipping and were left out of the fit; raise ε or the prior"
        )
    if info.get("lost_mass"):
        diag["warnings"].append("the noisy margins' zero cells exclude every cell of the table; records were drawn uniformly")
    used = {domain.names[a] for ax in axes for a in ax}  # measured, the one-way share's margins included
    missed = [a for a in domain.names if a not in used]
    if missed:
        diag["warnings"].append(
            f"attribute(s) {', '.join(missed)} are in no margin, so they are synthesised as uniform and independent of the rest"
        )
    if path == "records":
        return codes, diag
    if path == "junction_tree":
        return model.sample(ctx.n_out, rng), diag
    cells = draw_cells(p.ravel(), ctx.n_out, opts.synthesis, rng)
    return cell_codes(cells, domain.shape), diag


def run_set(X, domain, opts, plan, eps_set, rng, ledger, label, ctx):
    """Registry adapter: one DP-ipf set (ε = ``eps_set``, see :func:`synthesize_set`)."""
    codes, diag = synthesize_set(X, domain, opts, eps_set, rng, ledger, label, ctx)
    return codes, None, diag
