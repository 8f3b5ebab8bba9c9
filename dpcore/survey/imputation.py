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
  donees; global sensitivity M/s (count: 1). ε-DP.
* :func:`release_mean_global` / :func:`release_count_global`: impute, then Laplace with the
  thesis's *optimistic* global bound G = the number of donees per donor (default: all donees
  in the data). The true global sensitivity of imputation is unbounded (Fig 6.1) and G is
  read from the data, so these are comparators, marked ``dp=False``.

Subpopulations: ``where`` is a boolean row mask that does not depend on the imputed target;
``target_where`` is a predicate on the (imputed) target values, which makes inclusion depend
on the imputed attribute (case 2).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from dpcore.budget import Ledger, check_epsilon
from dpcore.errors import InputError, OptionError
from dpcore.mechanisms import Laplace, positive_finite

from ._smooth import (LN2, SmoothRelease, cauchy_noise, ch6_gamma, charge_smooth, check_ch6_epsilon)
from .knn import KNNImputation

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
    """A Laplace release. ``dp`` is False for the optimistic global-sensitivity comparator."""

    value: float
    epsilon: float
    sensitivity: float
    scale: float
    exact: float
    dp: bool
    note: str
    ledger: Ledger = field(compare=False, repr=False)
    details: dict = field(default_factory=dict, compare=False)

    @property
    def noise_sd(self) -> float:
        return math.sqrt(2.0) * self.scale


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


def _smooth_part(ledger, label, exact, smooth, eps, rng, subset, note):
    gamma = ch6_gamma(eps)
    noise, scale = cauchy_noise(smooth, eps, gamma, rng)
    charge_smooth(ledger, label, eps, gamma, LN2, subset, note)
    return exact + noise, gamma, scale


def _noisy_size(imp, mask, eps, rng, ledger, depends_on_target, subset):
    """Remark 6.4.7: a noisy subpopulation size at ε, then s = max(1, s')."""
    n_sub = float(mask.sum())
    if depends_on_target:
        val, _, _ = _smooth_part(ledger, "subpopulation size", n_sub, 1.0 + imp.L1, eps, rng, subset,
                                 "count |S∩D| (Cor 6.4.3, S = 1 + L_1(D))")
    else:
        mech = Laplace.calibrate(eps, 1.0)
        val = float(mech.release(n_sub, rng))
        ledger.charge(label="subpopulation size", epsilon=eps, mechanism=mech.name, sensitivity=1.0,
                      scale=mech.scale, subset=subset,
                      note="count |S∩D|; inclusion does not use the imputed attribute, so its global "
                           "sensitivity is 1 (§6.4.1) and Laplace is used instead of Cor 6.4.3")
    return max(1.0, val), n_sub


# ------------------------------------------------------------------ smooth releases


def release_count(imp: KNNImputation, epsilon: float, rng: np.random.Generator, *, where=None,
                  target_where: Callable | None = None) -> SmoothRelease:
    """ε-DP count of rows in ``where`` whose imputed target satisfies ``target_where``
    (Cor 6.4.3; needs ε ≥ 2 ln 2, finite noise variance for ε > 4 ln 2)."""
    eps = check_ch6_epsilon(epsilon, "release_count")
    mask = _mask(imp, where) & _target_mask(imp.values, target_where)
    exact = float(mask.sum())
    smooth = 1.0 + imp.L1
    ledger = Ledger("imputed count (smooth sensitivity)")
    val, gamma, scale = _smooth_part(ledger, "count", exact, smooth, eps, rng, "imputed table",
                                     "frequency query on k-NN-imputed data, S(D) = 1 + L_1(D) (Cor 6.4.3)")
    ledger.assert_total(eps)
    return SmoothRelease(val, eps, gamma, LN2, smooth, scale, exact, ledger, "count", {"L1": imp.L1})


def release_mean(imp: KNNImputation, epsilon: float, rng: np.random.Generator, *, bounds, where=None,
                 target_where: Callable | None = None, size: float | None = None) -> SmoothRelease:
    """ε-DP mean of the imputed target over a subpopulation (Cor 6.4.6).

    ``size`` is the public subpopulation size s. If None, Remark 6.4.7: ε/2 releases a
    noisy size (Laplace when inclusion does not use the target, Cor 6.4.3 otherwise) and
    ε/2 the sum divided by s = max(1, s'). The smooth part needs its ε ≥ 2 ln 2.
    """
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
    val, gamma, scale = _smooth_part(ledger, "mean", exact, smooth, eps_mean, rng, "imputed table",
                                     note + f"with Y clipped to [{a:g}, {b:g}], M = {M:g} (Cor 6.4.6)")
    ledger.assert_total(eps)
    return SmoothRelease(val, eps, gamma, LN2, smooth, scale, exact, ledger, "mean", details)


def release_variance(imp: KNNImputation, epsilon: float, rng: np.random.Generator, *, bounds, where=None,
                     target_where: Callable | None = None, size: float | None = None,
                     center: float | None = None) -> SmoothRelease:
    """ε-DP variance of the imputed target over a subpopulation (Cor 6.4.9).

    ``size`` (s > 1) and ``center`` (y in [a, b]) are treated as constants. Each one not
    given is first released privately (size as in Remark 6.4.7, centre with
    :func:`release_mean`); ε is split equally over the parts.
    """
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
        ledger.children.append(mean_rel.ledger)
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
    val, gamma, scale = _smooth_part(ledger, "variance", exact, smooth, eps_var, rng, "imputed table",
                                     "Σ(Y − y)²/(s − 1), S(D) = m(1 + L_1(D))/(s − 1) (Cor 6.4.9)")
    ledger.assert_total(eps)
    return SmoothRelease(val, eps, gamma, LN2, smooth, scale, exact, ledger, "variance", details)


# ------------------------------------------------------------------ Laplace baselines


def _laplace(ledger, label, exact, sens, eps, rng, subset, note):
    mech = Laplace.calibrate(eps, sens)
    ledger.charge(label=label, epsilon=eps, mechanism=mech.name, sensitivity=float(sens), scale=mech.scale,
                  subset=subset, note=note)
    return float(mech.release(exact, rng)), mech.scale


def release_count_ignoring_missing(imp: KNNImputation, epsilon: float, rng, *, where=None,
                                   target_where: Callable | None = None) -> BaselineRelease:
    """Count over the records with the target observed (donees dropped); Laplace at
    sensitivity 1. ε-DP (Dwork et al. 2006)."""
    eps = check_epsilon(epsilon)
    obs = ~imp.incomplete
    tm = np.zeros(len(obs), bool)
    tm[obs] = _target_mask(imp.observed[obs], target_where)
    mask = _mask(imp, where) & obs & tm
    exact = float(mask.sum())
    ledger = Ledger("count ignoring missing (Laplace)")
    val, scale = _laplace(ledger, "count", exact, 1.0, eps, rng, "complete records", "missing values dropped")
    return BaselineRelease(val, eps, 1.0, scale, exact, True, "ignore missing + Laplace", ledger)


def release_mean_ignoring_missing(imp: KNNImputation, epsilon: float, rng, *, bounds, where=None,
                                  size: float | None = None) -> BaselineRelease:
    """Mean over the records with the target observed, Y clipped to [a, b]; Laplace.

    With ``size`` s public (the number of complete records in the subpopulation), the
    sum/s has sensitivity M/s. Otherwise ε/2 goes to a Laplace count of them (s = max(1, s'))
    and ε/2 to the sum/s. ε-DP in both cases (Dwork et al. 2006; sequential composition).
    """
    eps = check_epsilon(epsilon)
    a, b, M = _bounds(bounds)
    obs = ~imp.incomplete
    y = np.clip(np.where(obs, _numeric(imp.observed, imp.target), 0.0), a, b)
    mask = _mask(imp, where) & obs
    ledger = Ledger("mean ignoring missing (Laplace)")
    s, e, details = _subpopulation_size(ledger, mask, size, eps, rng, "complete records",
                                        "number of complete records in the subpopulation",
                                        "size (the public number of complete records in the subpopulation)")
    exact = float(y[mask].sum()) / s
    val, scale = _laplace(ledger, "mean", exact, M / s, e, rng, "complete records",
                          f"sum of Y clipped to [{a:g}, {b:g}] over s, sensitivity M/s")
    ledger.assert_total(eps)
    return BaselineRelease(val, eps, M / s, scale, exact, True, "ignore missing + Laplace", ledger, details)


def _subpopulation_size(ledger, mask, size, eps, rng, subset, note, what):
    """(s, ε left for the mean, details): the public size, or a Laplace count of it bought with ε/2."""
    if size is not None:
        return _size(size, what), eps, {}
    mech = Laplace.calibrate(eps / 2, 1.0)
    s = max(1.0, float(mech.release(float(mask.sum()), rng)))
    ledger.charge(label="size", epsilon=eps / 2, mechanism=mech.name, sensitivity=1.0, scale=mech.scale,
                  subset=subset, note=note)
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
                         target_where: Callable | None = None, max_donees: int | None = None) -> BaselineRelease:
    """Imputed count + Laplace at sensitivity 1 + G (comparator, not DP; module docstring)."""
    eps = check_epsilon(epsilon)
    G = _global_bound(imp, max_donees)
    mask = _mask(imp, where) & _target_mask(imp.values, target_where)
    exact = float(mask.sum())
    ledger = Ledger("imputed count (optimistic global sensitivity)")
    note = _GLOBAL_NOTE.format(G=G)
    val, scale = _laplace(ledger, "count", exact, 1.0 + G, eps, rng, "imputed table", note)
    return BaselineRelease(val, eps, 1.0 + G, scale, exact, False, note, ledger)


def release_mean_global(imp: KNNImputation, epsilon: float, rng, *, bounds, where=None,
                        size: float | None = None, max_donees: int | None = None) -> BaselineRelease:
    """Imputed mean + Laplace at sensitivity (M + G(b − a))/s (comparator, not DP). With
    ``size`` None, ε/2 buys a Laplace count of the subpopulation first."""
    eps = check_epsilon(epsilon)
    a, b, M = _bounds(bounds)
    G = _global_bound(imp, max_donees)
    y = np.clip(_numeric(imp.values, imp.target), a, b)
    mask = _mask(imp, where)
    ledger = Ledger("imputed mean (optimistic global sensitivity)")
    s, e, details = _subpopulation_size(ledger, mask, size, eps, rng, "imputed table", "subpopulation size",
                                        "size (the public subpopulation size s)")
    exact = float(y[mask].sum()) / s
    sens = (M + G * (b - a)) / s
    note = _GLOBAL_NOTE.format(G=G)
    val, scale = _laplace(ledger, "mean", exact, sens, e, rng, "imputed table", note)
    ledger.assert_total(eps)
    return BaselineRelease(val, eps, sens, scale, exact, False, note, ledger, details)
