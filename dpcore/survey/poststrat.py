"""DP post-stratification: bin selection, DP IPF and weighted counts (Merrill 2021, ch. 7).

The bins, weights, their bounds and the bin selection are in :mod:`dpcore.survey.bins`;
this module holds DP IPF, the weighted count and the pipeline.

Notation: a *binning strategy* for a column is a list of candidate *sets of bins*, each a
partition of the column's public base levels (Example 7.5.5). N̂(S) is the known
population total of bin S (the sum of its base levels' totals, Remark 7.5.1). Base
weights bwt(x) come from the sampling design and lie in a public range [G', G]. The
post-stratified weight of x under the set of bins 𝒮 is (Def 7.5.3)

    wt(x) = bwt(x) · N̂(S(x)) / Σ_{y ∈ S(x) ∩ D} bwt(y).

* W_0 (7.3), the *max potential weight*: the largest weight of a record in D, of a record
  that could be added (N̂(S)·G/(G + Σ_S bwt), Remark 7.3.7), or N̂ of an empty bin.
* W_k = max over datasets k steps away of W_0; Prop 7.3.8 (7.2.3 for equal weights):
  per bin with n_S > k records, the larger of DW_k (keep the heaviest record, delete the
  next k heaviest) and AW_k (delete the k heaviest, add one of weight G); N̂(S) if n_S ≤ k.
* Bin selection (Def 7.1.2, Thm 7.1.3): the exponential mechanism with score
  |𝒮|/W_0^𝒮(D) and sensitivity Δ (7.2) = max_𝒮 |𝒮|·G/(G'·min_{S∈𝒮} N̂(S)); ε_1-DP.
* DP IPF (Thm 7.3.2, §7.3): the counts of the join cells of the chosen bins plus
  independent count noise at ε_2 (one record is in one cell: parallel composition),
  a non-negative collapse (post-processing), then raking to the known marginal totals
  (post-processing; :class:`dpcore.estimate.raking.Raking`, whose :func:`rake` this module
  names too). The raked table T estimates the join-bin totals N̂(S) := T(S).
* Weighted count (Prop 7.4.2, Cor 7.4.3): q(D) = Σ_x wt(x)·q(x) plus
  2(γ−1)·SS_β(D)/ε_3 · X, X ~ GeneralizedCauchy(γ), β = ε_3/(2(γ−1)),
  SS_β = max_k e^{−βk} W_k; ε_3-DP for γ ≥ 2 (see :mod:`dpcore.survey._smooth`).

By sequential composition the whole pipeline is (ε_1 + ε_2 + ε_3)-DP; the ledger says so.

Neighbours: W_k, the selection sensitivity Δ and the join-table counts are all bounds for
adding or removing one record, so the pipeline is for add/remove neighbours only
(``neighbours="replace"`` is refused); n is not public.

What holds as implemented (docs/survey-privacy.md): the bin selection (exact exponential
mechanism) and the join table (exact discrete Laplace by default) are ε-DP as run. The
weighted count uses a floating-point generalized Cauchy sampler that is not hardened:
its value is rounded to a public power-of-two grid (2^-20 of the noise scale the count
would have if SS_β were one person, i.e. of 2(γ−1)/ε_3; a grid is post-processing, so
this choice affects resolution only), and its ε_3 is stated for the ideal real-valued
mechanism.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpcore.errors import InputError, OptionError
from dpcore.estimate.raking import Raking
from dpcore.measure.margins import NoisyMargin
from dpcore.privacy.budget import Epsilon
from dpcore.privacy.ledger import Ledger, check_epsilon
from dpcore.privacy.measurement import Measurement
from dpcore.privacy.mechanisms import exponential_probabilities, noise_for
from dpcore.privacy.neighbours import ADD_REMOVE
from dpcore.privacy.stability import Sensitivity
from dpcore.survey._privacy import label, notion_for, statement
from dpcore.survey._smooth import check_gamma, smooth_grid, smooth_measurement, smooth_value
from dpcore.survey.bins import (
    Binning,
    bin_totals,
    check_base_weights,
    check_weight_range,
    level_codes,
    level_totals,
    max_potential_weight,
    post_weights,
    select_bins,
    selection_scores,
    selection_sensitivity,
    smooth_weight_bound,
)

_WHY = ("W_k (Prop 7.3.8), the selection sensitivity (7.2) and the join-table counts bound what adding or "
        "removing one record changes; replace-one bounds are not derived")

__all__ = [
    "nonnegative_collapse",
    "dp_ipf",
    "weighted_count",
    "expected_noise_sd",
    "PostStratRelease",
    "poststratify_release",
]


# ------------------------------------------------------------------ DP IPF


def _collapse(T, groups):
    out = T
    for ax, g in enumerate(groups):
        out = np.add.reduceat(out, [grp[0] for grp in g], axis=ax)
    return out


def nonnegative_collapse(T_init: np.ndarray, structural: np.ndarray | None = None):
    """Merge neighbouring bins until every non-structural cell is > 0 (§7.3).

    Greedy: take the smallest bad cell and, over every column and both neighbours of the
    cell's bin in it, apply the merge that leaves the fewest bad cells (then the largest
    minimum). Returns (T_0, groups) with groups[i] a tuple of tuples of original bin
    indices. Post-processing of the noisy table.
    """
    T_init = np.asarray(T_init, dtype=float)
    S = np.zeros(T_init.shape, bool) if structural is None else np.asarray(structural, bool)
    groups = [tuple((j,) for j in range(s)) for s in T_init.shape]

    def state(gr):
        T = _collapse(T_init, gr)
        st = _collapse(S.astype(np.int64), gr) == _collapse(np.ones(S.shape, np.int64), gr)
        bad = (T <= 0) & ~st
        return T, st, bad

    while True:
        T, st, bad = state(groups)
        if not bad.any():
            return np.where(st, 0.0, T), tuple(groups)
        cell = np.unravel_index(np.argmin(np.where(bad, T, np.inf)), T.shape)
        best = None
        for ax, g in enumerate(groups):
            if len(g) < 2:
                continue
            j = cell[ax]
            for nb in (j - 1, j + 1):
                if 0 <= nb < len(g):
                    lo = min(j, nb)
                    new = list(g[:lo]) + [g[lo] + g[lo + 1]] + list(g[lo + 2:])
                    trial = list(groups)
                    trial[ax] = tuple(new)
                    Tt, _, bt = state(trial)
                    key = (int(bt.sum()), -float(np.min(np.where(bt, Tt, np.inf), initial=np.inf)))
                    if best is None or key < best[0]:
                        best = (key, trial)
        if best is None:
            raise OptionError(
                "the noisy table sums to ≤ 0 even after merging every bin; spend more ε on the table "
                "(epsilon_table) or use fewer attributes"
            )
        groups = best[1]


def dp_ipf(codes, margins, shape, epsilon: float, ledger: Ledger, rng, *, structural_zeros=None,
           noise: str | None = None, tol: float = 1e-10, max_iter: int = 1000):
    """DP IPF (Thm 7.3.2, §7.3): the join table of the chosen bins (``codes``: each record's bin
    per column; ``shape``: bins per column) released with count noise at ``epsilon`` (charged to
    ``ledger``), made positive by :func:`nonnegative_collapse`, and raked to the known one-way
    ``margins`` collapsed alike (:class:`dpcore.estimate.raking.Raking`). Returns (the raked
    table, the collapsed groups, the raking's diagnostics)."""
    counts = np.bincount(np.ravel_multi_index(tuple(codes), shape), minlength=int(np.prod(shape))).reshape(shape)
    S = np.zeros(shape, bool) if structural_zeros is None else np.asarray(structural_zeros, bool)
    if S.shape != shape:
        raise OptionError(f"structural_zeros must have the join-table shape {shape}; got {S.shape}")
    if (counts[S] > 0).any():
        raise InputError("records fall in cells declared structural zeros; fix the data or the declaration")
    mech = noise_for(noise, epsilon, 1.0)
    table = Measurement("join table", mech, Sensitivity(1.0, mech.norm), "sample", label(ADD_REMOVE),
                        parallel_over=int((~S).sum()),
                        note="unweighted counts of the join cells of the chosen bins (Thm 7.3.2); one record "
                             "is in one cell, so the cells compose in parallel; structural zeros are not noised")
    noisy = np.where(S, 0.0, table.release(ledger, counts.astype(np.int64) if mech.name == "discrete_laplace"
                                           else counts.astype(float), rng).astype(float))
    T0, groups = nonnegative_collapse(noisy, S)
    collapsed = [np.add.reduceat(mg, [gr[0] for gr in grp]) for mg, grp in zip(margins, groups)]
    known = [NoisyMargin.exact((k,), mg) for k, mg in enumerate(collapsed)]  # public totals
    model, info = Raking(T0, tol=tol, max_iter=max_iter).fit(T0.shape, known,
                                                             total=max(float(mg.sum()) for mg in collapsed))
    return model.table, groups, info


def _group_codes(codes: np.ndarray, groups) -> np.ndarray:
    """Each record's bin mapped to its collapsed group."""
    lut = np.empty(sum(len(x) for x in groups), np.int64)
    for j, x in enumerate(groups):
        lut[list(x)] = j
    return lut[codes]


# ------------------------------------------------------------------ weighted count


def weighted_count(bin_idx, totals, mask, epsilon, rng, *, gamma: float = 4.0, bwt=None, max_bwt: float = 1.0,
                   ledger: Ledger | None = None, label: str = "weighted count"):
    """Σ_x wt(x)·q(x) + 2(γ−1)·SS_β/ε·X with β = ε/(2(γ−1)) (Cor 7.4.3), rounded to the
    public grid 2^-20·2(γ−1)/ε (rounded down to a power of two). ε-DP for add/remove
    neighbours and γ ≥ 2, for the ideal real-valued mechanism (the float sampler is not
    hardened; module docstring). Returns (value, exact, SS_β, scale, β, grid)."""
    eps = check_epsilon(epsilon)
    g = check_gamma(gamma)
    beta = eps / (2.0 * (g - 1.0))
    w = post_weights(bin_idx, totals, bwt)
    exact = float(w[np.asarray(mask, bool)].sum())
    ss = smooth_weight_bound(bin_idx, totals, beta, bwt, max_bwt)
    # grid floor: one person (public); a coarser grid relative to the noise costs resolution only
    def draw():
        return smooth_value(exact, ss, eps, g, rng, 1.0)

    if ledger is not None:  # charged before the draw, so a capped ledger refuses before any noise
        release = smooth_measurement(label, eps, g, beta, "sample",
                                     "post-stratified weighted count, SS_β = max_k e^{−βk} W_k (Prop 7.4.2, 7.3.8)",
                                     smooth_grid(eps, g, 1.0))
        value, scale, grid = release.draw(ledger, draw)
    else:
        value, scale, grid = draw()
    return value, exact, ss, scale, beta, grid


def expected_noise_sd(data: pd.DataFrame, b: Binning, totals: Mapping, epsilon_select: float,
                      epsilon_count: float, gamma: float = 4.0, bwt=None, weight_range=(1.0, 1.0)) -> dict:
    """Example 7.4.4: the noise sd of the weighted count under each candidate, and its
    expectation over the selection probabilities. Curator-side planning (not DP)."""
    lo, hi = check_weight_range(weight_range)
    g = check_gamma(gamma)
    codes = level_codes(data, b)
    base = level_totals(b, totals)
    beta = epsilon_count / (2 * (g - 1))
    var1 = math.sin(math.pi / g) / math.sin(3 * math.pi / g) if g > 3 else math.inf
    ss, sd, w0 = [], [], []
    for i in range(len(b.candidates)):
        bi = b.bin_of_level(i)[codes]
        t = bin_totals(b, i, base)
        s = smooth_weight_bound(bi, t, beta, bwt, hi)
        ss.append(s)
        w0.append(max_potential_weight(bi, t, bwt, hi))
        sd.append(2 * (g - 1) * s / epsilon_count * math.sqrt(var1))
    scores = selection_scores(data, b, totals, bwt, hi)
    probs = exponential_probabilities(scores, epsilon_select, selection_sensitivity(b, totals, lo, hi))
    return {"names": b.names, "W0": np.array(w0), "smooth": np.array(ss), "sd": np.array(sd),
            "probabilities": np.asarray(probs), "expected_sd": float(np.dot(probs, sd))}


# ------------------------------------------------------------------ the pipeline


@dataclass(frozen=True)
class PostStratRelease:
    """A post-stratified weighted count. ``value``, ``selected``, ``bins`` and
    ``population_estimates`` are DP outputs (``statement`` says what holds); ``exact``,
    ``smooth_sensitivity``, ``scale`` and ``selection_probabilities`` depend on the data
    (curator only). ``value`` is a multiple of the public ``grid``."""

    value: float
    exact: float
    epsilon: float
    gamma: float
    beta: float
    selected: dict
    bins: dict
    population_estimates: np.ndarray = field(repr=False)
    ipf: dict | None
    smooth_sensitivity: float
    scale: float
    selection_probabilities: dict = field(repr=False)
    ledger: Ledger = field(compare=False, repr=False)
    grid: float = 0.0
    neighbours: str = ADD_REMOVE

    @property
    def statement(self) -> str:
        return statement(self.epsilon, self.neighbours,
                         given="the public population totals, candidate bins and base-weight range",
                         ideal_only=True)

    @property
    def finite_variance(self) -> bool:
        return self.gamma > 3

    @property
    def noise_sd(self) -> float:
        if not self.finite_variance:
            return math.inf
        g = self.gamma
        return self.scale * math.sqrt(math.sin(math.pi / g) / math.sin(3 * math.pi / g))


def poststratify_release(data: pd.DataFrame, binnings: Sequence[Binning], totals: Mapping, mask, *,
                         epsilon_select: float | Mapping | None, epsilon_count: float,
                         epsilon_table: float | None = None, gamma: float = 4.0, weights: str | None = None,
                         weight_range=None, rng: np.random.Generator, structural_zeros=None,
                         noise: str | None = None, ipf_tol: float = 1e-10, ipf_max_iter: int = 1000,
                         neighbours: str = ADD_REMOVE) -> PostStratRelease:
    """DP post-stratified weighted count of the rows in ``mask`` (module docstring).

    ε_1 = ``epsilon_select`` (split equally over the columns with more than one
    candidate, or a mapping column → ε), ε_2 = ``epsilon_table`` (needed with two or more
    columns: the noisy join table for IPF), ε_3 = ``epsilon_count``. The release is
    (ε_1 + ε_2 + ε_3)-DP by sequential composition (Thm 7.3.1, Remark 7.3.4, Cor 7.4.3),
    for add/remove neighbours (``neighbours="replace"`` is refused), with ε_3 for the
    ideal real-valued mechanism (module docstring).
    """
    nb = notion_for(neighbours, (ADD_REMOVE,), "poststratify_release", _WHY)
    binnings, m = _check_query(data, binnings, mask)
    bwt, lo, hi = check_base_weights(data, weights, weight_range)
    eps3 = check_epsilon(epsilon_count)
    g = check_gamma(gamma)
    sel_eps, eps2 = _split_epsilon(binnings, epsilon_select, epsilon_table)
    requested = sum(sel_eps.values()) + eps2 + eps3
    ledger = Ledger("post-stratified weighted count")
    sel_ledger = ledger.group("bin selection")
    selected, probs, chosen = {}, {}, []
    for b in binnings:
        sb = select_bins(data, b, totals, sel_eps.get(b.column, 0.0) or 1.0, rng, bwt=bwt,
                         weight_range=(lo, hi), ledger=sel_ledger)
        selected[b.column] = sb.name
        probs[b.column] = dict(zip(b.names, sb.probabilities))
        chosen.append(sb.index)
    cell, cell_totals, bins_out, pop, ipf_info = _strata(
        data, binnings, totals, chosen, eps2, ledger, rng, structural_zeros=structural_zeros, noise=noise,
        tol=ipf_tol, max_iter=ipf_max_iter)
    value, exact, ss, scale, beta, grid = weighted_count(cell, cell_totals, m, eps3, rng, gamma=g, bwt=bwt,
                                                         max_bwt=hi, ledger=ledger)
    ledger.assert_total(Epsilon(requested))
    return PostStratRelease(value, exact, requested, g, beta, selected, bins_out, np.asarray(pop), ipf_info,
                            ss, scale, probs, ledger, grid, nb)


def _check_query(data: pd.DataFrame, binnings, mask) -> tuple[list, np.ndarray]:
    """The binnings as a list (one per column) and the query as a boolean row mask."""
    binnings = list(binnings)
    if not binnings:
        raise OptionError("give at least one column to post-stratify on")
    cols = [b.column for b in binnings]
    if len(set(cols)) != len(cols):
        raise OptionError(f"each column may be binned once; got {cols}")
    m = np.asarray(mask.to_numpy() if isinstance(mask, pd.Series) else mask)
    if m.dtype != bool or m.shape != (len(data),):
        raise InputError(f"the query must be a boolean mask with one entry per row ({len(data)} rows)")
    if len(data) == 0:
        raise InputError("the sample has no rows")
    return binnings, m


def _split_epsilon(binnings, epsilon_select, epsilon_table) -> tuple[dict, float]:
    """ε_1 per column with several candidate sets of bins, and ε_2 for the join table
    (0 with one column); refuses an ε given where it would not be spent."""
    multi = [b for b in binnings if len(b.candidates) > 1]
    if isinstance(epsilon_select, Mapping):
        sel_eps = {c: check_epsilon(epsilon_select[c]) for c in (b.column for b in multi)}
    elif multi:
        if epsilon_select is None:
            raise OptionError("choosing among candidate sets of bins needs epsilon_select > 0")
        e1 = check_epsilon(epsilon_select)
        sel_eps = {b.column: e1 / len(multi) for b in multi}
    else:
        if epsilon_select not in (None, 0, 0.0):
            raise OptionError("epsilon_select is only spent when a column has several candidate sets of bins")
        sel_eps = {}
    if len(binnings) > 1:
        eps2 = check_epsilon(epsilon_table) if epsilon_table is not None else None
        if eps2 is None:
            raise OptionError("post-stratifying on two or more columns uses DP IPF: give epsilon_table > 0")
    else:
        if epsilon_table not in (None, 0, 0.0):
            raise OptionError("epsilon_table is only used with two or more columns (DP IPF)")
        eps2 = 0.0
    return sel_eps, eps2


def _strata(data, binnings, totals, chosen, eps2, ledger, rng, *, structural_zeros, noise, tol, max_iter):
    """Each record's stratum and the strata's population totals under the chosen bins: the
    bins themselves for one column, the join cells raked by DP IPF (ε_2, charged to
    ``ledger``) for several. Returns (cell per record, cell totals, bins per column, the
    population estimates, the IPF diagnostics or None)."""
    codes = [b.bin_of_level(i)[level_codes(data, b)] for b, i in zip(binnings, chosen)]
    margins = [bin_totals(b, i, level_totals(b, totals)) for b, i in zip(binnings, chosen)]
    labels = [b.bins(i) for b, i in zip(binnings, chosen)]
    if len(binnings) == 1:
        bins_out = {binnings[0].column: tuple((x,) for x in labels[0])}
        return codes[0], margins[0], bins_out, margins[0], None
    pop, groups, ipf_info = dp_ipf(codes, margins, tuple(len(x) for x in labels), eps2, ledger, rng,
                                   structural_zeros=structural_zeros, noise=noise, tol=tol, max_iter=max_iter)
    cell = np.ravel_multi_index(tuple(_group_codes(c, grp) for c, grp in zip(codes, groups)), pop.shape)
    cell_totals = pop.ravel()
    if (cell_totals[cell] <= 0).any():
        raise OptionError("a record's join cell got an IPF total of 0; declare fewer structural zeros")
    bins_out = {b.column: tuple(tuple(labels[k][j] for j in x) for x in grp)
                for k, (b, grp) in enumerate(zip(binnings, groups))}
    return cell, cell_totals, bins_out, pop, ipf_info
