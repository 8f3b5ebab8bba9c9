"""SPECKS and the propensity pMSE (Bowen & Liu 2021, §2.4; docs/measures.md).

SPECKS (Synthetic data generation; Propensity score matching; Empirical Comparison
via the Kolmogorov–Smirnov distance): stack the original data (T = 0) and one
synthetic set (T = 1), fit a propensity model P(T = 1 | x), and take the
Kolmogorov–Smirnov distance between the fitted propensities e of the two groups.
The propensity pMSE, mean((e − c)²) with c the synthetic share of the stacked rows,
comes from the same fit.  Both are averaged over the m synthetic sets.

**Not differentially private.**  These measures read the raw (original) data.  They
are for the curator's evaluation of a synthesis (curator-only); the numbers must not
be published as if covered by the release's ε.

Propensity models
-----------------
``"main"``
    logistic regression on the one-hot main effects (one level per attribute
    dropped; missing values a level of their own).
``"interactions"``
    main effects plus every first-order (pairwise) interaction, built as sparse
    products of the non-reference dummies; the 2021 paper's model.  On the
    CPS-shaped table this is ~500 columns, so the design is a ``scipy.sparse``
    CSR matrix; cells never observed in the stacked data give no column.
``"cart"``
    a classification tree (scikit-learn ``DecisionTreeClassifier``) on all
    dummies, with synthpop-like stopping rules (``min_samples_leaf=5`` and a
    minimum impurity decrease of 0.001 × the root node's Gini impurity, the
    analogue of rpart's ``cp = 0.001``).

The logistic fits use scikit-learn's ``LogisticRegression`` with the
``newton-cholesky`` solver on the sparse design and ``C = 1e8`` (effectively
unpenalised: the ridge term is ~1e-8 against a log-likelihood summed over ~10⁵
rows; it only keeps the Newton system non-singular when dummies are aliased and
the optimum finite when the groups separate).  All predictors are categorical, so
the stacked rows are first collapsed to their distinct (x, T) patterns, fitted with
the pattern counts as ``sample_weight`` — the same likelihood, hence the same
propensities, on fewer rows.  This was the fastest accurate fit benchmarked on the
CPS-shaped table (``bench/RESULTS.md``, "Why SPECKS fits with scikit-learn's
newton-cholesky rather than statsmodels"); statsmodels has no
sparse support and its dense Newton fit was 5–10× slower.  ``per_set`` records
whether the solver reported convergence.

KS compares the *ranks* of the propensities: two groups that sit in different cells
can have a large KS even when every e is within 10⁻³ of c.  The pMSE measures the
size of the departures; report both.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.stats import ks_2samp

from dpcore.errors import InputError, OptionError
from dpcore.metrics.tables import cell_ids, encode_sets

__all__ = ["Specks", "specks", "propensity_design"]

MODELS = ("main", "interactions", "cart")
# Effectively unpenalised: see the module docstring.
_C = 1e8
_MAX_ITER = 200
# rpart's cp = 0.001, applied to the root node's Gini impurity.
_CART_CP = 1e-3
_CART_MIN_LEAF = 5


@dataclass(frozen=True)
class Specks:
    """Result of :func:`specks`.  NOT differentially private (reads the raw data).

    Attributes
    ----------
    ks:
        mean over the synthetic sets of the KS distance between the propensities of
        the original and the synthetic rows (0 = indistinguishable, 1 = separated).
    pmse:
        mean over the sets of the propensity pMSE, mean((e − c)²) over the stacked
        rows, with c = n_syn/(n_orig + n_syn).
    per_set:
        one dict per set: ``set`` (1-based), ``ks``, ``ks_pvalue``, ``pmse``,
        ``c``, ``columns`` (design columns, intercept excluded), ``converged``.
    model:
        the propensity model used.
    """

    ks: float
    pmse: float
    per_set: list = field(default_factory=list)
    model: str = "interactions"


def _one_hot_blocks(codes: np.ndarray, n_levels: Sequence[int], drop_reference: bool):
    """Per attribute: (dummy index of each row or -1 for the reference, number of dummies).

    The reference (dropped) level is the most frequent level in the stacked rows,
    which keeps the design well conditioned; fitted propensities do not depend on it.
    """
    blocks = []
    for j, k in enumerate(n_levels):
        c = codes[:, j]
        if not drop_reference:
            blocks.append((c.copy(), int(k)))
            continue
        ref = int(np.argmax(np.bincount(c, minlength=k)))
        idx = np.where(c == ref, -1, np.where(c > ref, c - 1, c))
        blocks.append((idx, int(k) - 1))
    return blocks


def propensity_design(codes: np.ndarray, n_levels: Sequence[int], interactions: bool = False,
                      drop_reference: bool = True) -> sp.csr_matrix:
    """Sparse one-hot design (no intercept column) from integer ``codes``.

    ``codes`` is (rows, attributes) with values in ``[0, n_levels[j])`` (missing
    values already a level, as :func:`dpcore.metrics.tables._encode` gives them).
    With ``drop_reference`` one level per attribute is dropped (the most frequent).
    With ``interactions`` every pairwise product of two attributes' dummies is
    appended.  Columns that are zero in every row are removed.
    """
    n = codes.shape[0]
    blocks = _one_hot_blocks(codes, n_levels, drop_reference)
    row_parts, col_parts = [], []
    offset = 0
    for idx, width in blocks:
        keep = idx >= 0
        row_parts.append(np.flatnonzero(keep))
        col_parts.append(idx[keep] + offset)
        offset += width
    if interactions:
        for (ia, wa), (ib, wb) in itertools.combinations(blocks, 2):
            if wa == 0 or wb == 0:
                continue
            keep = (ia >= 0) & (ib >= 0)
            row_parts.append(np.flatnonzero(keep))
            col_parts.append(ia[keep] * wb + ib[keep] + offset)
            offset += wa * wb
    rows = np.concatenate(row_parts) if row_parts else np.zeros(0, np.int64)
    cols = np.concatenate(col_parts) if col_parts else np.zeros(0, np.int64)
    # keep only the columns that occur (unobserved cells give no column)
    present = np.bincount(cols, minlength=offset) > 0
    remap = np.cumsum(present) - 1
    n_cols = int(present.sum())
    data = np.ones(rows.size, dtype=np.float64)
    # each (row, column) pair occurs at most once, so no duplicates to sum
    return sp.csr_matrix((data, (rows, remap[cols])), shape=(n, n_cols))


def _fit_logistic(X, t, seed, weight=None):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=_C, solver="newton-cholesky", max_iter=_MAX_ITER, tol=1e-8,
                               random_state=seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, t, sample_weight=weight)
    bad = [w for w in caught if issubclass(w.category, (ConvergenceWarning, RuntimeWarning))
           or "singular" in str(w.message).lower() or "converge" in str(w.message).lower()]
    return model.predict_proba(X)[:, 1], not bad


def _collapse(codes, n_levels, t):
    """Distinct (x, T) rows, their counts, and each stacked row's index among them.

    With categorical predictors the log-likelihood of the stacked rows equals the
    count-weighted log-likelihood of the distinct (x, T) rows, so fitting those
    with ``sample_weight`` gives the same propensities with fewer rows.
    """
    ids, _ = cell_ids(codes, n_levels)
    key, uniq = pd.factorize(ids * 2 + t)
    first = np.zeros(len(uniq), dtype=np.int64)
    first[key[::-1]] = np.arange(len(key) - 1, -1, -1)  # first occurrence of each key
    weight = np.bincount(key, minlength=len(uniq)).astype(np.float64)
    return first, weight, key


def _fit_cart(X, t, seed):
    from sklearn.tree import DecisionTreeClassifier

    c = float(t.mean())
    root_gini = 2.0 * c * (1.0 - c)
    model = DecisionTreeClassifier(min_samples_leaf=_CART_MIN_LEAF,
                                   min_impurity_decrease=_CART_CP * root_gini, random_state=seed)
    model.fit(X, t)
    return model.predict_proba(X)[:, 1], True


def _one_set(codes_o, codes_s, n_levels, model, seed):
    codes = np.vstack([codes_o, codes_s])
    t = np.concatenate([np.zeros(len(codes_o), np.int64), np.ones(len(codes_s), np.int64)])
    c = len(codes_s) / len(codes)
    if model == "cart":
        X = propensity_design(codes, n_levels, interactions=False, drop_reference=False).tocsc()
        e, converged = _fit_cart(X, t, seed) if X.shape[1] else (np.full(len(t), c), True)
        columns = X.shape[1]
    else:
        first, weight, key = _collapse(codes, n_levels, t)
        X = propensity_design(codes[first], n_levels, interactions=(model == "interactions"))
        columns = X.shape[1]
        if X.shape[1] == 0:
            # nothing varies: the propensity is the constant c for every row
            e, converged = np.full(len(t), c), True
        else:
            e_u, converged = _fit_logistic(X, t[first], seed, weight)
            e = e_u[key]
    ks = ks_2samp(e[t == 0], e[t == 1])
    return {
        "ks": float(ks.statistic),
        "ks_pvalue": float(ks.pvalue),
        "pmse": float(np.mean((e - c) ** 2)),
        "c": c,
        "columns": int(columns),
        "converged": bool(converged),
    }


def specks(orig: pd.DataFrame, syns, model: str = "interactions", seed: int = 0,
           columns: Sequence | None = None) -> Specks:
    """SPECKS (KS distance of propensity scores) and propensity pMSE, per set and mean.

    Parameters
    ----------
    orig:
        the original data (categorical columns; missing values are a level).
    syns:
        one synthetic DataFrame or a list of m of them, with the same columns.
    model:
        ``"main"`` (main effects), ``"interactions"`` (main effects + all pairwise
        interactions; the 2021 paper's choice, the default) or ``"cart"``.
    seed:
        random state for the classifier (only CART's tie-breaking uses it).
    columns:
        optional subset of the columns to use as predictors.

    **Not differentially private**: this reads the original data.  It is for the
    curator's evaluation; do not publish the results as covered by ε.
    """
    if model not in MODELS:
        raise OptionError(f"model must be one of {', '.join(MODELS)}; got {model!r}")
    syns, columns, codes, n_levels, bounds = encode_sets(orig, syns, columns)
    empty = [("the original data" if i == 0 else f"synthetic set {i}")
             for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])) if b == a]
    if empty:
        raise InputError(f"{', '.join(empty)} has no rows: no propensity model can be fitted")
    codes_o = codes[bounds[0]:bounds[1]]
    per_set = []
    for i in range(len(syns)):
        # levels absent from both the original and this set give no design column
        rec = _one_set(codes_o, codes[bounds[i + 1]:bounds[i + 2]], n_levels, model, seed)
        per_set.append({"set": i + 1, **rec})
    return Specks(
        ks=float(np.mean([d["ks"] for d in per_set])),
        pmse=float(np.mean([d["pmse"] for d in per_set])),
        per_set=per_set,
        model=model,
    )
