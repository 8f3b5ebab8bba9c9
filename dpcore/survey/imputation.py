"""DP releases from k-NN-imputed data (Merrill 2021, §6.4) and the two baselines of §6.5.3.

Smooth-sensitivity releases (β = ln 2, γ = 1 + ε/(2 ln 2), noise S(D)/ln 2 · X with X
generalized Cauchy; see :mod:`dpcore.survey._smooth` for why ε ≥ 2 ln 2 is required):

* :func:`release_count`: Cor 6.4.3, S(D) = 1 + L_1(D) (Thm 6.4.2: a removed/added record
  changes its own indicator and those of at most L_1(D) donees; 1 + 2^k L_1 ≤ U_{k+1}(D')
  by Thm 6.3.6, so the bound is ln 2-smooth).
* :func:`release_mean`: Cor 6.4.6, q_s(D) = (1/s) Σ_{S∩D} Y with Y clipped to [a, b] and
  M = max(|a|, |b|): S(D) = (M + L_1(D)(b − a))/s when the subpopulation does not depend on
  the imputed attribute (case 1), M(1 + L_1(D))/s when it does (case 2; Thm 6.4.5 with
  a ≥ 0 gives M = b). With s unknown, Remark 6.4.7: ε/2 buys a noisy s' and s = max(1, s').
* :func:`release_variance`: Cor 6.4.9, q(D) = Σ_{S∩D} (Y − y)²/(s − 1),
  S(D) = m(1 + L_1(D))/(s − 1), m = max((a − y)², (b − y)²) (Thm 6.4.8).

Baselines (§6.5.3), Laplace noise:

* :func:`release_mean_ignoring_missing` / :func:`release_count_ignoring_missing`: drop the
  donees; global sensitivity M/s under add/remove, max(M, b − a)/s under replace (a count:
  1 under both). ε-DP for the notion chosen, also as implemented: counts get exact
  discrete Laplace noise (integer outputs), the mean the floating-point-safe discretised
  Laplace of :mod:`dpcore.privacy.mechanisms` (outputs on its power-of-two grid).
* :func:`release_mean_global` / :func:`release_count_global`: impute, then Laplace with the
  thesis's *optimistic* global bound G = the number of donees per donor (default: all donees
  in the data). The true global sensitivity of imputation is unbounded (Fig 6.1) and G is
  read from the data, so these are comparators, marked ``dp=False``.

Privacy statement (docs/survey-privacy.md). Smooth-sensitivity releases are ε-DP for
add/remove neighbours (L_1(D) is an add/remove bound; ``neighbours="replace"`` is
refused), for the ideal real-valued mechanism: the generalized Cauchy sampler works in
floating point and is not hardened; the value is rounded to a public power-of-two grid
(:func:`dpcore.survey._smooth.smooth_value`). A public size s is a constant the curator
declares, not read from the data.

Subpopulations: ``where`` is a boolean row mask that does not depend on the imputed target;
``target_where`` is a predicate on the (imputed) target values, which makes inclusion depend
on the imputed attribute (case 2).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpcore.errors import InputError, OptionError
from dpcore.privacy.budget import Epsilon
from dpcore.privacy.ledger import Ledger, check_epsilon
from dpcore.privacy.measurement import EXACT_SAMPLER, Measurement
from dpcore.privacy.mechanisms import DiscreteLaplace, Laplace, positive_finite
from dpcore.privacy.neighbours import ADD_REMOVE, REPLACE
from dpcore.privacy.stability import Sensitivity
from dpcore.survey._privacy import label, notion_for, statement
from dpcore.survey._smooth import (
    LN2,
    SmoothRelease,
    ch6_gamma,
    check_ch6_epsilon,
    smooth_grid,
    smooth_measurement,
    smooth_value,
)
from dpcore.survey.knn import KNNImputation

__all__ = [
    "release_count",
    "release_mean",
    "release_variance",
    "BaselineRelease",
    "release_count_ignoring_missing",
    "release_mean_ignoring_missing",
    "release_count_global",
    "release_mean_global",
]


@dataclass(frozen=True)
class BaselineRelease:
    """A Laplace release. ``dp`` is False for the optimistic global-sensitivity comparator.

    ``value`` is a multiple of ``grid`` (1 for counts: discrete Laplace; the discretised
    Laplace's power-of-two grid for means), so no output is impossible under a neighbour.
    """

    value: float
    epsilon: float
    sensitivity: float
    scale: float
    exact: float
    dp: bool
    note: str
    ledger: Ledger = field(compare=False, repr=False)
    details: dict = field(default_factory=dict, compare=False)
    grid: float = 1.0
    neighbours: str = ADD_REMOVE
    noise_variance: float = math.nan

    @property
    def noise_sd(self) -> float:
        return math.sqrt(self.noise_variance) if math.isfinite(self.noise_variance) else math.sqrt(2.0) * self.scale

    @property
    def statement(self) -> str:
        if not self.dp:
            return ("NOT differentially private: the 'global' comparator's sensitivity is read from the data "
                    "and the true global sensitivity of imputation is unbounded")
        return statement(self.epsilon, self.neighbours, given="the declared public bounds and sizes")


# ------------------------------------------------------------------ helpers


def _mask(imp: KNNImputation, where) -> np.ndarray:
    n = len(imp.incomplete)
    if where is None:
        return np.ones(n, bool)
    w = where.to_numpy() if isinstance(where, pd.Series) else np.asarray(where)
    if w.dtype != bool or w.shape != (n,):
        raise InputError(f"where must be a boolean mask with one entry per row ({n} rows)")
    return w


def _target_mask(values: pd.Series, target_where) -> np.ndarray:
    if target_where is None:
        return np.ones(len(values), bool)
    if not callable(target_where):
        raise OptionError("target_where must be a function of the target values returning a boolean mask")
    w = np.asarray(target_where(values))
    if w.dtype != bool or w.shape != (len(values),):
        raise InputError("target_where must return one boolean per row")
    return w


def _bounds(bounds) -> tuple[float, float, float]:
    try:
        a, b = (float(x) for x in bounds)
    except (TypeError, ValueError):
        raise OptionError(f"bounds must be two numbers (a, b) with a < b; got {bounds!r}") from None
    if not (math.isfinite(a) and math.isfinite(b) and a < b):
        raise OptionError(f"bounds must be finite with a < b; got {bounds!r}. They are public top/bottom codes")
    return a, b, max(abs(a), abs(b))


def _numeric(values: pd.Series, name: str) -> np.ndarray:
    if not pd.api.types.is_numeric_dtype(values):
        raise InputError(f"column {name!r} must be numeric for a mean or variance; it is {values.dtype}")
    return values.to_numpy(dtype=float)


def _size(size, what) -> float:
    return positive_finite(what, size)


_SMOOTH_WHY = ("L_1(D) bounds the donees whose donors change when one record is added or removed (Thm 6.4.2); "
               "no replace-one bound is derived, and a replace is two such steps (2ε)")


def _smooth_notion(neighbours, what):
    return notion_for(neighbours, (ADD_REMOVE,), what, _SMOOTH_WHY)


def _smooth_part(ledger, label, exact, smooth, eps, rng, subset, note, floor):
    """Released value (on the public grid), γ, scale, grid. ``floor`` is a public lower bound on S."""
    if not (math.isfinite(smooth) and math.isfinite(floor)):
        raise OptionError(f"{label}: the public bounds and size make the smooth sensitivity overflow; declare "
                          "tighter bounds a,b (or a larger size s)")
    gamma = ch6_gamma(eps)
    # charged before the draw (public grid), so a capped ledger refuses before any noise
    release = smooth_measurement(label, eps, gamma, LN2, subset, note, smooth_grid(eps, gamma, floor))
    val, scale, grid = release.draw(ledger, lambda: smooth_value(exact, smooth, eps, gamma, rng, floor))
    return val, gamma, scale, grid


def _noisy_size(imp, mask, eps, rng, ledger, depends_on_target, subset):
    """Remark 6.4.7: a noisy subpopulation size at ε, then s = max(1, s') (add/remove)."""
    n_sub = float(mask.sum())
    if depends_on_target:
        val, _, _, _ = _smooth_part(ledger, "subpopulation size", n_sub, 1.0 + imp.L1, eps, rng, subset,
                                    "count |S∩D| (Cor 6.4.3, S = 1 + L_1(D))", 1.0)
    else:
        size = Measurement("subpopulation size", DiscreteLaplace.calibrate(eps, 1.0), Sensitivity(1.0, "l1"), subset,
                           label(ADD_REMOVE),
                           sampler=EXACT_SAMPLER,
                           note="count |S∩D|; inclusion does not use the imputed attribute, so its global "
                                "sensitivity is 1 (§6.4.1) and discrete Laplace is used instead of Cor 6.4.3")
        val = float(size.release(ledger, np.int64(n_sub), rng))
    return max(1.0, val), n_sub


# ------------------------------------------------------------------ smooth releases


def release_count(imp: KNNImputation, epsilon: float, rng: np.random.Generator, *, where=None,
                  target_where: Callable | None = None, neighbours: str = ADD_REMOVE) -> SmoothRelease:
    """ε-DP count (add/remove neighbours, ideal mechanism: see the module docstring) of rows
    in ``where`` whose imputed target satisfies ``target_where`` (Cor 6.4.3; needs
    ε ≥ 2 ln 2, finite noise variance for ε > 4 ln 2)."""
    nb = _smooth_notion(neighbours, "release_count")
    eps = check_ch6_epsilon(epsilon, "release_count")
    mask = _mask(imp, where) & _target_mask(imp.values, target_where)
    exact = float(mask.sum())
    smooth = 1.0 + imp.L1
    ledger = Ledger("imputed count (smooth sensitivity)")
    val, gamma, scale, grid = _smooth_part(ledger, "count", exact, smooth, eps, rng, "imputed table",
                                           "frequency query on k-NN-imputed data, S(D) = 1 + L_1(D) (Cor 6.4.3)",
                                           1.0)
    ledger.assert_total(Epsilon(eps))
    return SmoothRelease(val, eps, gamma, LN2, smooth, scale, exact, ledger, "count", {"L1": imp.L1}, grid, nb)


def release_mean(imp: KNNImputation, epsilon: float, rng: np.random.Generator, *, bounds, where=None,
                 target_where: Callable | None = None, size: float | None = None,
                 neighbours: str = ADD_REMOVE) -> SmoothRelease:
    """ε-DP mean (add/remove neighbours, ideal mechanism: see the module docstring) of the
    imputed target over a subpopulation (Cor 6.4.6).

    ``size`` is the public subpopulation size s. If None, Remark 6.4.7: ε/2 releases a
    noisy size (Laplace when inclusion does not use the target, Cor 6.4.3 otherwise) and
    ε/2 the sum divided by s = max(1, s'). The smooth part needs its ε ≥ 2 ln 2.
    """
    nb = _smooth_notion(neighbours, "release_mean")
    eps = check_epsilon(epsilon)
    a, b, M = _bounds(bounds)
    y = np.clip(_numeric(imp.values, imp.target), a, b)
    case2 = target_where is not None
    mask = _mask(imp, where) & _target_mask(imp.values, target_where)
    ledger = Ledger("imputed mean (smooth sensitivity)")
    details = {"L1": imp.L1, "case": 2 if case2 else 1}
    if size is None:
        eps_mean = check_ch6_epsilon(eps / 2, "release_mean with unknown size (ε/2 for the mean, Remark 6.4.7)")
        s, n_sub = _noisy_size(imp, mask, eps / 2, rng, ledger, case2, "imputed table")
        details["noisy_size"] = s
    else:
        eps_mean = check_ch6_epsilon(eps, "release_mean")
        s = _size(size, "size (the public subpopulation size s)")
    total = float(y[mask].sum())
    exact = total / s
    smooth = (M * (1.0 + imp.L1) if case2 else M + imp.L1 * (b - a)) / s
    note = ("mean over a subpopulation that depends on the imputed attribute, S(D) = M(1 + L_1(D))/s "
            if case2 else "mean over a subpopulation not using the imputed attribute, S(D) = (M + L_1(D)(b−a))/s ")
    # S(D) ≥ M/s in both cases: a public floor (s is public or already released)
    val, gamma, scale, grid = _smooth_part(ledger, "mean", exact, smooth, eps_mean, rng, "imputed table",
                                           note + f"with Y clipped to [{a:g}, {b:g}], M = {M:g} (Cor 6.4.6)", M / s)
    ledger.assert_total(Epsilon(eps))
    return SmoothRelease(val, eps, gamma, LN2, smooth, scale, exact, ledger, "mean", details, grid, nb)


def release_variance(imp: KNNImputation, epsilon: float, rng: np.random.Generator, *, bounds, where=None,
                     target_where: Callable | None = None, size: float | None = None,
                     center: float | None = None, neighbours: str = ADD_REMOVE) -> SmoothRelease:
    """ε-DP variance (add/remove neighbours, ideal mechanism: see the module docstring) of
    the imputed target over a subpopulation (Cor 6.4.9).

    ``size`` (s > 1) and ``center`` (y in [a, b]) are treated as constants. Each one not
    given is first released privately (size as in Remark 6.4.7, centre with
    :func:`release_mean`); ε is split equally over the parts.
    """
    nb = _smooth_notion(neighbours, "release_variance")
    eps = check_epsilon(epsilon)
    a, b, M = _bounds(bounds)
    y = np.clip(_numeric(imp.values, imp.target), a, b)
    case2 = target_where is not None
    mask = _mask(imp, where) & _target_mask(imp.values, target_where)
    parts = 1 + (size is None) + (center is None)
    share = eps / parts
    eps_var = check_ch6_epsilon(share, f"release_variance (ε/{parts} for the variance)")
    ledger = Ledger("imputed variance (smooth sensitivity)")
    details = {"L1": imp.L1}
    if size is None:
        s, _ = _noisy_size(imp, mask, share, rng, ledger, case2, "imputed table")
        details["noisy_size"] = s
    else:
        s = _size(size, "size (the public subpopulation size s)")
    if center is None:
        mean_rel = release_mean(imp, share, rng, bounds=(a, b), where=where, target_where=target_where, size=s)
        ledger.attach(mean_rel.ledger)
        c = float(np.clip(mean_rel.value, a, b))
        details["noisy_center"] = c
    else:
        c = float(center)
        if not (a <= c <= b):
            raise OptionError(f"center must lie in the bounds [{a:g}, {b:g}]; got {center!r}")
    s = max(s, 2.0)  # Thm 6.4.8 needs s > 1 (post-processing of a noisy s')
    m = max((a - c) ** 2, (b - c) ** 2)
    exact = float(((y[mask] - c) ** 2).sum()) / (s - 1.0)
    smooth = m * (1.0 + imp.L1) / (s - 1.0)
    val, gamma, scale, grid = _smooth_part(ledger, "variance", exact, smooth, eps_var, rng, "imputed table",
                                           "Σ(Y − y)²/(s − 1), S(D) = m(1 + L_1(D))/(s − 1) (Cor 6.4.9)",
                                           m / (s - 1.0))
    ledger.assert_total(Epsilon(eps))
    return SmoothRelease(val, eps, gamma, LN2, smooth, scale, exact, ledger, "variance", details, grid, nb)


# ------------------------------------------------------------------ Laplace baselines

_BASELINE_NOTIONS = (ADD_REMOVE, REPLACE)


def _variance(mech) -> float:
    # a grid near the float range (bounds ~1e308 over a tiny s) squares past it: infinite in effect
    try:
        return float(mech.variance)
    except OverflowError:
        return math.inf


def _count_noise(ledger, what, exact, sens, eps, rng, subset, note, nb):
    """Exact discrete Laplace on an integer count: integer output, ε from the mechanism's map."""
    mech = DiscreteLaplace.calibrate(eps, sens)
    count = Measurement(what, mech, Sensitivity(sens, "l1"), subset, label(nb), sampler=EXACT_SAMPLER, note=note)
    return float(count.release(ledger, np.int64(round(exact)), rng)), mech


def _real_noise(ledger, what, exact, sens, eps, rng, subset, note, nb):
    """Discretised Laplace (dpcore.privacy.mechanisms.Laplace): output on its power-of-two grid."""
    mech = Laplace.calibrate(eps, sens)
    value = Measurement(what, mech, Sensitivity(sens, "l1"), subset, label(nb),
                        sampler="discretised, floating-point safe", note=note)
    return float(value.release(ledger, exact, rng)), mech


def release_count_ignoring_missing(imp: KNNImputation, epsilon: float, rng, *, where=None,
                                   target_where: Callable | None = None,
                                   neighbours: str = ADD_REMOVE) -> BaselineRelease:
    """Count over the records with the target observed (donees dropped), discrete Laplace
    at sensitivity 1: adding, removing or replacing one record moves one count by at most
    1, so it is ε-DP under either notion (Ghosh et al. 2009), with an exact sampler."""
    nb = notion_for(neighbours, _BASELINE_NOTIONS, "release_count_ignoring_missing", "")
    eps = check_epsilon(epsilon)
    obs = ~imp.incomplete
    tm = np.zeros(len(obs), bool)
    tm[obs] = _target_mask(imp.observed[obs], target_where)
    mask = _mask(imp, where) & obs & tm
    exact = float(mask.sum())
    ledger = Ledger("count ignoring missing (discrete Laplace)")
    val, mech = _count_noise(ledger, "count", exact, 1.0, eps, rng, "complete records", "missing values dropped", nb)
    ledger.assert_total(Epsilon(eps))
    return BaselineRelease(val, eps, 1.0, mech.scale, exact, True, "ignore missing + discrete Laplace", ledger,
                           grid=1.0, neighbours=nb, noise_variance=_variance(mech))


def release_mean_ignoring_missing(imp: KNNImputation, epsilon: float, rng, *, bounds, where=None,
                                  size: float | None = None, neighbours: str = ADD_REMOVE) -> BaselineRelease:
    """Mean over the records with the target observed, Y clipped to [a, b]; Laplace.

    With ``size`` s public (the number of complete records in the subpopulation), the
    sum/s has sensitivity M/s under add/remove (one term of size ≤ M = max(|a|, |b|)
    appears or goes) and max(M, b − a)/s under replace (a term changes by ≤ b − a, or
    one appears or goes). Otherwise ε/2 goes to a discrete-Laplace count of them
    (sensitivity 1 under both notions; s = max(1, s')) and ε/2 to the sum/s. ε-DP for the
    notion chosen (Dwork et al. 2006; sequential composition); the mean uses the
    discretised Laplace, so its value is a multiple of ``grid``.
    """
    nb = notion_for(neighbours, _BASELINE_NOTIONS, "release_mean_ignoring_missing", "")
    eps = check_epsilon(epsilon)
    a, b, M = _bounds(bounds)
    obs = ~imp.incomplete
    y = np.clip(np.where(obs, _numeric(imp.observed, imp.target), 0.0), a, b)
    mask = _mask(imp, where) & obs
    ledger = Ledger("mean ignoring missing (Laplace)")
    s, e, details = _subpopulation_size(ledger, mask, size, eps, rng, "complete records",
                                        "number of complete records in the subpopulation",
                                        "size (the public number of complete records in the subpopulation)", nb)
    exact = float(y[mask].sum()) / s
    term = M if nb == ADD_REMOVE else max(M, b - a)
    sens = term / s
    val, mech = _real_noise(ledger, "mean", exact, sens, e, rng, "complete records",
                            f"sum of Y clipped to [{a:g}, {b:g}] over s, sensitivity "
                            f"{'M' if nb == ADD_REMOVE else 'max(M, b − a)'}/s", nb)
    ledger.assert_total(Epsilon(eps))
    return BaselineRelease(val, eps, sens, mech.scale, exact, True, "ignore missing + Laplace", ledger, details,
                           grid=mech.grid, neighbours=nb, noise_variance=_variance(mech))


def _subpopulation_size(ledger, mask, size, eps, rng, subset, note, what, nb):
    """(s, ε left for the mean, details): the public size, or a discrete-Laplace count of it
    bought with ε/2 (sensitivity 1 under either notion)."""
    if size is not None:
        return _size(size, what), eps, {}
    val, _ = _count_noise(ledger, "size", float(mask.sum()), 1.0, eps / 2, rng, subset, note, nb)
    s = max(1.0, val)
    return s, eps / 2, {"noisy_size": s}


def _global_bound(imp, max_donees):
    G = imp.n_donees if max_donees is None else int(max_donees)
    if G < 0:
        raise OptionError(f"max_donees must be ≥ 0; got {max_donees!r}")
    return G


_GLOBAL_NOTE = ("imputed data + Laplace at the thesis's optimistic 'global' sensitivity with G = {G} donees "
                "per donor (§6.5.3). NOT DP: the true global sensitivity of imputation is unbounded and G "
                "was read from the data; comparator only")


def release_count_global(imp: KNNImputation, epsilon: float, rng, *, where=None,
                         target_where: Callable | None = None, max_donees: int | None = None,
                         neighbours: str = ADD_REMOVE) -> BaselineRelease:
    """Imputed count + discrete Laplace at sensitivity 1 + G (comparator, NOT DP; module docstring)."""
    nb = notion_for(neighbours, _BASELINE_NOTIONS, "release_count_global", "")
    eps = check_epsilon(epsilon)
    G = _global_bound(imp, max_donees)
    mask = _mask(imp, where) & _target_mask(imp.values, target_where)
    exact = float(mask.sum())
    ledger = Ledger("imputed count (optimistic global sensitivity)")
    note = _GLOBAL_NOTE.format(G=G)
    val, mech = _count_noise(ledger, "count", exact, 1.0 + G, eps, rng, "imputed table", note, nb)
    return BaselineRelease(val, eps, 1.0 + G, mech.scale, exact, False, note, ledger, grid=1.0, neighbours=nb,
                           noise_variance=_variance(mech))


def release_mean_global(imp: KNNImputation, epsilon: float, rng, *, bounds, where=None,
                        size: float | None = None, max_donees: int | None = None,
                        neighbours: str = ADD_REMOVE) -> BaselineRelease:
    """Imputed mean + Laplace at sensitivity (M + G(b − a))/s (comparator, NOT DP). With
    ``size`` None, ε/2 buys a discrete-Laplace count of the subpopulation first."""
    nb = notion_for(neighbours, _BASELINE_NOTIONS, "release_mean_global", "")
    eps = check_epsilon(epsilon)
    a, b, M = _bounds(bounds)
    G = _global_bound(imp, max_donees)
    y = np.clip(_numeric(imp.values, imp.target), a, b)
    mask = _mask(imp, where)
    ledger = Ledger("imputed mean (optimistic global sensitivity)")
    s, e, details = _subpopulation_size(ledger, mask, size, eps, rng, "imputed table", "subpopulation size",
                                        "size (the public subpopulation size s)", nb)
    exact = float(y[mask].sum()) / s
    sens = (M + G * (b - a)) / s
    note = _GLOBAL_NOTE.format(G=G)
    val, mech = _real_noise(ledger, "mean", exact, sens, e, rng, "imputed table", note, nb)
    ledger.assert_total(Epsilon(eps))
    return BaselineRelease(val, eps, sens, mech.scale, exact, False, note, ledger, details, grid=mech.grid,
                           neighbours=nb, noise_variance=_variance(mech))
